"""Per-trial pushes of the experiment file (its ``trials`` section): reading, writing, errors, ``with_distances``."""

from dataclasses import fields, replace
from pathlib import Path

import pytest
import yaml

from sim2real.control import (
    TRIAL_PUSH_KEYS,
    ExperimentConfig,
    PushConfig,
    build_trial_pushes,
    load_experiment_config,
    save_experiment_config,
)
from sim2real.errors import Sim2RealError

PUSH = PushConfig(height=0.15, lateral=0.0, start_x=0.20, end_x=0.40, speed=0.3, ramp_time=0.2, pre_time=0.1,
                  settle_time=0.5)


def _file(tmp_path: Path, body: str) -> Path:
    """An experiment file: distances [0.30, 0.45], ``PUSH``, then ``body`` (lines under ros__parameters)."""
    path = tmp_path / "experiment.yaml"
    push = ", ".join(f"{k}: {getattr(PUSH, k)}" for k in ("height", "lateral", "start_x", "end_x", "speed",
                                                          "ramp_time", "pre_time", "settle_time", "rate_hz"))
    path.write_text(f"/**:\n  ros__parameters:\n    distances: [0.30, 0.45]\n    push: {{{push}}}\n{body}")
    return path


def test_a_designed_experiment_reads_back_as_written(tmp_path: Path) -> None:
    trials = (replace(PUSH, lateral=0.0, end_x=0.40), replace(PUSH, lateral=0.03, end_x=0.36))
    config = ExperimentConfig(distances=(0.30, 0.45), push=PUSH, start_tolerance=0.02, trial_pushes=trials)
    path = save_experiment_config(tmp_path / "sub" / "designed.yaml", config, header="designed\nby a test")
    text = path.read_text()
    assert text.startswith("# designed\n# by a test\n")
    assert load_experiment_config(path) == config
    body = yaml.safe_load(text)["/**"]["ros__parameters"]
    # only the keys in which the trials differ from push are listed, one entry per distance; every entry a
    # float (rcl types [0, 1] as an integer array, which the node's double[] parameter refuses)
    assert body["trials"] == {"lateral": [0.0, 0.03], "end_x": [0.40, 0.36]}
    assert all(isinstance(v, float) for values in body["trials"].values() for v in values)


def test_a_key_a_trial_does_not_list_is_the_push_s(tmp_path: Path) -> None:
    config = load_experiment_config(_file(tmp_path, "    trials:\n      lateral: [0.0, 0.03]\n"))
    assert config.push == PUSH and len(config.trial_pushes) == 2
    assert config.push_of(0) == PUSH
    assert config.push_of(1) == replace(PUSH, lateral=0.03)


def test_without_a_trials_section_every_trial_pushes_the_push(tmp_path: Path) -> None:
    config = load_experiment_config(_file(tmp_path, ""))
    assert config.trial_pushes == ()
    assert [config.push_of(k) for k in range(2)] == [PUSH, PUSH]
    package = load_experiment_config()  # the package's file has no trials section
    assert package.trial_pushes == () and package.push_of(4) == package.push


@pytest.mark.parametrize(("body", "message"), [
    ("    trials:\n      ramp_time: [0.1, 0.2]\n",
     r"unknown trials keys \['ramp_time'\] \(a trial may set height, lateral, start_x, end_x, speed, box_yaw_deg\)"),
    ("    trials:\n      lateral: [0.0, 0.01, 0.02]\n", "trials.lateral has 3 entries but distances has 2"),
    ("    trials:\n      lateral: 0.03\n", "trials.lateral must be a list of 2 numbers, one per start distance"),
    ("    trials:\n      end_x: [0.4, abc]\n", r"trials.end_x must hold numbers, got \[0.4, 'abc'\]"),
    ("    trials:\n      end_x: [0.4, true]\n", "trials.end_x must hold numbers"),
    ("    trials:\n      - lateral\n", "trials must map push keys"),
    ("    trials: {}\n", "trials must map push keys"),
    # trial 2's push ends where it starts: named by number and distance, the push's own complaint after it
    ("    trials:\n      end_x: [0.40, 0.20]\n",
     r"trial 2 \(d = 0.45 m\): bad push configuration: end_x must be greater than start_x"),
    ("    trials:\n      speed: [0.3, .nan]\n",
     r"trial 2 \(d = 0.45 m\): bad push configuration: speed must be finite"),
])
def test_a_bad_trials_section_is_one_line_naming_the_file(tmp_path: Path, body: str, message: str) -> None:
    path = _file(tmp_path, body)
    with pytest.raises(Sim2RealError, match=message) as caught:
        load_experiment_config(path)
    assert str(caught.value).startswith(f"{path}: ") and "\n" not in str(caught.value)


def test_a_trials_section_without_distances_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "experiment.yaml"
    path.write_text("/**:\n  ros__parameters:\n    trials:\n      lateral: [0.0, 0.03]\n")
    with pytest.raises(Sim2RealError, match=r"a trials section needs the start distances it belongs to"):
        load_experiment_config(path)


def test_the_node_s_parameters_follow_the_same_rule() -> None:
    """The experiment node builds its trials from its parameters with the same function (its errors say where)."""
    assert build_trial_pushes(None, PUSH, (0.3,), "experiment parameters") == ()
    pushes = build_trial_pushes({"height": [0.12, 0.18]}, PUSH, (0.3, 0.45), "experiment parameters")
    assert [p.height for p in pushes] == [0.12, 0.18] and all(p.end_x == PUSH.end_x for p in pushes)
    with pytest.raises(Sim2RealError, match=r"^experiment parameters: trials.height has 2 entries but distances "
                                            r"has 1; give one entry per start distance$"):
        build_trial_pushes({"height": [0.12, 0.18]}, PUSH, (0.3,), "experiment parameters")
    # a trial's own keys are push keys, and the timing and rate stay the run's
    assert set(TRIAL_PUSH_KEYS) < {f.name for f in fields(PushConfig)}
    assert not set(TRIAL_PUSH_KEYS) & {"ramp_time", "pre_time", "settle_time", "rate_hz"}


def test_other_distances_are_refused_when_the_trials_have_their_own_pushes() -> None:
    trials = (PUSH, replace(PUSH, lateral=0.03))
    config = ExperimentConfig(distances=(0.30, 0.45), push=PUSH, trial_pushes=trials)
    with pytest.raises(Sim2RealError, match=r"its start distances cannot be replaced; edit the file instead$"):
        config.with_distances((0.30,))
    with pytest.raises(Sim2RealError, match="cannot be replaced"):
        config.with_distances((0.45, 0.30))  # the same distances in another order: the pushes would swap
    assert config.with_distances((0.30, 0.45)) == config  # the file's own distances: nothing replaced
    plain = ExperimentConfig(distances=(0.30, 0.45), push=PUSH)
    assert plain.with_distances((0.35,)) == ExperimentConfig(distances=(0.35,), push=PUSH)
    with pytest.raises(Sim2RealError, match="2 trial pushes for 1 start distances"):
        ExperimentConfig(distances=(0.30,), push=PUSH, trial_pushes=trials)

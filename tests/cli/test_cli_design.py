"""``sim2real design`` end to end: from a fit (fit → design → an experiment file ``run`` reads), before any fit,
and bad input refused in one line with nothing written."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from sim2real.cli import main
from sim2real.control import load_experiment_config

HIDDEN = {"contact.mu_table": 0.42, "contact.support_ratio": 0.7}
FREE = ",".join(HIDDEN)
#: A shorter push than the package's (0.1 + 0.1 + 0.5 s settle instead of 0.2 + 0.2 + 1.5 s).
EXPERIMENT = """\
/**:
  ros__parameters:
    distances: [0.30]
    push: {{height: 0.12, lateral: {lateral}, start_x: 0.20, end_x: 0.40, speed: 0.55, ramp_time: 0.1,
           pre_time: 0.1, settle_time: 0.5, rate_hz: 100.0}}
"""


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A fit of two pushes (one central, one 3 cm off the centre line) simulated with hidden values; and the
    short experiment file."""
    root = tmp_path_factory.mktemp("design")
    run = root / "run"
    for k, (distance, lateral) in enumerate(((0.30, 0.0), (0.33, 0.03))):
        experiment = root / f"push{k}.yaml"
        experiment.write_text(EXPERIMENT.format(lateral=lateral))
        args = ["simulate", "--distance", str(distance), "--experiment", str(experiment),
                "--out", str(run / f"trial_{k:02d}")]
        for name, value in HIDDEN.items():
            args += ["--set", f"{name}={value}"]
        assert main(args) == 0
    out = root / "fit.yaml"
    code = main(["fit", *(str(p) for p in sorted(run.iterdir())), "--free", FREE, "--horizon", "trial",
                 "--mode", "kinematic", "--max-iterations", "10", "--out", str(out)])
    assert code in (0, 3)
    return out.with_suffix(".json"), root / "push0.yaml"


@pytest.mark.slow
def test_a_design_from_a_fit_is_an_experiment_that_run_reads(fitted: tuple[Path, Path], tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    fit_json, experiment = fitted
    out = tmp_path / "next.yaml"
    code = main(["design", "--fit", str(fit_json), "-n", "2", "--candidates", "8", "--points", "2",
                 "--experiment", str(experiment), "--no-topple", "--out", str(out)])
    captured = capsys.readouterr()
    assert code in (0, 3), captured.err
    config = load_experiment_config(out)
    assert len(config.distances) == 2 and len(config.trial_pushes) == 2
    assert config.push.settle_time == 0.5  # the given experiment's timing is kept
    record = json.loads(out.with_suffix(".json").read_text())
    assert record["format"] == "sim2real.design/1" and record["prior"]["source"] == str(fit_json)
    assert record["points"] == 2 and len(record["pushes"]) == 2 and len(record["after"]) == 2
    assert [p["push"]["distance"] for p in record["pushes"]] == list(config.distances)
    before = [record["before"][name]["width"] for name in HIDDEN]
    after = [record["after"][-1][name]["width"] for name in HIDDEN]
    assert sum(map(math.log, after)) < sum(map(math.log, before))  # the targets' geometric mean narrows
    assert "Forecast (linearised" in captured.out and "Designed pushes" in captured.out
    # pushes drawn at random from the same candidates, forecast beside the designed ones
    ratio = record["random"]["width_ratio"]
    assert record["random"]["sets"] == 200 and ratio["p10"] <= ratio["median"] <= ratio["p90"]
    assert set(record["random"]["after"]) == set(record["before"])
    assert f"intervals {ratio['median']:.2g}x as wide as the designed ones" in captured.out
    assert "is linearised at the current values and counts the noise, not the model's error, and it overstates " \
           "the gain" in " ".join(captured.out.split())
    assert ("WARNING: the forecast is linearised at values that are not determined" in captured.err) == \
        bool(record["prior"]["undetermined"])
    assert out.read_text().startswith("# sim2real design: 2 pushes")
    # what the design wrote is its own: --force replaces it; without --force it is refused
    assert main(["design", "--fit", str(fit_json), "-n", "1", "--candidates", "4", "--points", "1",
                 "--experiment", str(experiment), "--out", str(out), "--force"]) in (0, 3)
    assert len(load_experiment_config(out).distances) == 1
    capsys.readouterr()
    assert main(["design", "--fit", str(fit_json), "-n", "1", "--out", str(out)]) == 2
    assert "exists; pass --force" in capsys.readouterr().err


def test_a_design_before_any_fit_prints_its_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "first.yaml"
    code = main(["design", "--free", "contact.mu_table", "-n", "1", "--candidates", "3", "--points", "1",
                 "--distance", "0.32", "--height", "0.12", "--json", "--out", str(out)])
    captured = capsys.readouterr()
    assert code in (0, 3), captured.err
    record = json.loads(captured.out)
    assert record["prior"]["source"] == "the bounds (no fit yet)"
    assert record["space"]["distance"]["range"] == [0.32, 0.32]
    assert load_experiment_config(out).distances == (0.32,)
    assert "optimistic" in record["prior"]["noise"]
    # linearised at no determined value: said, as a ranking rather than a promise of widths
    assert "WARNING: the forecast is linearised at values that are not determined (contact.mu_table; from the " \
           "bounds (no fit yet))" in captured.err


@pytest.mark.parametrize(("extra", "message"), [
    (["--free", FREE, "--out", "{tmp}/d.txt"], "expected a YAML file"),
    (["--free", FREE, "--out", "{tmp}/d.yaml", "--max-tilt", "5"], "--max-tilt applies with --no-topple only"),
    (["--free", FREE, "--out", "{tmp}/d.yaml", "--target", "box.mass"], "is not a free parameter"),
    (["--free", "contact.mu_tabel", "--out", "{tmp}/d.yaml"], "unknown parameter"),
    (["--free", FREE, "--out", "{tmp}/d.yaml", "--distance", "0.5:0.3"], "LOW is above HIGH"),
    (["--free", FREE, "--out", "{tmp}/d.yaml", "--lateral", "wide"], "expected LOW:HIGH"),
    (["--fit", "{tmp}/missing.json", "--out", "{tmp}/d.yaml"], "missing.json"),
    (["--free", FREE, "--out", "{tmp}/d.yaml", "-n", "0"], "-n"),
])
def test_bad_design_arguments_fail_in_one_line_without_output(tmp_path: Path, extra: list[str], message: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    args = [a.format(tmp=tmp_path) for a in extra]
    try:
        code = main(["design", *args])
    except SystemExit as exit_:  # argparse's own checks
        code = int(exit_.code or 0)
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], err
    assert not any(tmp_path.iterdir())


def test_options_of_a_design_before_any_fit_are_refused_with_a_fit(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Refused before the fit is read (the fit file need not exist)."""
    for extra in (["--mode", "closed"], ["--row-noise", "2"], ["--set", "box.mass=0.6"]):
        code = main(["design", "--fit", str(tmp_path / "fit.json"), "--out", str(tmp_path / "d.yaml"), *extra])
        err = capsys.readouterr().err
        assert code == 2 and f"{extra[0]} is for --free" in err
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("command", [["simulate", "--distance", "0.3"],
                                     ["sweep", "--distances", "0.3", "--out", "{tmp}/sweep"]])
def test_commands_of_one_push_refuse_a_designed_experiment(tmp_path: Path, command: list[str],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A designed file gives each trial its own push: simulate and sweep (one push at every distance) refuse
    it in one line rather than run its default push silently."""
    from sim2real.control import ExperimentConfig, PushConfig, save_experiment_config

    designed = tmp_path / "designed.yaml"
    save_experiment_config(designed, ExperimentConfig((0.3, 0.35), PushConfig(),
                                                      trial_pushes=(PushConfig(lateral=0.02), PushConfig())))
    code = main([a.format(tmp=tmp_path) for a in command] + ["--experiment", str(designed)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "its own push" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["designed.yaml"]


def test_the_demo_design_loop_refuses_the_standard_demo_options(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """``demo --design N`` has its own pushes and fit: an option of the standard demo's stages is refused before
    anything starts."""
    code = main(["demo", "--design", "2", "--box-free", "box.com_y", "--out", str(tmp_path / "demo")])
    err = capsys.readouterr().err
    assert code == 2 and "--box-free is an option of the standard demo" in err
    assert not (tmp_path / "demo").exists()

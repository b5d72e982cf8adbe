"""``sim2real fit`` never ends with exit 0 and a wrong answer: the pusher comes from the recorded pose,
trials without the inputs a mode needs are left out and named (exit 1), and a fit stopped by its
iteration limit says so first, in fit.json and with exit 3."""

from __future__ import annotations

import dataclasses
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from sim2real.cli import main
from sim2real.control.sim_platform import box_at_distance
from sim2real.params import ParameterSet
from sim2real.physics import BoxWorld, HardStep
from sim2real.sim import StepOutcome, rollout
from sim2real.sim.world import advance_each
from sim2real.trials import JointSeries, PlatformRecord, PoseSeries, TrialRecord, read_trial, write_trial

NOMINAL = ParameterSet.nominal()
HIDDEN_MU = 0.3
CORPUS = Path(__file__).parents[1] / "corpus" / "hard_steps"


def probe_push(name: str, other_robot_joints: bool, mu_table: float = HIDDEN_MU) -> TrialRecord:
    """A box pushed 15 cm by a probe that then stops (the box slides out), recorded as ``real``:
    box and pusher poses, and optionally joint states of another robot (constant angles for which the
    xArm model would place its pusher behind its base)."""
    params = NOMINAL.replace({"contact.mu_table": mu_table})
    t = 0.01 * np.arange(61)
    x = 0.30 + 0.5 * np.clip(t, 0.0, 0.3)
    path = np.stack([x, np.zeros_like(t), np.full_like(t, 0.04)], axis=1)
    states = rollout(BoxWorld.from_params(params), box_at_distance(0.40, params), pusher_path=path).states
    joints = None
    if other_robot_joints:
        joints = JointSeries.from_arrays(t, np.tile([np.pi, 0.0, 0.0, 0.0, 0.0, 0.0], (t.size, 1)))
    platform = PlatformRecord(joint_states=joints, box_pose=PoseSeries(t, states[:, :3], states[:, 3:7]),
                              pusher_pose=PoseSeries(t, path, np.tile([1.0, 0.0, 0.0, 0.0], (t.size, 1))))
    meta = {"params": params.as_dict(), "timing": {"start_ns": 1_700_000_000_000_000_000}}
    return TrialRecord(name, {"real": platform}, None, meta)


@pytest.fixture(scope="module")
def other_robot_bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_trial(tmp_path_factory.mktemp("probe"), probe_push("probe_00", other_robot_joints=True))


@pytest.fixture(scope="module")
def servo_bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bag = tmp_path_factory.mktemp("servo") / "trial_00_d0.300"
    assert main(["simulate", "--distance", "0.3", "--set", "arm.servo_tau=0.065", "--out", str(bag)]) == 0
    return bag


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory: pytest.TempPathFactory, servo_bag: Path) -> Path:
    """Two usable arm trials and one whose commands and reference were not recorded."""
    run = tmp_path_factory.mktemp("mixed")
    for distance in (0.30, 0.35):
        assert main(["simulate", "--distance", f"{distance}", "--out", str(run / f"trial_d{distance:.2f}")]) == 0
    record = read_trial(servo_bag)
    stripped = PlatformRecord(joint_states=record.platforms["sim"].joint_states,
                              box_pose=record.platforms["sim"].box_pose)
    write_trial(run, TrialRecord("trial_no_inputs", {"sim": stripped}, None, dict(record.meta)))
    return run


def _summary(err: str) -> list[str]:
    """The console summary: the stderr lines from the status line on (after the progress lines of every start)."""
    lines = err.strip().splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("fit: status:"))
    return lines[first:]


def test_fit_uses_the_recorded_pusher_and_says_so(other_robot_bag: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fitted.yaml"
    code = main(["fit", str(other_robot_bag), "--free", "contact.mu_table", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "fit: pusher from recorded /real/pusher_pose: probe_00" in err
    document = json.loads(out.with_suffix(".json").read_text())
    assert document["status"] == "converged" and document["problems"] == []
    assert document["data"]["trials"][0]["pusher"] == "recorded /real/pusher_pose"
    assert document["values"]["contact.mu_table"] == pytest.approx(HIDDEN_MU, rel=0.01)
    # The same trial through xArm FK of the other robot's joints: a wrong friction, and it says where
    # the pusher came from.
    fk_out = tmp_path / "fk.yaml"
    main(["fit", str(other_robot_bag), "--free", "contact.mu_table", "--pusher", "arm", "--out", str(fk_out)])
    assert "pusher from xArm FK of the recorded /real/joint_states" in capsys.readouterr().err
    fk = json.loads(fk_out.with_suffix(".json").read_text())
    assert fk["values"]["contact.mu_table"] < 0.2


def test_fit_stopped_at_its_iteration_limit_is_flagged_first_and_exits_3(servo_bag: Path, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    args = ["fit", str(servo_bag), "--free", "arm.servo_tau", "--weights", "position=0,orientation=0",
            "--horizon", "20"]
    out = tmp_path / "limited.yaml"
    code = main([*args, "--max-iterations", "1", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 3, err
    summary = _summary(err)
    assert summary[0] == "fit: status: NOT CONVERGED, 1 problem(s)"
    assert summary[1].startswith("fit:   problem: not converged: stopped at the iteration limit (1 iterations)")
    document = json.loads(out.with_suffix(".json").read_text())
    assert list(document)[:3] == ["format", "status", "problems"]  # after the format tag, the verdict
    assert document["status"] == "not converged" and document["stop_reason"] == "maximum iterations"
    assert "status: not converged" in out.read_text()  # the params file's header says it too
    finished = tmp_path / "finished.yaml"
    code = main([*args, "--max-iterations", "20", "--out", str(finished)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert _summary(err)[0] == "fit: status: converged, no problems"
    assert json.loads(finished.with_suffix(".json").read_text())["values"]["arm.servo_tau"] == pytest.approx(
        0.065, rel=0.01)


@pytest.mark.slow
def test_fit_over_a_run_leaves_out_trials_without_inputs_and_exits_1(mixed_run: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fitted.yaml"
    code = main(["fit", str(mixed_run), "--free", "contact.mu_table", "--horizon", "trial", "--max-iterations",
                 "2", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "trial left out: trial 'trial_no_inputs' has neither /sim/joint_command nor " \
           "/reference/joint_trajectory" in err
    document = json.loads(out.with_suffix(".json").read_text())
    assert [t["name"] for t in document["data"]["trials"]] == ["trial_d0.30", "trial_d0.35"]
    (failure,) = document["failures"]
    assert failure["trial"] == "trial_no_inputs" and failure["stage"] == "inputs"
    assert out.exists()
    # The same trial alone: nothing to fit, one line, exit 2, nothing written.
    alone = tmp_path / "alone.yaml"
    code = main(["fit", str(mixed_run / "trial_no_inputs"), "--free", "contact.mu_table", "--horizon", "trial",
                 "--out", str(alone)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "/sim/joint_command" in err
    assert not alone.exists()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_rising_held_out_cost_is_a_problem_shown_in_red_on_a_terminal(
        other_robot_bag: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    held_out = write_trial(tmp_path / "held", probe_push("held_00", False, mu_table=0.5))
    out = tmp_path / "fitted.yaml"
    terminal = _Terminal()
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(sys, "stderr", terminal)
    code = main(["fit", str(other_robot_bag), "--free", "contact.mu_table", "--validate", str(held_out),
                 "--out", str(out)])
    assert code == 3
    document = json.loads(out.with_suffix(".json").read_text())
    assert document["validation"]["trials"] == ["held_00"]
    assert any(p.startswith("held-out cost rose") for p in document["problems"])
    lines = terminal.getvalue().splitlines()
    status = next(line for line in lines if "status:" in line)
    assert status == "fit: \x1b[1;31mstatus: converged, 1 problem(s)\x1b[0m"
    monkeypatch.setenv("NO_COLOR", "1")
    terminal.truncate(0)
    main(["fit", str(other_robot_bag), "--free", "contact.mu_table", "--validate", str(held_out),
          "--out", str(tmp_path / "again.yaml")])
    assert "\x1b[" not in terminal.getvalue()


def test_hard_steps_of_fits_and_replays_are_saved_and_counted(other_robot_bag: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Step 40 of the probe push is made degraded (with a real hard step from the corpus as its record)."""
    hard = HardStep.load(sorted(CORPUS.glob("*.json"))[0])
    original = BoxWorld.step

    def step(self: BoxWorld, *args: object, **kwargs: object) -> object:
        result = original(self, *args, **kwargs)
        if kwargs.get("step_index") == 40:
            return dataclasses.replace(result, outcome=StepOutcome.DEGRADED, rung="best-iterate", problem=hard)
        return result

    monkeypatch.setattr(BoxWorld, "advance", advance_each)  # every step through the patched one
    monkeypatch.setattr(BoxWorld, "step", step)
    out = tmp_path / "fit" / "fitted.yaml"
    code = main(["fit", str(other_robot_bag), "--free", "contact.mu_table", "--horizon", "20", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 3, err  # converged, but rows were left out: a problem
    document = json.loads(out.with_suffix(".json").read_text())
    assert document["dropped_rows"] == 6 and document["solver"]["start"]["degraded"] == 1
    assert "6 of " in document["problems"][0] and "degraded solver steps" in document["problems"][0]
    solver_line = next(line for line in err.splitlines() if line.startswith("fit: solver at the start values:"))
    assert ", 1 degraded (worst residual" in solver_line
    assert "fit: 6 residual row(s) left out (degraded solver steps)" in err
    # Hard steps go into a folder beside OUT named after it, one per output (issue 29).
    files = sorted((out.parent / "fitted.hard_steps").glob("*.json"))
    assert files and files[0].name == "fitted_probe_00_step_00040.json"
    assert len(files) == document["hard_steps"]["count"] <= 20 and document["hard_steps"]["directory"] == \
        "fitted.hard_steps"
    assert f"hard solver step(s) saved under {out.parent / 'fitted.hard_steps'}/" in err
    assert HardStep.load(files[0]).step_index == 40
    # A second fit with another OUT in the same folder keeps its steps apart: nothing shared, nothing mixed.
    other = out.with_name("other.yaml")
    code = main(["fit", str(other_robot_bag), "--free", "contact.mu_table", "--horizon", "20", "--out", str(other)])
    assert code == 3, capsys.readouterr().err
    names = sorted(f.name for f in (out.parent / "other.hard_steps").iterdir())
    assert names[0] == "other_probe_00_step_00040.json" and all(n.startswith("other_probe_00_") for n in names)
    assert len(names) == json.loads(other.with_suffix(".json").read_text())["hard_steps"]["count"]
    assert sorted((out.parent / "fitted.hard_steps").glob("*.json")) == files
    assert not (out.parent / "hard_steps").exists()
    replayed = tmp_path / "replayed"
    assert main(["replay", str(other_robot_bag), "--mode", "pusher", "--out", str(replayed)]) == 0
    captured = capsys.readouterr()
    assert "1 degraded" in captured.err and "1 degraded solver step(s) in the replay" in captured.out
    trial_json = json.loads((replayed / "probe_00" / "trial.json").read_text())
    assert trial_json["solver"]["sim"]["degraded"] == 1 and trial_json["solver"]["sim"]["worst_step"] == 40
    assert [f.name for f in (replayed / "probe_00" / "hard_steps").iterdir()] == ["sim_step_00040.json"]

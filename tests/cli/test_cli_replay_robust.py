"""``sim2real replay`` keeps every trial that works and names every one that does not (exit 1), never
replays a trial with a stand-in for a missing input, and writes each trial's solver tally."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from sim2real.cli import main
from sim2real.trials import PlatformRecord, TrialRecord, read_run, read_trial, write_trial


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of two simulated arm trials (platform ``sim``: joint states, commands, box and pusher poses)."""
    run = tmp_path_factory.mktemp("recorded")
    for distance in (0.30, 0.35):
        assert main(["simulate", "--distance", f"{distance}", "--out", str(run / f"trial_d{distance:.2f}")]) == 0
    return run


def _variant(source: Path, run: Path, name: str, **keep: bool) -> Path:
    """``source`` rewritten into ``run`` as ``name`` with only the series named in ``keep`` (and no
    reference unless ``reference=True``)."""
    record = read_trial(source)
    platform = record.platforms["sim"]
    series = {k: getattr(platform, k) for k in ("joint_states", "joint_command", "box_pose", "pusher_pose")
              if keep.get(k)}
    return write_trial(run, TrialRecord(name, {"sim": PlatformRecord(**series)},
                                        record.reference if keep.get("reference") else None, dict(record.meta)))


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory, recorded: Path) -> Path:
    """The two good trials, one without commands or reference, and one whose bag is truncated."""
    run = tmp_path_factory.mktemp("mixed")
    for trial in recorded.iterdir():
        shutil.copytree(trial, run / trial.name)
    _variant(recorded / "trial_d0.30", run, "trial_no_inputs", joint_states=True, box_pose=True)
    truncated = run / "trial_truncated"
    shutil.copytree(recorded / "trial_d0.35", truncated)
    mcap = next(truncated.glob("*.mcap"))
    mcap.write_bytes(mcap.read_bytes()[: mcap.stat().st_size // 3])
    return run


def test_one_bad_trial_does_not_discard_the_good_ones(mixed: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "replayed"
    code = main(["replay", str(mixed), "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 1, captured.err
    assert [t.name for t in read_run(out)] == ["trial_d0.30", "trial_d0.35"]
    failed = {f["trial"]: f for f in json.loads((out / "run.json").read_text())["failed"]}
    assert set(failed) == {"trial_no_inputs", "trial_truncated"}
    assert "/sim/joint_command" in failed["trial_no_inputs"]["reason"]
    assert "cannot read bag" in failed["trial_truncated"]["reason"]
    assert "2 trial(s) not replayed:" in captured.out
    for name in failed:
        assert f"replay: FAILED {name}" in captured.err or f"trial '{name}'" in captured.err


def test_each_replayed_trial_says_its_mode_pusher_and_solver_tally(recorded: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "replayed"
    assert main(["replay", str(recorded / "trial_d0.30"), "--mode", "kinematic", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    (trial,) = read_run(out)
    steps = len(trial.platforms["sim"].box_pose) - 1
    assert f"trial_d0.30 (kinematic; pusher: recorded /sim/pusher_pose): {steps} steps: " in err
    assert trial.meta["mirror"] == "kinematic" and trial.meta["pusher"] == "recorded /sim/pusher_pose"
    tally = trial.meta["solver"]["sim"]
    assert tally["steps"] == steps > 200
    assert tally["converged"] + tally["recovered"] + tally["degraded"] == steps
    again = tmp_path / "fk"
    assert main(["replay", str(recorded / "trial_d0.30"), "--mode", "kinematic", "--pusher", "arm",
                 "--out", str(again)]) == 0
    assert read_run(again)[0].meta["pusher"] == "xArm FK of the recorded /sim/joint_states"


def test_a_trial_with_a_pusher_pose_but_no_joint_states_is_replayed_with_its_pusher(
        recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    probe = _variant(recorded / "trial_d0.30", tmp_path / "probe", "probe", box_pose=True, pusher_pose=True)
    out = tmp_path / "replayed"
    assert main(["replay", str(probe), "--mode", "pusher", "--out", str(out)]) == 0
    (trial,) = read_run(out)
    real, sim = trial.platforms["real"].box_pose, trial.platforms["sim"].box_pose
    assert trial.platforms["sim"].pusher_pose is not None and trial.meta["mirror"] == "pusher"
    assert real.position[-1, 0] - real.position[0, 0] > 0.05  # the recording: the box was pushed
    np.testing.assert_allclose(sim.position[-1], real.position[-1], atol=2e-3)
    capsys.readouterr()
    # Modes that need joint states refuse, naming the topic; nothing is written.
    for mode in ("commands", "closed", "kinematic"):
        code = main(["replay", str(probe), "--mode", mode, "--out", str(tmp_path / mode)])
        err = capsys.readouterr().err
        assert code == 2 and "trial 'probe' has no /sim/joint_states" in err and err.count("\n") == 1
        assert not (tmp_path / mode).exists()


def test_pusher_mode_without_a_pusher_pose_is_an_error(recorded: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    box_only = _variant(recorded / "trial_d0.30", tmp_path / "box", "box_only", box_pose=True)
    code = main(["replay", str(box_only), "--mode", "pusher", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "trial 'box_only' has no /sim/pusher_pose (needed by the pusher mode)" in err
    assert not (tmp_path / "out").exists()

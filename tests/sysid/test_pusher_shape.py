"""``--pusher-shape rod``: a recorded pusher played back as a vertical rod (a capsule), not only a sphere.

The recording is simulated here with the engine directly: a vertical rod (tip = the recorded pusher
position, the rod ``pusher.length`` above it) pushes a box off-centre and stops, and the trial is
written as a pusher trial (box pose + pusher pose, no joint states) with the project's writers.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sim2real.cli import main
from sim2real.control.sim_platform import box_at_distance
from sim2real.params import ParameterSet
from sim2real.physics import BoxWorld
from sim2real.sim import Capsule, rollout
from sim2real.sysid import ResidualSpec, prepare_trial, trial_residuals
from sim2real.sysid.problem.inputs import pusher_placement
from sim2real.trials import JointSeries, PlatformRecord, PoseSeries, TrialRecord, read_trial, write_trial

#: The hidden truth of the recording: table friction, and a thin, long rod.
TRUTH = {"contact.mu_table": 0.3, "pusher.radius": 0.01, "pusher.length": 0.15}
HIDDEN = ParameterSet.nominal().replace(TRUTH)
GEOMETRY = [f"--set=pusher.radius={TRUTH['pusher.radius']}", f"--set=pusher.length={TRUTH['pusher.length']}"]


def rod_push(params: ParameterSet = HIDDEN) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Times (T+1,), box states (T+1, 13) and rod tips (T+1, 3), m, of an off-centre push along x."""
    dt = float(params["sim.dt"])
    t = dt * np.arange(61)
    x = 0.30 + 0.5 * np.clip(t, 0.0, 0.3)
    tips = np.stack([x, np.full_like(t, 0.03), np.full_like(t, 0.02)], axis=1)
    # The engine directly: the rod's two end points, tip below, pusher.length above it.
    ends = np.concatenate([tips, tips + np.array([0.0, 0.0, float(params["pusher.length"])])], axis=1)
    rod = Capsule(float(params["pusher.radius"]), 0.5 * float(params["pusher.length"]))
    result = rollout(BoxWorld.from_params(params, rod), box_at_distance(0.40, params), pusher_path=ends)
    return t, result.states, tips


@pytest.fixture(scope="module")
def rod_trial(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory with one pusher trial recorded from a rod."""
    t, states, tips = rod_push()
    identity = np.tile([1.0, 0.0, 0.0, 0.0], (t.size, 1))
    platform = PlatformRecord(box_pose=PoseSeries(t, states[:, 0:3], states[:, 3:7]),
                              pusher_pose=PoseSeries(t, tips, identity))
    run = tmp_path_factory.mktemp("rod_run")
    write_trial(run, TrialRecord("rod_probe", {"real": platform}, None, {"complete": True}))
    return run


def test_the_rod_placement_is_the_tip_and_the_point_pusher_length_above() -> None:
    tips = np.array([[0.1, 0.2, 0.03], [0.2, 0.2, 0.04]])
    ends = pusher_placement(tips, HIDDEN, "rod")
    np.testing.assert_array_equal(ends[:, :3], tips)
    np.testing.assert_allclose(ends[:, 3:], tips + np.array([0.0, 0.0, 0.15]))
    assert pusher_placement(tips, HIDDEN, "sphere") is tips


def test_replay_with_the_rod_reproduces_the_recording_and_with_a_sphere_does_not(
        rod_trial: Path, tmp_path: Path) -> None:
    errors = {}
    for shape in ("rod", "sphere"):
        out = tmp_path / shape
        code = main(["replay", str(rod_trial), *GEOMETRY, "--set=contact.mu_table=0.3",
                     "--pusher-shape", shape, "--out", str(out)])
        assert code == 0
        record = read_trial(out / "rod_probe")
        real, sim = record.platforms["real"].box_pose, record.platforms["sim"].box_pose
        assert real is not None and sim is not None
        errors[shape] = float(np.abs(sim.position - real.position).max())
        meta = json.loads((out / "rod_probe" / "trial.json").read_text())
        assert meta["pusher_shape"] == shape
        assert json.loads((out / "run.json").read_text())["pusher_shape"] == shape
    assert errors["rod"] < 1e-6, errors
    assert errors["sphere"] > 1e-3, errors


def test_fit_of_table_friction_with_the_rod_recovers_the_truth(rod_trial: Path, tmp_path: Path) -> None:
    out = tmp_path / "fitted.yaml"
    code = main(["fit", str(rod_trial), *GEOMETRY, "--free", "contact.mu_table", "--pusher-shape", "rod",
                 "--out", str(out)])
    report = json.loads(out.with_suffix(".json").read_text())
    assert code == 0, report["problems"]
    assert report["data"]["pusher_shape"] == "rod"
    assert report["values"]["contact.mu_table"] == pytest.approx(0.3, abs=1e-4)


def test_the_radius_gradient_of_the_rod_matches_finite_differences(rod_trial: Path) -> None:
    # Whole trial: one-step residuals from poses are kinked in the pusher contact (a sphere's as well).
    # Central differences of this hard-contact rollout agree to ~1.4 % (a sphere's: ~1.3 %).
    data = prepare_trial(read_trial(rod_trial / "rod_probe"), float(HIDDEN["sim.dt"]))
    spec = ResidualSpec(horizon=None, pusher_shape="rod")
    start = HIDDEN.replace({"pusher.radius": 0.012})
    jac = trial_residuals(data, start, ("pusher.radius",), spec).jacobian
    assert jac is not None and np.abs(jac).max() > 0.0
    eps = 1e-6
    up = trial_residuals(data, start.replace({"pusher.radius": 0.012 + eps}), (), spec).residuals
    down = trial_residuals(data, start.replace({"pusher.radius": 0.012 - eps}), (), spec).residuals
    fd = (up - down) / (2 * eps)
    assert np.linalg.norm(fd - jac[:, 0]) <= 3e-2 * np.linalg.norm(fd)


def _one_line_error(err: str, needle: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sim2real: error:") and needle in lines[0], err


def test_an_arm_trial_with_a_rod_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t, states, _ = rod_push()
    q = np.zeros((t.size, 6))
    platform = PlatformRecord(joint_states=JointSeries.from_arrays(t, q),
                              joint_command=JointSeries.from_arrays(t[:-1], position=q[:-1]),
                              box_pose=PoseSeries(t, states[:, 0:3], states[:, 3:7]))
    run = tmp_path / "arm_run"
    write_trial(run, TrialRecord("arm_push", {"real": platform}, None, {"complete": True}))
    code = main(["replay", str(run), "--pusher-shape", "rod", "--out", str(tmp_path / "replayed")])
    assert code == 2 and not (tmp_path / "replayed").exists()
    _one_line_error(capsys.readouterr().err, "--pusher-shape: trial 'arm_push': the rod pusher shape applies to a "
                    "recorded pusher pose only")
    out = tmp_path / "fitted.yaml"
    code = main(["fit", str(run), "--free", "contact.mu_table", "--pusher-shape", "rod", "--horizon", "trial",
                 "--out", str(out)])
    assert code == 2 and not out.exists()
    _one_line_error(capsys.readouterr().err, "--pusher-shape: trial 'arm_push': the rod pusher shape applies to a "
                    "recorded pusher pose only")


def test_the_rod_length_cannot_be_fitted(rod_trial: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fitted.yaml"
    code = main(["fit", str(rod_trial), "--free", "pusher.length", "--pusher-shape", "rod", "--out", str(out)])
    assert code == 2 and not out.exists()
    _one_line_error(capsys.readouterr().err, "pusher.length cannot be fitted")

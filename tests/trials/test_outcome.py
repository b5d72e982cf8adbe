"""Outcome metrics on closed-form box poses."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sim2real.errors import Sim2RealError
from sim2real.trials import PoseSeries, compute_outcome, outcome_errors, path_gap, path_rms, tilt_deg

SIZE = (0.11, 0.13, 0.21)


def _quat(axis: tuple[float, float, float], angle_rad: np.ndarray) -> np.ndarray:
    axis_unit = np.asarray(axis, float) / np.linalg.norm(axis)
    half = 0.5 * np.asarray(angle_rad, float)[:, None]
    return np.concatenate([np.cos(half), np.sin(half) * axis_unit], axis=1)


def _series(position: np.ndarray, quaternion: np.ndarray) -> PoseSeries:
    return PoseSeries(np.linspace(0.0, 1.0, len(position)), position, quaternion)


def test_pure_yaw_and_slide() -> None:
    n = 11
    angles = np.radians(np.linspace(0.0, 30.0, n))
    position = np.stack([np.linspace(0.30, 0.42, n), np.zeros(n), np.full(n, 0.105)], axis=1)
    out = compute_outcome(_series(position, _quat((0, 0, 1), angles)), SIZE, touched=True)
    assert out.yaw_deg == pytest.approx(30.0)
    assert out.max_tilt_deg == pytest.approx(0.0, abs=1e-6)
    assert not out.flipped and out.up_axis_initial == out.up_axis_final == "+z"
    assert out.initial_distance_m == pytest.approx(0.30) and out.final_distance_m == pytest.approx(0.42)
    # nearest corner of a box yawed by 30°: centre minus the half extents projected on x
    half_x = 0.5 * (0.11 * np.cos(np.radians(30)) + 0.13 * np.sin(np.radians(30)))
    assert out.near_face_distance_m == pytest.approx(0.42 - half_x)
    assert out.touched is True and out.duration_s == pytest.approx(1.0)
    np.testing.assert_allclose(out.final_quaternion, _quat((0, 0, 1), angles[-1:])[0])


def test_yaw_wraps_and_is_signed() -> None:
    angles = np.radians([0.0, -100.0, -200.0])
    out = compute_outcome(_series(np.zeros((3, 3)), _quat((0, 0, 1), angles)), SIZE)
    assert out.yaw_deg == pytest.approx(160.0)  # -200° is +160° after wrapping


def test_topple_90_degrees_flips() -> None:
    angles = np.radians(np.linspace(0.0, 90.0, 10))
    out = compute_outcome(_series(np.zeros((10, 3)), _quat((0, 1, 0), angles)), SIZE, touched=None)
    assert out.flipped and out.up_axis_initial == "+z" and out.up_axis_final == "-x"
    assert out.max_tilt_deg == pytest.approx(90.0)
    assert out.yaw_deg == pytest.approx(0.0, abs=1e-9)
    assert out.touched is None


def test_tilt_and_return_is_not_a_flip() -> None:
    angles = np.radians([0.0, 20.0, 40.0, 20.0, 0.0])
    poses = _series(np.zeros((5, 3)), _quat((1, 0, 0), angles))
    out = compute_outcome(poses, SIZE)
    assert not out.flipped and out.max_tilt_deg == pytest.approx(40.0)
    np.testing.assert_allclose(tilt_deg(poses), [0, 20, 40, 20, 0], atol=1e-9)


def test_upside_down_start_uses_initially_up_axis() -> None:
    """A box starting on its top face (body -z up) that topples 180° lands on +z up: a flip."""
    angles = np.radians([180.0, 270.0, 360.0])
    out = compute_outcome(_series(np.zeros((3, 3)), _quat((0, 1, 0), angles)), SIZE)
    assert out.up_axis_initial == "-z" and out.up_axis_final == "+z" and out.flipped
    assert out.max_tilt_deg == pytest.approx(180.0)


def test_as_dict_is_json_ready() -> None:
    import json

    out = compute_outcome(_series(np.zeros((2, 3)), _quat((0, 0, 1), np.zeros(2))), SIZE)
    data = json.loads(json.dumps(out.as_dict()))
    assert data["final_position_m"] == [0.0, 0.0, 0.0] and data["flipped"] is False


def test_bad_inputs() -> None:
    with pytest.raises(Sim2RealError, match="empty"):
        compute_outcome(PoseSeries(np.zeros(0), np.zeros((0, 3)), np.zeros((0, 4))), SIZE)
    with pytest.raises(Sim2RealError, match="box size"):
        compute_outcome(_series(np.zeros((2, 3)), _quat((0, 0, 1), np.zeros(2))), (0.1, 0.1))


def test_outcome_errors_measure_the_final_offset_in_any_direction() -> None:
    """A push along y: 18.3 cm apart in y, 4 mm in x, 1 cm in z; yaws 170° and -175° are 15° apart."""
    n = 11
    real_position = np.stack([np.full(n, 0.40), np.linspace(0.0, 0.20, n), np.full(n, 0.105)], axis=1)
    sim_position = np.stack([np.full(n, 0.404), np.linspace(0.0, 0.017, n), np.full(n, 0.095)], axis=1)
    real = compute_outcome(_series(real_position, _quat((0, 0, 1), np.radians(np.linspace(0, 170, n)))), SIZE)
    sim = compute_outcome(_series(sim_position, _quat((0, 0, 1), np.radians(np.linspace(0, -175, n)))), SIZE)
    errors = outcome_errors(real, sim)
    assert errors.final_position_xy_m == pytest.approx(np.hypot(0.183, 0.004))
    assert errors.final_position_m == pytest.approx(np.linalg.norm([0.004, 0.183, 0.01]))
    assert errors.yaw_deg == pytest.approx(15.0) and errors.flip_agree is True
    assert outcome_errors(real.as_dict(), sim.as_dict()) == errors  # trial.json outcomes give the same
    flipped = compute_outcome(_series(sim_position, _quat((0, 1, 0), np.radians(np.linspace(0, 90, n)))), SIZE)
    assert outcome_errors(real, flipped).flip_agree is False
    partial = outcome_errors({"error": "no box poses"}, sim.as_dict())
    assert np.isnan(partial.final_position_m) and np.isnan(partial.yaw_deg) and partial.flip_agree is None


def test_path_rms_over_the_common_time_span() -> None:
    t = np.linspace(0.0, 2.0, 21)
    identity = np.tile([1.0, 0.0, 0.0, 0.0], (t.size, 1))
    path = np.stack([0.3 + 0.1 * t, 0.05 * t**2, np.full(t.size, 0.1)], axis=1)
    real = PoseSeries(t, path, identity)
    shifted = PoseSeries(t, path + np.array([0.0, 0.003, 0.004]), identity)  # 5 mm everywhere
    assert path_rms(real, shifted) == pytest.approx(0.005) and path_gap(real, shifted) == pytest.approx(0.005)
    late = PoseSeries(t + 1.5, path, identity)  # overlaps 1.5-2.0 s only; ``real`` interpolated there
    expected = np.linalg.norm(path[:6] - path[15:21], axis=1)
    assert path_rms(real, late) == pytest.approx(np.sqrt(np.mean(expected**2)))
    assert path_rms(real, PoseSeries(t + 3.0, path, identity)) is None


def test_recorded_outcomes_are_read_back_and_a_missing_or_broken_trial_file_gives_none(tmp_path: Path) -> None:
    from sim2real.trials.experiment import recorded_outcomes

    stored = {"final_x": 0.46, "flipped": True}
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "trial.json").write_text(json.dumps({"outcomes": {"real": stored, "sim": None}}))
    assert recorded_outcomes(tmp_path / "good", ("real", "sim")) == {"real": stored, "sim": None}
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "trial.json").write_text("{not json")
    assert recorded_outcomes(tmp_path / "broken", ("real",)) == {"real": None}
    assert recorded_outcomes(tmp_path / "missing", ("real",)) == {"real": None}

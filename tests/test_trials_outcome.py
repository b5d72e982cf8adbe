"""Outcome metrics on closed-form box poses."""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.errors import Sim2RealError
from sim2real.trials import PoseSeries, compute_outcome, tilt_deg

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

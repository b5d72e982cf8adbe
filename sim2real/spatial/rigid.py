"""Rigid transforms as 4 × 4 homogeneous matrices (``a_from_b``: ``p_a = T[:3, :3] @ p_b + T[:3, 3]``)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from sim2real.spatial.matrices import from_matrix
from sim2real.spatial.quaternion import normalize, to_matrix

FloatArray = NDArray[np.float64]


def rigid(rotation: FloatArray, translation: FloatArray) -> FloatArray:
    """The transform of a rotation matrix (3, 3) and a translation (3,), m: shape (4, 4)."""
    transform = np.eye(4)
    transform[:3, :3] = np.asarray(rotation, dtype=float)
    transform[:3, 3] = np.asarray(translation, dtype=float)
    return transform


def from_pose(position: FloatArray, quaternion: FloatArray) -> FloatArray:
    """``frame_from_body`` of a pose: position (3,), m, and unit quaternion (4,), w, x, y, z."""
    return rigid(to_matrix(normalize(np.asarray(quaternion, dtype=float))), position)


def to_pose(transform: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The pose of ``frame_from_body`` (4, 4): position (3,), m, and unit quaternion (4,), w ≥ 0."""
    quaternion = from_matrix(np.asarray(transform, dtype=float)[:3, :3])
    return np.array(transform[:3, 3], dtype=float), quaternion if quaternion[0] >= 0.0 else -quaternion


def invert(transform: FloatArray) -> FloatArray:
    """``b_from_a`` of ``a_from_b`` (4, 4)."""
    rotation = np.asarray(transform, dtype=float)[:3, :3]
    return rigid(rotation.T, -rotation.T @ np.asarray(transform, dtype=float)[:3, 3])


def apply(transform: FloatArray, points: FloatArray) -> FloatArray:
    """Points (..., 3) in frame b expressed in frame a by ``a_from_b`` (4, 4)."""
    transform = np.asarray(transform, dtype=float)
    return np.asarray(points, dtype=float) @ transform[:3, :3].T + transform[:3, 3]


def rotation_angle(a: FloatArray, b: FloatArray) -> float:
    """The angle between the rotations of two transforms or rotation matrices, rad (0 to π)."""
    relative = np.asarray(a, dtype=float)[:3, :3].T @ np.asarray(b, dtype=float)[:3, :3]
    return float(np.arccos(np.clip((np.trace(relative) - 1.0) / 2.0, -1.0, 1.0)))


def look_at(eye: FloatArray, target: FloatArray, up: tuple[float, float, float] = (0.0, 0.0, 1.0)) -> FloatArray:
    """``world_from_camera`` of an optical frame (z forward, x right, y down) at ``eye`` looking at ``target``.

    Parameters
    ----------
    eye, target : ndarray, shape (3,)
        Camera centre and a point on its optical axis, world frame, m.
    up : tuple of 3 floats
        The world direction that appears up in the image (not parallel to the view).
    """
    forward = np.asarray(target, dtype=float) - np.asarray(eye, dtype=float)
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, np.asarray(up, dtype=float))
    if np.linalg.norm(right) < 1e-9:
        raise ValueError("look_at: the up direction is parallel to the view direction")
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    return rigid(np.column_stack([right, down, forward]), eye)

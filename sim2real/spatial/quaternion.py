"""Unit quaternions in (w, x, y, z) order and the rotations they represent.

A quaternion ``q`` maps body-frame vectors to the world frame: ``v_world = R(q) @ v_body``.
Every function accepts arrays with arbitrary leading batch dimensions (``...``).
"""

from __future__ import annotations

import numpy as np

_SMALL_ANGLE = 1e-8


def normalize(q: np.ndarray) -> np.ndarray:
    """Scale quaternions to unit length.

    Parameters
    ----------
    q : ndarray, shape (..., 4)
        Quaternions (w, x, y, z), any non-zero length.

    Returns
    -------
    ndarray, shape (..., 4)
        Unit quaternions.
    """
    q = np.asarray(q, dtype=float)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def multiply(q1: np.ndarray, q2: np.ndarray) -> np.ndarray:
    """Hamilton product ``q1 ⊗ q2`` (apply ``q2`` first, then ``q1``).

    Parameters
    ----------
    q1, q2 : ndarray, shape (..., 4)
        Quaternions (w, x, y, z); batch dimensions broadcast.

    Returns
    -------
    ndarray, shape (..., 4)
    """
    w1, x1, y1, z1 = np.moveaxis(np.asarray(q1, dtype=float), -1, 0)
    w2, x2, y2, z2 = np.moveaxis(np.asarray(q2, dtype=float), -1, 0)
    return np.stack(
        (
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ),
        axis=-1,
    )


def conjugate(q: np.ndarray) -> np.ndarray:
    """Conjugate (the inverse rotation for unit quaternions), shape (..., 4)."""
    q = np.asarray(q, dtype=float)
    return q * np.array([1.0, -1.0, -1.0, -1.0])


#: ``left_matrix``'s gather: entry (i, j) of L(p) is ``_LEFT_SIGN[i, j] * p[_LEFT_INDEX[i, j]]``.
_LEFT_INDEX = np.array([[0, 1, 2, 3], [1, 0, 3, 2], [2, 3, 0, 1], [3, 2, 1, 0]])
_LEFT_SIGN = np.array([[1.0, -1.0, -1.0, -1.0], [1.0, 1.0, -1.0, 1.0], [1.0, 1.0, 1.0, -1.0], [1.0, -1.0, 1.0, 1.0]])


def left_matrix(p: np.ndarray) -> np.ndarray:
    """The matrix ``L(p)`` of left multiplication by ``p``: ``L(p) @ q == multiply(p, q)``, shape (..., 4, 4)."""
    p = np.asarray(p, dtype=float)
    return p[..., _LEFT_INDEX] * _LEFT_SIGN


def from_rotation_vector(rotation_vector: np.ndarray) -> np.ndarray:
    """Unit quaternion of the rotation by ``|r|`` radians about ``r/|r|`` (the exponential map).

    Parameters
    ----------
    rotation_vector : ndarray, shape (..., 3)
        Axis times angle, rad.

    Returns
    -------
    ndarray, shape (..., 4)
        Unit quaternion (w, x, y, z); exact to machine precision for small angles too.
    """
    r = np.asarray(rotation_vector, dtype=float)
    angle = np.linalg.norm(r, axis=-1, keepdims=True)
    half = 0.5 * angle
    small = angle < _SMALL_ANGLE
    safe = np.where(small, 1.0, angle)
    # sin(θ/2)/θ, with its Taylor series near zero
    scale = np.where(small, 0.5 - angle**2 / 48.0, np.sin(half) / safe)
    return np.concatenate((np.cos(half), scale * r), axis=-1)


def to_rotation_vector(q: np.ndarray) -> np.ndarray:
    """Rotation vector (axis times angle in [0, π], rad) of unit quaternions, shape (..., 3)."""
    q = np.asarray(q, dtype=float)
    q = np.where(q[..., :1] < 0.0, -q, q)
    vec = q[..., 1:]
    sin_half = np.linalg.norm(vec, axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(sin_half, q[..., :1])
    small = sin_half < _SMALL_ANGLE
    scale = np.where(small, 2.0 / np.where(small, q[..., :1], 1.0), angle / np.where(small, 1.0, sin_half))
    return scale * vec


def to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices of unit quaternions.

    Parameters
    ----------
    q : ndarray, shape (..., 4)
        Unit quaternions (w, x, y, z), body -> world.

    Returns
    -------
    ndarray, shape (..., 3, 3)
        ``R`` with ``v_world = R @ v_body``.
    """
    w, x, y, z = np.moveaxis(np.asarray(q, dtype=float), -1, 0)
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    rows = (
        (1.0 - 2.0 * (yy + zz), 2.0 * (xy - wz), 2.0 * (xz + wy)),
        (2.0 * (xy + wz), 1.0 - 2.0 * (xx + zz), 2.0 * (yz - wx)),
        (2.0 * (xz - wy), 2.0 * (yz + wx), 1.0 - 2.0 * (xx + yy)),
    )
    return np.stack([np.stack(r, axis=-1) for r in rows], axis=-2)


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate body-frame vectors ``v`` (..., 3) into the world frame by unit quaternions ``q`` (..., 4)."""
    return np.einsum("...ij,...j->...i", to_matrix(q), np.asarray(v, dtype=float))


def from_axis_angle(axis: np.ndarray, angle: float | np.ndarray) -> np.ndarray:
    """Unit quaternion of a rotation by ``angle`` rad about ``axis`` (any non-zero length), shape (..., 4)."""
    axis = np.asarray(axis, dtype=float)
    unit = axis / np.linalg.norm(axis, axis=-1, keepdims=True)
    return from_rotation_vector(unit * np.asarray(angle, dtype=float)[..., None])


def yaw(q: np.ndarray) -> np.ndarray:
    """Heading angle of the body x axis about world z, rad in (-π, π], shape (...)."""
    R = to_matrix(q)
    return np.arctan2(R[..., 1, 0], R[..., 0, 0])


def yaw_gradient(q: np.ndarray) -> np.ndarray:
    """d yaw / d q (4,) of :func:`sim2real.spatial.yaw` at a unit quaternion q (w, x, y, z)."""
    w, x, y, z = q
    a = 2.0 * (x * y + w * z)
    b = 1.0 - 2.0 * (y * y + z * z)
    da = 2.0 * np.array([z, y, x, w])
    db = np.array([0.0, 0.0, -4.0 * y, -4.0 * z])
    return (b * da - a * db) / (a * a + b * b)


def tilt(q: np.ndarray, body_axis: int = 2) -> np.ndarray:
    """Angle between a body axis (default z) and world +z, rad in [0, π], shape (...)."""
    R = to_matrix(q)
    return np.arccos(np.clip(R[..., 2, body_axis], -1.0, 1.0))


def skew(v: np.ndarray) -> np.ndarray:
    """Cross-product matrices ``[v]×`` with ``[v]× @ u = v × u``; (..., 3) -> (..., 3, 3)."""
    v = np.asarray(v, dtype=float)
    zero = np.zeros(v.shape[:-1])
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    return np.stack(
        (np.stack((zero, -z, y), axis=-1), np.stack((z, zero, -x), axis=-1), np.stack((-y, x, zero), axis=-1)),
        axis=-2,
    )

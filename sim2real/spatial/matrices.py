"""Rotation matrices and fixed-axis roll-pitch-yaw: the one place scipy's ``Rotation`` is used.

scipy orders quaternions (x, y, z, w); the toolkit uses (w, x, y, z) everywhere. The conversions
below are the only boundary between the two, so no other module handles scipy's order.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy.spatial.transform import Rotation

FloatArray = NDArray[np.float64]

#: cos(pitch) below which :func:`matrix_to_rpy` treats roll and yaw as one rotation (gimbal lock).
GIMBAL_LOCK = 1e-9


def from_matrix(matrix: FloatArray) -> FloatArray:
    """Unit quaternion (w, x, y, z), shape (..., 4), of rotation matrices (..., 3, 3) (body -> world)."""
    xyzw = Rotation.from_matrix(np.asarray(matrix, dtype=float)).as_quat()
    return np.concatenate([xyzw[..., 3:4], xyzw[..., 0:3]], axis=-1)


def rpy_to_matrix(rpy: FloatArray) -> FloatArray:
    """Rotation matrix (3, 3) of fixed-axis roll, pitch, yaw (rad; about x, then y, then z: URDF ``rpy``)."""
    return Rotation.from_euler("xyz", np.asarray(rpy, dtype=float)).as_matrix()


def matrix_to_rpy(matrix: FloatArray) -> FloatArray:
    """Fixed-axis roll, pitch, yaw (rad, (3,)) of a rotation matrix (3, 3); inverse of :func:`rpy_to_matrix`.

    Closed form for ``R = Rz(yaw) Ry(pitch) Rx(roll)``, pitch in [-pi/2, pi/2] (the emulated xArm
    reports its flange pose this way about 100 times a second; scipy's general conversion held the
    GIL for about a tenth of that process's samples in a py-spy profile). At pitch = ±pi/2 (gimbal
    lock) yaw is 0 and roll holds the whole rotation, as scipy's ``as_euler("xyz")`` gives it.
    """
    r = np.asarray(matrix, dtype=float).reshape(3, 3)
    pitch = math.asin(max(-1.0, min(1.0, -float(r[2, 0]))))
    if math.hypot(r[2, 1], r[2, 2]) < GIMBAL_LOCK:
        return np.array([math.atan2(math.copysign(r[0, 1], -r[2, 0]), r[1, 1]), pitch, 0.0])
    return np.array([math.atan2(r[2, 1], r[2, 2]), pitch, math.atan2(r[1, 0], r[0, 0])])


def matrix_to_rotation_vector(matrix: FloatArray) -> FloatArray:
    """Rotation vector (axis times angle, rad, (3,)) of a rotation matrix (3, 3)."""
    return Rotation.from_matrix(np.asarray(matrix, dtype=float)).as_rotvec()

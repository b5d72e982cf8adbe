"""Rotation matrices and fixed-axis roll-pitch-yaw: the one place scipy's ``Rotation`` is used.

scipy orders quaternions (x, y, z, w); the toolkit uses (w, x, y, z) everywhere. The conversions
below are the only boundary between the two, so no other module handles scipy's order.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.spatial.transform import Rotation

FloatArray = NDArray[np.float64]


def from_matrix(matrix: FloatArray) -> FloatArray:
    """Unit quaternion (w, x, y, z), shape (..., 4), of rotation matrices (..., 3, 3) (body -> world)."""
    xyzw = Rotation.from_matrix(np.asarray(matrix, dtype=float)).as_quat()
    return np.concatenate([xyzw[..., 3:4], xyzw[..., 0:3]], axis=-1)


def rpy_to_matrix(rpy: FloatArray) -> FloatArray:
    """Rotation matrix (3, 3) of fixed-axis roll, pitch, yaw (rad; about x, then y, then z: URDF ``rpy``)."""
    return Rotation.from_euler("xyz", np.asarray(rpy, dtype=float)).as_matrix()


def matrix_to_rpy(matrix: FloatArray) -> FloatArray:
    """Fixed-axis roll, pitch, yaw (rad, (3,)) of a rotation matrix (3, 3); inverse of :func:`rpy_to_matrix`."""
    return Rotation.from_matrix(np.asarray(matrix, dtype=float)).as_euler("xyz")


def matrix_to_rotation_vector(matrix: FloatArray) -> FloatArray:
    """Rotation vector (axis times angle, rad, (3,)) of a rotation matrix (3, 3)."""
    return Rotation.from_matrix(np.asarray(matrix, dtype=float)).as_rotvec()

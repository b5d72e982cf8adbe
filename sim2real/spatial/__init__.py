"""Rotations and small pure geometric helpers (quaternions in w, x, y, z order, body -> world)."""

from sim2real.spatial.matrices import from_matrix, matrix_to_rotation_vector, matrix_to_rpy, rpy_to_matrix
from sim2real.spatial.quaternion import (
    conjugate,
    from_axis_angle,
    from_rotation_vector,
    left_matrix,
    multiply,
    normalize,
    rotate,
    skew,
    tilt,
    to_matrix,
    to_rotation_vector,
    yaw,
    yaw_gradient,
)

__all__ = [
    "conjugate", "from_axis_angle", "from_matrix", "from_rotation_vector", "left_matrix", "matrix_to_rotation_vector",
    "matrix_to_rpy", "multiply", "normalize", "rotate", "rpy_to_matrix", "skew", "tilt", "to_matrix",
    "to_rotation_vector", "yaw", "yaw_gradient",
]

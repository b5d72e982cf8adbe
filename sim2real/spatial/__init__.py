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
from sim2real.spatial.rigid import apply, from_pose, invert, look_at, rigid, rotation_angle, to_pose

__all__ = [
    "apply",
    "conjugate",
    "from_axis_angle",
    "from_matrix",
    "from_pose",
    "from_rotation_vector",
    "invert",
    "left_matrix",
    "look_at",
    "matrix_to_rotation_vector",
    "matrix_to_rpy",
    "multiply",
    "normalize",
    "rigid",
    "rotate",
    "rotation_angle",
    "rpy_to_matrix",
    "skew",
    "tilt",
    "to_matrix",
    "to_pose",
    "to_rotation_vector",
    "yaw",
    "yaw_gradient",
]

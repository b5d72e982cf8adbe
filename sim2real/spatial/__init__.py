"""Rotations and small pure geometric helpers (quaternions in w, x, y, z order, body -> world)."""

from sim2real.spatial.quaternion import (
    conjugate,
    from_axis_angle,
    from_rotation_vector,
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
    "conjugate", "from_axis_angle", "from_rotation_vector", "multiply", "normalize", "rotate", "skew",
    "tilt", "to_matrix", "to_rotation_vector", "yaw", "yaw_gradient",
]

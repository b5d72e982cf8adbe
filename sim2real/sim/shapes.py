"""Kinematic pusher primitives (their placement is given per step, they feel no force)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim2real.errors import InputError
from sim2real.spatial import from_axis_angle


@dataclass(frozen=True)
class Sphere:
    """A sphere of ``radius`` m; placed per step by its centre (3,), m, world frame."""

    radius: float

    def __post_init__(self) -> None:
        if not self.radius > 0.0:
            raise InputError(f"sphere radius must be positive, got {self.radius!r} m")

    @property
    def placement_size(self) -> int:
        """Numbers that place the shape: 3 (the centre)."""
        return 3


@dataclass(frozen=True)
class Capsule:
    """A capsule: all points within ``radius`` m of a segment of length ``2 * half_length`` m.

    Placed per step by its two segment end points, flattened to (6,), m, world frame.
    """

    radius: float
    half_length: float

    def __post_init__(self) -> None:
        if not self.radius > 0.0:
            raise InputError(f"capsule radius must be positive, got {self.radius!r} m")
        if not self.half_length >= 0.0:
            raise InputError(f"capsule half_length must be non-negative, got {self.half_length!r} m")

    @property
    def placement_size(self) -> int:
        """Numbers that place the shape: 6 (two end points)."""
        return 6


def placement_pose(placement: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pose of a pusher placement, world: a sphere's centre (3,) with the identity orientation, or a
    capsule's segment midpoint with the shortest rotation taking z onto the segment (end points (6,)).

    Returns
    -------
    position : ndarray (3,)
        m, world.
    quaternion : ndarray (4,)
        w, x, y, z.
    """
    placement = np.asarray(placement, dtype=float)
    if placement.shape[0] == 3:
        return placement, np.array([1.0, 0.0, 0.0, 0.0])
    a, b = placement[0:3], placement[3:6]
    axis = b - a
    length = float(np.linalg.norm(axis))
    if length == 0.0:
        return a, np.array([1.0, 0.0, 0.0, 0.0])
    u = axis / length
    rotation_axis = np.cross([0.0, 0.0, 1.0], u)
    angle = float(np.arctan2(np.linalg.norm(rotation_axis), u[2]))
    if np.linalg.norm(rotation_axis) < 1e-12:
        rotation_axis = np.array([1.0, 0.0, 0.0])
    return 0.5 * (a + b), from_axis_angle(rotation_axis / np.linalg.norm(rotation_axis), angle)

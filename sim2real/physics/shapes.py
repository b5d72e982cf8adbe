"""Kinematic pusher primitives (their placement is given per step, they feel no force)."""

from __future__ import annotations

from dataclasses import dataclass

from sim2real.errors import Sim2RealError


@dataclass(frozen=True)
class Sphere:
    """A sphere of ``radius`` m; placed per step by its centre (3,), m, world frame."""

    radius: float

    def __post_init__(self) -> None:
        if not self.radius > 0.0:
            raise Sim2RealError(f"sphere radius must be positive, got {self.radius!r} m")

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
            raise Sim2RealError(f"capsule radius must be positive, got {self.radius!r} m")
        if not self.half_length >= 0.0:
            raise Sim2RealError(f"capsule half_length must be non-negative, got {self.half_length!r} m")

    @property
    def placement_size(self) -> int:
        """Numbers that place the shape: 6 (two end points)."""
        return 6

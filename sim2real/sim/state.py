"""The state of the free box: pose and twist of its geometric centre."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from sim2real.errors import InputError

STATE_SIZE = 13
"""Length of :meth:`BoxState.as_vector`: position 3, quaternion 4, linear velocity 3, angular velocity 3."""


def _vector(name: str, value: ArrayLike, size: int) -> np.ndarray:
    array = np.array(value, dtype=float).reshape(-1)
    if array.shape != (size,):
        raise InputError(f"box state '{name}' must have {size} numbers, got shape {np.shape(value)}")
    if not np.all(np.isfinite(array)):
        raise InputError(f"box state '{name}' must be finite, got {array.tolist()}")
    array.setflags(write=False)
    return array


@dataclass(frozen=True)
class BoxState:
    """Pose and velocity of the box's geometric centre (not its centre of mass).

    Attributes
    ----------
    position : ndarray, shape (3,)
        Geometric centre of the box, m, world frame.
    quaternion : ndarray, shape (4,)
        Orientation (w, x, y, z), body -> world; unit length (checked to 1e-6, then normalised).
    linear_velocity : ndarray, shape (3,)
        Velocity of the geometric centre, m/s, world frame.
    angular_velocity : ndarray, shape (3,)
        Angular velocity, rad/s, world frame.
    """

    position: np.ndarray
    quaternion: np.ndarray
    linear_velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))
    angular_velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def __post_init__(self) -> None:
        object.__setattr__(self, "position", _vector("position", self.position, 3))
        quaternion = _vector("quaternion", self.quaternion, 4)
        norm = float(np.linalg.norm(quaternion))
        if abs(norm - 1.0) > 1e-6:
            raise InputError(f"box state 'quaternion' must be unit length (w, x, y, z), got norm {norm:.6g}")
        unit = quaternion / norm
        unit.setflags(write=False)
        object.__setattr__(self, "quaternion", unit)
        object.__setattr__(self, "linear_velocity", _vector("linear_velocity", self.linear_velocity, 3))
        object.__setattr__(self, "angular_velocity", _vector("angular_velocity", self.angular_velocity, 3))

    def as_vector(self) -> np.ndarray:
        """The state as one vector, shape (13,): position, quaternion (w, x, y, z), linear, angular velocity."""
        return np.concatenate((self.position, self.quaternion, self.linear_velocity, self.angular_velocity))

    @classmethod
    def from_vector(cls, x: np.ndarray) -> BoxState:
        """Inverse of :meth:`as_vector`; ``x`` has shape (13,). The quaternion is normalised."""
        x = np.asarray(x, dtype=float).reshape(-1)
        if x.shape != (STATE_SIZE,):
            raise InputError(f"box state vector must have {STATE_SIZE} numbers, got {x.shape}")
        q = x[3:7]
        return cls(x[0:3], q / np.linalg.norm(q), x[7:10], x[10:13])

    @classmethod
    def _from_engine(cls, x: np.ndarray) -> BoxState:
        """State from a (13,) vector the engine produced (finite and with a unit quaternion up to rounding).

        Skips the argument checks of the constructor (a converged step cannot produce non-finite
        numbers: the solver's convergence test fails on them); the quaternion is still normalised.
        """
        state = object.__new__(cls)
        q = x[3:7] / float(np.sqrt(x[3:7] @ x[3:7]))
        for name, part in (("position", x[0:3].copy()), ("quaternion", q), ("linear_velocity", x[7:10].copy()),
                           ("angular_velocity", x[10:13].copy())):
            part.setflags(write=False)
            object.__setattr__(state, name, part)
        return state

    @classmethod
    def at_rest(cls, position: ArrayLike, quaternion: ArrayLike = (1.0, 0.0, 0.0, 0.0)) -> BoxState:
        """A motionless box at ``position`` (m, world) with orientation ``quaternion`` (w, x, y, z)."""
        return cls(np.asarray(position, dtype=float), np.asarray(quaternion, dtype=float))

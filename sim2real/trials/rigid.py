"""Rigid transforms between frames, and the import options that give them (``x,y,z,qw,qx,qy,qz``).

Quaternions are (w, x, y, z), scalar first, as everywhere in sim2real (:mod:`sim2real.spatial`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim2real.errors import InputError
from sim2real.spatial import conjugate, multiply, normalize, rotate

_IDENTITY_Q = np.array([1.0, 0.0, 0.0, 0.0])


# -- rigid transforms ----------------------------------------------------------------------------
@dataclass(frozen=True)
class RigidTransform:
    """Pose of frame B in frame A (``T_A_B``): maps B coordinates into A, ``p_A = R(q) p_B + t``.

    Attributes
    ----------
    translation : numpy.ndarray, shape (3,)
        Origin of B in A, m.
    quaternion : numpy.ndarray, shape (4,)
        Unit quaternion (w, x, y, z) rotating B vectors into A.
    """

    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))
    quaternion: np.ndarray = field(default_factory=lambda: _IDENTITY_Q.copy())

    def __post_init__(self) -> None:
        object.__setattr__(self, "translation", np.asarray(self.translation, dtype=float).reshape(3))
        object.__setattr__(self, "quaternion", normalize(np.asarray(self.quaternion, dtype=float).reshape(4)))

    @property
    def is_identity(self) -> bool:
        """True when the transform moves nothing (zero translation, identity rotation)."""
        return bool(np.all(self.translation == 0.0) and abs(abs(self.quaternion[0]) - 1.0) < 1e-15)

    def close_to(self, other: RigidTransform, tolerance: float = 1e-6) -> bool:
        """True when both transforms agree within ``tolerance`` (m in translation, and in each quaternion
        component, either sign)."""
        turn = min(np.max(np.abs(self.quaternion - other.quaternion)),
                   np.max(np.abs(self.quaternion + other.quaternion)))
        return bool(np.max(np.abs(self.translation - other.translation)) <= tolerance and turn <= tolerance)

    def compose(self, other: RigidTransform) -> RigidTransform:
        """``T_A_C = T_A_B ∘ T_B_C`` with ``self = T_A_B`` and ``other = T_B_C``."""
        return RigidTransform(self.translation + rotate(self.quaternion, other.translation),
                              multiply(self.quaternion, other.quaternion))

    def inverse(self) -> RigidTransform:
        """``T_B_A`` of ``self = T_A_B``."""
        q_inv = conjugate(self.quaternion)
        return RigidTransform(-rotate(q_inv, self.translation), q_inv)

    def apply_poses(self, position: np.ndarray, quaternion: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Poses of bodies given in B, expressed in A.

        Parameters
        ----------
        position : numpy.ndarray, shape (N, 3)
            Body origins in B, m.
        quaternion : numpy.ndarray, shape (N, 4)
            Body orientations (w, x, y, z), body → B.

        Returns
        -------
        tuple of numpy.ndarray, shapes (N, 3) and (N, 4)
            Body origins in A (m) and orientations body → A.
        """
        q = np.broadcast_to(self.quaternion, np.shape(quaternion))
        return self.translation + rotate(q, position), multiply(q, quaternion)

    def as_dict(self) -> dict[str, list[float]]:
        """``{"translation_m": [x, y, z], "quaternion_wxyz": [w, x, y, z]}`` for trial.json."""
        return {"translation_m": [float(v) for v in self.translation],
                "quaternion_wxyz": [float(v) for v in self.quaternion]}

    @classmethod
    def from_dict(cls, data: Any) -> RigidTransform:
        """The transform of :meth:`as_dict`'s form; the identity for None or an empty mapping."""
        data = data or {}
        return cls(data.get("translation_m", (0.0, 0.0, 0.0)), data.get("quaternion_wxyz", (1.0, 0.0, 0.0, 0.0)))


def body_offset_poses(position: np.ndarray, quaternion: np.ndarray,
                      offset: RigidTransform) -> tuple[np.ndarray, np.ndarray]:
    """Poses of a frame fixed to tracked bodies: ``T_F_body ∘ offset`` for each sample.

    Parameters
    ----------
    position : numpy.ndarray, shape (N, 3)
        Tracked body origins in frame F, m.
    quaternion : numpy.ndarray, shape (N, 4)
        Tracked body orientations (w, x, y, z), body → F.
    offset : RigidTransform
        The fixed frame in the tracked body's frame (e.g. the box geometric centre), m.

    Returns
    -------
    tuple of numpy.ndarray, shapes (N, 3) and (N, 4)
        Origins (m) and orientations of the fixed frame in F.
    """
    if offset.is_identity:
        return position, quaternion
    q_offset = np.broadcast_to(offset.quaternion, np.shape(quaternion))
    return position + rotate(quaternion, np.broadcast_to(offset.translation, np.shape(position))), \
        multiply(quaternion, q_offset)


# -- options ----------------------------------------------------------------------------------------
# ``what`` names the value in messages (``the transform``); ``option`` is the argparse dest of the option
# that gives it (:class:`~sim2real.errors.Sim2RealError`), None when no option does.
def _numbers(text: str, counts: tuple[int, ...], what: str, option: str | None, form: str) -> list[float]:
    parts = [part.strip() for part in str(text).split(",")]
    try:
        values = [float(part) for part in parts]
    except ValueError:
        raise InputError(f"{what} '{text}': expected {form}", option=option) from None
    if len(values) not in counts or not all(math.isfinite(v) for v in values):
        raise InputError(f"{what} '{text}': expected {form}", option=option)
    return values


def _unit_quaternion(values: Sequence[float], what: str, option: str | None, text: str) -> np.ndarray:
    q = np.asarray(values, dtype=float)
    norm = float(np.linalg.norm(q))
    if abs(norm - 1.0) > 1e-3:
        raise InputError(f"{what} '{text}': the quaternion qw,qx,qy,qz has norm {norm:.6g}, not 1", option=option)
    return q / norm


#: Largest translation component (m) of a frame transform (``--transform``, ``--stream-transform``): a
#: tracking system's frame lies within a lab, not kilometres from the arm (1e308 is a typo, not a frame).
MAX_TRANSFORM_M = 100.0
#: Largest translation component (m) of an offset fixed to a tracked body (``--box-offset``, ``--tool-offset``).
MAX_OFFSET_M = 10.0


def _bounded(values: Sequence[float], bound: float, what: str, option: str | None, text: str) -> np.ndarray:
    """The translation ``values[:3]`` (m), each component within ``bound``."""
    translation = np.array(values[:3], dtype=float)
    worst = float(np.max(np.abs(translation)))
    if worst > bound:
        raise InputError(f"{what} '{text}': a translation of {worst:.6g} m; each of x, y, z must be within "
                         f"{bound:g} m (the values are in m)", option=option)
    return translation


def parse_transform(text: str, what: str = "the frame transform", option: str | None = "transform") -> RigidTransform:
    """Parse ``x,y,z,qw,qx,qy,qz`` (m, each within :data:`MAX_TRANSFORM_M`; unit quaternion, w first) into
    a :class:`RigidTransform`; ``what`` names the value in messages, ``option`` is the argparse dest of the
    option that gives it (:class:`~sim2real.errors.Sim2RealError`)."""
    values = _numbers(text, (7,), what, option, "x,y,z,qw,qx,qy,qz (m and a unit quaternion, w first)")
    translation = _bounded(values, MAX_TRANSFORM_M, what, option, text)
    return RigidTransform(translation, _unit_quaternion(values[3:], what, option, text))


def parse_offset(text: str, what: str = "the box offset", option: str | None = "box_offset") -> RigidTransform:
    """Parse ``x,y,z`` (m, each within :data:`MAX_OFFSET_M`) or ``x,y,z,qw,qx,qy,qz`` (with the box axes'
    rotation) into a transform; ``what`` and ``option`` as in :func:`parse_transform`."""
    values = _numbers(text, (3, 7), what, option, "x,y,z in m (optionally followed by qw,qx,qy,qz)")
    translation = _bounded(values, MAX_OFFSET_M, what, option, text)
    q = _unit_quaternion(values[3:], what, option, text) if len(values) == 7 else _IDENTITY_Q
    return RigidTransform(translation, q)

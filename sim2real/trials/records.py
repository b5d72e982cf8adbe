"""In-memory trial records: time series of joint states, poses and the reference.

Every time axis is in seconds since the trial start (``timing.start_ns`` of trial.json).
Arrays are float64 NumPy arrays; constructors check shapes and copy nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim2real.errors import InputError
from sim2real.trials.meta import TrialMeta

JOINT_NAMES: tuple[str, ...] = ("joint1", "joint2", "joint3", "joint4", "joint5", "joint6")
"""Joint names of the xArm 6 in every JointState / JointTrajectory, in this order."""

PLATFORMS: tuple[str, ...] = ("real", "sim")
"""Platform namespaces a trial may hold."""

N_JOINTS = len(JOINT_NAMES)


def _as_array(value: Any, shape_tail: tuple[int, ...], what: str) -> np.ndarray:
    array = np.asarray(value, dtype=float)
    if array.ndim != 1 + len(shape_tail) or array.shape[1:] != shape_tail:
        expected = "(N" + "".join(f", {n}" for n in shape_tail) + ")"
        raise InputError(f"{what} must have shape {expected}, got {array.shape}")
    return array


def _check_length(t: np.ndarray, arrays: Mapping[str, np.ndarray], what: str) -> None:
    for name, array in arrays.items():
        if array.shape[0] != t.shape[0]:
            raise InputError(f"{what}.{name} has {array.shape[0]} samples but t has {t.shape[0]}")


@dataclass(frozen=True)
class JointSeries:
    """Joint-space samples of the six arm joints (a JointState topic).

    Attributes
    ----------
    t : numpy.ndarray, shape (N,)
        Sample time, s since the trial start (the message header stamp).
    position : numpy.ndarray, shape (N, 6)
        Joint angles, rad, joints ``joint1``..``joint6``.
    velocity : numpy.ndarray, shape (N, 6)
        Joint velocities, rad/s. For a ``joint_command`` series this is the PD output.
    effort : numpy.ndarray, shape (N, 6)
        Joint torques, N·m (zeros where the source reports none).
    """

    t: np.ndarray
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "t", _as_array(self.t, (), "JointSeries.t"))
        for name in ("position", "velocity", "effort"):
            object.__setattr__(self, name, _as_array(getattr(self, name), (N_JOINTS,), f"JointSeries.{name}"))
        _check_length(self.t, {"position": self.position, "velocity": self.velocity, "effort": self.effort},
                      "JointSeries")

    @classmethod
    def from_arrays(cls, t: Any, position: Any | None = None, velocity: Any | None = None,
                    effort: Any | None = None) -> JointSeries:
        """Build a series, filling any missing array with zeros of shape (N, 6)."""
        t_array = np.asarray(t, dtype=float)
        zeros = np.zeros((t_array.shape[0], N_JOINTS))
        return cls(t_array,
                   zeros.copy() if position is None else position,
                   zeros.copy() if velocity is None else velocity,
                   zeros.copy() if effort is None else effort)

    def __len__(self) -> int:
        return int(self.t.shape[0])


@dataclass(frozen=True)
class PoseSeries:
    """Poses of a rigid body over time (a PoseStamped topic), in the arm base frame.

    Attributes
    ----------
    t : numpy.ndarray, shape (N,)
        Sample time, s since the trial start.
    position : numpy.ndarray, shape (N, 3)
        Body origin (box: geometric centre; pusher: sphere centre) in the arm base frame, m.
    quaternion : numpy.ndarray, shape (N, 4)
        Orientation as a unit quaternion (w, x, y, z), rotating body vectors into the base frame.
    """

    t: np.ndarray
    position: np.ndarray
    quaternion: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "t", _as_array(self.t, (), "PoseSeries.t"))
        object.__setattr__(self, "position", _as_array(self.position, (3,), "PoseSeries.position"))
        object.__setattr__(self, "quaternion", _as_array(self.quaternion, (4,), "PoseSeries.quaternion"))
        _check_length(self.t, {"position": self.position, "quaternion": self.quaternion}, "PoseSeries")

    def __len__(self) -> int:
        return int(self.t.shape[0])


@dataclass(frozen=True)
class JointReference:
    """The whole reference joint trajectory of a trial (one JointTrajectory message).

    Attributes
    ----------
    t : numpy.ndarray, shape (M,)
        Time of each reference point, s since the trial start.
    position : numpy.ndarray, shape (M, 6)
        Reference joint angles, rad.
    velocity : numpy.ndarray, shape (M, 6)
        Reference joint velocities, rad/s.
    """

    t: np.ndarray
    position: np.ndarray
    velocity: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "t", _as_array(self.t, (), "JointReference.t"))
        object.__setattr__(self, "position", _as_array(self.position, (N_JOINTS,), "JointReference.position"))
        object.__setattr__(self, "velocity", _as_array(self.velocity, (N_JOINTS,), "JointReference.velocity"))
        _check_length(self.t, {"position": self.position, "velocity": self.velocity}, "JointReference")

    def __len__(self) -> int:
        return int(self.t.shape[0])


@dataclass(frozen=True)
class PlatformRecord:
    """What one platform (``real`` or ``sim``) recorded in a trial; every series is optional.

    Attributes
    ----------
    joint_states : JointSeries or None
        Measured joint states (``/<ns>/joint_states``).
    joint_command : JointSeries or None
        PD joint-velocity commands as sent (``/<ns>/joint_command``; ``velocity`` holds them).
    box_pose : PoseSeries or None
        Box pose in the arm base frame (``/<ns>/box_pose``).
    pusher_pose : PoseSeries or None
        Pusher sphere centre from forward kinematics (``/<ns>/pusher_pose``).
    """

    joint_states: JointSeries | None = None
    joint_command: JointSeries | None = None
    box_pose: PoseSeries | None = None
    pusher_pose: PoseSeries | None = None

    def is_empty(self) -> bool:
        """True when the platform holds no series at all."""
        return all(getattr(self, name) is None for name in PLATFORM_SERIES)


PLATFORM_SERIES: tuple[str, ...] = ("joint_states", "joint_command", "box_pose", "pusher_pose")
"""Field names of :class:`PlatformRecord`, equal to the topic basenames."""


@dataclass(frozen=True)
class TrialRecord:
    """One trial: per-platform recordings, the shared reference and the trial.json content.

    Attributes
    ----------
    name : str
        Trial name, equal to its directory name (e.g. ``trial_00_d0.300``).
    platforms : dict of str to PlatformRecord
        ``"real"`` and/or ``"sim"``; platforms that recorded nothing are absent.
    reference : JointReference or None
        The reference joint trajectory, if the trial has one.
    meta : dict
        trial.json content (see the package docstring); empty for a bare bag.
    """

    name: str
    platforms: dict[str, PlatformRecord] = field(default_factory=dict)
    reference: JointReference | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for ns in self.platforms:
            if ns not in PLATFORMS:
                raise InputError(f"unknown platform '{ns}' in trial '{self.name}' (expected one of {PLATFORMS})")

    def platform(self, ns: str) -> PlatformRecord | None:
        """The record of platform ``ns``, or None if the trial has none."""
        return self.platforms.get(ns)

    @property
    def info(self) -> TrialMeta:
        """The typed read view of :attr:`meta` (:class:`~sim2real.trials.meta.TrialMeta`)."""
        return TrialMeta(self.meta, self.name)

    @property
    def complete(self) -> bool:
        """False when the trial was interrupted (trial.json ``complete``); True for bare bags."""
        return self.info.complete

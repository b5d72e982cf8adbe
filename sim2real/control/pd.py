"""The PD law shared by the real and the simulated platform (one implementation, same gains).

Per joint, the joint-velocity command is

    u = v_ref + kp · (q_ref − q) + kd · (v_ref − v)

with ``kp = pd.kp`` (1/s) and ``kd = pd.kd`` (dimensionless). The command is then limited:
velocity (≤ the joint limit, at most π rad/s), acceleration (change from the previous
command ≤ ``max_acceleration · dt``), joint position limits and a workspace box for the
pusher (a command whose one-step prediction leaves either is refused: zero command and a
reason), and non-finite inputs stop the arm (zero command and a reason).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from sim2real.model import ArmModel
from sim2real.params import ParameterSet

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class PDGains:
    """Gains of the PD law: ``kp`` (1/s), ``kd`` (dimensionless)."""

    kp: float
    kd: float

    @classmethod
    def from_params(cls, params: ParameterSet) -> PDGains:
        """Gains from ``pd.kp`` and ``pd.kd``."""
        return cls(kp=float(params["pd.kp"]), kd=float(params["pd.kd"]))


@dataclass(frozen=True)
class Workspace:
    """Axis-aligned box (base frame, m) the pusher centre must stay in."""

    lower: tuple[float, float, float] = (0.1, -0.4, 0.0)
    upper: tuple[float, float, float] = (0.75, 0.4, 0.6)

    def contains(self, point: FloatArray) -> bool:
        """True if ``point`` (3,) lies in the box."""
        return bool(np.all(point >= self.lower) and np.all(point <= self.upper))


@dataclass(frozen=True)
class CommandLimits:
    """Limits applied to every PD command.

    Attributes
    ----------
    max_velocity : ndarray, shape (6,)
        Joint velocity limits (rad/s), at most π.
    max_acceleration : float
        Limit on the command change per second (rad/s²).
    lower, upper : ndarray, shape (6,)
        Joint position limits (rad).
    workspace : Workspace or None
        Box for the pusher centre (needs ``arm``).
    arm : ArmModel or None
        Chain used to predict the pusher position for the workspace check.
    lookahead : float
        Horizon (s) of the one-step prediction ``q + u · lookahead`` checked against the limits.
    """

    max_velocity: FloatArray
    max_acceleration: float
    lower: FloatArray
    upper: FloatArray
    workspace: Workspace | None = None
    arm: ArmModel | None = field(default=None, repr=False)
    lookahead: float = 0.01

    @classmethod
    def for_arm(cls, arm: ArmModel, params: ParameterSet, workspace: Workspace | None = None) -> CommandLimits:
        """Limits of the xArm 6 model (velocity ≤ π rad/s) and ``arm.max_joint_acc``."""
        return cls(max_velocity=np.minimum(arm.max_velocity, np.pi),
                   max_acceleration=float(params["arm.max_joint_acc"]),
                   lower=arm.lower, upper=arm.upper, workspace=workspace, arm=arm,
                   lookahead=float(params["sim.dt"]))


@dataclass(frozen=True)
class PDCommand:
    """One PD output.

    Attributes
    ----------
    velocity : ndarray, shape (6,)
        Joint velocity command after limits (rad/s).
    raw : ndarray, shape (6,)
        The PD law before limits (rad/s).
    stopped : bool
        True when the command was refused or the inputs were not finite (``velocity`` is zero).
    reason : str
        Why it stopped, or ``""``.
    active : ndarray of bool, shape (6,)
        Joints whose command is the unclamped PD law (derivatives pass through).
    rate_limited : ndarray of bool, shape (6,)
        Joints whose command is the previous command plus or minus the acceleration
        limit (its derivatives are those of the previous command).
    """

    velocity: FloatArray
    raw: FloatArray
    stopped: bool = False
    reason: str = ""
    active: FloatArray = field(default_factory=lambda: np.ones(6, dtype=bool))
    rate_limited: FloatArray = field(default_factory=lambda: np.zeros(6, dtype=bool))


def pd_law(q_ref: FloatArray, v_ref: FloatArray, q: FloatArray, v: FloatArray, gains: PDGains) -> FloatArray:
    """The unlimited PD law ``v_ref + kp (q_ref − q) + kd (v_ref − v)`` (all (6,), rad and rad/s)."""
    return v_ref + gains.kp * (q_ref - q) + gains.kd * (v_ref - v)


def pd_command(q_ref: FloatArray, v_ref: FloatArray, q: FloatArray, v: FloatArray, gains: PDGains,
               limits: CommandLimits, previous: FloatArray | None = None, dt: float = 0.01) -> PDCommand:
    """The limited PD command of one control tick.

    Parameters
    ----------
    q_ref, v_ref : ndarray, shape (6,)
        Reference joint positions (rad) and velocities (rad/s).
    q, v : ndarray, shape (6,)
        Measured joint positions (rad) and velocities (rad/s) of this platform.
    gains : PDGains
        ``pd.kp``, ``pd.kd``.
    limits : CommandLimits
        Velocity, acceleration, position and workspace limits.
    previous : ndarray, shape (6,), optional
        The previous command (rad/s), for the acceleration limit.
    dt : float
        Control period (s).

    Returns
    -------
    PDCommand
        Zero velocity with ``stopped=True`` and a reason when an input is not finite or the
        command would leave the joint limits or the workspace.
    """
    zero = np.zeros(6)
    inputs = {"reference position": q_ref, "reference velocity": v_ref, "measured position": q,
              "measured velocity": v}
    for label, value in inputs.items():
        if not np.all(np.isfinite(value)):
            return PDCommand(zero, np.full(6, np.nan), True, f"non-finite {label}; arm stopped",
                             np.zeros(6, dtype=bool))
    raw = pd_law(q_ref, v_ref, q, v, gains)
    command = np.clip(raw, -limits.max_velocity, limits.max_velocity)
    rate_limited = np.zeros(6, dtype=bool)
    if previous is not None:
        step = limits.max_acceleration * dt
        bounded = np.clip(command, previous - step, previous + step)
        rate_limited = (bounded != command) & (np.abs(bounded) < limits.max_velocity)
        command = bounded
    active = command == raw
    predicted = q + command * limits.lookahead
    outside = (predicted < limits.lower) | (predicted > limits.upper)
    if np.any(outside):
        joint = int(np.flatnonzero(outside)[0]) + 1
        return PDCommand(zero, raw, True, f"command refused: joint{joint} would leave its limits",
                         np.zeros(6, dtype=bool))
    if limits.workspace is not None and limits.arm is not None:
        pusher = limits.arm.pusher_position(predicted)
        if not limits.workspace.contains(pusher):
            return PDCommand(zero, raw, True,
                             f"command refused: pusher would leave the workspace at {np.round(pusher, 3).tolist()} m",
                             np.zeros(6, dtype=bool))
    return PDCommand(command, raw, active=active, rate_limited=rate_limited)

"""The xArm joint-velocity servo model, shared by the simulator and the controller emulator.

The real xArm has no user torque mode; its joints track velocity set-points with a
closed vendor servo. We model each joint as

* the commanded velocity ``u`` delayed by ``arm.command_delay`` (``d``, s),
* tracked by a first-order lag ``dv/dt = (u(t - d) - v) / tau`` with ``tau = arm.servo_tau`` (s),
* with the velocity change per step limited by the acceleration limit and ``|v|`` by the
  velocity limit, and positions integrating the velocity.

Between set-points the command is held (zero-order hold). For piecewise-constant input
the lag is integrated exactly, so results do not depend on the integration step and the
update is smooth in ``tau`` and ``d`` (see :func:`servo_step`).

All arrays are per joint, shape (6,) for the xArm 6; angles in rad, velocities in rad/s.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from sim2real.params import ParameterSet

#: Velocity limit of every xArm 6 joint (rad/s): 180 °/s in the datasheet.
XARM_MAX_JOINT_VELOCITY = np.pi

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class ServoParams:
    """Parameters of the joint servo.

    Attributes
    ----------
    tau : float
        Time constant of the first-order lag (s), > 0.
    delay : float
        Command delay (s), >= 0.
    max_velocity : float
        Joint velocity limit (rad/s).
    max_acceleration : float
        Joint acceleration limit (rad/s^2).
    """

    tau: float
    delay: float
    max_velocity: float = XARM_MAX_JOINT_VELOCITY
    max_acceleration: float = 20.0

    @classmethod
    def from_params(cls, params: ParameterSet) -> ServoParams:
        """Servo parameters from ``arm.servo_tau``, ``arm.command_delay``, ``arm.max_joint_acc``."""
        return cls(tau=float(params["arm.servo_tau"]), delay=float(params["arm.command_delay"]),
                   max_acceleration=float(params["arm.max_joint_acc"]))


@dataclass(frozen=True)
class SegmentResult:
    """Exact response of the lag to a constant input over one interval (arrays (n,))."""

    velocity: FloatArray
    displacement: FloatArray
    # Partial derivatives, elementwise per joint.
    dv_dv0: FloatArray
    dv_du: FloatArray
    dv_dh: FloatArray
    dv_dtau: FloatArray
    dq_dv0: FloatArray
    dq_du: FloatArray
    dq_dh: FloatArray
    dq_dtau: FloatArray


def lag_segment(v0: FloatArray, u: FloatArray, h: float, tau: float) -> SegmentResult:
    """Integrate ``dv/dt = (u - v)/tau`` exactly over ``h`` seconds with constant ``u``.

    Parameters
    ----------
    v0 : ndarray, shape (n,)
        Velocity at the start of the interval (rad/s).
    u : ndarray, shape (n,)
        Constant commanded velocity (rad/s).
    h : float
        Interval length (s), >= 0.
    tau : float
        Time constant (s), > 0.

    Returns
    -------
    SegmentResult
        End velocity, displacement ``∫ v dt`` (rad) and their partial derivatives.
    """
    v0 = np.asarray(v0, dtype=float)
    u = np.asarray(u, dtype=float)
    e = np.exp(-h / tau)
    gap = v0 - u
    velocity = u + gap * e
    displacement = u * h + gap * tau * (1.0 - e)
    ones = np.ones_like(v0)
    return SegmentResult(
        velocity=velocity,
        displacement=displacement,
        dv_dv0=e * ones,
        dv_du=(1.0 - e) * ones,
        dv_dh=-gap * e / tau,
        dv_dtau=gap * e * h / tau**2,
        dq_dv0=tau * (1.0 - e) * ones,
        dq_du=(h - tau * (1.0 - e)) * ones,
        dq_dh=velocity,
        dq_dtau=gap * ((1.0 - e) - e * h / tau),
    )


@dataclass(frozen=True)
class ServoStep:
    """Result of one servo step with its Jacobians (all elementwise per joint, shape (n,)).

    ``u_early`` is the command acting during the first ``lead`` seconds of the step,
    ``u_late`` the one acting for the rest.
    """

    position: FloatArray
    velocity: FloatArray
    dq_dq0: FloatArray
    dq_dv0: FloatArray
    dq_du_early: FloatArray
    dq_du_late: FloatArray
    dq_dtau: FloatArray
    dq_dlead: FloatArray
    dv_dv0: FloatArray
    dv_du_early: FloatArray
    dv_du_late: FloatArray
    dv_dtau: FloatArray
    dv_dlead: FloatArray


def delay_split(delay: float, dt: float) -> tuple[int, float]:
    """Split a delay into whole steps and a fraction: ``delay = shift * dt + lead``.

    Returns
    -------
    shift : int
        Whole steps of delay.
    lead : float
        Remaining delay (s), ``0 <= lead < dt``: during the first ``lead`` seconds of a
        step the command of ``shift + 1`` steps ago still acts, then the one of ``shift``
        steps ago.
    """
    shift = int(np.floor(delay / dt + 1e-12))
    lead = max(delay - shift * dt, 0.0)
    if lead >= dt:  # guard against rounding
        shift, lead = shift + 1, 0.0
    return shift, lead


def servo_step(q0: FloatArray, v0: FloatArray, u_early: FloatArray, u_late: FloatArray,
               lead: float, dt: float, servo: ServoParams) -> ServoStep:
    """Advance the joint servo by one step of ``dt`` seconds.

    The command ``u_early`` acts for the first ``lead`` seconds, ``u_late`` for the
    remaining ``dt - lead`` seconds (this is how a fractional command delay enters).
    The lag is integrated exactly; then the velocity change is limited to
    ``max_acceleration * dt`` and the velocity to ``±max_velocity`` (when a limit is
    active the position uses the trapezoid rule and the clipped quantity has zero
    derivative).

    Parameters
    ----------
    q0, v0 : ndarray, shape (n,)
        Joint positions (rad) and velocities (rad/s) at the start of the step.
    u_early, u_late : ndarray, shape (n,)
        Commanded joint velocities (rad/s).
    lead : float
        Seconds of the step during which ``u_early`` acts, ``0 <= lead <= dt``.
    dt : float
        Step (s).
    servo : ServoParams
        Lag, delay and limits (``servo.delay`` is not used here; see :func:`delay_split`).

    Returns
    -------
    ServoStep
        Next positions and velocities with elementwise Jacobians.
    """
    q0 = np.asarray(q0, dtype=float)
    tau = servo.tau
    first = lag_segment(v0, u_early, lead, tau)
    second = lag_segment(first.velocity, u_late, dt - lead, tau)

    velocity = second.velocity
    dv_dv0 = second.dv_dv0 * first.dv_dv0
    dv_du_early = second.dv_dv0 * first.dv_du
    dv_du_late = second.dv_du
    dv_dtau = second.dv_dtau + second.dv_dv0 * first.dv_dtau
    dv_dlead = second.dv_dv0 * first.dv_dh - second.dv_dh

    position = q0 + first.displacement + second.displacement
    dq_dv0 = first.dq_dv0 + second.dq_dv0 * first.dv_dv0
    dq_du_early = first.dq_du + second.dq_dv0 * first.dv_du
    dq_du_late = second.dq_du
    dq_dtau = first.dq_dtau + second.dq_dtau + second.dq_dv0 * first.dv_dtau
    dq_dlead = first.dq_dh + second.dq_dv0 * first.dv_dh - second.dq_dh

    # Limits: acceleration (velocity change per step), then velocity.
    v0 = np.asarray(v0, dtype=float)
    max_dv = servo.max_acceleration * dt
    limited = np.clip(velocity, v0 - max_dv, v0 + max_dv)
    limited = np.clip(limited, -servo.max_velocity, servo.max_velocity)
    clipped = limited != velocity
    if np.any(clipped):
        hit_acc = clipped & (np.abs(limited - v0) >= max_dv - 1e-15)
        free = ~clipped
        trapezoid = q0 + 0.5 * (v0 + limited) * dt
        position = np.where(clipped, trapezoid, position)
        dv_dv0 = np.where(free, dv_dv0, np.where(hit_acc, 1.0, 0.0))
        zero = np.zeros_like(velocity)
        dv_du_early = np.where(free, dv_du_early, zero)
        dv_du_late = np.where(free, dv_du_late, zero)
        dv_dtau = np.where(free, dv_dtau, zero)
        dv_dlead = np.where(free, dv_dlead, zero)
        dq_dv0 = np.where(free, dq_dv0, 0.5 * dt * (1.0 + dv_dv0))
        dq_du_early = np.where(free, dq_du_early, zero)
        dq_du_late = np.where(free, dq_du_late, zero)
        dq_dtau = np.where(free, dq_dtau, zero)
        dq_dlead = np.where(free, dq_dlead, zero)
        velocity = limited

    return ServoStep(
        position=position, velocity=velocity,
        dq_dq0=np.ones_like(position), dq_dv0=dq_dv0, dq_du_early=dq_du_early, dq_du_late=dq_du_late,
        dq_dtau=dq_dtau, dq_dlead=dq_dlead,
        dv_dv0=dv_dv0, dv_du_early=dv_du_early, dv_du_late=dv_du_late, dv_dtau=dv_dtau, dv_dlead=dv_dlead,
    )


class CommandHistory:
    """Velocity commands received at arbitrary times, replayed with a delay (zero-order hold).

    Used where commands arrive asynchronously (the controller emulator): the servo is
    advanced in ticks, and over each tick the delayed command may switch once or more.

    Parameters
    ----------
    n_joints : int
        Number of joints.
    delay : float
        Command delay (s).
    """

    def __init__(self, n_joints: int, delay: float) -> None:
        self._delay = float(delay)
        self._times: list[float] = [-np.inf]
        self._commands: list[FloatArray] = [np.zeros(n_joints)]

    def push(self, t: float, command: FloatArray) -> None:
        """Record that ``command`` (rad/s, (n,)) was received at time ``t`` (s)."""
        if t < self._times[-1]:
            raise ValueError("commands must be pushed in time order")
        self._times.append(float(t))
        self._commands.append(np.asarray(command, dtype=float).copy())

    def active(self, t: float) -> FloatArray:
        """The delayed command acting at time ``t`` (s)."""
        index = int(np.searchsorted(self._times, t - self._delay, side="right")) - 1
        return self._commands[max(index, 0)]

    def switch_times(self, t0: float, t1: float) -> list[float]:
        """Times in ``(t0, t1)`` at which the delayed command changes."""
        return [t + self._delay for t in self._times[1:] if t0 < t + self._delay < t1]

    def prune(self, t: float) -> None:
        """Forget commands that can no longer act at or after time ``t``."""
        index = int(np.searchsorted(self._times, t - self._delay, side="right")) - 1
        if index > 0:
            del self._times[:index]
            del self._commands[:index]


def advance_servo(q: FloatArray, v: FloatArray, history: CommandHistory, t0: float, t1: float,
                  servo: ServoParams) -> tuple[FloatArray, FloatArray]:
    """Advance the servo from ``t0`` to ``t1`` (s) under the delayed commands in ``history``.

    The interval is split where the delayed command switches; each piece is one exact
    lag segment with the same limits as :func:`servo_step`.

    Returns
    -------
    q, v : ndarray, shape (n,)
        Joint positions (rad) and velocities (rad/s) at ``t1``.
    """
    edges = [t0, *history.switch_times(t0, t1), t1]
    for start, end in itertools.pairwise(edges):
        h = end - start
        if h <= 0.0:
            continue
        u = history.active(start + 0.5 * h)
        step = servo_step(q, v, u, u, 0.0, h, servo)
        q, v = step.position, step.velocity
    return q, v

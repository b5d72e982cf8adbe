"""The emulated controller's state machine and joint physics (:class:`ArmCore`): states and modes as the
xArm firmware has them, velocity and servo commands with their auto-stops, halts, errors, and the servo
model advancing the joints. Not thread-safe: :class:`~sim2real.hardware.emulator.XArmEmulator` holds a lock.

A request is executed at the time it reached the controller (its arrival, from the kernel's receive
stamp), not when this process got a CPU to execute it: a real controller answers within a servo
cycle, and a starved emulator must not move the arm later or report it later than one would. A read
reports the joints at that time (the exact servo motion from the last state kept before it, see
:data:`TRAIL_S`), and a command takes effect the command delay after it, unless the joints have
already been advanced past that instant (a request more than the command delay late), in which case
it takes effect at once.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable

import numpy as np

from sim2real.hardware import protocol as wire
from sim2real.hardware.emulator_config import N_JOINTS, CommandHook, EmulatedState, EmulatorConfig, FloatArray
from sim2real.sim.servo import CommandHistory, advance_servo

LOG = logging.getLogger(__name__)

#: Error codes that also disable the motors (E-stops and servo errors).
MOTOR_OFF_ERRORS = frozenset(range(1, 4)) | frozenset(range(10, 18))
#: Modes the controller accepts.
VALID_MODES = frozenset({0, 1, 2, 4, 5, 6, 7})
#: Positions may exceed a limit by this much (rad) before C23 is raised.
LIMIT_TOLERANCE = 1e-4
#: How far back (s) the joint states are kept for reads executed late (see the module docstring); a read
#: older than that reports the oldest state kept.
TRAIL_S = 1.0


class ArmCore:
    """The emulated controller's state machine and joint physics (not thread-safe; lock outside)."""

    def __init__(self, config: EmulatorConfig, now: float) -> None:
        self.config = config
        self.servo = config.servo
        self.lower = np.array([lo for lo, _ in config.joint_limits])
        self.upper = np.array([hi for _, hi in config.joint_limits])
        self.t = now
        self.q = np.array(config.initial_joints, dtype=float)
        self.v = np.zeros(N_JOINTS)
        self.history = CommandHistory(N_JOINTS, config.servo.delay)
        self.last_push = -math.inf
        self.command = np.zeros(N_JOINTS)
        self.vc_deadline: float | None = None
        self.servo_target: FloatArray | None = None
        self.last_servo_target: tuple[float, FloatArray] | None = None
        self.feed_forward = np.zeros(N_JOINTS)
        self.feed_forward_until = -math.inf
        self.servo_j_time_constant = (config.servo_j_time_constant if config.servo_j_time_constant is not None
                                      else 4.0 * (config.servo.tau + config.servo.delay))
        self.state = 4
        self.mode = 0
        self.error_code = 0
        self.warn_code = 0
        self.enabled = False
        self.first_motion_at: float | None = None
        self.on_command: CommandHook | None = None
        self._trail: deque[tuple[float, FloatArray, FloatArray]] = deque([(now, self.q.copy(), self.v.copy())])

    # --- physics -------------------------------------------------------------------------
    def _push(self, t: float, command: FloatArray) -> None:
        # Not before the last command, and not acting before the time the joints were advanced to.
        t = max(t, self.last_push, self.t - self.servo.delay)
        self.history.push(t, command)
        self.last_push = t
        previous, self.command = self.command, np.asarray(command, dtype=float).copy()
        if self.on_command is not None and not np.array_equal(previous, self.command):
            try:
                self.on_command(t, self.command.copy())
            except Exception:
                LOG.exception("emulator command hook failed")

    def advance(self, now: float) -> None:
        """Advance the joints to ``now`` (s), applying a due velocity auto-stop on the way."""
        if now <= self.t:
            return
        # The auto-stop belongs to the controller's motion loop, not to the command channel: in joint
        # velocity mode (mode 4) a command's duration > 0 drops the speed to 0 after that many seconds.
        # The tick thread calls this every tick, so a stalled connection does not hold it up.
        if self.vc_deadline is not None and self.vc_deadline <= now:
            deadline = max(self.vc_deadline, self.t)
            self._advance_checked(deadline)
            if self.vc_deadline is not None:  # not cleared by a limit error on the way
                self._push(deadline, np.zeros(N_JOINTS))
                self.vc_deadline = None
        self._advance_checked(now)
        trail = self._trail
        while len(trail) > 1 and trail[1][0] <= now - TRAIL_S:
            trail.popleft()
        self.history.prune(trail[0][0])

    def joints_at(self, t: float) -> tuple[FloatArray, FloatArray]:
        """Joint positions and velocities (rad, rad/s; (6,) each) at time ``t`` (s): after advancing to it, or,
        for a time the joints were advanced past already, the exact servo motion from the latest state kept at
        or before it (the oldest kept for an older ``t``). Limit errors are raised by :meth:`advance` only."""
        if t >= self.t:
            self.advance(t)
            return self.q, self.v
        for t0, q0, v0 in reversed(self._trail):
            if t0 <= t:
                return advance_servo(q0, v0, self.history, t0, t, self.servo)
        return self._trail[0][1], self._trail[0][2]

    def _advance_checked(self, until: float) -> None:
        """Advance the joints to ``until`` (s), raising C23 where they leave their limits on the way.

        The controller checks its limits every servo cycle; this process may have been starved for a
        long interval, so the error belongs where the joints crossed the limit, and the stop
        decelerates from there (not from wherever the closed form ends up at ``until``).
        """
        if until <= self.t:
            return
        q, v = advance_servo(self.q, self.v, self.history, self.t, until, self.servo)
        if self.error_code == 0 and self._outside(q):
            crossed = self._limit_crossing(until)
            self.q, self.v = advance_servo(self.q, self.v, self.history, self.t, crossed, self.servo)
            self.t = crossed
            self.raise_error(23, crossed)
            q, v = advance_servo(self.q, self.v, self.history, crossed, until, self.servo)
        self.q, self.v = q, v
        self.t = until
        self._trail.append((until, q, v))

    def _outside(self, q: FloatArray) -> bool:
        """Whether joint positions ``q`` (rad, (6,)) exceed a limit by more than :data:`LIMIT_TOLERANCE`."""
        return bool(np.any((q < self.lower - LIMIT_TOLERANCE) | (q > self.upper + LIMIT_TOLERANCE)))

    def _limit_crossing(self, until: float) -> float:
        """A time in ``(self.t, until]`` (s) at most 0.1 ms after a point where the joints leave their limits
        (bisection on the exact servo motion between ``self.t``, inside, and ``until``, outside)."""
        inside, outside = self.t, until
        while outside - inside > 1e-4:
            middle = 0.5 * (inside + outside)
            q, _ = advance_servo(self.q, self.v, self.history, self.t, middle, self.servo)
            inside, outside = (inside, middle) if self._outside(q) else (middle, outside)
        return outside

    def track_servo_target(self, now: float) -> None:
        """Mode 1: re-aim the velocity command at the latest servo_j target."""
        if self.servo_target is None:
            return
        gap = self.servo_target - self.q
        feed_forward = self.feed_forward if now < self.feed_forward_until else 0.0
        u = np.clip(feed_forward + gap / self.servo_j_time_constant, -self.servo.max_velocity,
                    self.servo.max_velocity)
        self._push(now, u)

    def halt(self, now: float) -> None:
        """Stop commanding motion (the joints decelerate through the servo)."""
        self.vc_deadline = None
        self.servo_target = None
        self.last_servo_target = None
        if np.any(self.command != 0.0):
            self._push(now, np.zeros(N_JOINTS))

    def raise_error(self, code: int, now: float) -> None:
        """Enter the error state with ``code``: stop motion, state 4."""
        LOG.info("emulated controller error C%d", code)
        self.error_code = code
        self.state = 4
        if code in MOTOR_OFF_ERRORS:
            self.enabled = False
        self.halt(now)

    # --- registers -----------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self.error_code == 0 and self.enabled and self.state in (1, 2)

    def reported_state(self) -> int:
        if self.state in (1, 2):
            moving = np.any(np.abs(self.v) > 1e-4) or np.any(self.command != 0.0)
            return 1 if moving else 2
        return self.state

    def status(self) -> int:
        status = 0
        if self.error_code:
            status |= wire.STATUS_ERROR
        if self.warn_code:
            status |= wire.STATUS_WARNING
        if self.error_code or not self.enabled or self.state in (4, 5):
            status |= wire.STATUS_NOT_READY
        return status

    def snapshot(self) -> EmulatedState:
        return EmulatedState(self.t, self.q.copy(), self.v.copy(), self.reported_state(), self.mode,
                             self.error_code, self.warn_code, self.enabled)

    def _motion_started(self, now: float) -> None:
        if self.first_motion_at is None:
            self.first_motion_at = now

    def handle(self, frame: wire.Frame, now: float, tcp_pose: Callable[[FloatArray], FloatArray]) -> tuple[int, bytes]:
        """Execute one request at time ``now`` (s: when it reached the controller, which may be before the time
        the joints were advanced to); returns (extra status bits, reply data)."""
        reg, p = frame.register, frame.params
        self.advance(now)
        extra = 0
        data = b""
        if reg == wire.Register.GET_VERSION:
            data = wire.version_payload(self.config.version)
        elif reg == wire.Register.GET_ROBOT_SN:
            fields = self.config.version.split(",")
            sn = (fields[2] if len(fields) > 3 else "").encode("ascii")
            box = (fields[3] if len(fields) > 3 else "").encode("ascii")
            data = (sn + b"\0" + box + b"\0")[:40].ljust(40, b"\0")
        elif reg == wire.Register.MOTION_ENABLE and len(p) >= 2:
            self.halt(now)
            self.enabled = bool(p[1])
            if self.enabled and self.error_code in MOTOR_OFF_ERRORS:
                self.enabled = False
            self.state = 5 if self.enabled else 4
        elif reg == wire.Register.SET_STATE and len(p) >= 1:
            self._set_state(p[0], now)
        elif reg == wire.Register.GET_STATE:
            data = bytes([self.reported_state()])
        elif reg == wire.Register.GET_CMDNUM:
            data = b"\0\0"
        elif reg == wire.Register.GET_ERROR:
            data = bytes([self.error_code, self.warn_code])
        elif reg == wire.Register.CLEAN_ERROR:
            self.error_code = 0
        elif reg == wire.Register.CLEAN_WARN:
            self.warn_code = 0
        elif reg == wire.Register.SET_MODE and len(p) >= 1:
            if p[0] in VALID_MODES:
                self.halt(now)
                self.mode = p[0]
                if self.error_code == 0:
                    self.state = 5
            else:
                extra = wire.STATUS_INVALID
        elif reg == wire.Register.MOVE_SERVOJ and len(p) >= 40:
            extra = self._servo_j(wire.unpack_floats(p, 7)[:N_JOINTS], now)
        elif reg == wire.Register.VC_SET_JOINTV and len(p) >= 29:
            duration = float(wire.unpack_floats(p, 1, 29)[0]) if len(p) >= 33 else -1.0
            extra = self._velocity(wire.unpack_floats(p, 7)[:N_JOINTS], duration, now)
        elif reg == wire.Register.GET_JOINT_STATES:
            blocks = (p[0] & 0x0F) if p else 1
            arrays = (*self.joints_at(now), np.zeros(N_JOINTS))[:max(1, min(blocks, 3))]
            data = b"".join(wire.pack_floats([*a, 0.0]) for a in arrays)
            data += wire.pack_floats([0.0] * 7 * (max(blocks, 1) - len(arrays)))
        elif reg == wire.Register.GET_TCP_POSE:
            data = wire.pack_floats(tcp_pose(self.joints_at(now)[0]))
        elif reg == wire.Register.GET_JOINT_TAU:
            data = wire.pack_floats([0.0] * 7)
        elif reg == wire.Register.SET_FEEDBACK_TYPE:
            pass
        else:
            LOG.warning("emulator: unsupported register %d (%d parameter bytes)", reg, len(p))
            extra = wire.STATUS_INVALID
        return extra, data

    def _set_state(self, requested: int, now: float) -> None:
        if requested == 0:
            if self.error_code == 0 and self.enabled:
                self.state = 2
        elif requested == 3:
            if self.state in (1, 2):
                self.halt(now)
                self.state = 3
        elif requested in (4, 6):
            self.halt(now)
            self.state = 4

    def _motion_refused(self, expected_mode: int) -> int | None:
        """Status bits if a motion command must be ignored, None if it may execute."""
        if not self.ready:
            return 0  # the status byte already carries "not ready" (and "error")
        if self.mode != expected_mode:
            return wire.STATUS_INVALID if self.config.reject_wrong_mode else 0
        return None

    def _velocity(self, speeds: FloatArray, duration: float, now: float) -> int:
        refused = self._motion_refused(4)
        if refused is not None:
            return refused
        self._motion_started(now)
        if not np.all(np.isfinite(speeds)) or np.any(np.abs(speeds) > self.servo.max_velocity + 1e-6):
            self.raise_error(24, now)
            return 0
        self._push(now, speeds)
        self.vc_deadline = now + duration if duration > 0.0 else None
        return 0

    def _servo_j(self, target: FloatArray, now: float) -> int:
        refused = self._motion_refused(1)
        if refused is not None:
            return refused
        self._motion_started(now)
        if not np.all(np.isfinite(target)) or np.any(target < self.lower) or np.any(target > self.upper):
            self.raise_error(23, now)
            return 0
        if self.last_servo_target is not None:
            t_prev, q_prev = self.last_servo_target
            # Implied target speed; the interval is floored at the 100 Hz streaming period so
            # that two commands arriving back to back do not look infinitely fast.
            interval = max(now - t_prev, 0.01)
            implied = (target - q_prev) / interval
            if np.any(np.abs(implied) > self.servo.max_velocity + 1e-6):
                self.raise_error(24, now)
                return 0
            self.feed_forward = implied
            self.feed_forward_until = now + 1.5 * interval
        self.last_servo_target = (now, target.copy())
        self.servo_target = target.copy()
        self.track_servo_target(now)
        return 0

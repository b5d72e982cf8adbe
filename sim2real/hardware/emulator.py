"""A loopback emulator of the xArm 6 controller that the unmodified ``xarm-python-sdk`` drives.

It listens on ``host`` (an address in 127.0.0.0/8) on the command port (502 by default;
configurable, see :attr:`EmulatorConfig.command_port`) and on the report ports 30001
(normal, 5 Hz), 30002 (rich, 5 Hz) and 30003 (real, 100 Hz), and speaks the protocol of
:mod:`sim2real.hardware.protocol`.

Joint motion follows :mod:`sim2real.physics.servo` with the emulator's own true servo
parameters: velocity commands (mode 4) go into a delayed :class:`CommandHistory` and the
joints are advanced exactly with :func:`advance_servo`; servo_j targets (mode 1) are
tracked by a velocity command: the target's own speed (feed-forward, from the last two
targets, held for 1.5 streaming periods) plus ``(target - q) / servo_j_time_constant``,
clipped to the velocity limit and recomputed every tick. Joint states answer at the moment of the query.

Controller behaviour: states and modes as on the real controller (mode and motion-enable
changes put it in state 5, ``set_state(0)`` makes it ready); motion commands while not
ready are answered with the "not ready" status bit and ignored; motion commands in the
wrong mode are ignored and, with ``reject_wrong_mode``, answered with the "invalid" bit;
joint-limit violations raise C23, speeds above the limit C24 (error state 4, motion
stops); velocity commands stop after their ``duration``.

Not emulated: joint torques (effort is reported as 0), position mode (mode 0) moves,
Cartesian commands, the real-time report port 30000, feedback frames.

Faults (:class:`FaultConfig`) are timed from the first motion command the emulator
accepts: added reply latency (from the start or from a given time), a one-off stall of the
command channel (~190 ms, as seen on real controllers; optionally only of a given register,
e.g. a joint-state read), a dropped connection, and a controller error at a given time.

Each client connection has a reader, which stamps every request with its arrival time, and an
executor, which runs the requests in order. Added latency is a property of the link: a request
is executed ``latency`` after it *arrived*, whatever waits ahead of it (requests in flight on a
slow link overtake nothing, but are not serialised behind each other's delay either). A stall is
one of the connection's channel: the request then and every request behind it on that
connection wait for it (as TCP's in-order delivery holds everything behind a retransmitted
segment); other connections and the motion loop go on (see :class:`FaultConfig`).

A request hook (``on_request``) sees every request when it is executed, for fault timing; a
command hook (:attr:`XArmEmulator.on_command`) sees every change of the commanded joint
velocity (including auto-stops and halts), which is what the controller actually executes.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import math
import queue
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from sim2real.errors import Sim2RealError
from sim2real.hardware import protocol as wire
from sim2real.hardware.limits import XARM6_JOINT_LIMITS
from sim2real.physics.servo import CommandHistory, ServoParams, advance_servo

FloatArray = NDArray[np.float64]
LOG = logging.getLogger(__name__)

N_JOINTS = 6
#: Version string of the emulated controller: xArm 6, SN digits 1303, firmware 2.6.107.
DEFAULT_VERSION = "6,6,XI1303000000,AC1303000000,v2.6.107"
#: Error codes that also disable the motors (E-stops and servo errors).
_MOTOR_OFF_ERRORS = frozenset(range(1, 4)) | frozenset(range(10, 18))
_VALID_MODES = frozenset({0, 1, 2, 4, 5, 6, 7})
#: Positions may exceed a limit by this much (rad) before C23 is raised.
_LIMIT_TOLERANCE = 1e-4

#: Request hook: ``(t, register, params)`` when a command-port request is executed (time s,
#: ``time.monotonic``; register number; parameter bytes); called from a connection thread.
RequestHook = Callable[[float, int, bytes], None]

#: Command hook: ``(t, command)`` when the commanded joint velocity changes (time s,
#: ``time.monotonic``, of the change in the emulated controller's timeline; rad/s, (6,)). Called
#: with the emulator's lock held: keep it short (e.g. append to a list).
CommandHook = Callable[[float, FloatArray], None]

#: Per-tick hook: ``(t, q, v)`` with time (s, ``time.monotonic``), joint positions (rad, (6,))
#: and velocities (rad/s, (6,)); called from the emulator's tick thread.
TickHook = Callable[[float, FloatArray, FloatArray], None]


@dataclass(frozen=True)
class FaultConfig:
    """Faults to inject; times are seconds after the first accepted motion command.

    Attributes
    ----------
    latency : float
        Added delay of every command-port request (s): each is executed and answered this long
        after it arrived (pipelined requests are not delayed one after the other).
    latency_at : float or None
        When the added latency starts (None: from the first request on).
    stall_at : float or None
        When the command channel stalls once (the request received then is answered
        ``stall_duration`` later and only then executed, and so is everything behind it on that
        connection). The controller's motion loop does not stall with it: the velocity command
        already executing still auto-stops after its ``duration`` (the tick thread applies it).
    stall_duration : float
        Length of the stall (s).
    stall_register : int or None
        Stall only on a request to this register (e.g. 42, the joint-state read; 81, a
        velocity command); None: the first request at or after ``stall_at``.
    drop_at : float or None
        When the emulator closes every client connection (it keeps listening).
    error_at : float or None
        When the controller raises error ``error_code``.
    error_code : int
        Controller error code raised at ``error_at`` (default C31, collision).
    """

    latency: float = 0.0
    latency_at: float | None = None
    stall_at: float | None = None
    stall_duration: float = 0.19
    stall_register: int | None = None
    drop_at: float | None = None
    error_at: float | None = None
    error_code: int = 31

    def __post_init__(self) -> None:
        if not 0.0 <= self.latency <= 10.0:
            raise Sim2RealError(f"fault latency must be in [0, 10] s, got {self.latency}")
        if not 0.0 <= self.stall_duration <= 10.0:
            raise Sim2RealError(f"stall duration must be in [0, 10] s, got {self.stall_duration}")
        if self.stall_register is not None and not 1 <= self.stall_register <= 255:
            raise Sim2RealError(f"stall register must be in 1..255, got {self.stall_register}")
        for name in ("latency_at", "stall_at", "drop_at", "error_at"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0.0):
                raise Sim2RealError(f"fault time {name} must be >= 0 s, got {value}")
        if not 1 <= self.error_code <= 255:
            raise Sim2RealError(f"fault error code must be in 1..255, got {self.error_code}")


def _default_servo() -> ServoParams:
    return ServoParams(tau=0.05, delay=0.01)


@dataclass(frozen=True)
class EmulatorConfig:
    """Configuration of an :class:`XArmEmulator`.

    Attributes
    ----------
    host : str
        Loopback address to bind (127.0.0.0/8); run several emulators on different addresses.
    command_port : int
        Command port (502 on a real controller; any port the SDK is pointed at).
    servo : ServoParams
        True servo parameters of the emulated joints.
    initial_joints : tuple of float, length 6
        Joint positions at start (rad).
    joint_limits : tuple of (float, float), length 6
        Controller position limits (rad); leaving them raises C23.
    version : str
        Answer to the firmware-version query.
    tick_rate : float
        Internal control tick (Hz): limit checks, servo_j tracking, faults, the tick hook.
    servo_j_time_constant : float or None
        Time constant (s) of the servo_j position correction in mode 1; None means
        ``4 * (servo.tau + servo.delay)``, which keeps the loop well damped.
    reject_wrong_mode : bool
        Answer motion commands sent in the wrong mode with the "invalid" status bit
        (the real controller's answer is undocumented; they are ignored either way).
    faults : FaultConfig
        Injected faults.
    report_ports : tuple of int
        Report ports to serve (subset of 30001, 30002, 30003).
    """

    host: str = "127.0.0.1"
    command_port: int = 502
    servo: ServoParams = field(default_factory=_default_servo)
    initial_joints: tuple[float, ...] = (0.0,) * N_JOINTS
    joint_limits: tuple[tuple[float, float], ...] = XARM6_JOINT_LIMITS
    version: str = DEFAULT_VERSION
    tick_rate: float = 250.0
    servo_j_time_constant: float | None = None
    reject_wrong_mode: bool = True
    faults: FaultConfig = field(default_factory=FaultConfig)
    report_ports: tuple[int, ...] = (wire.REPORT_PORT_NORMAL, wire.REPORT_PORT_RICH, wire.REPORT_PORT_REAL)

    def __post_init__(self) -> None:
        try:
            address = ipaddress.IPv4Address(self.host)
        except ValueError:
            raise Sim2RealError(f"emulator host must be a dotted IPv4 loopback address, got {self.host!r}") from None
        if not address.is_loopback:
            raise Sim2RealError(f"emulator host must be a loopback address (127.0.0.N), got {self.host}")
        if not 1 <= self.command_port <= 65535:
            raise Sim2RealError(f"command port must be in 1..65535, got {self.command_port}")
        if self.command_port in wire.REPORT_SIZES:
            raise Sim2RealError(f"command port {self.command_port} collides with a report port")
        if len(self.initial_joints) != N_JOINTS or not all(math.isfinite(q) for q in self.initial_joints):
            raise Sim2RealError(f"initial joints must be {N_JOINTS} finite angles (rad)")
        if len(self.joint_limits) != N_JOINTS or any(lo >= hi for lo, hi in self.joint_limits):
            raise Sim2RealError(f"joint limits must be {N_JOINTS} (lower, upper) pairs with lower < upper")
        for k, (q, (low, high)) in enumerate(zip(self.initial_joints, self.joint_limits, strict=True)):
            if not low <= q <= high:
                raise Sim2RealError(f"initial joint {k + 1} at {q} rad is outside its limits "
                                    f"[{low:.4g}, {high:.4g}] rad")
        if not 10.0 <= self.tick_rate <= 2000.0:
            raise Sim2RealError(f"tick rate must be in [10, 2000] Hz, got {self.tick_rate}")
        if set(self.report_ports) - set(wire.REPORT_SIZES):
            raise Sim2RealError(f"report ports must be among {sorted(wire.REPORT_SIZES)}")


@dataclass(frozen=True)
class EmulatedState:
    """A consistent snapshot of the emulated arm.

    Attributes
    ----------
    t : float
        Time of the snapshot (s, ``time.monotonic``).
    q, v : ndarray, shape (6,)
        True joint positions (rad) and velocities (rad/s).
    state, mode, error_code, warn_code : int
        Controller registers.
    enabled : bool
        All motors enabled.
    """

    t: float
    q: FloatArray
    v: FloatArray
    state: int
    mode: int
    error_code: int
    warn_code: int
    enabled: bool


class _ArmCore:
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

    # --- physics -------------------------------------------------------------------------
    def _push(self, t: float, command: FloatArray) -> None:
        t = max(t, self.last_push)
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
            self._push(max(self.vc_deadline, self.t), np.zeros(N_JOINTS))
            self.vc_deadline = None
        self.q, self.v = advance_servo(self.q, self.v, self.history, self.t, now, self.servo)
        self.t = now
        self.history.prune(now)
        if self.error_code == 0:
            outside = (self.q < self.lower - _LIMIT_TOLERANCE) | (self.q > self.upper + _LIMIT_TOLERANCE)
            if np.any(outside):
                self.raise_error(23, now)

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
        if code in _MOTOR_OFF_ERRORS:
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
        """Execute one request at time ``now``; returns (extra status bits, reply data)."""
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
            if self.enabled and self.error_code in _MOTOR_OFF_ERRORS:
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
            if p[0] in _VALID_MODES:
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
            arrays = (self.q, self.v, np.zeros(N_JOINTS))[:max(1, min(blocks, 3))]
            data = b"".join(wire.pack_floats([*a, 0.0]) for a in arrays)
            data += wire.pack_floats([0.0] * 7 * (max(blocks, 1) - len(arrays)))
        elif reg == wire.Register.GET_TCP_POSE:
            data = wire.pack_floats(tcp_pose(self.q))
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


class XArmEmulator:
    """The emulated controller: TCP servers on loopback plus a physics tick thread.

    Parameters
    ----------
    config : EmulatorConfig
        Where to listen, true servo parameters, faults.
    on_tick : callable, optional
        ``on_tick(t, q, v)`` called after every internal tick with the true joint state
        (time s, positions rad (6,), velocities rad/s (6,)); exceptions are logged.
    on_request : callable, optional
        ``on_request(t, register, params)`` called after every executed command-port request
        (time s, register number, parameter bytes); exceptions are logged.
    on_command : callable, optional
        ``on_command(t, command)`` called whenever the commanded joint velocity changes (time s
        of the change, rad/s (6,)), with the emulator's lock held; exceptions are logged. Also
        settable later through the :attr:`on_command` attribute.

    Examples
    --------
    >>> with XArmEmulator(EmulatorConfig(host="127.0.0.9", command_port=5020)) as emu:  # doctest: +SKIP
    ...     emu.joint_positions()
    """

    def __init__(self, config: EmulatorConfig, on_tick: TickHook | None = None,
                 on_request: RequestHook | None = None, on_command: CommandHook | None = None) -> None:
        self.config = config
        self._on_tick = on_tick
        self._on_request = on_request
        self._lock = threading.Lock()
        self._core = _ArmCore(config, time.monotonic())
        self._core.on_command = on_command
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._servers: list[socket.socket] = []
        self._clients: set[socket.socket] = set()
        self._clients_lock = threading.Lock()
        self._stalled = False
        self._dropped = False
        self._errored = False
        self._onsets: dict[str, float] = {}
        self._arm_model: object | None = None
        self._model_tried = False
        self.requests_served = 0

    # --- lifecycle -----------------------------------------------------------------------
    def start(self) -> XArmEmulator:
        """Bind every port and start serving; raises Sim2RealError if a port cannot be bound."""
        if self._threads:
            raise Sim2RealError("emulator already started")
        self._stop.clear()
        try:
            command_server = self._listen(self.config.command_port)
            report_servers = [(port, self._listen(port)) for port in self.config.report_ports]
        except Sim2RealError:
            self._close_servers()
            raise
        self._spawn(self._accept_loop, command_server, self._serve_commands, name="xarm-emu-cmd")
        for port, server in report_servers:
            self._spawn(self._accept_loop, server, self._report_sender(port), name=f"xarm-emu-{port}")
        self._spawn(self._tick_loop, name="xarm-emu-tick")
        return self

    def stop(self) -> None:
        """Stop serving, close every socket and join the threads (idempotent)."""
        self._stop.set()
        self._close_servers()
        self._close_clients()
        for thread in self._threads:
            thread.join(timeout=2.0)
        self._threads.clear()

    def __enter__(self) -> XArmEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def address(self) -> str:
        """``host:command_port`` the emulator listens on."""
        return f"{self.config.host}:{self.config.command_port}"

    # --- thread-safe accessors -----------------------------------------------------------
    def snapshot(self) -> EmulatedState:
        """The arm's true state advanced to now."""
        with self._lock:
            self._core.advance(time.monotonic())
            return self._core.snapshot()

    def joint_positions(self) -> FloatArray:
        """True joint positions now (rad, (6,))."""
        return self.snapshot().q

    def joint_velocities(self) -> FloatArray:
        """True joint velocities now (rad/s, (6,))."""
        return self.snapshot().v

    def inject_error(self, code: int) -> None:
        """Raise controller error ``code`` now (as a collision or E-stop would)."""
        with self._lock:
            now = time.monotonic()
            self._core.advance(now)
            self._core.raise_error(int(code), now)

    # --- in-process hardware interface (a ros2_control stand-in, no SDK) ------------------
    def activate_velocity_mode(self) -> bool:
        """Enable the motors, joint velocity mode (4) and state 0, in process: what xarm_ros2's
        ``UFRobotSystemHardware::on_activate`` sends with ``velocity_control`` (registers 11, 19, 12).

        Returns
        -------
        bool
            Whether the arm is ready for velocity commands (no error present).
        """
        with self._lock:
            now = time.monotonic()
            core = self._core
            core.advance(now)
            core.halt(now)
            core.enabled = core.error_code not in _MOTOR_OFF_ERRORS
            if core.error_code == 0:
                core.mode = 4
                core.state = 2 if core.enabled else 4
            return core.ready and core.mode == 4

    def set_joint_velocity(self, speeds: FloatArray, duration: float) -> bool:
        """``vc_set_joint_velocity(speeds, is_sync, duration)`` in process (register 81): the
        joint velocities (6,) rad/s, dropped to zero by the controller ``duration`` s later
        (``duration <= 0``: no auto-stop).

        Returns
        -------
        bool
            False when the controller refused it (not ready, error, wrong mode) or raised an
            error for it (speed limit: C24).
        """
        with self._lock:
            now = time.monotonic()
            core = self._core
            core.advance(now)
            refused = core._velocity(np.asarray(speeds, dtype=float).reshape(N_JOINTS), float(duration), now)
            return refused == 0 and core.error_code == 0 and core.ready

    @property
    def on_command(self) -> CommandHook | None:
        """The command hook (see the class parameters); assign None to remove it."""
        return self._core.on_command

    @on_command.setter
    def on_command(self, hook: CommandHook | None) -> None:
        with self._lock:
            self._core.on_command = hook

    @property
    def first_motion_at(self) -> float | None:
        """Time (s, ``time.monotonic``) of the first accepted motion command, or None."""
        with self._lock:
            return self._core.first_motion_at

    @property
    def fault_onsets(self) -> dict[str, float]:
        """When each injected fault began (s, ``time.monotonic``): keys ``stall``, ``drop``,
        ``error``, ``latency`` (first delayed reply), for those that happened."""
        return dict(self._onsets)

    # --- internals -----------------------------------------------------------------------
    def _spawn(self, target: Callable[..., None], *args: object, name: str) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _listen(self, port: int) -> socket.socket:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            server.bind((self.config.host, port))
        except OSError as err:
            server.close()
            raise Sim2RealError(f"cannot listen on {self.config.host}:{port}: {err.strerror}") from None
        server.listen(4)
        server.settimeout(0.1)
        self._servers.append(server)
        return server

    def _close_servers(self) -> None:
        for server in self._servers:
            server.close()
        self._servers.clear()

    def _close_clients(self) -> None:
        with self._clients_lock:
            clients = list(self._clients)
            self._clients.clear()
        for conn in clients:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def _accept_loop(self, server: socket.socket, serve: Callable[[socket.socket], None]) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(0.1)  # explicit: the SDK changes the process-wide default timeout
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._clients_lock:
                self._clients.add(conn)
            threading.Thread(target=self._serve_guarded, args=(serve, conn), daemon=True,
                             name=f"{threading.current_thread().name}-conn").start()

    def _serve_guarded(self, serve: Callable[[socket.socket], None], conn: socket.socket) -> None:
        try:
            serve(conn)
        except OSError:
            pass
        finally:
            with self._clients_lock:
                self._clients.discard(conn)
            conn.close()

    def _fault_due(self, at: float | None, now: float) -> bool:
        first = self._core.first_motion_at
        return at is not None and first is not None and now - first >= at

    def _serve_commands(self, conn: socket.socket) -> None:
        """Read requests and stamp their arrival; a per-connection executor runs them in order.

        Requests received before the client closed its side are still executed (a controller
        executes what reached it); after a dropped connection or the emulator's stop, none are.
        """
        pending: queue.SimpleQueue[tuple[wire.Frame, float] | None] = queue.SimpleQueue()
        gone = threading.Event()
        executor = threading.Thread(target=self._execute_commands, args=(conn, pending, gone), daemon=True,
                                    name=f"{threading.current_thread().name}-exec")
        executor.start()
        buffer = bytearray()
        try:
            while not self._stop.is_set():
                try:
                    chunk = conn.recv(4096)
                except TimeoutError:
                    continue
                except OSError:
                    gone.set()
                    return
                if not chunk:
                    if conn.fileno() < 0:  # closed here (a dropped link, or the emulator's stop)
                        gone.set()
                    return
                arrived = time.monotonic()
                buffer.extend(chunk)
                for frame in wire.split_frames(buffer):
                    if frame.protocol != wire.PROTOCOL_HEARTBEAT:
                        pending.put((frame, arrived))
        finally:
            pending.put(None)
            while executor.is_alive() and not self._stop.is_set() and not gone.is_set():
                executor.join(0.1)

    def _execute_commands(self, conn: socket.socket, pending: queue.SimpleQueue[tuple[wire.Frame, float] | None],
                          gone: threading.Event) -> None:
        faults = self.config.faults
        replying = True
        while not self._stop.is_set() and not gone.is_set():
            try:
                item = pending.get(timeout=0.1)
            except queue.Empty:
                continue
            if item is None:
                return
            frame, arrived = item
            if (not self._stalled and self._fault_due(faults.stall_at, time.monotonic())
                    and faults.stall_register in (None, frame.register)):
                self._stalled = True
                self._onsets["stall"] = arrived
                LOG.info("emulator: stalling the command channel for %.3f s", faults.stall_duration)
                if self._stop.wait(max(arrived + faults.stall_duration - time.monotonic(), 0.0)):
                    return
            if faults.latency > 0.0 and (faults.latency_at is None or self._fault_due(faults.latency_at, arrived)):
                self._onsets.setdefault("latency", arrived)
                # Latency of the link, not of the controller: each request is executed and
                # answered ``latency`` after it arrived, however many are in flight.
                if self._stop.wait(max(arrived + faults.latency - time.monotonic(), 0.0)):
                    return
            if gone.is_set() or conn.fileno() < 0:
                return
            with self._lock:
                handled_at = time.monotonic()
                extra, data = self._core.handle(frame, handled_at, self._tcp_pose)
                status = self._core.status() | extra
            if self._on_request is not None:
                try:
                    self._on_request(handled_at, frame.register, frame.params)
                except Exception:
                    LOG.exception("emulator request hook failed")
            if replying:
                try:
                    conn.sendall(wire.encode_reply(frame, status, data))
                except OSError:
                    replying = False  # the client is gone; what reached the controller is still executed
            self.requests_served += 1

    def _report_sender(self, port: int) -> Callable[[socket.socket], None]:
        period = 1.0 / wire.REPORT_RATES[port]

        def send_reports(conn: socket.socket) -> None:
            next_at = time.monotonic()
            while not self._stop.is_set():
                with self._lock:
                    self._core.advance(time.monotonic())
                    snap = self._core.snapshot()
                packet = wire.encode_report(port, wire.ReportSnapshot(
                    state=snap.state, mode=snap.mode, joints=snap.q, velocities=snap.v,
                    efforts=np.zeros(N_JOINTS), tcp_pose=self._tcp_pose(snap.q), enabled=snap.enabled,
                    error_code=snap.error_code, warn_code=snap.warn_code))
                conn.sendall(packet)
                next_at += period
                delay = next_at - time.monotonic()
                if delay < 0.0:
                    next_at = time.monotonic()
                elif self._stop.wait(delay):
                    return

        return send_reports

    def _tick_loop(self) -> None:
        period = 1.0 / self.config.tick_rate
        faults = self.config.faults
        next_at = time.monotonic()
        while not self._stop.is_set():
            drop = False
            with self._lock:
                # The clock is read under the lock: a command handled while this thread waited for it
                # has advanced the joints past an earlier reading, and the tick would then report
                # those joints with a stale time (a world stepped from such samples sees the pusher
                # jump: seen as a box launched at 2-5 m/s in stand-in runs on a busy machine).
                now = time.monotonic()
                core = self._core
                core.advance(now)
                if core.mode == 1 and core.ready:
                    core.track_servo_target(now)
                if not self._errored and self._fault_due(faults.error_at, now):
                    self._errored = True
                    self._onsets["error"] = now
                    core.raise_error(faults.error_code, now)
                if not self._dropped and self._fault_due(faults.drop_at, now):
                    self._dropped = drop = True
                    self._onsets["drop"] = now
                q, v = core.q.copy(), core.v.copy()
            if drop:
                LOG.info("emulator: dropping every client connection")
                self._close_clients()
            if self._on_tick is not None:
                try:
                    self._on_tick(now, q, v)
                except Exception:
                    LOG.exception("emulator tick hook failed")
            next_at += period
            delay = next_at - time.monotonic()
            if delay < 0.0:
                next_at = time.monotonic()
            elif self._stop.wait(delay):
                return

    def _tcp_pose(self, q: FloatArray) -> FloatArray:
        """Flange pose for reports and register 41: x, y, z (mm), roll, pitch, yaw (rad).

        Uses the kinematic model of :mod:`sim2real.model`; without it the pose is NaN.
        """
        if not self._model_tried:
            self._model_tried = True
            try:
                from sim2real.model.arm import load_arm

                self._arm_model = load_arm()
            except Exception as err:  # the model layer is optional for the emulator
                LOG.warning("emulator: no kinematic model (%s); TCP pose reported as NaN", err)
        if self._arm_model is None:
            return np.full(6, np.nan)
        from sim2real.spatial import matrix_to_rpy

        base_from_flange = self._arm_model.forward(q)  # type: ignore[attr-defined]
        rpy = matrix_to_rpy(base_from_flange[:3, :3])
        return np.concatenate([base_from_flange[:3, 3] * 1000.0, rpy])

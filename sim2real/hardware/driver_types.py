"""What the xArm driver is configured with, and what it reports: configuration, faults, commands, status.

Plain records (no I/O) shared by :mod:`sim2real.hardware.driver` and its callers (the ROS node,
the CLI, the benchmarks). Times are ``time.monotonic()`` seconds; angles rad; velocities rad/s.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from sim2real.errors import Sim2RealError
from sim2real.hardware import protocol as wire
from sim2real.hardware.address import require_robot_address
from sim2real.hardware.codes import describe_error, describe_warn, mode_name, state_name
from sim2real.hardware.limits import XARM6_JOINT_LIMITS

FloatArray = NDArray[np.float64]
N_JOINTS = 6
#: Fault kinds that are a planned stop, not a failure.
PLANNED_STOPS = frozenset({"signal"})


@dataclass(frozen=True)
class DriverConfig:
    """Configuration of an :class:`XArmDriver`.

    Attributes
    ----------
    ip : str
        Controller IPv4 address; the driver connects to nothing else.
    command_port : int
        Controller command port (502 on a real controller).
    mode : int
        4 = joint velocity (default), 1 = servo (servo_j targets integrated from the velocities).
    command_duration : float
        Auto-stop duration carried by every velocity command (s). In mode 4 it also caps the
        stall budget: a request unanswered this long means the controller has stopped by itself.
    watchdog_timeout : float
        Zero velocity is sent when no fresh command was sent within this time (s); with the
        supervisor's exact wake-up the zero goes out about this long after the last command.
    watchdog_period : float
        Period of the supervisor thread (s): stall, dropped-link, signal and watchdog checks.
    max_velocity : float
        Commanded joint speeds are clamped to ±this (rad/s).
    joint_limits : tuple of (float, float), length 6
        Position limits (rad); motion further out of ``limit_margin`` inside them is zeroed.
    limit_margin : float
        Margin inside the joint limits (rad).
    limit_lookahead : float
        A joint's command is zeroed when its last read position moved on at that speed for
        this long (s) would leave the margin; covers the servo's delay and lag.
    connect_timeout : float
        TCP connect timeout (s).
    handshake_timeout : float
        Time the controller has to answer the firmware-version query (s).
    command_timeout : float
        SDK reply timeout of every exchange (s): the hard limit (fault ``timeout``), and the
        longest a caller blocks in a stalled exchange (the arm is stopped long before, by the
        supervisor).
    max_round_trip : float
        Stall budget (s): a request with no reply byte from the controller this long after it
        left this host is a ``stall`` fault (kernel time, see the module docstring: CPU
        starvation of this process does not count). The supervisor wakes at this deadline.
        Default 35 ms: the stop then goes out ~36 ms after the stalled request, and is executed
        within 100 ms even over a link with 60 ms latency (``python -m benchmarks.faults --json``).
    latency_budget : float
        Latency budget (s): when even the fastest of the last ``latency_window`` round trips
        (kernel time, from the request leaving to the reply arriving) took longer, the link
        itself is slow: a ``latency`` fault. A healthy loopback or lab link answers in ~1 ms;
        10 ms keeps a 100 Hz read+command loop on pace. The kernel's clock has the resolution of
        its tick (1-4 ms). Judged from ``start()``'s first exchange on: its start-up exchanges
        (``motion_enable``, ``set_mode``, ``set_state(0)``, ``get_state``) fill the window before
        any motion command, so a link already this slow at connection faults in ``start()`` and
        the arm is never commanded to move.
    latency_window : int
        Number of consecutive exchanges in the latency judgement (a sliding window: judged at
        every exchange once full; ``start()`` reads the state until it is full).
    stop_timeout : float
        Connect and reply deadline (s) of the stop sent over a fresh connection.
    second_link_stop : bool
        On a stall, latency or timeout fault (or any fault while a request is unanswered),
        also send the stop over a second, fresh connection, in parallel with the frames written
        on the command socket (where they wait behind the stalled request).
    exit_deadline : float
        Once a signal stopped the arm, the longest the interpreter's shutdown may take (s)
        before the process ends with ``os._exit(128 + signal)``.
    min_firmware : tuple of int
        Oldest accepted firmware (needs velocity durations and get_joint_states).
    report_type : str
        SDK report stream: ``"real"`` (100 Hz, port 30003), ``"rich"`` or ``"normal"`` (5 Hz).
    servo_max_step_time : float
        Mode 1: longest time (s) one velocity command is integrated over into a target.
    """

    ip: str
    command_port: int = 502
    mode: int = 4
    command_duration: float = 0.1
    watchdog_timeout: float = 0.045
    watchdog_period: float = 0.005
    max_velocity: float = 3.14
    joint_limits: tuple[tuple[float, float], ...] = XARM6_JOINT_LIMITS
    limit_margin: float = 0.02
    limit_lookahead: float = 0.1
    connect_timeout: float = 2.0
    handshake_timeout: float = 2.0
    command_timeout: float = 1.0
    max_round_trip: float = 0.035
    latency_budget: float = 0.01
    latency_window: int = 4
    stop_timeout: float = 0.1
    second_link_stop: bool = True
    exit_deadline: float = 2.0
    min_firmware: tuple[int, int, int] = (1, 8, 103)
    report_type: str = "real"
    servo_max_step_time: float = 0.03

    def __post_init__(self) -> None:
        require_robot_address(self.ip, "xArm address (DriverConfig.ip)")
        if not 1 <= self.command_port <= 65535:
            raise Sim2RealError(f"xArm command port must be in 1..65535, got {self.command_port}")
        if self.mode not in (1, 4):
            raise Sim2RealError(f"xArm driver mode must be 4 (joint velocity) or 1 (servo), got {self.mode}")
        if self.report_type not in ("real", "rich", "normal"):
            raise Sim2RealError(f"report type must be real, rich or normal, got {self.report_type!r}")
        if len(self.joint_limits) != N_JOINTS or any(lo >= hi for lo, hi in self.joint_limits):
            raise Sim2RealError(f"joint limits must be {N_JOINTS} (lower, upper) pairs with lower < upper")
        positive = ("command_duration", "watchdog_timeout", "watchdog_period", "max_velocity", "connect_timeout",
                    "handshake_timeout", "command_timeout", "max_round_trip", "latency_budget",
                    "stop_timeout", "exit_deadline", "servo_max_step_time")
        for name in positive:
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise Sim2RealError(f"xArm driver {name} must be a positive number of seconds/units, got {value}")
        if self.latency_window < 1:
            raise Sim2RealError(f"latency window must be >= 1, got {self.latency_window}")

    @property
    def stall_budget(self) -> float:
        """Longest a request may stay unanswered (s): ``max_round_trip``, and in mode 4 at most
        ``command_duration`` (the controller's auto-stop)."""
        return min(self.max_round_trip, self.command_duration) if self.mode == 4 else self.max_round_trip


@dataclass(frozen=True)
class Fault:
    """Why the driver stopped.

    Attributes
    ----------
    kind : str
        ``controller_error``, ``not_ready``, ``rejected``, ``stall``, ``latency``,
        ``timeout``, ``disconnected``, ``auto_stop`` (no command for longer than the controller's
        auto-stop: the arm stopped itself), ``signal`` or ``sdk``.
    message : str
        One line, with the controller code and its meaning where there is one.
    code : int
        Controller error code (0 if the fault is not a controller error).
    at : float
        When it was latched (s, ``time.monotonic``): no motion command left the driver after it.
    """

    kind: str
    message: str
    code: int = 0
    at: float = field(default_factory=time.monotonic)

    @property
    def planned(self) -> bool:
        """Whether this is a planned stop (SIGINT or SIGTERM), not a failure."""
        return self.kind in PLANNED_STOPS


class HardwareError(Sim2RealError):
    """The arm was stopped because of :attr:`fault`; the driver will not resume by itself."""

    def __init__(self, fault: Fault) -> None:
        super().__init__(fault.message)
        self.fault = fault


class ControllerError(HardwareError):
    """The controller reported error ``code`` (``C<code>``); see :attr:`meaning`."""

    @property
    def code(self) -> int:
        return self.fault.code


@dataclass(frozen=True)
class CommandRecord:
    """One command sent to the controller.

    Attributes
    ----------
    stamp : float
        The caller's timestamp of the command (any clock, usually ROS time, s).
    sent_at, replied_at : float
        ``time.monotonic()`` just before the SDK call and after its reply (s).
    requested : ndarray, shape (6,)
        Joint velocities asked for (rad/s).
    sent : ndarray, shape (6,)
        Joint velocities actually commanded after clamping (rad/s).
    target : ndarray, shape (6,) or None
        Mode 1: the servo_j target sent (rad); None in mode 4.
    clamped : bool
        Whether clamping changed the command.
    source : str
        ``"caller"`` or ``"watchdog"``.
    code : int
        SDK return code (0 = accepted).
    wire_at : float or None
        ``time.monotonic()`` just after its bytes were handed to the socket (s); None if unknown.
    """

    stamp: float
    sent_at: float
    replied_at: float
    requested: FloatArray
    sent: FloatArray
    target: FloatArray | None
    clamped: bool
    source: str
    code: int
    wire_at: float | None = None

    @property
    def round_trip(self) -> float:
        """Command round trip (s)."""
        return self.replied_at - self.sent_at

    @property
    def moves(self) -> bool:
        """Whether it commanded motion (a nonzero velocity, or a servo target in mode 1)."""
        return self.target is not None or bool(np.any(self.sent))


@dataclass(frozen=True)
class Preflight:
    """What the controller reported before starting."""

    firmware: wire.FirmwareVersion
    error_code: int
    warn_code: int
    state: int
    mode: int

    def summary(self) -> str:
        """One line for logs."""
        return (f"xArm {self.firmware.robot_sn} firmware {self.firmware.label}: "
                f"error {describe_error(self.error_code) if self.error_code else 'none'}, "
                f"warning {describe_warn(self.warn_code) if self.warn_code else 'none'}, "
                f"state {self.state} ({state_name(self.state)}), mode {self.mode} ({mode_name(self.mode)})")


@dataclass(frozen=True)
class DriverStatus:
    """A snapshot the ROS node can poll.

    ``cpu_wait`` is how long the driver's own threads (callers, supervisor, the SDK's receiver)
    waited runnable for a CPU since they were first seen (s; None where unknown): this machine's
    load, which the link judgements leave out.
    """

    connected: bool
    running: bool
    fault: Fault | None
    commands_sent: int
    watchdog_trips: int
    last_command_age: float
    cpu_wait: float | None = None

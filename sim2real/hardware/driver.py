"""Driver of the real xArm 6 through the vendor SDK (``xarm.wrapper.XArmAPI``).

Typical use from a 100 Hz timer::

    driver = XArmDriver(DriverConfig(ip="192.168.1.185"))
    driver.connect()            # bounded handshake + preflight; Sim2RealError if not ready
    driver.start()              # enable, set mode (4 = joint velocity), set state 0
    ...
    q, v, effort, stamp = driver.read_joint_states()
    driver.send_velocity(qdot, stamp=t)   # clamped; raises HardwareError after any fault
    ...
    driver.stop()               # zero velocity, mode 0, state 4, disconnect

Fail-safe behaviour
-------------------
Every request to the controller (velocity command, joint-state read, error query) is timed by
the kernel, not by this process: the driver reads the command socket's TCP statistics
(``TCP_INFO``: bytes received, time since data was last sent and received), which the kernel
keeps as segments leave and arrive whether or not this process is running. CPU starvation of
this process (a late supervisor, a caller or SDK thread waiting for a CPU) therefore neither
hides a silent controller nor looks like one. The faults:

* **stall**: a request the controller has not answered (no byte came back since it left) after
  ``max_round_trip``, or, in mode 4, after the command's own auto-stop ``command_duration`` if
  that is shorter: the controller has then stopped by itself and must not be resumed by a request
  the link releases later. Judged by a supervisor thread as the stall goes on, and again by the
  caller when the reply arrives (a supervisor that got no CPU meanwhile cannot let it pass);
* **latency**: even the fastest of the last ``latency_window`` round trips took longer than
  ``latency_budget`` (a slow link delays every exchange);
* **disconnected**: the controller closed the link; **timeout**: the SDK gave up waiting
  (``command_timeout``);
* **controller_error**, **not_ready**, **rejected**, **sdk**: what the controller or SDK said;
* **signal**: SIGINT or SIGTERM, a *planned* stop (logged at info level, see below).

Where the kernel's statistics are unavailable (not Linux), the same budgets are judged on this
process's clock, which may take a starved process for a slow link (never the other way round).

The latch: on any fault, the driver first closes the gate every byte to the command socket
passes through (the lowest send point, wrapped around the SDK's socket writer): under the gate's
lock, checked immediately before the bytes go to the socket, every frame that could move the arm
is refused from then on; stops, zero velocity and reads still pass. The fault's timestamp
(:attr:`Fault.at`) is taken under that lock, so no motion command leaves after it, whatever
thread keeps calling :meth:`XArmDriver.send_velocity`. Only a new :meth:`XArmDriver.connect`
(after :meth:`XArmDriver.stop`) or a new driver opens it again: the driver never resumes by
itself, and a link that comes back resumes nothing.

The stop then supersedes whatever is queued: zero velocity, ``set_state(4)`` (stop: halt and
clear the controller's queue), ``set_mode(0)`` and ``set_state(4)`` go straight onto the command
socket, without waiting for the SDK's lock that a stalled exchange holds. When the link itself is
suspect (stall, latency, timeout, or a request still unanswered) the same stop also goes over a
second, fresh connection at once (``second_link_stop``): frames behind a stalled request on the
command socket wait for it (TCP delivers in order), the second connection's do not, so the
controller is stopped (state 4) before it releases the stale request, and then refuses it as "not
ready". If the link is gone, the stop goes over a fresh connection only (bounded by
``stop_timeout``). The controller is left in mode 0, state 4.

Every velocity command also carries a short auto-stop ``command_duration``, and the supervisor
sends zero velocity ``watchdog_timeout`` after the last fresh command was sent (through the SDK:
while an exchange is in flight then, as soon as it returned, which the stall budget bounds).

Ctrl-C and SIGTERM: when started from the main thread the driver installs handlers that only
set a flag; the supervisor thread then stops the arm at once (it does not depend on the vendor
SDK letting a KeyboardInterrupt through: its reply wait is a bare ``except:``), and the next
driver call in the main thread raises KeyboardInterrupt (SIGINT) or SystemExit (SIGTERM), so the
caller's ``with`` block runs :meth:`XArmDriver.stop`. A signal that arrives outside a driver call
is raised at once as well. A previous Python handler is still called. Once a signal has stopped
the arm, the process's exit is bounded: when the interpreter starts shutting down, a deadline of
``exit_deadline`` begins, after which the process ends with ``os._exit(128 + signal)`` (the arm
was stopped long before); a hang at interpreter shutdown cannot keep it alive.

Times are ``time.monotonic()`` seconds; angles rad; velocities rad/s; efforts N·m.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import dataclasses
import logging
import math
import os
import select
import signal
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import numpy as np
from numpy.typing import NDArray

from sim2real.errors import Sim2RealError
from sim2real.hardware import protocol as wire
from sim2real.hardware.address import require_robot_address
from sim2real.hardware.codes import describe_error, describe_warn, mode_name, state_name
from sim2real.hardware.limits import XARM6_JOINT_LIMITS

FloatArray = NDArray[np.float64]
LOG = logging.getLogger(__name__)
N_JOINTS = 6

# SDK return codes (xarm/x3/code.py APIState and XCONF.UxbusState).
_SDK_OK, _SDK_ERROR, _SDK_WARNING, _SDK_TIMEOUT, _SDK_NOT_READY, _SDK_INVALID = 0, 1, 2, 3, 9, 10
_SDK_NOT_CONNECTED = -1
#: Transaction id of the driver's own stop frames; the SDK numbers its requests 1..65535 and skips
#: replies to any other id as stale.
_STOP_TRANSACTION = 0
#: Fault kinds that say the link itself is suspect (the stop also goes over a second connection).
_LINK_FAULTS = frozenset({"stall", "latency", "timeout"})
#: Fault kinds that are a planned stop, not a failure.
PLANNED_STOPS = frozenset({"signal"})
#: Longest wait (s) for the SDK's own threads when disconnecting.
_DISCONNECT_WAIT = 2.0
_T = TypeVar("_T")


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
        its tick (1-4 ms).
    latency_window : int
        Number of consecutive exchanges in the latency judgement.
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


@dataclass(frozen=True)
class _TcpTimes:
    """The kernel's view of a TCP connection (``TCP_INFO``): seconds since data was last sent and
    received (at the kernel tick's resolution), and bytes received so far."""

    sent_ago: float
    received_ago: float
    received_bytes: int


#: ``struct tcp_info`` (linux/tcp.h): tcpi_last_data_sent at byte 44, tcpi_last_data_recv at 52
#: (u32, ms), tcpi_bytes_received at 128 (u64, Linux >= 4.1).
_TCP_INFO_SIZE = 136


def _tcp_times(sock: socket.socket | None) -> _TcpTimes | None:
    """The kernel's timing of ``sock`` (see :class:`_TcpTimes`); None where unavailable.

    The kernel stamps each segment as it leaves or arrives, whether or not this process runs,
    so these times measure the peer and the link, not this machine's CPU load.
    """
    if sock is None or not hasattr(socket, "TCP_INFO"):
        return None
    try:
        raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_SIZE)
    except (OSError, ValueError):
        return None
    if len(raw) < _TCP_INFO_SIZE:
        return None
    sent_ms, received_ms = struct.unpack_from("=I4xI", raw, 44)
    (received,) = struct.unpack_from("=Q", raw, 128)
    return _TcpTimes(sent_ms * 1e-3, received_ms * 1e-3, int(received))


@dataclass
class _Request:
    """The last request written to the command socket (not a stop frame): when it was handed to
    the socket (monotonic s), the socket's received-byte count just before (None if unknown),
    its register, and when a reply byte was first seen (None: not yet)."""

    written_at: float
    received_before: int | None
    register: int
    answered_at: float | None = None


class _SendGate:
    """The lowest send point of the command socket: every frame the SDK or the driver writes goes
    through :meth:`write` (installed over the SDK port's ``write``), under one lock.

    Once :meth:`close` has run, frames that could move the arm (:func:`protocol.cannot_move` is
    False) are refused there, checked immediately before the bytes would go to the socket; the
    SDK then sees a failed send (``ERR_NOTTCP``) at once. Also keeps the last request frame
    (:class:`_Request`), overall and per writing thread, for the stall and round-trip judgements.
    """

    def __init__(self, port: Any, sock: socket.socket | None) -> None:
        self._port_write: Callable[[bytes], int] = port.write
        self._sock = sock
        self._lock = threading.Lock()
        self._closed = False
        self.request: _Request | None = None
        self._by_thread: dict[int, _Request] = {}
        port.write = self.write

    @property
    def closed(self) -> bool:
        """Whether motion frames are refused."""
        return self._closed

    def write(self, data: bytes) -> int:
        """Write ``data`` (whole request frames) unless it could move the arm after :meth:`close`;
        0 when written, -1 when refused or the SDK's write failed (as the SDK's port answers)."""
        frames = wire.request_frames(data)
        with self._lock:
            if self._closed and not all(wire.cannot_move(frame) for frame in frames):
                return -1
            before = _tcp_times(self._sock)
            code = self._port_write(data)
            written_at = time.monotonic()
            requests = [f for f in frames if f.transaction != _STOP_TRANSACTION
                        and f.protocol != wire.PROTOCOL_HEARTBEAT]
            if code == 0 and requests:
                self.request = _Request(written_at, before.received_bytes if before else None, requests[-1].register)
                self._by_thread[threading.get_ident()] = self.request
            return int(code)

    def mine(self) -> _Request | None:
        """The last request the calling thread wrote, or None."""
        return self._by_thread.get(threading.get_ident())

    def close(self, wait: float) -> float:
        """Refuse every frame that could move the arm from now on; returns the moment (monotonic
        s) after which none left (a write in progress finishes first; waited for up to ``wait``)."""
        acquired = self._lock.acquire(timeout=wait)
        try:
            self._closed = True
            return time.monotonic()
        finally:
            if acquired:
                self._lock.release()


class _ExitDeadline:
    """A hard deadline on this process's exit once a signal stopped an arm (one per process).

    :meth:`expect` registers, once, a hook that runs when the interpreter starts shutting down
    (before it waits for non-daemon threads): a daemon thread then ends the process with
    ``os._exit(128 + signal)`` after the deadline, and an interval timer (SIGALRM, default
    action) ends it a second later should no Python thread run any more.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._signum = signal.SIGINT
        self._seconds = math.inf
        self._registered = False

    def expect(self, signum: int, seconds: float) -> None:
        """A signal ``signum`` stopped the arm: bound the shutdown to ``seconds`` from its start."""
        with self._lock:
            self._signum, self._seconds = signum, min(self._seconds, seconds)
            if self._registered:
                return
            self._registered = True
        register = getattr(threading, "_register_atexit", None)
        if register is None:  # an interpreter without the hook: bound what follows the thread joins
            atexit.register(self._start)
            return
        try:
            register(self._start)
        except RuntimeError:  # already shutting down: the deadline starts now
            self._start()

    def _start(self) -> None:
        signum, seconds = self._signum, self._seconds
        threading.Thread(target=self._expire, args=(signum, seconds), name="xarm-exit-deadline", daemon=True).start()
        with contextlib.suppress(ValueError, OSError, AttributeError):
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.setitimer(signal.ITIMER_REAL, seconds + 1.0)

    @staticmethod
    def _expire(signum: int, seconds: float) -> None:
        time.sleep(seconds)
        name = signal.Signals(signum).name
        with contextlib.suppress(OSError):
            os.write(2, f"xArm driver: the process is still shutting down {seconds:g} s after it began (the "
                        f"arm was stopped on {name}); ending it now\n".encode())
        os._exit(128 + signum)


_EXIT_DEADLINE = _ExitDeadline()


@dataclass
class _Exchange:
    """One SDK exchange in flight: what it is and the thread running it."""

    what: str
    thread: int = field(default_factory=threading.get_ident)


class _RunQueueDelay:
    """How long registered threads of this process were runnable but waiting for a CPU (s).

    Linux's per-thread scheduler statistics (``/proc/self/task/<tid>/schedstat``, second field,
    ns). A diagnostic (:attr:`DriverStatus.cpu_wait`): how starved the driver's own threads were,
    which the link judgements do not depend on. :meth:`of` returns None where the statistics are
    unavailable (another OS, a kernel without ``CONFIG_SCHED_INFO``, a thread that ended).
    """

    _MAX_OPEN = 16

    def __init__(self) -> None:
        self._fds: dict[int, int] = {}
        self._baseline: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._lock = threading.Lock()

    def of(self, tids: tuple[int, ...]) -> float | None:
        """Total run-queue delay of the threads ``tids`` so far (s), or None."""
        total = 0.0
        with self._lock:
            for tid in tids:
                value = self._read(tid)
                if value is None:
                    return None
                total += value
        return total

    def register(self, tid: int) -> None:
        """Count thread ``tid`` in :meth:`since_registered` from now on."""
        with self._lock:
            if tid not in self._baseline and len(self._baseline) < self._MAX_OPEN:
                value = self._read(tid)
                if value is not None:
                    self._baseline[tid] = self._last[tid] = value

    def since_registered(self) -> float | None:
        """Run-queue delay of the registered threads since each was registered (s), or None."""
        with self._lock:
            for tid in self._baseline:
                value = self._read(tid)
                if value is not None:
                    self._last[tid] = value
            if not self._baseline:
                return None
            return sum(self._last[tid] - self._baseline[tid] for tid in self._baseline)

    def _read(self, tid: int) -> float | None:
        fd = self._fds.get(tid)
        try:
            if fd is None:
                if len(self._fds) >= self._MAX_OPEN:
                    self._close_all()
                fd = self._fds[tid] = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY)
            return int(os.pread(fd, 128, 0).split()[1]) * 1e-9
        except (OSError, IndexError, ValueError):
            if fd is not None:
                self._fds.pop(tid, None)
                with contextlib.suppress(OSError):
                    os.close(fd)
            return None

    def _close_all(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()

    def close(self) -> None:
        with self._lock:
            self._close_all()


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


def probe_controller(ip: str, port: int, connect_timeout: float, handshake_timeout: float) -> wire.FirmwareVersion:
    """Connect to ``ip:port`` and ask for the firmware version, with hard time limits.

    The SDK retries an unanswered version query for minutes; this probe bounds that.

    Raises
    ------
    Sim2RealError
        Refused or unreachable address, no answer, or an answer that is not an xArm version.
    """
    where = f"{ip}:{port}"
    try:
        sock = socket.create_connection((ip, port), timeout=connect_timeout)
    except ConnectionRefusedError:
        raise Sim2RealError(f"cannot connect to the xArm controller at {where}: connection refused "
                            f"(is it switched on, and is the address right?)") from None
    except TimeoutError:
        raise Sim2RealError(f"cannot connect to the xArm controller at {where}: "
                            f"no TCP connection within {connect_timeout:g} s") from None
    except OSError as err:
        raise Sim2RealError(f"cannot connect to the xArm controller at {where}: {err.strerror or err}") from None
    with sock:
        deadline = time.monotonic() + handshake_timeout
        buffer = bytearray()
        try:
            sock.sendall(wire.encode_request(1, wire.PROTOCOL_PRIVATE, wire.Register.GET_VERSION))
            while True:
                if len(buffer) >= wire.HEADER_SIZE:
                    length = wire.HEADER.unpack_from(buffer, 0)[2]
                    if len(buffer) >= wire.HEADER_SIZE + length:
                        break
                remaining = deadline - time.monotonic()
                if remaining <= 0.0:
                    raise TimeoutError
                sock.settimeout(remaining)
                chunk = sock.recv(4096)
                if not chunk:
                    raise Sim2RealError(f"the xArm controller at {where} closed the connection "
                                        f"instead of answering the version query")
                buffer.extend(chunk)
        except TimeoutError:
            raise Sim2RealError(f"the xArm controller at {where} accepted the connection but did not answer "
                                f"the version query within {handshake_timeout:g} s") from None
        except OSError as err:
            raise Sim2RealError(f"lost the connection to {where} during the version query: {err}") from None
    _, protocol, length = wire.HEADER.unpack_from(buffer, 0)
    register = buffer[wire.HEADER_SIZE]
    data = bytes(buffer[wire.HEADER_SIZE + 2:wire.HEADER_SIZE + length])
    if protocol != wire.PROTOCOL_PRIVATE or register != wire.Register.GET_VERSION:
        raise Sim2RealError(f"{where} does not speak the xArm protocol (reply protocol {protocol}, "
                            f"register {register} to a version query)")
    version = wire.parse_version(data)
    if version is None:
        text = data.split(b"\0", 1)[0].decode("ascii", errors="replace")
        raise Sim2RealError(f"unexpected firmware answer from {where}: {text!r} is not an xArm version string")
    if version.axis != N_JOINTS:
        raise Sim2RealError(f"{where} is a {version.axis}-axis arm ({version.text!r}), expected an xArm 6")
    return version



class XArmDriver:
    """Joint-velocity driver of one xArm 6 (see the module docstring).

    Parameters
    ----------
    config : DriverConfig
        Address, mode, limits, timeouts.
    """

    #: The SDK reads its command port from a process-wide class attribute; serialise patching it.
    _SDK_PORT_LOCK: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, config: DriverConfig) -> None:
        self.config = config
        self._arm: Any = None
        self._gate: _SendGate | None = None
        self._io = threading.RLock()
        self._lower = np.array([lo for lo, _ in config.joint_limits]) + config.limit_margin
        self._upper = np.array([hi for _, hi in config.joint_limits]) - config.limit_margin
        self._round_trips: collections.deque[float] = collections.deque(maxlen=config.latency_window)
        self._history: collections.deque[CommandRecord] = collections.deque(maxlen=100_000)
        self._commands_sent = 0
        self._watchdog_trips = 0
        self._supervisor_stop = threading.Event()
        self._wake = threading.Event()
        self._watchdog: threading.Thread | None = None
        self._stop_lock = threading.Lock()
        self._previous_handlers: dict[int, Any] = {}
        self._handlers: dict[int, Any] = {}
        self._run_delay = _RunQueueDelay()
        self._reset_run()

    def _reset_run(self) -> None:
        """State of one run (connect to stop): the latch is open again only here."""
        self._fault: Fault | None = None
        self._running = False
        self.preflight: Preflight | None = None
        self._last_q: FloatArray | None = None
        self._servo_target: FloatArray | None = None
        self._last_send_at = -math.inf
        self._last_sent_moving = False  # the last command that left asked for motion
        self._last_fresh_at = -math.inf
        self._zero_sent = True
        self._watchdog_retry_at = -math.inf
        self._stall_retry_at = -math.inf
        self._inflight: _Exchange | None = None
        self._round_trips.clear()
        self._run_delay.close()
        self._run_delay = _RunQueueDelay()
        self._second_stop: threading.Thread | None = None
        #: When the first stop (raw frames or fresh connection) after a fault left (monotonic s).
        self.stop_sent_at: float | None = None
        self._signal: int | None = None
        self._signal_pending = False

    # --- Ctrl-C and SIGTERM ----------------------------------------------------------------
    def _install_signal_guard(self) -> None:
        """Handle SIGINT and SIGTERM by flagging them; the supervisor stops the arm.

        ``xarm-python-sdk`` waits for replies inside a bare ``except:`` that also catches a
        KeyboardInterrupt raised there, so a Ctrl-C raised during an SDK call can vanish while
        the program keeps streaming; SIGTERM's default action ends the process without a stop.
        The handler sets a flag and wakes the supervisor thread, which stops the arm within one
        period whatever the main thread is doing. Unless the main thread itself is inside an
        SDK exchange, the handler raises KeyboardInterrupt / SystemExit at once; inside one, the
        driver raises it when the call returns (:meth:`_raise_if_interrupted`). Installed from the
        main thread only (Python runs handlers there). An ignored signal (SIG_IGN) stays ignored.
        """
        if threading.current_thread() is not threading.main_thread() or self._previous_handlers:
            return
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous = signal.getsignal(signum)
            if previous == signal.SIG_IGN:
                continue
            handler = self._signal_handler(previous)
            signal.signal(signum, handler)
            self._previous_handlers[signum] = previous
            self._handlers[signum] = handler

    def _signal_handler(self, previous: Any) -> Callable[[int, Any], None]:
        def on_signal(number: int, frame: Any) -> None:
            self._signal = number
            self._signal_pending = True
            self._wake.set()
            _EXIT_DEADLINE.expect(number, self.config.exit_deadline)  # from the start of the shutdown
            if callable(previous) and previous is not signal.default_int_handler:
                previous(number, frame)  # e.g. a ROS context's own shutdown handler
            inflight = self._inflight
            if inflight is None or inflight.thread != threading.get_ident():
                # This (the main) thread is not inside the SDK: raise it now. An exchange of
                # another thread (a node's loop) does not delay it: the main thread may make
                # no driver call that would raise it later (seen: xarm_node ignored Ctrl-C).
                self._raise_if_interrupted()

        return on_signal

    def _restore_signals(self) -> None:
        """Put back the handlers the guard replaced, unless someone replaced the guard since."""
        if self._previous_handlers and threading.current_thread() is threading.main_thread():
            for signum, previous in self._previous_handlers.items():
                if signal.getsignal(signum) is self._handlers.get(signum):
                    signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
            self._previous_handlers, self._handlers = {}, {}

    def _raise_if_interrupted(self) -> None:
        # Only where Python delivers signals (the main thread): a node's loop thread must not
        # receive it; the node shuts down through its own signal handling.
        if self._signal_pending and threading.current_thread() is threading.main_thread():
            self._signal_pending = False
            if self._signal == signal.SIGTERM:
                raise SystemExit(128 + signal.SIGTERM)
            raise KeyboardInterrupt("Ctrl-C during an xArm driver call")

    # --- connection ----------------------------------------------------------------------
    @property
    def where(self) -> str:
        return f"{self.config.ip}:{self.config.command_port}"

    @property
    def connected(self) -> bool:
        return self._arm is not None and bool(self._arm.connected)

    def connect(self) -> Preflight:
        """Connect (bounded in time), then run the preflight checks.

        This is the explicit restart: a driver that was stopped (after a fault or not) may be
        connected again, and only that clears its latched fault.

        Raises
        ------
        Sim2RealError
            Unreachable, silent or foreign controller; too old firmware; or the arm is not
            ready (controller error present, arm moving under another client).
        """
        if self._arm is not None:
            raise Sim2RealError("xArm driver is already connected")
        cfg = self.config
        firmware = probe_controller(cfg.ip, cfg.command_port, cfg.connect_timeout, cfg.handshake_timeout)
        if firmware.number < cfg.min_firmware:
            need = ".".join(str(n) for n in cfg.min_firmware)
            raise Sim2RealError(f"xArm at {self.where} runs firmware {firmware.label}; this driver needs >= v{need}")
        self._reset_run()
        self._arm = self._open_sdk(cfg.connect_timeout + cfg.handshake_timeout + 2.0)
        self._arm.set_timeout(cfg.command_timeout)
        sock = self._sdk_socket()
        with contextlib.suppress(OSError, AttributeError):  # small frames leave at once (no Nagle delay)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # type: ignore[union-attr]
        self._gate = _SendGate(self._arm.arm._stream, sock)
        with contextlib.suppress(Exception):  # the SDK thread that reads the command socket
            self._run_delay.register(int(self._arm.arm._stream.native_id))
        try:
            self.preflight = self._preflight(firmware)
        except Sim2RealError:
            self._disconnect()
            raise
        LOG.info("%s", self.preflight.summary())
        return self.preflight

    def _open_sdk(self, deadline_s: float) -> Any:
        """Construct ``XArmAPI`` and connect it in a helper thread with a deadline."""
        from xarm.core.config.x_config import XCONF
        from xarm.wrapper import XArmAPI

        cfg = self.config
        arm = XArmAPI(cfg.ip, is_radian=True, do_not_open=True, forbid_uds=True, report_type=cfg.report_type)
        outcome: dict[str, BaseException | None] = {"error": None}

        def open_arm() -> None:
            try:
                arm.connect()
            except BaseException as err:
                outcome["error"] = err

        previous_default = socket.getdefaulttimeout()
        with self._SDK_PORT_LOCK:
            saved_port = XCONF.SocketConf.TCP_CONTROL_PORT
            XCONF.SocketConf.TCP_CONTROL_PORT = cfg.command_port
            try:
                worker = threading.Thread(target=open_arm, name="xarm-sdk-connect", daemon=True)
                worker.start()
                worker.join(deadline_s)
            finally:
                XCONF.SocketConf.TCP_CONTROL_PORT = saved_port
                socket.setdefaulttimeout(previous_default)  # the SDK sets a process-wide 1 s default
        if worker.is_alive():
            with contextlib.suppress(Exception):
                arm.disconnect()
            raise Sim2RealError(f"the xArm SDK did not finish connecting to {self.where} within {deadline_s:g} s")
        if outcome["error"] is not None or not arm.connected:
            with contextlib.suppress(Exception):
                arm.disconnect()
            reason = outcome["error"] or "not connected"
            raise Sim2RealError(f"the xArm SDK could not connect to {self.where}: {reason}")
        return arm

    def _preflight(self, firmware: wire.FirmwareVersion) -> Preflight:
        arm = self._arm
        code, (error_code, warn_code) = arm.get_err_warn_code()
        if code != 0:
            raise Sim2RealError(f"xArm at {self.where} did not report its error codes (SDK code {code})")
        code, state = arm.get_state()
        if code != 0:
            raise Sim2RealError(f"xArm at {self.where} did not report its state (SDK code {code})")
        deadline = time.monotonic() + 0.5  # the mode is only known from the report stream
        while not arm.arm.reported and time.monotonic() < deadline:
            time.sleep(0.01)
        preflight = Preflight(firmware, int(error_code), int(warn_code), int(state), int(arm.mode))
        if error_code:
            raise Sim2RealError(f"xArm at {self.where} is not ready: controller error {describe_error(error_code)}; "
                                f"remove its cause and clear it before starting")
        if state == 1:
            raise Sim2RealError(f"xArm at {self.where} is not ready: it is moving (state 1); "
                                f"another client may be driving it")
        if warn_code:
            LOG.warning("xArm at %s reports warning %s", self.where, describe_warn(warn_code))
        return preflight



    # --- start / stop --------------------------------------------------------------------
    def start(self) -> None:
        """Enable the motors, set the configured mode and state 0, start the supervisor.

        Raises
        ------
        HardwareError
            The controller refused or reported an error.
        """
        if self._arm is None:
            raise Sim2RealError("xArm driver: connect() before start()")
        self._raise_if_faulted()
        cfg = self.config
        with self._io:
            self._check(self._arm.motion_enable(True), "motion_enable")
            self._check(self._arm.set_mode(cfg.mode), f"set_mode({cfg.mode})")
            self._check(self._arm.set_state(0), "set_state(0)")
            deadline = time.monotonic() + 1.0
            while self._arm.mode != cfg.mode and time.monotonic() < deadline:
                time.sleep(0.005)
            code, state = self._arm.get_state()
            self._check(code, "get_state")
            if state not in (1, 2):
                self._latch(Fault("not_ready", f"xArm at {self.where} did not become ready after start: "
                                               f"state {state} ({state_name(state)})"))
            self._raise_if_faulted()
            self._round_trips.clear()
            self._running = True
            self._supervisor_stop.clear()
            self._watchdog = threading.Thread(target=self._supervise, name="xarm-supervisor", daemon=True)
            self._watchdog.start()
            try:
                q, _, _, _ = self.read_joint_states()
            except BaseException:
                self._running = False
                raise
            self._servo_target = q.copy()
            self._last_fresh_at = self._last_send_at = time.monotonic()
            self._zero_sent = True
        self._install_signal_guard()

    def stop(self) -> None:
        """Stop the arm, leave it in a safe mode (mode 0, state 4) and disconnect. Idempotent.

        A planned stop (logged at info level, never as a fault): from its first line no motion
        command leaves the driver (the gate closes; zero velocity and the stop still go out), and
        every wait in it is bounded (an exchange stuck in the SDK, the SDK's own threads).
        """
        self._running = False
        cfg = self.config
        if self._gate is not None:
            self._gate.close(cfg.stop_timeout)
        self._supervisor_stop.set()
        self._wake.set()
        if self._watchdog is not None and self._watchdog is not threading.current_thread():
            self._watchdog.join(timeout=1.0)
        self._watchdog = None
        if self._arm is None:
            self._restore_signals()
            return
        locked = self._io.acquire(timeout=cfg.command_timeout + 0.5)
        try:
            self._leave_safe(use_sdk=locked)
            if self._second_stop is not None:
                self._second_stop.join(timeout=cfg.stop_timeout + 0.1)
            self._disconnect()
        finally:
            if locked:
                self._io.release()
        self._restore_signals()
        if self._fault is None:
            reason = f" ({signal.Signals(self._signal).name} received)" if self._signal is not None else ""
            LOG.info("xArm stopped as planned%s: %s left in mode 0, state 4 and disconnected", reason, self.where)

    def _leave_safe(self, use_sdk: bool) -> None:
        """Zero velocity (a planned stop), then mode 0 and state 4: through the SDK on a healthy
        link, else over a fresh connection (the stop frames of a fault went out already)."""
        fault = self._fault
        suspect = fault is not None and fault.kind in _LINK_FAULTS
        if use_sdk and not suspect and self.connected and not self._link_closed():
            if self.stop_sent_at is None:
                self._halt()
            with contextlib.suppress(Exception):
                self._arm.set_mode(0)
            with contextlib.suppress(Exception):
                self._arm.set_state(4)
        elif fault is not None or self._commands_sent:
            self._stop_over_fresh_link(parallel=self.stop_sent_at is not None)

    def __enter__(self) -> XArmDriver:
        if self._arm is None:
            self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _disconnect(self) -> None:
        """Close the SDK's connections; its threads get :data:`_DISCONNECT_WAIT` s to end."""
        arm, self._arm = self._arm, None
        if arm is not None:
            def disconnect() -> None:
                with contextlib.suppress(Exception):
                    arm.disconnect()

            worker = threading.Thread(target=disconnect, name="xarm-sdk-disconnect", daemon=True)
            worker.start()
            worker.join(_DISCONNECT_WAIT)
            if worker.is_alive():
                LOG.warning("the xArm SDK did not finish disconnecting from %s within %g s; its threads end "
                            "with the process", self.where, _DISCONNECT_WAIT)
        self._run_delay.close()

    # --- streaming -----------------------------------------------------------------------
    def send_velocity(self, qdot: FloatArray, stamp: float) -> CommandRecord:
        """Send joint velocities ``qdot`` (rad/s, (6,)) stamped ``stamp`` (caller's clock, s).

        The command is clamped to ``±max_velocity`` and zeroed for joints that would move
        further out of their limits (using the last read positions). Mode 1 integrates it
        into the next servo_j target.

        Raises
        ------
        Sim2RealError
            NaN/inf or wrong shape (nothing is sent), or the driver is not running (nothing is
            sent; also while :meth:`stop` runs).
        HardwareError
            The driver has faulted (now or before); the arm has been stopped, nothing is sent.
        KeyboardInterrupt, SystemExit
            SIGINT / SIGTERM arrived (main thread only); the arm has been stopped.
        """
        requested = np.asarray(qdot, dtype=float)
        if requested.shape != (N_JOINTS,):
            raise Sim2RealError(f"velocity command must have shape ({N_JOINTS},), got {requested.shape}")
        if not np.all(np.isfinite(requested)):
            raise Sim2RealError(f"velocity command refused: it contains NaN or inf ({requested.tolist()})")
        self._raise_if_interrupted()
        self._raise_if_faulted()
        if not self._running:
            raise Sim2RealError("xArm driver is not running: call start() first")
        with self._io:
            self._raise_if_faulted()
            record = self._send(requested, float(stamp), "caller")
        self._raise_if_interrupted()
        self._raise_if_faulted()
        return record

    def read_joint_states(self) -> tuple[FloatArray, FloatArray, FloatArray, float]:
        """Joint positions (rad), velocities (rad/s), efforts (N·m), each (6,), and the read time (s).

        The read is timed like a command (stall, latency and timeout checks).

        Raises
        ------
        HardwareError
            The controller reports an error, or the link failed.
        KeyboardInterrupt, SystemExit
            SIGINT / SIGTERM arrived (main thread only); the arm has been stopped.
        """
        self._raise_if_interrupted()
        self._raise_if_faulted()
        if self._arm is None:
            raise Sim2RealError("xArm driver is not connected")
        with self._io:
            self._raise_if_faulted()
            (code, states), _, stamp = self._exchange("get_joint_states", self._arm.get_joint_states,
                                                      is_radian=True, num=3)
            self._check(code, "get_joint_states")
            if self._fault is None and self._arm.arm.arm_cmd.has_err_warn:
                self._check_error_codes("get_joint_states")
        self._raise_if_interrupted()
        self._raise_if_faulted()
        position, velocity, effort = (np.array(block[:N_JOINTS], dtype=float) for block in states)
        self._last_q = position
        return position, velocity, effort, stamp

    @property
    def fault(self) -> Fault | None:
        """The latched fault, or None."""
        return self._fault

    def status(self) -> DriverStatus:
        """Snapshot for polling (e.g. from a ROS timer)."""
        return DriverStatus(self.connected, self._running, self._fault, self._commands_sent, self._watchdog_trips,
                            time.monotonic() - self._last_fresh_at, self._run_delay.since_registered())

    def sent_commands(self) -> list[CommandRecord]:
        """Every command sent so far (caller and watchdog), in the order they were sent; a command
        the latch refused is not among them (it never left)."""
        return sorted(self._history, key=lambda record: record.sent_at)

    # --- internals -----------------------------------------------------------------------
    def _exchange(self, what: str, call: Callable[..., _T], *args: Any, started: float | None = None,
                  **kwargs: Any) -> tuple[_T, float, float]:
        """Run one SDK exchange under the supervisor's eye; returns (result, sent_at, replied_at).

        The caller holds ``self._io``; ``started`` (monotonic s) is the send time if the caller
        took it already. A reply that came too late for the stall budget latches a stall here
        (the supervisor may not have had a CPU meanwhile); otherwise its round trip feeds the
        latency judgement.
        """
        gate = self._gate
        before = gate.mine() if gate is not None else None
        self._run_delay.register(threading.get_native_id())
        sent_at = time.monotonic() if started is None else started
        self._inflight = _Exchange(what)
        try:
            result = call(*args, **kwargs)
        finally:
            self._inflight = None
        replied_at = time.monotonic()
        if gate is not None and (request := gate.mine()) is not None and request is not before and not gate.closed:
            self._judge_reply(what, request, replied_at)
        return result, sent_at, replied_at

    def _judge_reply(self, what: str, request: _Request, replied_at: float) -> None:
        """A reply later than the stall budget latches a stall; any other feeds the latency window."""
        round_trip = self._round_trip(request, replied_at)
        if round_trip is None:
            return
        budget = self.config.stall_budget
        if round_trip > budget:
            self._latch(Fault("stall", f"the xArm link stalled: the reply to {what} came {round_trip * 1e3:.0f} ms "
                                       f"after the request left this host (limit {budget * 1e3:.0f} ms)"))
        else:
            self._note_round_trip(what, round_trip)

    def _round_trip(self, request: _Request, replied_at: float) -> float | None:
        """From ``request`` leaving this host to its reply arriving (s, kernel time); None when
        there was no reply or something else left after it (not measurable)."""
        times = _tcp_times(self._sdk_socket())
        if times is not None and request.received_before is not None:
            if times.received_bytes <= request.received_before or times.sent_ago < times.received_ago:
                return None
            return times.sent_ago - times.received_ago
        return (request.answered_at or replied_at) - request.written_at

    def _clamp(self, requested: FloatArray) -> FloatArray:
        sent = np.clip(requested, -self.config.max_velocity, self.config.max_velocity)
        if self._last_q is not None:
            ahead = self._last_q + sent * self.config.limit_lookahead
            sent = np.where((ahead <= self._lower) & (sent < 0.0), 0.0, sent)
            sent = np.where((ahead >= self._upper) & (sent > 0.0), 0.0, sent)
        return sent

    def _send(self, requested: FloatArray, stamp: float, source: str) -> CommandRecord:
        """Clamp and send one command (the caller holds ``self._io``); raises if it did not leave."""
        sent = self._clamp(requested)
        started = time.monotonic()
        self._latch_if_auto_stopped(sent, started)
        if source == "caller":  # fresh from the moment it leaves: the watchdog must not zero it in flight
            self._last_fresh_at = started
            self._zero_sent = False
        gate = self._gate
        assert gate is not None
        before = gate.mine()
        what, target, (code, sent_at, replied_at) = self._command(sent, started)
        request = gate.mine()
        if request is None or request is before:
            self._not_sent(code, what)
        if self.config.mode == 1 and code == 0 and self._fault is None:
            self._servo_target = target
        self._last_send_at = sent_at
        self._last_sent_moving = bool(np.any(sent))
        if source == "caller":
            self._zero_sent = not np.any(sent)
        record = CommandRecord(stamp, sent_at, replied_at, requested.copy(), sent, target,
                               bool(np.any(sent != requested)), source, int(code), request.written_at)
        self._history.append(record)
        self._commands_sent += 1
        self._check(code, what)
        return record

    def _latch_if_auto_stopped(self, sent: FloatArray, now: float) -> None:
        """Mode 4: when no command of any kind left for longer than the controller's auto-stop
        ``command_duration`` after one that asked for motion, the arm has stopped itself in motion
        (this process was frozen or starved that long): latch an ``auto_stop`` fault rather than
        move it again (raise for a motion command; the watchdog's zero, which may be the first to
        notice, still goes out). An arm last commanded to rest (after start, or a zero) may start.

        Zero commands keep the stream alive (the watchdog sends them when the caller is late), so
        this happens only when the whole process (watchdog included) got no CPU for that long.
        """
        cfg = self.config
        gap = now - self._last_send_at
        if (cfg.mode != 4 or not self._last_sent_moving or not math.isfinite(gap) or gap <= cfg.command_duration
                or self._fault is not None):
            return
        self._latch(Fault("auto_stop", f"no command left for {gap * 1e3:.0f} ms, longer than the controller's "
                                       f"{cfg.command_duration * 1e3:.0f} ms auto-stop: this process was frozen or "
                                       "starved, the arm stopped itself and is not moved again (restart the run)"))
        if np.any(sent):  # a zero (the watchdog's) may still go out; motion never
            self._raise_if_faulted()

    def _command(self, sent: FloatArray, started: float) -> tuple[str, FloatArray | None, tuple[int, float, float]]:
        """Mode 4: the velocity command; mode 1: the next servo_j target. Returns what was called,
        the target (mode 1) and the exchange's (code, sent_at, replied_at)."""
        cfg = self.config
        if cfg.mode == 4:
            what = "vc_set_joint_velocity"
            return what, None, self._exchange(what, self._arm.vc_set_joint_velocity, sent.tolist(), is_radian=True,
                                              duration=cfg.command_duration, started=started)
        what = "set_servo_angle_j"
        step = min(max(started - self._last_send_at, 0.0), cfg.servo_max_step_time)
        assert self._servo_target is not None
        target = np.clip(self._servo_target + sent * step, self._lower, self._upper)
        return what, target, self._exchange(what, self._arm.set_servo_angle_j, target.tolist(), is_radian=True,
                                            started=started)

    def _not_sent(self, code: int, what: str) -> None:
        """A command that never left (the gate refused it, or the SDK failed before writing): raise."""
        if self._gate is None or not self._gate.closed:
            self._check(code, what)
        self._raise_if_faulted()
        raise Sim2RealError(f"xArm driver is stopping: {what} was not sent")

    def _note_round_trip(self, what: str, round_trip: float) -> None:
        cfg = self.config
        self._round_trips.append(round_trip)
        if len(self._round_trips) == cfg.latency_window:
            fastest = min(self._round_trips)
            if fastest > cfg.latency_budget:
                self._latch(Fault("latency", f"the xArm link is too slow: even the fastest of the last "
                                             f"{cfg.latency_window} exchanges took {fastest * 1e3:.1f} ms (limit "
                                             f"{cfg.latency_budget * 1e3:.0f} ms; last: {what})"))

    def _check(self, code: int, what: str) -> None:
        """Turn an SDK return code into a latched fault (no-op for success and warnings)."""
        if code in (_SDK_OK, _SDK_WARNING) or self._fault is not None:
            return
        if code == _SDK_NOT_CONNECTED or not self.connected or self._link_closed():
            self._latch(Fault("disconnected", f"lost the connection to the xArm controller at {self.where} "
                                              f"during {what}"))
        elif code == _SDK_TIMEOUT:
            self._latch(Fault("timeout", f"no reply from the xArm controller at {self.where} to {what} within "
                                         f"{self.config.command_timeout:g} s"))
        elif code in (_SDK_ERROR, _SDK_NOT_READY):
            self._check_error_codes(what)
            if self._fault is None:
                _, state = self._arm.get_state()
                self._latch(Fault("not_ready", f"xArm not ready for {what}: state {state} ({state_name(state)})"))
        elif code == _SDK_INVALID:
            self._latch(Fault("rejected", f"the xArm controller rejected {what} (invalid in mode {self._arm.mode}: "
                                          f"{mode_name(self._arm.mode)})"))
        else:
            self._latch(Fault("sdk", f"xArm SDK returned code {code} for {what}"))

    def _check_error_codes(self, what: str) -> None:
        (code, (error_code, warn_code)), _, _ = self._exchange("get_err_warn_code", self._arm.get_err_warn_code)
        if code != 0:
            self._check(code, "get_err_warn_code")
            return
        if error_code:
            self._latch(Fault("controller_error", f"xArm controller error {describe_error(error_code)} "
                                                  f"(seen at {what}); the arm is stopped", code=int(error_code)))
        elif warn_code:
            LOG.warning("xArm warning %s", describe_warn(warn_code))

    def _latch(self, fault: Fault) -> None:
        """Close the gate (no motion command leaves from now on), record the first fault with that
        moment as its time, and stop the arm at once (never waits for the SDK's lock)."""
        with self._stop_lock:
            if self._fault is not None:
                return
            gate = self._gate
            at = gate.close(self.config.stop_timeout) if gate is not None else time.monotonic()
            fault = dataclasses.replace(fault, at=at)
            self._fault = fault
            self._running = False
        suspect = fault.kind in _LINK_FAULTS or self._request_unanswered()
        self._emergency_stop(second_link=suspect and self.config.second_link_stop)
        if fault.planned:
            LOG.info("xArm stopped as planned: %s", fault.message)
        else:
            LOG.error("xArm driver fault (%s): %s", fault.kind, fault.message)

    # --- the stop path -------------------------------------------------------------------
    def _sdk_socket(self) -> socket.socket | None:
        with contextlib.suppress(Exception):
            return self._arm.arm._stream.com  # type: ignore[no-any-return]
        return None

    def _link_closed(self) -> bool:
        """Whether the controller closed (or reset) the command link; never blocks or reads."""
        sock = self._sdk_socket()
        if sock is None:
            return True
        try:
            fd = sock.fileno()
            if fd < 0:
                return True
            poller = select.poll()
            poller.register(fd, select.POLLRDHUP | select.POLLHUP | select.POLLERR)
            return bool(poller.poll(0))
        except (OSError, ValueError):
            return True

    def _reply_arrived(self, since: float) -> bool:
        """Whether any reply byte reached this host after ``since`` (monotonic s) for the exchange in flight."""
        with contextlib.suppress(Exception):
            arm = self._arm.arm
            if arm.arm_cmd.last_comm_time >= since or not arm._stream.rx_que.empty():
                return True
            poller = select.poll()
            poller.register(arm._stream.com.fileno(), select.POLLIN)
            return bool(poller.poll(0))
        return False

    def _request_unanswered(self) -> bool:
        """Whether the last request on the command socket has had no reply byte yet."""
        request = self._gate.request if self._gate is not None else None
        if request is None:
            return False
        times = _tcp_times(self._sdk_socket())
        if times is not None and request.received_before is not None:
            return times.received_bytes <= request.received_before
        return request.answered_at is None and not self._reply_arrived(request.written_at)

    def _stop_frames(self, protocol: int, with_velocity: bool) -> bytes:
        """Zero velocity (mode 4), set_state(4), set_mode(0), set_state(4) as raw request frames."""
        frames = b""
        if with_velocity and self.config.mode == 4:
            params = wire.pack_floats([0.0] * 7) + bytes([1]) + struct.pack("<f", self.config.command_duration)
            frames += wire.encode_request(_STOP_TRANSACTION, protocol, wire.Register.VC_SET_JOINTV, params)
        frames += wire.encode_request(_STOP_TRANSACTION, protocol, wire.Register.SET_STATE, bytes([4]))
        frames += wire.encode_request(_STOP_TRANSACTION, protocol, wire.Register.SET_MODE, bytes([0]))
        frames += wire.encode_request(_STOP_TRANSACTION, protocol, wire.Register.SET_STATE, bytes([4]))
        return frames

    def _emergency_stop(self, second_link: bool = False) -> None:
        """Stop the arm now, superseding anything queued: raw stop frames on the SDK's socket
        (through the gate, not the command lock a stalled exchange holds), or over a fresh
        connection when the link is gone; with ``second_link`` over both at once (the fresh
        connection from a helper thread, so that neither path waits for the other)."""
        if self._arm is None:
            return
        if self._link_closed():
            self._stop_over_fresh_link()
            return
        if second_link:
            self._second_stop = threading.Thread(target=self._stop_over_fresh_link, kwargs={"parallel": True},
                                                 name="xarm-second-stop", daemon=True)
            self._second_stop.start()
        written = False
        with contextlib.suppress(Exception):
            port = self._arm.arm._stream
            protocol = int(self._arm.arm.arm_cmd.get_protocol_identifier())
            written = port.write(self._stop_frames(protocol, with_velocity=True)) == 0
        if written:
            self._note_stop_sent()
        elif not second_link:
            self._stop_over_fresh_link()

    def _note_stop_sent(self) -> None:
        with self._stop_lock:
            if self.stop_sent_at is None:
                self.stop_sent_at = time.monotonic()

    def _stop_over_fresh_link(self, parallel: bool = False) -> bool:
        """Send the stop frames over a new TCP connection (bounded by ``stop_timeout``); True if answered.

        ``parallel``: the stop also went onto the command socket, so a failure here is logged as
        a warning only."""
        cfg = self.config
        deadline = time.monotonic() + cfg.stop_timeout
        try:
            with socket.create_connection((cfg.ip, cfg.command_port), timeout=cfg.stop_timeout) as sock:
                sock.sendall(self._stop_frames(wire.PROTOCOL_PRIVATE, with_velocity=True))
                self._note_stop_sent()
                replies = 0
                buffer = bytearray()
                expected = 4 if cfg.mode == 4 else 3
                while replies < expected:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0.0:
                        return False
                    sock.settimeout(remaining)
                    chunk = sock.recv(4096)
                    if not chunk:
                        return False
                    buffer.extend(chunk)
                    while len(buffer) >= wire.HEADER_SIZE and \
                            len(buffer) >= wire.HEADER_SIZE + wire.HEADER.unpack_from(buffer, 0)[2]:
                        del buffer[:wire.HEADER_SIZE + wire.HEADER.unpack_from(buffer, 0)[2]]
                        replies += 1
                return True
        except OSError as err:
            LOG.log(logging.WARNING if parallel else logging.ERROR,
                    "xArm at %s: could not send the stop over a fresh connection: %s", self.where, err)
            return False

    def _halt(self) -> None:
        """Best-effort zero velocity (mode 4); in mode 1 the stop (state 4) that follows halts the arm."""
        with contextlib.suppress(Exception):
            if self.config.mode == 4:
                self._arm.vc_set_joint_velocity([0.0] * N_JOINTS, is_radian=True,
                                                duration=self.config.command_duration)

    def _raise_if_faulted(self) -> None:
        fault = self._fault
        if fault is not None:
            if fault.kind == "controller_error":
                raise ControllerError(fault)
            raise HardwareError(fault)

    # --- the supervisor ------------------------------------------------------------------
    def _supervise(self) -> None:
        """Every ``watchdog_period``: signal, dropped link, stall, then the command watchdog; ends
        once a fault is latched or :meth:`stop` is called.

        Also wakes at the stall deadline of the request in flight and at the watchdog deadline,
        so that each acts on time, not up to a period later. A late wake-up (this process starved
        of CPU) delays a judgement but cannot mislead it: the link is judged on kernel time.
        """
        self._run_delay.register(threading.get_native_id())
        planned = time.monotonic() + self.config.watchdog_period
        self._stall_retry_at = -math.inf
        while not self._supervisor_stop.is_set() and self._fault is None:
            self._wake.wait(max(self._next_due(planned) - time.monotonic(), 0.0))
            self._wake.clear()
            now = time.monotonic()
            if now >= planned:
                planned = now + self.config.watchdog_period
            if self._supervisor_stop.is_set() or self._fault is not None:
                return
            self._tick(now)

    def _next_due(self, planned: float) -> float:
        """When the supervisor must look next (monotonic s)."""
        cfg = self.config
        due = planned
        if not self._zero_sent:
            due = min(due, max(self._last_fresh_at + cfg.watchdog_timeout, self._watchdog_retry_at))
        request = self._gate.request if self._gate is not None else None
        if request is not None and request.answered_at is None:
            due = min(due, max(request.written_at + cfg.stall_budget + 1e-3, self._stall_retry_at))
        return due

    def _tick(self, now: float) -> None:
        """One look: a signal, then a closed link, then a stall (each latches), then the watchdog."""
        if self._signal is not None:
            self._latch(Fault("signal", f"{signal.Signals(self._signal).name} received"))
            return
        if self._link_closed():
            inflight = self._inflight
            what = inflight.what if inflight is not None else "streaming"
            self._latch(Fault("disconnected", f"lost the connection to the xArm controller at {self.where} "
                                              f"during {what}"))
            return
        if self._check_stall(now):
            return
        cfg = self.config
        if (self._running and not self._zero_sent and now >= self._watchdog_retry_at
                and now - self._last_fresh_at >= cfg.watchdog_timeout):
            self._watchdog_zero(now)

    def _check_stall(self, now: float) -> bool:
        """Latch a stall when the last request has had no reply for longer than the budget."""
        request = self._gate.request if self._gate is not None else None
        if request is None or request.answered_at is not None:
            return False
        waited = self._unanswered_for(request, now)
        if waited is None:
            request.answered_at = now
            return False
        budget = self.config.stall_budget
        if waited <= budget:
            self._stall_retry_at = now + 1e-3  # the kernel's clock moves in ticks: look again soon
            return False
        inflight = self._inflight
        what = inflight.what if inflight is not None else f"a request (register {request.register})"
        self._latch(Fault("stall", f"the xArm link stalled: no reply to {what} {waited * 1e3:.0f} ms after the "
                                   f"request left this host (limit {budget * 1e3:.0f} ms)"))
        return True

    def _unanswered_for(self, request: _Request, now: float) -> float | None:
        """How long ``request`` has waited for its first reply byte (s); None once one arrived.

        Kernel time where available (the time since data last left the socket, with no byte
        received since the request left); otherwise this host's clock (which counts this
        process's starvation too)."""
        times = _tcp_times(self._sdk_socket())
        if times is not None and request.received_before is not None:
            return None if times.received_bytes > request.received_before else times.sent_ago
        return None if self._reply_arrived(request.written_at) else now - request.written_at

    def _watchdog_zero(self, now: float) -> None:
        """Zero velocity (mode 4) or a hold of the last target (mode 1) after the watchdog timeout.

        Sent through the SDK; while an exchange holds it (its reply is on the way or the stall
        judgement is running), the supervisor tries again a period later.
        """
        if not self._io.acquire(blocking=False):
            self._watchdog_retry_at = now + self.config.watchdog_period
            return
        try:
            if not self._running or self._fault is not None or self._zero_sent:
                return
            LOG.warning("xArm watchdog: no fresh command for %.0f ms; sending zero velocity",
                        (now - self._last_fresh_at) * 1e3)
            with contextlib.suppress(Sim2RealError):
                self._send(np.zeros(N_JOINTS), math.nan, "watchdog")
                self._watchdog_trips += 1  # counted once the zero is out and in the history
            self._zero_sent = True
        finally:
            self._io.release()

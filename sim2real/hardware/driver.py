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
Every exchange with the controller (velocity command, joint-state read, error query) is timed
against one budget by a supervisor thread that runs every ``watchdog_period``:

* **stall**: an exchange the controller has not answered within ``max_round_trip`` (no reply
  byte arrived, while this process was itself running on time: a late supervisor wake-up means
  CPU starvation here, not a silent controller, and the judgement waits for an on-time tick);
* **latency**: even the fastest of the last ``latency_window`` exchanges took longer than
  ``latency_budget`` (the window's lowest percentile: CPU load delays some exchanges, a slow
  link all of them);
* **disconnected**: the controller closed the link (seen on the socket itself, not inferred
  from a reply timeout); **timeout**: the SDK gave up waiting (``command_timeout``);
* **controller_error**, **not_ready**, **rejected**, **sdk**: what the controller or SDK said;
* **signal**: SIGINT or SIGTERM (see below).

On any fault the driver stops the arm by a path that supersedes whatever is queued: it writes
zero velocity, ``set_state(4)`` (stop: halt and clear the controller's queue), ``set_mode(0)``
and ``set_state(4)`` straight onto the command socket, without waiting for the SDK's lock that
a stalled exchange holds; a stale command the controller releases after a stall is therefore
followed at once by the stop. When the link itself is suspect (stall, latency, timeout, or an
exchange still unanswered) the same stop also goes over a second, fresh connection at once
(``second_link_stop``): frames behind a stalled request on the command socket wait for it (TCP
delivers in order), the second connection's do not, so the controller is stopped (state 4)
before it releases the stale request, and then refuses it as "not ready". If the link is gone,
the stop goes over a fresh connection only (bounded by ``stop_timeout``). The fault is latched
(:attr:`XArmDriver.fault`) and every further call raises: the driver never resumes by itself, and
leaves the controller in mode 0, state 4.

Every velocity command also carries a short auto-stop ``command_duration``, and the supervisor
sends zero velocity ``watchdog_timeout`` after the last fresh command was sent.

Ctrl-C and SIGTERM: when started from the main thread the driver installs handlers that only
set a flag; the supervisor thread then stops the arm at once (it does not depend on the vendor
SDK letting a KeyboardInterrupt through: its reply wait is a bare ``except:``), and the next
driver call in the main thread raises KeyboardInterrupt (SIGINT) or SystemExit (SIGTERM), so the
caller's ``with`` block runs :meth:`XArmDriver.stop`. A signal that arrives outside a driver call
is raised at once as well. A previous Python handler is still called.

Times are ``time.monotonic()`` seconds; angles rad; velocities rad/s; efforts N·m.
"""

from __future__ import annotations

import collections
import contextlib
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
        Auto-stop duration carried by every velocity command (s).
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
        supervisor). Generous, because a starved process can miss any short single deadline.
    max_round_trip : float
        Stall budget (s): an exchange (command or read) with no reply byte from the controller
        after this long is a ``stall`` fault. The time is counted on the starvation-corrected
        clock (see ``starved_slack``), so CPU starvation of this process is not taken for a
        silent controller. The supervisor wakes at this deadline. Default 35 ms: the stop goes
        out ~36 ms after the stalled request was sent, and is executed within 100 ms even over a
        link with 60 ms latency (measured 97 ms; ``python -m benchmarks.faults --json``).
    latency_budget : float
        Latency budget (s): when even the fastest of the last ``latency_window`` exchanges
        (starvation-corrected round trips) took longer, the link itself is slow: a ``latency``
        fault. Link latency is a floor under every exchange, while CPU load delays some of them
        only, so the window's minimum (its lowest percentile), not one sample or the mean, tells
        them apart. A healthy loopback or lab link answers in ~1 ms; 10 ms keeps a 100 Hz
        read+command loop on pace. Figures: ``python -m benchmarks.faults --json``.
    latency_window : int
        Number of consecutive exchanges in the latency judgement.
    starved_slack : float
        The supervisor wakes every ``watchdog_period``; any lateness of a wake-up beyond this
        (s) is time this process was starved of CPU. That, or the time the exchange's own
        threads (the caller, the SDK's receiver) waited runnable for a CPU (Linux scheduler
        statistics) if longer, is subtracted from exchange ages and round trips, which then
        measure the controller, not this machine's load (``command_timeout`` still bounds
        every exchange in wall-clock time). 0.5 ms: above an idle machine's timer jitter, and
        small enough that a steady lateness on a loaded one is not lost wake-up by wake-up.
    stop_timeout : float
        Connect and reply deadline (s) of the stop sent over a fresh connection.
    second_link_stop : bool
        On a stall, latency or timeout fault (or any fault while an exchange is unanswered),
        also send the stop over a second, fresh connection, in parallel with the frames written
        on the command socket (where they wait behind the stalled request).
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
    starved_slack: float = 0.0005
    stop_timeout: float = 0.1
    second_link_stop: bool = True
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
                    "starved_slack", "stop_timeout", "servo_max_step_time")
        for name in positive:
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise Sim2RealError(f"xArm driver {name} must be a positive number of seconds/units, got {value}")
        if self.latency_window < 1:
            raise Sim2RealError(f"latency window must be >= 1, got {self.latency_window}")


@dataclass(frozen=True)
class Fault:
    """Why the driver stopped.

    Attributes
    ----------
    kind : str
        ``controller_error``, ``not_ready``, ``rejected``, ``stall``, ``latency``,
        ``timeout``, ``disconnected``, ``signal`` or ``sdk``.
    message : str
        One line, with the controller code and its meaning where there is one.
    code : int
        Controller error code (0 if the fault is not a controller error).
    at : float
        When it was detected (s, ``time.monotonic``).
    """

    kind: str
    message: str
    code: int = 0
    at: float = field(default_factory=time.monotonic)


@dataclass
class _Exchange:
    """One SDK exchange in flight: what, sent at (monotonic s), starvation total then (s), the
    native ids of the threads on its path and their run-queue delay then (s, None if unknown),
    when the supervisor first saw its reply on this host (s), if it did, and the thread running it."""

    what: str
    since: float
    starved_before: float
    path: tuple[int, ...] = ()
    waited_before: float | None = None
    reply_seen_at: float | None = None
    thread: int = field(default_factory=threading.get_ident)


class _RunQueueDelay:
    """How long threads of this process were runnable but waiting for a CPU (s, cumulative).

    Linux's per-thread scheduler statistics (``/proc/self/task/<tid>/schedstat``, second field,
    ns); :meth:`of` returns None where they are unavailable (another OS, a kernel without
    ``CONFIG_SCHED_INFO``, a thread that ended). One ``pread`` per thread (~2 µs).
    """

    _MAX_OPEN = 16

    def __init__(self) -> None:
        self._fds: dict[int, int] = {}
        self._lock = threading.Lock()

    def of(self, tids: tuple[int, ...]) -> float | None:
        total = 0
        with self._lock:
            for tid in tids:
                fd = self._fds.get(tid)
                try:
                    if fd is None:
                        if len(self._fds) >= self._MAX_OPEN:
                            self._close_all()
                        fd = self._fds[tid] = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY)
                    total += int(os.pread(fd, 128, 0).split()[1])
                except (OSError, IndexError, ValueError):
                    if fd is not None:
                        self._fds.pop(tid, None)
                        with contextlib.suppress(OSError):
                            os.close(fd)
                    return None
        return total * 1e-9

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

    @property
    def round_trip(self) -> float:
        """Command round trip (s)."""
        return self.replied_at - self.sent_at


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
    """A snapshot the ROS node can poll."""

    connected: bool
    running: bool
    fault: Fault | None
    commands_sent: int
    watchdog_trips: int
    last_command_age: float


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
        self._io = threading.RLock()
        self._fault: Fault | None = None
        self._running = False
        self.preflight: Preflight | None = None
        self._lower = np.array([lo for lo, _ in config.joint_limits]) + config.limit_margin
        self._upper = np.array([hi for _, hi in config.joint_limits]) - config.limit_margin
        self._last_q: FloatArray | None = None
        self._servo_target: FloatArray | None = None
        self._last_send_at = -math.inf
        self._last_fresh_at = -math.inf
        self._zero_sent = True
        self._inflight: _Exchange | None = None
        self._starved = 0.0
        self._next_wake = math.inf
        self._round_trips: collections.deque[float] = collections.deque(maxlen=config.latency_window)
        self._run_delay = _RunQueueDelay()
        self._receiver_tid: int | None = None
        self._history: collections.deque[CommandRecord] = collections.deque(maxlen=100_000)
        self._commands_sent = 0
        self._watchdog_trips = 0
        self._supervisor_stop = threading.Event()
        self._wake = threading.Event()
        self._watchdog: threading.Thread | None = None
        self._stop_lock = threading.Lock()
        self._second_stop: threading.Thread | None = None
        #: When the first stop (raw frames or fresh connection) after a fault left (monotonic s).
        self.stop_sent_at: float | None = None
        self._signal: int | None = None
        self._signal_pending = False
        self._previous_handlers: dict[int, Any] = {}

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

            def on_signal(number: int, frame: Any, previous: Any = previous) -> None:
                self._signal = number
                self._signal_pending = True
                self._wake.set()
                if callable(previous) and previous is not signal.default_int_handler:
                    previous(number, frame)  # e.g. a ROS context's own shutdown handler
                inflight = self._inflight
                if inflight is None or inflight.thread != threading.get_ident():
                    # This (the main) thread is not inside the SDK: raise it now. An exchange of
                    # another thread (a node's loop) does not delay it: the main thread may make
                    # no driver call that would raise it later (seen: xarm_node ignored Ctrl-C).
                    self._raise_if_interrupted()

            signal.signal(signum, on_signal)
            self._previous_handlers[signum] = previous

    def _restore_signals(self) -> None:
        if self._previous_handlers and threading.current_thread() is threading.main_thread():
            for signum, previous in self._previous_handlers.items():
                signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
            self._previous_handlers = {}

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
        self._arm = self._open_sdk(cfg.connect_timeout + cfg.handshake_timeout + 2.0)
        self._arm.set_timeout(cfg.command_timeout)
        with contextlib.suppress(Exception):  # the SDK thread that reads the command socket
            self._receiver_tid = int(self._arm.arm._stream.native_id)
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
        """Stop the arm, leave it in a safe mode (mode 0, state 4) and disconnect. Idempotent."""
        self._running = False
        self._supervisor_stop.set()
        self._wake.set()
        if self._watchdog is not None and self._watchdog is not threading.current_thread():
            self._watchdog.join(timeout=1.0)
        self._watchdog = None
        if self._arm is None:
            self._restore_signals()
            return
        with self._io:
            if self.connected and not self._link_closed():
                if self.stop_sent_at is None:  # after a fault the stop frames went out already (state 4)
                    self._halt()
                with contextlib.suppress(Exception):
                    self._arm.set_mode(0)
                with contextlib.suppress(Exception):
                    self._arm.set_state(4)
            elif self._fault is not None or self._commands_sent:
                self._stop_over_fresh_link()
            if self._second_stop is not None:
                self._second_stop.join(timeout=self.config.stop_timeout + 0.1)
            self._disconnect()
        self._restore_signals()

    def __enter__(self) -> XArmDriver:
        if self._arm is None:
            self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _disconnect(self) -> None:
        arm, self._arm = self._arm, None
        if arm is not None:
            with contextlib.suppress(Exception):
                arm.disconnect()
        self._receiver_tid = None
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
            NaN/inf or wrong shape (nothing is sent), or the driver is not running.
        HardwareError
            The driver has faulted (now or before); the arm has been stopped.
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
            self._last_fresh_at = record.sent_at
            self._zero_sent = not np.any(record.sent)
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
                            time.monotonic() - self._last_fresh_at)

    def sent_commands(self) -> list[CommandRecord]:
        """Every command sent so far (caller and watchdog), in the order they were sent."""
        return sorted(self._history, key=lambda record: record.sent_at)

    # --- internals -----------------------------------------------------------------------
    def _exchange(self, what: str, call: Callable[..., _T], *args: Any, started: float | None = None,
                  **kwargs: Any) -> tuple[_T, float, float]:
        """Run one SDK exchange under the supervisor's eye; returns (result, sent_at, replied_at).

        The caller holds ``self._io``; ``started`` (monotonic s) is the send time if the caller
        took it already. Its round trip feeds the latency median; a stall is judged by the
        supervisor while the exchange is in flight.
        """
        path = (threading.get_native_id(),) + ((self._receiver_tid,) if self._receiver_tid is not None else ())
        waited_before = self._run_delay.of(path)
        sent_at = time.monotonic() if started is None else started
        exchange = _Exchange(what, sent_at, self._starvation(sent_at), path, waited_before)
        self._inflight = exchange
        try:
            result = call(*args, **kwargs)
        finally:
            self._inflight = None
        replied_at = time.monotonic()
        waited_after = self._run_delay.of(path)
        # The controller's part: until the reply reached this host (as the supervisor saw it, if
        # it did before this thread got it), minus the time this process was starved meanwhile:
        # the supervisor's lateness, or, when this thread got the reply first, the time the
        # reply's path here (the SDK's receiving thread, then this one) waited for a CPU, if
        # that is longer (a loaded machine delays those wake-ups while the supervisor, which
        # wakes on a timer, may be on time).
        arrived = min(replied_at, exchange.reply_seen_at or math.inf)
        starved = self._starvation(arrived) - exchange.starved_before
        if arrived == replied_at and waited_before is not None and waited_after is not None:
            starved = max(starved, waited_after - waited_before)
        self._note_round_trip(what, arrived - sent_at - starved)
        return result, sent_at, replied_at

    def _starved_during(self, exchange: _Exchange) -> float:
        """How long this process was starved of CPU so far while ``exchange`` is in flight (s):
        the supervisor's lateness, or the run-queue delay of the exchange's threads (the caller
        before its request left, the SDK's receiver after the reply came) if that is longer."""
        starved = self._starved - exchange.starved_before
        if exchange.waited_before is not None and (waited := self._run_delay.of(exchange.path)) is not None:
            starved = max(starved, waited - exchange.waited_before)
        return starved

    def _starvation(self, now: float) -> float:
        """Seconds this process was starved of CPU so far (supervisor lateness, including the
        current overdue wake-up); 0 before the supervisor runs."""
        overdue = now - self._next_wake - self.config.starved_slack
        return self._starved + max(overdue, 0.0)

    def _clamp(self, requested: FloatArray) -> FloatArray:
        sent = np.clip(requested, -self.config.max_velocity, self.config.max_velocity)
        if self._last_q is not None:
            ahead = self._last_q + sent * self.config.limit_lookahead
            sent = np.where((ahead <= self._lower) & (sent < 0.0), 0.0, sent)
            sent = np.where((ahead >= self._upper) & (sent > 0.0), 0.0, sent)
        return sent

    def _send(self, requested: FloatArray, stamp: float, source: str) -> CommandRecord:
        cfg = self.config
        sent = self._clamp(requested)
        target = None
        started = time.monotonic()
        if source == "caller":  # fresh from the moment it leaves: the watchdog must not zero it in flight
            self._last_fresh_at = started
            self._zero_sent = False
        if cfg.mode == 4:
            what = "vc_set_joint_velocity"
            code, sent_at, replied_at = self._exchange(what, self._arm.vc_set_joint_velocity, sent.tolist(),
                                                       is_radian=True, duration=cfg.command_duration,
                                                       started=started)
        else:
            what = "set_servo_angle_j"
            step = min(max(started - self._last_send_at, 0.0), cfg.servo_max_step_time)
            assert self._servo_target is not None
            target = np.clip(self._servo_target + sent * step, self._lower, self._upper)
            code, sent_at, replied_at = self._exchange(what, self._arm.set_servo_angle_j, target.tolist(),
                                                       is_radian=True, started=started)
            if code == 0 and self._fault is None:
                self._servo_target = target
        self._last_send_at = sent_at
        record = CommandRecord(stamp, sent_at, replied_at, requested.copy(), sent, target,
                               bool(np.any(sent != requested)), source, int(code))
        self._history.append(record)
        self._commands_sent += 1
        self._check(code, what)
        return record

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
        """Record the first fault and stop the arm at once (never waits for the SDK's lock)."""
        with self._stop_lock:
            if self._fault is not None:
                return
            self._fault = fault
            self._running = False
        inflight = self._inflight
        suspect = fault.kind in ("stall", "latency", "timeout") or (inflight is not None
                                                                    and inflight.reply_seen_at is None)
        self._emergency_stop(second_link=suspect and self.config.second_link_stop)
        level = logging.WARNING if fault.kind == "signal" else logging.ERROR
        LOG.log(level, "xArm driver fault (%s): %s", fault.kind, fault.message)

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
        (its write lock only, not the command lock a stalled exchange holds), or over a fresh
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
        """Best-effort zero-velocity command (mode 4) or hold of the last target (mode 1)."""
        with contextlib.suppress(Exception):
            if self.config.mode == 4:
                self._arm.vc_set_joint_velocity([0.0] * N_JOINTS, is_radian=True,
                                                duration=self.config.command_duration)
            elif self._servo_target is not None:
                self._arm.set_servo_angle_j(self._servo_target.tolist(), is_radian=True)

    def _raise_if_faulted(self) -> None:
        fault = self._fault
        if fault is not None:
            if fault.kind == "controller_error":
                raise ControllerError(fault)
            raise HardwareError(fault)

    # --- the supervisor ------------------------------------------------------------------
    def _supervise(self) -> None:
        """Every ``watchdog_period``: signal, dropped link, stall, then the command watchdog.

        Sleeps until the earlier of its next period and the watchdog deadline, so that zero
        velocity goes out ``watchdog_timeout`` after the last fresh command, not a period later.
        """
        cfg = self.config
        planned = time.monotonic() + cfg.watchdog_period
        while not self._supervisor_stop.is_set():
            due = self._last_fresh_at + cfg.watchdog_timeout if not self._zero_sent else math.inf
            inflight = self._inflight
            if inflight is not None and inflight.reply_seen_at is None:
                # Wake when the exchange in flight would exceed the stall budget, not up to a
                # period later (its age is counted on the starvation-corrected clock).
                due = min(due, inflight.since + cfg.max_round_trip + self._starved - inflight.starved_before + 2e-4)
            wake_at = min(planned, due)
            self._next_wake = wake_at
            self._wake.wait(max(wake_at - time.monotonic(), 0.0))
            self._wake.clear()
            now = time.monotonic()
            if now > wake_at:  # early wake-ups (a signal, stop) are not starvation
                self._starved += max(now - wake_at - cfg.starved_slack, 0.0)
            self._next_wake = math.inf
            planned = now + cfg.watchdog_period
            if self._supervisor_stop.is_set() or self._fault is not None:
                if self._fault is not None:
                    return
                continue
            if self._signal is not None:
                name = signal.Signals(self._signal).name
                self._latch(Fault("signal", f"{name} received: the xArm was stopped"))
                return
            inflight = self._inflight
            if self._link_closed():
                what = inflight.what if inflight is not None else "streaming"
                self._latch(Fault("disconnected", f"lost the connection to the xArm controller at {self.where} "
                                                  f"during {what}"))
                return
            if inflight is not None and inflight.reply_seen_at is None:
                if self._reply_arrived(inflight.since):
                    inflight.reply_seen_at = now
                elif (age := now - inflight.since - self._starved_during(inflight)) > cfg.max_round_trip:
                    waited, limit = age * 1e3, cfg.max_round_trip * 1e3
                    self._latch(Fault("stall", f"the xArm link stalled: no reply to {inflight.what} within "
                                               f"{waited:.0f} ms (limit {limit:.0f} ms)"))
                    return
            if self._running and not self._zero_sent and now - self._last_fresh_at >= cfg.watchdog_timeout:
                self._watchdog_zero(now)

    def _watchdog_zero(self, now: float) -> None:
        """Zero velocity (mode 4) or a hold of the last target (mode 1) after the watchdog timeout.

        Sent through the SDK when its lock is free; while an exchange holds it, the zero goes
        straight onto the socket as a stop-transaction frame (its reply is skipped by the SDK).
        """
        cfg = self.config
        LOG.warning("xArm watchdog: no fresh command for %.0f ms; sending zero velocity",
                    (now - self._last_fresh_at) * 1e3)
        if self._io.acquire(blocking=False):
            try:
                if self._running and self._fault is None:
                    with contextlib.suppress(Sim2RealError):
                        self._send(np.zeros(N_JOINTS), math.nan, "watchdog")
            finally:
                self._io.release()
        elif cfg.mode == 4:
            with contextlib.suppress(Exception):
                protocol = int(self._arm.arm.arm_cmd.get_protocol_identifier())
                params = wire.pack_floats([0.0] * 7) + bytes([1]) + struct.pack("<f", cfg.command_duration)
                sent_at = time.monotonic()
                self._arm.arm._stream.write(wire.encode_request(_STOP_TRANSACTION, protocol,
                                                                wire.Register.VC_SET_JOINTV, params))
                self._history.append(CommandRecord(math.nan, sent_at, sent_at, np.zeros(N_JOINTS), np.zeros(N_JOINTS),
                                                   None, False, "watchdog", 0))
        self._watchdog_trips += 1  # counted once the zero is out and in the history
        self._zero_sent = True

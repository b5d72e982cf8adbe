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

import collections
import contextlib
import dataclasses
import logging
import math
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

from sim2real.errors import Sim2RealError
from sim2real.hardware import protocol as wire
from sim2real.hardware.codes import describe_error, describe_warn, mode_name, state_name
from sim2real.hardware.driver_types import (
    N_JOINTS,
    CommandRecord,
    ControllerError,
    DriverConfig,
    DriverStatus,
    Fault,
    FloatArray,
    HardwareError,
    Preflight,
)
from sim2real.hardware.exit_deadline import EXIT_DEADLINE
from sim2real.hardware.link_timing import STOP_TRANSACTION, PendingRequest, RunQueueDelay, SendGate, tcp_times
from sim2real.hardware.probe import probe_controller
from sim2real.hardware.signal_guard import SignalGuard

LOG = logging.getLogger(__name__)

# SDK return codes (xarm/x3/code.py APIState and XCONF.UxbusState).
_SDK_OK, _SDK_ERROR, _SDK_WARNING, _SDK_TIMEOUT, _SDK_NOT_READY, _SDK_INVALID = 0, 1, 2, 3, 9, 10
_SDK_NOT_CONNECTED = -1
#: Fault kinds that say the link itself is suspect (the stop also goes over a second connection).
_LINK_FAULTS = frozenset({"stall", "latency", "timeout"})
#: Longest wait (s) for the SDK's own threads when disconnecting.
_DISCONNECT_WAIT = 2.0
_T = TypeVar("_T")


@dataclass
class _Exchange:
    """One SDK exchange in flight: what it is and the thread running it."""

    what: str
    thread: int = field(default_factory=threading.get_ident)



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
        self._gate: SendGate | None = None
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
        self._run_delay = RunQueueDelay()
        self._guard = SignalGuard(self._on_signal, self._in_exchange_here)
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
        self._run_delay = RunQueueDelay()
        self._second_stop: threading.Thread | None = None
        #: When the first stop (raw frames or fresh connection) after a fault left (monotonic s).
        self.stop_sent_at: float | None = None
        self._guard.reset()

    def _on_signal(self, signum: int) -> None:
        """From the signal handler: the supervisor stops the arm now; the process's exit is bounded."""
        self._wake.set()
        EXIT_DEADLINE.expect(signum, self.config.exit_deadline)  # from the start of the shutdown

    def _in_exchange_here(self) -> bool:
        inflight = self._inflight
        return inflight is not None and inflight.thread == threading.get_ident()

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
        self._gate = SendGate(self._arm.arm._stream, sock)
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
        self._guard.install()

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
            self._guard.restore()
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
        self._guard.restore()
        if self._fault is None:
            signum = self._guard.signal
            reason = f" ({signal.Signals(signum).name} received)" if signum is not None else ""
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
        self._guard.raise_if_interrupted()
        self._raise_if_faulted()
        if not self._running:
            raise Sim2RealError("xArm driver is not running: call start() first")
        with self._io:
            self._raise_if_faulted()
            record = self._send(requested, float(stamp), "caller")
        self._guard.raise_if_interrupted()
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
        self._guard.raise_if_interrupted()
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
        self._guard.raise_if_interrupted()
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

    def _judge_reply(self, what: str, request: PendingRequest, replied_at: float) -> None:
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

    def _round_trip(self, request: PendingRequest, replied_at: float) -> float | None:
        """From ``request`` leaving this host to its reply arriving (s, kernel time); None when
        there was no reply or something else left after it (not measurable)."""
        times = tcp_times(self._sdk_socket())
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
        times = tcp_times(self._sdk_socket())
        if times is not None and request.received_before is not None:
            return times.received_bytes <= request.received_before
        return request.answered_at is None and not self._reply_arrived(request.written_at)

    def _stop_frames(self, protocol: int, with_velocity: bool) -> bytes:
        """Zero velocity (mode 4), set_state(4), set_mode(0), set_state(4) as raw request frames."""
        frames = b""
        if with_velocity and self.config.mode == 4:
            params = wire.pack_floats([0.0] * 7) + bytes([1]) + struct.pack("<f", self.config.command_duration)
            frames += wire.encode_request(STOP_TRANSACTION, protocol, wire.Register.VC_SET_JOINTV, params)
        frames += wire.encode_request(STOP_TRANSACTION, protocol, wire.Register.SET_STATE, bytes([4]))
        frames += wire.encode_request(STOP_TRANSACTION, protocol, wire.Register.SET_MODE, bytes([0]))
        frames += wire.encode_request(STOP_TRANSACTION, protocol, wire.Register.SET_STATE, bytes([4]))
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
        if self._guard.signal is not None:
            self._latch(Fault("signal", f"{signal.Signals(self._guard.signal).name} received"))
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

    def _unanswered_for(self, request: PendingRequest, now: float) -> float | None:
        """How long ``request`` has waited for its first reply byte (s); None once one arrived.

        Kernel time where available (the time since data last left the socket, with no byte
        received since the request left); otherwise this host's clock (which counts this
        process's starvation too)."""
        times = tcp_times(self._sdk_socket())
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

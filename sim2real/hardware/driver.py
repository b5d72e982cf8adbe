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
  ``latency_budget`` (a slow link delays every exchange). Judged from :meth:`XArmDriver.start`'s
  first exchange on (its start-up exchanges fill the window before any motion command leaves), so
  a link already slow at connection latches this fault in ``start()``, and the arm is never
  commanded to move;
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

Code layout
-----------
This module holds :class:`XArmDriver`'s public methods. Its state is one
:class:`~sim2real.hardware.driver_state.DriverState`, which its parts share, one object per module:
:mod:`sim2real.hardware.driver_stop` (the latch and the stop path),
:mod:`sim2real.hardware.driver_commands` (timed SDK exchanges, return codes as faults, motion
commands), :mod:`sim2real.hardware.driver_supervisor` (the supervisor thread: signals, dropped link,
stall, watchdog) and :mod:`sim2real.hardware.driver_connection` (opening the SDK, preflight, leaving
the arm safe, disconnecting).

Times are ``time.monotonic()`` seconds; angles rad; velocities rad/s; efforts N·m.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
import time

import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.hardware.codes import state_name
from sim2real.hardware.driver_commands import Commands
from sim2real.hardware.driver_connection import Connection
from sim2real.hardware.driver_state import LOG, DriverState
from sim2real.hardware.driver_stop import StopPath
from sim2real.hardware.driver_supervisor import Supervisor
from sim2real.hardware.driver_types import (
    N_JOINTS,
    CommandRecord,
    DriverConfig,
    DriverStatus,
    Fault,
    FloatArray,
    Preflight,
)
from sim2real.hardware.driver_types import ControllerError as ControllerError  # re-exported: raised by the driver
from sim2real.hardware.driver_types import HardwareError as HardwareError  # re-exported: raised by the driver
from sim2real.hardware.link_timing import SendGate
from sim2real.hardware.probe import probe_controller


class XArmDriver:
    """Joint-velocity driver of one xArm 6 (see the module docstring).

    Parameters
    ----------
    config : DriverConfig
        Address, mode, limits, timeouts.
    """

    def __init__(self, config: DriverConfig) -> None:
        self.config = config
        self._state = DriverState(config)
        self._stop_path = StopPath(self._state)
        self._commands = Commands(self._state, self._stop_path)
        self._supervisor = Supervisor(self._state, self._stop_path, self._commands)
        self._connection = Connection(self._state, self._stop_path)

    @property
    def preflight(self) -> Preflight | None:
        """What the preflight checks of the last :meth:`connect` found, or None."""
        return self._state.preflight

    @property
    def stop_sent_at(self) -> float | None:
        """When the first stop (raw frames or fresh connection) after a fault left (monotonic s), or None."""
        return self._state.stop_sent_at

    # --- connection ----------------------------------------------------------------------
    @property
    def where(self) -> str:
        """``ip:port`` of the controller."""
        return self._state.where

    @property
    def connected(self) -> bool:
        """Whether the SDK is connected to the controller."""
        return self._state.connected

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
        state = self._state
        if state.arm is not None:
            raise Sim2RealError("xArm driver is already connected")
        cfg = self.config
        firmware = probe_controller(cfg.ip, cfg.command_port, cfg.connect_timeout, cfg.handshake_timeout)
        if firmware.number < cfg.min_firmware:
            need = ".".join(str(n) for n in cfg.min_firmware)
            raise Sim2RealError(f"xArm at {self.where} runs firmware {firmware.label}; this driver needs >= v{need}")
        state.reset_run()
        state.arm = self._connection.open_sdk(cfg.connect_timeout + cfg.handshake_timeout + 2.0)
        state.arm.set_timeout(cfg.command_timeout)
        sock = self._stop_path.sdk_socket()
        with contextlib.suppress(OSError, AttributeError):  # small frames leave at once (no Nagle delay)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # type: ignore[union-attr]
        state.gate = SendGate(state.arm.arm._stream, sock)
        with contextlib.suppress(Exception):  # the SDK thread that reads the command socket
            state.run_delay.register(int(state.arm.arm._stream.native_id))
        try:
            preflight = self._connection.preflight(firmware)
        except Sim2RealError:
            self._connection.disconnect()
            raise
        state.preflight = preflight
        LOG.info("%s", preflight.summary())
        return preflight

    # --- start / stop --------------------------------------------------------------------
    def start(self) -> None:
        """Enable the motors, set the configured mode and state 0, start the supervisor.

        The link is judged from the first exchange here on: the round trips (kernel time) of
        ``motion_enable``, ``set_mode``, ``set_state(0)`` and ``get_state`` (and of further state
        reads while the window is short) fill the ``latency_window`` before any motion command can
        leave, so the first command is judged with a full window. A link already slower than
        ``latency_budget`` at connection latches its ``latency`` fault here, before the arm was
        ever commanded to move: the gate closes, the stop goes out (also over a second
        connection), and this method returns without starting the stream; the first read or
        command then raises :class:`HardwareError`, as after a latency fault while streaming (a
        node reports it as any link fault). A start-up exchange is never a stall: nothing moves
        yet, and a state change may keep the controller busy; the joint-state read that ends
        ``start()`` is judged for a stall as every later exchange is.

        Raises
        ------
        HardwareError
            The controller refused or reported an error, or it did not become ready.
        """
        state = self._state
        if state.arm is None:
            raise Sim2RealError("xArm driver: connect() before start()")
        self._stop_path.raise_if_faulted()
        with state.io:
            state.round_trips.clear()  # this run's link, judged from its first start-up exchange
            self._enable()
            if state.fault is not None and state.fault.kind == "latency":
                return  # the arm was never commanded to move; the next call raises the fault
            self._stop_path.raise_if_faulted()
            state.running = True
            state.supervisor_stop.clear()
            state.watchdog = threading.Thread(target=self._supervisor.supervise, name="xarm-supervisor", daemon=True)
            state.watchdog.start()
            try:
                q, _, _, _ = self.read_joint_states()
            except BaseException:
                state.running = False
                raise
            state.servo_target = q.copy()
            state.last_fresh_at = state.last_send_at = time.monotonic()
            state.zero_sent = True
        state.guard.install()

    def _enable(self) -> None:
        """The start-up exchanges (the caller holds the state's ``io`` lock): motors on, the configured
        mode, state 0, a ready check, and the latency window filled; ends at the first latched fault."""
        state = self._state
        cfg = self.config
        for what, call, arg in (("motion_enable", state.arm.motion_enable, True),
                                (f"set_mode({cfg.mode})", state.arm.set_mode, cfg.mode),
                                ("set_state(0)", state.arm.set_state, 0)):
            self._commands.check(self._commands.start_up(what, call, arg), what)
            if state.fault is not None:
                return
        deadline = time.monotonic() + 1.0
        while state.arm.mode != cfg.mode and time.monotonic() < deadline:
            time.sleep(0.005)
        code, arm_state = self._commands.start_up("get_state", state.arm.get_state)
        self._commands.check(code, "get_state")
        if state.fault is None and arm_state not in (1, 2):
            self._stop_path.latch(Fault("not_ready", f"xArm at {self.where} did not become ready after start: "
                                                     f"state {arm_state} ({state_name(arm_state)})"))
        self._commands.judge_link_at_start()

    def stop(self) -> None:
        """Stop the arm, leave it in a safe mode (mode 0, state 4) and disconnect. Idempotent.

        A planned stop (logged at info level, never as a fault): from its first line no motion
        command leaves the driver (the gate closes; zero velocity and the stop still go out), and
        every wait in it is bounded (an exchange stuck in the SDK, the SDK's own threads).
        """
        state = self._state
        state.running = False
        cfg = self.config
        if state.gate is not None:
            state.gate.close(cfg.stop_timeout)
        state.supervisor_stop.set()
        state.wake.set()
        if state.watchdog is not None and state.watchdog is not threading.current_thread():
            state.watchdog.join(timeout=1.0)
        state.watchdog = None
        if state.arm is None:
            state.guard.restore()
            return
        locked = state.io.acquire(timeout=cfg.command_timeout + 0.5)
        try:
            self._connection.leave_safe(use_sdk=locked)
            if state.second_stop is not None:
                state.second_stop.join(timeout=cfg.stop_timeout + 0.1)
            self._connection.disconnect()
        finally:
            if locked:
                state.io.release()
        state.guard.restore()
        if state.fault is None:
            signum = state.guard.signal
            reason = f" ({signal.Signals(signum).name} received)" if signum is not None else ""
            LOG.info("xArm stopped as planned%s: %s left in mode 0, state 4 and disconnected", reason, self.where)

    def __enter__(self) -> XArmDriver:
        if self._state.arm is None:
            self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

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
        self._state.guard.raise_if_interrupted()
        self._stop_path.raise_if_faulted()
        if not self._state.running:
            raise Sim2RealError("xArm driver is not running: call start() first")
        with self._state.io:
            self._stop_path.raise_if_faulted()
            record = self._commands.send(requested, float(stamp), "caller")
        self._state.guard.raise_if_interrupted()
        self._stop_path.raise_if_faulted()
        return record

    def read_joint_states(self) -> tuple[FloatArray, FloatArray, FloatArray, float]:
        """Joint positions (rad), velocities (rad/s), efforts (N·m), each (6,), and when they were sampled.

        The sample time (s, ``time.monotonic()``) is when the read's request left this host: the
        controller answers with the joints as they are when the request reaches it, a link's one-way
        delay later (well under a millisecond on loopback, about one on a lab's Ethernet). A wait of
        this process for a CPU after the request left (before the reply is read, or after) does not
        shift it, where a clock read after the call would: a starved caller then stamps the state
        tens of milliseconds late, and a recording made from such stamps plays the arm back late.
        Without the driver's send gate (not connected through it) it is the time the call began.

        The read is timed like a command (stall, latency and timeout checks).

        Raises
        ------
        HardwareError
            The controller reports an error, or the link failed.
        KeyboardInterrupt, SystemExit
            SIGINT / SIGTERM arrived (main thread only); the arm has been stopped.
        """
        state = self._state
        state.guard.raise_if_interrupted()
        self._stop_path.raise_if_faulted()
        if state.arm is None:
            raise Sim2RealError("xArm driver is not connected")
        with state.io:
            self._stop_path.raise_if_faulted()
            (code, states), started, _, written = self._commands.exchange(
                "get_joint_states", state.arm.get_joint_states, is_radian=True, num=3)
            sampled_at = written.leaving_at if written is not None and written.leaving_at is not None else started
            self._commands.check(code, "get_joint_states")
            if state.fault is None and state.arm.arm.arm_cmd.has_err_warn:
                self._commands.check_error_codes("get_joint_states")
        state.guard.raise_if_interrupted()
        self._stop_path.raise_if_faulted()
        position, velocity, effort = (np.array(block[:N_JOINTS], dtype=float) for block in states)
        state.last_q = position
        return position, velocity, effort, sampled_at

    @property
    def fault(self) -> Fault | None:
        """The latched fault, or None."""
        return self._state.fault

    def status(self) -> DriverStatus:
        """Snapshot for polling (e.g. from a ROS timer)."""
        state = self._state
        return DriverStatus(self.connected, state.running, state.fault, state.commands_sent, state.watchdog_trips,
                            time.monotonic() - state.last_fresh_at, state.run_delay.since_registered())

    def sent_commands(self) -> list[CommandRecord]:
        """Every command sent so far (caller and watchdog), in the order they were sent; a command
        the latch refused is not among them (it never left)."""
        return sorted(self._state.history, key=lambda record: record.sent_at)

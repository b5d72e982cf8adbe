"""A loopback emulator of the xArm 6 controller that the unmodified ``xarm-python-sdk`` drives.

It listens on ``host`` (an address in 127.0.0.0/8) on the command port (502 by default;
configurable, see :attr:`EmulatorConfig.command_port`) and on the report ports 30001
(normal, 5 Hz), 30002 (rich, 5 Hz) and 30003 (real, 100 Hz), and speaks the protocol of
:mod:`sim2real.hardware.protocol`.

Joint motion follows :mod:`sim2real.sim.servo` with the emulator's own true servo
parameters: velocity commands (mode 4) go into a delayed :class:`CommandHistory` and the
joints are advanced exactly with :func:`advance_servo`; servo_j targets (mode 1) are
tracked by a velocity command: the target's own speed (feed-forward, from the last two
targets, held for 1.5 streaming periods) plus ``(target - q) / servo_j_time_constant``,
clipped to the velocity limit and recomputed every tick. Joint states answer at the moment of the query.

Controller behaviour: states and modes as on the real controller (mode and motion-enable
changes put it in state 5, ``set_state(0)`` makes it ready); motion commands while not
ready are answered with the "not ready" status bit and ignored; motion commands in the
wrong mode are ignored and, with ``reject_wrong_mode``, answered with the "invalid" bit;
joint-limit violations raise C23 at the instant the joints cross the limit, however long the
emulator's process went without advancing them (the controller checks every servo cycle), speeds
above the limit C24 (error state 4, motion stops); velocity commands stop after their ``duration``.

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

The reader takes each request's arrival from the kernel's receive stamp where the kernel gives one,
so a reply's delay counts the time this process waited for a CPU. A reply that left more than
:data:`LATE_REPLY_S` after it was due (its arrival, plus any injected latency or stall) is logged when
it is the slowest so far (:attr:`XArmEmulator.slowest_reply_s`): a real controller answers within
milliseconds, and a driver that calls such a reply a stall is right about what it saw. The request
itself is executed as of when it was due (:class:`~sim2real.hardware.emulator_arm.ArmCore`: a read
reports the joints of that instant, a command acts the command delay after it), so the arm's motion
and what the driver records of it do not depend on when this process got a CPU.

A request hook (``on_request``) sees every request when it is executed, for fault timing; a
command hook (:attr:`XArmEmulator.on_command`) sees every change of the commanded joint
velocity (including auto-stops and halts), which is what the controller actually executes.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import socket
import threading
import time
from collections.abc import Callable

import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.fixed_rate import FixedRate
from sim2real.hardware import protocol as wire
from sim2real.hardware.emulator_arm import MOTOR_OFF_ERRORS, ArmCore
from sim2real.hardware.emulator_config import (
    N_JOINTS,
    CommandHook,
    EmulatedState,
    EmulatorConfig,
    FloatArray,
    RequestHook,
    TickHook,
)
from sim2real.hardware.link_timing import ARRIVAL_ANCILLARY_SIZE, arrival_time, stamp_arrivals

LOG = logging.getLogger(__name__)
#: A reply that leaves later than this after it was due (s) is late: this process waited for a CPU.
LATE_REPLY_S = 0.02


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
        self._core = ArmCore(config, time.monotonic())
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
        self._slowest_reply = 0.0

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
            core.enabled = core.error_code not in MOTOR_OFF_ERRORS
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
    def slowest_reply_s(self) -> float:
        """The longest any reply took from when it was due (its request's arrival, plus injected
        latency or stall) to leaving this process (s); 0 before the first."""
        return self._slowest_reply

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
        stamped = stamp_arrivals(conn)
        try:
            while not self._stop.is_set():
                try:
                    if stamped:
                        chunk, ancillary, _, _ = conn.recvmsg(4096, ARRIVAL_ANCILLARY_SIZE)
                    else:
                        chunk, ancillary = conn.recv(4096), []
                except TimeoutError:
                    continue
                except OSError:
                    gone.set()
                    return
                if not chunk:
                    if conn.fileno() < 0:  # closed here (a dropped link, or the emulator's stop)
                        gone.set()
                    return
                arrived = arrival_time(ancillary) or time.monotonic()
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
        stall_end = -float("inf")  # requests behind a stall are due when it ends
        while not self._stop.is_set() and not gone.is_set():
            try:
                item = pending.get(timeout=0.1)
            except queue.Empty:
                continue
            if item is None:
                return
            frame, arrived = item
            due = arrived
            if (not self._stalled and self._fault_due(faults.stall_at, time.monotonic())
                    and faults.stall_register in (None, frame.register)):
                self._stalled = True
                self._onsets["stall"] = arrived
                stall_end = arrived + faults.stall_duration
                LOG.info("emulator: stalling the command channel for %.3f s", faults.stall_duration)
                if self._stop.wait(max(arrived + faults.stall_duration - time.monotonic(), 0.0)):
                    return
            if faults.latency > 0.0 and (faults.latency_at is None or self._fault_due(faults.latency_at, arrived)):
                self._onsets.setdefault("latency", arrived)
                # Latency of the link, not of the controller: each request is executed and
                # answered ``latency`` after it arrived, however many are in flight.
                due = arrived + faults.latency
                if self._stop.wait(max(due - time.monotonic(), 0.0)):
                    return
            if gone.is_set() or conn.fileno() < 0:
                return
            with self._lock:
                handled_at = time.monotonic()
                # As of when the request was due (arrival, plus injected latency or stall), however late
                # this process got to it: a real controller answers within a servo cycle.
                extra, data = self._core.handle(frame, min(max(due, stall_end), handled_at), self._tcp_pose)
                status = self._core.status() | extra
            if self._on_request is not None:
                try:
                    self._on_request(handled_at, frame.register, frame.params)
                except Exception:
                    LOG.exception("emulator request hook failed")
            if replying:
                reply = wire.encode_reply(frame, status, data)
                # Noted before it is sent: a client that reads ``slowest_reply_s`` once it has the
                # reply must find it counted.
                self._note_reply(frame.register, time.monotonic() - max(due, stall_end))
                try:
                    conn.sendall(reply)
                except OSError:
                    replying = False  # the client is gone; what reached the controller is still executed
                else:
                    # And once more when the kernel has it: this thread may wait for the GIL or a CPU
                    # between the note and the send (a switch interval or more beside busy threads).
                    self._note_reply(frame.register, time.monotonic() - max(due, stall_end))
            self.requests_served += 1

    def _note_reply(self, register: int, late: float) -> None:
        """Keep the slowest reply (``late``: s after it was due); log it when it is late."""
        if late <= self._slowest_reply:
            return
        self._slowest_reply = late
        if late > LATE_REPLY_S:
            LOG.warning("xArm emulator: the reply to register %d left %.0f ms late (after its request arrived, plus "
                        "any injected latency or stall; the slowest so far): this process waited for a CPU, where a "
                        "real controller answers within milliseconds", register, late * 1e3)

    def _report_sender(self, port: int) -> Callable[[socket.socket], None]:
        period = 1.0 / wire.REPORT_RATES[port]

        def send_reports(conn: socket.socket) -> None:
            ticks = FixedRate(period, self._stop, catch_up=0.0)
            while not self._stop.is_set():
                with self._lock:
                    self._core.advance(time.monotonic())
                    snap = self._core.snapshot()
                packet = wire.encode_report(port, wire.ReportSnapshot(
                    state=snap.state, mode=snap.mode, joints=snap.q, velocities=snap.v,
                    efforts=np.zeros(N_JOINTS), tcp_pose=self._tcp_pose(snap.q), enabled=snap.enabled,
                    error_code=snap.error_code, warn_code=snap.warn_code))
                conn.sendall(packet)
                if not ticks.next():
                    return

        return send_reports

    def _tick_loop(self) -> None:
        period = 1.0 / self.config.tick_rate
        faults = self.config.faults
        ticks = FixedRate(period, self._stop, catch_up=0.0)
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
            if not ticks.next():
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

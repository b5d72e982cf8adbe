"""The state of one :class:`~sim2real.hardware.driver.XArmDriver`, which its parts share, and its logger.

:class:`~sim2real.hardware.driver.XArmDriver` is put together from parts, one object per module,
each holding the driver's :class:`DriverState` and the parts it calls:

* ``driver_stop``: :class:`~sim2real.hardware.driver_stop.StopPath`, the fault latch and the stop
  path (raw stop frames, a fresh connection);
* ``driver_commands``: :class:`~sim2real.hardware.driver_commands.Commands`, SDK exchanges timed and
  judged, SDK return codes turned into faults, motion commands clamped and sent;
* ``driver_supervisor``: :class:`~sim2real.hardware.driver_supervisor.Supervisor`, the supervisor
  thread (signal, dropped link, stall, command watchdog);
* ``driver_connection``: :class:`~sim2real.hardware.driver_connection.Connection`, opening the SDK
  with a deadline, the preflight checks, leaving the arm safe, disconnecting;
* ``driver``: :class:`~sim2real.hardware.driver.XArmDriver` itself, its public methods.

:class:`DriverState` holds data only, with two small derived views (``where``, ``connected``), the
reset of one run, and the two callbacks of its signal guard; :class:`Exchange` is the record of the
SDK exchange in flight.

Times are ``time.monotonic()`` seconds; angles rad; velocities rad/s.
"""

from __future__ import annotations

import collections
import logging
import math
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim2real.hardware.driver_types import CommandRecord, DriverConfig, Fault, FloatArray, Preflight
from sim2real.hardware.exit_deadline import EXIT_DEADLINE
from sim2real.hardware.link_timing import RunQueueDelay, SendGate
from sim2real.hardware.signal_guard import SignalGuard

#: The driver's logger, shared by all its parts: its records keep the name ``sim2real.hardware.driver``.
LOG = logging.getLogger("sim2real.hardware.driver")

#: Most commands kept in a driver's history (caller and watchdog).
HISTORY_LENGTH = 100_000


@dataclass
class Exchange:
    """One SDK exchange in flight: what it is and the thread running it."""

    what: str
    thread: int = field(default_factory=threading.get_ident)


class DriverState:
    """The attributes of one driver: for its life (set here) and for one run (:meth:`reset_run`).

    Parameters
    ----------
    config : DriverConfig
        Address, mode, limits, timeouts.
    """

    def __init__(self, config: DriverConfig) -> None:
        # --- for the driver's life ---
        self.config = config
        self.arm: Any = None  # the SDK's XArmAPI while connected, else None
        self.gate: SendGate | None = None  # the one send point of the command socket (the latch)
        self.io = threading.RLock()  # held by whoever runs an SDK exchange
        #: Joint limits less the margin, (6,) rad.
        self.lower: FloatArray = np.array([lo for lo, _ in config.joint_limits]) + config.limit_margin
        self.upper: FloatArray = np.array([hi for _, hi in config.joint_limits]) - config.limit_margin
        self.round_trips: collections.deque[float] = collections.deque(maxlen=config.latency_window)  # (s)
        self.history: collections.deque[CommandRecord] = collections.deque(maxlen=HISTORY_LENGTH)
        self.commands_sent = 0
        self.watchdog_trips = 0
        self.supervisor_stop = threading.Event()
        self.wake = threading.Event()
        self.watchdog: threading.Thread | None = None  # the supervisor thread
        self.stop_lock = threading.Lock()  # orders the latch and the first stop's timestamp
        self.run_delay = RunQueueDelay()
        self.guard = SignalGuard(self.on_signal, self.in_exchange_here)
        # --- for one run, connect to stop ---
        self.fault: Fault | None = None
        self.running = False
        self.preflight: Preflight | None = None
        self.last_q: FloatArray | None = None  # the last read joint positions, (6,) rad
        self.servo_target: FloatArray | None = None  # mode 1: the last servo_j target, (6,) rad
        self.last_send_at = -math.inf
        self.last_sent_moving = False  # the last command that left asked for motion
        self.last_fresh_at = -math.inf
        self.zero_sent = True
        self.watchdog_retry_at = -math.inf
        self.stall_retry_at = -math.inf
        self.inflight: Exchange | None = None
        self.second_stop: threading.Thread | None = None
        #: When the first stop (raw frames or fresh connection) after a fault left (monotonic s).
        self.stop_sent_at: float | None = None
        self.reset_run()

    def reset_run(self) -> None:
        """State of one run (connect to stop): the latch is open again only here."""
        self.fault = None
        self.running = False
        self.preflight = None
        self.last_q = None
        self.servo_target = None
        self.last_send_at = -math.inf
        self.last_sent_moving = False
        self.last_fresh_at = -math.inf
        self.zero_sent = True
        self.watchdog_retry_at = -math.inf
        self.stall_retry_at = -math.inf
        self.inflight = None
        self.round_trips.clear()
        self.run_delay.close()
        self.run_delay = RunQueueDelay()
        self.second_stop = None
        self.stop_sent_at = None
        self.guard.reset()

    @property
    def where(self) -> str:
        """``ip:port`` of the controller."""
        return f"{self.config.ip}:{self.config.command_port}"

    @property
    def connected(self) -> bool:
        """Whether the SDK is connected to the controller."""
        return self.arm is not None and bool(self.arm.connected)

    def on_signal(self, signum: int) -> None:
        """From the signal handler: the supervisor stops the arm now; the process's exit is bounded."""
        self.wake.set()
        EXIT_DEADLINE.expect(signum, self.config.exit_deadline)  # from the start of the shutdown

    def in_exchange_here(self) -> bool:
        """Whether the calling thread is inside an SDK exchange."""
        inflight = self.inflight
        return inflight is not None and inflight.thread == threading.get_ident()

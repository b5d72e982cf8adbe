"""The state the parts of :class:`~sim2real.hardware.driver.XArmDriver` share, and the driver's logger.

:class:`~sim2real.hardware.driver.XArmDriver` is put together from parts, one per module, each a
class of the driver's own methods (a mixin) working on one shared state:

* ``driver_stop``: the fault latch and the stop path (raw stop frames, a fresh connection);
* ``driver_commands``: SDK exchanges timed and judged, SDK return codes turned into faults,
  motion commands clamped and sent;
* ``driver_supervisor``: the supervisor thread (signal, dropped link, stall, command watchdog);
* ``driver_connection``: opening the SDK with a deadline, the preflight checks, leaving the arm
  safe, disconnecting;
* ``driver``: :class:`~sim2real.hardware.driver.XArmDriver` itself: its public methods and the
  state of one run.

This module holds no behaviour: :class:`_DriverState` only declares (annotates) the attributes
that ``XArmDriver.__init__`` and ``XArmDriver._reset_run`` set, so that each part says what it
works on; :class:`_Exchange` is the record of the SDK exchange in flight.

Times are ``time.monotonic()`` seconds; angles rad; velocities rad/s.
"""

from __future__ import annotations

import collections
import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sim2real.hardware.driver_types import CommandRecord, DriverConfig, Fault, FloatArray, Preflight
from sim2real.hardware.link_timing import RunQueueDelay, SendGate
from sim2real.hardware.signal_guard import SignalGuard

#: The driver's logger, shared by all its parts: its records keep the name ``sim2real.hardware.driver``.
LOG = logging.getLogger("sim2real.hardware.driver")


@dataclass
class _Exchange:
    """One SDK exchange in flight: what it is and the thread running it."""

    what: str
    thread: int = field(default_factory=threading.get_ident)


class _DriverState:
    """The attributes of one driver (annotations only; set by ``XArmDriver.__init__`` and ``_reset_run``)."""

    # --- for the driver's life (XArmDriver.__init__) ---
    config: DriverConfig
    _arm: Any  # the SDK's XArmAPI while connected, else None
    _gate: SendGate | None  # the one send point of the command socket (the latch)
    _io: threading.RLock  # held by whoever runs an SDK exchange
    _lower: FloatArray  # joint limits less the margin, (6,) rad
    _upper: FloatArray
    _round_trips: collections.deque[float]  # the latency window (s)
    _history: collections.deque[CommandRecord]
    _commands_sent: int
    _watchdog_trips: int
    _supervisor_stop: threading.Event
    _wake: threading.Event
    _watchdog: threading.Thread | None  # the supervisor thread
    _stop_lock: threading.Lock  # orders the latch and the first stop's timestamp
    _guard: SignalGuard

    # --- for one run, connect to stop (XArmDriver._reset_run) ---
    _fault: Fault | None
    _running: bool
    preflight: Preflight | None
    _last_q: FloatArray | None  # the last read joint positions, (6,) rad
    _servo_target: FloatArray | None  # mode 1: the last servo_j target, (6,) rad
    _last_send_at: float
    _last_sent_moving: bool
    _last_fresh_at: float
    _zero_sent: bool
    _watchdog_retry_at: float
    _stall_retry_at: float
    _inflight: _Exchange | None
    _run_delay: RunQueueDelay
    _second_stop: threading.Thread | None
    stop_sent_at: float | None

    # --- properties of XArmDriver (read-only there: declared here as properties, for the checker only) ---
    if TYPE_CHECKING:
        @property
        def where(self) -> str:  # "ip:port" of the controller
            ...

        @property
        def connected(self) -> bool:
            ...

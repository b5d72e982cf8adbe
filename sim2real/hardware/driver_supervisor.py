"""The supervisor of :class:`~sim2real.hardware.driver.XArmDriver`: signals, a dropped link, stalls and
the command watchdog.

:class:`Supervisor`, a part of the driver on its
:class:`~sim2real.hardware.driver_state.DriverState` (see :mod:`sim2real.hardware.driver_state`),
runs ``supervise`` in the thread ``xarm-supervisor`` from ``start()`` until a fault is latched or
``stop()`` is called. Every ``watchdog_period``, and at the stall and watchdog deadlines, it
latches a received signal, a closed link or a request left unanswered longer than the stall
budget (judged on the kernel's clock where available); otherwise, ``watchdog_timeout`` after the
last fresh command, it sends zero velocity (mode 4) or holds the last target (mode 1).

Times are ``time.monotonic()`` seconds.
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
import time

import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.hardware.driver_commands import Commands
from sim2real.hardware.driver_state import LOG, DriverState
from sim2real.hardware.driver_stop import StopPath
from sim2real.hardware.driver_types import N_JOINTS, Fault
from sim2real.hardware.link_timing import PendingRequest, tcp_times


class Supervisor:
    """The supervisor thread of the driver (see the module docstring).

    Parameters
    ----------
    state : DriverState
        The driver's state, shared with its other parts.
    stop : StopPath
        The driver's latch and stop path.
    commands : Commands
        The driver's command path (the watchdog's zero goes through it).
    """

    def __init__(self, state: DriverState, stop: StopPath, commands: Commands) -> None:
        self.state = state
        self.stop = stop
        self.commands = commands

    def supervise(self) -> None:
        """Every ``watchdog_period``: signal, dropped link, stall, then the command watchdog; ends
        once a fault is latched or :meth:`~sim2real.hardware.driver.XArmDriver.stop` is called.

        Also wakes at the stall deadline of the request in flight and at the watchdog deadline,
        so that each acts on time, not up to a period later. A late wake-up (this process starved
        of CPU) delays a judgement but cannot mislead it: the link is judged on kernel time.
        """
        self.state.run_delay.register(threading.get_native_id())
        planned = time.monotonic() + self.state.config.watchdog_period
        self.state.stall_retry_at = -math.inf
        while not self.state.supervisor_stop.is_set() and self.state.fault is None:
            self.state.wake.wait(max(self.next_due(planned) - time.monotonic(), 0.0))
            self.state.wake.clear()
            now = time.monotonic()
            if now >= planned:
                planned = now + self.state.config.watchdog_period
            if self.state.supervisor_stop.is_set() or self.state.fault is not None:
                return
            self.tick(now)

    def next_due(self, planned: float) -> float:
        """When the supervisor must look next (monotonic s)."""
        cfg = self.state.config
        due = planned
        if not self.state.zero_sent:
            due = min(due, max(self.state.last_fresh_at + cfg.watchdog_timeout, self.state.watchdog_retry_at))
        request = self.state.gate.request if self.state.gate is not None else None
        if request is not None and request.answered_at is None:
            due = min(due, max(request.written_at + cfg.stall_budget + 1e-3, self.state.stall_retry_at))
        return due

    def tick(self, now: float) -> None:
        """One look: a signal, then a closed link, then a stall (each latches), then the watchdog."""
        if self.state.guard.signal is not None:
            self.stop.latch(Fault("signal", f"{signal.Signals(self.state.guard.signal).name} received"))
            return
        if self.stop.link_closed():
            inflight = self.state.inflight
            what = inflight.what if inflight is not None else "streaming"
            self.stop.latch(Fault("disconnected", f"lost the connection to the xArm controller at {self.state.where} "
                                              f"during {what}"))
            return
        if self.check_stall(now):
            return
        cfg = self.state.config
        if (self.state.running and not self.state.zero_sent and now >= self.state.watchdog_retry_at
                and now - self.state.last_fresh_at >= cfg.watchdog_timeout):
            self.watchdog_zero(now)

    def check_stall(self, now: float) -> bool:
        """Latch a stall when the last request has had no reply for longer than the budget."""
        request = self.state.gate.request if self.state.gate is not None else None
        if request is None or request.answered_at is not None:
            return False
        waited = self.unanswered_for(request, now)
        if waited is None:
            request.answered_at = now
            return False
        budget = self.state.config.stall_budget
        if waited <= budget:
            self.state.stall_retry_at = now + 1e-3  # the kernel's clock moves in ticks: look again soon
            return False
        inflight = self.state.inflight
        what = inflight.what if inflight is not None else f"a request (register {request.register})"
        self.stop.latch(Fault("stall", f"the xArm link stalled: no reply to {what} {waited * 1e3:.0f} ms after the "
                                   f"request left this host (limit {budget * 1e3:.0f} ms)"))
        return True

    def unanswered_for(self, request: PendingRequest, now: float) -> float | None:
        """How long ``request`` has waited for its first reply byte (s); None once one arrived.

        Kernel time where available (the time since data last left the socket, with no byte
        received since the request left); otherwise this host's clock (which counts this
        process's starvation too)."""
        times = tcp_times(self.stop.sdk_socket())
        if times is not None and request.received_before is not None:
            return None if times.received_bytes > request.received_before else times.sent_ago
        return None if self.stop.reply_arrived(request.written_at) else now - request.written_at

    def watchdog_zero(self, now: float) -> None:
        """Zero velocity (mode 4) or a hold of the last target (mode 1) after the watchdog timeout.

        Sent through the SDK; while an exchange holds it (its reply is on the way or the stall
        judgement is running), the supervisor tries again a period later.
        """
        if not self.state.io.acquire(blocking=False):
            self.state.watchdog_retry_at = now + self.state.config.watchdog_period
            return
        try:
            if not self.state.running or self.state.fault is not None or self.state.zero_sent:
                return
            LOG.warning("xArm watchdog: no fresh command for %.0f ms; sending zero velocity",
                        (now - self.state.last_fresh_at) * 1e3)
            with contextlib.suppress(Sim2RealError):
                self.commands.send(np.zeros(N_JOINTS), math.nan, "watchdog")
                self.state.watchdog_trips += 1  # counted once the zero is out and in the history
            self.state.zero_sent = True
        finally:
            self.state.io.release()

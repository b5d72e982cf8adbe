"""The supervisor of :class:`~sim2real.hardware.driver.XArmDriver`: signals, a dropped link, stalls and
the command watchdog.

:class:`_Supervision`, a part of the driver (see :mod:`sim2real.hardware.driver_state`), runs
``_supervise`` in the thread ``xarm-supervisor`` from ``start()`` until a fault is latched or
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
from sim2real.hardware.driver_commands import _Commands
from sim2real.hardware.driver_state import LOG
from sim2real.hardware.driver_types import N_JOINTS, Fault
from sim2real.hardware.link_timing import PendingRequest, tcp_times


class _Supervision(_Commands):
    """The supervisor thread of the driver (see the module docstring)."""

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

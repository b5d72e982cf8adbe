"""The one fixed-rate loop of the toolkit's real-time threads (the xArm node's 100 Hz command loop, the
ros2_control stand-ins, the controller emulator's ticks and reports).

A :class:`FixedRate` keeps its deadlines on the monotonic clock, one period apart, so a tick that ran long
does not shift the ones after it; one that falls behind by more than ``catch_up`` starts again from now
instead of bursting the missed ticks; and it waits on a stop event, so a stop ends the wait at once.
"""

from __future__ import annotations

import threading
import time


class FixedRate:
    """Deadlines ``period`` s apart from now, waited for on ``stop``.

    Parameters
    ----------
    period : float
        Tick period, s (> 0).
    stop : threading.Event
        Ends the loop: :meth:`next` returns False once it is set (and at once while it waits).
    catch_up : float, optional
        How far behind its deadline a tick may fall, s, before the schedule restarts from now (default one
        period; 0: any late tick restarts it).
    """

    def __init__(self, period: float, stop: threading.Event, catch_up: float | None = None) -> None:
        if not period > 0.0:
            raise ValueError(f"FixedRate: the period must be positive, got {period!r} s")
        self.period = float(period)
        self.stop = stop
        self.catch_up = self.period if catch_up is None else float(catch_up)
        self._deadline = time.monotonic()

    def next(self) -> bool:
        """Wait for the next deadline; False when the loop is to end (``stop`` set before or during the wait)."""
        if self.stop.is_set():
            return False
        self._deadline += self.period
        delay = self._deadline - time.monotonic()
        if delay < -self.catch_up:  # fell behind: skip the missed ticks, don't burst them
            self._deadline = time.monotonic()
        elif delay > 0.0 and self.stop.wait(delay):
            return False
        return not self.stop.is_set()

"""A fixed report rate for simulated sensors: which of a stream of true states become reports."""

from __future__ import annotations


class RateGate:
    """Passes at most one time per ``1 / rate_hz``, on a schedule that starts at the first time offered.

    A time that comes more than half a period after the schedule's next slot restarts the schedule there (a gap
    in the input is not followed by a burst of reports).

    Parameters
    ----------
    rate_hz : float
        Report rate, Hz (> 0).
    """

    def __init__(self, rate_hz: float) -> None:
        self.period = 1.0 / float(rate_hz)
        self._next: float | None = None

    def due(self, t: float) -> bool:
        """Whether a report falls at time ``t`` (s), in increasing order of ``t``."""
        if self._next is None:
            self._next = t
        if t < self._next - 1e-9:
            return False
        self._next = max(self._next + self.period, t - 0.5 * self.period)
        return True

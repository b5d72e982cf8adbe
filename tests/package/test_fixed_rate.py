"""The one fixed-rate loop: deadlines a period apart that a long tick does not shift, a late tick that skips
instead of bursting, and a stop that ends the wait at once."""

from __future__ import annotations

import threading
import time

import pytest

from sim2real.fixed_rate import FixedRate


def test_ticks_keep_their_period_and_a_stop_ends_the_wait_at_once() -> None:
    stop = threading.Event()
    ticks = FixedRate(0.02, stop)
    start = time.monotonic()
    for _ in range(5):
        assert ticks.next()
    assert time.monotonic() - start >= 0.10 - 1e-3  # deadlines are never early (a busy machine makes them late)
    threading.Timer(0.05, stop.set).start()
    slow = FixedRate(10.0, stop)
    before = time.monotonic()
    assert not slow.next()  # the stop ended a 10 s wait
    assert time.monotonic() - before < 9.0  # well before the 10 s deadline, even on a starved CPU
    assert not slow.next()


def test_a_late_tick_skips_ahead_instead_of_bursting() -> None:
    stop = threading.Event()
    ticks = FixedRate(0.01, stop)
    time.sleep(0.1)  # ten periods late
    assert ticks.next()  # at once: the schedule restarts from now
    before = time.monotonic()
    assert ticks.next()  # and the next tick waits a period again, not zero
    assert time.monotonic() - before >= 0.005


def test_a_period_that_is_not_positive_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        FixedRate(0.0, threading.Event())

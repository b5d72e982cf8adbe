"""``benchmarks.xarm``'s watchdog measurement repeats on one emulator without driving the arm to a limit.

Its repeats once all streamed the same direction; the fifth reached joint 3's upper limit (controller
error C23) and ``make bench`` stopped there. No timing is asserted (the figures are the benchmark's).
"""

from __future__ import annotations

from loopback import REPORT_PORTS, free_host

from benchmarks.xarm import PORT, watchdog_reaction


def test_every_repeat_of_the_watchdog_measurement_finds_a_ready_arm() -> None:
    reactions = watchdog_reaction(6, free_host((PORT, *REPORT_PORTS)), PORT)
    assert len(reactions) == 6 and all(r > 0.0 for r in reactions)

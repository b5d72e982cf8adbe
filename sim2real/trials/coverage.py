"""Is a recorded trial whole? Stream coverage and control-loop health, without ROS.

A trial's recording is complete only when every stream it needs delivered messages stamped
over the whole trial window (:class:`StreamTracker`, :func:`coverage_problems`); the
recorder waits a bounded time for late messages and otherwise closes the trial with
``complete: false``, the reason and each stream's coverage. Outcomes are computed only from
a box-pose stream that covers the window.

The loop health of a platform (:func:`loop_health`) is measured from the stamps of its
``joint_command`` stream: the command rate it achieved against the control rate, the ticks
that came late, the worst gap and the gaps longer than the driver's watchdog (the arm was
zeroed mid-push). A *starved* loop made a push other than the one the PD law describes; the
fit and the report name such trials.

Times are ROS stamps in ns (header stamps: acquisition times) unless a name ends in ``_s``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim2real.trials.meta import TrialMeta

NS_PER_S = 1_000_000_000
#: Series every platform of a trial must deliver over the whole window.
REQUIRED_SERIES = ("joint_states", "joint_command", "box_pose")
#: A stream covers an end of the window when its sample nearest that end is at most this far from it (s):
#: a few periods of a 100 Hz stream (its samples fall at any phase of the window's ends).
COVERAGE_SLACK_S = 0.05
#: The real driver zeroes the arm when no fresh command came for this long (s; ``link.watchdog_timeout``).
WATCHDOG_S = 0.045
#: A required stream with a hole longer than this (s) is cut (a dropped stretch of the push), not complete.
MAX_STREAM_GAP_S = 0.25
#: A tick is late when the gap before it exceeds this many control periods.
LATE_FACTOR = 1.5
#: A loop is starved below this fraction of its control rate, or after any gap over the watchdog.
STARVED_RATE_FRACTION = 0.9


@dataclass
class StreamCoverage:
    """What one stream delivered for one trial window.

    Attributes
    ----------
    count : int
        Messages stamped inside the window.
    first_ns, last_ns : int or None
        Earliest and latest stamp inside the window (ns); None when ``count`` is 0.
    latest_ns : int or None
        Latest stamp seen at all, also after the window (ns): past the window's end means the
        stream has delivered the whole window (each stream arrives in stamp order).
    stamps_ns : list of int
        In-window stamps in arrival order (kept for the loop health of command streams).
    """

    count: int = 0
    first_ns: int | None = None
    last_ns: int | None = None
    latest_ns: int | None = None
    stamps_ns: list[int] = field(default_factory=list)

    def add(self, stamp_ns: int, in_window: bool) -> None:
        """Count one message stamped ``stamp_ns`` (ns)."""
        self.latest_ns = stamp_ns if self.latest_ns is None else max(self.latest_ns, stamp_ns)
        if not in_window:
            return
        self.count += 1
        self.first_ns = stamp_ns if self.first_ns is None else min(self.first_ns, stamp_ns)
        self.last_ns = stamp_ns if self.last_ns is None else max(self.last_ns, stamp_ns)
        self.stamps_ns.append(stamp_ns)

    def as_dict(self, start_ns: int) -> dict[str, Any]:
        """JSON-ready: count and the first and last in-window stamps in s since ``start_ns``."""
        def since(ns: int | None) -> float | None:
            return None if ns is None else round((ns - start_ns) / NS_PER_S, 4)
        return {"count": self.count, "first_s": since(self.first_ns), "last_s": since(self.last_ns),
                "worst_gap_s": round(self.worst_gap_s(), 4)}

    def worst_gap_s(self) -> float:
        """Longest interval between consecutive in-window stamps (s); 0 with fewer than two."""
        if len(self.stamps_ns) < 2:
            return 0.0
        return float(np.diff(np.unique(np.asarray(self.stamps_ns, dtype=np.int64))).max() / NS_PER_S)


class StreamTracker:
    """Coverage of every stream of one trial window ``[start_ns, end_ns]`` (ns stamps).

    Streams are named ``<platform>/<series>`` (e.g. ``real/box_pose``).
    """

    def __init__(self, start_ns: int, end_ns: int) -> None:
        self.start_ns, self.end_ns = int(start_ns), int(end_ns)
        self.streams: dict[str, StreamCoverage] = {}

    def add(self, stream: str, stamp_ns: int) -> None:
        """Count one message of ``stream`` stamped ``stamp_ns`` (ns); before the window it is ignored."""
        if stamp_ns < self.start_ns:
            return
        self.streams.setdefault(stream, StreamCoverage()).add(stamp_ns, stamp_ns <= self.end_ns)

    def delivered(self, expected: Iterable[str]) -> bool:
        """Whether every stream of ``expected`` has sent a message stamped at or past the window's end."""
        for name in expected:
            coverage = self.streams.get(name)
            if coverage is None or coverage.latest_ns is None or coverage.latest_ns < self.end_ns:
                return False
        return True

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready coverage of every stream (trial.json ``coverage``)."""
        return {"duration_s": round((self.end_ns - self.start_ns) / NS_PER_S, 4),
                "streams": {name: c.as_dict(self.start_ns) for name, c in sorted(self.streams.items())}}


def expected_streams(platforms: Iterable[str], seen: Iterable[str] = ()) -> list[str]:
    """The streams a trial of ``platforms`` must cover: each platform's required series, plus any
    other stream of those platforms that delivered messages in the window (``seen``)."""
    platforms = tuple(platforms)
    required = [f"{ns}/{series}" for ns in platforms for series in REQUIRED_SERIES]
    extra = sorted(s for s in seen if s.split("/", 1)[0] in platforms and s not in required)
    return required + extra


def coverage_problems(tracker: StreamTracker, expected: Iterable[str], slack_s: float = COVERAGE_SLACK_S,
                      max_gap_s: float = MAX_STREAM_GAP_S) -> dict[str, str]:
    """Streams of ``expected`` that do not cover the window, each with the reason (empty: all do).

    A stream covers the window when its first in-window stamp is within ``slack_s`` of the start,
    its last within ``slack_s`` of the end, and no two consecutive stamps are more than
    ``max_gap_s`` apart.
    """
    slack = round(slack_s * NS_PER_S)
    duration = (tracker.end_ns - tracker.start_ns) / NS_PER_S
    problems: dict[str, str] = {}
    for name in expected:
        coverage = tracker.streams.get(name)
        if coverage is None or coverage.count == 0 or coverage.first_ns is None or coverage.last_ns is None:
            problems[name] = f"{name} delivered nothing in the trial's {duration:.2f} s"
        elif coverage.last_ns < tracker.end_ns - slack:
            problems[name] = (f"{name} ends at {(coverage.last_ns - tracker.start_ns) / NS_PER_S:.2f} s "
                              f"of {duration:.2f} s")
        elif coverage.first_ns > tracker.start_ns + slack:
            problems[name] = (f"{name} starts only at {(coverage.first_ns - tracker.start_ns) / NS_PER_S:.2f} s "
                              f"of {duration:.2f} s")
        elif (gap := coverage.worst_gap_s()) > max_gap_s:
            problems[name] = f"{name} has a {gap:.2f} s hole in the trial's {duration:.2f} s"
    return problems


@dataclass(frozen=True)
class LoopHealth:
    """How a platform's control loop kept its rate during one trial.

    Attributes
    ----------
    command_rate_hz : float
        Commands per second over the span of the in-window command stamps.
    nominal_rate_hz : float
        The control rate (1 / ``sim.dt``).
    late_ticks : int
        Gaps between consecutive commands longer than ``LATE_FACTOR`` control periods.
    worst_gap_s : float
        Longest gap between consecutive commands (s).
    watchdog_gaps : int
        Gaps longer than the driver's watchdog (``WATCHDOG_S``): the arm was zeroed mid-push.
    starved : bool
        The loop fell below ``STARVED_RATE_FRACTION`` of its rate or had a watchdog gap.
    """

    command_rate_hz: float
    nominal_rate_hz: float
    late_ticks: int
    worst_gap_s: float
    watchdog_gaps: int
    starved: bool

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (trial.json ``loop_health[<platform>]``)."""
        return {"command_rate_hz": round(self.command_rate_hz, 2), "nominal_rate_hz": round(self.nominal_rate_hz, 2),
                "late_ticks": self.late_ticks, "worst_gap_s": round(self.worst_gap_s, 4),
                "watchdog_gaps": self.watchdog_gaps, "starved": self.starved}

    def describe(self) -> str:
        """One phrase, e.g. ``62 Hz of 100, 4 gaps over the 45 ms watchdog, worst 0.180 s``."""
        return (f"{self.command_rate_hz:.0f} Hz of {self.nominal_rate_hz:.0f}, {self.watchdog_gaps} gap(s) over the "
                f"{WATCHDOG_S * 1000:.0f} ms watchdog, worst gap {self.worst_gap_s:.3f} s")


def loop_health(command_stamps_ns: Iterable[int], period_s: float, watchdog_s: float = WATCHDOG_S) -> LoopHealth | None:
    """The loop health from one platform's in-window command stamps (ns); None with fewer than 2.

    Parameters
    ----------
    command_stamps_ns : iterable of int
        Header stamps of the platform's ``joint_command`` messages inside the window (ns).
    period_s : float
        Control period (s, ``sim.dt``).
    watchdog_s : float
        The driver's watchdog timeout (s).
    """
    stamps = np.unique(np.asarray(list(command_stamps_ns), dtype=np.int64))
    if stamps.size < 2 or period_s <= 0:
        return None
    gaps = np.diff(stamps) / NS_PER_S
    span = (stamps[-1] - stamps[0]) / NS_PER_S
    rate = (stamps.size - 1) / span
    nominal = 1.0 / period_s
    watchdog_gaps = int(np.count_nonzero(gaps > watchdog_s))
    return LoopHealth(command_rate_hz=float(rate), nominal_rate_hz=float(nominal),
                      late_ticks=int(np.count_nonzero(gaps > LATE_FACTOR * period_s)),
                      worst_gap_s=float(gaps.max()), watchdog_gaps=watchdog_gaps,
                      starved=bool(rate < STARVED_RATE_FRACTION * nominal or watchdog_gaps > 0))


def starved_platforms(meta: Mapping[str, Any]) -> dict[str, str]:
    """Platforms whose loop was starved in a trial.json ``meta``, each with a one-phrase description."""
    out: dict[str, str] = {}
    for ns, data in sorted(TrialMeta(meta).loop_health.items()):
        if isinstance(data, Mapping) and data.get("starved"):
            health = LoopHealth(**{k: data[k] for k in LoopHealth.__dataclass_fields__})
            out[ns] = health.describe()
    return out

"""Stream coverage and loop health (sim2real.trials.coverage): a trial is complete only when it is."""

from __future__ import annotations

import pytest

from sim2real.trials.coverage import (
    StreamTracker,
    coverage_problems,
    expected_streams,
    loop_health,
    starved_platforms,
)

NS = 1_000_000_000
START, END = 10 * NS, 10 * NS + int(2.25 * NS)  # a 2.25 s push


def _ticks(first_s: float, last_s: float, period_s: float = 0.01) -> list[int]:
    n = round((last_s - first_s) / period_s)
    return [START + round((first_s + k * period_s) * NS) for k in range(n + 1)]


def _tracker(streams: dict[str, list[int]]) -> StreamTracker:
    tracker = StreamTracker(START, END)
    for name, stamps in streams.items():
        for stamp in stamps:
            tracker.add(name, stamp)
    return tracker


FULL = _ticks(-0.5, 2.8)  # from before the window to past its end


def test_every_stream_past_the_end_is_complete():
    streams = {name: FULL for name in expected_streams(("real", "sim"))}
    tracker = _tracker(streams)
    assert tracker.delivered(streams) and coverage_problems(tracker, streams) == {}


def test_a_stream_cut_short_is_named_with_where_it_ends():
    expected = expected_streams(("real", "sim"))
    streams = {name: FULL for name in expected}
    streams["sim/box_pose"] = _ticks(0.0, 0.64)
    tracker = _tracker(streams)
    assert not tracker.delivered(expected)  # the recorder keeps waiting for it (up to its drain timeout)
    problems = coverage_problems(tracker, expected)
    assert list(problems) == ["sim/box_pose"]
    assert "ends at 0.64 s of 2.25 s" in problems["sim/box_pose"]


def test_a_missing_stream_a_late_start_and_a_hole_are_problems():
    expected = expected_streams(("real",))
    streams = {"real/joint_states": _ticks(0.4, 2.8), "real/joint_command": FULL,
               "real/box_pose": _ticks(-0.5, 1.0) + _ticks(1.5, 2.8)}
    problems = coverage_problems(_tracker(streams), expected)
    assert "starts only at 0.40 s" in problems["real/joint_states"]
    assert "0.50 s hole" in problems["real/box_pose"]
    streams.pop("real/joint_command")
    assert "delivered nothing" in coverage_problems(_tracker(streams), expected)["real/joint_command"]


def test_streams_other_than_the_required_are_expected_once_they_delivered():
    assert expected_streams(("sim",)) == ["sim/joint_states", "sim/joint_command", "sim/box_pose"]
    assert expected_streams(("sim",), ["sim/pusher_pose", "real/box_pose"])[-1] == "sim/pusher_pose"
    assert "real/box_pose" not in expected_streams(("sim",), ["real/box_pose"])


def test_coverage_is_reported_in_seconds_of_the_window():
    data = _tracker({"real/box_pose": FULL}).as_dict()
    entry = data["streams"]["real/box_pose"]
    assert data["duration_s"] == pytest.approx(2.25)
    assert entry["count"] == 226 and entry["first_s"] == 0.0 and entry["last_s"] == pytest.approx(2.25)
    assert entry["worst_gap_s"] == pytest.approx(0.01)


def test_a_steady_loop_is_healthy():
    health = loop_health(_ticks(0.0, 2.25), 0.01)
    assert health is not None and not health.starved
    assert health.command_rate_hz == pytest.approx(100.0) and health.late_ticks == 0
    assert health.watchdog_gaps == 0 and health.worst_gap_s == pytest.approx(0.01)


def test_a_gap_over_the_watchdog_starves_the_loop():
    stamps = _ticks(0.0, 1.0) + _ticks(1.08, 2.25)  # 80 ms without a command: the driver zeroed the arm
    health = loop_health(stamps, 0.01)
    assert health is not None and health.starved and health.watchdog_gaps == 1 and health.late_ticks == 1
    meta = {"loop_health": {"real": health.as_dict(), "sim": loop_health(_ticks(0.0, 2.25), 0.01).as_dict()}}
    named = starved_platforms(meta)
    assert list(named) == ["real"] and "1 gap(s) over the 45 ms watchdog" in named["real"]


def test_a_slow_loop_without_long_gaps_is_starved():
    health = loop_health(_ticks(0.0, 2.25, period_s=0.03), 0.01)  # 33 Hz of 100, every gap under 45 ms
    assert health is not None and health.starved and health.watchdog_gaps == 0
    assert health.command_rate_hz == pytest.approx(33.3, abs=0.1)


def test_too_few_commands_give_no_health():
    assert loop_health([START], 0.01) is None and loop_health([], 0.01) is None
    assert starved_platforms({}) == {}

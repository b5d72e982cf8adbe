"""The real-time nodes ask for a higher scheduling priority before their threads start, and say so
in one line when they may not (:mod:`sim2real.nodes.priority`)."""

import os
import subprocess
import sys

import pytest

from sim2real.nodes import priority


def test_a_process_that_may_lower_its_niceness_runs_at_the_realtime_niceness() -> None:
    """In a child (the test process keeps its own niceness): either the niceness is now the real-time
    one, or the function says why not and the niceness is unchanged."""
    script = ("import os, threading; from sim2real.nodes.priority import raise_priority; "
              "before = os.getpriority(os.PRIO_PROCESS, 0); note = raise_priority(); "
              "seen = []; t = threading.Thread(target=lambda: seen.append(os.getpriority(os.PRIO_PROCESS, 0))); "
              "t.start(); t.join(); print(before, os.getpriority(os.PRIO_PROCESS, 0), seen[0], note is None)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    before, after, thread, raised = int(out[0]), int(out[1]), int(out[2]), out[3] == "True"
    if raised:
        assert after == min(before, priority.REALTIME_NICENESS) and thread == after  # a new thread inherits it
    else:
        assert after == before


def test_a_refused_priority_is_one_sentence_and_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "getpriority", lambda *_: 0)
    monkeypatch.setattr(os, "setpriority", refuse)
    note = priority.raise_priority()
    assert note is not None and "\n" not in note
    assert "Operation not permitted" in note and "nice -10" in note and "CAP_SYS_NICE" in note


def test_a_process_already_at_or_below_the_niceness_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    monkeypatch.setattr(os, "getpriority", lambda *_: -15)
    monkeypatch.setattr(os, "setpriority", lambda *args: calls.append(args))
    assert priority.raise_priority() is None and not calls

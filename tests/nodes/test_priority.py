"""A run's scheduling priority (sim2real.nodes.priority): raised when the OS allows, said either way,
inherited by what the run starts, restored after; each case in a thread of its own (Linux keeps the
niceness per thread), so the test process keeps its own."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

from sim2real.nodes import priority
from sim2real.nodes.priority import RUN_NICENESS, raise_run_priority, unchanged_priority


def in_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` run in a new thread; its result (or its exception, raised here)."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as err:  # re-raised in the test's thread
            out["error"] = err

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def niceness() -> int:
    return os.getpriority(os.PRIO_PROCESS, 0)


def child_niceness() -> int:
    """The niceness a process started now inherits."""
    code = "import os; print(os.getpriority(os.PRIO_PROCESS, 0))"
    return int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def test_the_run_priority_is_raised_inherited_and_restored_or_its_absence_said() -> None:
    def run() -> tuple[int, Any, int, int, int]:
        before = niceness()
        change = raise_run_priority()
        during, child = niceness(), child_niceness()
        change.restore()
        return before, change, during, child, niceness()

    before, change, during, child, after = in_thread(run)
    assert change.before == before and after == before
    if before <= RUN_NICENESS:
        assert not change.raised and during == before
    elif change.raised:  # root or CAP_SYS_NICE (as in CI)
        assert during == child == RUN_NICENESS and f"niceness {RUN_NICENESS}" in change.message
    else:
        assert during == child == before and "CAP_SYS_NICE" in change.message


def test_without_the_privilege_the_run_keeps_its_niceness_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(priority.os, "setpriority", refuse)
    monkeypatch.setattr(priority.os, "getpriority", lambda *args: 0)
    change = in_thread(raise_run_priority)
    assert not change.raised and change.before == 0
    assert "keep niceness 0" in change.message and "CAP_SYS_NICE" in change.message
    assert "loop health" in change.message
    change.restore()  # nothing to restore: does not call setpriority


def test_a_run_already_at_the_priority_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[object, ...]] = []
    monkeypatch.setattr(priority.os, "setpriority", lambda *args: calls.append(args))
    monkeypatch.setattr(priority.os, "getpriority", lambda *args: RUN_NICENESS - 5)
    change = raise_run_priority()
    change.restore()
    assert not change.raised and change.before == RUN_NICENESS - 5 and calls == []
    assert unchanged_priority().message == ""

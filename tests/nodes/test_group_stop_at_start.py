"""A group process stopped while its modules still import ends quietly, also when a second stop follows."""

from __future__ import annotations

import signal

import pytest

import sim2real.interrupts
from sim2real.nodes import group


class _ExitCalledError(Exception):
    """Raised by the stand-in for ``os._exit``."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


@pytest.fixture
def exits(monkeypatch):
    """``os._exit`` raises :class:`_ExitCalledError`; SIGINT's handler is restored after the test."""
    def _exit(status: int) -> None:
        raise _ExitCalledError(status)

    monkeypatch.setattr(group.os, "_exit", _exit)
    previous = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, previous)


def test_an_interrupt_ends_the_process_with_130_and_further_sigints_are_ignored(exits):
    with pytest.raises(_ExitCalledError) as ended:
        group.end_stopped_start(KeyboardInterrupt())
    assert ended.value.status == group.STOPPED_AT_START == 130
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_a_second_interrupt_while_deciding_is_still_the_stop(exits, monkeypatch):
    """The terminal's Ctrl-C and then the parent's SIGINT: the second lands inside the decision."""
    def interrupted(err: BaseException) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(sim2real.interrupts, "is_interrupt", interrupted)
    with pytest.raises(_ExitCalledError) as ended:
        group.end_stopped_start(KeyboardInterrupt())
    assert ended.value.status == 130


def test_a_failure_is_left_to_the_caller_to_raise(exits):
    group.end_stopped_start(ImportError("no module named x"))  # returns: not a stop

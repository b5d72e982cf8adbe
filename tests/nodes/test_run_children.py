"""Stopping the run's child processes (:mod:`sim2real.nodes.run_children`): never a traceback, never a leftover."""

import subprocess
import sys
import time

from children import HANG_GUARD_S, default_sigint

from sim2real.nodes.run_children import _Child

#: A child that ignores SIGINT (as a starved or stuck node group would seem to) and reports when it runs.
STUBBORN = ("import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); print('up', flush=True); "
            "time.sleep(60)")


def _started(code: str) -> _Child:
    # SIGINT at its default, as _Child.start gives its children (a pytest-xdist worker ignores it, and a
    # child would inherit that).
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                               preexec_fn=default_sigint)
    assert process.stdout.readline().strip() == "up"
    return _Child(["stubborn"], process, ready_file=None)


def test_a_child_that_ignores_sigint_is_killed_after_the_grace_and_stop_returns():
    child = _started(STUBBORN)
    start = time.monotonic()
    child.stop(grace=0.5)
    assert child.process.returncode == -9  # SIGKILL
    assert time.monotonic() - start < 30.0  # bounded (generous: only that it does not hang)


def test_a_child_that_exits_on_sigint_is_not_killed():
    child = _started("import time; print('up', flush=True); time.sleep(600)")
    child.stop(grace=HANG_GUARD_S)  # a guard only: at idle priority beside the ROS tier, it may wait for CPU
    assert child.process.returncode in (1, -2)  # KeyboardInterrupt's traceback exit or the default SIGINT


def test_stopping_a_child_that_already_ended_does_nothing():
    child = _started("print('up', flush=True)")
    child.process.wait()
    child.stop(grace=0.1)
    assert child.process.returncode == 0


class _UnkillableProcess:
    """A process that does not end within any wait (a child starved of CPU while it dies)."""

    def __init__(self):
        self.signals = []

    def poll(self):
        return None

    def send_signal(self, signum):
        self.signals.append(signum)

    def kill(self):
        self.signals.append("kill")

    def wait(self, timeout=None):
        raise subprocess.TimeoutExpired("group", timeout)


def test_a_child_that_outlives_its_kill_does_not_turn_the_run_into_a_traceback():
    process = _UnkillableProcess()
    _Child(["starved"], process, ready_file=None).stop(grace=0.01)  # must not raise
    assert process.signals[-1] == "kill"

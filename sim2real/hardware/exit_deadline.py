"""A hard deadline on the process's exit once a signal stopped the arm (one per process)."""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import signal
import threading
import time


class ExitDeadline:
    """A hard deadline on this process's exit once a signal stopped an arm (one per process).

    :meth:`expect` registers, once, a hook that runs when the interpreter starts shutting down
    (before it waits for non-daemon threads): a daemon thread then ends the process with
    ``os._exit(128 + signal)`` after the deadline, and an interval timer (SIGALRM, default
    action) ends it a second later should no Python thread run any more.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._signum = signal.SIGINT
        self._seconds = math.inf
        self._registered = False

    def expect(self, signum: int, seconds: float) -> None:
        """A signal ``signum`` stopped the arm: bound the shutdown to ``seconds`` from its start."""
        with self._lock:
            self._signum, self._seconds = signum, min(self._seconds, seconds)
            if self._registered:
                return
            self._registered = True
        register = getattr(threading, "_register_atexit", None)
        if register is None:  # an interpreter without the hook: bound what follows the thread joins
            atexit.register(self._start)
            return
        try:
            register(self._start)
        except RuntimeError:  # already shutting down: the deadline starts now
            self._start()

    def _start(self) -> None:
        signum, seconds = self._signum, self._seconds
        threading.Thread(target=self._expire, args=(signum, seconds), name="xarm-exit-deadline", daemon=True).start()
        with contextlib.suppress(ValueError, OSError, AttributeError):
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.setitimer(signal.ITIMER_REAL, seconds + 1.0)

    @staticmethod
    def _expire(signum: int, seconds: float) -> None:
        time.sleep(seconds)
        name = signal.Signals(signum).name
        with contextlib.suppress(OSError):
            os.write(2, f"xArm driver: the process is still shutting down {seconds:g} s after it began (the "
                        f"arm was stopped on {name}); ending it now\n".encode())
        os._exit(128 + signum)


EXIT_DEADLINE = ExitDeadline()

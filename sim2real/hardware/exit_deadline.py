"""The xArm driver's hard deadline on its process's exit once a signal stopped the arm (one per process)."""

from __future__ import annotations

import atexit
import math
import signal
import threading

from sim2real.process_deadline import end_after


class ExitDeadline:
    """A hard deadline on this process's exit once a signal stopped an arm (one per process).

    :meth:`expect` registers, once, a hook that runs when the interpreter starts shutting down
    (before it waits for non-daemon threads) and starts :func:`end_after` with
    ``128 + signal`` as the status.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._signum: int = signal.SIGINT
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
        name = signal.Signals(signum).name
        end_after(seconds, 128 + signum, f"xArm driver: the process is still shutting down {seconds:g} s after it "
                                         f"began (the arm was stopped on {name}); ending it now",
                  name="xarm-exit-deadline")


EXIT_DEADLINE = ExitDeadline()

"""A hard deadline on this process's end: what a stop (a signal, a dead parent) must not outlive."""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import threading
import time


def end_after(seconds: float, status: int, message: str, name: str = "exit-deadline") -> None:
    """From now on, end this process after ``seconds`` whatever its threads are doing.

    A daemon thread writes ``message`` and the Python stack of every thread on stderr (what the
    process was stuck in), then ends it with ``os._exit(status)``. Should no Python thread run any
    more (a C call that holds the GIL, or the interpreter's finalization, where daemon threads stop),
    an interval timer ends it a second later: SIGALRM, whose handler (:mod:`faulthandler`, C, needs
    no GIL) writes every thread's stack and then lets the signal's default action end the process
    (status ``-SIGALRM`` to its parent).

    Parameters
    ----------
    seconds : float
        Time from this call to the end, s.
    status : int
        Exit status then.
    message : str
        One line for stderr (without the newline).
    name : str
        Name of the deadline's thread.
    """
    threading.Thread(target=_expire, args=(seconds, status, message), name=name, daemon=True).start()
    with contextlib.suppress(ValueError, OSError, AttributeError, RuntimeError):
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            faulthandler.register(signal.SIGALRM, all_threads=True, chain=True)
        signal.setitimer(signal.ITIMER_REAL, seconds + 1.0)


def _expire(seconds: float, status: int, message: str) -> None:
    time.sleep(seconds)
    with contextlib.suppress(OSError, ValueError, RuntimeError):
        os.write(2, f"{message}\n".encode())
        faulthandler.dump_traceback(all_threads=True)
    os._exit(status)

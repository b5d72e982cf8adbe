"""An interrupt that lands where Python cannot raise it is delivered again, not printed and lost.

Ctrl-C (SIGINT) raises KeyboardInterrupt in the main thread at the next bytecode; when that is inside
a ctypes callback (numba's compiler notifying its cache) or a ``__del__`` (llvmlite's object
references), Python prints "Exception ignored in ..." with a traceback and drops the interrupt. The
``sim2real`` command and the node processes of a run install :func:`redeliver_interrupts` first.

Where Python raises it but wraps it (a KeyboardInterrupt inside a descriptor's ``__set_name__`` while
a class body of an imported module runs, as in numba's, comes out as ``RuntimeError: Error calling
__set_name__``, with the interrupt as its cause), :func:`is_interrupt` still tells it from a failure.
"""

from __future__ import annotations

import _thread
import functools
import sys
import threading
from collections.abc import Callable
from typing import Any

#: Delay (s) before an interrupt that could not be raised is delivered again.
REDELIVER_AFTER_S = 0.01


def _redeliver(previous_hook: Callable[[Any], object], unraisable: Any) -> None:
    """``sys.unraisablehook``: a KeyboardInterrupt is delivered again (:func:`_thread.interrupt_main`)
    :data:`REDELIVER_AFTER_S` later, from a timer thread, once this hook and the callback have returned,
    to unwind like any Ctrl-C; any other unraisable exception goes to ``previous_hook``."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        timer = threading.Timer(REDELIVER_AFTER_S, _thread.interrupt_main)
        timer.daemon = True
        timer.start()
        return
    previous_hook(unraisable)


def redeliver_interrupts() -> Callable[[Any], object]:
    """Install the hook (see the module docstring); returns the hook it replaced, to restore."""
    previous = sys.unraisablehook
    sys.unraisablehook = functools.partial(_redeliver, previous)
    return previous


def is_interrupt(error: BaseException) -> bool:
    """True when ``error`` is a KeyboardInterrupt, or an exception Python raised *from* one (its
    ``__cause__`` chain holds one): an interrupt, to be treated as Ctrl-C rather than a failure.

    Only explicit causes count: an exception raised while an interrupt was being handled (its
    ``__context__``) is a failure of that handling, and shown as one.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__
    return False

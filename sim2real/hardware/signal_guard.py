"""Ctrl-C and SIGTERM while the xArm streams: flag them, let the driver stop the arm, raise where Python can.

``xarm-python-sdk`` waits for replies inside a bare ``except:`` that also catches a KeyboardInterrupt
raised there, so a Ctrl-C raised during an SDK call can vanish while the program keeps streaming;
SIGTERM's default action ends the process without a stop. :class:`SignalGuard` replaces both handlers
(from the main thread only, where Python runs handlers): the handler records the signal and tells the
driver (which wakes its supervisor to stop the arm within one period, whatever the main thread is doing);
unless the main thread itself is inside an SDK exchange, it then raises KeyboardInterrupt (SIGINT) or
SystemExit (SIGTERM) at once; inside one, the driver raises it when the call returns
(:meth:`SignalGuard.raise_if_interrupted`). A previous Python handler is still called. An ignored signal
(SIG_IGN, e.g. a process started in the background of a shell) stays ignored.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any


class SignalGuard:
    """SIGINT and SIGTERM handlers of one driver run (see the module docstring).

    Parameters
    ----------
    on_signal : callable
        Called with the signal number from the handler, first (the driver wakes its supervisor and
        bounds the process's exit).
    in_exchange_here : callable
        Whether the calling thread is inside an SDK exchange right now (then the raise waits for the
        exchange to return).
    """

    def __init__(self, on_signal: Callable[[int], None], in_exchange_here: Callable[[], bool]) -> None:
        self._on_signal = on_signal
        self._in_exchange_here = in_exchange_here
        self._previous: dict[int, Any] = {}
        self._handlers: dict[int, Any] = {}
        self.signal: int | None = None
        self._pending = False

    def reset(self) -> None:
        """Forget a signal of an earlier run (the handlers stay as they are)."""
        self.signal = None
        self._pending = False

    def install(self) -> None:
        """Replace the SIGINT and SIGTERM handlers (main thread only; once until :meth:`restore`)."""
        if threading.current_thread() is not threading.main_thread() or self._previous:
            return
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous = signal.getsignal(signum)
            if previous == signal.SIG_IGN:
                continue
            handler = self._handler(previous)
            signal.signal(signum, handler)
            self._previous[signum] = previous
            self._handlers[signum] = handler

    def _handler(self, previous: Any) -> Callable[[int, Any], None]:
        def on_signal(number: int, frame: Any) -> None:
            self.signal = number
            self._pending = True
            self._on_signal(number)
            if callable(previous) and previous is not signal.default_int_handler:
                previous(number, frame)  # e.g. a ROS context's own shutdown handler
            if not self._in_exchange_here():
                # This (the main) thread is not inside the SDK: raise it now. An exchange of
                # another thread (a node's loop) does not delay it: the main thread may make
                # no driver call that would raise it later (seen: xarm_node ignored Ctrl-C).
                self.raise_if_interrupted()

        return on_signal

    def restore(self) -> None:
        """Put back the handlers the guard replaced, unless someone replaced the guard since."""
        if self._previous and threading.current_thread() is threading.main_thread():
            for signum, previous in self._previous.items():
                if signal.getsignal(signum) is self._handlers.get(signum):
                    signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
            self._previous, self._handlers = {}, {}

    def raise_if_interrupted(self) -> None:
        """Raise KeyboardInterrupt (SIGINT) or SystemExit(143) (SIGTERM) for a signal not raised yet.

        Only where Python delivers signals (the main thread): a node's loop thread must not receive
        it; the node shuts down through its own signal handling.
        """
        if self._pending and threading.current_thread() is threading.main_thread():
            self._pending = False
            if self.signal == signal.SIGTERM:
                raise SystemExit(128 + signal.SIGTERM)
            raise KeyboardInterrupt("Ctrl-C during an xArm driver call")

"""Helpers for tests that start child processes and signal them."""

from __future__ import annotations

import queue
import signal
import threading
from typing import IO


def default_sigint() -> None:
    """``preexec_fn``: SIGINT back to its default action in the child.

    A shell's background job (``make test &``, some CI runners) starts with SIGINT ignored, and
    children inherit an ignored signal; a test that interrupts its child must not depend on that.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class LineReader:
    """The lines of a child's text stream, read by a thread, each taken with a timeout.

    Parameters
    ----------
    stream : text stream
        E.g. ``Popen(..., stdout=PIPE, text=True).stdout``.
    """

    def __init__(self, stream: IO[str]) -> None:
        self._lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            for line in stream:
                self._lines.put(line)
            self._lines.put(None)

        threading.Thread(target=pump, name="child-lines", daemon=True).start()

    def next(self, timeout: float) -> str | None:
        """The next line, or None at the end of the stream; raises TimeoutError after ``timeout`` s."""
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no line from the child within {timeout:g} s") from None

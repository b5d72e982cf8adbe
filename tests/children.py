"""Helpers for tests that start child processes and signal them."""

from __future__ import annotations

import ast
import queue
import signal
import sys
import threading
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent

#: Bound (s) on a child of a computing-tier test: a guard against a hang, not a time limit. `make test` runs
#: the computing tiers at idle scheduling priority beside the real-time tiers, so such a child may get no
#: CPU for minutes while a stand-in graph runs (tests assert no wall-clock timing).
HANG_GUARD_S = 300


def console_script(name: str) -> list[str]:
    """The installed console script ``name``, or (not installed yet) its entry point from setup.py."""
    installed = Path(sys.executable).parent / name
    if installed.is_file():
        return [str(installed)]
    module, func = console_scripts()[name].split(":")
    return [sys.executable, "-c", f"import sys; from {module} import {func}; sys.exit({func}())"]


def console_scripts() -> dict[str, str]:
    """``{script: "module:function"}`` of setup.py's CONSOLE_SCRIPTS."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    entries = next(ast.literal_eval(n.value) for n in ast.walk(tree)
                   if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "CONSOLE_SCRIPTS")
    return {e.split("=")[0].strip(): e.split("=")[1].strip() for e in entries}


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

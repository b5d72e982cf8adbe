"""Progress of long commands on stderr, through tqdm.

On a terminal the bar is redrawn in place. Into a pipe or a log file (CI, a batch job) the same
status is written as whole lines, at most one per ``interval`` seconds and one at the end, since a
redrawn line would pile up as carriage returns in the log.
"""

from __future__ import annotations

import sys
from typing import IO, Any

from tqdm import tqdm


class _Lines:
    """A stream for tqdm that writes each refresh of the status as a line of its own (for logs)."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        line = text.replace("\r", "").rstrip()
        if line:
            self.stream.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


def progress_bar(total: int, what: str, unit: str, interval: float = 10.0, initial: int = 0,
                 stream: IO[str] | None = None) -> Any:
    """A tqdm progress bar of ``total`` ``unit``\\ s on ``stream`` (default stderr), labelled ``what``.

    Parameters
    ----------
    total : int
        Items to do, counting the ``initial`` ones already done (e.g. by an earlier, resumed run).
    what : str
        Label before the bar (``"sweep"``, ``"import"``).
    unit : str
        What an item is (``"row"``, ``"toss"``); tqdm shows the rate in these per second.
    interval : float
        Seconds between lines when ``stream`` is not a terminal.
    initial : int
        Items done before this run; the rate and time left count only this run's.
    """
    stream = sys.stderr if stream is None else stream
    interactive = bool(getattr(stream, "isatty", lambda: False)())
    return tqdm(total=total, initial=initial, desc=what, unit=unit, file=stream if interactive else _Lines(stream),
                mininterval=0.1 if interactive else interval, maxinterval=max(interval, 10.0),
                dynamic_ncols=interactive, ncols=None if interactive else 100, ascii=not interactive,
                smoothing=0.1)

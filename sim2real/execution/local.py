"""Local execution: tasks in this process, or in a pool of worker processes, results in order.

:func:`ordered_map` yields ``fn(item)`` for every item in the items' order whatever the number
of workers, so a caller that writes each result as it arrives writes the same file with one
worker or many. Only ``2 × workers`` tasks are in flight at a time (a long sweep neither
queues every task nor holds every result), and the workers ignore SIGINT: Ctrl-C reaches the
parent alone, which stops yielding, cancels the queued tasks and waits for the running ones.
"""

from __future__ import annotations

import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from sim2real.errors import Sim2RealError

T = TypeVar("T")
R = TypeVar("R")

#: Tasks in flight per worker.
IN_FLIGHT_PER_WORKER = 2


class WorkerDiedError(Sim2RealError):
    """A worker process ended abruptly (killed, out of memory); the results so far are valid."""


def _ignore_sigint() -> None:
    """Worker initializer: leave Ctrl-C to the parent (which shuts the pool down)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def ordered_map(fn: Callable[[T], R], items: Iterable[T], workers: int = 1) -> Iterator[R]:
    """``fn(item)`` for each item, in the items' order.

    Parameters
    ----------
    fn : callable
        A top-level (picklable) function when ``workers`` > 1.
    items : iterable
        Picklable task descriptions, consumed lazily.
    workers : int
        1: run in this process, one after another; more: that many worker processes.

    Raises
    ------
    Sim2RealError
        ``workers`` < 1.
    WorkerDiedError
        A worker process died (the results yielded before are unaffected).
    """
    if workers < 1:
        raise Sim2RealError(f"--workers must be at least 1, got {workers}")
    if workers == 1:
        for item in items:
            yield fn(item)
        return
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_ignore_sigint)
    pending: deque[Future[R]] = deque()
    try:
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= IN_FLIGHT_PER_WORKER * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    except BrokenProcessPool:
        raise WorkerDiedError("a worker process died (killed or out of memory); the results written so far are "
                         "kept") from None
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)

"""Local execution: tasks in this process, or in a pool of worker processes, results in order.

:class:`LocalExecutor` yields ``fn(item)`` for every item in the items' order whatever the
number of workers. Only ``2 × workers`` tasks are in flight at a time (a long sweep neither
queues every task nor holds every result), and the workers ignore SIGINT: Ctrl-C reaches the
parent alone, which stops yielding, cancels the queued tasks and waits for the running ones.
There is no object store: shared data travels with each task, and each worker keeps the first copy
it receives (:class:`Kept`), so what the data computes once and caches is computed once per worker.
"""

from __future__ import annotations

import signal
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from sim2real.errors import Sim2RealError
from sim2real.execution.base import Held

T = TypeVar("T")
R = TypeVar("R")

#: Tasks in flight per worker.
IN_FLIGHT_PER_WORKER = 2
#: Shared values a worker keeps (:class:`Kept`); beyond this many the oldest is dropped (a worker then
#: works on the copy that came with the task, as without keeping).
MAX_KEPT = 4096

#: This process's kept values by token (filled in worker processes only).
_KEPT: dict[str, Any] = {}


@dataclass(frozen=True)
class Kept(Generic[T]):
    """:class:`~sim2real.execution.base.Shared` of a worker pool: the value travels with each task, and a
    worker keeps the first copy it receives under :attr:`token` and returns that one ever after.

    A fit evaluates every trial at each iteration; a trial computes what depends on its recording
    alone once and caches it (:attr:`~sim2real.sysid.problem.data.TrialData.pose_kinematics`). Without keeping,
    each task's fresh copy computed it again: 6 % of the workers' time in a fit of 570 cube tosses.
    Kept values are read, never changed, by tasks (as with one worker, where every task gets the
    parent's object).
    """

    token: str
    value: T = field(compare=False)

    def get(self) -> T:
        """The first copy of the value this process received."""
        if self.token not in _KEPT:
            if len(_KEPT) >= MAX_KEPT:
                del _KEPT[next(iter(_KEPT))]
            _KEPT[self.token] = self.value
        return _KEPT[self.token]  # type: ignore[no-any-return]


class WorkerDiedError(Sim2RealError):
    """A worker process ended abruptly (killed, out of memory); the results so far are valid."""


def _ignore_sigint() -> None:
    """Worker initializer: leave Ctrl-C to the parent (which shuts the pool down)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class LocalExecutor:
    """This process (``workers`` = 1) or a pool of ``workers`` local processes.

    Parameters
    ----------
    workers : int
        1: run in this process, one after another; more: that many worker processes,
        started on first use and kept until :meth:`close`.

    Raises
    ------
    Sim2RealError
        ``workers`` < 1.
    """

    def __init__(self, workers: int = 1) -> None:
        if workers < 1:
            raise Sim2RealError(f"--workers must be at least 1, got {workers}")
        self.workers = workers
        self.parallelism = workers
        self.label = "this process" if workers == 1 else f"local, {workers} worker processes"
        self._pool: ProcessPoolExecutor | None = None

    def share(self, value: T) -> Held[T] | Kept[T]:
        """No object store: the value travels with each task (kept by each worker: :class:`Kept`)."""
        return Held(value) if self.workers == 1 else Kept(uuid.uuid4().hex, value)

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """``fn(item)`` for each item, in the items' order.

        Raises
        ------
        WorkerDiedError
            A worker process died (the results yielded before are unaffected; the pool is
            replaced on the next call).
        """
        if self.workers == 1:
            for item in items:
                yield fn(item)
            return
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.workers, initializer=_ignore_sigint)
        pool = self._pool
        pending: deque[Future[R]] = deque()
        try:
            for item in items:
                pending.append(pool.submit(fn, item))
                if len(pending) >= IN_FLIGHT_PER_WORKER * self.workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        except BrokenProcessPool:
            self._pool = None
            raise WorkerDiedError("a worker process died (killed or out of memory); the results written so far "
                                  "are kept") from None
        except BaseException:
            # Ctrl-C or an abandoned generator: nothing queued may run after the caller stopped
            for future in pending:
                future.cancel()
            raise

    def close(self) -> None:
        """Shut the pool down (waiting for the running tasks, cancelling the queued ones)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def ordered_map(fn: Callable[[T], R], items: Iterable[T], workers: int = 1) -> Iterator[R]:
    """``fn(item)`` for each item in order, on a :class:`LocalExecutor` of ``workers`` that is closed after.

    Raises
    ------
    Sim2RealError
        ``workers`` < 1.
    WorkerDiedError
        A worker process died (the results yielded before are unaffected).
    """
    executor = LocalExecutor(workers)
    try:
        yield from executor.map(fn, items)
    finally:
        executor.close()

"""The interface every executor implements, and the handle of data sent to workers once.

An executor runs ``fn(item)`` for many items and yields the results **in the items' order**,
whatever runs them (this process, local worker processes, a Ray cluster), so a caller that
writes each result as it arrives writes the same file with any executor. Data that many
tasks read (a fit's trials, every iteration) is handed over once with :meth:`Executor.share`;
tasks carry the returned :class:`Shared` handle and call :meth:`Shared.get` in the worker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")
T_co = TypeVar("T_co", covariant=True)


class Shared(Protocol[T_co]):
    """A handle to data sent to the workers once; :meth:`get` in a task returns the data."""

    def get(self) -> T_co:
        """The shared object (in a worker: its copy)."""
        ...


@dataclass(frozen=True)
class Held(Generic[T]):
    """:class:`Shared` for executors without an object store: the object itself travels with each task."""

    value: T

    def get(self) -> T:
        """The object."""
        return self.value


class Executor(Protocol):
    """Runs per-trial work; results come back in the items' order.

    Implementations: :class:`~sim2real.execution.local.LocalExecutor` (this process or local
    worker processes) and :class:`~sim2real.execution.raycluster.RayExecutor` (a local Ray
    runtime or an existing cluster). Open them with :func:`~sim2real.execution.registry.open_executor`.
    """

    #: What runs the tasks, for logs and fit.json, e.g. ``"local, 2 worker processes"``.
    label: str
    #: How many tasks run at once (worker processes, a cluster's CPUs; 1 in this process): a caller
    #: with many small tasks groups them so that each worker gets a few large ones.
    parallelism: int

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """``fn(item)`` for each item, in the items' order.

        ``fn`` must be a top-level (importable) function and the items picklable whenever the
        work leaves this process. A bounded number of tasks is in flight at a time.
        """
        ...

    def share(self, value: T) -> Shared[T]:
        """Hand ``value`` to the workers once; tasks carry the handle."""
        ...

    def close(self) -> None:
        """Stop the workers this executor started (idempotent)."""
        ...

"""Per-trial work as independent tasks, run in this process or in a pool of worker processes.

A :class:`TrialTask` carries everything one trial's residuals need (picklable: arrays,
a parameter set, names, the residual spec), and :func:`run_task` is a plain top-level
function, so any executor with ``map(fn, iterable)`` — a ``concurrent.futures`` pool here,
a cluster executor later — can run them. A task that fails returns a :class:`TaskFailure`
(the trial and a one-line reason) instead of raising, so one trial cannot take the others
down with it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from sim2real.errors import Sim2RealError
from sim2real.params import ParameterSet
from sim2real.sysid.data import TrialData
from sim2real.sysid.residuals import ResidualSpec, TrialResiduals, trial_residuals


@dataclass(frozen=True)
class TrialTask:
    """Inputs of one trial's residual evaluation."""

    data: TrialData
    params: ParameterSet
    grad_names: tuple[str, ...]
    spec: ResidualSpec


@dataclass(frozen=True)
class TaskFailure:
    """A task that raised: the trial's name and the reason in one line."""

    name: str
    reason: str


def one_line(err: BaseException) -> str:
    """An exception as one line; unexpected types (not :class:`Sim2RealError`) carry their class name."""
    text = " ".join(str(err).split())
    if isinstance(err, Sim2RealError):
        return text or type(err).__name__
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def run_task(task: TrialTask) -> TrialResiduals | TaskFailure:
    """Evaluate one task (the unit of work handed to executors); failures are returned, not raised."""
    try:
        return trial_residuals(task.data, task.params, task.grad_names, task.spec)
    except Exception as err:  # one trial's failure of any kind must not end the others
        return TaskFailure(task.data.name, one_line(err))


class MapExecutor(Protocol):
    """Anything with ``map(fn, iterable)`` returning results in order."""

    def map(self, fn: Callable[..., Any], *iterables: Iterable[Any]) -> Iterable[Any]:
        """Apply ``fn`` to the items, results in order (like ``concurrent.futures.Executor.map``)."""
        ...


class InlineExecutor:
    """Runs tasks one after another in this process."""

    def map(self, fn: Callable[..., Any], *iterables: Iterable[Any]) -> Iterable[Any]:
        """Apply ``fn`` to the items one after another."""
        return map(fn, *iterables)


@contextlib.contextmanager
def make_executor(workers: int) -> Iterator[MapExecutor | Executor]:
    """An executor for ``workers`` processes (1: inline), shut down on exit.

    Raises
    ------
    Sim2RealError
        If ``workers`` < 1.
    """
    if workers < 1:
        raise Sim2RealError(f"--workers must be at least 1, got {workers}")
    if workers == 1:
        yield InlineExecutor()
        return
    pool = ProcessPoolExecutor(max_workers=workers)
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def evaluate_tasks(executor: MapExecutor | Executor,
                   tasks: Sequence[TrialTask]) -> list[TrialResiduals | TaskFailure]:
    """Run ``tasks`` on ``executor``; results (or failures) in task order."""
    return list(executor.map(run_task, tasks))

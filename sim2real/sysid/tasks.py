"""Per-trial work as independent tasks, run in this process or in a pool of worker processes.

A :class:`TrialTask` carries everything one trial's residuals need (picklable: arrays,
a parameter set, names, the residual spec), and :func:`run_task` is a plain top-level
function, so any executor with ``map(fn, iterable)`` — a ``concurrent.futures`` pool here,
a cluster executor later — can run them.
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


def run_task(task: TrialTask) -> TrialResiduals:
    """Evaluate one task (the unit of work handed to executors)."""
    return trial_residuals(task.data, task.params, task.grad_names, task.spec)


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


def evaluate_tasks(executor: MapExecutor | Executor, tasks: Sequence[TrialTask]) -> list[TrialResiduals]:
    """Run ``tasks`` on ``executor``; results in task order."""
    return list(executor.map(run_task, tasks))

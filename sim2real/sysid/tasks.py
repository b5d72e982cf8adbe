"""Per-trial work as independent tasks, run by any executor.

A :class:`TrialTask` carries everything one trial's residuals need (picklable: a handle to
the trial's data, shared with the workers once per fit, a parameter set, names, the residual
spec), and :func:`run_task` is a plain top-level function, so any
:class:`~sim2real.execution.Executor` (this process, local processes, Ray) can run them. A
task that fails returns a :class:`TaskFailure` (the trial and a one-line reason) instead of
raising, so one trial cannot take the others down with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sim2real.errors import Sim2RealError
from sim2real.execution import Executor, Shared
from sim2real.params import ParameterSet
from sim2real.sysid.data import TrialData
from sim2real.sysid.residuals import ResidualSpec, TrialResiduals, trial_residuals


@dataclass(frozen=True)
class TrialTask:
    """Inputs of one trial's residual evaluation."""

    data: Shared[TrialData]
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
    data = task.data.get()
    try:
        return trial_residuals(data, task.params, task.grad_names, task.spec)
    except Exception as err:  # one trial's failure of any kind must not end the others
        return TaskFailure(data.name, one_line(err))


def evaluate_tasks(executor: Executor, tasks: Sequence[TrialTask]) -> list[TrialResiduals | TaskFailure]:
    """Run ``tasks`` on ``executor``; results (or failures) in task order."""
    return list(executor.map(run_task, tasks))

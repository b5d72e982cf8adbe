"""Trial jackknife of a fit: refit without each trial, and widen intervals the refits say are too narrow.

A fit's standard deviations come from the local curvature of its cost (and the trial-clustered
scatter of its gradients, :mod:`sim2real.sysid.uncertainty.covariance`). Where the cost has kinks — whole
trials in which a push tips the box or not, contact events that move by a step — the curvature at
the minimum says little about where the minimum would lie with other trials: on three noisy probe
pushes the box's centre-of-mass height missed its hidden value by a median 14 standard deviations.
The jackknife asks the data directly: fit again without each trial in turn, from the same start,
and take the spread of those fits, ``sqrt((G − 1)/G Σ (θ₋ₖ − mean)²)`` over ``G`` trials, with
Student's t (``G − 1`` degrees of freedom) for the 95 % interval. It costs ``G`` more fits, which
run as tasks of the fit's executor (each refit evaluates its trials in its worker), so with
``W`` workers the refits take about ``G / W`` fits of wall time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import stats

from sim2real.errors import Sim2RealError
from sim2real.execution import Executor, LocalExecutor, Shared
from sim2real.sysid.problem import FitProblem
from sim2real.sysid.uncertainty.covariance import measured_jackknife


@dataclass(frozen=True)
class RefitJackknife:
    """Leave-one-trial-out refits and their spread.

    Attributes
    ----------
    trials : tuple of str
        The trial left out by each refit, in order.
    values : dict of str to list of float or None
        Each refit's value per registry name (None where that refit failed).
    std : dict of str to float
        Jackknife standard deviation per name (SI unit of the parameter).
    ci95_halfwidth : dict of str to float
        Student's t (``G − 1`` dof, ``G`` successful refits) times ``std``.
    failures : tuple of str
        Why refits failed, one line each.
    """

    trials: tuple[str, ...]
    values: dict[str, list[float | None]]
    std: dict[str, float]
    ci95_halfwidth: dict[str, float]
    failures: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """fit.json ``data.uncertainty.refit_jackknife``."""
        return {"left_out": list(self.trials), "values": self.values, "std": self.std,
                "ci95_halfwidth": self.ci95_halfwidth, "failures": list(self.failures)}


#: One refit: ``problem -> FitResult`` (anything with ``values``) with the fit's own settings.
Refit = Callable[[Any], Any]


@dataclass(frozen=True)
class RefitTask:
    """One leave-one-out refit, for an executor: the fit's problem (shared once) and the trial left out.

    ``refit`` must be picklable (a top-level function or a :func:`functools.partial` of one)
    whenever the executor runs tasks outside this process.
    """

    problem: Shared[Any]
    left_out: int
    refit: Refit


def run_refit(task: RefitTask) -> dict[str, float] | str:
    """Refit ``problem.without(left_out)`` (a position): the refit's values by registry name, or why it failed."""
    try:
        result = task.refit(task.problem.get().without(task.left_out))
    except Sim2RealError as err:
        return " ".join(str(err).split())
    return {name: float(value) for name, value in result.values.items()}


def refit_jackknife(problem: FitProblem, names: Sequence[str], refit: Refit,
                    log: Callable[[str], None] | None = None,
                    executor: Executor | None = None) -> RefitJackknife | None:
    """Refit without each trial and measure the spread of the refits.

    Parameters
    ----------
    problem : FitProblem
        The fit's problem: its trials (at least two) are left out one at a time
        (:meth:`~sim2real.sysid.problem.fit_problem.FitProblem.without`).
    names : sequence of str
        Registry names to measure.
    refit : callable
        ``problem -> FitResult`` with the fit's own settings.
    log : callable, optional
        Receives one line per refit, as each finishes (in the trials' order).
    executor : Executor, optional
        Runs the ``G`` refits as tasks (default: one after another in this process). The
        results are the same with any executor.

    Returns
    -------
    RefitJackknife or None
        None when fewer than two refits succeeded.
    """
    runner = executor if executor is not None else LocalExecutor(1)
    shared = runner.share(problem)
    records = problem.records
    values: dict[str, list[float | None]] = {name: [] for name in names}
    failures: list[str] = []
    left_out = []
    outcomes = runner.map(run_refit, [RefitTask(shared, k, refit) for k in range(len(records))])
    for k, (record, outcome) in enumerate(zip(records, outcomes, strict=True)):
        left_out.append(record.name)
        if log is not None:
            log(f"jackknife: refit {k + 1}/{len(records)} without trial '{record.name}'"
                + (f": failed ({outcome})" if isinstance(outcome, str) else ""))
        if isinstance(outcome, str):
            failures.append(f"without '{record.name}': {outcome}")
        for name in names:  # a refit without an object's only trial has no value for that object
            values[name].append(None if isinstance(outcome, str) else outcome.get(name))
    std, half = {}, {}
    for name in names:
        sample = np.array([v for v in values[name] if v is not None], dtype=float)
        count = sample.shape[0]
        if count < 2:
            continue
        std[name] = float(np.sqrt((count - 1) / count * np.sum((sample - sample.mean()) ** 2)))
        half[name] = float(stats.t.ppf(0.975, count - 1)) * std[name]
    if not std:
        return None
    return RefitJackknife(tuple(left_out), values, std, half, tuple(failures))


def with_refit_jackknife(result: Any, jackknife: RefitJackknife) -> Any:
    """``result`` (a FitResult) with each determined parameter's interval widened to the jackknife's.

    The fitted values stay. The refits replace the linearized jackknife (:func:`measured_jackknife`):
    where their standard deviation exceeds the sandwich's, the 95 % interval becomes the value ± the
    jackknife's Student-t half-width (clipped to the fit's bounds); parameters the data do not
    determine keep no standard deviation.
    ``data["uncertainty"]`` records the refits and names the method per parameter.
    """
    uncertainty = dict(result.data.get("uncertainty", {}))
    uncertainty["refit_jackknife"] = jackknife.as_dict()
    std, ci95 = dict(result.std), dict(result.ci95)
    widened: list[str] = []
    kept: list[str] = []
    refits = len(jackknife.trials) - len(jackknife.failures)
    dof = dict(uncertainty.get("dof", {}))
    for name, jk_std in jackknife.std.items():
        if std.get(name) is None:
            continue
        std[name], ci95[name], wider = measured_jackknife(result, name, jk_std, jackknife.ci95_halfwidth[name])
        (widened if wider else kept).append(name)
        if wider:  # the interval is the jackknife's now, with its degrees of freedom
            dof[name] = float(refits - 1)
    uncertainty["dof"] = dof
    text = (f"trial jackknife of {refits} leave-one-out refits (Student's t with {refits - 1} dof) in place of "
            "the linearized one")
    if widened:
        text += f", wider than the sandwich for {', '.join(widened)}"
    if kept:
        text += f", not wider than the sandwich for {', '.join(kept)}"
    uncertainty["method"] = f"{uncertainty.get('method', '')}; {text}"
    return replace(result, std=std, ci95=ci95, data={**result.data, "uncertainty": uncertainty})


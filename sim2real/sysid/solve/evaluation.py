"""The fit's view of many trials: one residual vector and Jacobian, evaluated trial by trial.

:class:`FitEvaluator` is the callable the optimizer minimises. It keeps every trial that
works and leaves out (and names) the ones whose simulation fails at the start values. Rows
that depend on a degraded engine step at the start values are left out for the whole fit
(the row set must not change between iterations, or costs would not compare); a trial point
whose evaluation fails, or degrades a step whose rows are still in the fit, is rejected by
raising :class:`Sim2RealError` (the optimizer treats it like a cost increase and notes the
message), or in strict mode ends the fit (:class:`FitAbortedError`).

:class:`HeldOut` evaluates held-out (validation) trials without gradients, for the cost the
fit does not see.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import stats

from sim2real.errors import InputError, Sim2RealError, SolverError
from sim2real.execution import Executor, Shared
from sim2real.params import ParameterSet
from sim2real.sim import SolveSummary
from sim2real.sysid.problem import ColumnMap, TrialData, TrialFailure
from sim2real.sysid.residuals import (
    MAX_HARD_STEPS,
    ResidualSpec,
    TaskFailure,
    TrialResiduals,
    TrialTask,
    evaluate_tasks,
)
from sim2real.sysid.solve.optimizer import FitAbortedError, TraceEntry, loss_weights

#: ``(x (p,), object label or None) -> {registry name: value}`` for every name a fit involves, as a
#: trial of that object is simulated (per-object parameters take the object's unknown).
Expand = Callable[[np.ndarray, str | None], dict[str, float]]
#: A trial's Jacobian columns (one per group of tied names) ``(m, g)`` and its object -> per unknown ``(m, p)``.
Place = Callable[[np.ndarray, str | None], np.ndarray]


def merge_summaries(results: Sequence[TrialResiduals]) -> SolveSummary | None:
    """The outcome tally over several trials' evaluations (None when none reports one)."""
    total: SolveSummary | None = None
    for res in results:
        if res.solve is not None:
            total = res.solve if total is None else total.merged(res.solve)
    return total


class FitEvaluator:
    """Stacked residuals ``r (m,)`` and Jacobian ``J (m, p)`` of the fitted trials at ``x (p,)``.

    Parameters
    ----------
    executor : Executor
        Runs the per-trial tasks.
    trials : sequence of TrialData
        Candidate trials (those failing at the start values are left out by :meth:`start`).
    start : ParameterSet
        Values of everything not free.
    expand : callable
        ``x -> {name: value}`` for every involved registry name.
    place_columns : callable
        A trial's Jacobian columns (one per group of tied names) → per unknown.
    columns : ColumnMap
        The registry names differentiated and the group (the trial's Jacobian column) of each: tied names are
        differentiated together, along the direction that moves them all (one engine direction instead of one
        per name).
    spec : ResidualSpec
        How trials are compared (its ``strict`` ends the fit at the first failure).
    """

    def __init__(self, executor: Executor, trials: Sequence[TrialData], start: ParameterSet,
                 expand: Expand, place_columns: Place, columns: ColumnMap, spec: ResidualSpec) -> None:
        self._executor = executor
        self.trials: list[TrialData] = list(trials)
        self._shared = {id(t): executor.share(t) for t in self.trials}  # sent to the workers once
        self._start = start
        self._expand = expand
        self._place = place_columns
        self._columns = columns
        self._spec = spec
        self._masks: list[np.ndarray] = []
        self._x0: np.ndarray | None = None
        self._cached: tuple[np.ndarray, np.ndarray] | None = None
        self._last: list[TrialResiduals] = []
        self.start_results: list[TrialResiduals] = []
        self.final_results: list[TrialResiduals] = []
        self._hard: dict[str, list[Any]] = {}

    @property
    def shared_trials(self) -> list[Shared[TrialData]]:
        """Handles of :attr:`trials` as shared with the executor's workers (in order)."""
        return [self._shared[id(t)] for t in self.trials]

    def _run(self, x: np.ndarray, trials: Sequence[TrialData]) -> list[TrialResiduals | TaskFailure]:
        params = {obj: self._start.replace(self._expand(x, obj)) for obj in {t.object_name for t in trials}}
        return evaluate_tasks(self._executor, [TrialTask(self._shared[id(t)], params[t.object_name], self._spec,
                                                         self._columns) for t in trials])

    def _keep_hard_steps(self, results: Sequence[TrialResiduals]) -> None:
        for res in results:
            kept = self._hard.setdefault(res.name, [])
            kept.extend(res.hard_steps[:MAX_HARD_STEPS - len(kept)])

    def start(self, x0: np.ndarray) -> list[TrialFailure]:
        """Evaluate every trial at ``x0``; leave out (and return) the ones that fail.

        Raises
        ------
        Sim2RealError
            In strict mode at the first failure; otherwise when no trial is left or the
            remaining trials give no residual rows.
        """
        results = self._run(x0, self.trials)
        failures, kept, kept_results = [], [], []
        for trial, res in zip(self.trials, results, strict=True):
            if isinstance(res, TaskFailure):
                if self._spec.strict:
                    raise Sim2RealError(f"at the start values: {res.reason}", option=res.option)
                failures.append(TrialFailure(trial.name, f"at the start values: {res.reason}", stage="start",
                                             option=res.option))
            else:
                kept.append(trial)
                kept_results.append(res)
        if not kept:
            return failures
        self.trials, self.start_results = kept, kept_results
        self._masks = [res.dropped_mask for res in kept_results]
        self._keep_hard_steps(kept_results)
        self._x0 = np.array(x0, dtype=float)
        self._cached = self._stack(kept_results)
        if self._cached[0].shape[0] == 0:
            raise InputError("the trials give no residual rows to fit (check the residual weights, and that the "
                             "trials hold the topics those residual groups compare: box poses, joint states, "
                             "commands)", option="weights")
        self._last = self.final_results = kept_results
        return failures

    @property
    def dropped_per_trial(self) -> list[int]:
        """Rows left out per kept trial because they depend on a degraded step at the start values."""
        return [int(mask.sum()) for mask in self._masks]

    @property
    def masks(self) -> list[np.ndarray]:
        """Rows left out per kept trial (degraded solver steps at the start values), full-length masks."""
        return list(self._masks)

    @property
    def rows_per_trial(self) -> list[int]:
        """Residual rows in the fit per kept trial, in the order of the stacked rows."""
        return [int((~mask).sum()) for mask in self._masks]

    @property
    def dropped_rows(self) -> int:
        """Rows left out in all (see :attr:`dropped_per_trial`)."""
        return int(sum(self.dropped_per_trial))

    @property
    def hard_steps(self) -> list[tuple[str, Any]]:
        """``(trial name, HardStep)`` pairs met in any evaluation, at most 20 per trial."""
        return [(name, hard) for name, steps in self._hard.items() for hard in steps]

    def _stack(self, results: Sequence[TrialResiduals]) -> tuple[np.ndarray, np.ndarray]:
        keep = [~mask for mask in self._masks]
        r = np.concatenate([res.residuals[k] for res, k in zip(results, keep, strict=True)])
        J = np.concatenate([self._place(res.jacobian[k], trial.object_name)  # type: ignore[index]
                            for res, k, trial in zip(results, keep, self.trials, strict=True)])
        return r, J

    def _check(self, results: Sequence[TrialResiduals | TaskFailure]) -> list[TrialResiduals]:
        """Raise the reason a trial point must be rejected (or the fit aborted), else the results."""
        for res in results:
            if isinstance(res, TaskFailure):
                if self._spec.strict:
                    raise FitAbortedError(res.reason, option=res.option)
                raise Sim2RealError(res.reason, option=res.option)
        checked = [res for res in results if isinstance(res, TrialResiduals)]
        self._keep_hard_steps(checked)
        for res, mask in zip(checked, self._masks, strict=True):
            if res.residuals.shape[0] != mask.shape[0]:
                raise Sim2RealError(f"trial '{res.name}': {res.residuals.shape[0]} residual rows instead of "
                                    f"{mask.shape[0]}")
            new = res.dropped_mask & ~mask
            if new.any():
                raise SolverError(f"trial '{res.name}': degraded solver step(s) ({res.degraded_steps} in all) "
                                    f"would affect {int(new.sum())} residual row(s) that are in the fit")
        return checked

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``r (m,)`` and ``J (m, p)`` at ``x``; the cached start evaluation at ``x0``."""
        if self._cached is not None and self._x0 is not None and np.array_equal(x, self._x0):
            self._last = self.start_results
            return self._cached
        results = self._check(self._run(x, self.trials))
        self._last = results
        return self._stack(results)

    def on_entry(self, entry: TraceEntry) -> None:
        """Optimizer progress hook: an accepted iterate's evaluation becomes the final one."""
        if entry.accepted:
            self.final_results = self._last

    def settle(self, x: np.ndarray) -> None:
        """Make the evaluation at ``x (p,)`` the final one (an optimum reached from another start).

        Raises
        ------
        Sim2RealError
            The evaluation at ``x`` fails (it succeeded when the optimizer accepted ``x``).
        """
        self(np.asarray(x, dtype=float))
        self.final_results = self._last

    def final_rows(self) -> list[TrialResiduals]:
        """Per-trial results at the accepted solution with the start-dropped rows removed."""
        return [TrialResiduals(res.name, res.residuals[~mask], None, res.groups[~mask], (), None, res.solve)
                for res, mask in zip(self.final_results, self._masks, strict=True)]

    def first_rows(self) -> list[TrialResiduals]:
        """Per-trial results at the start values with the dropped rows removed."""
        return [TrialResiduals(res.name, res.residuals[~mask], None, res.groups[~mask], (), None, res.solve)
                for res, mask in zip(self.start_results, self._masks, strict=True)]


#: A held-out figure must rise by more than this fraction of its earlier value to count.
RISE_TOLERANCE = 0.05


def meaningful_rise(before: np.ndarray, after: np.ndarray, tolerance: float = RISE_TOLERANCE,
                    floor: float = 0.0) -> str | None:
    """Whether per-trial held-out figures rose meaningfully from ``before`` to ``after``.

    Parameters
    ----------
    before, after : ndarray, shape (n,)
        The same held-out trials' costs or errors at two points of a fit.
    tolerance : float
        The total must rise by more than this fraction.
    floor : float
        ... and by more than this per trial on average (the figures' unit; e.g. the
        measurement noise of a position error).

    Returns
    -------
    str or None
        None when the figures did not rise meaningfully; else the evidence in words (empty
        for one trial). With several trials the mean rise must also exceed the two-sided 95 %
        Student-t bound of a paired comparison (n - 1 degrees of freedom), so that a few trials
        moving either way, or a rise inside the trial-to-trial scatter, is not read as a failure
        to generalise.
    """
    before, after = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    if not (np.all(np.isfinite(before)) and np.all(np.isfinite(after))):
        return None
    if float(np.sum(after) - np.sum(before)) <= max(tolerance * float(np.sum(before)), floor * before.shape[0]):
        return None
    rise = after - before
    if rise.shape[0] < 2:
        return ""
    spread = float(np.std(rise, ddof=1)) / np.sqrt(rise.shape[0])
    t = float(np.mean(rise)) / spread if spread > 0.0 else float("inf")
    bound = float(stats.t.ppf(0.975, rise.shape[0] - 1))
    if t <= bound:
        return None
    return f" ({int(np.sum(rise > 0))} of {rise.shape[0]} held-out trials rose; mean rise {t:.1f} standard errors)"


class HeldOut:
    """Cost of held-out trials (no gradients), tracked along the fit.

    Parameters
    ----------
    executor : Executor
    trials : sequence of TrialData
    start : ParameterSet
    expand : callable
        ``x -> {name: value}``.
    spec : ResidualSpec
    loss, loss_scale : str, float
        The fit's loss (:func:`~sim2real.sysid.solve.optimizer.loss_weights`).
    """

    def __init__(self, executor: Executor, trials: Sequence[TrialData], start: ParameterSet,
                 expand: Expand, spec: ResidualSpec, loss: str, loss_scale: float) -> None:
        self._executor = executor
        self.trials = list(trials)
        self._shared = {id(t): executor.share(t) for t in self.trials}
        self._start = start
        self._expand = expand
        self._spec = spec
        self._loss = (loss, loss_scale)
        #: ``(iteration, cost)`` at the start and at every accepted iterate.
        self.costs: list[tuple[int, float]] = []
        #: Cost per held-out trial ``(n,)`` at each iteration in :attr:`costs`.
        self.trial_costs: dict[int, np.ndarray] = {}
        self.notes: list[str] = []
        #: Evaluations at the start values and at the last accepted iterate (failed ones excluded).
        self.start_results: list[TrialResiduals] = []
        self.final_results: list[TrialResiduals] = []

    def _cost(self, x: np.ndarray, results: Sequence[TrialResiduals | TaskFailure], iteration: int) -> float:
        """The held-out cost over every row, those on degraded steps included (a note counts them): the
        iterates are compared on the same rows, so a degraded step cannot lower the cost by removing some."""
        per_trial, degraded = [], 0
        for res in results:
            if isinstance(res, TaskFailure):
                self.notes.append(f"iteration {iteration}: {res.reason}")
                return float("nan")
            per_trial.append(loss_weights(res.residuals, *self._loss)[0])
            degraded += int(np.sum(res.dropped_mask))
        if degraded:
            self.notes.append(f"iteration {iteration}: {degraded} held-out residual rows rest on degraded solver "
                              "steps (counted in the held-out cost)")
        self.trial_costs[iteration] = np.array(per_trial)
        return float(np.sum(per_trial)) if per_trial else float("nan")

    @property
    def shared_trials(self) -> list[Shared[TrialData]]:
        """Handles of :attr:`trials` as shared with the executor's workers (in order)."""
        return [self._shared[id(t)] for t in self.trials]

    def _run(self, x: np.ndarray) -> list[TrialResiduals | TaskFailure]:
        params = {obj: self._start.replace(self._expand(x, obj)) for obj in {t.object_name for t in self.trials}}
        return evaluate_tasks(self._executor, [TrialTask(self._shared[id(t)], params[t.object_name], self._spec)
                                               for t in self.trials])

    def start(self, x0: np.ndarray) -> list[TrialFailure]:
        """Evaluate at ``x0``, leave out (and return) the held-out trials that fail there."""
        results = self._run(x0)
        failures = [TrialFailure(t.name, f"held-out trial at the start values: {r.reason}", stage="validation",
                                 option=r.option)
                    for t, r in zip(self.trials, results, strict=True) if isinstance(r, TaskFailure)]
        kept = [(t, r) for t, r in zip(self.trials, results, strict=True) if isinstance(r, TrialResiduals)]
        self.trials = [t for t, _ in kept]
        self.start_results = self.final_results = [r for _, r in kept]
        if kept:
            self.costs.append((0, self._cost(x0, self.start_results, 0)))
        return failures

    def on_entry(self, entry: TraceEntry) -> None:
        """Optimizer progress hook: the held-out cost at every accepted iterate."""
        if entry.accepted and entry.iteration > 0 and self.trials:
            x = np.array(entry.x)
            results = self._run(x)
            self.costs.append((entry.iteration, self._cost(x, results, entry.iteration)))
            if not any(isinstance(r, TaskFailure) for r in results):
                self.final_results = [r for r in results if isinstance(r, TrialResiduals)]

    def restart_at(self, x: np.ndarray, iteration: int) -> None:
        """Track the fit as ending at ``x (p,)`` after ``iteration`` (an optimum from another start):
        the costs along the given start's path are dropped, the start values' cost is kept."""
        start = [(i, c) for i, c in self.costs if i == 0]
        self.costs = start
        self.trial_costs = {i: c for i, c in self.trial_costs.items() if i == 0}
        self.final_results = list(self.start_results)
        if self.trials and start:
            results = self._run(np.asarray(x, dtype=float))
            self.costs.append((iteration, self._cost(x, results, iteration)))
            if not any(isinstance(r, TaskFailure) for r in results):
                self.final_results = [r for r in results if isinstance(r, TrialResiduals)]

    def rising(self) -> str | None:
        """A one-line problem when the held-out cost at the fitted values is meaningfully above the
        one at the start values (:func:`meaningful_rise`: by more than 5 %, and beyond the
        trial-to-trial scatter).

        Start against end, not the lowest cost along the way: with few parameters a held-out cost
        that dips mid-way and settles higher says the held-out trials prefer slightly other values
        (seen: two held-out pushes whose loop latency differed by 2 ms), not that the fit stopped
        generalising; picking the lowest of many noisy points would also flag rises that are not there.
        """
        finite = [(i, c) for i, c in self.costs if np.isfinite(c)]
        if len(finite) < 2 or finite[0][0] != 0:
            return None
        (_, first), (last_iteration, last) = finite[0], finite[-1]
        verdict = meaningful_rise(self.trial_costs[0], self.trial_costs[last_iteration])
        if verdict is None:
            return None
        return (f"held-out cost rose: {first:.6g} at the start values -> {last:.6g} at iteration {last_iteration}"
                f"{verdict} (the fit does not generalise to the validation trials)")

    def as_dict(self) -> dict[str, Any]:
        """fit.json ``validation``: trials, costs per iteration, notes."""
        return {"trials": [t.name for t in self.trials],
                "cost": [{"iteration": i, "cost": c} for i, c in self.costs], "notes": list(self.notes)}

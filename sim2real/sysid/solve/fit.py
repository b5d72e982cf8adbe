"""Fit simulator parameters to recorded trials: :func:`fit_trials` and its :class:`FitResult`.

The unknowns (free names, tied groups, per-object values, bounds) are set up in
:mod:`sim2real.sysid.problem.free`; the result and its verdicts live in :mod:`sim2real.sysid.solve.result`.
Residuals and Jacobians of each trial are computed independently (one task per trial, see
:mod:`sim2real.sysid.residuals.tasks`), stacked (:mod:`sim2real.sysid.solve.evaluation`), and minimised by
:func:`levenberg_marquardt`.

Trials that lack the inputs the fit needs, or whose simulation fails at the start values,
are left out and named (:attr:`FitResult.failures`); the fit runs on the rest. Small, cheap
fits also run from a few other starts (:mod:`sim2real.sysid.solve.starts`). The result says whether
it can be trusted: :attr:`FitResult.status` and :attr:`FitResult.problems`
(:mod:`sim2real.sysid.uncertainty.status`), formed last by :func:`with_verdicts` from the standard
deviations and intervals the fit reports (after any jackknife).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim2real.engines import engine as engine_entry
from sim2real.errors import InputError, Sim2RealError
from sim2real.execution import Executor, open_executor
from sim2real.params import ParameterSet
from sim2real.sysid.files import trial_objects
from sim2real.sysid.prediction import horizon_rms, predict, prediction_block, rising_metrics
from sim2real.sysid.problem import (
    FitProblem,
    FreeParameters,
    TrialData,
    TrialFailure,
    Unknowns,
    describe_pusher,
    param_scale,
    prepare_trial,
    raise_all_failed,
    unknowns,
)
from sim2real.sysid.residuals import ResidualSpec, TrialResiduals, Weights, available_gradients, one_line
from sim2real.sysid.solve.evaluation import FitEvaluator, HeldOut, merge_summaries
from sim2real.sysid.solve.optimizer import (
    STOP_MAX_ITERATIONS,
    LMResult,
    LMSettings,
    Progress,
    TraceEntry,
    levenberg_marquardt,
)
from sim2real.sysid.solve.result import FitResult, with_verdicts
from sim2real.sysid.solve.starts import (
    AUTO_MAX_PARAMETERS,
    AUTO_MAX_STEPS,
    AUTO_STARTS,
    StartsVerdict,
    compare_starts,
    default_starts,
    run_starts,
    start_points,
    starts_warnings,
)
from sim2real.sysid.uncertainty import (
    Uncertainty,
    bound_problems,
    corner_problem,
    fit_problems,
    fit_status,
    refit_jackknife,
    summarize_uncertainty,
    with_refit_jackknife,
)
from sim2real.trials import TrialRecord


def prepare_trials(records: Sequence[TrialRecord], params: ParameterSet, platform: str = "auto") -> list[TrialData]:
    """:func:`prepare_trial` for every record on the grid of ``params['sim.dt']`` (raises on the first failure)."""
    if not records:
        raise InputError("no trials to fit")
    return [prepare_trial(r, float(params["sim.dt"]), platform) for r in records]


@dataclass(frozen=True)
class _Prepared:
    """Trials ready to fit, with their mode and pusher source (code and words), and the ones left out."""

    trials: list[TrialData]
    sources: list[str | None]
    modes: list[str]
    pusher_sources: list[str]
    pushers: list[str]
    failures: list[TrialFailure]


def _prepare(records: Sequence[TrialRecord], sources: Sequence[str | None], params: ParameterSet, platform: str,
             spec_: ResidualSpec, names: tuple[str, ...], stage: str) -> _Prepared:
    """Resample every record and check it has what ``spec_`` needs; a trial that does not is left out.

    Raises
    ------
    Sim2RealError
        A free parameter has no simulator gradient for a trial (bad request, not bad data).
    """
    out = _Prepared([], [], [], [], [], [])
    for record, source in zip(records, sources, strict=True):
        try:
            trial = prepare_trial(record, float(params["sim.dt"]), platform)
            mode = spec_.resolved_mode(trial)
            pusher_source = spec_.pusher_source(trial)
        except Sim2RealError as err:
            out.failures.append(TrialFailure(record.name, one_line(err), source, stage, err.option))
            continue
        available = available_gradients(trial.kind, spec_.horizon, mode, spec_.engine)
        missing = [n for n in names if n not in available]
        if missing:
            raise InputError(f"trial '{trial.name}' ({trial.kind} trial, horizon {spec_.label}"
                                f"{'' if mode == 'segments' else ', ' + mode + ' mode'}): no simulator gradient "
                                f"for {', '.join(missing)}")
        out.trials.append(trial)
        out.sources.append(source)
        out.modes.append(mode)
        out.pusher_sources.append(pusher_source)
        out.pushers.append(describe_pusher(trial, pusher_source))
    return out


def recording_warnings(records: Sequence[TrialRecord]) -> list[str]:
    """One warning per trial recorded incomplete or with a starved control loop (its data are kept)."""
    from sim2real.trials.coverage import starved_platforms

    warnings = []
    for record in records:
        if not record.complete:
            reason = record.info.note or "no reason given"
            warnings.append(f"trial '{record.name}' was recorded incomplete ({reason}); its residuals end where "
                            "its streams do")
        for ns, description in starved_platforms(record.meta).items():
            warnings.append(f"trial '{record.name}': the {ns} control loop was starved ({description}); its "
                            "push is not the one the PD law describes")
    return warnings


def usable_trials(records: Sequence[TrialRecord], params: ParameterSet, spec_: ResidualSpec,
                  names: Sequence[str], platform: str = "auto") -> tuple[list[TrialData], list[TrialFailure]]:
    """The records that :func:`fit_trials` can use for ``spec_`` and free ``names``, and the ones left out.

    Raises
    ------
    Sim2RealError
        A free parameter has no simulator gradient for a trial.
    """
    prepared = _prepare(records, [None] * len(records), params, platform, spec_, tuple(names), "inputs")
    return prepared.trials, prepared.failures


def _log_inputs(log: Callable[[str], None], prepared: _Prepared) -> None:
    """One line per distinct pusher source (and mode), naming its trials."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for k, trial in enumerate(prepared.trials):
        key = (prepared.modes[k], prepared.pusher_sources[k], prepared.pushers[k])
        groups.setdefault(key, []).append(trial.name)
    for (mode, source, pusher), names in groups.items():
        listed = ", ".join(names[:6]) + (f", ... ({len(names)} trials)" if len(names) > 6 else "")
        how = "" if mode == "segments" else f"{mode} mode, "
        log(f"{how}{'no pusher (box only)' if source == 'none' else 'pusher from ' + pusher}: {listed}")


def _trials_info(prepared: _Prepared, first: Sequence[TrialResiduals], last: Sequence[TrialResiduals],
                 weights: Weights, start_dropped: Sequence[int]) -> list[dict[str, Any]]:
    info = []
    for k, trial in enumerate(prepared.trials):
        solve = last[k].solve
        info.append({
            "name": trial.name, "source": prepared.sources[k], "kind": trial.kind, "steps": trial.steps,
            "dt": trial.dt, "mode": prepared.modes[k], "pusher": prepared.pushers[k],
            "residuals": first[k].counts(), "rms_start": first[k].rms(weights), "rms_final": last[k].rms(weights),
            "dropped_rows": start_dropped[k], "solver": None if solve is None else solve.as_dict(),
        })
    return info


#: Most samples per trial in fit.json ``data.residual_series`` (evenly picked from the trial's grid).
RESIDUAL_SERIES_POINTS = 200


def _residual_series(trials: Sequence[TrialData], modes: Sequence[str], start: Sequence[TrialResiduals],
                     final: Sequence[TrialResiduals], masks: Sequence[np.ndarray],
                     weights: Weights) -> dict[str, Any] | None:
    """fit.json ``data.residual_series``: per trial, the norm of the unweighted residual of one group at
    each grid sample (m for the box position; rad for the joint positions when the fit has no box
    position rows), at the start and the fitted values, against the trial's time (s), at most
    :data:`RESIDUAL_SERIES_POINTS` samples. Rows the fit left out (degraded solver steps) are null.

    Every mode adds one row block per grid sample, consecutive in time: box rows from sample 2
    (teacher-forced segments, box-only rollouts) or 1 (whole trials of the arm or a played-back
    pusher), joint rows from sample 1.
    """
    group = next((g for g in (0, 2) if any(np.any(res.groups == g) for res in start)), None)
    if group is None:
        return None
    width, scale = (3, weights.position) if group == 0 else (6, weights.joint_position)
    out = []
    for trial, mode, first, last, mask in zip(trials, modes, start, final, masks, strict=True):
        series = []
        for res in (first, last):
            rows = res.groups == group
            values = (res.residuals[rows] / scale).reshape(-1, width)
            left_out = (mask | res.dropped_mask)[rows].reshape(-1, width).any(axis=1)
            series.append(np.where(left_out, np.nan, np.linalg.norm(values, axis=1)))
        n = min(series[0].shape[0], series[1].shape[0])
        if n == 0:
            continue
        first_sample = 2 if group == 0 and mode in ("segments", "box") else 1
        first_sample = max(0, min(first_sample, trial.steps + 1 - n))
        pick = np.unique(np.linspace(0, n - 1, min(n, RESIDUAL_SERIES_POINTS)).round().astype(int))
        out.append({"name": trial.name,
                    "t": [round(float(trial.t[first_sample + i] - trial.t[0]), 6) for i in pick],
                    **{when: [None if not np.isfinite(v) else float(f"{v:.4g}") for v in s[pick]]
                       for when, s in zip(("start", "final"), series, strict=True)}})
    return {"group": "box_position" if group == 0 else "joint_position", "unit": "m" if group == 0 else "rad",
            "norm": f"Euclidean norm of the unweighted residual ({width} components) per grid sample",
            "max_points": RESIDUAL_SERIES_POINTS, "trials": out}


def _solver_info(evaluator: FitEvaluator) -> dict[str, Any]:
    start, final = merge_summaries(evaluator.start_results), merge_summaries(evaluator.final_results)
    return {"start": None if start is None else start.as_dict(), "final": None if final is None else final.as_dict()}


def fit_trials(problem: FitProblem, settings: LMSettings | None = None, *, executor: str | Executor = "local",
               workers: int = 1, starts: int | None = None, jackknife: bool = False,
               progress: Progress | None = None, log: Callable[[str], None] | None = None) -> FitResult:
    """Fit the free parameters of ``problem`` to its trials by Gauss-Newton / Levenberg-Marquardt.

    Parameters
    ----------
    problem : FitProblem
        The trials (fitted and held out), start values, free names and ties, bounds and the
        residual spec (:class:`~sim2real.sysid.problem.fit_problem.FitProblem`).
    settings : LMSettings, optional
        Optimizer settings (default :class:`~sim2real.sysid.solve.optimizer.LMSettings`).
    executor : str or Executor
        ``"local"``, ``"ray"`` or ``"ray:ADDRESS"`` (:func:`~sim2real.execution.open_executor`,
        opened after the inputs are checked and closed at the end), or an open executor (kept open).
        Results are the same with any executor.
    workers : int
        Workers of an executor opened here (1 = in this process; the CPUs of a local Ray runtime).
    starts : int, optional
        Optimizer runs from different starts: the given start and ``starts - 1`` others
        (:mod:`sim2real.sysid.solve.starts`; 1 = the given start only). None (default):
        :func:`~sim2real.sysid.solve.starts.default_starts` (a few for small, cheap problems, else 1).
    jackknife : bool
        Also refit ``problem.without(trial)`` for each fitted trial (one more fit per trial) and widen
        each interval to the trial jackknife's where that is wider (:mod:`sim2real.sysid.uncertainty.jackknife`).
    progress : callable, optional
        Called with each optimizer :class:`~sim2real.sysid.solve.optimizer.TraceEntry`.
    log : callable, optional
        Receives one-line progress messages.

    Returns
    -------
    FitResult
        Its ``failures`` name every trial left out; ``status`` and ``problems`` say whether
        the fit can be used.

    Raises
    ------
    Sim2RealError
        Bad free names or bounds, a parameter without gradient for some trial, no trial
        usable (the message names each one and why), or in strict mode a step that does
        not converge.
    """
    settings = settings or LMSettings()
    inputs = _checked_inputs(problem)
    with contextlib.ExitStack() as stack:
        if isinstance(executor, str):  # opened here, after the inputs were checked; jackknife refits reuse it
            executor = stack.enter_context(open_executor(executor, workers, log))
        fitted, start_x = _fit_on(executor, inputs, settings, starts, problem.platform, progress, log)
        fitted_names = [trial.name for trial in inputs.prepared.trials]
        if not jackknife or len(fitted_names) < 2:
            return with_verdicts(fitted)
        # Each refit runs inline in its task, from the start whose optimum is reported, once.
        free_set = inputs.free_set
        refit_problem = dataclasses.replace(
            problem.only(fitted_names), start=inputs.start.replace(free_set.shared(start_x)),
            free=FreeParameters(free_set.groups), per_object=tuple(sorted(free_set.per_object)), validation=(),
            validation_sources=None, failures=())
        if log is not None:
            log(f"jackknife: {len(fitted_names)} leave-one-out refits on {executor.label}")
        measured = refit_jackknife(refit_problem, free_set.unknown_names,
                                   functools.partial(_refit, settings=settings), log, executor)
        if measured is None:
            fitted.warnings.append("trial jackknife: fewer than two refits succeeded; intervals not checked")
            return with_verdicts(fitted)
        return with_verdicts(with_refit_jackknife(fitted, measured))


def _refit(problem: FitProblem, settings: LMSettings) -> FitResult:
    """One jackknife refit: ``problem`` from its start only, inline in the task that runs it."""
    return fit_trials(problem, settings, starts=1)


@dataclass
class _FitInputs:
    """What :func:`fit_trials` fits, checked before any executor opens.

    Attributes
    ----------
    free_set : FreeParameters
        The free names, tied groups and per-object unknowns (objects from the usable trials).
    spec_ : ResidualSpec
    prepared, held : _Prepared
        The trials to fit and the held-out trials, resampled and checked.
    left_out : list of TrialFailure
        Every trial left out so far (given, fitted or held out), with why.
    setup : Unknowns
        Start values, bounds and typical magnitudes of the unknowns.
    warnings : list of str
        What the set-up changed or the recordings lack.
    """

    free_set: FreeParameters
    spec_: ResidualSpec
    prepared: _Prepared
    held: _Prepared
    left_out: list[TrialFailure]
    setup: Unknowns
    warnings: list[str]

    @property
    def start(self) -> ParameterSet:
        """The start values (tied names set to their group's first value)."""
        return self.setup.start


def _checked_inputs(problem: FitProblem) -> _FitInputs:
    """The fit's inputs checked and prepared (see :func:`fit_trials` for what raises)."""
    records, start, spec_, platform = problem.records, problem.start, problem.spec, problem.platform
    free_set = problem.free_set
    if not records:
        raise InputError("no trials to fit")
    names = free_set.names
    if "pusher.length" in names:
        raise InputError("pusher.length cannot be fitted: it places the rod (the pusher path given to the "
                         "engine), which has no simulator gradient; set it with a parameter override "
                         "(pusher.length=L)", option="free")
    sources: list[str | None] = list(problem.sources) if problem.sources is not None else [None] * len(records)
    prepared = _prepare(records, sources, start, platform, spec_, names, "inputs")
    validation = problem.validation
    held_sources: list[str | None] = ([*problem.validation_sources] if problem.validation_sources
                                      else [None] * len(validation))
    held = _prepare(validation, held_sources, start, platform, spec_, (), "validation")
    left_out = list(problem.failures) + prepared.failures + held.failures
    if not prepared.trials:
        raise_all_failed(left_out, "no trial can be fitted")
    free_set = free_set.with_objects(problem.per_object or sorted(free_set.per_object),
                                     [(t.name, t.object_name) for t in prepared.trials])
    left_out += _drop_unfitted_objects(held, free_set)
    setup = unknowns(free_set, start, problem.bounds)
    warnings = setup.warnings
    for trial in prepared.trials:
        if trial.kind == "arm" and spec_.horizon is not None and trial.command is None and any(
                n.startswith("arm.") for n in names):
            warnings.append(f"trial '{trial.name}' has no recorded joint commands: it gives no servo residuals")
    warnings += recording_warnings(records)
    return _FitInputs(free_set, spec_, prepared, held, left_out, setup, warnings)


def _fit_on(executor: Executor, inputs: _FitInputs, settings: LMSettings, starts: int | None, platform: str,
            progress: Progress | None, log: Callable[[str], None] | None) -> tuple[FitResult, np.ndarray]:
    """Levenberg-Marquardt from the given start (and the other starts) on ``executor``, the held-out
    predictions and the assembled result (before the interval verdicts); and the start (p,) of the
    reported optimum."""
    free_set, spec_, prepared, setup = inputs.free_set, inputs.spec_, inputs.prepared, inputs.setup
    start, x0, lower, upper, left_out = setup.start, setup.x0, setup.lower, setup.upper, inputs.left_out
    evaluator = FitEvaluator(executor, prepared.trials, start, free_set.parameters, free_set.place_groups,
                             free_set.columns, spec_)
    start_failures = evaluator.start(x0)
    left_out += start_failures
    if not evaluator.start_results:
        raise_all_failed(left_out, "no trial can be fitted")
    _drop_failed(prepared, {f.name for f in start_failures})
    held_out = HeldOut(executor, inputs.held.trials, start, free_set.parameters, held_spec(spec_), settings.loss,
                       settings.loss_scale)
    left_out += held_out.start(x0)
    if log is not None:
        _log_inputs(log, prepared)
        log(f"fitting {len(free_set.labels)} parameter(s) to {len(prepared.trials)} trial(s), horizon "
            f"{spec_.label}, on {executor.label}")
        if evaluator.dropped_rows:
            log(f"{evaluator.dropped_rows} residual row(s) left out: they depend on degraded solver steps")

    def report(entry: TraceEntry) -> None:
        evaluator.on_entry(entry)
        held_out.on_entry(entry)
        if progress is not None:
            progress(entry)
        if log is not None:
            mark = "" if entry.accepted else (f" (rejected: {entry.note})" if entry.note else " (rejected)")
            log(f"iteration {entry.iteration:2d}: cost {entry.cost:.6g}  step {entry.step_norm:.3g}  "
                f"damping {entry.damping:.3g}{mark}")

    result = levenberg_marquardt(evaluator, x0, lower, upper, settings, report, setup.typical,
                                 clusters=lambda: evaluator.rows_per_trial)
    cost_start = float(result.trace[0].cost)
    verdict = _other_starts(evaluator, result, x0, lower, upper, settings, setup.typical, free_set.labels,
                            starts, prepared.trials, log)
    start_x = x0
    if verdict is not None and verdict.chosen > 0:  # another start's optimum is clearly lower: report it
        chosen = verdict.runs[verdict.chosen]
        assert chosen.result is not None
        result, start_x = chosen.result, chosen.start
        evaluator.settle(result.x)
        held_out.restart_at(result.x, max(1, int(result.trace[-1].iteration)))
        if log is not None:
            log(f"warning: {verdict.warning}")
    predictions = None
    if held_out.trials:
        if log is not None:
            log(f"predicting {len(prepared.trials)} training and {len(held_out.trials)} held-out trial(s) "
                "whole, at the start and the fitted values")
        predictions = _predictions(executor, evaluator, held_out, start, free_set, result.x, spec_)
    fitted = _result(result, start, free_set, x0, lower, upper, settings, spec_, prepared, evaluator, held_out,
                     inputs.warnings, left_out, spec_.mode, platform, predictions, cost_start, verdict)
    return fitted, start_x


def _other_starts(evaluator: FitEvaluator, main: LMResult, x0: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                  settings: LMSettings, typical: np.ndarray, labels: Sequence[str], starts: int | None,
                  trials: Sequence[TrialData], log: Callable[[str], None] | None) -> StartsVerdict | None:
    """Run the optimizer from the other starts (:mod:`sim2real.sysid.solve.starts`); None with one start.

    The other runs evaluate the same trials but leave the held-out tracking and the fit's trace alone.
    """
    steps = int(sum(trial.steps for trial in trials))
    if starts is None:
        count = default_starts(len(labels), steps)
        rule = (f"default: {count} start(s) for {len(labels)} unknown(s) and {steps} simulated steps "
                f"({AUTO_STARTS} starts up to {AUTO_MAX_PARAMETERS} unknowns and {AUTO_MAX_STEPS} steps, else 1)")
    else:
        count, rule = int(starts), f"--starts {int(starts)}"
    if count <= 1:
        return None
    if main.stop_reason == STOP_MAX_ITERATIONS:  # its values are no optimum to compare others with
        if log is not None:
            log(f"other starts not tried ({rule}): the fit from the given start stopped at its iteration limit")
        return None
    others = start_points(x0, lower, upper, typical, count - 1)
    if others.shape[0] == 0:
        return None
    if log is not None:
        log(f"trying {others.shape[0]} other start(s) ({rule})")

    def optimize(x_start: np.ndarray, stop_when: Callable[[np.ndarray, float], str | None]) -> LMResult:
        return levenberg_marquardt(evaluator, x_start, lower, upper, settings, None, typical, stop_when,
                                   clusters=lambda: evaluator.rows_per_trial)

    runs = run_starts(main, x0, others, optimize, lower, upper, log, labels, typical)
    return compare_starts(runs, labels, lower, upper, rule)


def _drop_unfitted_objects(held: _Prepared, free_set: FreeParameters) -> list[TrialFailure]:
    """Leave out (and name) held-out trials of an object the per-object unknowns do not cover."""
    if not free_set.per_object:
        return []
    failed = {t.name for t in held.trials if t.object_name not in free_set.objects}
    out = [TrialFailure(name, f"held-out trial of an object without fitted values (fitted: "
                              f"{', '.join(free_set.objects)})", stage="validation") for name in sorted(failed)]
    _drop_failed(held, failed)
    return out


def _predict_by_object(executor: Any, shared: Sequence[Any], trials: Sequence[TrialData], start: ParameterSet,
                       free_set: FreeParameters, x: np.ndarray, spec_: ResidualSpec) -> list[Any]:
    """:func:`~sim2real.sysid.prediction.whole_trials.predict` of each trial with its object's values at ``x``
    (in order)."""
    out: list[Any] = [None] * len(trials)
    for obj in dict.fromkeys(t.object_name for t in trials):
        index = [k for k, t in enumerate(trials) if t.object_name == obj]
        params = start.replace(free_set.parameters(x, obj))
        for k, prediction in zip(index, predict(executor, [shared[k] for k in index], params, spec_.mode,
                                                spec_.pusher, spec_.pusher_shape, spec_.engine), strict=True):
            out[k] = prediction
    return out


def _predictions(executor: Any, evaluator: FitEvaluator, held_out: HeldOut, start: ParameterSet,
                 free_set: FreeParameters, x: np.ndarray, spec_: ResidualSpec) -> dict[str, Any]:
    """fit.json ``validation.prediction``: whole-trial prediction errors of the training and the
    held-out trials at the start values and at the fitted values ``x`` (p,) (each trial with its
    object's values; :mod:`sim2real.sysid.prediction.whole_trials`)."""
    blocks: dict[str, Any] = {}
    for label, shared, trials in (("training", evaluator.shared_trials, evaluator.trials),
                                  ("validation", held_out.shared_trials, held_out.trials)):
        before = predict(executor, shared, start, spec_.mode, spec_.pusher, spec_.pusher_shape, spec_.engine)
        after = _predict_by_object(executor, shared, trials, start, free_set, x, spec_)
        if label == "training":
            rms = (horizon_rms(evaluator.start_results, evaluator.masks, spec_.weights),
                   horizon_rms(evaluator.final_results, evaluator.masks, spec_.weights))
        else:  # the rows trusted at both values: a degraded step at one must not change the rows compared
            both = [a.dropped_mask | b.dropped_mask
                    for a, b in zip(held_out.start_results, held_out.final_results, strict=True)]
            rms = (horizon_rms(held_out.start_results, both, spec_.weights),
                   horizon_rms(held_out.final_results, both, spec_.weights))
        blocks[label] = prediction_block(before, after, *rms)
    blocks["whole_trials"] = ("each trial simulated from its recorded start to its end (mode "
                              f"{spec_.mode}); horizon_rms: the fit's own residual rows (horizon {spec_.label})")
    return blocks


def _validation(held_out: HeldOut, predictions: dict[str, Any] | None) -> dict[str, Any] | None:
    """fit.json ``validation``: held-out costs along the fit and, with them, the prediction errors."""
    if not (held_out.trials or held_out.costs or held_out.notes):
        return None
    out = held_out.as_dict()
    if predictions is not None:
        out["prediction"] = predictions
    return out


def held_spec(spec_: ResidualSpec) -> ResidualSpec:
    """The spec held-out trials are evaluated with (the fit's, never strict: a held-out failure is noted)."""
    return dataclasses.replace(spec_, strict=False)


def _drop_failed(prepared: _Prepared, failed: set[str]) -> None:
    """Remove trials that failed at the start values from ``prepared`` (in place)."""
    keep = [k for k, t in enumerate(prepared.trials) if t.name not in failed]
    for attr in ("trials", "sources", "modes", "pusher_sources", "pushers"):
        values = getattr(prepared, attr)
        values[:] = [values[k] for k in keep]


def _result(result: LMResult, start: ParameterSet, free_set: FreeParameters, x0: np.ndarray, lower: np.ndarray,
            upper: np.ndarray, settings: LMSettings, spec_: ResidualSpec, prepared: _Prepared,
            evaluator: FitEvaluator, held_out: HeldOut, warnings: list[str], left_out: list[TrialFailure],
            mode: str, platform: str, predictions: dict[str, Any] | None = None,
            cost_start: float | None = None, verdict: StartsVerdict | None = None) -> FitResult:
    """Assemble the :class:`FitResult`: uncertainty, status, problems, per-trial information.

    ``cost_start`` is the cost at the given start values (default: the first of ``result``'s trace);
    ``verdict`` what the other starts said. The verdicts that rest on the intervals are formed
    afterwards, by :func:`with_verdicts`.
    """
    labels = free_set.labels
    scale = np.array([param_scale(u.name, float(v)) for u, v in zip(free_set.unknown_list, result.x, strict=True)])
    unc: Uncertainty = summarize_uncertainty(labels, result.x, result.jacobian, result.residuals,
                                             result.loss_weights, lower, upper, scale, settings.null_tolerance,
                                             clusters=evaluator.rows_per_trial)
    values = free_set.expand(result.x)
    undetermined = tuple(n for g in free_set.unknown_groups if g[0] in unc.undetermined for n in g)
    status = fit_status(result.stop_reason)
    iterations = int(result.trace[-1].iteration) if result.trace else 0
    rising = held_out.rising()
    box_rising = rising_metrics(predictions["validation"]) if predictions is not None else None
    if box_rising and (spec_.weights.position > 0 or spec_.weights.orientation > 0):
        rising = "; ".join(r for r in (rising, box_rising) if r)
    elif box_rising:  # the box's outcome is not what this fit fits (e.g. a servo stage): information, not a verdict
        warnings = [*warnings, f"{box_rising}; not a problem of this fit: its residuals hold no box pose"]
    problems = fit_problems(result.stop_reason, iterations, bound_problems(labels, result.x, lower, upper),
                            undetermined, rising, evaluator.dropped_rows,
                            int(result.residuals.shape[0]), left_out,
                            corner=corner_problem(labels, result.x, lower, upper, iterations))
    data_info = {
        "trials": _trials_info(prepared, evaluator.first_rows(), evaluator.final_rows(), spec_.weights,
                               evaluator.dropped_per_trial),
        "horizon": spec_.label, "mode": mode, "platform": platform, "pusher": spec_.pusher,
        "pusher_shape": spec_.pusher_shape, "engine": spec_.engine,
        "weights": spec_.weights.as_dict(), "residual_count": int(result.residuals.shape[0]),
        "parameter_count": len(free_set.labels), "evaluations": result.evaluations,
        "objects": {"per_object": sorted(free_set.per_object), "objects": list(free_set.objects),
                    "trials": {t.name: t.object_name for t in prepared.trials}} if free_set.per_object else None,
        "trial_objects": trial_objects(prepared.trials),
        "loss": settings.loss, "residual_std": unc.residual_std, "strict": spec_.strict,
        "uncertainty": unc.as_dict(),
        "residual_series": _residual_series(prepared.trials, prepared.modes, evaluator.start_results,
                                            evaluator.final_results, evaluator.masks, spec_.weights),
        "starts": verdict.record if verdict is not None else {"count": 1},
        "jacobian": engine_entry(spec_.engine).jacobian,
    }
    return FitResult(
        params=start.replace(free_set.shared(result.x)), start=start, free=free_set, values=values,
        start_values=free_set.expand(x0), std={n: unc.std[g[0]] for g in free_set.unknown_groups for n in g},
        ci95={n: unc.ci95[g[0]] for g in free_set.unknown_groups for n in g}, correlation=unc.correlation,
        trace=[e.as_dict(labels) for e in result.trace], stop_reason=result.stop_reason,
        warnings=warnings + list(unc.warnings) + starts_warnings(verdict),
        data=data_info, cost_start=float(result.trace[0].cost) if cost_start is None else cost_start,
        cost_final=float(result.cost), undetermined=undetermined, status=status, problems=tuple(problems),
        failures=tuple(left_out), solver=_solver_info(evaluator), dropped_rows=evaluator.dropped_rows,
        validation=_validation(held_out, predictions),
        hard_steps=tuple(evaluator.hard_steps),
        bounds={n: [float(lower[i]), float(upper[i])] for i, g in enumerate(free_set.unknown_groups) for n in g},
    )

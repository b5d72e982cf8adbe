"""``sim2real fit --spread-draws``: the prediction band calibrated on trials the fit did not see.

The held-out trials (``--validate``, ``--holdout``) are predicted as spreads under draws from the fit and, with
``--cross-fit K``, the fitted trials under draws from fits without their fold
(:mod:`sim2real.sysid.prediction.cross_fit`); the start error beyond the recordings' noise is chosen among
``--start-error``'s candidates by how well the spreads explain the real outcomes; the band (discrepancy and a
conformal quantile, :mod:`sim2real.sysid.prediction.bands`) is calibrated on them, and fit.json keeps it
(``validation.spread``). ``--robust-unstable`` fits again without the fitted trials whose predicted outcome has
several modes.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim2real.sysid import FitResult

#: The fit's log: ``log(message, alarm=False)``.
Log = Callable[..., None]


def spread_options(args: argparse.Namespace) -> Any:
    """Check ``--spread-draws``, ``--start-noise`` and ``--level`` before any work; the start noise
    (:func:`sim2real.cli.replay_cmd.parse_start_noise`)."""
    from sim2real.cli.replay_cmd import parse_start_noise
    from sim2real.errors import Sim2RealError

    noise = parse_start_noise(args.start_noise)
    if args.spread_draws == 1:
        raise Sim2RealError("--spread-draws 1: a spread needs at least 2 draws")
    if args.cross_fit is not None and not args.spread_draws:
        raise Sim2RealError("--cross-fit calibrates the prediction band: it needs --spread-draws N")
    if args.spread_draws and not (args.validate or args.holdout or args.cross_fit):
        raise Sim2RealError("--spread-draws needs held-out trials (--validate or --holdout) or --cross-fit K")
    if not args.spread_draws and args.level != 0.9:
        raise Sim2RealError("--level sets the held-out spread's band: it needs --spread-draws N")
    if not (args.spread_draws or args.robust_unstable) and args.start_noise != "auto":
        raise Sim2RealError("--start-noise sets the spreads' start noise: it needs --spread-draws N or "
                            "--robust-unstable")
    start_error_candidates(args.start_error)  # a bad value is refused before the fit
    if not (args.spread_draws or args.robust_unstable) and args.start_error != "auto":
        raise Sim2RealError("--start-error sets the spreads' start error: it needs --spread-draws N or "
                            "--robust-unstable")
    return noise


def start_error_candidates(text: str) -> tuple[Any, ...]:
    """``--start-error auto|MM,DEG``: the start errors to choose from
    (:data:`~sim2real.sysid.prediction.spread.START_ERRORS` for ``auto``), or the one given (standard deviations of
    the start's x and y, mm, and heading, deg; one-line error otherwise)."""
    import math

    from sim2real.cli.replay_cmd import parse_mm_deg
    from sim2real.sysid.prediction import START_ERRORS, StartError

    if text.strip() == "auto":
        return START_ERRORS
    mm, deg = parse_mm_deg(text, "--start-error", "auto or MM,DEG")
    return (StartError(mm / 1000.0, math.radians(deg)),)


def with_validation_spread(result: FitResult, problem: Any, records: Any, args: argparse.Namespace, noise: Any,
                           settings: Any, log: Log) -> FitResult:
    """``result`` with fit.json ``validation.spread``: each held-out trial's predicted spread under draws
    from the fit (parameters it did not determine drawn uniformly within their bounds) and, with
    ``--cross-fit K``, each fitted trial's under draws from a fit without it; the start error that explains
    their real outcomes best (``--start-error``); the band calibrated on all of them; a band that holds
    fewer of them than its level is a problem of the fit."""
    from dataclasses import replace

    from sim2real.cli.replay_cmd import log_spread, noise_description
    from sim2real.sysid.prediction import band_verdict, self_calibration, spread_record

    records = list(records) if result.validation else []
    if not records and args.cross_fit is None:
        return result
    found = _calibration_spreads(result, problem, records, args, noise, settings, log)
    if isinstance(found.cross, str):
        skipped = f"--cross-fit: {found.cross}; the band is not cross-fitted"
        result = replace(result, warnings=[*result.warnings, skipped])
    cross = found.cross if not isinstance(found.cross, str) else None
    check = self_calibration(found.spreads, args.level)
    record = spread_record(found.spreads, found.uniform, args.spread_draws, args.seed, noise_description(noise),
                           "the fit" if cross is None else "the fit (held-out trials) and its fold fits (fitted "
                           "trials)", args.level, check=check, cross_fit=cross.as_dict() if cross else None,
                           start_error=found.start_error)
    log_spread(log, record)
    log(f"validation spread: {record['summary']}")
    problem_line, warnings = band_verdict(record)
    if cross is not None:
        warnings += cross.warnings()
    return replace(result, validation={**(result.validation or {}), "spread": record},
                   problems=(*result.problems, *([problem_line] if problem_line else [])),
                   warnings=[*result.warnings, *warnings])


@dataclass(frozen=True)
class _Calibration:
    """The calibration trials' spreads at the chosen start error, and how they were had."""

    spreads: list[Any]
    uniform: list[str]
    cross: Any  # CrossFit, None, or why the band is not cross-fitted
    start_error: dict[str, Any]


def _calibration_spreads(result: FitResult, problem: Any, records: list[Any], args: argparse.Namespace, noise: Any,
                         settings: Any, log: Log) -> _Calibration:
    """The held-out trials' spreads under draws from the fit and (``--cross-fit``) the fitted trials' under
    draws from the fold fits, at each candidate start error (``--start-error``); those of the candidate whose
    spreads explain the real outcomes best
    (:func:`~sim2real.sysid.prediction.spread_calibration.choose_start_error`)."""
    from sim2real.cli.replay_cmd import spread_settings
    from sim2real.execution import open_executor
    from sim2real.sysid.files import fit_document
    from sim2real.sysid.prediction import choose_start_error, fit_distribution, records_spreads

    spread = spread_settings(args)
    candidates = start_error_candidates(args.start_error)
    uniform: list[str] = []
    per_candidate: list[list[Any]] = [[] for _ in candidates]
    with open_executor(args.executor, args.workers, log) as executor:
        dist = None
        if records:
            log(f"predicted spread: {len(records)} held-out trial(s) x {args.spread_draws} draws from the fit")
            dist = fit_distribution(fit_document(result), "the fit", allow_unconverged=True, allow_undetermined=True)
            draw, per_candidate[0] = records_spreads(executor, records, dist, result.params, args.spread_draws, noise,
                                                     spread, candidates[0])
            uniform += draw.uniform
        cross = (_cross_fit(result, problem, args, noise, settings, executor, log, candidates[0])
                 if args.cross_fit is not None else None)
        if isinstance(cross, str):
            log(f"--cross-fit: {cross}; the band is not cross-fitted", alarm=True)
        elif cross is not None:
            per_candidate[0] += cross.spreads
            uniform += [name for name in cross.uniform if name not in uniform]
        if not per_candidate[0]:  # nothing to calibrate on: no candidate to compare
            candidates = candidates[:1]
        for k, error in enumerate(candidates[1:], start=1):
            log(f"start error {_error_text(error)}: the {len(per_candidate[0])} calibration trial(s) drawn again")
            if records:
                per_candidate[k] = records_spreads(executor, records, dist, result.params, args.spread_draws, noise,
                                                   spread, error)[1]
            if cross is not None and not isinstance(cross, str):
                per_candidate[k] += cross.spreads_at(executor, args.spread_draws, noise, spread, error)
    if len(candidates) == 1:
        how = "--start-error" if args.start_error.strip() != "auto" else "none: no calibration trial to choose on"
        return _Calibration(per_candidate[0], uniform, cross, {**candidates[0].as_dict(), "chosen_by": how})
    choice = choose_start_error(candidates, per_candidate)
    for error, score in zip(candidates, choice.mean_log_scores, strict=True):
        log(f"start error {_error_text(error)}: mean log score {score:.3g} over {choice.judged} calibration trial(s)"
            + (" (chosen)" if error is choice.start_error else ""))
    return _Calibration(per_candidate[choice.chosen], uniform, cross, choice.as_dict())


def _error_text(error: Any) -> str:
    """``1 mm, 1 deg``: a start error as the log says it."""
    values = error.as_dict()
    return f"{values['position_mm']:g} mm, {values['yaw_deg']:g} deg"


def _cross_fit(result: FitResult, problem: Any, args: argparse.Namespace, noise: Any, settings: Any,
               executor: Any, log: Log, start_error: Any) -> Any:
    """``--cross-fit K``: the fitted trials' out-of-sample spreads
    (:func:`sim2real.sysid.prediction.cross_fit.cross_fit_spreads`), each fold refitted from the fitted values (with
    per-object values, the folds dealt per object); why not, when the trials left to fit cannot be dealt (fewer
    than two, an object with one: the fit is kept, the band not cross-fitted)."""
    import functools

    from sim2real.cli.replay_cmd import spread_settings
    from sim2real.errors import InputError
    from sim2real.sysid import fit_trials
    from sim2real.sysid.prediction import cross_fit_spreads

    unstable = (result.data.get("unstable") or {}).get("left_out", [])  # --robust-unstable's, not fitted again
    left_out = {failure.name for failure in result.failures} | set(unstable)
    fitted = [record.name for record in problem.records if record.name not in left_out]
    if len(fitted) < 2:
        return "fewer than 2 trials were fitted"
    folds = min(args.cross_fit, len(fitted))
    if folds < args.cross_fit:
        log(f"--cross-fit {args.cross_fit}: {len(fitted)} trial(s) were fitted; {folds} folds (one trial each)",
             alarm=True)
    log(f"cross-fit: {folds} fold fits of {len(fitted)} fitted trial(s), then {args.spread_draws} draws per "
         "left-out trial")
    fit = functools.partial(fit_trials, settings=settings, executor=executor, starts=1)
    objects = trial_objects(problem.records) if problem.per_object else None
    try:
        return cross_fit_spreads(problem, fitted, result.params, fit, executor, args.spread_draws, noise,
                         spread_settings(args), folds, log, objects=objects, start_error=start_error)
    except InputError as err:  # the folds cannot be dealt (raised before any fold fit)
        return str(err)


def trial_objects(records: Any) -> dict[str, str | None]:
    """Each trial's object label (None: a trial without one)."""
    from sim2real.trials.trial_object import trial_object

    labels: dict[str, str | None] = {}
    for record in records:
        obj = trial_object(record.meta, record.name)
        labels[record.name] = obj.name if obj is not None else None
    return labels


def without_unstable(problem: Any, result: FitResult, args: argparse.Namespace, noise: Any,
                     settings: Any, log: Log) -> FitResult:
    """``--robust-unstable``: the fit again without the fitted trials whose predicted outcome (a spread under
    draws from ``result``, the starts moved by ``--start-error`` when it gives one value, else by their noise
    only: the band's start error is chosen after the fit) has several modes, with a warning naming them;
    ``result`` itself when none has."""
    from dataclasses import replace

    from sim2real.cli.replay_cmd import noise_description, spread_settings
    from sim2real.sysid import fit_trials
    from sim2real.sysid.files import fit_document
    from sim2real.sysid.prediction import fit_distribution, records_spread

    draws = args.spread_draws or 20
    dist = fit_distribution(fit_document(result), "the fit", allow_unconverged=True, allow_undetermined=True)
    log(f"unstable trials: {len(problem.records)} fitted trial(s) x {draws} draws from the fit")
    candidates = start_error_candidates(args.start_error)
    record = records_spread(problem.records, dist, result.params, draws, noise, noise_description(noise), "the fit",
                            spread_settings(args), log, start_error=candidates[0] if len(candidates) == 1 else None)
    modes = {t["trial"]: [round(m["probability"], 2) for m in t["modes"]] for t in record["trials"]}
    unstable = list(record["unstable"])
    info = {"checked": len(problem.records), "draws": draws, "left_out": unstable,
            "mode_probabilities": {name: modes[name] for name in unstable}}
    if not unstable:
        log("unstable trials: none (every fitted trial's predicted outcome has one mode)")
        return replace(result, data={**result.data, "unstable": info})
    words = ", ".join(f"{name} (modes {'/'.join(f'{p:g}' for p in modes[name])})" for name in unstable)
    if len(unstable) == len(problem.records):
        return replace(result, data={**result.data, "unstable": {**info, "left_out": []}},
                       warnings=[*result.warnings, f"--robust-unstable: every fitted trial is unstable ({words}); "
                                 "none left out"])
    log(f"unstable trials: fitting again without {len(unstable)} of {len(problem.records)}: {words}", alarm=True)
    kept = problem.only([r.name for r in problem.records if r.name not in set(unstable)])
    again = fit_trials(kept, settings, executor=args.executor, workers=args.workers, starts=args.starts,
                       jackknife=args.jackknife, log=log)
    warning = (f"--robust-unstable: {len(unstable)} of {len(problem.records)} fitted trial(s) left out of the point "
               f"residuals, their predicted outcome having several modes: {words}")
    return replace(again, data={**again.data, "unstable": info}, warnings=[*again.warnings, warning])



"""Cross-fitted band calibration: every fitted trial predicted by a fit that did not see it.

A band calibrated on held-out trials alone (:mod:`sim2real.sysid.prediction.bands`) needs many of
them: at 90 % split conformal prediction takes the largest score below 19 calibration trials, so one
wild trial sets the band of every later prediction, and below 9 the level cannot be reached at all.
A small real set cannot spare that many trials from the fit. Cross-fitting (the K-fold version of the
jackknife+, Barber et al. 2021) uses every trial for both: the fitted trials are dealt into ``K``
folds; per fold the fit is repeated on the other folds (from the full fit's values) and the fold's
trials are predicted as spreads under draws from that fold fit. Each fitted trial then has an
out-of-sample prediction, and these spreads are pooled with those of any held-out trials (predicted
by the full fit) to estimate the discrepancy and the conformal quantile.

Later predictions come from the full fit, which saw every trial: its predictions are at least as good
as a fold fit's, so a quantile from the fold fits' scores errs on the wide side. The guarantee is the
split conformal one only approximately (measured on known truth in ``benchmarks.band_truth``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim2real.errors import InputError
from sim2real.execution import Executor
from sim2real.sysid.prediction.spread import (
    NO_START_ERROR,
    SpreadSettings,
    StartError,
    StartNoise,
    TrialSpread,
    spread_of_fit,
)
from sim2real.sysid.problem import FitProblem
from sim2real.trials import TrialRecord

#: A fold fit: ``problem -> FitResult`` with the full fit's settings (and executor).
FoldFitter = Callable[[FitProblem], Any]


@dataclass(frozen=True)
class FoldFit:
    """One fold: the trials it held out and what the fit on the others gave.

    Attributes
    ----------
    held_out : tuple of str
        Fitted trials left out of this fold's fit and predicted by it.
    status : str
        The fold fit's ``"converged"``, ``"not converged"`` or ``"failed"``.
    problems : tuple of str
        The fold fit's problems (or why it failed), one line each.
    values : dict of str to float
        The fold fit's values per registry name (empty when it failed).
    """

    held_out: tuple[str, ...]
    status: str
    problems: tuple[str, ...]
    values: dict[str, float]

    def as_dict(self) -> dict[str, Any]:
        """fit.json ``validation.spread.cross_fit.folds`` entry."""
        return {"held_out": list(self.held_out), "status": self.status, "problems": list(self.problems),
                "values": dict(self.values)}


@dataclass(frozen=True)
class FoldPrediction:
    """What a fold fit predicts its trials from: its distribution, parameter set and the trials (not saved)."""

    fold: int
    dist: Any
    params: Any
    trials: tuple[Any, ...]


@dataclass(frozen=True)
class CrossFit:
    """Out-of-sample spreads of the fitted trials, one fold fit per group of them.

    Attributes
    ----------
    folds : tuple of FoldFit
    spreads : tuple of TrialSpread
        One per fitted trial whose fold fit worked, in the folds' order.
    uniform : tuple of str
        Names some fold fit did not determine (drawn uniformly within their bounds there).
    """

    folds: tuple[FoldFit, ...]
    spreads: tuple[TrialSpread, ...]
    uniform: tuple[str, ...]
    predictions: tuple[FoldPrediction, ...] = field(default=(), compare=False, repr=False)

    def spreads_at(self, executor: Executor, draws: int, noise: StartNoise | str, settings: SpreadSettings,
                   start_error: StartError) -> list[TrialSpread]:
        """The fitted trials' out-of-sample spreads again, their starts moved by ``start_error`` too (the fold
        fits as they are; each fold's draws from the same seed as :attr:`spreads`)."""
        spreads: list[TrialSpread] = []
        for p in self.predictions:
            spreads += spread_of_fit(executor, p.dist, p.params, list(p.trials), draws,
                                     np.random.default_rng([settings.seed, p.fold]), settings.mode, settings.pusher,
                                     settings.pusher_shape, settings.engine, noise, start_error)[1]
        return spreads

    def warnings(self) -> list[str]:
        """One line per fold whose fit failed (its trials are not predicted) or did not converge."""
        lines = []
        for k, fold in enumerate(self.folds):
            if fold.status == "converged":
                continue
            why = f": {'; '.join(fold.problems)}" if fold.status == "failed" else ""
            fate = "not predicted" if fold.status == "failed" else "predicted by it"
            lines.append(f"--cross-fit: fold {k + 1}'s fit (without {', '.join(fold.held_out)}) is {fold.status}"
                         f"{why}; its trials are {fate}")
        return lines

    def as_dict(self) -> dict[str, Any]:
        """fit.json ``validation.spread.cross_fit``."""
        return {"folds": len(self.folds), "trials": len(self.spreads),
                "fold_fits": [fold.as_dict() for fold in self.folds]}


def fold_groups(names: Sequence[str], folds: int, seed: int,
                objects: Mapping[str, str | None] | None = None) -> list[tuple[str, ...]]:
    """Deal ``names`` into ``folds`` groups: shuffled by ``seed``, then dealt one at a time.

    With ``objects`` (name → object label, for a fit with per-object values) the dealing is stratified: each
    object's trials, shuffled, are dealt in turn, continuing the rotation from the previous object's, so an
    object's trials land in different folds and every fold's fit sees every object.

    Raises
    ------
    InputError
        ``folds`` below 2 or above the number of names (each fold needs a trial, and a fit needs
        the trials of another fold), or (stratified) an object with a single trial: the fit without its fold
        would have no trial of that object to fit its own values on.
    """
    if len(names) < 2:
        raise InputError(f"cross-fitting needs at least 2 fitted trials ({len(names)} usable)")
    if folds < 2 or folds > len(names):
        raise InputError(f"{folds} folds of {len(names)} fitted trials: 2 to {len(names)} folds (at most one per "
                         "trial)")
    rng = np.random.default_rng(seed)
    if objects is None:
        order = rng.permutation(len(names))
        return [tuple(names[int(k)] for k in sorted(order[f::folds])) for f in range(folds)]
    by_object: dict[str | None, list[str]] = {}
    for name in names:
        by_object.setdefault(objects.get(name), []).append(name)
    alone = sorted(str(obj) for obj, members in by_object.items() if len(members) < 2)
    if alone:
        raise InputError(f"cross-fitting with per-object values needs at least 2 fitted trials of each object: "
                         f"{', '.join(alone)} has one (its fold's fit would not see it)")
    dealt: list[list[str]] = [[] for _ in range(folds)]
    turn = 0
    for obj in sorted(by_object, key=str):
        members = by_object[obj]
        for k in rng.permutation(len(members)):
            dealt[turn % folds].append(members[int(k)])
            turn += 1
    position = {name: k for k, name in enumerate(names)}
    return [tuple(sorted(group, key=position.__getitem__)) for group in dealt]


def fold_problem(problem: FitProblem, start: Any, fitted: Sequence[str], held_out: Sequence[str]) -> FitProblem:
    """``problem`` on the ``fitted`` trials not in ``held_out``, started at ``start`` (the full fit's
    parameter set), with no held-out trials of its own."""
    kept = [name for name in fitted if name not in set(held_out)]
    return dataclasses.replace(problem.only(kept), start=start, validation=(), validation_sources=None, failures=())


def cross_fit_spreads(problem: FitProblem, fitted: Sequence[str], start: Any, fit: FoldFitter, executor: Executor,
              draws: int, noise: StartNoise | str, settings: SpreadSettings, folds: int,
              log: Callable[[str], None] | None = None,
              predicted: Mapping[str, TrialRecord] | None = None,
              objects: Mapping[str, str | None] | None = None,
              start_error: StartError = NO_START_ERROR) -> CrossFit:
    """Fit without each fold and predict the fold's trials as spreads under draws from that fit.

    Parameters
    ----------
    problem : FitProblem
        The full fit's problem (its held-out trials are not used here).
    fitted : sequence of str
        The trials the full fit used (records left out of it are not dealt into folds).
    start : ParameterSet
        The full fit's parameter set: every fold fit starts there.
    fit : callable
        ``problem -> FitResult`` with the full fit's optimizer settings; a ``Sim2RealError`` it raises
        fails that fold only.
    executor : Executor
        Runs the spreads' simulations.
    draws : int
        Parameter sets drawn per fold fit.
    noise : StartNoise or "measured"
        The start noise of the draws.
    settings : SpreadSettings
        How the spreads are simulated; its ``seed`` deals the folds and seeds each fold's draws.
    folds : int
        ``K`` (2 to the number of fitted trials; that many is leave one out).
    log : callable, optional
        One line per fold as it finishes.
    predicted : mapping of str to TrialRecord, optional
        The record each fitted trial is predicted from, by name (e.g. a recording cut where its outcome
        is judged); default: the record it was fitted on.
    objects : mapping of str to str or None, optional
        Each fitted trial's object label, for a fit with per-object values: the folds are then dealt per
        object (:func:`fold_groups`).
    start_error : StartError
        The start's error beyond its noise in these spreads (others later: :meth:`CrossFit.spreads_at`).
    """
    from sim2real.errors import Sim2RealError
    from sim2real.sysid.files import fit_document
    from sim2real.sysid.prediction.sampling import fit_distribution
    from sim2real.sysid.problem import prepare_trial, recorded_platform

    groups = fold_groups(list(fitted), folds, settings.seed, objects)
    by_name = {**{record.name: record for record in problem.records}, **(predicted or {})}
    out_folds, spreads, uniform, predictions = [], [], [], []
    for k, group in enumerate(groups):
        try:  # a fold that cannot be fitted or drawn from fails alone; the others and the full fit stand
            result = fit(fold_problem(problem, start, fitted, group))
            dist = fit_distribution(fit_document(result), f"fold {k + 1}'s fit", allow_unconverged=True,
                                    allow_undetermined=True)
            dt = float(result.params["sim.dt"])
            trials = [prepare_trial(by_name[name], dt, recorded_platform(by_name[name], settings.platform))
                      for name in group]
        except Sim2RealError as err:
            reason = " ".join(str(err).split())
            out_folds.append(FoldFit(group, "failed", (reason,), {}))
            if log is not None:
                log(f"cross-fit: fold {k + 1}/{len(groups)} ({', '.join(group)}): its fit failed: {reason}")
            continue
        draw, fold_spreads = spread_of_fit(executor, dist, result.params, trials, draws,
                                           np.random.default_rng([settings.seed, k]), settings.mode, settings.pusher,
                                           settings.pusher_shape, settings.engine, noise, start_error)
        spreads += fold_spreads
        predictions.append(FoldPrediction(k, dist, result.params, tuple(trials)))
        uniform += [name for name in draw.uniform if name not in uniform]
        out_folds.append(FoldFit(group, result.status, tuple(result.problems), dict(result.values)))
        if log is not None:
            log(f"cross-fit: fold {k + 1}/{len(groups)}: fitted without {', '.join(group)} ({result.status}), "
                f"{len(group)} trial(s) x {draws} draws predicted")
    return CrossFit(tuple(out_folds), tuple(spreads), tuple(uniform), tuple(predictions))

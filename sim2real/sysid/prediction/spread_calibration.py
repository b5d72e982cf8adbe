"""A spread's record and verdicts: its band calibrated on the trials themselves or by a fit's calibration,
what the band is made of, the summary line, and what a fit's held-out spread says of the fit.

:mod:`sim2real.sysid.prediction.spread` simulates the spreads; :mod:`sim2real.sysid.prediction.bands` holds the band's
statistics (modes, discrepancy, conformal quantile). The record is ``spread.json`` (``replay --spread``)
and fit.json ``validation.spread`` (``fit --spread-draws``), format ``sim2real.spread/2``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim2real.errors import DataError
from sim2real.execution import Executor
from sim2real.params import ParameterSet
from sim2real.sysid.files import FitDocument
from sim2real.sysid.prediction.bands import (
    DEFAULT_LEVEL,
    BandCalibration,
    TrialBand,
    calibrate,
    conformal_rank,
    estimate_discrepancy,
    leave_one_out,
    log_score,
    misses_level,
    trial_band,
)
from sim2real.sysid.prediction.spread import (
    COORDINATES,
    NO_START_ERROR,
    SpreadSettings,
    StartError,
    StartNoise,
    TrialSpread,
    spread_of_fit,
)


@dataclass(frozen=True)
class CalibrationCheck:
    """A band calibrated on the trials it predicts, each judged by the calibration from the others.

    Attributes
    ----------
    calibration : BandCalibration or None
        From every judged trial (what later predictions use); None without judged trials.
    per_trial : list of BandCalibration or None
        Per judged trial, the calibration from the others (leave one out).
    inside, judged : int
        Judged trials inside their leave-one-out band, and how many were judged.
    parameter_inside : int
        Of the judged trials, how many lie inside the parameter-only band.
    """

    calibration: BandCalibration | None
    per_trial: list[BandCalibration | None]
    inside: int
    judged: int
    parameter_inside: int

    def as_dict(self, level: float) -> dict[str, Any]:
        """fit.json ``validation.spread.check``: the counts and, when the band misses its level, the p-value."""
        p = misses_level(self.inside, self.judged, level)
        return {"inside": self.inside, "judged": self.judged, "parameter_inside": self.parameter_inside,
                "misses_level": p is not None, "binomial_p": p}


def _judged(spreads: Sequence[TrialSpread]) -> list[int]:
    return [i for i, s in enumerate(spreads) if s.predicted.shape[0] > 0]


def self_calibration(spreads: Sequence[TrialSpread], level: float = DEFAULT_LEVEL) -> CalibrationCheck:
    """Calibrate a band on ``spreads`` (trials the fit did not see) and judge each by the others."""
    judged = _judged(spreads)
    reals = [spreads[i].real for i in judged]
    modes = [spreads[i].modes() for i in judged]
    per_trial = leave_one_out(reals, modes, level)
    inside = sum(trial_band(r, m, c).inside for r, m, c in zip(reals, modes, per_trial, strict=True) if c is not None)
    return CalibrationCheck(calibrate(reals, modes, level), per_trial, int(inside), len(judged),
                            sum(bool(spreads[i].inside(level)) for i in judged))


def band_makeup(spreads: Sequence[TrialSpread], calibration: BandCalibration | None) -> dict[str, Any]:
    """What the band is made of, as medians over the trials' most probable modes (units in the keys):
    the draws' scale (parameters, start and frame), the start's error, the tracking frame's uncertainty
    (its shift and turn; 0 without a frame calibration), the discrepancy and the quantile."""
    modes = [s.modes()[0] for s in spreads if s.predicted.shape[0]]
    draws = np.median([m.scale for m in modes], axis=0) if modes else np.full(3, np.nan)
    start = (np.median([np.hypot(s.noise.start_std(), s.noise.error_std()) for s in spreads], axis=0) if spreads
             else np.zeros(3))
    frame = (np.median([s.frame.std if s.frame is not None else np.zeros(3) for s in spreads], axis=0)
             if spreads else np.zeros(3))
    tau = calibration.discrepancy if calibration is not None else np.zeros(3)
    out: dict[str, Any] = {}
    for k, (name, unit) in enumerate(COORDINATES):
        start_k, frame_k = ((float(np.degrees(start[k])), float(np.degrees(frame[k]))) if name == "yaw" else
                            (float(start[k]), float(frame[k])))
        out[f"{name}_{unit}"] = {"draws": float(draws[k]) if np.isfinite(draws[k]) else None, "start": start_k,
                                 "frame": frame_k, "discrepancy": float(tau[k])}
    out["quantile"] = calibration.quantile if calibration is not None else None
    return out


def spread_record(spreads: Sequence[TrialSpread], uniform: Sequence[str], draws: int, seed: int,
                  noise: dict[str, Any], fit: str, level: float = DEFAULT_LEVEL,
                  calibration: BandCalibration | None = None, check: CalibrationCheck | None = None,
                  cross_fit: dict[str, Any] | None = None, start_error: dict[str, Any] | None = None
                  ) -> dict[str, Any]:
    """The JSON record of a predicted spread (``spread.json``, fit.json ``validation.spread``).

    Parameters
    ----------
    spreads : sequence of TrialSpread
    uniform : sequence of str
        Names the draws took uniformly within their bounds (not determined by the fit).
    draws, seed : int
    noise : dict
        The start noise as given (``{"measured": true}`` or ``position_mm`` and ``yaw_deg``).
    fit : str
        Where the draws came from.
    level : float
        The band's nominal level.
    calibration : BandCalibration, optional
        A calibration from other trials (a fit's held-out ones) applied to every trial.
    check : CalibrationCheck, optional
        A calibration on these trials themselves (:func:`self_calibration`): each trial is judged by
        its leave-one-out calibration, and the record keeps the calibration from all for later use.
    cross_fit : dict, optional
        :meth:`~sim2real.sysid.prediction.cross_fit.CrossFit.as_dict` when some of ``spreads`` are
        fitted trials predicted by fits without them (said in the summary).
    start_error : dict, optional
        The start error the draws were given beyond the noise, and how it was chosen
        (:meth:`StartErrorChoice.as_dict`); ``replay --spread`` draws with it too.
    """
    judged = _judged(spreads)
    bands: dict[int, TrialBand] = {}
    for position, i in enumerate(judged):
        cal = check.per_trial[position] if check is not None else calibration
        if cal is not None:
            bands[i] = trial_band(spreads[i].real, spreads[i].modes(), cal)
    kept = check.calibration if check is not None else calibration
    entries = [s.as_dict(level, bands.get(i)) for i, s in enumerate(spreads)]
    inside = [e["inside"] for e in entries]
    counted = [v for v in inside if v is not None]
    parameter = [e["parameter_inside"] for e in entries if e["parameter_inside"] is not None]
    bimodal = [e["trial"] for e in entries if len(e["modes"]) > 1]
    record: dict[str, Any] = {
        "format": "sim2real.spread/2", "fit": fit, "draws": draws, "seed": seed, "uniform": list(uniform),
        "start_noise": noise, "level": level,
        "calibrated": bool(bands) and len(bands) == len(judged) and kept is not None and kept.calibrated,
        "calibration": kept.as_dict() if kept is not None else None,
        "check": check.as_dict(level) if check is not None else None,
        "makeup": band_makeup(spreads, kept), "inside": sum(counted), "judged": len(counted),
        "parameter_inside": sum(parameter), "unstable": bimodal,
        "log_score": float(np.mean([bands[i].log_score for i in bands])) if bands else None,
        "trials": entries}
    if cross_fit is not None:
        record["cross_fit"] = cross_fit
    if start_error is not None:
        record["start_error"] = start_error
    record["summary"] = spread_summary(record, len(inside) - len(counted))
    return record


def spread_summary(record: dict[str, Any], without_draws: int = 0) -> str:
    """One line: which band, how many real outcomes it holds, and the parameter-only band's count."""
    level = 100 * record["level"]
    judged = record["judged"]
    tail = f" ({without_draws} without a working draw)" if without_draws else ""
    unstable = f"; {len(record['unstable'])} trial(s) with several modes" if record["unstable"] else ""
    error = record.get("start_error") or {}
    if error.get("position_mm") or error.get("yaw_deg"):
        unstable += (f"; each start drawn with a further error of {error['position_mm']:g} mm, "
                     f"{error['yaw_deg']:g} deg")
    cal = record["calibration"]
    if cal is None:
        return (f"NOT CALIBRATED: the parameter-only {level:g} % band (the draws alone, no model discrepancy) holds "
                f"the real outcome in {record['inside']} of {judged} trial(s){tail}{unstable}")
    cross = record.get("cross_fit")
    how = ("each judged by the calibration from the others" if record.get("check") else
           f"calibrated on {cal['trials']} trial(s) held out of the fit that predicted them")
    if cross is not None:
        how = (f"{cross['trials']} fitted trial(s) predicted by {cross['folds']} fold fits without them"
               + (f" and {cal['trials'] - cross['trials']} held-out trial(s)" if cal["trials"] > cross["trials"]
                  else "") + f"; {how}")
    line = (f"the calibrated {level:g} % band ({how}) holds the real outcome in {record['inside']} of {judged} "
            f"trial(s){tail}; the parameter-only band in {record['parameter_inside']}{unstable}")
    if not record["calibrated"]:
        return (f"NOT CALIBRATED at {level:g} %: {cal['trials']} calibration trial(s) guarantee "
                f"{100 * cal['guaranteed_level']:.0f} % ({conformal_minimum(record['level'])} needed); {line}")
    return line


def fit_calibration(document: FitDocument, source: str, level: float = DEFAULT_LEVEL) -> BandCalibration | None:
    """The band calibration a fit.json keeps (``validation.spread.calibration``) at ``level``; None when
    the fit has none (no held-out spread).

    Raises
    ------
    Sim2RealError
        One line naming ``source`` when the calibration is there but invalid.
    """

    validation = document.validation
    spread = validation.get("spread") if validation is not None else None
    stored = spread.get("calibration") if isinstance(spread, dict) else None
    if stored is None:
        return None
    try:
        return BandCalibration.from_dict(stored, f"{source}: validation.spread.calibration").at_level(level)
    except ValueError as err:
        raise DataError(str(err)) from None


def band_verdict(record: dict[str, Any]) -> tuple[str | None, list[str]]:
    """What a fit's held-out spread (calibrated on itself, :func:`self_calibration`) says of the fit.

    Returns
    -------
    (str or None, list of str)
        A problem when the band cannot hold its level: too few held-out trials to calibrate it
        (split conformal prediction needs :func:`conformal_minimum` of them), or, each held-out trial
        judged by the calibration from the others, fewer real outcomes inside than the level allows
        (one-sided binomial p < 0.05). A warning when the parameter-only band misses the level (the
        model's discrepancy, which the calibrated band carries).
    """
    check, cal = record.get("check") or {}, record.get("calibration")
    level, judged = record["level"], check.get("judged", 0)
    words = f"{100 * level:g} % prediction band"
    parameter = f"the parameter-only band (the draws alone) holds {check.get('parameter_inside', 0)} of {judged}"
    problem = None
    if cal is None:
        problem = f"the {words} could not be calibrated: no held-out trial has a working draw"
    elif not cal["calibrated"]:
        lower = max((p for p in (0.5, 0.6, 0.7, 0.75, 0.8, 0.85) if conformal_rank(cal["trials"], p) <= cal["trials"]),
                    default=None)
        more = ("record more trials" if record.get("cross_fit") else
                "hold out more trials, or calibrate on the fitted ones too (--cross-fit K)")
        problem = (f"the {words} cannot be calibrated on {cal['trials']} held-out trial(s) ({conformal_minimum(level)} "
                   f"needed; guaranteed {100 * cal['guaranteed_level']:.0f} %); {parameter} held-out outcomes; {more}"
                   + (f", or ask for --level {lower:g}" if lower is not None else ""))
    elif check.get("misses_level"):
        problem = (f"the calibrated {words} holds {check['inside']} of {judged} held-out outcomes (each judged by the "
                   f"calibration from the others), fewer than its level (binomial p = {check['binomial_p']:.2g})")
    warnings = []
    if cal is not None and judged and misses_level(check.get("parameter_inside", 0), judged, level) is not None:
        tau = cal["discrepancy"]
        warnings.append(f"{parameter} held-out outcomes, fewer than its level: the model's discrepancy (x "
                        f"{1000 * tau['x_m']:.3g} mm, y {1000 * tau['y_m']:.3g} mm, yaw {tau['yaw_deg']:.3g} deg) is "
                        "what the parameters cannot explain; the calibrated band carries it")
    return problem, warnings


def conformal_minimum(level: float) -> int:
    """Fewest calibration trials for which a split conformal band reaches ``level``."""
    n = 1
    while conformal_rank(n, level) > n:
        n += 1
    return n


def records_spread(records: Sequence[Any], dist: Any, params: ParameterSet, draws: int, noise: StartNoise | str,
                   noise_record: dict[str, Any], source: str, settings: SpreadSettings,
                   log: Any = None, calibration: BandCalibration | None = None,
                   self_calibrate: bool = False, start_error: StartError | None = None) -> dict[str, Any]:
    """Each trial record's spread under ``draws`` parameter sets from ``dist`` (a fit's distribution): its
    record (:func:`spread_record`), the band calibrated by ``calibration`` or, with ``self_calibrate``, on
    these records (each judged by the others); each start moved by ``start_error`` too (default none).
    ``log`` receives the executor's messages."""
    from sim2real.execution import open_executor

    error = start_error if start_error is not None else NO_START_ERROR
    with open_executor(settings.executor, settings.workers, log) as executor:
        draw, spreads = records_spreads(executor, records, dist, params, draws, noise, settings, error)
    check = self_calibration(spreads, settings.level) if self_calibrate else None
    return spread_record(spreads, draw.uniform, draws, settings.seed, noise_record, source, settings.level,
                         calibration=None if self_calibrate else calibration, check=check,
                         start_error=error.as_dict() if start_error is not None else None)


def records_spreads(executor: Executor, records: Sequence[Any], dist: Any, params: ParameterSet, draws: int,
                    noise: StartNoise | str, settings: SpreadSettings,
                    start_error: StartError = NO_START_ERROR) -> tuple[Any, list[TrialSpread]]:
    """Each trial record's spread under ``draws`` parameter sets from ``dist`` on an open ``executor``:
    the draw (:class:`~sim2real.sysid.prediction.sampling.SampleDraw`) and one spread per record, the start
    moved by ``noise`` and ``start_error``."""
    from sim2real.sysid.problem import prepare_trial, recorded_platform

    dt = float(params["sim.dt"])
    trials = [prepare_trial(r, dt, recorded_platform(r, settings.platform)) for r in records]
    return spread_of_fit(executor, dist, params, trials, draws, np.random.default_rng(settings.seed), settings.mode,
                         settings.pusher, settings.pusher_shape, settings.engine, noise, start_error)


@dataclass(frozen=True)
class StartErrorChoice:
    """The start error chosen for a band's draws, and what each candidate scored.

    Attributes
    ----------
    chosen : int
        Index into ``candidates`` of the one with the best mean log score.
    candidates : tuple of StartError
    mean_log_scores : tuple of float
        Per candidate, the mean over the judged calibration trials of the log score of the real outcome
        (:func:`sim2real.sysid.prediction.bands.log_score`, the discrepancy estimated on those trials at that
        candidate); ``-inf`` without judged trials.
    judged : int
        Calibration trials scored (those with working draws at every candidate).
    """

    chosen: int
    candidates: tuple[StartError, ...]
    mean_log_scores: tuple[float, ...]
    judged: int

    @property
    def start_error(self) -> StartError:
        """The chosen start error."""
        return self.candidates[self.chosen]

    def as_dict(self) -> dict[str, Any]:
        """fit.json ``validation.spread.start_error`` (units in the keys)."""
        return {**self.start_error.as_dict(), "chosen_by": "mean log score of the calibration trials",
                "judged": self.judged,
                "candidates": [{**c.as_dict(), "mean_log_score": s if np.isfinite(s) else None}
                               for c, s in zip(self.candidates, self.mean_log_scores, strict=True)]}


def mean_log_score(spreads: Sequence[TrialSpread], judged: Sequence[int]) -> float:
    """Mean log score of the real outcomes of ``spreads[judged]`` under their modes, with the discrepancy
    estimated on them (``-inf`` when none is judged)."""
    if not judged:
        return float("-inf")
    reals = [spreads[i].real for i in judged]
    modes = [spreads[i].modes() for i in judged]
    tau = estimate_discrepancy(reals, modes)
    return float(np.mean([log_score(real, m, tau) for real, m in zip(reals, modes, strict=True)]))


def choose_start_error(candidates: Sequence[StartError],
                       spreads: Sequence[Sequence[TrialSpread]]) -> StartErrorChoice:
    """The start error whose spreads of the calibration trials explain their real outcomes best.

    Parameters
    ----------
    candidates : sequence of StartError
        The errors tried (e.g. :data:`~sim2real.sysid.prediction.spread.START_ERRORS`), the first the least.
    spreads : sequence of sequence of TrialSpread
        Per candidate, the same calibration trials' spreads drawn with it.

    Notes
    -----
    The score is the mean log score (a proper score) with the discrepancy τ estimated on the same trials:
    a push whose outcome hangs on a millimetre is explained by draws that split into its two outcomes
    (a larger start error) far better than by one mode widened by τ, while an insensitive one barely
    changes with the start. Candidates are compared on the trials judged at every one of them; on a tie
    the smaller error wins. Choosing it on the calibration trials, as τ is, makes the conformal guarantee
    approximate (measured in ``benchmarks.band_truth`` and ``benchmarks.band_modes``).
    """
    if not candidates or len(candidates) != len(spreads):
        raise ValueError("one list of spreads per candidate start error is needed")
    judged = sorted(set.intersection(*[set(_judged(s)) for s in spreads]))
    scores = tuple(mean_log_score(s, judged) for s in spreads)
    best = max(range(len(candidates)), key=lambda k: (scores[k], -k))
    return StartErrorChoice(best, tuple(candidates), scores, len(judged))

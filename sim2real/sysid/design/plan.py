"""``sim2real design`` below the CLI: evaluate the candidates, choose the pushes, forecast the intervals.

:func:`design_pushes` spreads candidates over a :class:`~sim2real.sysid.design.space.PushSpace`, evaluates each
(plan, feasibility, simulation at the linearisation point, information of the fit's residuals), chooses the
pushes (:mod:`sim2real.sysid.design.select`) and forecasts every unknown's 95 % interval before and after them,
beside the forecast for as many pushes of the experiment's standard sequence and for sets of as many pushes drawn
at random from the feasible candidates (what the search buys over pushing anywhere the arm can). The
:class:`Design` it returns writes the experiment file that ``sim2real run --experiment`` and the launch file read,
and its JSON record (``design.json``) that the report compares with the intervals a refit achieves.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from sim2real.control import ExperimentConfig
from sim2real.execution import Executor
from sim2real.sysid.design.information import CandidateInfo, evaluate_candidates
from sim2real.sysid.design.prior import Prior
from sim2real.sysid.design.record import DESIGN_FORMAT
from sim2real.sysid.design.select import Known, Selection, mean_half_width, random_half_widths, select_pushes
from sim2real.sysid.design.space import Candidate, PushSpace
from sim2real.sysid.uncertainty import determination_problems


@dataclass(frozen=True)
class Forecast:
    """Each unknown's forecast 95 % interval (Student's t with the refit's degrees of freedom, clipped to the
    bounds).

    Attributes
    ----------
    half_width : ndarray, shape (p,)
        Forecast half-widths before clipping (units of each unknown).
    low, high : ndarray, shape (p,)
        The interval's ends.
    undetermined : ndarray of bool, shape (p,)
        Intervals covering so much of the bounds that the fit would call the unknown undetermined.
    """

    half_width: np.ndarray
    low: np.ndarray
    high: np.ndarray
    undetermined: np.ndarray

    @property
    def width(self) -> np.ndarray:
        """Interval widths (p,)."""
        return self.high - self.low


def forecast(prior: Prior, scaled_half_width: np.ndarray, scale: np.ndarray) -> Forecast:
    """The :class:`Forecast` of half-widths (p,) in coordinates scaled by ``scale`` (p,)."""
    half = scaled_half_width * scale
    values = prior.values
    low = np.maximum(values - half, prior.lower)
    high = np.minimum(values + half, prior.upper)
    undetermined = np.array([bool(determination_problems(label, float(v), [float(a), float(b)], [float(lo), float(hi)]))
                             for label, v, a, b, lo, hi in zip(prior.labels, values, low, high, prior.lower,
                                                               prior.upper, strict=True)])
    return Forecast(half, low, high, undetermined)


@dataclass(frozen=True)
class RandomForecast:
    """The forecast after as many pushes drawn at random from the feasible candidates, over many sets.

    Attributes
    ----------
    median : Forecast
        Each unknown's median half-width over the sets, as an interval.
    width_ratio : ndarray, shape (sets,)
        Per set: the median over the targets of its forecast interval width over the designed one (both clipped to
        the bounds; 1: as narrow as the design's, 2: twice as wide).
    """

    median: Forecast
    width_ratio: np.ndarray

    def ratio_summary(self) -> dict[str, float]:
        """The width ratio's median and 10th and 90th percentiles over the sets."""
        p10, median, p90 = np.percentile(self.width_ratio, [10, 50, 90])
        return {"median": float(median), "p10": float(p10), "p90": float(p90)}


def random_forecast(prior: Prior, known: Known, informations: Sequence[Sequence[np.ndarray]], designed: Forecast,
                    targets: np.ndarray, count: int, scale: np.ndarray, rng: np.random.Generator) -> RandomForecast:
    """:class:`RandomForecast` of sets of ``count`` random feasible candidates (scaled ``informations`` as for
    :func:`~sim2real.sysid.design.select.select_pushes`) against the ``designed`` forecast."""
    halves = random_half_widths(known, informations, count, rng)
    designed_width = designed.width[targets]
    ratios = []
    for half in halves:
        width = forecast(prior, half, scale).width[targets]
        ratios.append(float(np.median(np.divide(width, designed_width, out=np.ones_like(width),
                                                where=designed_width > 0))))
    return RandomForecast(forecast(prior, np.median(halves, axis=0), scale), np.array(ratios))


@dataclass(frozen=True)
class Design:
    """A designed set of pushes with its forecast.

    Attributes
    ----------
    prior : Prior
    space : PushSpace
    evaluated : tuple of CandidateInfo
        Every candidate, feasible or not (with why).
    selection : Selection
        Indices into the feasible candidates (:attr:`feasible`).
    targets : ndarray of int
        The unknowns the criterion is over.
    before : Forecast
        The intervals before the pushes, forecast as the refit's are (close to the fit's own).
    after : tuple of Forecast
        After the first 1, 2, ..., N chosen pushes.
    standard : Forecast or None
        After as many pushes of the experiment's standard sequence (None: not evaluated).
    standard_pushes : tuple of CandidateInfo
        Those pushes (evaluated at the current values).
    random : RandomForecast or None
        After as many pushes drawn at random from the feasible candidates (None: not evaluated).
    points : int
        Linearisation points the criterion was averaged over.
    """

    prior: Prior
    space: PushSpace
    evaluated: tuple[CandidateInfo, ...]
    selection: Selection
    targets: np.ndarray
    before: Forecast
    after: tuple[Forecast, ...]
    standard: Forecast | None = None
    standard_pushes: tuple[CandidateInfo, ...] = ()
    random: RandomForecast | None = None
    points: int = 1

    @property
    def feasible(self) -> list[CandidateInfo]:
        """The feasible candidates, in the order evaluated."""
        return [c for c in self.evaluated if c.feasible]

    @property
    def pushes(self) -> list[CandidateInfo]:
        """The chosen pushes, in run order."""
        feasible = self.feasible
        return [feasible[k] for k in self.selection.chosen]

    def experiment(self, base: ExperimentConfig) -> ExperimentConfig:
        """The experiment file's content: ``base``'s tolerance and default push, one trial per chosen push."""
        pushes = self.pushes
        return ExperimentConfig(distances=tuple(c.candidate.distance for c in pushes), push=base.push,
                                start_tolerance=base.start_tolerance,
                                trial_pushes=tuple(c.candidate.push for c in pushes))

    def as_dict(self) -> dict[str, object]:
        """design.json: the prior, the space, the chosen pushes and each forecast."""
        def intervals(f: Forecast) -> dict[str, object]:
            return {label: {"half_width": float(h), "ci95": [float(a), float(b)], "width": float(b - a),
                            "undetermined": bool(u)}
                    for label, h, a, b, u in zip(self.prior.labels, f.half_width, f.low, f.high, f.undetermined,
                                                 strict=True)}

        reasons: dict[str, int] = {}
        for info in self.evaluated:
            if info.reason is not None:
                key = info.reason.split(":")[0]
                reasons[key] = reasons.get(key, 0) + 1
        return {
            "format": DESIGN_FORMAT,
            "forecast": "linearised at the prior's values; see docs/fitting.md, 'Designing the next pushes'",
            "prior": {"source": self.prior.source, "unknowns": list(self.prior.labels),
                      "values": {k: float(v) for k, v in zip(self.prior.labels, self.prior.values, strict=True)},
                      "undetermined": [k for k, u in zip(self.prior.labels, self.prior.undetermined, strict=True)
                                       if u],
                      "row_variance": self.prior.row_variance, "noise": self.prior.noise_note,
                      "residuals": {"horizon": self.prior.spec.label, "mode": self.prior.spec.mode,
                                    "weights": self.prior.spec.weights.as_dict(), "engine": self.prior.spec.engine}},
            "targets": [self.prior.labels[k] for k in self.targets],
            "criterion": self.selection.criterion, "exchanges": self.selection.exchanges, "points": self.points,
            "space": self.space.as_dict(),
            "candidates": {"evaluated": len(self.evaluated), "feasible": len(self.feasible),
                           "left_out": reasons},
            "pushes": [c.as_dict() for c in self.pushes],
            "before": intervals(self.before),
            "after": [intervals(f) for f in self.after],
            "standard": None if self.standard is None else {
                "pushes": [c.as_dict() for c in self.standard_pushes], "after": intervals(self.standard)},
            "random": None if self.random is None else {
                "sets": len(self.random.width_ratio), "after": intervals(self.random.median),
                "width_ratio": self.random.ratio_summary()},
        }


def standard_candidates(base: ExperimentConfig, count: int) -> list[Candidate]:
    """``count`` pushes of the standard sequence: the experiment's distances in turn, its push each time."""
    distances = base.distances or (0.30, 0.35, 0.40, 0.45, 0.50)
    return [Candidate(d, base.push) for d in itertools.islice(itertools.cycle(distances), count)]


def design_pushes(prior: Prior, space: PushSpace, count: int, executor: Executor, *,
                  targets: Sequence[str] | None = None, criterion: str = "W", candidates: int = 120,
                  seed: int = 0, max_tilt_deg: float | None = None, standard: ExperimentConfig | None = None,
                  points: int = 4, progress: Callable[[str], None] | None = None) -> Design:
    """Design ``count`` pushes (see the module docstring).

    Parameters
    ----------
    prior : Prior
    space : PushSpace
    count : int
        Pushes to design.
    executor : Executor
        Evaluates the candidates.
    targets : sequence of str, optional
        Unknowns the criterion is over (default: all).
    criterion : str
        ``"W"`` (default), ``"D"`` or ``"A"`` (:mod:`sim2real.sysid.design.select`).
    candidates : int
        Candidates spread over the space.
    seed : int
        Seeds the candidates' Latin hypercube.
    max_tilt_deg : float, optional
        Leave out candidates that tip the box more than this (deg) at the prior's values; None: tipping allowed.
    standard : ExperimentConfig, optional
        Also forecast ``count`` pushes of its standard sequence.
    points : int
        Linearisation points the criterion is averaged over (the current values and ``points - 1`` draws from the
        prior, seeded by ``seed``; :mod:`sim2real.sysid.design.select`).
    progress : callable, optional
        Receives one line per stage.

    Raises
    ------
    Sim2RealError
        A bad target, count or criterion; no feasible candidate.
    """
    say = progress or (lambda line: None)
    target_index = prior.target_index(targets)
    pool = space.candidates(candidates, prior.params, seed)
    at = prior.points(points, np.random.default_rng(seed))
    say(f"evaluating {len(pool)} candidate pushes at {len(at)} point(s) (the current values and draws from the "
        f"prior): plan, limits, simulation, Jacobian of {len(prior.labels)} unknowns")
    evaluated = evaluate_candidates(executor, pool, at, prior.columns, prior.spec, max_tilt_deg, progress)
    firsts = tuple(_judged(per_point) for per_point in evaluated)
    feasible = [k for k, info in enumerate(firsts) if info.feasible]
    say(f"{len(feasible)} of {len(evaluated)} candidates are feasible; choosing {count} "
        f"({criterion}-optimal over {len(at)} point(s), greedy then exchange)")
    scale = np.sqrt(np.diag(prior.covariance))
    outer = np.outer(scale, scale)
    known = Known(regulariser=prior.regulariser * outer, earlier=prior.trial_information * outer,
                  earlier_trials=prior.trial_count)

    def scaled(info: CandidateInfo) -> np.ndarray:
        assert info.information is not None
        return info.information * outer / prior.row_variance

    informations = [[scaled(evaluated[k][j]) for k in feasible] for j in range(len(at))]
    selection = select_pushes(known, informations, count, target_index, criterion)
    after = tuple(forecast(prior, half, scale) for half in selection.half_widths[1:])
    random = random_forecast(prior, known, informations, after[-1], target_index, count, scale,
                             np.random.default_rng([seed, 1]))
    standard_forecast: Forecast | None = None
    standard_infos: tuple[CandidateInfo, ...] = ()
    if standard is not None:
        say(f"forecasting {count} pushes of the standard sequence for comparison")
        infos = evaluate_candidates(executor, standard_candidates(standard, count), at, prior.columns, prior.spec,
                                    None)
        usable = [per_point for per_point in infos if all(i.information is not None for i in per_point)]
        standard_infos = tuple(per_point[0] for per_point in infos)
        by_point = [[scaled(per_point[j]) for per_point in usable] for j in range(len(at))]
        standard_forecast = forecast(prior, mean_half_width(known, by_point, range(len(usable))), scale)
    return Design(prior, space, firsts, selection, target_index,
                  forecast(prior, selection.half_widths[0], scale), after, standard_forecast, standard_infos,
                  random=random, points=len(at))


def _judged(per_point: Sequence[CandidateInfo]) -> CandidateInfo:
    """A candidate's record: its evaluation at the current values, with the first reason any point gave to
    leave it out (a push that tips the box at one point may tip the real one)."""
    reason = next((info.reason for info in per_point if info.reason is not None), None)
    return per_point[0] if reason is None else replace(per_point[0], reason=reason, information=None)

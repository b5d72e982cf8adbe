"""More than one start: whether the optimum a fit reports depends on where it started.

Whole-trial costs of pushes are not convex (a box that tips or not, contact events that move by a
step), so Gauss-Newton from one start can end in a local optimum, and on a cost that is flat along
a parameter, different starts end at different values with the same cost. For small, cheap
problems a fit therefore also runs from a few other starts (:func:`start_points`: deterministic
Halton points in the box of two parameter scales around the given start, inside the bounds) and
compares where they end (:func:`compare_starts`):

* an optimum clearly lower than the given start's (by more than the cost tolerance) is taken,
  and a warning says which start it came from;
* another optimum *as low* (its cost within the tolerance of the chosen one's) at other values
  (more than the independent-rows 95 % half-width and 1 % of the bound range apart) is recorded;
  when it lies outside the 95 % interval the fit finally reports for a parameter, the optimum
  depends on the start in a way the interval does not admit: a problem
  (:func:`start_dependence`, applied with the other verdicts on the final intervals). An as-low
  optimum inside the intervals is what the intervals already say.

The cost tolerance is the larger of 1 % of the chosen cost and the likelihood-ratio threshold of
one parameter at 95 % (``½ χ²₁(0.95) σ²``, ``σ² = 2 cost / (m − p)``, independent rows).

A start that cannot be evaluated (its simulation failed or degraded at the start values) is moved
halfway towards the given start and tried again, twice at most, while it stays a quarter scale away
from it. One that still could not be evaluated checks nothing: when no other start could be, the
independence of the optimum from the start, which the fit claims by running them, was not checked,
and that is a problem; when some could and some could not, a warning names those that could not
(:func:`unevaluated_starts`).

By default (:func:`default_starts`) a fit with at most :data:`AUTO_MAX_PARAMETERS` unknowns whose
trials hold at most :data:`AUTO_MAX_STEPS` simulated steps in all runs :data:`AUTO_STARTS` starts
(the given one and two others); larger problems run one. The rule counts steps, not seconds, so
the same command always tries the same starts. A second start is stopped as soon as it reaches an
optimum already found (it would end there), which keeps the usual case, one optimum, cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim2real.sysid.solve.optimizer import LMResult

#: Most unknowns for which a fit tries more than one start by default. Four: a flat block pushed near
#: its centre (both frictions, the support ratio, the centre of mass across) stayed on a plateau at the
#: nominal start (cost 138918 against 403 at the truth); the third start found the truth.
AUTO_MAX_PARAMETERS = 4
#: Starts of a small, cheap fit by default: the given one and two others.
AUTO_STARTS = 3
#: Most simulated steps (all fitted trials together) for which a fit tries more than one start by
#: default: a minute of recordings at 100 Hz, a few seconds per optimizer run.
AUTO_MAX_STEPS = 6000
#: Half-width of the box the other starts are drawn from, in parameter scales around the given start.
START_BOX_SCALES = 2.0
#: How often a start that cannot be evaluated is moved halfway towards the given start and tried again.
START_RETRIES = 2
#: Optima closer than this fraction of the bound range (and than their 95 % intervals) are the same.
SAME_OPTIMUM_FRACTION = 0.01
#: Costs within this fraction of the chosen one (or the likelihood-ratio threshold) are as low.
COST_FRACTION = 0.01
#: Two-sided 95 % quantile of the standard normal distribution.
_Z95 = 1.959963984540054
#: Half the 95 % quantile of chi-square with one degree of freedom.
_HALF_CHI2_95 = 0.5 * 3.841458820694124


def default_starts(parameters: int, steps: int) -> int:
    """Starts a fit runs when ``--starts`` is not given.

    Parameters
    ----------
    parameters : int
        Unknowns of the fit (tied names count once).
    steps : int
        Simulated steps per evaluation: the grid samples of all fitted trials together.

    Returns
    -------
    int
        :data:`AUTO_STARTS` when ``parameters <= AUTO_MAX_PARAMETERS`` and ``steps <= AUTO_MAX_STEPS``, else 1.
    """
    if parameters <= AUTO_MAX_PARAMETERS and steps <= AUTO_MAX_STEPS:
        return AUTO_STARTS
    return 1


def _primes(count: int) -> list[int]:
    """The first ``count`` primes (the Halton bases of ``count`` coordinates)."""
    primes: list[int] = []
    candidate = 2
    while len(primes) < count:
        if all(candidate % q for q in primes):
            primes.append(candidate)
        candidate += 1
    return primes


def _halton(index: int, base: int) -> float:
    """The ``index``-th element (from 1) of the van der Corput sequence in ``base``, in (0, 1)."""
    fraction, result = 1.0, 0.0
    while index > 0:
        fraction /= base
        result += fraction * (index % base)
        index //= base
    return result


def start_points(x0: np.ndarray, lower: np.ndarray, upper: np.ndarray, typical: np.ndarray,
                 count: int) -> np.ndarray:
    """``count`` other starts: Halton points in ``[x0 − 2 typical, x0 + 2 typical]`` within the bounds.

    Points closer to ``x0`` than a quarter scale in every coordinate are skipped. Deterministic.

    Parameters
    ----------
    x0, lower, upper, typical : ndarray, shape (p,)
        The given start, the bounds and the parameter scales (> 0), each in the parameter's unit.
    count : int
        Number of other starts (>= 0).

    Returns
    -------
    ndarray, shape (count, p)
    """
    p = x0.shape[0]
    primes = _primes(p)
    low = np.maximum(lower, x0 - START_BOX_SCALES * typical)
    high = np.minimum(upper, x0 + START_BOX_SCALES * typical)
    points: list[np.ndarray] = []
    index = 0
    while len(points) < count and index < 1000:
        index += 1
        unit = np.array([_halton(index, primes[k]) for k in range(p)])
        point = low + unit * (high - low)
        if np.all(np.abs(point - x0) < 0.25 * typical):
            continue
        points.append(point)
    return np.array(points).reshape(len(points), p)


@dataclass(frozen=True)
class StartRun:
    """Where one start ended.

    Attributes
    ----------
    start : ndarray, shape (p,)
        Its start values.
    result : LMResult or None
        The optimizer's result (None when the start could not be evaluated).
    error : str
        Why the start could not be evaluated (empty otherwise).
    joined : int or None
        The index of an earlier start whose optimum this one reached (its run was stopped there).
    """

    start: np.ndarray
    result: LMResult | None
    error: str = ""
    joined: int | None = None


def optimum_tolerance(result: LMResult, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Per unknown (p,): how far apart two optima must be to differ.

    The larger of the independent-rows 95 % half-width at ``result`` (capped at a quarter of the
    bound range, so that a flat cost still tells far-apart optima apart) and
    :data:`SAME_OPTIMUM_FRACTION` of the bound range.
    """
    span = upper - lower
    rows, p = result.jacobian.shape
    hessian = result.jacobian.T @ (result.loss_weights[:, None] * result.jacobian)
    sigma2 = 2.0 * result.cost / max(rows - p, 1)
    with np.errstate(invalid="ignore"):
        half = _Z95 * np.sqrt(np.maximum(np.diag(np.linalg.pinv(hessian)) * sigma2, 0.0))
    half = np.where(np.isfinite(half), np.minimum(half, 0.25 * span), 0.25 * span)
    return np.maximum(half, SAME_OPTIMUM_FRACTION * span)


def cost_tolerance(result: LMResult) -> float:
    """How much higher than ``result``'s cost another optimum's may be and still count as as low."""
    rows, p = result.jacobian.shape
    sigma2 = 2.0 * result.cost / max(rows - p, 1)
    return max(COST_FRACTION * result.cost, _HALF_CHI2_95 * sigma2)


def _joined(x: np.ndarray, cost: float, optima: Sequence[tuple[int, LMResult, np.ndarray]]) -> int | None:
    """The run whose optimum an iterate ``x`` (p,) with ``cost`` has reached, if any.

    Reached: ``x`` lies within that optimum's tolerance (p,) and ``cost`` is not clearly lower
    than the optimum's (:func:`cost_tolerance`). An iterate near an optimum but clearly below its
    cost is in another basin (seen: a start near the truth stopped at cost 1852 as "the optimum"
    of a start that ended at 5572, which the fit then reported).
    """
    for run, optimum, tolerance in optima:
        if np.all(np.abs(x - optimum.x) <= tolerance) and cost >= optimum.cost - cost_tolerance(optimum):
            return run
    return None


Optimize = Callable[[np.ndarray, Callable[[np.ndarray, float], str | None]], LMResult]


def _toward(point: np.ndarray, x0: np.ndarray, typical: np.ndarray | None) -> np.ndarray | None:
    """The point halfway from ``point`` (p,) to the given start ``x0`` (p,), or None when it would lie
    within a quarter scale of ``x0`` in every coordinate (it would check nothing the given start does not)."""
    closer = 0.5 * (point + x0)
    if typical is None or np.all(np.abs(closer - x0) < 0.25 * typical):
        return None
    return closer


def run_starts(main: LMResult, x0: np.ndarray, others: np.ndarray, optimize: Optimize, lower: np.ndarray,
               upper: np.ndarray, log: Callable[[str], None] | None = None,
               labels: Sequence[str] = (), typical: np.ndarray | None = None) -> list[StartRun]:
    """Run the optimizer from each of ``others`` and record where each ended.

    A run whose iterate reaches the optimum of an earlier run (within that optimum's
    :func:`optimum_tolerance` and not clearly below its cost) is stopped there and marked
    ``joined``: it would end at that optimum. A start that cannot be evaluated (its simulation
    degraded at the start values: seen on a thin plate at low support and high table friction)
    is moved halfway towards ``x0``, up to :data:`START_RETRIES` times while it stays a quarter
    scale (``typical``) away from ``x0``; the run records the point it was evaluated at.

    Parameters
    ----------
    main : LMResult
        The given start's result.
    x0 : ndarray, shape (p,)
        The given start.
    others : ndarray, shape (k, p)
        The other starts (:func:`start_points`).
    optimize : callable
        ``(start (p,), stop_when) -> LMResult``; raises :class:`~sim2real.errors.Sim2RealError` when the
        start cannot be evaluated (the run is then recorded with its error).
    lower, upper : ndarray, shape (p,)
        Bounds.
    log : callable, optional
        Receives one line per start.
    labels : sequence of str
        Names of the unknowns, for the log.
    typical : ndarray, shape (p,), optional
        The parameter scales (:func:`start_points`); without them a start is not moved.

    Returns
    -------
    list of StartRun
        The given start first, then one per row of ``others``.
    """
    from sim2real.errors import Sim2RealError
    from sim2real.sysid.solve.optimizer import FitAbortedError

    runs = [StartRun(np.array(x0, dtype=float), main)]
    optima: list[tuple[int, LMResult, np.ndarray]] = [(0, main, optimum_tolerance(main, lower, upper))]

    def stop_when(x: np.ndarray, cost: float) -> str | None:
        run = _joined(x, cost, optima)
        return None if run is None else f"reached the optimum of start {run + 1}"

    for k, start in enumerate(others, start=2):
        point, result = np.array(start, dtype=float), None
        for attempt in range(START_RETRIES + 1):
            try:
                result = optimize(point, stop_when)
                break
            except FitAbortedError:
                raise
            except Sim2RealError as err:
                error = " ".join(str(err).split())
                closer = _toward(point, x0, typical)
                retry = attempt < START_RETRIES and closer is not None
                if log is not None:
                    log(f"start {k}/{len(others) + 1} ({_values(labels, point)}): could not be evaluated "
                        f"({error})" + ("; trying halfway towards the given start" if retry else ""))
                if not retry:
                    break
                point = closer  # type: ignore[assignment]
        if result is None:
            runs.append(StartRun(point, None, error))
            continue
        joined = (_joined(result.x, result.cost, optima) if result.stop_reason.startswith("reached the optimum")
                  else None)
        runs.append(StartRun(point, result, joined=joined))
        if joined is None:
            optima.append((len(runs) - 1, result, optimum_tolerance(result, lower, upper)))
        if log is not None:
            where = (f"reached the optimum of start {joined + 1}" if joined is not None else
                     f"ended at {_values(labels, result.x)} ({result.stop_reason})")
            log(f"start {k}/{len(others) + 1} ({_values(labels, point)}): cost {result.cost:.6g} after "
                f"{result.trace[-1].iteration} iteration(s), {where}")
    return runs


@dataclass(frozen=True)
class StartsVerdict:
    """What the other starts say about the given start's optimum.

    Attributes
    ----------
    chosen : int
        Index (into the runs, 0 = the given start) of the optimum the fit reports.
    as_low : tuple of int
        Indices of the runs that ended at other values with a cost as low as the chosen one's.
    warning : str or None
        The reported optimum came from another start (it was clearly lower).
    record : dict
        fit.json ``data.starts``.
    runs : tuple of StartRun
        Every start, the given one first.
    """

    chosen: int
    as_low: tuple[int, ...]
    warning: str | None
    record: dict[str, Any]
    runs: tuple[StartRun, ...] = ()


def _values(labels: Sequence[str], x: np.ndarray) -> str:
    return ", ".join(f"{name} = {value:.4g}" for name, value in zip(labels, x, strict=True))


def compare_starts(runs: Sequence[StartRun], labels: Sequence[str], lower: np.ndarray, upper: np.ndarray,
                   rule: str) -> StartsVerdict:
    """Choose the optimum to report and find the other optima that are as low (module docstring).

    Parameters
    ----------
    runs : sequence of StartRun
        The given start first (its result must exist), then the others.
    labels : sequence of str
        One name per unknown.
    lower, upper : ndarray, shape (p,)
        Bounds.
    rule : str
        How the number of starts was chosen, in words (for fit.json).
    """
    ended = [k for k, run in enumerate(runs) if run.result is not None and run.joined is None]
    costs = {k: float(runs[k].result.cost) for k in ended}  # type: ignore[union-attr]
    best = min(ended, key=lambda k: (costs[k], k))
    main = runs[0].result
    assert main is not None
    chosen = 0
    warning = None
    if best != 0 and costs[0] - costs[best] > cost_tolerance(runs[best].result):  # type: ignore[arg-type]
        chosen = best
        warning = (f"the optimum came from start {best + 1} of {len(runs)} ({_values(labels, runs[best].start)}): "
                   f"cost {costs[best]:.6g} there against {costs[0]:.6g} at the given start's optimum "
                   f"({_values(labels, main.x)}), a local optimum")
    reference = runs[chosen].result
    assert reference is not None
    tolerance = optimum_tolerance(reference, lower, upper)
    as_low = cost_tolerance(reference)
    rivals = [k for k in ended if k != chosen
              and np.any(np.abs(runs[k].result.x - reference.x) > tolerance)  # type: ignore[union-attr]
              and costs[k] - costs[chosen] <= as_low]
    record = {
        "count": len(runs), "rule": rule, "chosen": chosen + 1, "as_low": [k + 1 for k in rivals],
        "same_optimum_tolerance": dict(zip(labels, (float(t) for t in tolerance), strict=True)),
        "cost_tolerance": as_low,
        "runs": [{"start": dict(zip(labels, (float(v) for v in run.start), strict=True)),
                  "values": None if run.result is None else dict(zip(labels, (float(v) for v in run.result.x),
                                                                     strict=True)),
                  "cost": None if run.result is None else float(run.result.cost),
                  "iterations": None if run.result is None else int(run.result.trace[-1].iteration),
                  "stop_reason": None if run.result is None else run.result.stop_reason,
                  "joined": None if run.joined is None else run.joined + 1,
                  "error": run.error or None} for run in runs],
    }
    return StartsVerdict(chosen, tuple(rivals), warning, record, tuple(runs))


#: How the problem line of a multi-start whose other starts could none be evaluated begins.
UNCHECKED = "the optimum's independence of the start is unchecked:"
#: Longest reason quoted per start in those lines (the whole one is in fit.json ``data.starts.runs``).
_REASON_CHARS = 160


def unevaluated_starts(record: dict[str, Any]) -> tuple[str | None, str | None]:
    """What the other starts that could not be evaluated mean for the verdict: ``(problem, warning)``.

    Parameters
    ----------
    record : dict
        fit.json ``data.starts`` (:func:`compare_starts`; ``{"count": 1}`` without other starts).

    Returns
    -------
    (str or None, str or None)
        A problem (:data:`UNCHECKED` ...) when every other start failed: whether the optimum depends
        on the start was not checked. A warning naming the failed starts when at least one other
        start was evaluated (the check rests on those). Each names the starts and why, on one line
        (reasons longer than 160 characters are cut; the whole one is in ``data.starts.runs``).
        ``(None, None)`` when every start was evaluated.
    """
    runs = record.get("runs") or []
    others = list(enumerate(runs[1:], start=2))
    failed = [(number, run) for number, run in others if run.get("values") is None]
    if not failed:
        return None, None
    by_reason: dict[str, list[int]] = {}
    for number, run in failed:
        reason = " ".join(str(run.get("error") or "no reason recorded").split())
        if len(reason) > _REASON_CHARS:
            reason = reason[:_REASON_CHARS - 1].rstrip() + "…"
        by_reason.setdefault(reason, []).append(number)
    why = "; ".join(f"{'starts' if len(numbers) > 1 else 'start'} {', '.join(map(str, numbers))}: {reason}"
                    for reason, numbers in by_reason.items())
    counted = f"{len(failed)} of {len(others)} alternative start(s) could not be evaluated ({why})"
    if len(failed) == len(others):
        return (f"{UNCHECKED} {counted}; only the given start's optimum was found, so whether the optimum "
                "depends on the start is not known"), None
    return None, (f"{counted}; the check that the optimum does not depend on the start rests on the "
                  f"other {len(others) - len(failed)}")


def start_dependence(record: dict[str, Any], ci95: dict[str, list[float] | None]) -> str | None:
    """A problem line when a start ended as low as the reported optimum outside its 95 % intervals.

    Parameters
    ----------
    record : dict
        fit.json ``data.starts`` (:func:`compare_starts`).
    ci95 : dict of str to [float, float] or None
        The intervals the fit reports, by unknown (parameters without one are undetermined, said
        elsewhere, and not checked here).

    Returns
    -------
    str or None
        ``"the optimum depends on the start: ..."`` naming the start, where it ended, both costs and
        the parameter(s) outside their interval.
    """
    runs = record.get("runs") or []
    chosen = int(record.get("chosen", 1))
    if not runs or not 1 <= chosen <= len(runs):
        return None
    reference = runs[chosen - 1]
    found = []
    for number in record.get("as_low", []):
        run = runs[number - 1]
        outside = [f"{name} {value:.4g} outside [{ci95[name][0]:.4g}, {ci95[name][1]:.4g}]"  # type: ignore[index]
                   for name, value in (run.get("values") or {}).items()
                   if ci95.get(name) is not None and not ci95[name][0] <= value <= ci95[name][1]]  # type: ignore[index]
        if outside:
            found.append((number, run, outside))
    if not found:
        return None
    number, run, outside = found[0]
    values = ", ".join(f"{name} = {value:.4g}" for name, value in run["values"].items())
    start = ", ".join(f"{name} = {value:.4g}" for name, value in run["start"].items())
    return (f"the optimum depends on the start: start {number} of {len(runs)} ({start}) ended at {values} with cost "
            f"{run['cost']:.6g}, as low as the reported optimum's {reference['cost']:.6g} (within "
            f"{record.get('cost_tolerance', 0.0):.3g}), with {', '.join(outside)} (the 95 % interval)"
            + (f"; {len(found) - 1} more start(s) likewise" if len(found) > 1 else "")
            + "; the data do not single out one optimum")


def starts_warnings(verdict: StartsVerdict | None) -> list[str]:
    """The other starts' warnings: an optimum taken from another start, and other starts that could not be
    evaluated while some could (when none could, :func:`unevaluated_starts` makes it a problem)."""
    if verdict is None:
        return []
    return [w for w in (verdict.warning, unevaluated_starts(verdict.record)[1]) if w]

"""Starting points for fits whose cost is not convex: the cost on a grid of one parameter.

Whole-trial residuals of a push that topples or does not topple the box jump where the outcome
changes (a centre of mass a centimetre lower keeps a box standing that a higher one tips over),
so Gauss-Newton from a single start can end in the wrong basin. :func:`grid_costs` evaluates the
cost (no Jacobians) on a grid of one parameter; :func:`best_start` picks the lowest.

The same grid gives an interval that such a cost can support: local curvature at the minimum
says nothing about how far the next set of trials would move it (a push near its toppling
distance makes the cost steep there, and the box height's interval from ``JᵀWJ`` came out at
±0.05 mm against ±3 mm of spread between demo runs). :func:`grid_jackknife` leaves out one
trial at a time, takes the minimum of the others' summed grid cost (refined by a parabola
through its neighbours) and forms the trial jackknife's standard deviation.

Every grid point is compared on every residual row. A fit leaves out the rows that depend on a
degraded engine step at its start values (their Jacobian is not the trusted one), but a grid that did
so would compare points on different rows: one degraded step in a near-toppling push dropped 852 of
its rows at one point and made it the grid's best in a demo beside busy processes (without them its
cost was 0.4 times the cost next to the hidden value, with them 2.8 times). A degraded step's state is the
ladder's relaxed answer (:mod:`sim2real.physics.ladder`), good enough to rank costs; each point
counts the rows that rest on one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim2real.errors import InputError, Sim2RealError
from sim2real.params import ParameterSet, spec
from sim2real.sysid.residuals import ResidualSpec, trial_residuals
from sim2real.sysid.solve.fit import FitResult, prepare_trials, with_verdicts
from sim2real.sysid.solve.optimizer import LOSSES, loss_weights
from sim2real.sysid.uncertainty import measured_jackknife
from sim2real.trials import TrialRecord


@dataclass(frozen=True)
class GridPoint:
    """The cost at one grid value.

    Attributes
    ----------
    value : float
        The parameter's value (SI unit of the parameter).
    cost : float
        Half the sum of the loss of the weighted residuals (their squares for the linear loss) over every
        row of every trial (``inf`` when a trial could not be simulated), rows that depend on a degraded
        engine step included.
    degraded_rows : int
        Rows in ``cost`` that depend on a degraded engine step.
    trial_costs : tuple of float
        The cost of each trial (``inf`` from the first that could not be simulated on).
    """

    value: float
    cost: float
    degraded_rows: int
    trial_costs: tuple[float, ...] = ()


@dataclass(frozen=True)
class Jackknife:
    """Leave-one-trial-out minima of a grid cost and the jackknife's spread.

    Attributes
    ----------
    minimum : float
        Minimum of the summed cost over all trials (parabola-refined), in the parameter's unit.
    leave_one_out : tuple of float
        The minimum without each trial, in trial order.
    std : float
        ``sqrt((G − 1)/G Σ (θ₋ₖ − mean)²)``.
    ci95_halfwidth : float
        Student's t (``G − 1`` dof) times ``std``.
    """

    minimum: float
    leave_one_out: tuple[float, ...]
    std: float
    ci95_halfwidth: float


def grid_costs(records: Sequence[TrialRecord], params: ParameterSet, name: str, values: Sequence[float],
               residual_spec: ResidualSpec, platform: str = "auto", loss: str = "linear",
               loss_scale: float = 1.0) -> list[GridPoint]:
    """The fit cost of ``records`` with parameter ``name`` set to each of ``values``.

    Parameters
    ----------
    records : sequence of TrialRecord
    params : ParameterSet
        Every other parameter.
    name : str
        Registry name of the parameter on the grid.
    values : sequence of float
        Grid values (each within the parameter's bounds).
    residual_spec : ResidualSpec
        Horizon, weights and mode, as the fit will use them.
    platform : str
        Recorded platform to compare with (``auto``, ``real``, ``sim``).
    loss, loss_scale : str, float
        The fit's loss and its scale (weighted residual units; see
        :func:`~sim2real.sysid.solve.optimizer.loss_weights`), so that the grid ranks its points as the fit that
        starts from it will.

    Returns
    -------
    list of GridPoint
        In the order of ``values``.
    """
    entry = spec(name)
    if not values:
        raise InputError(f"grid for {name} is empty")
    if loss not in LOSSES or not loss_scale > 0.0:
        raise InputError(f"grid costs need a loss from {', '.join(LOSSES)} and a positive scale, got {loss} "
                            f"and {loss_scale:g}")
    for value in values:
        if not entry.lower <= value <= entry.upper:
            raise InputError(f"grid value {name}={value:g} is outside its bounds [{entry.lower:g}, {entry.upper:g}]")
    data = prepare_trials(records, params, platform)
    points = []
    for value in values:
        trial_params = params.replace({name: float(value)})
        costs, degraded = [np.inf] * len(data), 0
        for k, trial in enumerate(data):
            try:
                res = trial_residuals(trial, trial_params, (), residual_spec)
            except Sim2RealError:
                break
            costs[k] = loss_weights(res.residuals, loss, loss_scale)[0]
            degraded += int(np.sum(res.dropped_mask))
        points.append(GridPoint(float(value), float(sum(costs)), degraded, tuple(costs)))
    return points


def best_start(points: Sequence[GridPoint]) -> GridPoint:
    """The grid point of lowest cost (ties: the first)."""
    finite = [p for p in points if np.isfinite(p.cost)]
    if not finite:
        raise Sim2RealError("no grid point could be simulated")
    return min(finite, key=lambda p: p.cost)


def _refined_minimum(values: np.ndarray, costs: np.ndarray) -> float:
    """Grid minimum refined by the parabola through it and its neighbours (equal steps)."""
    j = int(np.argmin(costs))
    if 0 < j < len(costs) - 1 and np.all(np.isfinite(costs[j - 1:j + 2])):
        a, b, c = costs[j - 1], costs[j], costs[j + 1]
        curvature = a - 2.0 * b + c
        if curvature > 0.0:
            return float(values[j] + 0.5 * (a - c) / curvature * (values[j + 1] - values[j]))
    return float(values[j])


def grid_jackknife(points: Sequence[GridPoint]) -> Jackknife | None:
    """Trial jackknife of the grid minimum (see the module docstring).

    Parameters
    ----------
    points : sequence of GridPoint
        From :func:`grid_costs`, equally spaced, each with its per-trial costs.

    Returns
    -------
    Jackknife or None
        None with fewer than two trials, or when a trial could not be simulated on part of the grid.
    """
    from scipy import stats

    if not points or len(points[0].trial_costs) < 2:
        return None
    table = np.array([p.trial_costs for p in points]).T  # (trials, grid)
    if not np.all(np.isfinite(table)):
        return None
    values = np.array([p.value for p in points])
    total = table.sum(axis=0)
    trials = table.shape[0]
    loo = np.array([_refined_minimum(values, total - table[k]) for k in range(trials)])
    std = float(np.sqrt((trials - 1) / trials * np.sum((loo - loo.mean()) ** 2)))
    return Jackknife(_refined_minimum(values, total), tuple(float(v) for v in loo), std,
                     float(stats.t.ppf(0.975, trials - 1)) * std)


def with_jackknife(result: FitResult, name: str, jackknife: Jackknife) -> FitResult:
    """``result`` with ``name``'s standard deviation and interval widened to the grid jackknife's.

    The fitted value stays. The grid's leave-one-out minima replace the linearized jackknife
    (:func:`~sim2real.sysid.uncertainty.covariance.measured_jackknife`): the standard deviation becomes the
    larger of the sandwich's and the grid jackknife's, and the 95 % interval uses the jackknife's
    Student's t when that one is larger.
    ``data["uncertainty"]`` records the jackknife (``grid_jackknife``) and names the method; the
    verdicts that rest on the intervals are formed again from the new one (:func:`with_verdicts`).
    """
    from dataclasses import replace

    uncertainty = dict(result.data.get("uncertainty", {}))
    trials = len(jackknife.leave_one_out)
    uncertainty["grid_jackknife"] = {"parameter": name, "grid_minimum": jackknife.minimum,
                                     "leave_one_out": list(jackknife.leave_one_out), "std": jackknife.std,
                                     "ci95_halfwidth": jackknife.ci95_halfwidth}
    std, ci95, wider = measured_jackknife(result, name, jackknife.std, jackknife.ci95_halfwidth)
    if wider:  # the interval is the jackknife's now, with its degrees of freedom
        uncertainty["dof"] = {**uncertainty.get("dof", {}), name: float(trials - 1)}
    text = (f"trial jackknife of the grid minimum ({trials} leave-one-out minima, Student's t with {trials - 1} "
            "dof) in place of the linearized one, " + ("wider than the sandwich there" if wider else
                                                        "not wider than the sandwich"))
    uncertainty["method"] = f"{uncertainty.get('method', '')}; {name}: {text}"
    return with_verdicts(replace(result, std={**result.std, name: std}, ci95={**result.ci95, name: ci95},
                                 data={**result.data, "uncertainty": uncertainty}))

"""Starting points for fits whose cost is not convex: the cost on a grid of one parameter.

Whole-trial residuals of a push that topples or does not topple the box jump where the outcome
changes (a centre of mass a centimetre lower keeps a box standing that a higher one tips over),
so Gauss-Newton from a single start can end in the wrong basin. :func:`grid_costs` evaluates the
cost (no Jacobians) on a grid of one parameter; :func:`best_start` picks the lowest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.params import ParameterSet, spec
from sim2real.sysid.fit import prepare_trials
from sim2real.sysid.residuals import ResidualSpec, trial_residuals
from sim2real.trials import TrialRecord


@dataclass(frozen=True)
class GridPoint:
    """The cost at one grid value.

    Attributes
    ----------
    value : float
        The parameter's value (SI unit of the parameter).
    cost : float
        Half the sum of squared weighted residuals over every trial, rows that depend on a degraded
        engine step left out (``inf`` when a trial could not be simulated).
    degraded_rows : int
        Rows left out for degraded engine steps.
    """

    value: float
    cost: float
    degraded_rows: int


def grid_costs(records: Sequence[TrialRecord], params: ParameterSet, name: str, values: Sequence[float],
               residual_spec: ResidualSpec, platform: str = "auto") -> list[GridPoint]:
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

    Returns
    -------
    list of GridPoint
        In the order of ``values``.
    """
    entry = spec(name)
    if not values:
        raise Sim2RealError(f"grid for {name} is empty")
    for value in values:
        if not entry.lower <= value <= entry.upper:
            raise Sim2RealError(f"grid value {name}={value:g} is outside its bounds [{entry.lower:g}, {entry.upper:g}]")
    data = prepare_trials(records, params, platform)
    points = []
    for value in values:
        trial_params = params.replace({name: float(value)})
        cost, dropped = 0.0, 0
        for trial in data:
            try:
                res = trial_residuals(trial, trial_params, (), residual_spec)
            except Sim2RealError:
                cost = np.inf
                break
            keep = ~res.dropped_mask
            cost += 0.5 * float(res.residuals[keep] @ res.residuals[keep])
            dropped += int(np.sum(~keep))
        points.append(GridPoint(float(value), cost, dropped))
    return points


def best_start(points: Sequence[GridPoint]) -> GridPoint:
    """The grid point of lowest cost (ties: the first)."""
    finite = [p for p in points if np.isfinite(p.cost)]
    if not finite:
        raise Sim2RealError("no grid point could be simulated")
    return min(finite, key=lambda p: p.cost)

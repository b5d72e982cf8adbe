"""Trial jackknife of a fit: refit without each trial, and widen intervals the refits say are too narrow.

A fit's standard deviations come from the local curvature of its cost (and the trial-clustered
scatter of its gradients, :mod:`sim2real.sysid.uncertainty`). Where the cost has kinks — whole
trials in which a push tips the box or not, contact events that move by a step — the curvature at
the minimum says little about where the minimum would lie with other trials: on three noisy probe
pushes the box's centre-of-mass height missed its hidden value by a median 14 standard deviations.
The jackknife asks the data directly: fit again without each trial in turn, from the same start,
and take the spread of those fits, ``sqrt((G − 1)/G Σ (θ₋ₖ − mean)²)`` over ``G`` trials, with
Student's t (``G − 1`` degrees of freedom) for the 95 % interval. It costs ``G`` more fits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import stats

from sim2real.errors import Sim2RealError
from sim2real.params import spec
from sim2real.trials import TrialRecord


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


Refit = Callable[[Sequence[TrialRecord]], Any]


def refit_jackknife(records: Sequence[TrialRecord], names: Sequence[str], refit: Refit,
                    log: Callable[[str], None] | None = None) -> RefitJackknife | None:
    """Refit without each trial and measure the spread of the refits.

    Parameters
    ----------
    records : sequence of TrialRecord
        The trials of the fit (at least two).
    names : sequence of str
        Registry names to measure.
    refit : callable
        ``records -> FitResult`` with the fit's own settings and start values.
    log : callable, optional
        Receives one line per refit.

    Returns
    -------
    RefitJackknife or None
        None when fewer than two refits succeeded.
    """
    values: dict[str, list[float | None]] = {name: [] for name in names}
    failures: list[str] = []
    left_out = []
    for k, record in enumerate(records):
        left_out.append(record.name)
        if log is not None:
            log(f"jackknife: refit {k + 1}/{len(records)} without trial '{record.name}'")
        try:
            result = refit([r for j, r in enumerate(records) if j != k])
        except Sim2RealError as err:
            failures.append(f"without '{record.name}': {' '.join(str(err).split())}")
            for name in names:
                values[name].append(None)
            continue
        for name in names:
            values[name].append(float(result.values[name]))
    done = [k for k in range(len(records)) if values[names[0]][k] is not None] if names else []
    if len(done) < 2:
        return None
    count = len(done)
    quantile = float(stats.t.ppf(0.975, count - 1))
    std, half = {}, {}
    for name in names:
        sample = np.array([values[name][k] for k in done], dtype=float)
        std[name] = float(np.sqrt((count - 1) / count * np.sum((sample - sample.mean()) ** 2)))
        half[name] = quantile * std[name]
    return RefitJackknife(tuple(left_out), values, std, half, tuple(failures))


def with_refit_jackknife(result: Any, jackknife: RefitJackknife) -> Any:
    """``result`` (a FitResult) with each determined parameter's interval widened to the jackknife's.

    The fitted values stay. Where the jackknife's standard deviation exceeds the fit's, it replaces
    it and the 95 % interval becomes the value ± the jackknife's Student-t half-width (clipped to
    the registry bounds); parameters the data do not determine keep no standard deviation.
    ``data["uncertainty"]`` records the refits and names the method per parameter.
    """
    uncertainty = dict(result.data.get("uncertainty", {}))
    uncertainty["refit_jackknife"] = jackknife.as_dict()
    std, ci95 = dict(result.std), dict(result.ci95)
    widened, kept = [], []
    for name, jk_std in jackknife.std.items():
        if std.get(name) is None:
            continue
        if jk_std > std[name]:
            entry, value, half = spec(name), result.values[name], jackknife.ci95_halfwidth[name]
            std[name] = jk_std
            ci95[name] = [max(value - half, entry.lower), min(value + half, entry.upper)]
            widened.append(name)
        else:
            kept.append(name)
    refits = len(jackknife.trials) - len(jackknife.failures)
    text = f"trial jackknife of {refits} leave-one-out refits (Student's t with {refits - 1} dof)"
    if widened:
        text += f", wider for {', '.join(widened)}"
    if kept:
        text += f", not wider for {', '.join(kept)}"
    uncertainty["method"] = f"{uncertainty.get('method', '')}; {text}"
    return replace(result, std=std, ci95=ci95, data={**result.data, "uncertainty": uncertainty})


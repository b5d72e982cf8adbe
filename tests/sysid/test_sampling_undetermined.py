"""One definition of "undetermined" (issue 55): the parameters ``replay --spread`` and ``fit --spread-draws``
draw uniformly within their bounds are the ones the fit itself calls undetermined, judged on each
parameter's own 95 % interval and the fit's bounds, not on the fit-wide quantile times its standard
deviation (on real tosses with ``--jackknife`` the spread drew ``contact.mu_table`` over [0, 2] while the
fit listed no undetermined parameter)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from fixtures.pushed_box import NOMINAL, friction_push
from scipy import stats

from sim2real.sysid import FitProblem, ResidualSpec, fit_trials
from sim2real.sysid.files.fit_file import FitDocument
from sim2real.sysid.files.writeback import fit_document
from sim2real.sysid.prediction.sampling import draw_samples, fit_distribution, undetermined_unknowns
from sim2real.sysid.solve.fit import with_verdicts
from sim2real.sysid.uncertainty.jackknife import RefitJackknife, with_refit_jackknife
from sim2real.sysid.uncertainty.status import UNDETERMINED_COVERAGE


def _document(values: dict[str, float], std: dict[str, float], dof: dict[str, float],
              ci95: dict[str, list[float]] | None, bounds: dict[str, list[float]] | None = None) -> dict[str, Any]:
    """A fit.json of uncorrelated unknowns with per-parameter Student's t intervals (``ci95`` None: an older
    fit.json without intervals; ``bounds`` None: one without the fit's bounds)."""
    names = list(values)
    document: dict[str, Any] = {
        "status": "converged", "problems": [], "values": values, "start_values": values, "std": std,
        "correlation": {"names": names, "matrix": np.eye(len(names)).tolist()}, "tied": [],
        "data": {"uncertainty": {"method": "cluster-robust sandwich over 4 trials", "clusters": 4,
                                 "quantile": max(float(stats.t.ppf(0.975, d)) for d in dof.values()),
                                 "dof": dof}},
    }
    if ci95 is not None:
        document["ci95"] = ci95
    if bounds is not None:
        document["bounds"] = bounds
    return document


def _interval(value: float, std: float, dof: float, low: float, high: float) -> list[float]:
    """``value ± t_{0.975, dof} std`` clipped to ``[low, high]``, as the fit forms it."""
    half = float(stats.t.ppf(0.975, dof)) * std
    return [max(value - half, low), min(value + half, high)]


def _uniform(document: dict[str, Any]) -> tuple[str, ...]:
    dist = fit_distribution(FitDocument.from_json(document, "test"), "test", allow_undetermined=True)
    draw = draw_samples(dist, 50, np.random.default_rng(0), undetermined="uniform")
    assert draw.uniform == tuple(label for label, u in zip(dist.labels, undetermined_unknowns(dist), strict=True)
                                 if u)
    return draw.uniform


def test_a_narrow_own_interval_is_determined_although_the_fit_wide_quantile_would_cover_the_bounds() -> None:
    """``box.com_z`` rests on 2.24 trials (fit-wide quantile 3.9); ``contact.mu_table`` on 30. Its own interval
    (t of 30 dof) holds about half of [0, 2]: determined, as the fit says. The fit-wide quantile times its std
    would cover more than 90 % of its bounds: drawn uniformly before, though the fit named no problem."""
    values = {"contact.mu_table": 0.9, "box.com_z": -0.04}
    std = {"contact.mu_table": 0.25, "box.com_z": 0.002}
    dof = {"contact.mu_table": 30.0, "box.com_z": 2.24}
    quantile = float(stats.t.ppf(0.975, 2.24))
    assert 3.85 < quantile < 3.95
    assert 2.0 * quantile * std["contact.mu_table"] >= UNDETERMINED_COVERAGE * 2.0  # the old rule's verdict
    ci95 = {"contact.mu_table": _interval(0.9, 0.25, 30.0, 0.0, 2.0),
            "box.com_z": _interval(-0.04, 0.002, 2.24, -0.1, 0.1)}
    assert ci95["contact.mu_table"][1] - ci95["contact.mu_table"][0] < 0.6 * 2.0
    assert _uniform(_document(values, std, dof, ci95)) == ()
    # An older fit.json without ci95: each parameter's own t quantile from its degrees of freedom.
    assert _uniform(_document(values, std, dof, None)) == ()
    # Without its degrees of freedom either, only the fit-wide quantile is left to judge it on.
    assert _uniform(_document(values, std, {"box.com_z": 2.24}, None)) == ("contact.mu_table",)


def test_an_own_interval_over_the_bounds_is_drawn_uniformly_within_the_fit_bounds() -> None:
    """A measured jackknife of 3 trials (t of 2 dof, 4.30) widens ``contact.mu_table``'s interval over 92 % of
    [0, 2]: the fit calls it undetermined, and the spread draws it uniformly. The fit-wide quantile (3.18,
    from before the jackknife) times its std covers 70 %: it used to be drawn as determined."""
    values, std = {"contact.mu_table": 0.9}, {"contact.mu_table": 0.22}
    document = _document(values, std, {"contact.mu_table": 2.0}, {"contact.mu_table": _interval(0.9, 0.22, 2, 0, 2)})
    document["data"]["uncertainty"]["quantile"] = float(stats.t.ppf(0.975, 3))
    low, high = document["ci95"]["contact.mu_table"]
    assert high - low >= UNDETERMINED_COVERAGE * 2.0 > 2.0 * document["data"]["uncertainty"]["quantile"] * 0.22
    assert _uniform(document) == ("contact.mu_table",)
    # A fit narrowed by --bounds to [0.5, 1.3] records those bounds; its interval, clipped to them, covers
    # them: drawn uniformly within them, not within the registry's [0, 2].
    narrowed = _document(values, std, {"contact.mu_table": 30.0}, {"contact.mu_table": [0.5, 1.3]},
                         {"contact.mu_table": [0.5, 1.3]})
    dist = fit_distribution(FitDocument.from_json(narrowed, "test"), "test", allow_undetermined=True)
    assert (dist.lower[0], dist.upper[0]) == (0.5, 1.3)
    draw = draw_samples(dist, 500, np.random.default_rng(1), undetermined="uniform")
    assert draw.uniform == ("contact.mu_table",)
    assert draw.unknowns.min() >= 0.5 and draw.unknowns.max() <= 1.3 and np.ptp(draw.unknowns) > 0.7


def test_the_fit_problems_and_the_sampler_agree_on_a_real_fit() -> None:
    """Three probe pushes with frictions 0.3, 0.2 and 0.45. Within ``--bounds contact.mu_table=0.25:0.45``
    the interval covers the bounds (a problem of the fit); the registry range [0, 2] would hold it 12
    times over. Without the narrowing it is determined; refits outside its interval make it undetermined
    again. Each time the sampler draws uniformly exactly what the fit calls undetermined."""
    records = [friction_push(f"p{k}", speed, mu) for k, (speed, mu) in enumerate(((0.45, 0.3), (0.5, 0.2),
                                                                                   (0.6, 0.45)))]
    start = NOMINAL.replace({"contact.mu_table": 0.4})

    def sampled(result: Any) -> tuple[str, ...]:
        dist = fit_distribution(fit_document(result), "the fit", allow_unconverged=True, allow_undetermined=True)
        return draw_samples(dist, 20, np.random.default_rng(0), undetermined="uniform").uniform

    narrowed = fit_trials(FitProblem(records, start, "contact.mu_table", spec=ResidualSpec(horizon=1),
                                     bounds={"contact.mu_table": (0.25, 0.45)}), starts=1)
    assert narrowed.undetermined == ("contact.mu_table",)
    assert narrowed.problems[0].startswith("contact.mu_table is undetermined: its 95 % interval")
    assert sampled(narrowed) == ("contact.mu_table",)
    free = fit_trials(FitProblem(records, start, "contact.mu_table", spec=ResidualSpec(horizon=1)), starts=1)
    assert free.undetermined == () and not any("undetermined" in p for p in free.problems)
    assert sampled(free) == ()
    low, high = free.ci95["contact.mu_table"]
    refits = RefitJackknife(("p0", "p1", "p2"), {"contact.mu_table": [low, high, high + 0.5 * (high - low)]},
                            {"contact.mu_table": 1e-12}, {"contact.mu_table": 1e-12})
    disagreeing = with_verdicts(with_refit_jackknife(free, refits))
    assert disagreeing.undetermined == ("contact.mu_table",)
    assert sampled(disagreeing) == ("contact.mu_table",)
    assert sampled(dataclasses.replace(disagreeing, data={**disagreeing.data, "uncertainty": {
        k: v for k, v in disagreeing.data["uncertainty"].items() if k != "refit_jackknife"}})) == ()

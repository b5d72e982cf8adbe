"""Fit intervals against known truth: rows correlated within a trial, as the residuals of one rollout are.

A linear model ``y = a + b t`` observed in G trials whose rows share one random error of the line
per trial (a start pose off by a few millimetres shifts every residual of the trial) plus row noise.
The least-squares estimate is exact here, so the intervals alone decide the coverage.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.sysid.solve.multistart import GridPoint, grid_jackknife
from sim2real.sysid.uncertainty.covariance import summarize_uncertainty

TRUTH = np.array([0.3, -0.2])


def _problem(rng: np.random.Generator, trials: int, rows: int, trial_sd: float, row_sd: float
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Design (m, 2), residuals at the least-squares estimate (m,), estimate (2,)."""
    t = np.concatenate([rng.uniform(0.0, 1.0, rows) for _ in range(trials)])
    design = np.column_stack([np.ones_like(t), t])
    per_trial = np.repeat(rng.normal(0.0, trial_sd, (trials, 2)), rows, axis=0)  # each trial's own line error
    y = design @ TRUTH + np.sum(design * per_trial, axis=1) + rng.normal(0.0, row_sd, t.size)
    estimate = np.linalg.lstsq(design, y, rcond=None)[0]
    return design, design @ estimate - y, estimate


def _covers(trials: int, seeds: int, trial_sd: float = 0.05, row_sd: float = 0.01, rows: int = 40
            ) -> tuple[float, float, list[str]]:
    """Coverage of the reported 95 % intervals, and of the independent-rows ones, over ``seeds`` repeats."""
    hits = hits_independent = 0
    methods = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        design, residuals, estimate = _problem(rng, trials, rows, trial_sd, row_sd)
        unc = summarize_uncertainty(("a", "b"), estimate, design, residuals, np.ones(residuals.size),
                                    np.full(2, -10.0), np.full(2, 10.0), np.ones(2), clusters=[rows] * trials)
        methods.append(unc.method)
        for i, name in enumerate(("a", "b")):
            low, high = unc.ci95[name]  # type: ignore[misc]
            hits += low <= TRUTH[i] <= high
            sd = unc.std_independent[name]
            assert sd is not None and unc.std[name] is not None and unc.std[name] >= sd * (1 - 1e-12)
            hits_independent += abs(estimate[i] - TRUTH[i]) <= 1.959964 * sd
    return hits / (2 * seeds), hits_independent / (2 * seeds), methods


@pytest.mark.parametrize("trials", [5, 9, 30])
def test_trial_clustered_intervals_cover_the_truth(trials: int) -> None:
    coverage, independent, methods = _covers(trials, seeds=300)
    print(f"{trials} trials: 95 % interval coverage {coverage:.1%} (independent rows: {independent:.1%})")
    assert coverage >= 0.90, coverage
    assert independent < 0.75, independent  # the textbook intervals are far too narrow on such data
    assert methods[0].startswith(f"cluster-robust sandwich over {trials} trials")


def test_independent_rows_still_cover_when_trials_agree() -> None:
    """No trial offsets: the sandwich must not shrink the intervals below the textbook ones."""
    coverage, independent, _ = _covers(9, seeds=300, trial_sd=0.0)
    print(f"independent data: coverage {coverage:.1%} (independent rows {independent:.1%})")
    assert coverage >= 0.93 and independent >= 0.92


def test_one_trial_warns_that_its_intervals_assume_independent_rows() -> None:
    design, residuals, estimate = _problem(np.random.default_rng(1), 1, 40, 0.05, 0.01)
    unc = summarize_uncertainty(("a", "b"), estimate, design, residuals, np.ones(residuals.size),
                                np.full(2, -10.0), np.full(2, 10.0), np.ones(2), clusters=[40])
    assert unc.method.startswith("independent rows") and unc.clusters == 1
    assert any("likely too narrow" in w for w in unc.warnings)
    with pytest.raises(ValueError, match="rows"):
        summarize_uncertainty(("a", "b"), estimate, design, residuals, np.ones(residuals.size),
                              np.full(2, -10.0), np.full(2, 10.0), np.ones(2), clusters=[30])


def test_grid_jackknife_of_quadratic_trial_costs_is_the_jackknife_of_the_mean() -> None:
    """Equal quadratic costs per trial: the minimum is the mean of their minima, and leaving one out
    moves it exactly as the jackknife of a mean (std = sample std / sqrt(G))."""
    rng = np.random.default_rng(3)
    minima = rng.normal(-0.06, 0.004, 9)
    grid = np.arange(-0.10, 0.1001, 0.005)
    points = [GridPoint(float(v), float(np.sum((v - minima) ** 2)), 0, tuple(float(x) for x in (v - minima) ** 2))
              for v in grid]
    jackknife = grid_jackknife(points)
    assert jackknife is not None
    assert jackknife.minimum == pytest.approx(minima.mean(), abs=1e-12)
    assert jackknife.std == pytest.approx(np.std(minima, ddof=1) / np.sqrt(9), rel=1e-9)
    assert jackknife.ci95_halfwidth == pytest.approx(2.306004 * jackknife.std, rel=1e-6)
    one = [GridPoint(p.value, p.cost, 0, p.trial_costs[:1]) for p in points]
    assert grid_jackknife(one) is None
    unsimulated = [GridPoint(p.value, np.inf, 0, (np.inf, *p.trial_costs[1:])) for p in points]
    assert grid_jackknife(unsimulated) is None


def test_a_parameter_two_of_six_trials_inform_gets_their_degrees_of_freedom() -> None:
    """``y = a + b t + c u`` with ``u`` non-zero only in two of six trials (as two tipping pushes
    inform a centre-of-mass height): each trial's own error of ``c`` is seen by two trials, so its
    interval must widen to that. The sandwich alone with six trials' quantile (CR1, t with 5 dof)
    covered ``c`` in 87 % of these repeats."""
    truth = np.array([0.3, -0.2, 0.5])
    trials, rows, hits, dofs = 6, 40, 0, []
    for seed in range(300):
        rng = np.random.default_rng(seed)
        t = rng.uniform(0.0, 1.0, (trials, rows))
        u = np.zeros((trials, rows))
        u[:2] = rng.uniform(0.5, 1.0, (2, rows))
        design = np.column_stack([np.ones(t.size), t.ravel(), u.ravel()])
        per_trial = np.repeat(rng.normal(0.0, 0.05, (trials, 3)), rows, axis=0)
        y = design @ truth + np.sum(design * per_trial, axis=1) + rng.normal(0.0, 0.01, t.size)
        estimate = np.linalg.lstsq(design, y, rcond=None)[0]
        unc = summarize_uncertainty(("a", "b", "c"), estimate, design, design @ estimate - y, np.ones(t.size),
                                    np.full(3, -10.0), np.full(3, 10.0), np.ones(3), clusters=[rows] * trials)
        low, high = unc.ci95["c"]  # type: ignore[misc]
        hits += low <= truth[2] <= high
        dofs.append(unc.dof["c"])
    print(f"c: coverage {hits / 300:.1%}, median dof {np.median(dofs):.2f} (6 trials)")
    assert np.median(dofs) < 0.7 * (trials - 1)
    assert hits / 300 >= 0.93

"""Known truth with model error the fit does not contain (issue 55): planar pushes whose table friction
varies per trial (±15 %), whose plate poses are recorded in a tracking frame 1-3 mm and about 1° off the
rod's, with motion-capture noise. A fit of the three contact parameters on 8 pushes, calibrated on 12
held-out pushes (``fit --spread-draws``), predicts 8 other pushes with ``replay --spread``: the
calibrated 90 % band must hold most of them and the parameter-only band few, without being vacuous.

Two seeds here; ``python -m benchmarks.band_truth`` runs twenty (figures in docs/fitting.md,
"Prediction bands on known truth with model error").
"""

from __future__ import annotations

import pytest

from benchmarks import band_truth

SEEDS = (0, 1)


@pytest.fixture(scope="module")
def seeds() -> list[dict]:
    return [band_truth.one_seed(seed)[0] for seed in SEEDS]


@pytest.mark.slow
def test_the_calibrated_band_holds_the_test_pushes_and_the_parameter_only_band_does_not(seeds: list[dict]) -> None:
    for seed in seeds:
        fit, test = seed["fit"], seed["test"]
        assert fit["calibrated"] and test["calibrated"] and test["judged"] == band_truth.SETS["test"], seed
        # The model error is no parameter of the fit: the calibration finds millimetres of discrepancy.
        assert min(fit["discrepancy"]["x_mm"], fit["discrepancy"]["y_mm"]) > 0.5, fit["discrepancy"]
    inside = sum(s["test"]["inside"] for s in seeds)
    parameter = sum(s["test"]["parameter_inside"] for s in seeds)
    judged = sum(s["test"]["judged"] for s in seeds)
    # 90 % nominal: 12 of 16 or more (P(X <= 11) = 2 % at a true 90 %); the draws alone hold few.
    assert inside >= 12, [s["test"]["summary"] for s in seeds]
    assert parameter <= judged // 4 and parameter < inside - 6, [s["test"]["summary"] for s in seeds]


@pytest.mark.slow
def test_the_calibrated_band_is_wider_than_the_draws_but_not_vacuous(seeds: list[dict]) -> None:
    # Were the model right but for normal errors, this band's half-width would be a median 3.7 median errors
    # (band_truth.ideal_reference: a box over three coordinates, q the largest of 12 scores), the mean of two
    # seeds' ratios above 7.4 in 5 % of cases, one seed's above 12.5 in 1 %. A vacuous band lies far beyond.
    ratios = []
    for seed in seeds:
        position = seed["test"]["bands"]["position_m"]
        assert position["median_width"] > 2 * position["median_parameter_width"], position
        assert position["half_width_over_error"] < 12.5, position
        ratios.append(position["half_width_over_error"])
    assert sum(ratios) / len(ratios) < 7.4, ratios

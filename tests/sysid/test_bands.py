"""Calibrated prediction bands (:mod:`sim2real.sysid.prediction.bands`): modes, discrepancy, conformal coverage.

The statistics are checked over many seeds: a calibrated band must hold a new trial at its level
(split conformal prediction guarantees at least the level for exchangeable trials, and at most the
level plus 1/(n + 1)), also when the model's discrepancy dwarfs the draws' own spread; the draws
alone must not; modes must be found where the draws split and not where they do not.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.sysid.prediction.bands import (
    BandCalibration,
    calibrate,
    conformal_rank,
    estimate_discrepancy,
    find_modes,
    leave_one_out,
    misses_level,
    trial_band,
)

SCALE = np.array([0.002, 0.002, 2.0])  # draws' own spread: x, y (m), yaw (deg)


def _trial(rng: np.random.Generator, discrepancy: np.ndarray, draws: int = 30,
           bimodal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """One trial: predicted draws around a centre, and a real outcome off it by the discrepancy."""
    centre = rng.normal(size=3) * np.array([0.1, 0.1, 20.0])
    if bimodal:  # turns about 60 deg either way, left with probability 0.3
        side = np.where(rng.random(draws) < 0.3, 1.0, -1.0)
        predicted = centre + SCALE * rng.normal(size=(draws, 3))
        predicted[:, 2] += 60.0 * side
        real_side = 1.0 if rng.random() < 0.3 else -1.0
        real = centre + np.array([0.0, 0.0, 60.0 * real_side]) + SCALE * rng.normal(size=3)
    else:
        predicted = centre + SCALE * rng.normal(size=(draws, 3))
        real = centre + SCALE * rng.normal(size=3)
    return real + discrepancy * rng.normal(size=3), predicted


@pytest.mark.parametrize("discrepancy", [np.zeros(3), np.array([0.02, 0.01, 15.0])])
@pytest.mark.parametrize("bimodal", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_the_calibrated_band_holds_new_trials_at_its_level_over_many_seeds(discrepancy: np.ndarray,
                                                                           bimodal: bool) -> None:
    rng = np.random.default_rng(7)
    n, level, seeds = 14, 0.9, 250
    inside, parameter_inside = [], []
    for _ in range(seeds):
        trials = [_trial(rng, discrepancy, bimodal=bimodal) for _ in range(n + 1)]
        modes = [find_modes(p) for _, p in trials]
        calibration = calibrate([r for r, _ in trials[:n]], modes[:n], level)
        assert calibration is not None and calibration.calibrated
        real, predicted = trials[n]
        inside.append(trial_band(real, modes[n], calibration).inside)
        band = np.quantile(predicted, [0.05, 0.95], axis=0).T
        parameter_inside.append(bool(np.all((real >= band[:, 0]) & (real <= band[:, 1]))))
    coverage = float(np.mean(inside))
    # At least the level; at most the level + 1/(n + 1) = 0.967; 250 seeds: ±0.04 (2 sd).
    assert 0.86 <= coverage <= 0.99, coverage
    if np.any(discrepancy > 0):
        assert np.mean(parameter_inside) < 0.2  # the draws alone miss what the parameters cannot explain


def test_the_discrepancy_is_estimated_per_coordinate() -> None:
    rng = np.random.default_rng(3)
    hidden = np.array([0.01, 0.003, 8.0])
    trials = [_trial(rng, hidden, draws=40) for _ in range(300)]
    tau = estimate_discrepancy([r for r, _ in trials], [find_modes(p) for _, p in trials])
    np.testing.assert_allclose(tau, hidden, rtol=0.15)


def test_too_few_calibration_trials_widen_to_the_largest_score_and_say_their_level() -> None:
    rng = np.random.default_rng(5)
    trials = [_trial(rng, np.array([0.01, 0.01, 5.0])) for _ in range(6)]
    modes = [find_modes(p) for _, p in trials]
    calibration = calibrate([r for r, _ in trials], modes, 0.9)
    assert calibration is not None
    assert not calibration.calibrated and calibration.guaranteed_level == pytest.approx(6 / 7)
    assert calibration.quantile == pytest.approx(max(calibration.scores))
    assert conformal_rank(9, 0.9) == 9 and conformal_rank(8, 0.9) == 9  # 9 trials are the fewest for 90 %


def test_a_calibration_survives_its_json_and_another_level() -> None:
    rng = np.random.default_rng(11)
    trials = [_trial(rng, np.array([0.01, 0.01, 5.0])) for _ in range(25)]
    calibration = calibrate([r for r, _ in trials], [find_modes(p) for _, p in trials], 0.9)
    assert calibration is not None
    back = BandCalibration.from_dict(calibration.as_dict(), "fit.json")
    np.testing.assert_allclose(back.discrepancy, calibration.discrepancy)
    assert back.quantile == calibration.quantile and back.trials == 25
    assert back.at_level(0.5).quantile < back.quantile < back.at_level(0.95).quantile
    with pytest.raises(ValueError, match=r"fit\.json: the band calibration has no 'scores'"):
        BandCalibration.from_dict({"level": 0.9, "discrepancy": {"x_m": 0, "y_m": 0, "yaw_deg": 0}}, "fit.json")


def test_modes_are_found_where_the_draws_split_with_their_probabilities() -> None:
    rng = np.random.default_rng(1)
    detected, probability = 0, []
    for _ in range(50):
        left = rng.random(60) < 0.3
        draws = SCALE * rng.normal(size=(60, 3)) + np.array([0.4, 0.0, 0.0])
        draws[:, 2] += np.where(left, 65.0, -70.0)
        draws[left, 0] += 0.01  # a turn also moves the centre
        modes = find_modes(draws)
        if len(modes) == 2:
            detected += 1
            left_mode = max(modes, key=lambda m: m.centre[2])
            assert abs(left_mode.probability - left.mean()) < 1e-12
            probability.append(left_mode.probability)
    assert detected >= 49
    assert abs(np.mean(probability) - 0.3) < 0.03


@pytest.mark.parametrize("shape", ["normal", "uniform", "correlated"])
def test_a_single_cluster_is_one_mode(shape: str) -> None:
    rng = np.random.default_rng(2)
    split = 0
    for _ in range(200):
        if shape == "normal":
            draws = rng.normal(size=(40, 3)) * SCALE
        elif shape == "uniform":
            draws = rng.uniform(-1, 1, size=(40, 3)) * SCALE * 10
        else:
            draws = rng.normal(size=(40, 1)) * SCALE + 0.1 * rng.normal(size=(40, 3)) * SCALE
        split += len(find_modes(draws)) > 1
    assert split <= 4  # at most 2 %


def test_the_band_of_a_bimodal_prediction_is_two_boxes_not_the_hull() -> None:
    rng = np.random.default_rng(4)
    draws = SCALE * rng.normal(size=(60, 3))
    draws[:30, 2] += 60.0
    draws[30:, 2] -= 60.0
    modes = find_modes(draws)
    assert len(modes) == 2
    calibration = BandCalibration(0.9, 20, np.zeros(3), 3.0, 0.9, np.full(20, 3.0))  # boxes: centre ± 3 s
    between = trial_band(np.array([0.0, 0.0, 0.0]), modes, calibration)
    assert not between.inside  # 0 deg lies in the hull but in neither mode's box
    hull = between.hull()
    assert hull[2, 0] < 0.0 < hull[2, 1]
    assert trial_band(np.array([0.0, 0.0, -60.0]), modes, calibration).inside


def test_leave_one_out_judges_each_trial_by_the_others_and_the_binomial_check() -> None:
    rng = np.random.default_rng(9)
    trials = [_trial(rng, np.array([0.01, 0.01, 5.0])) for _ in range(12)]
    modes = [find_modes(p) for _, p in trials]
    per_trial = leave_one_out([r for r, _ in trials], modes)
    assert all(c is not None and c.trials == 11 for c in per_trial)
    assert misses_level(2, 6, 0.9) is not None  # 2 of 6 at 90 %: p < 0.001
    assert misses_level(5, 6, 0.9) is None and misses_level(9, 11, 0.9) is None

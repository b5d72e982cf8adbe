"""The start error beyond the recordings' noise: drawn as one shift of the whole start, chosen by the calibration
trials' mean log score, read back from its record."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim2real.sysid.prediction.spread import (
    NO_START_ERROR,
    START_ERRORS,
    StartError,
    StartNoise,
    TrialSpread,
    start_shifts,
)
from sim2real.sysid.prediction.spread_calibration import choose_start_error, mean_log_score


def _spread(name: str, real_yaw: float, predicted_yaw: np.ndarray, rng: np.random.Generator) -> TrialSpread:
    """A trial whose outcome is its yaw (deg); x, y barely move."""
    count = predicted_yaw.size
    predicted = np.column_stack([rng.normal(0.5, 1e-3, count), rng.normal(0.0, 1e-3, count), predicted_yaw])
    return TrialSpread(name, np.array([0.5, 0.0, real_yaw]), predicted)


def test_a_coin_toss_push_is_explained_by_the_start_error_that_splits_its_draws() -> None:
    """Realities turn +70 or -70 deg (3 of 10 left); with no start error every draw turns right, with one the
    draws split as the realities do: the chooser takes the one that splits them."""
    rng = np.random.default_rng(0)
    reals = [70.0 if k % 10 in (1, 4, 7) else -70.0 for k in range(20)]
    one_way = [_spread(f"t{k}", y, rng.normal(-70.0, 2.0, 30), rng) for k, y in enumerate(reals)]
    split = [_spread(f"t{k}", y, np.concatenate([rng.normal(-70.0, 2.0, 21), rng.normal(70.0, 2.0, 9)]), rng)
             for k, y in enumerate(reals)]
    assert len(split[0].modes()) == 2 and len(one_way[0].modes()) == 1
    choice = choose_start_error(START_ERRORS[:2], [one_way, split])
    assert choice.start_error == START_ERRORS[1]
    assert choice.judged == 20
    assert choice.mean_log_scores[1] > choice.mean_log_scores[0] + 5


def test_an_insensitive_push_keeps_no_start_error() -> None:
    """The same spreads at every candidate (a push the start does not move): a tie, and the smallest wins."""
    rng = np.random.default_rng(1)
    spreads = [_spread(f"t{k}", float(rng.normal(10.0, 1.0)), rng.normal(10.0, 1.0, 30), rng) for k in range(12)]
    choice = choose_start_error(START_ERRORS, [spreads] * len(START_ERRORS))
    assert choice.start_error == NO_START_ERROR
    assert choice.as_dict()["position_mm"] == 0.0
    assert len(choice.as_dict()["candidates"]) == len(START_ERRORS)


def test_trials_without_working_draws_at_some_candidate_are_left_out_of_the_comparison() -> None:
    rng = np.random.default_rng(2)
    good = [_spread(f"t{k}", 10.0, rng.normal(10.0, 1.0, 30), rng) for k in range(6)]
    broken = [*good[:5], TrialSpread("t5", good[5].real, np.empty((0, 3)), ("failed",))]
    choice = choose_start_error(START_ERRORS[:2], [good, broken])
    assert choice.judged == 5
    assert mean_log_score(good, []) == -math.inf
    with pytest.raises(ValueError):
        choose_start_error(START_ERRORS[:2], [good])


def test_the_start_error_moves_both_first_poses_alike_and_the_noise_each_its_own() -> None:
    """A box-only trial's two first poses: measurement noise moves each by its own draw (a velocity error), the
    start error both by the same (no velocity error)."""
    rng = np.random.default_rng(3)
    error_only = StartNoise().with_error(StartError(1e-3, math.radians(1.0)))
    shifts = start_shifts(error_only, 4000, rng)
    assert np.allclose(shifts[:, :3], shifts[:, 3:])
    assert np.std(shifts[:, 0]) == pytest.approx(1e-3, rel=0.05)
    assert np.std(shifts[:, 2]) == pytest.approx(math.radians(1.0), rel=0.05)
    noise_only = StartNoise(1e-3, 0.0, 1)
    shifts = start_shifts(noise_only, 4000, rng)
    assert abs(np.corrcoef(shifts[:, 0], shifts[:, 3])[0, 1]) < 0.1
    assert not StartNoise().active and error_only.active


def test_a_start_error_round_trips_and_bad_records_are_refused() -> None:
    error = StartError(5e-4, math.radians(0.5))
    back = StartError.from_dict(error.as_dict())
    assert back.position_m == pytest.approx(error.position_m) and back.yaw_rad == pytest.approx(error.yaw_rad)
    for bad in ({"position_mm": -1, "yaw_deg": 0}, {"position_mm": 1}, {"position_mm": True, "yaw_deg": 0}, []):
        with pytest.raises(ValueError):
            StartError.from_dict(bad)

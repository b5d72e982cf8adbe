"""A frame calibration's uncertainty in the predicted spreads (issues 55, 57): each draw sees the recorded box
poses through a tracking frame off by its own error. A box that moves alone is not changed by it (the table
is level and the same in every frame); a pushed box is, since the pusher meets it elsewhere."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from fixtures import planar_pushes

from sim2real.cli import main
from sim2real.execution import LocalExecutor
from sim2real.spatial import from_axis_angle
from sim2real.sysid.prediction.spread import framed, predict_spread
from sim2real.sysid.problem.data import prepare_trial
from sim2real.trials import read_run
from sim2real.trials.frames_file import FrameUncertainty
from sim2real.trials.trial_object import TrialObject

DRAWS = 6
#: 3 mm and 1.5 deg: far more than a calibration leaves, to see the effect.
STD = np.array([3e-3, 3e-3, np.radians(1.5)])


def _spread(trials: list, params: object, std: np.ndarray | None) -> list:
    if std is not None:
        trials = [replace(t, frame_uncertainty=FrameUncertainty(std, np.array([0.45, 0.0, 0.0]))) for t in trials]
    return predict_spread(LocalExecutor(1), trials, [params] * DRAWS, "auto", "auto",
                          rng=np.random.default_rng(3))


def test_framed_and_back_is_the_identity() -> None:
    rng = np.random.default_rng(0)
    position = rng.normal(0.4, 0.1, (5, 3))
    quaternion = np.array([from_axis_angle(np.array([0.3, -0.2, 1.0]) / 1.063, a) for a in rng.uniform(-3, 3, 5)])
    frame, pivot = (2e-3, -1e-3, 0.02), np.array([0.45, 0.0, 0.0])
    there = framed(position, quaternion, frame, pivot)
    assert np.max(np.abs(there[0] - position)) > 1e-3
    back = framed(*there, frame, pivot, inverse=True)
    np.testing.assert_allclose(back[0], position, atol=1e-12)
    np.testing.assert_allclose(np.abs(np.sum(back[1] * quaternion, axis=1)), 1.0, atol=1e-12)


def test_a_box_moving_alone_is_not_changed_by_the_frame(tmp_path: Path) -> None:
    """Two real cube tosses (box only): every draw's outcome with a 3 mm / 1.5 deg frame uncertainty is the
    outcome without one (one parameter set, no start noise: the draws differ by their frame error only)."""
    from sim2real.params import ParameterSet

    assert main(["import", "cube-toss", "--out", str(tmp_path / "tosses"), "--tosses", "0-1"]) == 0
    params = ParameterSet.nominal()
    trials = [prepare_trial(r, float(params["sim.dt"])) for r in read_run(tmp_path / "tosses")]
    plain, framed_ = _spread(trials, params, None), _spread(trials, params, STD)
    for a, b in zip(plain, framed_, strict=True):
        assert b.frame is not None and a.frame is None
        assert b.predicted.shape == (DRAWS, 3)
        np.testing.assert_allclose(b.predicted, a.predicted, atol=2e-6)  # m, m, deg
        assert np.ptp(a.predicted, axis=0).max() == 0.0  # identical draws without a frame error


def test_a_pushed_block_spreads_with_the_frame(tmp_path: Path) -> None:
    obj = TrialObject(dict(planar_pushes.GEOMETRY), "rod", "plate")
    truth = planar_pushes.params(planar_pushes.TRUTH)
    planar_pushes.write_pushes(tmp_path / "run", planar_pushes.TRAINING[:2], truth, obj=obj)
    trials = [prepare_trial(r, float(truth["sim.dt"])) for r in read_run(tmp_path / "run")]
    plain, framed_ = _spread(trials, truth, None), _spread(trials, truth, STD)
    for a, b in zip(plain, framed_, strict=True):
        assert np.ptp(a.predicted, axis=0).max() == pytest.approx(0.0, abs=1e-12)
        assert np.std(b.predicted[:, :2], axis=0).max() > 5e-4, b.predicted  # m
        assert b.as_dict()["frame_uncertainty"]["dx_m_std"] == pytest.approx(3e-3)


def test_framed_with_an_origin_error_and_back_is_the_identity() -> None:
    """With an origin error too: the recorded centre sits off the true one by the error in the box's axes
    (through the frame), and the inverse undoes it."""
    rng = np.random.default_rng(1)
    position = rng.normal(0.4, 0.1, (5, 3))
    quaternion = np.array([from_axis_angle(np.array([0.0, 0.0, 1.0]), a) for a in rng.uniform(-3, 3, 5)])
    pivot = np.array([0.45, 0.0, 0.0])
    there = framed(position, quaternion, (0.0, 0.0, 0.0, 2e-3, -1e-3), pivot)
    offsets = there[0] - position  # the error turned with each box
    np.testing.assert_allclose(np.linalg.norm(offsets, axis=1), np.hypot(2e-3, 1e-3), atol=1e-12)
    back = framed(*framed(position, quaternion, (1e-3, 2e-3, 0.01, 2e-3, -1e-3), pivot),
                  (1e-3, 2e-3, 0.01, 2e-3, -1e-3), pivot, inverse=True)
    np.testing.assert_allclose(back[0], position, atol=1e-12)


def test_an_origin_uncertainty_is_drawn_and_kept_and_old_records_read_without_one() -> None:
    pivot = np.array([0.45, 0.0, 0.0])
    uncertainty = FrameUncertainty(np.array([1e-4, 1e-4, 1e-3]), pivot, np.array([5e-4, 0.0]))
    document = uncertainty.as_dict()
    assert document["ox_m_std"] == 5e-4 and document["oy_m_std"] == 0.0
    again = FrameUncertainty.from_dict(document, "test")
    np.testing.assert_array_equal(again.drawn, [1e-4, 1e-4, 1e-3, 5e-4, 0.0])
    old = {key: value for key, value in document.items() if not key.startswith("o")}
    np.testing.assert_array_equal(FrameUncertainty.from_dict(old, "test").origin_std, [0.0, 0.0])
    with pytest.raises(Exception, match="not finite and >= 0"):
        FrameUncertainty.from_dict({**document, "ox_m_std": -1.0}, "test")


def test_a_box_moving_alone_spreads_with_the_origin(tmp_path: Path) -> None:
    """Two real cube tosses: a frame error leaves them alone, an origin error does not (the centre sits
    elsewhere in the spinning box)."""
    from sim2real.params import ParameterSet

    assert main(["import", "cube-toss", "--out", str(tmp_path / "tosses"), "--tosses", "0-1"]) == 0
    params = ParameterSet.nominal()
    trials = [prepare_trial(r, float(params["sim.dt"])) for r in read_run(tmp_path / "tosses")]
    origin = [replace(t, frame_uncertainty=FrameUncertainty(np.zeros(3), np.array([0.45, 0.0, 0.0]),
                                                            np.array([3e-3, 3e-3]))) for t in trials]
    spreads = predict_spread(LocalExecutor(1), origin, [params] * DRAWS, "auto", "auto", rng=np.random.default_rng(3))
    for spread in spreads:
        assert spread.frame is not None
        assert np.std(spread.predicted[:, :2], axis=0).max() > 5e-4, spread.predicted  # m

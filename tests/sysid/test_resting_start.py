"""The box's starting pose of whole-trial rollouts: the mean of the recorded poses while it rested.

Motion capture scatters each pose by millimetres; a rollout started from the first pose alone starts
from that error (near a toppling distance it decides the outcome). These tests build recordings with
known truth and noise and check that the start is the resting mean when the box rests, and the first
pose when it does not (a toss, a drifting box, motion before the rollout starts).
"""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.spatial import from_rotation_vector, multiply
from sim2real.sysid.problem.data import prepare_trial, resting_start
from sim2real.trials import PoseSeries, TrialRecord
from sim2real.trials.records import PlatformRecord

RATE = 100.0
REST = 50  # resting poses before the push
TRUE_POSITION = np.array([0.44, 0.01, 0.105])
TRUE_YAW = 0.2


def _true_quaternion() -> np.ndarray:
    return np.array([np.cos(TRUE_YAW / 2), 0.0, 0.0, np.sin(TRUE_YAW / 2)])


def _recording(seed: int, noise: float = 0.002, angle_noise: float = np.radians(0.5), speed: float = 0.5,
               drift: float = 0.0, samples: int = 150) -> PoseSeries:
    """Box poses at RATE Hz: at rest for REST samples (or drifting at ``drift`` m/s), then pushed along x."""
    rng = np.random.default_rng(seed)
    t = np.arange(samples) / RATE
    position = np.tile(TRUE_POSITION, (samples, 1))
    position[:, 0] += drift * t + speed * np.maximum(t - REST / RATE, 0.0)
    position += rng.normal(0.0, noise, position.shape)
    quaternion = np.array([multiply(from_rotation_vector(rng.normal(0.0, angle_noise, 3)), _true_quaternion())
                           for _ in range(samples)])
    return PoseSeries(t=t, position=position, quaternion=quaternion)


def _angle(q1: np.ndarray, q2: np.ndarray) -> float:
    return 2.0 * float(np.arccos(min(1.0, abs(float(np.dot(q1, q2))))))


@pytest.mark.parametrize("seed", range(20))
def test_the_start_of_a_resting_box_is_the_mean_of_its_resting_poses(seed: int) -> None:
    poses = _recording(seed)
    start = resting_start(poses, t_start=0.0)
    assert start is not None
    position, quaternion, samples = start
    # Nearly all resting poses are used: the push starts after pose REST (the first moving pose is
    # 5 mm away and the next 10 mm: within a few standard deviations of the noise).
    assert REST - 6 <= samples <= REST + 3
    # Averaging ~48 poses of 2 mm scatter: the error is ~0.3 mm per axis (bound at about 4 sigma).
    assert np.max(np.abs(position - TRUE_POSITION)) < 1.3e-3
    assert _angle(quaternion, _true_quaternion()) < np.radians(0.35)


def test_averaging_beats_the_first_pose_over_many_recordings() -> None:
    first, mean = [], []
    for seed in range(40):
        poses = _recording(100 + seed)
        start = resting_start(poses, t_start=0.0)
        assert start is not None
        first.append(np.linalg.norm(poses.position[0] - TRUE_POSITION))
        mean.append(np.linalg.norm(start[0] - TRUE_POSITION))
    assert np.median(mean) < 0.3 * np.median(first)


def test_a_noise_free_resting_box_starts_exactly_where_it_rests() -> None:
    poses = _recording(0, noise=0.0, angle_noise=0.0)
    start = resting_start(poses, t_start=0.0)
    assert start is not None
    assert np.allclose(start[0], TRUE_POSITION, atol=1e-12)
    assert start[2] >= REST - 3


def test_a_box_moving_from_the_first_pose_has_no_resting_start() -> None:
    """A toss, or a recording that begins mid-push: the rollout must start from the first pose."""
    poses = _recording(1, speed=1.5)
    moving = PoseSeries(t=poses.t[REST:] - poses.t[REST], position=poses.position[REST:],
                        quaternion=poses.quaternion[REST:])
    assert resting_start(moving, t_start=0.0) is None


@pytest.mark.parametrize("drift", [0.01, 0.02, 0.05, 0.1])
def test_a_sliding_box_is_not_averaged_into_a_lagging_start(drift: float) -> None:
    """A box sliding at ``drift`` m/s from the first pose: averaging it would put the start where the
    box was halfway through; the start must stay as close as a single pose (2 mm scatter per axis)."""
    errors = [0.0]  # of the starts returned (None: the rollout starts from the first pose)
    for seed in range(50):
        start = resting_start(_recording(seed, drift=drift, speed=0.0), t_start=0.0)
        if start is not None:
            errors.append(float(np.max(np.abs(start[0] - TRUE_POSITION))))
    assert max(errors) < 0.007


def test_a_rest_that_ends_before_the_rollout_starts_is_not_used() -> None:
    poses = _recording(3)
    assert resting_start(poses, t_start=(REST + 20) / RATE) is None


def test_pusher_trials_start_their_rollout_from_the_resting_mean() -> None:
    poses = _recording(4)
    pusher_x = TRUE_POSITION[0] - 0.2 + 0.5 * poses.t
    pusher = PoseSeries(t=poses.t, position=np.column_stack((pusher_x, np.zeros_like(pusher_x),
                                                             np.full_like(pusher_x, 0.12))),
                        quaternion=np.tile([1.0, 0.0, 0.0, 0.0], (len(poses), 1)))
    record = TrialRecord(name="probe", platforms={"real": PlatformRecord(box_pose=poses, pusher_pose=pusher)})
    data = prepare_trial(record, 0.01, "real")
    assert data.kind == "pusher"
    assert data.start_samples >= REST - 6
    position, _ = data.start_box()
    assert np.max(np.abs(position - TRUE_POSITION)) < 1.3e-3
    assert not np.allclose(position, data.box_position[0])

"""The still poses of a hand-eye recording (``sim2real.trials.handeye_recording``): which images were taken while
the arm was still, how they group into poses, and which image of a pose is tried first."""

from __future__ import annotations

import numpy as np

from sim2real.trials.handeye_recording import TRIES, StillRule, still_images, still_periods, tried_order

JOINT_RATE, IMAGE_RATE = 100.0, 15.0
#: Hold 0-1 s, move 1-2 s (joint 2 by 0.4 rad, minimum jerk), hold 2-3.5 s.
MOVE = (1.0, 2.0)


def _path(t: np.ndarray) -> np.ndarray:
    s = np.clip((t - MOVE[0]) / (MOVE[1] - MOVE[0]), 0.0, 1.0)
    q = np.tile([0.1, -0.3, -0.6, 0.0, 0.9, 0.2], (len(t), 1))
    q[:, 1] += 0.4 * (10 * s**3 - 15 * s**4 + 6 * s**5)
    return q


def _joints(noise: float = 3e-5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    t = np.arange(0.0, 3.5 + 1e-9, 1.0 / JOINT_RATE)
    return t, _path(t) + np.random.default_rng(seed).normal(0.0, noise, (len(t), 6))


def _image_times() -> np.ndarray:
    """Image stamps (M,), s."""
    return np.arange(0.0, 3.5, 1.0 / IMAGE_RATE)


def test_images_are_still_only_with_the_whole_window_still_and_covered() -> None:
    images = _image_times()
    joint_t, joint_q = _joints()
    rule = StillRule()
    still = still_images(images, joint_t, joint_q, rule)
    window = rule.half_window
    inside = ((images >= window) & (images <= MOVE[0] - window - 0.03)) | \
        ((images >= MOVE[1] + window + 0.03) & (images <= 3.5 - window))
    moving_or_near = (images > MOVE[0] - window + 0.03) & (images < MOVE[1] + window - 0.03)
    assert np.all(still[inside]) and not np.any(still[moving_or_near])
    assert not np.any(still[images < window])  # the joint states do not cover the window before them
    assert not still_images(np.array([-1.0, 5.0]), joint_t, joint_q, rule).any()


def test_a_gap_in_the_joint_states_leaves_the_images_near_it_unjudged() -> None:
    images = _image_times()
    joint_t, joint_q = _joints()
    keep = (joint_t < 0.5) | (joint_t > 0.65)  # 0.15 s without a joint state, while the arm holds
    still = still_images(images, joint_t[keep], joint_q[keep], StillRule())
    near = np.abs(images - 0.575) < 0.2 - 0.075
    assert not np.any(still[near]) and still[np.argmin(np.abs(images - 0.25))]


def test_the_threshold_and_window_are_the_rule_s() -> None:
    images = _image_times()
    joint_t, joint_q = _joints()
    slow = still_images(images, joint_t, joint_q, StillRule(max_speed=1.0))  # the move's tail passes as still
    assert slow.sum() > still_images(images, joint_t, joint_q, StillRule()).sum()
    wide = still_images(images, joint_t, joint_q, StillRule(half_window=0.6))
    assert not np.any(wide[(images > MOVE[0] - 0.6 + 0.03) & (images < MOVE[1] + 0.6 - 0.03)])
    noisy_t, noisy_q = _joints(noise=2e-3)  # 2 mrad of encoder noise reads as motion
    assert not still_images(images, noisy_t, noisy_q, StillRule()).any()


def test_runs_of_still_images_are_poses_and_a_split_run_at_one_pose_stays_one() -> None:
    images = _image_times()
    joint_t, joint_q = _joints()
    still = still_images(images, joint_t, joint_q, StillRule())
    periods = still_periods(images, still, joint_t, joint_q)
    assert len(periods) == 2
    assert np.all(images[periods[0]] < MOVE[0]) and np.all(images[periods[1]] > MOVE[1])
    split = still.copy()
    split[periods[1][3]] = False  # one image judged moving in the middle of the second hold
    merged = still_periods(images, split, joint_t, joint_q)
    assert len(merged) == 2 and len(merged[1]) == len(periods[1]) - 1


def test_the_images_of_a_pose_are_tried_from_its_middle_outwards() -> None:
    images = _image_times()
    period = np.arange(10, 21)
    order = tried_order(period, images)
    assert order[0] == 15 and len(order) == TRIES
    distances = np.abs(images[order] - images[15])
    assert np.all(np.diff(distances) >= -1e-12)

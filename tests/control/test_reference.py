"""The standard push reference: profile, IK-planned joint trajectory, config loading."""

import numpy as np
import pytest

from sim2real.control import PushConfig, load_experiment_config, plan_push, push_profile
from sim2real.errors import Sim2RealError
from sim2real.model import load_arm


def test_profile_reaches_end_smoothly():
    push = PushConfig(start_x=0.2, end_x=0.42, speed=0.2, ramp_time=0.2, pre_time=0.2, settle_time=1.0)
    t, x, xdot = push_profile(push)
    assert np.allclose(np.diff(t), 0.01)
    assert x[0] == pytest.approx(0.2) and x[-1] == pytest.approx(0.42, abs=1e-12)
    assert xdot[0] == 0.0 and xdot[-1] == 0.0
    assert xdot.max() == pytest.approx(0.2)
    # velocity is the derivative of position (central differences)
    np.testing.assert_allclose((x[2:] - x[:-2]) / 0.02, xdot[1:-1], atol=2e-3)
    # no jump in speed anywhere: smooth start and stop
    assert np.max(np.abs(np.diff(xdot))) < 0.2 * 0.01 / 0.2 * np.pi / 2 + 1e-9


def test_bad_push_is_refused():
    with pytest.raises(Sim2RealError, match="end_x must be greater"):
        PushConfig(start_x=0.4, end_x=0.3)


def test_planned_joint_trajectory_tracks_pusher_path():
    arm = load_arm()
    push = load_experiment_config().push
    trajectory = plan_push(arm, push)
    _, x, xdot = push_profile(push)
    np.testing.assert_allclose(trajectory.pusher[:, 0], x, atol=1e-6)
    np.testing.assert_allclose(trajectory.pusher[:, 2], push.height, atol=1e-6)
    # joint velocities map to the pusher velocity through the Jacobian
    for i in range(0, len(trajectory.t), 25):
        v = arm.pusher_jacobian(trajectory.position[i]) @ trajectory.velocity[i]
        np.testing.assert_allclose(v, [xdot[i], 0.0, 0.0], atol=1e-9)
    assert np.all(np.abs(trajectory.velocity) < np.pi)


def test_experiment_config_and_errors(tmp_path):
    config = load_experiment_config()
    assert config.distances == (0.30, 0.35, 0.40, 0.45, 0.50)
    bad = tmp_path / "e.yaml"
    bad.write_text("experiment:\n  ros__parameters:\n    push: {heigth: 0.1}\n")
    with pytest.raises(Sim2RealError, match="unknown push keys"):
        load_experiment_config(bad)
    with pytest.raises(Sim2RealError, match="experiment file not found"):
        load_experiment_config(tmp_path / "missing.yaml")

"""The shared PD law: formula, limits, refusals and the NaN stop."""

import numpy as np
import pytest

from sim2real.control import CommandLimits, PDGains, Workspace, pd_command, pd_law
from sim2real.model import load_arm
from sim2real.params import ParameterSet


@pytest.fixture(scope="module")
def arm():
    return load_arm()


@pytest.fixture(scope="module")
def limits(arm):
    return CommandLimits.for_arm(arm, ParameterSet.nominal())


Q = np.array([0.0, 0.1, -0.6, 0.0, 0.5, 0.0])


def test_law_is_the_documented_formula():
    gains = PDGains(kp=10.0, kd=0.5)
    q_ref, v_ref = Q + 0.01, np.full(6, 0.1)
    v = np.full(6, 0.05)
    np.testing.assert_allclose(pd_law(q_ref, v_ref, Q, v, gains), 0.1 + 10.0 * 0.01 + 0.5 * 0.05)


def test_gains_come_from_parameters():
    gains = PDGains.from_params(ParameterSet.nominal().replace({"pd.kp": 7.0, "pd.kd": 0.3}))
    assert (gains.kp, gains.kd) == (7.0, 0.3)


def test_velocity_is_clamped_to_pi(limits):
    out = pd_command(Q + 1.0, np.zeros(6), Q, np.zeros(6), PDGains(10.0, 0.0), limits)
    assert not out.stopped
    assert np.max(np.abs(out.velocity)) <= np.pi
    assert not np.any(out.active)


def test_acceleration_limit_on_command_change(limits):
    previous = np.zeros(6)
    out = pd_command(Q + 0.1, np.zeros(6), Q, np.zeros(6), PDGains(10.0, 0.0), limits, previous, dt=0.01)
    np.testing.assert_allclose(out.velocity, limits.max_acceleration * 0.01)


def test_non_finite_input_stops_the_arm(limits):
    bad = Q.copy()
    bad[2] = np.nan
    out = pd_command(Q, np.zeros(6), bad, np.zeros(6), PDGains(10.0, 0.1), limits)
    assert out.stopped and "non-finite measured position" in out.reason
    np.testing.assert_array_equal(out.velocity, 0.0)
    out = pd_command(Q, np.array([0, 0, np.inf, 0, 0, 0]), Q, np.zeros(6), PDGains(10.0, 0.1), limits)
    assert out.stopped and "reference velocity" in out.reason


def test_command_leaving_joint_limits_is_refused(arm, limits):
    q = arm.upper - 1e-4
    out = pd_command(q + 0.5, np.zeros(6), q, np.zeros(6), PDGains(10.0, 0.0), limits)
    assert out.stopped and "would leave its limits" in out.reason
    np.testing.assert_array_equal(out.velocity, 0.0)


def test_command_leaving_workspace_is_refused(arm):
    params = ParameterSet.nominal()
    here = arm.pusher_position(Q)
    tight = Workspace(lower=tuple(here - 1e-4), upper=tuple(here + 1e-4))
    limits = CommandLimits.for_arm(arm, params, workspace=tight)
    out = pd_command(Q + 0.05, np.zeros(6), Q, np.zeros(6), PDGains(10.0, 0.0), limits)
    assert out.stopped and "workspace" in out.reason
    still = pd_command(Q, np.zeros(6), Q, np.zeros(6), PDGains(10.0, 0.0), limits)
    assert not still.stopped


def test_tracker_samples_its_reference_at_the_tick_and_limits_acceleration(limits):
    from sim2real.control import JointTrajectory, ReferenceTracker

    gains = PDGains(kp=10.0, kd=0.2)
    tracker = ReferenceTracker(gains, limits, dt=0.01)
    assert tracker.command(0, Q, np.zeros(6)) is None  # no reference, no command
    t = np.array([0.0, 1.0])
    reference = JointTrajectory(t, np.stack([Q, Q + 0.2]), np.tile(np.full(6, 0.2), (2, 1)), np.zeros((2, 3)))
    start_ns = 5_000_000_000
    tracker.set_reference(start_ns, reference)
    q_ref, first = tracker.command(start_ns + 500_000_000, Q, np.zeros(6))  # half way: q_ref = Q + 0.1
    np.testing.assert_allclose(q_ref, Q + 0.1)
    expected = pd_command(Q + 0.1, np.full(6, 0.2), Q, np.zeros(6), gains, limits, np.zeros(6), 0.01)
    np.testing.assert_allclose(first.velocity, expected.velocity)
    # The next tick's acceleration limit starts from the command just given, not from zero, and
    # credits the time since that command: a late tick (20 ms) may change it twice as much.
    q_far = Q - 1.0  # far behind: the law asks for the largest speed
    _, second = tracker.command(start_ns + 510_000_000, q_far, np.zeros(6))
    step = limits.max_acceleration * 0.01
    np.testing.assert_allclose(np.abs(second.velocity - first.velocity), step, rtol=1e-9)
    _, late = tracker.command(start_ns + 530_000_000, q_far, np.zeros(6))
    np.testing.assert_allclose(np.abs(late.velocity - second.velocity), 2 * step, rtol=1e-9)


def test_pd_controller_refuses_the_real_platform():
    import rclpy

    from sim2real.nodes.pd_controller import PDControllerNode

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=99)
    try:
        with pytest.raises(ValueError, match="xarm_node"):
            PDControllerNode(parameter_overrides=[rclpy.parameter.Parameter("platform", value="real")],
                             context=context)
    finally:
        rclpy.shutdown(context=context)

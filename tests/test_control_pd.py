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

"""Convergence in hard but physically reasonable situations (regressions of reported failures)."""

import numpy as np
import pytest
from oracle.dynamics import next_state, problem_data
from oracle.solver import interior_point

from sim2real.params import ParameterSet
from sim2real.physics import BoxWorld, SolverSettings, kernels, layout
from sim2real.physics.constants import PUSHER_CONTACT_FREQUENCY
from sim2real.sim import BoxState
from sim2real.spatial import from_axis_angle

NOMINAL = ParameterSet.nominal()
#: The reality stand-in's hidden parameters (config/standin.yaml).
STANDIN = NOMINAL.replace({"contact.mu_table": 0.65, "contact.mu_pusher": 0.22, "box.com_z": -0.03,
                           "arm.servo_tau": 0.065, "arm.command_delay": 0.02})
#: The nominal box (11 x 13 x 21 cm) tipped onto its 13 x 21 face, long axis along world x.
ON_SIDE = BoxState([0.4654, 0.0, 0.055], from_axis_angle([0.0, 1.0, 0.0], np.pi / 2))
#: The pusher (2 cm sphere) sweeping back over it, sinking from 0.4 mm above its top to 1.0 mm into it.
OVER_TOP_START = np.array([0.41645, 0.0, 0.13039])
OVER_TOP_END = np.array([0.41524, 0.0, 0.12900])


def test_pusher_pressing_a_box_into_the_table_yields_instead_of_breaking_down():
    # With a rigid kinematic pusher this step has no solution (the box cannot go down); the solver's
    # impulses diverged until a pivot was exactly zero (ZeroDivisionError inside the compiled step).
    world = BoxWorld.from_params(NOMINAL, settings=SolverSettings(resting_shortcut=False))
    result = world.step(ON_SIDE, OVER_TOP_START, OVER_TOP_END)
    force = result.contacts.pusher_force
    penetration = -result.contacts.pusher_distance
    assert 1.5e-3 > penetration > 5e-4  # the contact gives way by about force / k ...
    stiffness = NOMINAL["box.mass"] * PUSHER_CONTACT_FREQUENCY**2
    assert force == pytest.approx(stiffness * penetration, rel=0.05)  # ... with that force
    # ... while the table holds the box up and table friction (0.5) beats pusher friction (0.3).
    assert result.contacts.table_distance > -1e-6
    np.testing.assert_allclose(result.state.position, ON_SIDE.position, atol=1e-5)


def test_compliant_pusher_step_matches_the_numpy_reference():
    world = BoxWorld.from_params(NOMINAL, settings=SolverSettings(resting_shortcut=False))
    result = world.step(ON_SIDE, OVER_TOP_START, OVER_TOP_END)
    theta = np.zeros(layout.THETA_SIZE)
    theta[0:13] = ON_SIDE.as_vector()
    theta[13:16], theta[19:22] = OVER_TOP_START, OVER_TOP_END
    theta[layout.PARAMS_OFFSET:] = world._params_theta
    data = problem_data(theta, world.dt, True)
    w, _, _ = interior_point(data, world.dt, NOMINAL["contact.kappa_sim"], world.settings, centred=False)
    np.testing.assert_allclose(result.state.as_vector(), next_state(theta, w.a, world.dt), atol=1e-9)
    assert w.gamma[-1] > 100 * float(data.impulse_scale)  # the pusher impulse is large, and finite


def test_singular_newton_block_is_reported_not_raised():
    out = np.empty(9)
    assert not kernels._invert3(np.zeros(9), 0, out, 0)
    assert not kernels._invert3(np.array([[1.0, 0.0, 0.0], [0.0, np.nan, 0.0], [0.0, 0.0, 1.0]]).ravel(), 0, out, 0)
    assert kernels._invert3(np.diag([2.0, 4.0, 8.0]).ravel(), 0, out, 0)
    np.testing.assert_allclose(out.reshape(3, 3), np.diag([0.5, 0.25, 0.125]))


@pytest.mark.parametrize(("y", "z", "gap", "speed"), [
    (0.01, 0.05, 0.002, 0.1),   # reported: failed at step 2
    (0.01, 0.105, 0.0005, 0.1),
    (0.03, 0.105, 0.0005, 0.1),
    (0.03, 0.05, 0.002, 0.3),
])
def test_sphere_pushing_a_resting_box_off_centre_converges(y, z, gap, speed):
    # The box slides and spins; its sliding corners' friction/slip pairs centre only slowly at κ_sim
    # (they used to exhaust the iteration budget); the forward solve now also accepts duality gaps ≤ 10 κ.
    world = BoxWorld.from_params(NOMINAL)
    half, radius = world.half_size, float(NOMINAL["pusher.radius"])
    state = BoxState([0.4, 0.0, half[2]], [1, 0, 0, 0])
    pusher = np.array([0.4 - half[0] - radius - gap, y, z])
    step = np.array([speed, 0.0, 0.0]) * world.dt
    spin = []
    for k in range(30):
        result = world.step(state, pusher, pusher + step, step_index=k)
        state, pusher = result.state, pusher + step
        spin.append(state.angular_velocity[2])
    assert result.iterations < world.settings.max_iterations
    # Pushed on its -x face at +y, the box turns clockwise seen from above and moves on with the pusher.
    assert min(spin) < -0.05
    assert state.position[0] > 0.4 + 0.5 * speed * 0.3 - gap


def test_straight_slide_stays_on_the_central_path():
    # The gap criterion only applies after gap_patience iterations: easy steps are centred exactly.
    world = BoxWorld.from_params(NOMINAL)
    state = BoxState([0.0, 0.0, 0.105], from_axis_angle([0, 0, 1], 0.3), [0.8, 0.3, 0.0])
    for _ in range(10):
        result = world.step(state)
        state = result.state
        assert result.iterations < world.settings.gap_patience
    assert abs(state.angular_velocity[2]) < 1e-6


@pytest.mark.parametrize(("params", "speed", "end_x", "distance"), [
    (NOMINAL, 0.6, 0.395, 0.30),   # ZeroDivisionError (box tipped onto its side, pusher sweeps over it)
    (STANDIN, 0.7, 0.395, 0.35),   # the same with the stand-in's hidden parameters
])
def test_fast_arm_push_tips_the_box_and_finishes(params, speed, end_x, distance):
    import dataclasses

    from sim2real.control import load_experiment_config, plan_push
    from sim2real.control.sim_platform import box_at_distance, simulate_arm_trial
    from sim2real.model import load_arm

    push = dataclasses.replace(load_experiment_config().push, speed=speed, end_x=end_x)
    result = simulate_arm_trial(params, plan_push(load_arm(params), push), box_at_distance(distance, params))
    assert np.all(np.isfinite(result.box))
    final = result.box[-1]
    assert final[2] == pytest.approx(0.055, abs=1e-3)  # lying on a 13 x 21 cm face (tipped over)
    assert final[0] > distance + 0.1

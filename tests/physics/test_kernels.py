"""The compiled step against the NumPy reference maps, and the resting shortcut against the full solve."""

from dataclasses import replace

import numpy as np
import pytest
from oracle import problem_vector
from oracle.dynamics import next_state, problem_data
from oracle.solver import interior_point

from sim2real.params import ParameterSet
from sim2real.physics import BoxWorld, SolverSettings, kernels
from sim2real.sim import BoxState, rollout
from sim2real.spatial import from_axis_angle, multiply, to_matrix

PARAMS = ParameterSet.nominal().replace({"contact.mu_table": 0.5, "contact.mu_pusher": 0.3,
                                         "contact.support_ratio": 0.6})
#: The same with rounded edges and corners (4 mm).
ROUNDED = PARAMS.replace({"box.edge_radius": 0.004})
FULL = SolverSettings(resting_shortcut=False)
HALF = np.array([0.055, 0.065, 0.105])  # nominal box, m


def _theta(state: BoxState, ps=None, pe=None, params: ParameterSet = PARAMS) -> np.ndarray:
    return problem_vector(params, state, ps, pe)


YAW = from_axis_angle([0, 0, 1], 0.4)
#: A 2 cm sphere touching the top corner (-x, -y, +z) of the box at (0.4, 0, 0.105) with yaw 0.4 rad (0.1 mm overlap).
CORNER_CONTACT = np.array([0.4, 0.0, 0.105]) + to_matrix(YAW) @ (
    HALF * [-1.0, -1.0, 1.0] + 0.0199 * np.array([-1.0, -1.0, 1.0]) / np.sqrt(3.0))

CASES = {
    "sliding and spinning": (BoxState([0.4, 0.0, 0.105], [1, 0, 0, 0], [0.5, 0.2, 0.0], [0.0, 0.0, 0.3]), None, None),
    "rocking on an edge": (BoxState([0.4, 0.0, 0.105 + 0.055 * np.sin(0.2) - 0.105 * (1 - np.cos(0.2)) + 1e-4],
                                    from_axis_angle([0.0, 1.0, 0.0], 0.2), [0.05, 0.0, -0.02], [0.0, 0.8, 0.0]),
                           None, None),
    "pushed on a face": (BoxState([0.4, 0.0, 0.105], [1, 0, 0, 0], [0.1, 0.0, 0.0], [0.0, 0.0, 0.0]),
                         np.array([0.4 - 0.075 + 2e-4, 0.02, 0.08]), np.array([0.4 - 0.074 + 2e-4, 0.0202, 0.08])),
    "pusher on a corner": (BoxState([0.4, 0.0, 0.105], YAW),
                           CORNER_CONTACT, CORNER_CONTACT + np.array([0.002, 0.001, -0.001])),
    "tumbling in the air": (BoxState([0.0, 0.0, 0.3], from_axis_angle([1.0, 1.0, 0.0], 0.4), [0.3, 0.0, 0.1],
                                     [1.0, -2.0, 0.5]), None, None),
}


@pytest.mark.parametrize("params", [PARAMS, ROUNDED], ids=["sharp", "rounded"])
@pytest.mark.parametrize("name", list(CASES))
def test_compiled_contact_data_matches_the_numpy_reference(name, params):
    state, ps, pe = CASES[name]
    theta = _theta(state, ps, pe, params)
    with_pusher = ps is not None
    n = 9 if with_pusher else 8
    reference = problem_data(theta, 0.01, with_pusher)
    jn, jt, bn, bt = np.empty((n, 6)), np.empty((n, 2, 6)), np.empty(n), np.empty((n, 2))
    mu, v0, md, scales = np.empty(n), np.empty(6), np.empty(6), np.empty(4)
    kernels.problem_data(theta, 0.01, n, False, jn, jt, bn, bt, mu, v0, md, scales, np.empty(kernels.SCRATCH_SIZE))
    np.testing.assert_allclose(jn, reference.normal_jacobian, atol=1e-14)
    np.testing.assert_allclose(jt, reference.tangent_jacobian, atol=1e-14)
    np.testing.assert_allclose(bn, reference.normal_offset, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(bt, reference.tangent_offset, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(mu, reference.friction)
    np.testing.assert_allclose(v0, reference.velocity_start, atol=1e-15)
    np.testing.assert_allclose(md, np.concatenate((np.repeat(reference.mass, 3), reference.inertia)))
    compliance = reference.compliance[-1] if with_pusher else 0.0
    np.testing.assert_allclose(scales, [reference.impulse_scale, reference.velocity_scale, reference.length_scale,
                                        compliance])


@pytest.mark.parametrize("name", list(CASES))
def test_compiled_step_matches_the_numpy_reference_solver(name):
    state, ps, pe = CASES[name]
    world = BoxWorld.from_params(PARAMS, settings=FULL)
    result = world.step(state, ps, pe)
    assert ps is None or result.contacts.active >= 1
    theta = _theta(state, ps, pe)
    data = problem_data(theta, world.dt, ps is not None)
    w, iterations, _ = interior_point(data, world.dt, PARAMS["contact.kappa_sim"], world.settings)
    expected = next_state(theta, w.a, world.dt)
    np.testing.assert_allclose(result.state.as_vector(), expected, atol=1e-10)
    # The reference solves every contact; the kernel leaves out those far from touching (their impulses at
    # κ = 1e-8 are far below the tolerance: the same next state above). Solving every contact too, it runs
    # the same iterates to rounding; in the last, ill-conditioned iterations at κ = 1e-8 rounding may decide
    # whether the central-path tolerance is met one iteration earlier or later.
    every = BoxWorld.from_params(PARAMS, settings=replace(FULL, skip_band=0.0)).step(state, ps, pe)
    np.testing.assert_allclose(every.state.as_vector(), expected, atol=1e-10)
    assert abs(every.iterations - iterations) <= 1


def test_resting_shortcut_gives_the_full_solution_without_iterating():
    yaw = from_axis_angle([0, 0, 1], 0.3)
    on_side = multiply(yaw, from_axis_angle([1, 0, 0], np.pi / 2))  # lying on a 11 x 21 cm face
    far = np.array([0.2, 0.1, 0.05])
    for state, ps, pe in (
        (BoxState.at_rest([0.4, 0.0, 0.105], yaw), None, None),
        (BoxState.at_rest([0.4, 0.0, 0.065], on_side), None, None),
        (BoxState.at_rest([0.4, 0.0, 0.105], yaw), far, far + np.array([0.001, 0.0, 0.0])),
    ):
        fast = BoxWorld.from_params(PARAMS).step(state, ps, pe)
        full = BoxWorld.from_params(PARAMS, settings=FULL).step(state, ps, pe)
        assert fast.iterations == 0 and full.iterations > 0
        np.testing.assert_allclose(fast.state.as_vector(), full.state.as_vector(), atol=1e-7)
        np.testing.assert_array_equal(fast.state.position, state.position)
        np.testing.assert_array_equal(fast.state.quaternion, state.quaternion)
        assert fast.contacts.active == full.contacts.active == 4
        assert fast.contacts.table_distance == pytest.approx(full.contacts.table_distance, abs=1e-9)
        assert fast.contacts.pusher_distance == pytest.approx(full.contacts.pusher_distance, abs=1e-9)
        assert fast.contacts.pusher_force == 0.0
        assert full.contacts.pusher_force == pytest.approx(0.0, abs=1e-6)


def test_resting_shortcut_takes_over_once_a_dropped_box_has_settled():
    initial = BoxState.at_rest([0.4, 0.0, 0.1055], from_axis_angle([0, 0, 1], 0.2))  # 0.5 mm above the table
    fast = rollout(BoxWorld.from_params(PARAMS), initial, steps=40)
    full = rollout(BoxWorld.from_params(PARAMS, settings=FULL), initial, steps=40)
    assert fast.iterations[0] > 0 and np.all(full.iterations > 0)
    assert np.all(fast.iterations[-20:] == 0)
    np.testing.assert_allclose(fast.states, full.states, atol=1e-7)


def test_resting_shortcut_is_not_taken_when_the_box_could_move():
    world = BoxWorld.from_params(PARAMS)
    rest = BoxState.at_rest([0.4, 0.0, 0.105])
    near = np.array([0.4 - 0.055 - 0.02 - 0.004, 0.0, 0.05])  # 4 mm from the -x face
    closing = np.array([0.4 - 0.055 - 0.02 - 0.008, 0.0, 0.05])  # 8 mm away, 5 mm nearer at the end of the step
    tilt = from_axis_angle([0.0, 1.0, 0.0], 0.05)
    tilted = BoxState.at_rest([0.4, 0.0, 0.105 * np.cos(0.05) + 0.055 * np.sin(0.05)], tilt)  # on an edge
    cases = {
        "pusher within the margin": (rest, near, near),
        "pusher closing in": (rest, closing, closing + np.array([0.005, 0.0, 0.0])),
        "box sliding slowly": (BoxState([0.4, 0.0, 0.105], [1, 0, 0, 0], [1e-4, 0.0, 0.0]), None, None),
        "box turning slowly": (BoxState([0.4, 0.0, 0.105], [1, 0, 0, 0], [0.0, 0.0, 0.0], [0.0, 0.0, 1e-3]),
                               None, None),
        "box on an edge": (tilted, None, None),
        "box hovering": (BoxState.at_rest([0.4, 0.0, 0.1051]), None, None),
    }
    for name, (state, ps, pe) in cases.items():
        assert world.step(state, ps, pe).iterations > 0, name
    assert world.step(rest, grad=True).iterations > 0, "gradients requested"
    soft = BoxWorld.from_params(PARAMS.replace({"contact.kappa_sim": 1e-4}))
    assert soft.step(rest).iterations > 0, "smoothed forward simulation"

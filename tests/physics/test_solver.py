"""The interior-point contact solver: Nesterov-Todd scaling, convergence on hard sliding contact."""

import numpy as np
from oracle.solver import cone_product, nt_scaling

from sim2real.params import ParameterSet
from sim2real.physics import BoxWorld
from sim2real.sim import BoxState

# A step of a whole arm trial (pusher sphere 4 cm high, 3 cm off-centre) in which the box slides and
# spins on four bottom corners at ω_z = -1.25 rad/s while the pusher closes in. The solver used to
# stall here at κ_sim = 1e-8 (central-path error ~4 after 60 iterations, with tiny residuals).
SLIDING_SPINNING_STATE = [
    0.36690456331646004, -0.014548698531706311, 0.10500000015801234, 0.9776703673405107,
    2.4020872361280705e-10, 1.2155044209366446e-09, -0.2101443618664823, 0.10189099314504929,
    0.030550391468241112, -1.6481783693109857e-08, -1.2635025751977324e-07, -2.7470764944890417e-07,
    -1.2492808753172946,
]
PUSHER_START = np.array([0.30468634875049994, 0.03033845814793232, 0.04399238545630107])
PUSHER_END = np.array([0.3050775905879241, 0.030484173369836123, 0.044289880390205455])


def _random_cone_points(rng: np.random.Generator, n: int, margin: float) -> np.ndarray:
    x = rng.normal(size=(n, 3))
    x[:, 0] = np.linalg.norm(x[:, 1:], axis=1) + margin * rng.uniform(0.0, 1.0, n) + 1e-12
    return x


def test_nesterov_todd_scaling_maps_both_cone_variables_to_one_point():
    rng = np.random.default_rng(3)
    xi = _random_cone_points(rng, 50, 1e-3)
    eta = _random_cone_points(rng, 50, 1.0) * 1e3
    scaling = nt_scaling(xi, eta)
    w_eta = np.einsum("cij,cj->ci", scaling.w, eta)
    w_inv_xi = np.einsum("cij,cj->ci", scaling.w_inverse, xi)
    np.testing.assert_allclose(w_eta, scaling.lam, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(w_inv_xi, scaling.lam, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(scaling.w @ scaling.w_inverse, np.broadcast_to(np.eye(3), (50, 3, 3)), atol=1e-8)
    np.testing.assert_allclose(scaling.w, np.swapaxes(scaling.w, 1, 2))
    # The scaled point carries the same complementarity (head) as the pair.
    np.testing.assert_allclose(cone_product(scaling.lam, scaling.lam)[:, 0], np.sum(xi * eta, axis=1), rtol=1e-9)


def test_sliding_spinning_box_with_approaching_pusher_converges():
    world = BoxWorld.from_params(ParameterSet.nominal())
    state = BoxState.from_vector(np.array(SLIDING_SPINNING_STATE))
    result = world.step(state, PUSHER_START, PUSHER_END)
    assert result.iterations <= 30
    assert result.violation[0] <= world.settings.residual_tol
    assert result.contacts.active == 4  # four bottom corners carry the box; the pusher does not touch yet
    assert abs(result.contacts.table_distance) < 1e-6
    # Sliding friction decelerates the box (μ g dt = 0.049 m/s at most per step) and does not reverse it.
    speed_before = np.linalg.norm(state.linear_velocity[:2])
    speed_after = np.linalg.norm(result.state.linear_velocity[:2])
    assert 0.0 < speed_before - speed_after < 0.5 * 9.81 * 0.01 + 1e-6
    with_grad = world.step(state, PUSHER_START, PUSHER_END, grad=True, param_names=("contact.mu_table",))
    np.testing.assert_allclose(with_grad.state.as_vector(), result.state.as_vector(), atol=1e-9)
    assert np.all(np.isfinite(with_grad.d_state)) and np.all(np.isfinite(with_grad.d_params))


def test_an_iterate_too_far_out_to_scale_is_a_breakdown_not_an_exception():
    """The compiled scaling of a cone pair whose determinant overflows (an iterate that ran off to 1e160) says
    it cannot scale, where it divided by a zero scale and raised ZeroDivisionError out of the engine."""
    from sim2real.physics.kernels.newton import nt_scaling as compiled_scaling

    n = 1
    w = np.zeros(6 + 8 * n)
    xi0, eta0 = 6 + 2 * n, 6 + 5 * n
    w[xi0:xi0 + 3] = [1.0, 0.1, 0.2]
    w[eta0:eta0 + 3] = [2.0, 0.3, -0.1]
    scale, scale_inverse, lam = np.empty((n, 3, 3)), np.empty((n, 3, 3)), np.empty((n, 3))
    assert compiled_scaling(w, n, scale, scale_inverse, lam)
    np.testing.assert_allclose(scale[0] @ scale_inverse[0], np.eye(3), atol=1e-12)
    w[eta0:eta0 + 3] = [1e160, 1e159, 0.0]
    assert not compiled_scaling(w, n, scale, scale_inverse, lam)


def test_a_push_whose_solve_ran_off_finishes():
    """A designed push of a flat block at high friction (found by benchmarks.design_truth): one step's iterate
    ran off until its scaling divided by zero, which ended the whole simulation with ZeroDivisionError. The
    step is now a breakdown the escalation ladder handles, and the trial finishes."""
    from sim2real.control import PushConfig
    from sim2real.model import load_arm
    from sim2real.sysid.design.space import Candidate, plan_candidate
    from sim2real.sysid.prediction.standard_trial import run_standard_trial

    params = ParameterSet.nominal().replace({
        "box.size_x": 0.10, "box.size_y": 0.10, "box.size_z": 0.05, "box.mass": 0.3,
        "contact.mu_table": 1.2132715515343597, "contact.mu_pusher": 1.4589931219679968,
        "contact.support_ratio": 0.5664437418921517})
    push = PushConfig(height=0.037, lateral=-0.028, speed=0.40, end_x=0.401, settle_time=1.0)
    reference, reason = plan_candidate(Candidate(0.436, push), load_arm(params), params)
    assert reason is None and reference is not None
    trial = run_standard_trial(0.436, params, reference=reference)
    assert trial.outcome.touched and np.all(np.isfinite(trial.result.box))

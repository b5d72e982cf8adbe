"""Implicit gradients of a step and of rollouts against central finite differences."""

import numpy as np
import pytest

from sim2real.params import ParameterSet
from sim2real.physics import DIFFERENTIABLE_PARAMS, BoxWorld, SolverSettings
from sim2real.sim import BoxState, rollout
from sim2real.spatial import from_axis_angle

KAPPA = 1e-3  # forward solve at κ_grad too, so finite differences see the same (smoothed) map
PARAMS = ParameterSet.nominal().replace({"contact.kappa_sim": KAPPA, "contact.kappa_grad": KAPPA,
                                         "contact.mu_table": 0.5, "contact.mu_pusher": 0.3,
                                         "contact.support_ratio": 0.7})
TIGHT = SolverSettings(residual_tol=1e-13, kappa_rtol=1e-10)
#: box.edge_radius sits at its lower bound (0) here: it is checked on rounded boxes below.
NAMES = tuple(n for n in DIFFERENTIABLE_PARAMS if n not in ("pusher.radius", "box.edge_radius"))
ROUNDED = PARAMS.replace({"box.edge_radius": 0.004})


def _next(params, x, ps, pe):
    world = BoxWorld.from_params(params, settings=TIGHT)
    return world.step(BoxState.from_vector(x), ps, pe).state.as_vector()


def _relative_error(fd: np.ndarray, analytic: np.ndarray) -> float:
    # Floor 1e-5: a column that is zero (box.mass while sliding) shows central-difference rounding of up to
    # 1.7e-9 at eps 1e-6 (measured with contact.support_ratio 0.7; it falls with a larger eps).
    return float(np.linalg.norm(fd - analytic) / max(np.linalg.norm(fd), 1e-5))


def _check_step(state: BoxState, ps=None, pe=None, eps: float = 1e-6, params: ParameterSet = PARAMS) -> None:
    names = (*NAMES, "box.edge_radius") if params["box.edge_radius"] > 0.0 else NAMES
    world = BoxWorld.from_params(params, settings=TIGHT)
    res = world.step(state, ps, pe, grad=True, param_names=names)
    x = state.as_vector()
    np.testing.assert_allclose(res.smoothed_state, res.state.as_vector(), atol=1e-10)
    for j in range(13):
        e = np.zeros(13)
        e[j] = eps
        fd = (_next(params, x + e, ps, pe) - _next(params, x - e, ps, pe)) / (2 * eps)
        assert _relative_error(fd, res.d_state[:, j]) < 1e-3, f"state column {j}"
    if ps is not None:
        for j in range(3):
            e = np.zeros(3)
            e[j] = eps
            fd = (_next(params, x, ps, pe + e) - _next(params, x, ps, pe - e)) / (2 * eps)
            assert _relative_error(fd, res.d_pusher_end[:, j]) < 1e-3, f"pusher end {j}"
            fd = (_next(params, x, ps + e, pe) - _next(params, x, ps - e, pe)) / (2 * eps)
            assert _relative_error(fd, res.d_pusher_start[:, j]) < 1e-3, f"pusher start {j}"
    for k, name in enumerate(names):
        h = eps * max(1.0, abs(params[name]))
        fd = (_next(params.replace({name: params[name] + h}), x, ps, pe)
              - _next(params.replace({name: params[name] - h}), x, ps, pe)) / (2 * h)
        assert _relative_error(fd, res.d_params[:, k]) < 1e-3, name


def test_gradients_resting():
    _check_step(BoxState.at_rest([0.4, 0.0, 0.105], from_axis_angle([0, 0, 1], 0.3)))


def test_gradients_sliding_and_spinning():
    _check_step(BoxState([0.4, 0.0, 0.105], [1, 0, 0, 0], [0.5, 0.2, 0.0], [0.0, 0.0, 0.3]))


def test_gradients_rocking_on_an_edge():
    q = from_axis_angle([0.0, 1.0, 0.0], 0.2)
    corner_drop = 0.055 * np.sin(0.2) - 0.105 * (1 - np.cos(0.2))
    _check_step(BoxState([0.4, 0.0, 0.105 + corner_drop + 1e-4], q, [0.05, 0.0, -0.02], [0.0, 0.8, 0.0]))


def test_gradients_pushing():
    # Steady push: box already moving with the pusher, pusher on the -x face off-centre in y and z.
    ps = np.array([0.4 - 0.055 - 0.02 + 2e-4, 0.02, 0.08])
    pe = ps + np.array([0.001, 0.0002, 0.0])
    # eps: at 1e-6 the curvature of the sphere contact shows in the z column; at 1e-7 the rounding of the
    # solution (~10 ulp of ω_z ≈ 0.33 rad/s, i.e. ~5e-16) over 2 eps is ~3e-9, near the 1e-8 absolute
    # floor of _relative_error for the (zero) box.mass column.
    _check_step(BoxState([0.4, 0.0, 0.105], [1, 0, 0, 0], [0.1, 0.0, 0.0], [0.0, 0.0, 0.0]), ps, pe, eps=3e-7)


def test_gradients_rounded_box_rocking_on_an_edge():
    r = 0.004
    q = from_axis_angle([0.0, 1.0, 0.0], 0.2)
    drop = (0.055 - r) * np.sin(0.2) - (0.105 - r) * (1 - np.cos(0.2))
    _check_step(BoxState([0.4, 0.0, 0.105 + drop + 1e-4], q, [0.05, 0.0, -0.02], [0.0, 0.8, 0.0]), params=ROUNDED)


def test_gradients_rounded_box_pushed_near_its_edge():
    # The sphere presses on the rounded vertical edge (-x, -y) of a resting box, partly sideways.
    corner = np.array([0.4 - 0.055 + 0.004, -0.065 + 0.004, 0.08])
    direction = np.array([-1.0, -0.5, 0.0]) / np.sqrt(1.25)
    ps = corner + (0.004 + 0.02 - 2e-4) * direction
    pe = ps + np.array([0.001, 0.0004, 0.0])
    _check_step(BoxState([0.4, 0.0, 0.105], [1, 0, 0, 0], [0.1, 0.04, 0.0], [0.0, 0.0, 0.0]), ps, pe, eps=3e-7,
                params=ROUNDED)


def test_rollout_sensitivities_match_finite_differences():
    names = ("contact.mu_table", "box.com_x", "box.mass")
    steps = 12
    start_x = 0.4 - 0.055 - 0.02 - 0.0005
    path = np.array([[start_x + 0.002 * k, 0.01, 0.07] for k in range(steps + 1)])
    initial = BoxState.at_rest([0.4, 0.0, 0.105])
    world = BoxWorld.from_params(PARAMS, settings=TIGHT)
    result = rollout(world, initial, path, grad_names=names)
    for k, name in enumerate(names):
        h = 1e-6
        plus = rollout(BoxWorld.from_params(PARAMS.replace({name: PARAMS[name] + h}), settings=TIGHT),
                       initial, path).states
        minus = rollout(BoxWorld.from_params(PARAMS.replace({name: PARAMS[name] - h}), settings=TIGHT),
                        initial, path).states
        fd = (plus - minus) / (2 * h)
        assert _relative_error(fd[-1], result.sensitivities[-1, :, k]) < 1e-3, name


def test_gradients_stay_finite_through_impact_and_hard_contact():
    params = ParameterSet.nominal()  # forward at κ_sim = 1e-8, gradients at κ_grad
    world = BoxWorld.from_params(params)
    q = from_axis_angle([1.0, 1.0, 0.0], 0.4)
    result = rollout(world, BoxState([0.0, 0.0, 0.2], q, [0.3, 0.0, 0.0]), steps=40,
                     grad_names=("contact.mu_table", "box.size_z"), initial_grad=True)
    assert np.all(np.isfinite(result.sensitivities))
    assert np.all(np.isfinite(result.initial_sensitivities))
    assert min(c.table_distance for c in result.contacts) > -1e-4


def test_unknown_or_non_differentiable_parameter_is_refused():
    world = BoxWorld.from_params(ParameterSet.nominal())
    state = BoxState.at_rest([0.0, 0.0, 0.105])
    with pytest.raises(Exception, match="did you mean"):
        world.step(state, grad=True, param_names=("box.mas",))
    with pytest.raises(Exception, match="not differentiable"):
        world.step(state, grad=True, param_names=("pd.kp",))

"""Table friction of a box whose centre of mass is off its geometric centre, with ``contact.support_ratio`` < 1.

The friction points of the support are the bottom corners moved towards the vertical through the centre of
mass (to the support ratio of their distance from it). The normal forces put the centre of pressure under the
centre of mass, so the friction of a translation acts there: a sliding plate does not turn, and a push along a
line through the centre of mass goes straight, whatever the ratio.
"""

import numpy as np
import pytest

from sim2real.params import ParameterSet
from sim2real.physics import BoxWorld, SolverSettings
from sim2real.sim import BoxState, Capsule, rollout
from sim2real.sim.box import uniform_support_ratio
from sim2real.sim.constants import GRAVITY
from sim2real.spatial import from_axis_angle, yaw

SIZE = (0.12, 0.08, 0.0095)
COM = (-0.01, 0.012)
PLATE = ParameterSet.nominal().replace({"box.size_x": SIZE[0], "box.size_y": SIZE[1], "box.size_z": SIZE[2],
                                        "box.mass": 0.7, "contact.mu_table": 0.3, "box.com_x": COM[0],
                                        "box.com_y": COM[1], "pusher.radius": 0.0031, "pusher.length": 0.05})
RATIOS = [1.0, "uniform", 0.3]


def _ratio(ratio):
    return uniform_support_ratio(SIZE[0], SIZE[1]) if ratio == "uniform" else ratio


@pytest.mark.parametrize("ratio", RATIOS)
def test_a_plate_with_its_mass_off_centre_slides_to_v2_over_2_mu_g_without_turning(ratio):
    world = BoxWorld.from_params(PLATE.replace({"contact.support_ratio": _ratio(ratio)}), None)
    velocity = np.array([0.8, 0.3, 0.0])
    start = BoxState([0.0, 0.0, SIZE[2] / 2], from_axis_angle([0, 0, 1], 0.5), velocity)
    states = rollout(world, start, steps=40, instantaneous_start=True).states
    along = velocity[:2] / np.linalg.norm(velocity[:2])
    travel = states[-1, :2] - states[0, :2]
    assert travel @ along == pytest.approx(float(velocity @ velocity) / (2 * 0.3 * GRAVITY), rel=0.005)
    assert abs(travel @ np.array([-along[1], along[0]])) < 1e-6  # straight
    np.testing.assert_allclose(states[:, 12], 0.0, atol=1e-6)  # no spin


@pytest.mark.parametrize("ratio", RATIOS)
def test_a_rod_pushing_along_a_line_through_the_centre_of_mass_moves_the_plate_straight(ratio):
    """Quasi-static pushing: a push through the centre of friction (the centre of pressure, under the centre
    of mass) translates the plate; off that line it turns, here by tens of degrees over 20 cm."""
    params = PLATE.replace({"contact.support_ratio": _ratio(ratio)})
    world = BoxWorld.from_params(params, Capsule(0.0031, 0.025))
    start = BoxState.at_rest([0.0, 0.0, SIZE[2] / 2])
    x0 = -SIZE[0] / 2 - 0.0031 - 0.002
    steps = 220  # 0.1 m/s for 0.22 m
    travel = 0.001 * np.arange(steps + 1)
    for lateral, turns in ((COM[1], False), (COM[1] + 0.002, True)):
        tip = np.stack([x0 + travel, np.full(steps + 1, lateral), np.full(steps + 1, 0.004)], axis=1)
        path = np.concatenate([tip, tip + np.array([0.0, 0.0, 0.05])], axis=1)
        final = rollout(world, start, path).states[-1]
        turned = abs(np.degrees(yaw(final[3:7])))
        if turns:
            assert turned > 5.0
        else:
            assert turned < 1e-3
            assert abs(final[1]) < 1e-6


KAPPA = 1e-3  # forward solve at κ_grad too, so finite differences see the same (smoothed) map
TIGHT = SolverSettings(residual_tol=1e-13, kappa_rtol=1e-10)
GRADIENT = PLATE.replace({"contact.kappa_sim": KAPPA, "contact.kappa_grad": KAPPA, "contact.support_ratio": 0.6})
NAMES = ("box.com_x", "box.com_y", "contact.support_ratio", "contact.mu_table")


def _relative_error(fd, analytic):
    return float(np.linalg.norm(fd - analytic) / max(np.linalg.norm(fd), 1e-5))


@pytest.mark.parametrize("case", ["sliding and spinning", "pushed by the rod"])
def test_step_gradients_in_the_centre_of_mass_and_the_support_ratio_match_finite_differences(case):
    pusher = Capsule(0.0031, 0.025)
    state = BoxState([0.0, 0.0, SIZE[2] / 2], from_axis_angle([0, 0, 1], 0.2), [0.3, 0.1, 0.0], [0.0, 0.0, 1.5])
    ps = pe = None
    if case == "pushed by the rod":
        state = BoxState([0.0, 0.0, SIZE[2] / 2], [1, 0, 0, 0], [0.1, 0.0, 0.0], [0.0, 0.0, 0.0])
        tip = np.array([-SIZE[0] / 2 - 0.0031 + 2e-4, 0.02, 0.004])
        ps = np.concatenate([tip, tip + np.array([0.0, 0.0, 0.05])])
        pe = ps + np.array([0.001, 0.0002, 0.0, 0.001, 0.0002, 0.0])

    def next_state(params):
        return BoxWorld.from_params(params, pusher, TIGHT).step(state, ps, pe).state.as_vector()

    res = BoxWorld.from_params(GRADIENT, pusher, TIGHT).step(state, ps, pe, grad=True, param_names=NAMES)
    for k, name in enumerate(NAMES):
        h = 3e-7 * max(1.0, abs(GRADIENT[name]))
        fd = (next_state(GRADIENT.replace({name: GRADIENT[name] + h}))
              - next_state(GRADIENT.replace({name: GRADIENT[name] - h}))) / (2 * h)
        assert _relative_error(fd, res.d_params[:, k]) < 1e-3, name


def test_rollout_sensitivities_of_a_rod_push_match_finite_differences():
    names = ("box.com_y", "contact.support_ratio")
    pusher = Capsule(0.0031, 0.025)
    steps = 15
    x0 = -SIZE[0] / 2 - 0.0031 - 0.0005
    tip = np.array([[x0 + 0.001 * k, 0.015, 0.004] for k in range(steps + 1)])
    path = np.concatenate([tip, tip + np.array([0.0, 0.0, 0.05])], axis=1)
    initial = BoxState.at_rest([0.0, 0.0, SIZE[2] / 2])
    result = rollout(BoxWorld.from_params(GRADIENT, pusher, TIGHT), initial, path, grad_names=names)
    for k, name in enumerate(names):
        h = 1e-6
        plus = rollout(BoxWorld.from_params(GRADIENT.replace({name: GRADIENT[name] + h}), pusher, TIGHT),
                       initial, path).states
        minus = rollout(BoxWorld.from_params(GRADIENT.replace({name: GRADIENT[name] - h}), pusher, TIGHT),
                        initial, path).states
        fd = (plus[-1] - minus[-1]) / (2 * h)
        assert _relative_error(fd, result.sensitivities[-1, :, k]) < 1e-3, name

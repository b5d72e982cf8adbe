"""The contact engine against closed-form mechanics (slide, rest, drop, flight, push/topple)."""

import numpy as np
import pytest

from sim2real.params import ParameterSet
from sim2real.physics import BoxWorld
from sim2real.sim import BoxState, rollout
from sim2real.sim.box import uniform_support_ratio
from sim2real.sim.constants import GRAVITY
from sim2real.spatial import from_axis_angle, tilt, yaw

MU = 0.5
HALF_Z = 0.105
PARAMS = ParameterSet.nominal().replace({"contact.mu_table": MU, "contact.mu_pusher": 0.0})


def _slide(world: BoxWorld, speed: float, direction: float, yaw_angle: float, steps: int) -> np.ndarray:
    velocity = speed * np.array([np.cos(direction), np.sin(direction), 0.0])
    q = from_axis_angle([0.0, 0.0, 1.0], yaw_angle)
    return rollout(world, BoxState([0.0, 0.0, HALF_Z], q, velocity), steps=steps, instantaneous_start=True).states


@pytest.mark.parametrize("mu", [0.3, 0.5])
@pytest.mark.parametrize("v0", [0.3, 1.0, 1.5])
def test_sliding_box_stops_after_v0_squared_over_2_mu_g_at_the_default_step(v0, mu):
    # Read as the velocity over the step before, a start velocity made the slide v0 dt / 2 short (2.9 % at
    # 1 m/s, mu 0.3); the half-step start removes that first-order error without sub-steps.
    world = BoxWorld.from_params(PARAMS.replace({"contact.mu_table": mu}))
    assert world.substeps == 1 and world.dt == pytest.approx(0.01)
    expected = v0**2 / (2 * mu * GRAVITY)
    states = _slide(world, v0, 0.0, 0.0, steps=int(1.5 * v0 / (mu * GRAVITY) / world.dt) + 5)
    assert abs(states[-1, 0] - expected) / expected < 0.005
    np.testing.assert_allclose(states[-1, 7:10], 0.0, atol=1e-6)  # stopped


def test_a_start_velocity_read_as_the_step_before_slides_short_by_v0_dt_over_2():
    """Without the half-step start the engine reads the velocity as the step's, as recorded states are."""
    world = BoxWorld.from_params(PARAMS.replace({"contact.mu_table": 0.3}))
    states = rollout(world, BoxState([0.0, 0.0, HALF_Z], [1, 0, 0, 0], [1.0, 0.0, 0.0]), steps=60).states
    expected = 1.0 / (2 * 0.3 * GRAVITY) - 1.0 * world.dt / 2
    assert states[-1, 0] == pytest.approx(expected, abs=2e-4)


def test_slide_is_straight_and_isotropic_in_yaw_and_direction():
    world = BoxWorld.from_params(PARAMS)
    distances = []
    for direction, yaw_angle in [(0.0, 0.0), (0.7, 0.3), (2.0, 1.1), (-2.6, 0.45)]:
        states = _slide(world, 1.0, direction, yaw_angle, steps=25)
        unit = np.array([np.cos(direction), np.sin(direction)])
        along = states[:, :2] @ unit
        across = states[:, :2] @ np.array([-unit[1], unit[0]])
        assert np.max(np.abs(across)) < 5e-4
        np.testing.assert_allclose(states[:, 12], 0.0, atol=1e-6)  # no spin from the friction cone
        distances.append(along[-1])
    assert max(distances) - min(distances) < 5e-4


def test_box_at_rest_does_not_creep():
    world = BoxWorld.from_params(PARAMS)
    start = BoxState.at_rest([0.3, -0.1, HALF_Z], from_axis_angle([0.0, 0.0, 1.0], 0.4))
    states = rollout(world, start, steps=500).states
    assert np.max(np.linalg.norm(states[:, :3] - states[0, :3], axis=1)) < 1e-5


@pytest.mark.parametrize("axis_angle", [0.0, 0.3])
def test_dropped_box_does_not_penetrate(axis_angle):
    world = BoxWorld.from_params(PARAMS)
    q = from_axis_angle([1.0, 0.5, 0.0], axis_angle)
    result = rollout(world, BoxState([0.0, 0.0, 0.4], q, [0.2, 0.0, 0.0]), steps=80)
    gaps = np.array([c.table_distance for c in result.contacts])
    assert gaps.min() > -1e-4
    assert gaps[-1] < 1e-3  # landed


def test_free_flight_is_a_parabola():
    world = BoxWorld.from_params(PARAMS)
    v0 = np.array([0.3, -0.2, 1.0])
    omega = np.array([0.0, 0.0, 2.0])  # spin about a principal axis stays constant
    start = BoxState([0.0, 0.0, 1.0], [1, 0, 0, 0], v0, omega)
    t = np.arange(31) * world.dt
    parabola = np.array([0.0, 0.0, 1.0]) + np.outer(t, v0) - 0.5 * GRAVITY * np.outer(t**2, [0, 0, 1])
    # A start velocity at the instant t = 0: the discrete path is the parabola, sampled exactly.
    result = rollout(world, start, steps=30, instantaneous_start=True)
    np.testing.assert_allclose(result.states[:, :3], parabola, atol=1e-9)
    np.testing.assert_allclose(result.states[1:, 10:13], np.broadcast_to(omega, (30, 3)), atol=1e-9)
    # Read as the velocity over the step before t = 0 (v_{-1/2}), the path is that of v0 - g dt/2.
    result = rollout(world, start, steps=30)
    np.testing.assert_allclose(result.states[:, :3], parabola - np.outer(t, [0, 0, GRAVITY * world.dt / 2]),
                               atol=1e-9)


def _push(height: float, steps: int = 100, speed: float = 0.05, params: ParameterSet = PARAMS) -> np.ndarray:
    world = BoxWorld.from_params(params)
    start_x = 0.4 - 0.055 - float(params["pusher.radius"]) - 0.0005
    path = np.array([[start_x + speed * world.dt * k, 0.0, height] for k in range(steps + 1)])
    return rollout(world, BoxState.at_rest([0.4, 0.0, HALF_Z]), path).states


@pytest.mark.parametrize("edge_radius", [0.0, 0.02])
def test_quasi_static_push_topples_above_d_over_2mu_and_slides_below(edge_radius):
    """Sliding at μ m g, the box tips about its leading bottom edge once the push's moment beats gravity's:
    above ``(d/2 - r) / μ``, with r the radius of rounded edges (the pivot is their table contact)."""
    params = PARAMS.replace({"box.edge_radius": edge_radius})
    depth = 0.11
    threshold = (depth / 2 - edge_radius) / MU  # 0.11 m sharp, 0.07 m with 2 cm rounding
    low = _push(0.6 * threshold, params=params)
    assert np.degrees(tilt(low[-1, 3:7])) < 0.1
    assert low[-1, 0] - low[0, 0] > 0.04  # slid along with the pusher
    high = _push(1.5 * threshold, params=params)
    tilts = np.degrees(tilt(high[:, 3:7]))
    assert tilts[-1] > 10.0 and np.all(np.diff(tilts[20:]) > 0)  # rocking forward


def test_a_rounded_box_topples_where_a_sharp_one_slides():
    between = 0.09  # above the 2 cm rounded box's threshold (0.07 m), below the sharp one's (0.11 m)
    sharp = _push(between)
    rounded = _push(between, params=PARAMS.replace({"box.edge_radius": 0.02}))
    assert np.degrees(tilt(sharp[-1, 3:7])) < 0.1
    assert np.degrees(tilt(rounded[-1, 3:7])) > 10.0


@pytest.mark.parametrize(("scale", "edge_radius"), [(1.0, 0.0), (1.2, 0.0), (2.5, 0.0), (1.0, 0.01), (1.2, 0.03)])
def test_a_box_tipping_about_its_edge_accelerates_as_its_inertia_scale_says(scale, edge_radius):
    """Released from rest on an edge, the box turns about the edge's table contact P at
    α = m g ρ_x / (s I_c + m |ρ|²), ρ the centre of mass from P. A rounded edge (radius r) touches r
    below its inner edge, which lies r inside the box's faces."""
    params = PARAMS.replace({"contact.mu_table": 1.0, "box.inertia_scale": scale, "box.edge_radius": edge_radius})
    sx, sz, mass, dt = (float(params[n]) for n in ("box.size_x", "box.size_z", "box.mass", "sim.dt"))
    ix, iz = 0.5 * sx - edge_radius, 0.5 * sz - edge_radius  # inner half sizes
    tilt_angle = 0.3  # rad about body y: the box rests on its +x bottom edge and falls back upright
    q = from_axis_angle([0.0, 1.0, 0.0], tilt_angle)
    height = edge_radius + ix * np.sin(tilt_angle) + iz * np.cos(tilt_angle)
    world = BoxWorld.from_params(params)
    state = world.step(BoxState.at_rest([0.0, 0.0, height], q)).state
    contact = np.array([ix * np.cos(tilt_angle) - iz * np.sin(tilt_angle),
                        -ix * np.sin(tilt_angle) - iz * np.cos(tilt_angle) - edge_radius])  # (x, z) from the centre
    lever = -contact
    inertia_c = mass / 12.0 * (sx**2 + sz**2)
    alpha = lever[0] * mass * GRAVITY / (scale * inertia_c + mass * (lever @ lever))
    assert state.angular_velocity[1] == pytest.approx(alpha * dt, rel=0.01)


@pytest.mark.parametrize("edge_radius", [0.0, 0.004, 0.02])
def test_a_rounded_box_rests_on_its_faces_and_reaches_lower_on_its_edges(edge_radius):
    """Flat on a face the centre sits half a size above the table whatever the rounding; turned 45° onto
    an edge it sits ``r + √2 (s/2 - r)`` above it (the rounded edge is an arc of radius r)."""
    from sim2real.sim.box import table_distance

    params = PARAMS.replace({"box.edge_radius": edge_radius})
    world = BoxWorld.from_params(params)
    half = world.half_size
    flat = rollout(world, BoxState.at_rest([0.0, 0.0, HALF_Z + 0.002]), steps=40).states[-1]
    assert flat[2] == pytest.approx(HALF_Z, abs=1e-6)
    on_edge = BoxState.at_rest([0.0, 0.0, 0.3], from_axis_angle([1.0, 0.0, 0.0], np.pi / 4)).as_vector()
    reach = edge_radius + np.sqrt(0.5) * ((half[1] - edge_radius) + (half[2] - edge_radius))
    assert float(table_distance(on_edge, half, 0.0, edge_radius)) == pytest.approx(0.3 - reach, abs=1e-12)


PLATE = PARAMS.replace({"box.size_x": 0.12, "box.size_y": 0.08, "box.size_z": 0.0095, "box.mass": 0.7,
                        "contact.mu_table": 0.3})


@pytest.mark.parametrize("ratio", [1.0, "uniform", 0.3])
def test_a_spinning_plate_slows_at_the_friction_torque_of_its_support(ratio):
    """Four supports at ρ times the corner distance d: torque μ m g ρ d, so ω falls at μ m g ρ d / I_z."""
    sx, sy, sz, mass, mu = (float(PLATE[n]) for n in ("box.size_x", "box.size_y", "box.size_z", "box.mass",
                                                       "contact.mu_table"))
    rho = uniform_support_ratio(sx, sy) if ratio == "uniform" else ratio
    world = BoxWorld.from_params(PLATE.replace({"contact.support_ratio": rho}))
    omega0 = 15.0
    start = BoxState([0.1, 0.2, sz / 2], from_axis_angle([0, 0, 1], 0.3), [0, 0, 0], [0, 0, omega0])
    states = rollout(world, start, steps=10, instantaneous_start=True).states
    torque = mu * mass * GRAVITY * rho * np.hypot(sx, sy) / 2
    alpha = torque / (mass * (sx**2 + sy**2) / 12)
    t = np.arange(11) * world.dt
    expected_angle = omega0 * t - 0.5 * alpha * t**2
    turned = np.unwrap([yaw(q) for q in states[:, 3:7]]) - 0.3
    assert omega0 / alpha > t[-1]  # still spinning at the end
    np.testing.assert_allclose(turned, expected_angle, rtol=0.005, atol=1e-6)
    np.testing.assert_allclose(states[:, :2], [[0.1, 0.2]] * 11, atol=1e-6)  # spins in place
    np.testing.assert_allclose(states[:, 2], sz / 2, atol=1e-6)  # a 9.5 mm plate stays flat on the table


def test_uniform_support_ratio_is_the_mean_distance_of_the_face_over_its_corner_distance():
    assert uniform_support_ratio(1.0, 1.0) == pytest.approx((np.sqrt(2) + np.log(1 + np.sqrt(2))) / 6 / np.sqrt(0.5))
    grid = (np.arange(400) + 0.5) / 400 - 0.5
    x, y = np.meshgrid(0.12 * grid, 0.08 * grid)
    mean = np.hypot(x, y).mean()
    assert uniform_support_ratio(0.12, 0.08) == pytest.approx(mean / np.hypot(0.06, 0.04), rel=1e-5)


@pytest.mark.parametrize("ratio", [1.0, 0.3])
def test_the_support_ratio_changes_turning_not_sliding(ratio):
    world = BoxWorld.from_params(PLATE.replace({"contact.support_ratio": ratio}))
    start = BoxState([0.0, 0.0, 0.0095 / 2], from_axis_angle([0, 0, 1], 0.5), [0.8, 0.3, 0.0])
    states = rollout(world, start, steps=40, instantaneous_start=True).states
    expected = 0.8**2 + 0.3**2
    assert np.linalg.norm(states[-1, :2]) == pytest.approx(expected / (2 * 0.3 * GRAVITY), rel=0.005)
    np.testing.assert_allclose(states[:, 12], 0.0, atol=1e-6)  # no spin

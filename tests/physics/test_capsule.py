"""The capsule pusher: closed-form segment-box geometry, equivalence with the sphere, physics and gradients."""

import numpy as np
import pytest
from oracle import problem_vector
from oracle.dynamics import problem_data
from oracle.geometry import capsule_box_distance, segment_box_parameters, sphere_box_distance

from sim2real.params import ParameterSet
from sim2real.physics import BoxWorld, SolverSettings, kernels
from sim2real.physics.constants import CONTACT_BAND
from sim2real.physics.layout import PARAMS_OFFSET, THETA_PARAMS
from sim2real.sim import BoxState, Capsule, Sphere, rollout
from sim2real.spatial import from_axis_angle, to_matrix

HALF = np.array([0.055, 0.065, 0.105])  # nominal box, m
PARAMS = ParameterSet.nominal().replace({"contact.mu_table": 0.5, "contact.mu_pusher": 0.3})
RADIUS = 0.01


def _random_segments(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(count, 3)) * 0.12
    b = a + rng.normal(size=(count, 3)) * 0.08
    b[0::4, 2] = a[0::4, 2]  # parallel to the z faces
    b[1::4, 0:2] = a[1::4, 0:2]  # parallel to the vertical edges
    b[2::8] = a[2::8]  # zero length
    return a, b


def test_segment_parameter_finds_the_minimum_of_the_sphere_distance_along_the_segment():
    a, b = _random_segments(400, 0)
    distance, _, point, t = capsule_box_distance(a, b, HALF, np.full(len(a), RADIUS))
    samples = np.linspace(0.0, 1.0, 4001)
    centres = a[:, None, :] + samples[None, :, None] * (b - a)[:, None, :]
    sampled, _, _ = sphere_box_distance(centres, HALF, np.full(centres.shape[:2], RADIUS))
    assert np.all(distance <= sampled.min(axis=1) + 1e-10)  # never worse than any sampled point
    assert np.all(sampled.min(axis=1) - distance < 1e-4)  # and the samples come close to it
    assert np.all((t >= 0.0) & (t <= 1.0))
    assert np.all(np.abs(point) <= HALF + 1e-12)  # on the box surface


def test_compiled_segment_parameters_match_the_numpy_reference():
    a, b = _random_segments(600, 1)
    reference = np.stack(segment_box_parameters(a, b, HALF), axis=-1)
    compiled = np.array([kernels.segment_box_parameters(a[i], b[i], HALF, np.empty(8)) for i in range(len(a))])
    np.testing.assert_allclose(compiled, reference, atol=1e-12)


def test_capsule_lying_flat_on_a_face_touches_at_the_middle_of_the_overlap_and_moves_continuously_as_it_tilts():
    x = -HALF[0] - RADIUS - 0.001  # 1 mm off the -x face, axis along y, overlapping the face for y in [-0.065, 0.03]
    a, b = np.array([x, -0.2, 0.02]), np.array([x, 0.03, 0.02])
    distance, normal, point, t = capsule_box_distance(a, b, HALF, np.array(RADIUS))
    assert distance == pytest.approx(0.001, abs=1e-15)
    # The middle of the band: the overlap y in [-0.065, 0.03], plus where the overhanging part stays
    # within CONTACT_BAND of the minimum (sqrt(0.011² + y²) - 0.011 <= 1e-5, i.e. 0.47 mm beyond -0.065).
    overhang = np.sqrt((0.011 + CONTACT_BAND) ** 2 - 0.011**2)
    middle = 0.5 * (-0.065 - overhang + 0.03)
    np.testing.assert_allclose(a + t * (b - a), [x, middle, 0.02], atol=1e-12)
    np.testing.assert_allclose(point, [-HALF[0], middle, 0.02], atol=1e-12)
    np.testing.assert_allclose(normal, [-1.0, 0.0, 0.0])
    previous = t
    for tilt in (1e-9, 1e-6, 1e-5, 3e-5, 1e-4, 1e-3, 1e-2):  # the b end comes nearer by tilt * 0.23 m
        tilted = b + np.array([tilt * 0.23, 0.0, 0.0])
        near, _, _, t_tilted = capsule_box_distance(a, tilted, HALF, np.array(RADIUS))
        assert near == pytest.approx(0.001 - tilt * 0.23, abs=1e-15)  # the exact distance, at the b end
        assert previous - 1e-12 <= t_tilted <= 1.0 and t_tilted - previous < 0.5  # slides towards b, no jump
        if tilt * 0.095 < CONTACT_BAND:  # the far end of the overlap within the band: still the middle
            assert t_tilted == pytest.approx(t, abs=1e-3)
        previous = t_tilted
    assert previous == pytest.approx(1.0, abs=0.01)


def _theta(state: BoxState, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    return problem_vector(PARAMS.replace({"pusher.radius": RADIUS}), state, start, end)


YAW = from_axis_angle([0, 0, 1], np.pi / 4)
BOX = np.array([0.4, 0.0, 0.105])
#: The vertical box edge (-x, +y) of the box yawed by 45°, facing world -x.
EDGE = BOX + to_matrix(YAW) @ (HALF * [-1.0, 1.0, 0.0])


def _edge_on(gap: float, height: float = 0.08) -> np.ndarray:
    """Capsule end points (6,): axis along world y, crossing the box edge ``EDGE`` ``gap`` m away (x)."""
    centre = np.array([EDGE[0] - RADIUS - gap, EDGE[1] + 0.01, height])
    return np.concatenate((centre - np.array([0.0, 0.04, 0.0]), centre + np.array([0.0, 0.04, 0.0])))


CASES = {
    "edge-on": (BoxState(BOX, YAW, [0.1, 0.0, 0.0]), _edge_on(-2e-4), _edge_on(-2e-4) + np.tile([1e-3, 0, 0], 2)),
    "flat across a face": (BoxState(BOX, [1, 0, 0, 0], [0.1, 0.0, 0.0]),
                           np.array([0.335 + 2e-4, -0.04, 0.05, 0.335 + 2e-4, 0.03, 0.05]),
                           np.array([0.336 + 2e-4, -0.04, 0.05, 0.336 + 2e-4, 0.03, 0.051])),
    "end cap on a tilted box": (BoxState(BOX + np.array([0, 0, 0.01]), from_axis_angle([1, 1, 0], 0.3),
                                         [0.1, 0.0, 0.0]),
                                np.array([0.30, 0.0, 0.12, 0.22, 0.03, 0.15]),
                                np.array([0.301, 0.0, 0.121, 0.221, 0.032, 0.151])),
}


@pytest.mark.parametrize("edge_radius", [0.0, 0.004])
@pytest.mark.parametrize("name", list(CASES))
def test_compiled_capsule_contact_data_matches_the_numpy_reference(name, edge_radius):
    state, start, end = CASES[name]
    theta = _theta(state, start, end)
    theta[PARAMS_OFFSET + THETA_PARAMS.index("box.edge_radius")] = edge_radius
    reference = problem_data(theta, 0.01, True, capsule=True)
    jn, jt, bn, bt = np.empty((9, 6)), np.empty((9, 2, 6)), np.empty(9), np.empty((9, 2))
    mu, v0, md, scales = np.empty(9), np.empty(6), np.empty(6), np.empty(4)
    kernels.problem_data(theta, 0.01, 9, True, jn, jt, bn, bt, mu, v0, md, scales, np.empty(kernels.SCRATCH_SIZE))
    np.testing.assert_allclose(jn, reference.normal_jacobian, atol=1e-14)
    np.testing.assert_allclose(jt, reference.tangent_jacobian, atol=1e-14)
    np.testing.assert_allclose(bn, reference.normal_offset, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(bt, reference.tangent_offset, rtol=1e-12, atol=1e-12)


def test_rounded_box_distances_are_the_inner_box_distances_less_the_edge_radius():
    """A box with edges rounded by r: faces where the sharp box's are, corners and edges cut back to arcs."""
    r = 0.004
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(200, 3)) * 0.15
    inner, _, _ = sphere_box_distance(centres, HALF - r, np.full(200, RADIUS))
    rounded, _, point = sphere_box_distance(centres, HALF, np.full(200, RADIUS), r)
    np.testing.assert_allclose(rounded, inner - r, atol=1e-15)
    # The closest point lies on the rounded surface: r from the inner box, the sphere's gap from the centre.
    outside = rounded > -RADIUS
    np.testing.assert_allclose(np.linalg.norm(centres[outside] - point[outside], axis=-1),
                               rounded[outside] + RADIUS, atol=1e-12)
    face = np.array([HALF[0] + RADIUS + 0.01, 0.0, 0.0])  # in front of a face: 1 cm, as for the sharp box
    corner = (HALF - r) + (RADIUS + r + 0.01) * np.ones(3) / np.sqrt(3.0)  # off a corner: 1 cm from its arc
    distances, _, _ = sphere_box_distance(np.stack((face, corner)), HALF, np.full(2, RADIUS), r)
    np.testing.assert_allclose(distances, [0.01, 0.01], atol=1e-15)
    a, b = _random_segments(100, 5)
    capsule_inner, _, _, _ = capsule_box_distance(a, b, HALF - r, np.full(100, RADIUS))
    capsule_rounded, _, _, _ = capsule_box_distance(a, b, HALF, np.full(100, RADIUS), r)
    np.testing.assert_allclose(capsule_rounded, capsule_inner - r, atol=1e-15)


def test_zero_length_capsule_is_exactly_the_sphere():
    ps = np.array([0.4 - 0.055 - RADIUS + 2e-4, 0.02, 0.08])
    pe = ps + np.array([0.001, 0.0002, 0.0])
    state = BoxState(BOX, [1, 0, 0, 0], [0.1, 0.0, 0.0])
    sphere = BoxWorld.from_params(PARAMS, Sphere(RADIUS))
    capsule = BoxWorld.from_params(PARAMS, Capsule(RADIUS, 0.0))
    names = ("contact.mu_pusher", "pusher.radius", "box.size_x")
    s = sphere.step(state, ps, pe, grad=True, param_names=names)
    c = capsule.step(state, np.tile(ps, 2), np.tile(pe, 2), grad=True, param_names=names)
    assert s.contacts.active >= 5
    np.testing.assert_array_equal(c.state.as_vector(), s.state.as_vector())
    assert c.contacts == s.contacts and c.iterations == s.iterations and c.violation == s.violation
    np.testing.assert_array_equal(c.d_params, s.d_params)
    # On a face a zero-length segment counts as lying flat: t = 0.5, each end point carries half.
    np.testing.assert_allclose(c.d_pusher_end[:, 0:3], 0.5 * s.d_pusher_end, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c.d_pusher_end[:, 3:6], 0.5 * s.d_pusher_end, rtol=1e-12, atol=1e-12)
    scale = np.abs(s.d_pusher_start).max()
    np.testing.assert_allclose(c.d_pusher_start[:, 0:3] + c.d_pusher_start[:, 3:6], s.d_pusher_start,
                               atol=1e-9 * scale)
    np.testing.assert_allclose(c.d_state, s.d_state, atol=1e-9 * np.abs(s.d_state).max())
    front = np.array([0.4 - 0.055 - RADIUS - 0.002, 0.0, 0.05])
    path = np.linspace(front, front + np.array([0.02, 0.0, 0.0]), 21)
    sphere_run = rollout(sphere, BoxState.at_rest(BOX), path)
    capsule_run = rollout(capsule, BoxState.at_rest(BOX), np.hstack((path, path)))
    assert max(c.pusher_force for c in sphere_run.contacts) > 1.0
    np.testing.assert_array_equal(capsule_run.states, sphere_run.states)


def test_capsule_pushing_face_on_slides_the_box_like_a_sphere_at_its_end():
    # Axis along world x, the front end cap on the -x face: the contact is the front end point.
    front = np.array([0.4 - 0.055 - RADIUS - 0.002, 0.0, 0.05])
    path = np.linspace(front, front + np.array([0.06, 0.0, 0.0]), 61)
    back = path - np.array([0.06, 0.0, 0.0])
    rest = BoxState.at_rest(BOX)
    capsule = rollout(BoxWorld.from_params(PARAMS, Capsule(RADIUS, 0.03)), rest, np.hstack((path, back)))
    sphere = rollout(BoxWorld.from_params(PARAMS, Sphere(RADIUS)), rest, path)
    np.testing.assert_allclose(capsule.states, sphere.states, atol=1e-12)
    assert capsule.states[-1, 0] - BOX[0] > 0.05  # pushed about 6 cm - the 2 mm approach


def test_horizontal_capsule_across_a_face_slides_the_box_straight():
    start = np.array([0.4 - 0.055 - RADIUS - 0.002, -0.04, 0.05, 0.4 - 0.055 - RADIUS - 0.002, 0.04, 0.05])
    path = np.linspace(start, start + np.tile([0.05, 0.0, 0.0], 2), 51)
    run = rollout(BoxWorld.from_params(PARAMS, Capsule(RADIUS, 0.04)), BoxState.at_rest(BOX), path)
    final = run.states[-1]
    assert final[0] == pytest.approx(path[-1, 0] + RADIUS + 0.055, abs=5e-4)  # carried along against the face
    assert abs(final[1]) < 1e-4
    np.testing.assert_allclose(final[3:7], [1, 0, 0, 0], atol=1e-3)  # no yaw, no tilt
    assert min(c.table_distance for c in run.contacts) > -1e-4
    assert min(c.pusher_distance for c in run.contacts) > -1e-4
    assert max(c.pusher_force for c in run.contacts) > 1.0


def test_capsule_edge_on_against_a_box_edge_pushes_at_the_edge_without_penetration():
    start = _edge_on(0.002)
    path = np.linspace(start, start + np.tile([0.05, 0.0, 0.0], 2), 51)
    world = BoxWorld.from_params(PARAMS, Capsule(RADIUS, 0.04))
    run = rollout(world, BoxState.at_rest(BOX, YAW), path)
    # At first contact the closest box point lies on the vertical edge, strictly inside the segment.
    k = next(i for i, c in enumerate(run.contacts) if c.pusher_force > 0.1)
    state = run.states[k]
    rotation = to_matrix(state[3:7])
    a, b = (rotation.T @ (path[k, 0:3] - state[0:3]), rotation.T @ (path[k, 3:6] - state[0:3]))
    _, _, point, t = capsule_box_distance(a, b, HALF, np.array(RADIUS))
    np.testing.assert_allclose(point[0:2], HALF[0:2] * [-1.0, 1.0], atol=2e-3)
    assert 0.2 < t < 0.8
    assert run.states[-1, 0] - BOX[0] > 0.02  # pushed forward
    assert min(c.table_distance for c in run.contacts) > -1e-4
    assert min(c.pusher_distance for c in run.contacts) > -1e-4


def test_capsule_placement_shapes_are_checked():
    world = BoxWorld.from_params(PARAMS, Capsule(RADIUS, 0.04))
    with pytest.raises(Exception, match="must have 6 numbers"):
        world.step(BoxState.at_rest(BOX), np.zeros(3), np.zeros(3))
    with pytest.raises(Exception, match=r"shape \(T\+1, 6\)"):
        rollout(world, BoxState.at_rest(BOX), np.zeros((4, 3)))


KAPPA = 1e-3  # forward solve at κ_grad too, so finite differences see the same (smoothed) map
GRAD_PARAMS = PARAMS.replace({"contact.kappa_sim": KAPPA, "contact.kappa_grad": KAPPA})
TIGHT = SolverSettings(residual_tol=1e-13, kappa_rtol=1e-10)
NAMES = ("box.mass", "box.size_x", "box.size_y", "box.com_x", "box.com_z", "contact.mu_table", "contact.mu_pusher")


def _next(x: np.ndarray, start: np.ndarray, end: np.ndarray, params: ParameterSet = GRAD_PARAMS,
          radius: float = RADIUS) -> np.ndarray:
    world = BoxWorld.from_params(params, Capsule(radius, 0.04), settings=TIGHT)
    return world.step(BoxState.from_vector(x), start, end).state.as_vector()


def _relative_error(fd: np.ndarray, analytic: np.ndarray) -> float:
    return float(np.linalg.norm(fd - analytic) / max(np.linalg.norm(fd), 1e-6))


def test_capsule_gradients_match_finite_differences_pushing_a_box_edge():
    # Steady push: the box (yawed 45°) already moves with the capsule, which crosses its vertical edge.
    state, start, end = CASES["edge-on"]
    world = BoxWorld.from_params(GRAD_PARAMS, Capsule(RADIUS, 0.04), settings=TIGHT)
    res = world.step(state, start, end, grad=True, param_names=(*NAMES, "pusher.radius"))
    assert res.contacts.pusher_force > 1.0 and res.d_pusher_start.shape == res.d_pusher_end.shape == (13, 6)
    x = state.as_vector()
    eps = 3e-7
    for j in range(13):
        e = np.zeros(13)
        e[j] = eps
        fd = (_next(x + e, start, end) - _next(x - e, start, end)) / (2 * eps)
        assert _relative_error(fd, res.d_state[:, j]) < 1e-3, f"state column {j}"
    for j in range(6):
        e = np.zeros(6)
        e[j] = eps
        fd = (_next(x, start, end + e) - _next(x, start, end - e)) / (2 * eps)
        assert _relative_error(fd, res.d_pusher_end[:, j]) < 1e-3, f"pusher end {j}"
        fd = (_next(x, start + e, end) - _next(x, start - e, end)) / (2 * eps)
        assert _relative_error(fd, res.d_pusher_start[:, j]) < 1e-3, f"pusher start {j}"
    for k, name in enumerate(NAMES):
        h = eps * max(1.0, abs(GRAD_PARAMS[name]))
        fd = (_next(x, start, end, GRAD_PARAMS.replace({name: GRAD_PARAMS[name] + h}))
              - _next(x, start, end, GRAD_PARAMS.replace({name: GRAD_PARAMS[name] - h}))) / (2 * h)
        assert _relative_error(fd, res.d_params[:, k]) < 1e-3, name
    fd = (_next(x, start, end, radius=RADIUS + eps) - _next(x, start, end, radius=RADIUS - eps)) / (2 * eps)
    assert _relative_error(fd, res.d_params[:, len(NAMES)]) < 1e-3, "pusher.radius"

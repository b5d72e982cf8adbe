"""xArm 6 model: FK against the published modified-DH table, Jacobian, IK round trips."""

import numpy as np
import pytest

from sim2real.errors import Sim2RealError
from sim2real.model import JOINT_NAMES, UnreachableError, load_arm, solve_pusher_ik
from sim2real.params import ParameterSet

# Modified DH (Craig) of the xArm 6 from UFactory's parameter table: (theta offset, d, alpha, a), m and rad.
_A2 = np.hypot(0.2845, 0.0535)
_T2 = -np.arctan(284.5 / 53.5)
MDH = [
    (0.0, 0.267, 0.0, 0.0),
    (_T2, 0.0, -np.pi / 2, 0.0),
    (-_T2, 0.0, 0.0, _A2),
    (0.0, 0.3425, -np.pi / 2, 0.0775),
    (0.0, 0.0, np.pi / 2, 0.0),
    (0.0, 0.097, -np.pi / 2, 0.076),
]


def _mdh_flange(q: np.ndarray) -> np.ndarray:
    transform = np.eye(4)
    for qi, (offset, d, alpha, a) in zip(q, MDH, strict=True):
        ca, sa = np.cos(alpha), np.sin(alpha)
        ct, st = np.cos(qi + offset), np.sin(qi + offset)
        link = np.array([
            [ct, -st, 0.0, a],
            [st * ca, ct * ca, -sa, -sa * d],
            [st * sa, ct * sa, ca, ca * d],
            [0.0, 0.0, 0.0, 1.0],
        ])
        transform = transform @ link
    return transform


@pytest.fixture(scope="module")
def arm():
    return load_arm()


def test_flange_at_zero_angles_matches_datasheet(arm):
    flange = arm.forward(np.zeros(6))
    np.testing.assert_allclose(flange[:3, 3], [0.207, 0.0, 0.112], atol=1e-12)
    # rpy (pi, 0, 0): flange z points down.
    np.testing.assert_allclose(flange[:3, :3], np.diag([1.0, -1.0, -1.0]), atol=1e-12)


def test_fk_agrees_with_modified_dh_table(arm):
    rng = np.random.default_rng(7)
    qs = rng.uniform(arm.lower, arm.upper, size=(100, 6))
    batched = arm.forward(qs)
    for q, pose in zip(qs, batched, strict=True):
        reference = _mdh_flange(q)
        np.testing.assert_allclose(pose[:3, 3], reference[:3, 3], atol=1e-9)
        np.testing.assert_allclose(pose[:3, :3], reference[:3, :3], atol=1e-9)


def test_jacobian_matches_finite_differences(arm):
    q = np.array([0.3, 0.2, -0.8, 0.4, 1.0, -0.5])
    jac = arm.pusher_jacobian(q)
    eps = 1e-6
    numeric = np.column_stack([
        (arm.pusher_position(q + eps * e) - arm.pusher_position(q - eps * e)) / (2 * eps) for e in np.eye(6)
    ])
    np.testing.assert_allclose(jac, numeric, atol=1e-8)


def test_pusher_offset_and_radius_come_from_parameters(arm):
    custom = load_arm(ParameterSet.nominal().replace({"pusher.offset": 0.1, "pusher.radius": 0.03}))
    q = np.zeros(6)
    np.testing.assert_allclose(custom.pusher_position(q), [0.207, 0.0, 0.112 - 0.1], atol=1e-12)
    assert custom.pusher_radius == 0.03
    np.testing.assert_allclose(arm.pusher_position(q), [0.207, 0.0, 0.112 - 0.06], atol=1e-12)


def test_limits_from_urdf(arm):
    assert [j.name for j in arm.joints] == list(JOINT_NAMES)
    np.testing.assert_allclose(arm.lower[1:3], [-2.059, -3.927])
    np.testing.assert_allclose(arm.max_velocity, 3.14)


def test_ik_round_trip_across_push_workspace(arm):
    seed = None
    worst = 0.0
    for x in np.linspace(0.2, 0.65, 10):
        for y in (-0.15, 0.0, 0.15):
            for z in (0.03, 0.12, 0.25):
                target = np.array([x, y, z])
                result = solve_pusher_ik(arm, target, seed=seed)
                assert arm.within_limits(result.q)
                worst = max(worst, float(np.linalg.norm(arm.pusher_position(result.q) - target)))
                seed = result.q
    assert worst < 1e-6


def test_ik_unreachable_is_a_clear_error(arm):
    with pytest.raises(UnreachableError, match="not reachable"):
        solve_pusher_ik(arm, np.array([1.5, 0.0, 0.1]))
    with pytest.raises(Sim2RealError, match="finite 3-vector"):
        solve_pusher_ik(arm, np.array([np.nan, 0.0, 0.1]))


def test_unknown_link_is_a_clear_error(arm):
    with pytest.raises(Sim2RealError, match="unknown link 'gripper'"):
        arm.forward(np.zeros(6), "gripper")

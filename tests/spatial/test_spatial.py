"""Quaternion helpers against rotation-matrix algebra and closed-form rotations."""

import numpy as np

from sim2real import spatial


def _random_quaternions(n: int, seed: int = 0) -> np.ndarray:
    return spatial.normalize(np.random.default_rng(seed).normal(size=(n, 4)))


def test_product_composes_rotations():
    q1, q2 = _random_quaternions(2)
    R = spatial.to_matrix(spatial.multiply(q1, q2))
    np.testing.assert_allclose(R, spatial.to_matrix(q1) @ spatial.to_matrix(q2), atol=1e-14)


def test_matrix_is_orthonormal_and_conjugate_inverts():
    q = _random_quaternions(5, seed=1)
    R = spatial.to_matrix(q)
    np.testing.assert_allclose(R @ np.swapaxes(R, -1, -2), np.broadcast_to(np.eye(3), (5, 3, 3)), atol=1e-14)
    np.testing.assert_allclose(np.linalg.det(R), 1.0, atol=1e-14)
    np.testing.assert_allclose(spatial.to_matrix(spatial.multiply(q, spatial.conjugate(q))),
                               np.broadcast_to(np.eye(3), (5, 3, 3)), atol=1e-14)


def test_rotation_about_z_by_90_degrees():
    q = spatial.from_axis_angle([0.0, 0.0, 2.0], np.pi / 2)
    np.testing.assert_allclose(spatial.rotate(q, [1.0, 0.0, 0.0]), [0.0, 1.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(spatial.yaw(q), np.pi / 2)
    np.testing.assert_allclose(spatial.tilt(q), 0.0, atol=1e-12)


def test_rotation_vector_round_trip_including_tiny_angles():
    rng = np.random.default_rng(2)
    r = rng.normal(size=(6, 3)) * np.array([1.0, 1e-3, 1e-9, 1e-12, 2.0, 0.0])[:, None]
    q = spatial.from_rotation_vector(r)
    np.testing.assert_allclose(np.linalg.norm(q, axis=-1), 1.0, atol=1e-15)
    np.testing.assert_allclose(spatial.to_rotation_vector(q), r, atol=1e-14)


def test_skew_is_cross_product():
    a, b = np.random.default_rng(3).normal(size=(2, 3))
    np.testing.assert_allclose(spatial.skew(a) @ b, np.cross(a, b), atol=1e-15)


def test_tilt_of_box_on_its_side():
    q = spatial.from_axis_angle([1.0, 0.0, 0.0], np.pi / 2)
    np.testing.assert_allclose(spatial.tilt(q), np.pi / 2)


def test_left_matrix_multiplies_like_the_quaternion_product():
    rng = np.random.default_rng(3)
    p, q = rng.normal(size=(5, 4)), rng.normal(size=(5, 4))
    product = np.einsum("nij,nj->ni", spatial.left_matrix(p), q)
    np.testing.assert_allclose(product, spatial.multiply(p, q), rtol=0, atol=1e-14)

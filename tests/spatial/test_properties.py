"""Laws that hold over whole spaces, checked with hypothesis: quaternion algebra and parameter round trips."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real.params import PARAMETERS, ParameterSet, load_params, save_params
from sim2real.spatial import (
    conjugate,
    from_matrix,
    from_rotation_vector,
    matrix_to_rotation_vector,
    matrix_to_rpy,
    multiply,
    rotate,
    rpy_to_matrix,
    to_matrix,
    to_rotation_vector,
)

finite = st.floats(-3.0, 3.0, allow_nan=False)
vectors = st.tuples(finite, finite, finite).map(np.array)


@settings(max_examples=200, deadline=None)
@given(a=vectors, b=vectors, v=vectors)
def test_quaternion_product_composes_rotations(a: np.ndarray, b: np.ndarray, v: np.ndarray) -> None:
    qa, qb = from_rotation_vector(a), from_rotation_vector(b)
    np.testing.assert_allclose(rotate(multiply(qa, qb), v), rotate(qa, rotate(qb, v)), atol=1e-9)
    np.testing.assert_allclose(to_matrix(multiply(qa, qb)), to_matrix(qa) @ to_matrix(qb), atol=1e-12)
    np.testing.assert_allclose(rotate(conjugate(qa), rotate(qa, v)), v, atol=1e-9)
    assert abs(np.linalg.norm(multiply(qa, qb)) - 1.0) < 1e-12


@settings(max_examples=200, deadline=None)
@given(a=vectors)
def test_rotation_vector_round_trip_up_to_the_double_cover(a: np.ndarray) -> None:
    q = from_rotation_vector(a)
    back = from_rotation_vector(to_rotation_vector(q))
    assert min(np.abs(back - q).max(), np.abs(back + q).max()) < 1e-9


float_parameters = [p for p in PARAMETERS if p.kind is float and p.lower < p.upper]


@settings(max_examples=200, deadline=None)
@given(a=vectors)
def test_the_scipy_boundary_keeps_the_w_first_order(a: np.ndarray) -> None:
    """Matrix -> quaternion comes back (w, x, y, z) (up to the double cover); matrix -> rotation vector and
    roll-pitch-yaw -> matrix -> roll-pitch-yaw round-trip through the one module that uses scipy."""
    q = from_rotation_vector(a)
    back = from_matrix(to_matrix(q))
    assert min(np.abs(back - q).max(), np.abs(back + q).max()) < 1e-9
    np.testing.assert_allclose(to_matrix(from_rotation_vector(matrix_to_rotation_vector(to_matrix(q)))),
                               to_matrix(q), atol=1e-9)
    np.testing.assert_allclose(rpy_to_matrix(matrix_to_rpy(to_matrix(q))), to_matrix(q), atol=1e-9)


@settings(max_examples=200, deadline=None)
@given(a=vectors)
def test_roll_pitch_yaw_in_closed_form_agree_with_scipy(a: np.ndarray) -> None:
    """The closed-form matrix -> roll-pitch-yaw gives scipy's extrinsic xyz angles."""
    from scipy.spatial.transform import Rotation

    matrix = to_matrix(from_rotation_vector(a))
    np.testing.assert_allclose(matrix_to_rpy(matrix), Rotation.from_matrix(matrix).as_euler("xyz"), atol=1e-9)


@pytest.mark.parametrize("pitch", [np.pi / 2, -np.pi / 2])
def test_roll_pitch_yaw_at_gimbal_lock_still_round_trip(pitch: float) -> None:
    matrix = rpy_to_matrix(np.array([0.4, pitch, -1.1]))
    rpy = matrix_to_rpy(matrix)
    assert rpy[2] == 0.0 and abs(rpy[1] - pitch) < 1e-7
    np.testing.assert_allclose(rpy_to_matrix(rpy), matrix, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_a_params_file_gives_back_exactly_what_was_saved(tmp_path_factory, data) -> None:
    chosen = data.draw(st.lists(st.sampled_from(float_parameters), min_size=1, max_size=8, unique_by=lambda p: p.name))
    values = {p.name: data.draw(st.floats(p.lower, p.upper, allow_nan=False)) for p in chosen}
    params = ParameterSet.nominal().replace(values)
    path = Path(tmp_path_factory.mktemp("params")) / "p.yaml"
    save_params(path, params)
    assert load_params(path) == params

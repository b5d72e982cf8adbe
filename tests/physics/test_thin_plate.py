"""Thin plates (a 9.5 mm steel plate, a 5 mm sheet) in the contact engine, against closed form.

The same checks as the normal box in ``test_physics_closed_form.py``, for plates whose height
``box.size_z`` is a few millimetres: at rest a plate stays put without sinking, a plate given a
horizontal velocity slides ``v0² / (2 μ g)``, and one dropped onto a corner or edge lands flat
without passing through the table.
"""

import numpy as np
import pytest

from sim2real.params import ParameterSet
from sim2real.physics import BoxWorld, SolverSettings
from sim2real.sim import BoxState, rollout
from sim2real.sim.constants import GRAVITY
from sim2real.spatial import from_axis_angle, tilt

MU = 0.5
SIZE_XY = (0.20, 0.15)  # m, plate footprint


def _plate(thickness: float, **extra: float) -> BoxWorld:
    params = ParameterSet.nominal().replace({
        "contact.mu_table": MU, "contact.mu_pusher": 0.0, "box.size_x": SIZE_XY[0], "box.size_y": SIZE_XY[1],
        "box.size_z": thickness, **extra})
    return BoxWorld.from_params(params)


def _table_gaps(result) -> np.ndarray:
    """Lowest plate corner above the table at the end of every step (T,), m."""
    return np.array([c.table_distance for c in result.contacts])


@pytest.mark.parametrize("thickness", [0.005, 0.001])
def test_plate_at_rest_stays_for_two_seconds(thickness: float) -> None:
    world = _plate(thickness)
    start = BoxState.at_rest([0.3, -0.1, 0.5 * thickness], from_axis_angle([0.0, 0.0, 1.0], 0.4))
    result = rollout(world, start, steps=round(2.0 / world.dt))
    assert result.solve.degraded == 0 and result.solve.recovered == 0
    assert np.max(np.linalg.norm(result.states[:, :3] - result.states[0, :3], axis=1)) < 1e-5  # no drift
    assert np.max(np.abs(result.states[:, 7:13])) < 1e-6  # no creep, no spin
    assert _table_gaps(result).min() >= -SolverSettings().resting_gap_tol  # no sinking


@pytest.mark.parametrize("thickness", [0.0095, 0.005, 0.001])
def test_plate_slides_v0_squared_over_2_mu_g(thickness: float) -> None:
    # As for the normal box: backward Euler shortens the slide by dt v0 / 2 per sub-step length
    # (0.8 % here with 4 sub-steps); the tolerance is the normal box's 1 %.
    world = _plate(thickness, **{"sim.substeps": 4})
    v0 = 1.5
    result = rollout(world, BoxState([0.0, 0.0, 0.5 * thickness], [1, 0, 0, 0], [v0, 0.0, 0.0]), steps=40)
    expected = v0**2 / (2 * MU * GRAVITY)
    states = result.states
    assert abs(states[-1, 0] - expected) / expected < 0.01
    np.testing.assert_allclose(states[-1, 7:13], 0.0, atol=1e-6)  # stopped, not spinning
    assert np.max(np.abs(states[:, 1])) < 1e-9  # straight
    assert np.max(np.degrees([tilt(q) for q in states[:, 3:7]])) < 1e-6  # flat: friction does not tip it
    assert np.max(np.abs(states[:, 2] - 0.5 * thickness)) < 1e-6  # neither sinking nor lifting
    assert result.solve.degraded == 0


@pytest.mark.parametrize("tilt_angle, vertical_speed", [(0.3, -2.0), (1.0, 0.0)])
def test_plate_dropped_on_an_edge_lands_flat_without_tunnelling(tilt_angle: float, vertical_speed: float) -> None:
    thickness = 0.005
    world = _plate(thickness)
    start = BoxState([0.0, 0.0, 0.05], from_axis_angle([1.0, 0.5, 0.0], tilt_angle), [0.2, 0.0, vertical_speed])
    result = rollout(world, start, steps=150)
    gaps = _table_gaps(result)
    assert gaps.min() > -1e-4  # the normal box's drop tolerance; at 2 m/s in 10 ms a corner moves 2 cm
    assert result.solve.degraded == 0
    final = result.states[-1]
    assert final[2] == pytest.approx(0.5 * thickness, abs=1e-6)  # lying on a large face
    assert min(np.degrees(tilt(final[3:7])), 180.0 - np.degrees(tilt(final[3:7]))) < 1e-3
    np.testing.assert_allclose(final[7:13], 0.0, atol=1e-6)



def test_probe_pushing_the_plate_edge_carries_it_flat() -> None:
    """A 5 mm probe sphere at mid-height pushes a 5 mm plate edge-on 5 cm at 5 cm/s: the plate goes
    along (a quasi-static push, less the contact's millimetre compliance), flat and on the table."""
    thickness, radius, speed, steps = 0.005, 0.005, 0.05, 100
    world = _plate(thickness, **{"pusher.radius": radius})
    start_x = 0.4 - 0.5 * SIZE_XY[0] - radius - 0.0005
    path = np.array([[start_x + speed * world.dt * k, 0.0, 0.004] for k in range(steps + 1)])
    result = rollout(world, BoxState.at_rest([0.4, 0.0, 0.5 * thickness]), path)
    final = result.states[-1]
    travel = speed * world.dt * steps - 0.0005  # the pusher's travel after it reached the edge
    assert final[0] - 0.4 == pytest.approx(travel, abs=1e-3)
    assert abs(final[1]) < 1e-6 and np.degrees(tilt(final[3:7])) < 1e-3
    assert final[2] == pytest.approx(0.5 * thickness, abs=1e-6)
    assert _table_gaps(result).min() > -1e-6
    assert result.solve.degraded == 0

"""Every registered engine's world is a :class:`sim2real.sim.World`, and a trajectory's warm start stays its own
engine's: the contract's engine-neutral loop gets it from the world, and our engine refuses another's."""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.engines import ENGINES, make_world
from sim2real.errors import Sim2RealError
from sim2real.params import ParameterSet
from sim2real.physics import WarmStart
from sim2real.sim import BoxState, Sphere, Trajectory, World, advance_each


def _pushed(world: World) -> Trajectory:
    """Three steps of a sphere pushing the resting box along +x, through the engine-neutral loop."""
    half = world.half_size
    box = BoxState.at_rest([0.4, 0.0, float(half[2])])
    radius = float(world.params["pusher.radius"])
    start = np.array([0.4 - half[0] - radius, 0.0, float(half[2])])
    path = np.array([start + np.array([0.002 * k, 0.0, 0.0]) for k in range(4)])
    traj = Trajectory.empty(3, path)
    traj.states[0] = box.as_vector()
    advance_each(world, traj, 0, 3)
    return traj


@pytest.mark.parametrize("name", list(ENGINES))
def test_every_engine_builds_a_world_of_the_contract(name: str) -> None:
    params = ParameterSet.nominal()
    world = make_world(name, params, Sphere(float(params["pusher.radius"])))
    assert isinstance(world, World)
    traj = _pushed(world)
    assert np.isfinite(traj.states).all()
    assert traj.states[-1][0] > traj.states[0][0]  # pushed along +x
    memory = world.new_warm_start()
    assert (traj.warm is None) == (memory is None)  # the loop took the world's own memory (or none)


def test_our_engine_keeps_its_warm_start_in_the_trajectory_and_refuses_another_engines() -> None:
    world = make_world("ours", ParameterSet.nominal(), Sphere(0.01))
    traj = _pushed(world)
    assert isinstance(traj.warm, WarmStart) and traj.warm.holds_solution
    box = BoxState.from_vector(traj.states[0])
    with pytest.raises(Sim2RealError, match="new_warm_start"):
        world.step(box, warm_start=object())
    foreign = Trajectory.empty(1, None)
    foreign.states[0] = traj.states[0]
    foreign.warm = object()
    with pytest.raises(Sim2RealError, match="new_warm_start"):
        world.advance(foreign, 0, 1)

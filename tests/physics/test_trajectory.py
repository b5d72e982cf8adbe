"""Runs of steps: our engine's compiled loop answers exactly what its step, called once per step, answers.

``BoxWorld.advance`` runs the steps the ladder's first rung solves in one compiled call and hands every
other step to ``BoxWorld.step`` (the whole ladder). Against the step-by-step loop (``advance_each``) it
must give the same states, iterations, outcomes and hard-step records, and the same sensitivities up
to the rounding of a different summation order; a pusher path that is not finite is refused before
any step runs.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.errors import Sim2RealError
from sim2real.params import ParameterSet
from sim2real.physics import BoxWorld, SolverSettings
from sim2real.sim import BoxState, StepOutcome
from sim2real.sim.trajectory import Trajectory
from sim2real.sim.world import advance_each

PARAMS = ParameterSet.nominal().replace({"contact.mu_table": 0.5, "pusher.radius": 0.02})
NAMES = ("contact.mu_table", "box.mass", "box.com_z")


def _push_path(world: BoxWorld, steps: int, speed: float, height: float) -> tuple[BoxState, np.ndarray]:
    """A box at rest and a sphere pusher path along +x (m/s) at ``height`` (m), starting 2 mm from it."""
    state = BoxState.at_rest([0.4, 0.0, 0.105])
    start = np.array([0.4 - 0.055 - 0.02 - 0.002, 0.0, height])
    return state, start + np.outer(np.arange(steps + 1) * speed * world.dt, [1.0, 0.0, 0.0])


def _both(world: BoxWorld, state: BoxState, path: np.ndarray | None, initial_grad: bool = True, steps: int = 0,
          names: tuple[str, ...] = NAMES, columns: tuple[int, ...] | None = None, parameters: int | None = None
          ) -> tuple[Trajectory, Trajectory]:
    """The same run through ``world.advance`` and through ``advance_each`` (``steps``: the path's, if it has one)."""
    steps = path.shape[0] - 1 if path is not None else steps
    runs = []
    for advance in (world.advance, lambda *args: advance_each(world, *args)):
        traj = Trajectory.empty(steps, path, names, columns, parameters, initial_grad=initial_grad)
        traj.states[0] = state.as_vector()
        advance(traj, 0, steps)
        runs.append(traj)
    return runs[0], runs[1]


def _assert_same(compiled: Trajectory, each: Trajectory) -> None:
    np.testing.assert_allclose(compiled.states, each.states, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(compiled.iterations, each.iterations)
    np.testing.assert_array_equal(compiled.outcomes, each.outcomes)
    np.testing.assert_array_equal(compiled.log.outcomes, each.log.outcomes)
    assert compiled.log.summary() == each.log.summary()
    for mine, theirs in ((compiled.sens, each.sens), (compiled.sens0, each.sens0)):
        assert mine is not None and theirs is not None
        # The same products summed in another order, chained over up to 150 steps whose Jacobians amplify
        # rounding at contact changes (1e-10 to 1e-9 of the largest entry seen).
        scale = float(np.max(np.abs(theirs)))
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-8 * scale)
    np.testing.assert_allclose(compiled.records, each.records, rtol=1e-12, atol=1e-15)


def test_a_toppling_push_runs_as_its_steps_do() -> None:
    world = BoxWorld.from_params(PARAMS)
    state, path = _push_path(world, 150, speed=0.3, height=0.17)
    compiled, each = _both(world, state, path)
    _assert_same(compiled, each)
    assert compiled.states[-1][2] < 0.08  # it toppled: contacts came and went along the way
    assert set(compiled.outcomes.tolist()) == {int(StepOutcome.CONVERGED)}


def test_steps_the_first_rung_cannot_solve_go_through_the_ladder() -> None:
    # Five iterations per solve: along the toppling push the first rung solves most steps (warm started)
    # and fails others (a cold start after a failure needs more); the ladder recovers those.
    world = BoxWorld(PARAMS, BoxWorld.from_params(PARAMS).pusher, SolverSettings(max_iterations=5))
    state, path = _push_path(world, 150, speed=0.3, height=0.17)
    compiled, each = _both(world, state, path)
    _assert_same(compiled, each)
    counts = np.bincount(compiled.outcomes, minlength=3)
    assert counts[int(StepOutcome.CONVERGED)] > 10 and counts[int(StepOutcome.RECOVERED)] > 10
    assert compiled.log.summary().recovered == counts[int(StepOutcome.RECOVERED)]


def test_a_run_of_segments_keeps_each_start_and_its_sensitivity() -> None:
    world = BoxWorld.from_params(PARAMS)
    state, path = _push_path(world, 30, speed=0.2, height=0.08)
    compiled, _ = _both(world, state, path)
    # Restart from step 10's state with a given sensitivity: the rows after it are as if run from there.
    seg = Trajectory.empty(30, path, NAMES, initial_grad=True)
    seg.states[10] = compiled.states[10]
    assert compiled.sens is not None and seg.sens is not None
    world.advance(seg, 10, 30, compiled.sens[10].copy(), np.eye(13))
    np.testing.assert_allclose(seg.states[10:], compiled.states[10:], rtol=0, atol=1e-9)
    scale = float(np.max(np.abs(compiled.sens)))
    np.testing.assert_allclose(seg.sens[11:], compiled.sens[11:], rtol=0, atol=1e-6 * scale)


#: The parameters of the sensitivity tests below: friction and mass enter the step analytically, the box's
#: size, edge radius and centre of mass move its contact geometry; box.size_y and box.size_z share a column
#: (parameters tied in a fit add up).
TIED_NAMES = ("contact.mu_table", "box.mass", "box.size_x", "box.size_y", "box.size_z", "box.edge_radius", "box.com_z")
TIED_COLUMNS = (0, 1, 2, 3, 3, 4, 5)


def _tumbling_landing() -> BoxState:
    """A box about 4 cm above the table, falling at 0.5 m/s, sliding at 0.4 m/s and spinning about a tilted axis."""
    tilt = np.array([np.cos(0.2), np.sin(0.2) * 0.6, np.sin(0.2) * 0.8, 0.0])
    return BoxState(np.array([0.4, 0.0, 0.16]), tilt / np.linalg.norm(tilt), np.array([0.4, 0.1, -0.5]),
                    np.array([1.0, -2.0, 3.0]))


@pytest.mark.parametrize("case", ["toppling push", "two sub-steps", "tumbling landing"])
def test_sensitivities_along_the_parameters_are_the_chained_step_jacobians(case: str) -> None:
    # Without d state / d start, the compiled loop differentiates each step along the parameters' directions
    # (central differences of the residual and the next-state map along them, one solve per parameter)
    # instead of chaining every column of the step's Jacobian; both are d state / d parameters.
    params = PARAMS.replace({"box.edge_radius": 0.004, "box.com_z": 0.005})
    if case == "two sub-steps":
        params = params.replace({"sim.substeps": 2})
    world = BoxWorld.from_params(params)
    state, path = (_tumbling_landing(), None) if case == "tumbling landing" else _push_path(world, 150, 0.3, 0.17)
    along, chained = _both(world, state, path, initial_grad=False, steps=60, names=TIED_NAMES, columns=TIED_COLUMNS,
                           parameters=6)
    np.testing.assert_allclose(along.states, chained.states, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(along.outcomes, chained.outcomes)
    assert along.sens is not None and chained.sens is not None
    scale = np.max(np.abs(chained.sens), axis=(0, 1))  # per parameter column
    assert np.all(scale > 0.0)
    np.testing.assert_allclose(along.sens / scale, chained.sens / scale, rtol=0, atol=1e-6)
    if case == "tumbling landing":
        assert chained.records[:, 1].max() >= 1  # it landed: contacts came into play


def test_a_path_that_is_not_finite_is_refused_before_any_step() -> None:
    world = BoxWorld.from_params(PARAMS)
    state, path = _push_path(world, 20, speed=0.2, height=0.08)
    path[12, 1] = np.nan
    traj = Trajectory.empty(20, path)
    traj.states[0] = state.as_vector()
    with pytest.raises(Sim2RealError, match="step boundary 12 is not finite"):
        world.advance(traj, 0, 20)
    assert not traj.states[1:].any() and not traj.log.outcomes.size

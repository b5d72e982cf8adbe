"""Warm starts: a step started from the previous step's solution gives the cold step's answer, cheaper.

The warm start changes how a step is solved, never what it answers: along a push the next states
agree with the cold start's within the solver's tolerance, gradients too, a stored solution of an
unrelated step still leads to the cold answer (the kernel falls back to its cold start), and a
stored solution is kept only after a successful solve with the same contacts and κ.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.params import ParameterSet
from sim2real.physics import BoxWorld, WarmStart
from sim2real.sim import BoxState, rollout

PARAMS = ParameterSet.nominal().replace({"contact.mu_table": 0.5, "pusher.radius": 0.02})
SPEED = 0.05  # m/s


def _push(world: BoxWorld, steps: int, speed: float = SPEED
          ) -> tuple[BoxState, list[tuple[np.ndarray, np.ndarray]]]:
    """A box upright on the table and ``steps`` pusher moves along +x at ``speed`` (m/s), 8 cm high."""
    state = BoxState([0.4, 0.0, 0.105], [1, 0, 0, 0], [speed, 0.0, 0.0], [0.0, 0.0, 0.0])
    start = np.array([0.4 - 0.055 - 0.02 + 2e-4, 0.0, 0.08])
    move = np.array([speed * world.dt, 0.0, 0.0])
    return state, [(start + k * move, start + (k + 1) * move) for k in range(steps)]


def test_warm_steps_agree_with_cold_steps_and_take_fewer_iterations() -> None:
    world = BoxWorld.from_params(PARAMS)
    state, moves = _push(world, 60)
    warm = WarmStart()
    warm_iterations, cold_iterations = [], []
    for start, end in moves:
        cold = world.step(state, start, end)
        hot = world.step(state, start, end, warm_start=warm)
        assert warm.holds_solution
        np.testing.assert_allclose(hot.state.as_vector(), cold.state.as_vector(), rtol=0, atol=1e-6)
        warm_iterations.append(hot.iterations)
        cold_iterations.append(cold.iterations)
        state = cold.state
    assert np.median(warm_iterations[1:]) < 0.6 * np.median(cold_iterations[1:])


def test_warm_gradients_agree_with_cold_gradients() -> None:
    world = BoxWorld.from_params(PARAMS)
    state, moves = _push(world, 20)
    names = ("contact.mu_table", "box.mass", "box.com_z")
    warm = WarmStart()
    for start, end in moves:
        cold = world.step(state, start, end, grad=True, param_names=names)
        hot = world.step(state, start, end, grad=True, param_names=names, warm_start=warm)
        assert hot.d_params is not None and cold.d_params is not None
        scale = max(1e-9, float(np.max(np.abs(cold.d_params))))
        assert float(np.max(np.abs(hot.d_params - cold.d_params))) <= 1e-3 * scale  # the centring tolerance
        assert hot.d_state is not None and cold.d_state is not None
        np.testing.assert_allclose(hot.d_state, cold.d_state, rtol=1e-3, atol=1e-6 * np.max(np.abs(cold.d_state)))
        state = cold.state


def test_a_stored_solution_of_another_step_still_gives_the_cold_answer() -> None:
    world = BoxWorld.from_params(PARAMS)
    state, moves = _push(world, 1)
    # A solution stored from a fast push into a tilted box: nothing like the steady push below.
    warm = WarmStart()
    tilted = BoxState([0.4, 0.0, 0.11], [np.cos(0.05), 0.0, np.sin(0.05), 0.0], [0.0, 0.0, -0.3], [0.0, 2.0, 0.0])
    world.step(tilted, moves[0][0], moves[0][1] + np.array([0.01, 0.0, 0.0]), warm_start=warm)
    assert warm.holds_solution
    cold = world.step(state, *moves[0])
    hot = world.step(state, *moves[0], warm_start=warm)
    np.testing.assert_allclose(hot.state.as_vector(), cold.state.as_vector(), rtol=0, atol=1e-6)


def test_nothing_is_stored_after_a_shortcut_or_for_other_contacts() -> None:
    world = BoxWorld.from_params(PARAMS)
    state, moves = _push(world, 1)
    warm = WarmStart()
    world.step(state, *moves[0], warm_start=warm)
    assert warm.holds_solution
    resting = BoxState.at_rest([0.4, 0.0, 0.105])
    far = np.array([0.0, 0.0, 0.5])
    result = world.step(resting, far, far, warm_start=warm)  # the resting shortcut: no solve
    assert result.iterations == 0 and not warm.holds_solution
    warm.reset()
    assert not warm.holds_solution
    # A step without pusher has 8 contacts: a 9-contact solution is not used, and its own is kept.
    world.step(state, *moves[0], warm_start=warm)
    without = world.step(state, warm_start=warm)
    assert without.iterations == world.step(state).iterations
    assert warm.holds_solution


@pytest.mark.parametrize("instantaneous", [False, True])
def test_rollouts_warm_start_and_match_cold_steps(instantaneous: bool) -> None:
    world = BoxWorld.from_params(PARAMS)
    state, moves = _push(world, 40, speed=0.2)
    path = np.array([moves[0][0]] + [end for _, end in moves])
    result = rollout(world, state, path, instantaneous_start=instantaneous)
    assert np.median(result.iterations[1:]) < 12
    if not instantaneous:
        replayed = state
        for k, (start, end) in enumerate(moves):
            replayed = world.step(BoxState.from_vector(result.states[k]), start, end).state
            np.testing.assert_allclose(result.states[k + 1], replayed.as_vector(), rtol=0, atol=1e-6)

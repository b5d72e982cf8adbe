"""Multi-step simulation with forward-mode parameter sensitivities."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.physics.ladder import HardStep
from sim2real.physics.outcome import SolveLog, SolveSummary
from sim2real.physics.state import STATE_SIZE, BoxState
from sim2real.physics.world import BoxWorld, ContactInfo


@dataclass(frozen=True)
class Rollout:
    """A simulated trajectory.

    Attributes
    ----------
    times : ndarray (T+1,)
        s, from 0.
    states : ndarray (T+1, 13)
        Box states (see :meth:`BoxState.as_vector`), the initial one first.
    contacts : tuple of ContactInfo
        Per step (length T).
    iterations : ndarray (T,)
        Solver iterations per step.
    param_names : tuple of str
    sensitivities : ndarray (T+1, 13, p) or None
        d states / d parameters (zero at t = 0), when parameters were asked for.
    initial_sensitivities : ndarray (T+1, 13, 13) or None
        d states / d initial state, when asked for.
    outcomes : ndarray (T,) int8
        Outcome class of every step (:class:`~sim2real.physics.outcome.StepOutcome` codes).
    solve : SolveSummary
        Their tally and worst violations.
    hard_steps : tuple of HardStep
        Reproduction records of the first recovered or degraded steps.
    """

    times: np.ndarray
    states: np.ndarray
    contacts: tuple[ContactInfo, ...]
    iterations: np.ndarray
    param_names: tuple[str, ...] = ()
    sensitivities: np.ndarray | None = None
    initial_sensitivities: np.ndarray | None = None
    outcomes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    solve: SolveSummary = field(default_factory=SolveSummary)
    hard_steps: tuple[HardStep, ...] = ()

    def state(self, index: int) -> BoxState:
        """The state at step ``index`` as a :class:`BoxState`."""
        return BoxState.from_vector(self.states[index])


def rollout(world: BoxWorld, initial: BoxState, pusher_path: np.ndarray | None = None, steps: int | None = None,
            grad_names: Sequence[str] = (), initial_grad: bool = False, context: str = "") -> Rollout:
    """Simulate ``T`` steps of ``world.dt``.

    Parameters
    ----------
    world : BoxWorld
    initial : BoxState
    pusher_path : ndarray (T+1, 3) or (T+1, 6), or None
        Pusher placement at every step boundary, m, world: the sphere's centre (3) or the capsule's
        two segment end points (6), as the world's pusher needs. None: no pusher (then give ``steps``).
    steps : int, optional
        Number of steps ``T`` when there is no pusher path.
    grad_names : sequence of str
        Parameters for the sensitivities ``d states / d params`` (forward-mode chain rule:
        ``S_{t+1} = A_t S_t + B_t`` with the step Jacobians ``A_t`` (13×13) and ``B_t`` (13×p)).
    initial_grad : bool
        Also propagate ``d states / d initial state``.
    context : str
        Names the rollout in hard-step records (e.g. the trial).

    Returns
    -------
    Rollout

    Raises
    ------
    SimulationError
        Only in strict mode (``world.settings.strict``), naming the step that would be degraded.
    """
    if pusher_path is not None:
        path = np.asarray(pusher_path, dtype=float)
        size = world.pusher.placement_size if world.pusher is not None else 3
        if path.ndim != 2 or path.shape[1] != size or path.shape[0] < 2:
            raise Sim2RealError(f"pusher_path must have shape (T+1, {size}) with T >= 1, got {path.shape}")
        count = path.shape[0] - 1
    else:
        if steps is None or steps < 1:
            raise Sim2RealError("give a pusher_path or a positive number of steps")
        path = None
        count = int(steps)
    names = tuple(grad_names)
    grad = bool(names) or initial_grad
    states = np.empty((count + 1, STATE_SIZE))
    states[0] = initial.as_vector()
    sens = np.zeros((count + 1, STATE_SIZE, len(names))) if names else None
    sens0 = np.zeros((count + 1, STATE_SIZE, STATE_SIZE)) if initial_grad else None
    if sens0 is not None:
        sens0[0] = np.eye(STATE_SIZE)
    contacts = []
    iterations = np.empty(count, dtype=int)
    state = initial
    log = SolveLog(context)
    for t in range(count):
        start = path[t] if path is not None else None
        end = path[t + 1] if path is not None else None
        res = world.step(state, start, end, grad=grad, param_names=names, step_index=t)
        state = res.state
        states[t + 1] = state.as_vector()
        contacts.append(res.contacts)
        iterations[t] = res.iterations
        log.record(res, t)
        if sens is not None:
            sens[t + 1] = res.d_state @ sens[t] + res.d_params
        if sens0 is not None:
            sens0[t + 1] = res.d_state @ sens0[t]
    times = np.arange(count + 1) * world.dt
    return Rollout(times, states, tuple(contacts), iterations, names, sens, sens0, log.outcomes, log.summary(),
                   tuple(log.hard_steps))

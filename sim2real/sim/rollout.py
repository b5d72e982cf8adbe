"""Multi-step simulation with forward-mode parameter sensitivities.

Time stepping and what a state's velocity means
-----------------------------------------------
A step moves the box by ``dt`` times its *new* velocity (``x_{k+1} = x_k + dt v_{k+1/2}``, the
orientation alike on the quaternion manifold), and the new velocity follows from the old one by the
step's impulses: this is the leapfrog (Störmer-Verlet) scheme in Dojo's variational form, second-order
accurate in positions, when the velocity a state carries is read as the velocity *over the step
before it*, ``(x_k - x_{k-1}) / dt``. That is how the engine's states are to be read, and how
:func:`~sim2real.sysid.problem.data.box_states` rebuilds states from recorded poses.

A velocity measured *at* an instant (a scenario's start, a box set sliding at 1 m/s) is half a step
off that reading. Taken as it is, it costs a first-order error (a box sliding from ``v0`` stops
``v0 dt / 2`` short of ``v0² / (2 μ g)``: 2.9 % at 1 m/s, μ 0.3, 10 ms). :func:`rollout` with
``instantaneous_start=True`` therefore first turns the starting velocity into the velocity over the
half-open step before it, ``v_{-1/2} = v_0 - (dt/2) a_0``, with the acceleration ``a_0`` of one
probe step from the given state (same contacts, same pusher motion); gradients carry through it.
A probe that shows an impulse (an impact or a pusher blow within the first step, a velocity change
beyond ``4 (1 + μ_table) g dt``) is not a smooth acceleration, and the start is left as given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from sim2real.errors import InputError
from sim2real.params import spec
from sim2real.sim.constants import GRAVITY
from sim2real.sim.solve_log import SolveSummary
from sim2real.sim.state import STATE_SIZE, BoxState
from sim2real.sim.step import ContactInfo
from sim2real.sim.trajectory import Trajectory

if TYPE_CHECKING:
    from sim2real.sim.outcome import Reproduction
    from sim2real.sim.world import World


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
        Outcome class of every step (:class:`~sim2real.sim.outcome.StepOutcome` codes).
    solve : SolveSummary
        Their tally and worst violations.
    hard_steps : tuple of Reproduction
        The engine's records of the first recovered or degraded steps.
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
    hard_steps: tuple[Reproduction, ...] = ()

    def state(self, index: int) -> BoxState:
        """The state at step ``index`` as a :class:`BoxState`."""
        return BoxState.from_vector(self.states[index])


#: A probe step whose velocity change (m/s; angular rad/s times the half diagonal) exceeds this many
#: ``(1 + μ_table) g dt`` is an impulse, not an acceleration (see the module notes).
IMPULSIVE_START = 4.0


@dataclass(frozen=True)
class _Start:
    """The state a rollout starts from, and its derivatives with respect to the given one and the parameters."""

    state: BoxState
    d_state: np.ndarray  # (13, 13)
    d_params: np.ndarray  # (13, p)
    shifted: bool


def staggered_start(world: World, initial: BoxState, pusher_start: np.ndarray | None = None,
                    pusher_end: np.ndarray | None = None, grad_names: Sequence[str] = (),
                    grad: bool = False) -> _Start:
    """Turn a state with instantaneous velocities into the engine's reading (velocity over the step before).

    Parameters
    ----------
    world : World
    initial : BoxState
        Velocities at the instant ``t = 0`` (m/s and rad/s, world).
    pusher_start, pusher_end : ndarray (3,) or (6,), or None
        Pusher placement over the first step (as in :meth:`World.step`).
    grad_names : sequence of str
        Parameters to differentiate the shifted start with respect to.
    grad : bool
        Compute the derivatives (else ``d_state`` and ``d_params`` are left as identity and zero).

    Returns
    -------
    _Start
        ``state`` with ``v_{-1/2} = v_0 - (dt/2) a_0`` (both linear and angular velocity), or the given
        state if the probe step was impulsive (``shifted`` False); ``d_state`` (13, 13) and ``d_params``
        (13, p) its derivatives.
    """
    names = tuple(grad_names)
    x0 = initial.as_vector()
    grad = grad or bool(names)
    probe = world.step(initial, pusher_start, pusher_end, grad=grad, param_names=names)
    x1 = probe.state.as_vector()
    change = x1[7:13] - x0[7:13]
    mu = max(float(world.params["contact.mu_table"]), 0.0)
    limit = IMPULSIVE_START * (1.0 + mu) * GRAVITY * world.dt
    diagonal = float(np.linalg.norm(world.half_size))
    identity = np.eye(STATE_SIZE)
    if np.linalg.norm(change[:3]) > limit or np.linalg.norm(change[3:]) * diagonal > limit:
        return _Start(initial, identity, np.zeros((STATE_SIZE, len(names))), False)
    x = x0.copy()
    x[7:13] = x0[7:13] - 0.5 * change
    d_state = identity.copy()
    d_params = np.zeros((STATE_SIZE, len(names)))
    if grad:
        assert probe.d_state is not None and probe.d_params is not None
        d_state[7:13] = 1.5 * identity[7:13] - 0.5 * probe.d_state[7:13]
        d_params[7:13] = -0.5 * probe.d_params[7:13]
    return _Start(BoxState.from_vector(x), d_state, d_params, True)


def rollout(world: World, initial: BoxState, pusher_path: np.ndarray | None = None, steps: int | None = None,
            grad_names: Sequence[str] = (), initial_grad: bool = False, context: str = "",
            instantaneous_start: bool = False) -> Rollout:
    """Simulate ``T`` steps of ``world.dt``.

    Parameters
    ----------
    world : World
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
    instantaneous_start : bool
        ``initial`` carries velocities at the instant ``t = 0`` (a scenario, a box set moving), not the
        velocity over the step before (the engine's reading, and that of states rebuilt from recorded
        poses): start from :func:`staggered_start` (second-order; see the module notes). ``states[0]``
        is ``initial`` as given either way.

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
            raise InputError(f"pusher_path must have shape (T+1, {size}) with T >= 1, got {path.shape}")
        count = path.shape[0] - 1
    else:
        if steps is None or steps < 1:
            raise InputError("give a pusher_path or a positive number of steps")
        path = None
        count = int(steps)
    names = tuple(grad_names)
    grad = bool(names) or initial_grad
    if grad and getattr(world, "gradient_method", "implicit") != "implicit":
        return _rollout_differences(world, initial, path, count, names, initial_grad, context, instantaneous_start)
    traj = Trajectory.empty(count, path, names, initial_grad=initial_grad, context=context)
    traj.states[0] = initial.as_vector()
    if traj.sens0 is not None:
        traj.sens0[0] = np.eye(STATE_SIZE)
    running = np.zeros((STATE_SIZE, len(names))) if traj.sens is not None else None
    running0 = np.eye(STATE_SIZE) if traj.sens0 is not None else None
    if instantaneous_start:
        # The steps start from the shifted state, with its derivatives; states[0] stays as given.
        start = staggered_start(world, initial, path[0] if path is not None else None,
                                path[1] if path is not None else None, names, grad)
        first = traj.states[0].copy()
        traj.states[0] = start.state.as_vector()
        running = start.d_params.copy() if running is not None else None
        running0 = start.d_state.copy() if running0 is not None else None
        world.advance(traj, 0, count, running, running0)
        traj.states[0] = first
    else:
        world.advance(traj, 0, count, running, running0)
    times = np.arange(count + 1) * world.dt
    return Rollout(times, traj.states, traj.contacts(world.dt), traj.iterations, names, traj.sens, traj.sens0,
                   traj.log.outcomes, traj.log.summary(), tuple(traj.log.hard_steps))


#: Default relative step of :func:`_rollout_differences` (of max(1, |value|)); a world may set its own
#: (``rollout_fd_step``): an engine whose rollouts jump at small scales (contacts appearing and vanishing)
#: needs a step that averages over the jumps.
ROLLOUT_FD_STEP = 1e-4


def _rollout_differences(world: World, initial: BoxState, path: np.ndarray | None, count: int,
                         names: tuple[str, ...], initial_grad: bool, context: str,
                         instantaneous_start: bool) -> Rollout:
    """A rollout whose sensitivities are central differences of whole rollouts (engines without implicit
    gradients, e.g. MuJoCo: chaining finite-difference step Jacobians compounds their kinks)."""

    def run(w: World, start: BoxState) -> Rollout:
        return rollout(w, start, path, steps=count, context=context, instantaneous_start=instantaneous_start)

    base = run(world, initial)
    relative = float(getattr(world, "rollout_fd_step", ROLLOUT_FD_STEP))
    sens = np.zeros((count + 1, STATE_SIZE, len(names))) if names else None
    for k, name in enumerate(names):
        value = float(world.params[name])
        lower, upper = spec(name).lower, spec(name).upper
        h = relative * max(1.0, abs(value))
        hi, lo = min(value + h, upper), max(value - h, lower)
        plus = run(world.with_params({name: hi}), initial).states
        minus = run(world.with_params({name: lo}), initial).states
        assert sens is not None
        sens[:, :, k] = (plus - minus) / (hi - lo)
    sens0 = None
    if initial_grad:
        sens0 = np.zeros((count + 1, STATE_SIZE, STATE_SIZE))
        x0 = initial.as_vector()
        for j in range(STATE_SIZE):
            h = relative * max(1.0, abs(x0[j]))
            up, down = x0.copy(), x0.copy()
            up[j] += h
            down[j] -= h
            sens0[:, :, j] = (run(world, BoxState.from_vector(up)).states
                              - run(world, BoxState.from_vector(down)).states) / (2.0 * h)
    return replace(base, param_names=names, sensitivities=sens, initial_sensitivities=sens0)

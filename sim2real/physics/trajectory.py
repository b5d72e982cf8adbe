"""Runs of consecutive steps: the arrays they fill, and the step-by-step loop every engine can run.

A rollout (:func:`~sim2real.physics.rollout.rollout`) and a fit's teacher-forced segments step one world
many times from one state, chaining the sensitivities. :class:`Trajectory` holds what such a run fills
in place; an engine's ``advance`` (the :class:`~sim2real.engines.World` interface) runs steps
``first .. last - 1`` of it. :func:`advance_each` is the loop through the engine's ``step``, one call per
time step: what MuJoCo's world runs, and what our engine falls back to for a step its compiled loop
(:func:`~sim2real.physics.kernels.trajectory.steps_kernel`) hands back to the escalation ladder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.physics import kernels
from sim2real.physics.kernels.trajectory import (
    R_ACTIVE,
    R_ITERATIONS,
    R_PUSHER_DISTANCE,
    R_PUSHER_IMPULSE,
    R_TABLE_DISTANCE,
    RECORD_SIZE,
)
from sim2real.physics.layout import PARAMS_OFFSET, THETA_PARAMS, THETA_SIZE
from sim2real.physics.outcome import SolveLog
from sim2real.physics.shapes import Capsule
from sim2real.physics.state import STATE_SIZE, BoxState
from sim2real.physics.warm_start import WarmStart
from sim2real.physics.world import ContactInfo

if TYPE_CHECKING:
    from sim2real.engines.base import World
    from sim2real.physics.world import BoxWorld, StepResult

#: Stand-ins for the arrays of a run without pusher or without derivatives (the compiled loop's types).
_NO_PATH = np.zeros((1, 3))
_NO_SENS = np.zeros((0, STATE_SIZE, 0))
_NO_RUNNING = np.zeros((STATE_SIZE, 0))
_NO_SENS0 = np.zeros((0, STATE_SIZE, STATE_SIZE))
_NO_RUNNING0 = np.zeros((STATE_SIZE, STATE_SIZE))


@dataclass
class Trajectory:
    """What a run of ``T`` consecutive steps of one world fills in place.

    Attributes
    ----------
    states : ndarray (T+1, 13)
        Box states (:meth:`BoxState.as_vector`); the row a run starts from is given, step ``t`` writes
        row ``t + 1``.
    path : ndarray (T+1, 3) or (T+1, 6), or None
        Pusher placement at every step boundary (m, world), as the world's pusher needs; None: no pusher.
    names : tuple of str
        Parameters the steps differentiate with respect to (a subset of the world's ``differentiable``).
    columns : ndarray (len(names),) int
        Column of ``sens`` each of ``names`` adds to.
    sens : ndarray (T+1, 13, P) or None
        d state / d parameters, written for every step run (P ≥ len(names): columns of parameters the
        engine does not differentiate carry only what the start's sensitivity gives them).
    sens0 : ndarray (T+1, 13, 13) or None
        d state / d the state the run started from, when asked for.
    records : ndarray (T, RECORD_SIZE)
        Per step: iterations, active contacts, table and pusher distances (m), pusher normal impulse (N s)
        (layout ``R_*`` of :mod:`sim2real.physics.kernels.trajectory`).
    outcomes : ndarray (T,) int8
        :class:`StepOutcome` code of every step run.
    log : SolveLog
        Tally of the outcomes and the hard steps' reproduction records.
    warm : WarmStart
        The trajectory's warm start, carried from step to step.
    """

    states: np.ndarray
    path: np.ndarray | None
    names: tuple[str, ...]
    columns: np.ndarray
    sens: np.ndarray | None
    sens0: np.ndarray | None
    records: np.ndarray
    outcomes: np.ndarray
    log: SolveLog
    warm: WarmStart = field(default_factory=WarmStart)

    @classmethod
    def empty(cls, steps: int, path: np.ndarray | None = None, names: Sequence[str] = (),
              columns: Sequence[int] | None = None, parameters: int | None = None, initial_grad: bool = False,
              log: SolveLog | None = None, context: str = "") -> Trajectory:
        """Arrays for ``steps`` steps; ``columns`` (default 0, 1, ...) and ``parameters`` (default
        ``len(names)``) place the differentiated parameters among the sensitivity columns."""
        names = tuple(names)
        cols = np.arange(len(names)) if columns is None else np.asarray(columns)
        width = len(names) if parameters is None else parameters
        return cls(states=np.zeros((steps + 1, STATE_SIZE)), path=path, names=names,
                   columns=cols.astype(np.int64),
                   sens=np.zeros((steps + 1, STATE_SIZE, width)) if width else None,
                   sens0=np.zeros((steps + 1, STATE_SIZE, STATE_SIZE)) if initial_grad else None,
                   records=np.zeros((steps, RECORD_SIZE)), outcomes=np.zeros(steps, dtype=np.int8),
                   log=log if log is not None else SolveLog(context))

    @property
    def grad(self) -> bool:
        """The steps compute derivatives."""
        return self.sens is not None or self.sens0 is not None

    def contacts(self, dt: float, first: int = 0, last: int | None = None) -> tuple[ContactInfo, ...]:
        """The contact summary of steps ``first .. last - 1`` (``dt`` s turns the pusher impulse into a force)."""
        rows = self.records[first:last]
        return tuple(ContactInfo(int(r[R_ACTIVE]), float(r[R_TABLE_DISTANCE]), float(r[R_PUSHER_DISTANCE]),
                                 float(r[R_PUSHER_IMPULSE]) / dt) for r in rows)

    @property
    def iterations(self) -> np.ndarray:
        """Solver iterations per step, shape (T,), int."""
        return self.records[:, R_ITERATIONS].astype(int)


def record_step(traj: Trajectory, t: int, result: StepResult, dt: float, running: np.ndarray | None,
                running0: np.ndarray | None) -> None:
    """Write step ``t``'s result (from an engine's ``step`` of ``dt`` s) into ``traj`` and chain its derivatives.

    ``running`` (13, P) and ``running0`` (13, 13): the derivatives of the state step ``t`` started from;
    on return (in place) those of the state it produced.
    """
    traj.states[t + 1] = result.state.as_vector()
    contacts = result.contacts
    traj.records[t, R_ITERATIONS] = result.iterations
    traj.records[t, R_ACTIVE] = contacts.active
    traj.records[t, R_TABLE_DISTANCE] = contacts.table_distance
    traj.records[t, R_PUSHER_DISTANCE] = contacts.pusher_distance
    traj.records[t, R_PUSHER_IMPULSE] = contacts.pusher_force * dt
    traj.outcomes[t] = int(result.outcome)
    traj.log.record(result, t)
    if traj.sens is not None and running is not None and result.d_state is not None:
        chained = result.d_state @ running
        if traj.names:
            np.add.at(chained, (slice(None), traj.columns), result.d_params)  # names sharing a column add up
        running[:, :] = chained
        traj.sens[t + 1] = chained
    if traj.sens0 is not None and running0 is not None and result.d_state is not None:
        running0[:, :] = result.d_state @ running0
        traj.sens0[t + 1] = running0


def advance_each(world: World, traj: Trajectory, first: int, last: int, running: np.ndarray | None = None,
                 running0: np.ndarray | None = None) -> None:
    """Steps ``first .. last - 1`` of ``traj`` through ``world.step``, one call per time step.

    Parameters
    ----------
    world : World
    traj : Trajectory
        ``traj.states[first]`` holds the start.
    first, last : int
    running, running0 : ndarray (13, P) and (13, 13), optional
        d state / d parameters and d state / d start of ``states[first]`` (updated in place); defaults
        zero and identity.
    """
    running, running0 = start_derivatives(traj, running, running0)
    for t in range(first, last):
        start = traj.path[t] if traj.path is not None else None
        end = traj.path[t + 1] if traj.path is not None else None
        result = world.step(BoxState.from_vector(traj.states[t]), start, end, grad=traj.grad, param_names=traj.names,
                            step_index=t, warm_start=traj.warm)
        record_step(traj, t, result, world.dt, running, running0)


def start_derivatives(traj: Trajectory, running: np.ndarray | None,
             running0: np.ndarray | None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The start's derivatives, defaulted: zero for the parameters, identity for the start."""
    if traj.sens is not None and running is None:
        running = np.zeros(traj.sens.shape[1:])
    if traj.sens0 is not None and running0 is None:
        running0 = np.eye(STATE_SIZE)
    return running, running0


def advance_compiled(world: BoxWorld, traj: Trajectory, first: int, last: int, running: np.ndarray | None = None,
                     running0: np.ndarray | None = None) -> None:
    """Our engine's :func:`advance_each`: the compiled loop runs the steps the ladder's first rung solves, and
    each step it hands back goes through ``world.step`` (the whole ladder); the same states, derivatives,
    outcomes and warm starts as :func:`advance_each`, without the per-step Python work.

    Raises
    ------
    Sim2RealError
        A parameter the world cannot differentiate, a pusher path without a pusher, or a placement that is
        not finite (before any step is run).
    SimulationError
        In strict mode, for a step that would be degraded (from ``world.step``).
    """
    running, running0 = start_derivatives(traj, running, running0)
    for name in traj.names:
        if name not in world.differentiable:
            raise Sim2RealError(f"parameter '{name}' is not differentiable by the engine")
    path = _checked_path(world, traj, first, last)
    theta = np.empty(THETA_SIZE)
    theta[PARAMS_OFFSET:] = world._params_theta
    param_cols = np.array([PARAMS_OFFSET + THETA_PARAMS.index(n) for n in traj.names], dtype=np.int64)
    sens, run = (traj.sens, running) if traj.sens is not None else (_NO_SENS, _NO_RUNNING)
    sens0, run0 = (traj.sens0, running0) if traj.sens0 is not None else (_NO_SENS0, _NO_RUNNING0)
    dt, substeps, kappa_sim, kappa_grad = world._step_constants
    t = first
    while t < last:
        stop = kernels.steps_kernel(theta, path, t, last, dt, substeps, traj.path is not None,
                                    isinstance(world.pusher, Capsule), kappa_sim, kappa_grad, traj.grad,
                                    world._settings_vector, param_cols, traj.columns, traj.states, sens, run, sens0,
                                    run0, traj.records, traj.warm.buffer)
        traj.outcomes[t:stop] = 0
        traj.log.converged(stop - t)
        if stop == last:
            return
        advance_each(world, traj, stop, stop + 1, running, running0)
        t = stop + 1


def _checked_path(world: BoxWorld, traj: Trajectory, first: int, last: int) -> np.ndarray:
    """The pusher path as the compiled loop reads it (rows ``first .. last`` finite), or a stand-in."""
    if traj.path is None:
        return _NO_PATH
    if world.pusher is None:
        raise Sim2RealError("this world has no pusher shape, but a pusher path was given")
    path = np.ascontiguousarray(traj.path, dtype=float)
    if path.ndim != 2 or path.shape[1] != world.pusher.placement_size:
        raise Sim2RealError(f"the pusher path must have {world.pusher.placement_size} numbers per row (m, world), "
                            f"got shape {path.shape}")
    bad = np.flatnonzero(~np.isfinite(path[first:last + 1]).all(axis=1))
    if bad.size:
        row = first + int(bad[0])
        raise Sim2RealError(f"the pusher placement at step boundary {row} is not finite: {path[row].tolist()}")
    return path

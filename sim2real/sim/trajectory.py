"""Runs of consecutive steps: the arrays they fill, and the step-by-step loop every engine can run.

A rollout (:func:`~sim2real.sim.rollout.rollout`) and a fit's teacher-forced segments step one world
many times from one state, chaining the sensitivities. :class:`Trajectory` holds what such a run fills
in place; an engine's ``advance`` (the :class:`~sim2real.sim.world.World` interface) runs steps
``first .. last - 1`` of it. :func:`~sim2real.sim.world.advance_each` is the loop through the engine's
``step``, one call per time step: what MuJoCo's world runs, and what our engine falls back to for a step
its compiled loop (:func:`sim2real.physics.world.advance_compiled`) hands back to its escalation ladder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim2real.sim.solve_log import SolveLog
from sim2real.sim.state import STATE_SIZE
from sim2real.sim.step import ContactInfo, StepResult

#: Columns of :attr:`Trajectory.records`: iterations, active contacts, table and pusher distances (m), pusher
#: normal impulse (N s). Compiled loops write them as they are (ours: ``physics.kernels.trajectory``).
R_ITERATIONS, R_ACTIVE, R_TABLE_DISTANCE, R_PUSHER_DISTANCE, R_PUSHER_IMPULSE = 0, 1, 2, 3, 4
RECORD_SIZE = 5


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
        (layout ``R_*`` above).
    outcomes : ndarray (T,) int8
        :class:`~sim2real.sim.outcome.StepOutcome` code of every step run.
    log : SolveLog
        Tally of the outcomes and the hard steps' reproduction records.
    warm : object or None
        The trajectory's memory of its previous step, the engine's own (its ``new_warm_start()``), carried
        from step to step; None until the first step is run.
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
    warm: object | None = None

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
            assert result.d_params is not None  # a step asked for derivatives returns them
            np.add.at(chained.T, traj.columns, result.d_params.T)  # names sharing a column add up
        running[:, :] = chained
        traj.sens[t + 1] = chained
    if traj.sens0 is not None and running0 is not None and result.d_state is not None:
        running0[:, :] = result.d_state @ running0
        traj.sens0[t + 1] = running0


def start_derivatives(traj: Trajectory, running: np.ndarray | None,
             running0: np.ndarray | None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The start's derivatives, defaulted: zero for the parameters, identity for the start."""
    if traj.sens is not None and running is None:
        running = np.zeros(traj.sens.shape[1:])
    if traj.sens0 is not None and running0 is None:
        running0 = np.eye(STATE_SIZE)
    return running, running0

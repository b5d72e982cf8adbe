"""Consecutive time steps in one compiled call: the step kernel in a loop, with the sensitivities chained.

Part of :mod:`sim2real.physics.kernels` (see there for the layouts of θ). A rollout or a fit segment steps
the same world hundreds of times; calling :func:`~sim2real.physics.kernels.step.step_kernel` from Python
each time cost about twice the step itself (argument checks, result objects, the ladder's bookkeeping).
:func:`steps_kernel` runs the steps that the first rung of the escalation ladder solves and hands the
first one it does not solve back to the caller, which runs the ladder for it (in Python) and continues.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sim2real.physics.kernels.common import (
    _PE,
    _PS,
    _T,
    I_ACTIVE,
    I_ITERATIONS,
    I_PUSHER_DISTANCE,
    I_PUSHER_IMPULSE,
    I_TABLE_DISTANCE,
    INFO_SIZE,
    STATUS_OK,
    TRACE_COLUMNS,
    WARM_SIZE,
)
from sim2real.physics.kernels.iteration import _finite
from sim2real.physics.kernels.step import step_kernel
from sim2real.sim.trajectory import (
    R_ACTIVE,
    R_ITERATIONS,
    R_PUSHER_DISTANCE,
    R_PUSHER_IMPULSE,
    R_TABLE_DISTANCE,
)


@njit(cache=True)
def _place(theta: np.ndarray, state: np.ndarray, path: np.ndarray, t: int, with_pusher: bool) -> None:
    """Step ``t``'s start into ``θ``: the state (13,) and the pusher placements ``path[t]``, ``path[t + 1]``
    (sphere: its centre and three zeros; no pusher: zeros)."""
    for i in range(13):
        theta[i] = state[i]
    size = path.shape[1] if with_pusher else 0
    for i in range(6):
        theta[_PS + i] = path[t, i] if i < size else 0.0
        theta[_PE + i] = path[t + 1, i] if i < size else 0.0


@njit(cache=True)
def _chain(jacobian: np.ndarray, running: np.ndarray, param_cols: np.ndarray, out_cols: np.ndarray,
           chained: np.ndarray) -> None:
    """``chained = A running + B`` (A the state columns (13, 13) of the step's ``jacobian``, B its columns
    ``param_cols`` added to columns ``out_cols``); then ``running`` takes the result (both (13, P))."""
    for i in range(13):
        for j in range(running.shape[1]):
            acc = 0.0
            for m in range(13):
                acc += jacobian[i, m] * running[m, j]
            chained[i, j] = acc
        for k in range(param_cols.shape[0]):
            chained[i, out_cols[k]] += jacobian[i, param_cols[k]]
    running[:, :] = chained


@njit(cache=True)
def steps_kernel(theta: np.ndarray, path: np.ndarray, first: int, last: int, dt: float, substeps: int,
                 with_pusher: bool, capsule: bool, kappa_sim: float, kappa_grad: float, grad: bool,
                 settings: np.ndarray, param_cols: np.ndarray, out_cols: np.ndarray, states: np.ndarray,
                 sens: np.ndarray, running: np.ndarray, sens0: np.ndarray, running0: np.ndarray,
                 records: np.ndarray, warm: np.ndarray) -> int:
    """Steps ``first`` .. ``last - 1`` of a trajectory, each as the ladder's first rung solves it.

    Step ``t`` starts from ``states[t]`` (a unit quaternion) with the pusher moving from ``path[t]`` to
    ``path[t + 1]`` and writes ``states[t + 1]`` with its quaternion normalised (as
    :meth:`BoxState._from_engine` does between the steps of the per-step interface).

    Parameters
    ----------
    theta : ndarray (THETA_SIZE,)
        Work vector with the world's parameters in their slots (state and pusher slots are overwritten).
    path : ndarray (T+1, 3) or (T+1, 6)
        Pusher placement at every step boundary (m, world: sphere centre, or capsule end points);
        ignored without pusher.
    first, last : int
        The steps to run.
    dt, substeps, with_pusher, capsule, kappa_sim, kappa_grad, grad, settings
        As :func:`step_kernel` (the first rung's settings vector).
    param_cols, out_cols : ndarray (q,) int64
        With ``grad``: θ column of each differentiated parameter, and the column of ``sens`` it adds to.
    states : ndarray (T+1, 13)
        ``states[first]`` given; the later rows written.
    sens : ndarray (T+1, 13, P)
        With ``grad`` (shape (0, 13, 0): not tracked): ``sens[t + 1] = A_t running + B_t`` (``B_t`` the
        parameter columns, placed by ``out_cols``; parameters placed in one column add up), written for every
        step run; ``running`` (13, P) holds d state / d parameters of the state the step starts from (given for
        ``first``; carried along). Without ``sens0`` each step is differentiated along the P directions
        (``running`` in the state rows, the parameters' placements; :func:`~.gradients.directional_jacobian`)
        instead of through its Jacobian's columns.
    sens0, running0 : ndarray (T+1, 13, 13), ndarray (13, 13)
        Likewise d state / d initial state (``sens0`` of shape (0, 13, 13): not tracked).
    records : ndarray (T, RECORD_SIZE)
        Per step: iterations, active contacts, table and pusher distance at the end (m), pusher normal
        impulse (N s) (layout ``R_*`` of :mod:`sim2real.sim.trajectory`).
    warm : ndarray (WARM_SIZE,)
        The trajectory's warm-start buffer (see :func:`step_kernel`).

    Returns
    -------
    int
        ``last`` when every step was solved; else the step the first rung did not solve. Its ``states``,
        ``sens`` and ``records`` rows are not written, and ``warm`` is as it was before that step, so that
        the ladder can run it from the same start.
    """
    next_vec = np.empty(13)
    jacobian = np.empty((13, _T))
    smoothed = np.empty(13)
    info = np.empty(INFO_SIZE)
    trace = np.empty((0, len(TRACE_COLUMNS)))
    trace_count = np.zeros(1, dtype=np.int64)
    saved = np.empty(WARM_SIZE)
    keep = warm.shape[0] == WARM_SIZE
    chained = np.empty((13, sens.shape[2]))
    chained0 = np.empty((13, 13))
    no_cols = np.empty(0, dtype=np.int64)
    wanted = np.zeros(_T, dtype=np.bool_)  # the Jacobian columns chained: the state's and the parameters'
    wanted[:13] = True
    for k in range(param_cols.shape[0]):
        wanted[param_cols[k]] = True
    # Without d state / d start, each step is differentiated along the parameters' directions only (state rows:
    # the running sensitivity, parameter rows: where each parameter sits) instead of column by column.
    directional = grad and sens.shape[0] > 0 and sens0.shape[0] == 0 and sens.shape[2] > 0
    directions = np.zeros((_T, sens.shape[2] if directional else 0))
    for k in range(param_cols.shape[0] if directional else 0):
        directions[param_cols[k], out_cols[k]] += 1.0
    sens_out = np.empty((13, directions.shape[1]))
    for t in range(first, last):
        _place(theta, states[t], path, t, with_pusher)
        if keep:
            saved[:] = warm
        if directional:
            directions[:13, :] = running
        status = step_kernel(theta, dt, substeps, with_pusher, capsule, kappa_sim, kappa_grad, grad, wanted, settings,
                             next_vec, jacobian, smoothed, info, trace, trace_count, warm, directions, sens_out)
        if status != STATUS_OK or not _finite(next_vec):
            if keep:
                warm[:] = saved
            return t
        norm = np.sqrt(next_vec[3] ** 2 + next_vec[4] ** 2 + next_vec[5] ** 2 + next_vec[6] ** 2)
        for i in range(13):
            states[t + 1, i] = next_vec[i] / norm if 3 <= i < 7 else next_vec[i]
        if directional:
            running[:, :] = sens_out
            sens[t + 1] = sens_out
        elif grad and sens.shape[0] > 0:
            _chain(jacobian, running, param_cols, out_cols, chained)
            sens[t + 1] = chained
        if grad and sens0.shape[0] > 0:
            _chain(jacobian, running0, no_cols, no_cols, chained0)
            sens0[t + 1] = chained0
        records[t, R_ITERATIONS] = info[I_ITERATIONS]
        records[t, R_ACTIVE] = info[I_ACTIVE]
        records[t, R_TABLE_DISTANCE] = info[I_TABLE_DISTANCE]
        records[t, R_PUSHER_DISTANCE] = info[I_PUSHER_DISTANCE]
        records[t, R_PUSHER_IMPULSE] = info[I_PUSHER_IMPULSE]
    return last

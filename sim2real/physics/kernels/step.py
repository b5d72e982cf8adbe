"""One compiled time step: the resting shortcut and the step kernel that runs the solve, the gradients and the
trace.

Part of :mod:`sim2real.physics.kernels` (see there for the layouts of θ, the iterate and the residual).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sim2real.physics import layout
from sim2real.physics.constants import MIN_FRICTION
from sim2real.physics.kernels.common import (
    _PE,
    _PS,
    _T,
    ACTIVE_IMPULSE,
    I_ACTIVE,
    I_BEST_USED,
    I_FAILED_KAPPA,
    I_ITERATIONS,
    I_KAPPA_VIO,
    I_PATH_ERROR,
    I_PUSHER_DISTANCE,
    I_PUSHER_IMPULSE,
    I_RESIDUAL_VIO,
    I_RESTING,
    I_SOLVED,
    I_TABLE_DISTANCE,
    S_ACCEPT_BEST,
    S_RESIDUAL_TOL,
    S_REST_ENABLED,
    S_REST_GAP_TOL,
    S_REST_KAPPA_MAX,
    S_REST_PUSHER_MARGIN,
    S_REST_SPEED_TOL,
    S_SKIP_BAND,
    SCRATCH_SIZE,
    STATUS_BEST_ITERATE,
    STATUS_BREAKDOWN,
    STATUS_OK,
    W_CONTACTS,
    W_ITERATE,
    W_KAPPA,
    W_MASK,
    WARM_SIZE,
    _rotation,
)
from sim2real.physics.kernels.contact import (
    compact_contacts,
    inner_half,
    next_state,
    problem_data,
    pusher_box_distance,
    select_contacts,
)
from sim2real.physics.kernels.gradients import directional_jacobian, implicit_jacobian
from sim2real.physics.kernels.iteration import _finite, initial_iterate, interior_point, warm_iterate
from sim2real.sim.constants import GRAVITY


# --- the resting shortcut ---------------------------------------------------------------------
@njit(cache=True)
def resting(theta: np.ndarray, with_pusher: bool, capsule: bool, dt: float, settings: np.ndarray) -> bool:
    """Whether the hard-contact step is "the box stays at rest" without solving.

    True when every state velocity component is within ``speed_tol`` (m/s, rad/s; and below a
    tenth of the velocity that table friction removes in one step), the four lowest corners are
    within ``gap_tol`` m of the table (the box lies flat on a face), and the pusher cannot come
    within ``pusher_margin`` m of the box during the step (its start clearance minus the distance
    it travels; for a capsule the farther-travelling end point bounds every point of the segment).
    Then gravity is carried by the four corners, friction sticks, and zero velocities with an
    unchanged pose solve the contact problem exactly.
    """
    speed_tol = min(settings[S_REST_SPEED_TOL], 0.1 * max(theta[layout.MU_TABLE], MIN_FRICTION) * GRAVITY * dt)
    for i in range(layout.VEL, layout.OMEGA + 3):
        if abs(theta[i]) > speed_tol:
            return False
    rot = np.empty((3, 3))
    _rotation(theta[layout.QUAT], theta[layout.QUAT + 1], theta[layout.QUAT + 2], theta[layout.QUAT + 3], rot)
    half = np.empty(3)
    inner_half(theta, half)
    gap_tol = settings[S_REST_GAP_TOL]
    touching = 0
    for k in range(8):
        hx = (2.0 * (k // 4) - 1.0) * half[0]
        hy = (2.0 * ((k // 2) % 2) - 1.0) * half[1]
        hz = (2.0 * (k % 2) - 1.0) * half[2]
        gap = (theta[layout.POS + 2] + rot[2, 0] * hx + rot[2, 1] * hy + rot[2, 2] * hz - theta[layout.EDGE_RADIUS]
               - theta[layout.TABLE_HEIGHT])
        if gap < -gap_tol:
            return False
        if gap <= gap_tol:
            touching += 1
    if touching != 4:
        return False
    if with_pusher:
        travel_a = 0.0
        travel_b = 0.0
        for i in range(3):
            travel_a += (theta[_PE + i] - theta[_PS + i]) ** 2
            travel_b += (theta[_PE + 3 + i] - theta[_PS + 3 + i]) ** 2
        travel = max(travel_a, travel_b) if capsule else travel_a
        clearance, _ = pusher_box_distance(theta, theta[layout.POS:layout.POS + 3], rot, half, capsule, False,
                                           np.empty(3), np.empty(3), np.empty(14))
        if clearance - np.sqrt(travel) <= settings[S_REST_PUSHER_MARGIN]:
            return False
    return True


# --- one time step ----------------------------------------------------------------------------
#: Internal status of :func:`_substep`: a left-out contact came close; solve the sub-step with every contact.
_RETRY = -1


@njit(cache=True)
def step_kernel(theta: np.ndarray, dt: float, substeps: int, with_pusher: bool, capsule: bool, kappa_sim: float,
                kappa_grad: float, grad: bool, wanted: np.ndarray, settings: np.ndarray, state_out: np.ndarray,
                jacobian_out: np.ndarray, smoothed_out: np.ndarray, info: np.ndarray, trace: np.ndarray,
                trace_count: np.ndarray, warm: np.ndarray, directions: np.ndarray, sens_out: np.ndarray) -> int:
    """One time step ``dt`` (s) in ``substeps`` engine steps from the problem vector ``θ``.

    Parameters
    ----------
    theta : ndarray (THETA_SIZE,)
        State, pusher placement at the start and end of the step (6 + 6, m world: sphere centre and 3
        unused numbers, or capsule end points; ignored without pusher), parameters.
    dt : float
        Time step, s.
    substeps : int
        Engine steps of ``dt / substeps``; the pusher placement moves linearly over the step.
    with_pusher, capsule : bool
        There is a pusher; it is a capsule (else a sphere).
    kappa_sim, kappa_grad : float
        Central-path values of the forward solution and of the gradients.
    grad : bool
        Also compute d next state / d θ (then the resting shortcut is not taken).
    wanted : ndarray (THETA_SIZE,) bool
        With ``grad``: the columns of d next state / d θ to compute (:data:`ALL_COLUMNS`: all); the others
        are zero. The state columns are always computed (the sub-steps chain through them).
    settings : ndarray (SETTINGS_SIZE,)
    state_out : ndarray (13,)
        Next state (at ``kappa_sim``).
    jacobian_out : ndarray (13, THETA_SIZE)
        With ``grad``: d next state / d θ at ``kappa_grad``.
    smoothed_out : ndarray (13,)
        With ``grad``: the next state at ``kappa_grad`` (last sub-step).
    info : ndarray (INFO_SIZE,)
        Active contacts, pusher normal impulse (N s), table and pusher distances at the end (m),
        the worst violations of the step's solves, iterations, the κ that failed, central-path error,
        1 if the shortcut was taken, the number of solves that ended on their best iterate, the contacts in
        the (last sub-step's) solve.
    trace, trace_count : ndarray (rows, len(TRACE_COLUMNS)), ndarray (1,) int64
        Per-iteration solver trace (see :func:`interior_point`); :data:`NO_TRACE` records none.
    warm : ndarray (WARM_SIZE,) or (0,)
        Warm-start buffer, read and written: when it holds a solution with the same contacts in the solve
        (see below) at the same first κ, the first solve of each sub-step starts from it (:func:`warm_iterate`,
        no continuation);
        a warm solve that does not converge within ``WARM_MAX_ITERATIONS`` is redone from the cold start,
        so a warm start changes the cost, never whether a step converges (the answer agrees with the cold
        start's within the solver's tolerance). On return it holds this step's solution (or nothing, after a
        failed or shortcut step). Later sub-steps always start from the sub-step before.
        :data:`NO_WARM`: cold start, nothing kept.
    directions, sens_out : ndarray (THETA_SIZE, P), ndarray (13, P)
        With ``grad`` and P > 0, the step is differentiated along the columns of ``directions`` only
        (:func:`~.gradients.directional_jacobian`; a rollout's sensitivities to P parameters, the state rows
        holding those of the start): ``sens_out`` receives d next state / d p (chained over the sub-steps) and
        ``jacobian_out`` is not written. P = 0 (shapes (THETA_SIZE, 0) and (13, 0)): the ``wanted`` columns.

    Contacts far from touching are left out of the solve (:func:`select_contacts` with
    ``settings[S_SKIP_BAND]``); a sub-step after which a left-out contact's slack fell below half the band is
    solved again with every contact.

    Returns
    -------
    int
        :data:`STATUS_OK`, :data:`STATUS_NOT_CONVERGED` or :data:`STATUS_BREAKDOWN` (then ``info``
        names the failing κ); with ``settings[S_ACCEPT_BEST]`` a solve that fails continues from its
        best iterate (its Jacobian block, if asked for, is zero when singular there) and the step
        returns :data:`STATUS_BEST_ITERATE`.
    """
    n = 9 if with_pusher else 8
    sub_dt = dt / substeps
    work = theta.copy()
    for i in range(layout.STATE_SIZE):
        state_out[i] = theta[i]
    info[:] = 0.0
    half = np.empty(3)
    inner_half(theta, half)
    if (not grad and settings[S_REST_ENABLED] > 0.0 and kappa_sim <= settings[S_REST_KAPPA_MAX]
            and resting(theta, with_pusher, capsule, dt, settings)):
        for i in range(layout.VEL, layout.OMEGA + 3):
            state_out[i] = 0.0
        info[I_ACTIVE] = 4.0
        info[I_RESTING] = 1.0
        if warm.shape[0] == WARM_SIZE:
            warm[W_CONTACTS] = 0.0
    else:
        status = _substeps(theta, work, n, sub_dt, substeps, with_pusher, capsule, kappa_sim, kappa_grad, grad,
                           wanted, settings, state_out, jacobian_out, smoothed_out, info, trace, trace_count, warm,
                           directions, sens_out)
        if status != STATUS_OK:
            return status
    _contact_summary(theta, state_out, half, with_pusher, capsule, info)
    return STATUS_BEST_ITERATE if info[I_BEST_USED] > 0.0 else STATUS_OK


@njit(cache=True)
def _substeps(theta: np.ndarray, work: np.ndarray, n: int, sub_dt: float, substeps: int, with_pusher: bool,
              capsule: bool, kappa_sim: float, kappa_grad: float, grad: bool, wanted: np.ndarray,
              settings: np.ndarray, state_out: np.ndarray, jacobian_out: np.ndarray, smoothed_out: np.ndarray,
              info: np.ndarray, trace: np.ndarray, trace_count: np.ndarray, warm: np.ndarray, directions: np.ndarray,
              sens_out: np.ndarray) -> int:
    """The solved part of :func:`step_kernel`: every sub-step, the gradients chained over them; the info
    counters. Returns STATUS_OK or the failing status (``info`` then names the κ)."""
    full = (np.empty((n, 6)), np.empty((n, 2, 6)), np.empty(n), np.empty((n, 2)), np.empty(n))
    solved = (np.empty((n, 6)), np.empty((n, 2, 6)), np.empty(n), np.empty((n, 2)), np.empty(n))
    v0 = np.empty(6)
    md = np.empty(6)
    scales = np.empty(4)
    w = np.empty(6 + 8 * n)
    chosen = np.empty(n, dtype=np.int64)
    scratch = np.empty(SCRATCH_SIZE)
    sub = theta.copy()
    directional = grad and directions.shape[1] > 0
    # The whole Jacobian's work arrays, only when it is computed (not along directions, not without gradients).
    rows, cols = (layout.STATE_SIZE, _T) if grad and not directional else (0, 0)
    total = np.zeros((rows, cols))
    jac = np.empty((rows, cols))
    chained = np.empty((rows, cols))
    columns = wanted.copy()  # the Jacobian columns computed: the wanted ones and the state's
    columns[:layout.STATE_SIZE] = True
    along = directions.copy()  # directional: each sub-step's directions (state rows: the sub-step's start)
    first, second = kappa_sim, kappa_sim
    if grad and kappa_grad != kappa_sim:
        first, second = max(kappa_sim, kappa_grad), min(kappa_sim, kappa_grad)
    for i in range(rows):
        total[i, i] = 1.0
    counters = np.zeros(2, dtype=np.int64)  # iterations, solves that ended on their best iterate
    keep = warm.shape[0] == WARM_SIZE
    stored = np.zeros(WARM_SIZE)
    if keep:
        stored[:] = warm
        warm[W_CONTACTS] = 0.0  # until this step has succeeded
    count, pusher = 0, -1
    for k in range(substeps):
        for i in range(_T):
            sub[i] = work[i]
        if with_pusher:
            f0, f1 = k / substeps, (k + 1) / substeps
            for i in range(6):
                p0, p1 = theta[_PS + i], theta[_PE + i]
                sub[_PS + i] = p0 + (p1 - p0) * f0
                sub[_PE + i] = p0 + (p1 - p0) * f1
        problem_data(sub, sub_dt, n, capsule, full[0], full[1], full[2], full[3], full[4], v0, md, scales, scratch)
        band = skip_band(settings, kappa_sim, scales[1], sub_dt)
        while True:
            count, pusher = select_contacts(n, full[0], full[2], v0, sub_dt, band, chosen)
            compact_contacts(chosen, count, full[0], full[1], full[2], full[3], full[4], solved[0], solved[1],
                             solved[2], solved[3], solved[4])
            status = _substep(sub, sub_dt, n, capsule, first, second, kappa_grad, grad, settings, full, solved,
                              v0, md, scales, w, chosen, count, pusher, band, stored, columns, jac, smoothed_out,
                              info, trace, trace_count, k, counters, scratch, along, sens_out)
            if status != _RETRY:
                break
            band = 0.0
        if status != STATUS_OK:
            info[I_ITERATIONS] = counters[0]
            return status
        if directional:
            along[:layout.STATE_SIZE, :] = sens_out  # the next sub-step starts where this one ended
        elif grad:
            _chain_substep(jac, total, chained, k, substeps, with_pusher, columns)
        next_state(sub, w[0:6], sub_dt, state_out, scratch)
        if not _finite(state_out):
            info[I_ITERATIONS] = counters[0]
            info[I_FAILED_KAPPA] = second
            return STATUS_BREAKDOWN
        for i in range(layout.STATE_SIZE):
            work[i] = state_out[i]
    if grad and not directional:
        jacobian_out[:, :] = total
    if keep and counters[1] == 0:
        warm[:] = stored
    active = 0
    for c in range(count):
        if w[6 + c] / scales[0] > ACTIVE_IMPULSE:
            active += 1
    info[I_ACTIVE] = active
    info[I_SOLVED] = count
    info[I_PUSHER_IMPULSE] = w[6 + pusher] if pusher >= 0 else 0.0
    info[I_ITERATIONS] = counters[0]
    info[I_BEST_USED] = counters[1]
    return STATUS_OK


@njit(cache=True)
def _substep(sub: np.ndarray, sub_dt: float, n: int, capsule: bool, first: float, second: float, kappa_grad: float,
             grad: bool, settings: np.ndarray, full: tuple, solved: tuple, v0: np.ndarray, md: np.ndarray,
             scales: np.ndarray, w_buffer: np.ndarray, chosen: np.ndarray, count: int, pusher: int, band: float,
             stored: np.ndarray, columns: np.ndarray, jac: np.ndarray, smoothed_out: np.ndarray, info: np.ndarray,
             trace: np.ndarray, trace_count: np.ndarray, k: int, counters: np.ndarray, scratch: np.ndarray,
             along: np.ndarray, sens_out: np.ndarray) -> int:
    """Sub-step ``k``'s solves (at the first κ, then the second) on the contacts ``chosen[:count]``, its
    Jacobian ``jac`` (the ``columns`` asked for) with ``grad``, or with directions (``along`` (THETA_SIZE, P),
    P > 0) the derivatives along them into ``sens_out``; ``w_buffer[:6 + 8 count]`` ends as the solution.
    Returns STATUS_OK, a failing status, or ``_RETRY`` when a left-out contact's slack fell below half the
    ``band``."""
    jn, jt, bn, bt, mu = solved[0][:count], solved[1][:count], solved[2][:count], solved[3][:count], solved[4][:count]
    w = w_buffer[:6 + 8 * count]
    mask = 0.0
    for i in range(count):
        mask += 2.0 ** chosen[i]
    started_warm = stored[W_CONTACTS] == count and stored[W_MASK] == mask and stored[W_KAPPA] == first
    if started_warm:
        warm_iterate(count, stored, first, scales, w)
    else:
        initial_iterate(count, jn, bn, v0, md, scales, w)
    accept_best = settings[S_ACCEPT_BEST] > 0.0
    for target in range(1 if first == second else 2):
        kappa = first if target == 0 else second
        centred = grad and kappa == kappa_grad
        status, its, r_vio, k_vio, path = interior_point(w, count, sub_dt, kappa, settings, jn, jt, bn, bt, mu, v0,
                                                          md, scales, centred, trace, trace_count, k, pusher,
                                                          target == 0 and started_warm)
        counters[0] += its
        if target == 0 and started_warm and status != STATUS_OK:
            initial_iterate(count, jn, bn, v0, md, scales, w)
            status, its, r_vio, k_vio, path = interior_point(w, count, sub_dt, kappa, settings, jn, jt, bn, bt, mu,
                                                              v0, md, scales, centred, trace, trace_count, k, pusher)
            counters[0] += its
        if target == 0 and status == STATUS_OK and _left_out_close(n, full[0], full[2], chosen, count, w, sub_dt,
                                                                   band):
            stored[W_CONTACTS] = 0.0
            return _RETRY
        if target == 0 and status == STATUS_OK:
            stored[W_CONTACTS] = count
            stored[W_KAPPA] = first
            stored[W_MASK] = mask
            stored[W_ITERATE:W_ITERATE + w.shape[0]] = w
        elif target == 0:
            stored[W_CONTACTS] = 0.0
        info[I_RESIDUAL_VIO] = max(info[I_RESIDUAL_VIO], r_vio)
        info[I_KAPPA_VIO] = max(info[I_KAPPA_VIO], k_vio)
        info[I_PATH_ERROR] = max(info[I_PATH_ERROR], path)
        if status != STATUS_OK:
            info[I_FAILED_KAPPA] = kappa
            if not accept_best or not (r_vio < np.inf and k_vio < np.inf):
                return status
            counters[1] += 1
        if grad and kappa == kappa_grad:
            if along.shape[1] > 0:
                solved_ok = directional_jacobian(sub, w, count, capsule, sub_dt, kappa_grad, jn, jt, mu, v0, md,
                                                 scales[3], n, chosen, pusher, along, sens_out)
            else:
                solved_ok = implicit_jacobian(sub, w, count, capsule, sub_dt, kappa_grad, jn, jt, mu, v0, md,
                                              scales[3], jac, n, chosen, pusher, columns)
            if not solved_ok:
                info[I_FAILED_KAPPA] = kappa
                if not accept_best:
                    return STATUS_BREAKDOWN
                counters[1] += 1
                jac[:, :] = 0.0
                sens_out[:, :] = 0.0
            next_state(sub, w[0:6], sub_dt, smoothed_out, scratch)
    return STATUS_OK


@njit(cache=True)
def skip_band(settings: np.ndarray, kappa: float, velocity_unit: float, dt: float) -> float:
    """How far (m) a contact must stay from touching to be left out of a solve whose answer is taken at ``kappa``.

    ``settings[S_SKIP_BAND]``, widened so that the impulse a left-out contact would carry on the central
    path, ``κ p v / s`` at a slack ``s`` of at least the band over ``dt``, stays below the residual
    tolerance ``settings[S_RESIDUAL_TOL] p`` (``p``, ``v = velocity_unit``: the impulse and velocity units);
    0 when the setting is 0 (every contact solved).
    """
    band = settings[S_SKIP_BAND]
    if band <= 0.0:
        return 0.0
    return max(band, kappa * velocity_unit * dt / settings[S_RESIDUAL_TOL])


@njit(cache=True)
def _left_out_close(n: int, jn: np.ndarray, bn: np.ndarray, chosen: np.ndarray, count: int, w: np.ndarray,
                    dt: float, band: float) -> bool:
    """Whether a contact left out of the solve has a slack below half ``band`` (m) at the solved velocity
    ``w[0:6]`` (``jn``, ``bn``: every contact's data)."""
    if count == n:
        return False
    i = 0
    for c in range(n):
        if i < count and chosen[i] == c:
            i += 1
            continue
        slack = bn[c]
        for k in range(6):
            slack += jn[c, k] * w[k]
        if slack * dt < 0.5 * band:
            return True
    return False


@njit(cache=True)
def _chain_substep(jac: np.ndarray, total: np.ndarray, chained: np.ndarray, k: int, substeps: int,
                   with_pusher: bool, columns: np.ndarray) -> None:
    """Chain sub-step ``k``'s Jacobian onto ``total``: the sub-step sees the current state (d/dθ = total) and the
    sub-step pusher placements (affine in θ); the parameters pass through unchanged. Only the ``columns``
    computed are chained (the others stay zero)."""
    f0, f1 = k / substeps, (k + 1) / substeps
    for i in range(layout.STATE_SIZE):
        for j in range(_T):
            if not columns[j]:
                chained[i, j] = 0.0
                continue
            acc = jac[i, j] if j >= _PS else 0.0
            for m in range(layout.STATE_SIZE):
                acc += jac[i, m] * total[m, j]
            chained[i, j] = acc
        if with_pusher:
            for m in range(6):
                start, end = jac[i, _PS + m], jac[i, _PE + m]
                chained[i, _PS + m] += start * (1.0 - f0) - start + end * (1.0 - f1)
                chained[i, _PE + m] += start * f0 + end * f1 - end
    total[:, :] = chained


@njit(cache=True)
def _contact_summary(theta: np.ndarray, state_out: np.ndarray, half: np.ndarray, with_pusher: bool, capsule: bool,
                     info: np.ndarray) -> None:
    """Table and pusher distances (m) at the end of the step into ``info``."""
    rot = np.empty((3, 3))
    _rotation(state_out[3], state_out[4], state_out[5], state_out[6], rot)
    lowest = np.inf
    for k in range(8):
        hx = (2.0 * (k // 4) - 1.0) * half[0]
        hy = (2.0 * ((k // 2) % 2) - 1.0) * half[1]
        hz = (2.0 * (k % 2) - 1.0) * half[2]
        lowest = min(lowest, rot[2, 0] * hx + rot[2, 1] * hy + rot[2, 2] * hz)
    info[I_TABLE_DISTANCE] = state_out[2] + lowest - theta[layout.EDGE_RADIUS] - theta[layout.TABLE_HEIGHT]
    info[I_PUSHER_DISTANCE] = np.inf
    if with_pusher:
        info[I_PUSHER_DISTANCE], _ = pusher_box_distance(theta, state_out[0:3], rot, half, capsule, True,
                                                         np.empty(3), np.empty(3), np.empty(14))

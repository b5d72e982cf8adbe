"""Compiled implicit gradients: the implicit-function-theorem Jacobian of a solved step with respect to state,
pusher and parameters.

Part of :mod:`sim2real.physics.kernels` (see there for the layouts of θ, the iterate and the residual).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sim2real.physics import layout
from sim2real.physics.constants import MIN_FRICTION
from sim2real.physics.kernels.common import _MASS_COLUMN, _PE, _PS, _T, SCRATCH_SIZE, THETA_STEP, _rotation
from sim2real.physics.kernels.contact import (
    compact_contacts,
    inner_half,
    next_state,
    problem_data,
    pusher_box_distance,
)
from sim2real.physics.kernels.newton import equality_residual, factorize, solve
from sim2real.sim.constants import GRAVITY


# --- implicit gradients -----------------------------------------------------------------------
@njit(cache=True)
def implicit_jacobian(theta: np.ndarray, w: np.ndarray, n: int, capsule: bool, dt: float, kappa: float,
                      jn: np.ndarray, jt: np.ndarray, mu: np.ndarray, v0: np.ndarray, md: np.ndarray,
                      compliance: float, out: np.ndarray, full: int, chosen: np.ndarray, pusher: int,
                      columns: np.ndarray) -> bool:
    """d next state / d θ (13, THETA_SIZE) at the solution ``w`` (implicit function theorem): the ``columns``
    (THETA_SIZE,) bool asked for; the others are zero.

    ``w``, ``jn``, ``jt`` and ``mu`` are those of the ``n`` contacts in the solve: ``chosen[:n]`` of the
    ``full`` contacts of the step (8 corners and the pusher, see :func:`select_contacts`), the pusher (if
    chosen) at index ``pusher`` (-1: not in the solve). A contact left out of the solve was far from
    touching; it adds nothing to the derivatives.

    ``compliance``: ε of the pusher contact (``scales[3]`` of :func:`problem_data`; ∝ 1/mass, which
    enters the mass column). Returns False if the residual Jacobian is numerically
    singular at ``w`` (``out`` is then unusable).

    ``da/dθ = -R⁻¹ ∂r/∂θ``, with ``R`` the exact residual Jacobian at ``w`` block-eliminated once
    and back-substituted for all columns together.

    The partials ``∂r/∂θ`` are analytic where θ enters the contact data simply: the position
    (corner gaps; the pusher sees only its offset from the box), the state velocities (only
    through ``v0``), the mass, both friction coefficients, the table height, the pusher radius,
    the pusher placement at the end of the step (only through the pusher point's velocity; for a
    capsule its end points weigh ``1 - t`` and ``t``), and the unit of κ (``m g dt · g dt``) in the
    complementarity rows. The columns that move the contact geometry (quaternion, pusher placement
    at the start, box size, centre of mass, inertia scale, support ratio) and the partials ``∂x⁺/∂θ``, ``∂x⁺/∂a``
    of the next-state map are central differences of the compiled maps (relative step
    :data:`THETA_STEP`).
    """
    size = 6 + 8 * n
    ok, ratio, cone_a0, cone_bt, q_inverse, q_inv_c, h_inverse, scratch = _exact_factorization(w, n, dt, jn, jt, mu,
                                                                                             md, compliance, pusher)
    if not ok:
        return False
    rhs = np.zeros((size, _T))
    dx_dtheta = np.zeros((layout.STATE_SIZE, _T))
    a = w[0:6].copy()
    _geometry_partials(theta, w, n, capsule, dt, full, chosen, pusher, rhs, dx_dtheta, scratch, columns)
    _analytic_partials(theta, w, n, capsule, dt, kappa, jn, jt, mu, v0, md, compliance, pusher, rhs, scratch)
    corners = n - 1 if pusher >= 0 else n  # the table corners come first
    # Position: the pusher's geometry sees only its start placement - position (its velocity not at all,
    # so the start columns less their velocity part, which is minus the end columns), the corner gaps
    # rise with z, and the next position moves with the current one.
    for i in range(3):
        dx_dtheta[layout.POS + i, layout.POS + i] = 1.0
        if pusher >= 0:
            for row in range(6 + 4 * n):
                rhs[row, i] = -(rhs[row, _PS + i] + rhs[row, _PS + 3 + i]
                                + rhs[row, _PE + i] + rhs[row, _PE + 3 + i])
    for c in range(corners):
        rhs[6 + c, 2] -= 1.0 / dt
    directions = _solve_columns(w, n, rhs, jn, jt, mu, ratio, cone_a0, cone_bt, q_inverse, q_inv_c, h_inverse,
                                scratch, compliance, pusher, columns)
    _add_velocity_path(theta, a, dt, directions, dx_dtheta, scratch)
    for j in range(_T):
        if not columns[j]:
            for i in range(layout.STATE_SIZE):
                dx_dtheta[i, j] = 0.0
    out[:, :] = dx_dtheta
    return True


@njit(cache=True)
def _exact_factorization(w: np.ndarray, n: int, dt: float, jn: np.ndarray, jt: np.ndarray, mu: np.ndarray,
                         md: np.ndarray, compliance: float, pusher: int) -> tuple:
    """The exact residual Jacobian at ``w`` block-eliminated (:func:`~.newton.factorize`, unscaled): whether it
    was regular, then ``ratio``, ``cone_a0``, ``cone_bt``, ``q_inverse``, ``q_inv_c``, ``h_inverse`` and a
    scratch array for :func:`~.newton.solve`."""
    ratio = np.empty(n)
    cone_a0 = np.empty((n, 3))
    cone_bt = np.empty((n, 3, 2))
    q_inverse = np.empty((n, 3, 3))
    q_inv_c = np.empty((n, 3, 6))
    h_inverse = np.empty((6, 6))
    dummy = np.empty((n, 3, 3))
    scratch = np.empty(SCRATCH_SIZE)
    ok = factorize(w, n, dt, False, jn, jt, mu, md, dummy, dummy, np.empty((n, 3)), ratio, cone_a0, cone_bt,
                   q_inverse, q_inv_c, h_inverse, scratch, compliance, pusher)
    return ok, ratio, cone_a0, cone_bt, q_inverse, q_inv_c, h_inverse, scratch


@njit(cache=True)
def _analytic_partials(theta: np.ndarray, w: np.ndarray, n: int, capsule: bool, dt: float, kappa: float,
                       jn: np.ndarray, jt: np.ndarray, mu: np.ndarray, v0: np.ndarray, md: np.ndarray,
                       compliance: float, pusher: int, rhs: np.ndarray, scratch: np.ndarray) -> None:
    """The columns of ``∂r/∂θ`` (into ``rhs`` (6 + 8n, THETA_SIZE)) where θ enters the residual simply: the state
    velocities, the mass, both friction coefficients, the table height, the pusher radius and its placement at
    the end of the step (see :func:`implicit_jacobian`); not the position, nor the columns that move the contact
    geometry."""
    # State velocities enter only through v0 = (v + ω × R com, Rᵀ ω); the dynamics rows carry -md ∂v0.
    rot = np.empty((3, 3))
    _rotation(theta[layout.QUAT], theta[layout.QUAT + 1], theta[layout.QUAT + 2], theta[layout.QUAT + 3], rot)
    cx, cy, cz = theta[layout.COM_X], theta[layout.COM_Y], theta[layout.COM_Z]
    l0 = rot[0, 0] * cx + rot[0, 1] * cy + rot[0, 2] * cz
    l1 = rot[1, 0] * cx + rot[1, 1] * cy + rot[1, 2] * cz
    l2 = rot[2, 0] * cx + rot[2, 1] * cy + rot[2, 2] * cz
    for i in range(3):
        rhs[i, 7 + i] = -md[i]
        for k in range(3):
            rhs[3 + i, 10 + k] = -md[3 + i] * rot[k, i]
    rhs[0, 11], rhs[0, 12] = -md[0] * l2, md[0] * l1
    rhs[1, 10], rhs[1, 12] = md[1] * l2, -md[1] * l0
    rhs[2, 10], rhs[2, 11] = -md[2] * l1, md[2] * l0
    # Mass: inertia scales with it, and so does the gravity impulse.
    mass = theta[layout.MASS]
    ox, oy, oz = w[3], w[4], w[5]
    ix, iy, iz = md[3] * ox, md[4] * oy, md[5] * oz
    for k in range(6):
        rhs[k, _MASS_COLUMN] = md[k] / mass * (w[k] - v0[k])
    rhs[2, _MASS_COLUMN] += GRAVITY * dt
    rhs[3, _MASS_COLUMN] += dt * (oy * iz - oz * iy) / mass
    rhs[4, _MASS_COLUMN] += dt * (oz * ix - ox * iz) / mass
    rhs[5, _MASS_COLUMN] += dt * (ox * iy - oy * ix) / mass
    if pusher >= 0:  # pusher normal row s - (Jn a + bn + ε γ) with ε ∝ 1/m
        rhs[6 + pusher, _MASS_COLUMN] += compliance * w[6 + pusher] / mass
    # Friction: cone head ξ₁ - μγ (μ is clamped at MIN_FRICTION from below).
    corners = n - 1 if pusher >= 0 else n  # the table corners come first
    if theta[layout.MU_TABLE] > MIN_FRICTION:
        for c in range(corners):
            rhs[6 + n + c, layout.MU_TABLE] = -w[6 + c]
    # Table height: corner gaps (z - h)/dt in the normal rows.
    for c in range(corners):
        rhs[6 + c, layout.TABLE_HEIGHT] = 1.0 / dt
    if pusher >= 0:
        if theta[layout.MU_PUSHER] > MIN_FRICTION:
            rhs[6 + n + pusher, layout.MU_PUSHER] = -w[6 + pusher]
        rhs[6 + pusher, layout.PUSHER_RADIUS] = 1.0 / dt  # radius: distance - r
        weight_b = 0.0  # capsule: the segment parameter of the contact point (the point's share of b)
        if capsule:
            origin = np.empty(3)
            half = np.empty(3)
            inner_half(theta, half)
            for i in range(3):
                origin[i] = theta[layout.POS + i]
            _, weight_b = pusher_box_distance(theta, origin, rot, half, True, False, np.empty(3), np.empty(3),
                                              scratch)
        for i in range(3):  # pusher end: only the point's velocity (end - start)/dt, along the normal and tangents
            for column, weight in ((_PE + i, 1.0 - weight_b), (_PE + 3 + i, weight_b)):
                rhs[6 + pusher, column] = weight * jn[pusher, i] / dt
                rhs[6 + 2 * n + 2 * pusher, column] = weight * jt[pusher, 0, i] / dt
                rhs[6 + 2 * n + 2 * pusher + 1, column] = weight * jt[pusher, 1, i] / dt
    d_unit = (GRAVITY * dt) ** 2  # d(m g dt · g dt)/dm
    for c in range(n):
        rhs[6 + 4 * n + c, _MASS_COLUMN] = -kappa * d_unit
        rhs[6 + 5 * n + 3 * c, _MASS_COLUMN] = -kappa * d_unit


#: θ columns whose partials :func:`directional_jacobian` takes by central differences along a direction: the
#: position and the quaternion, the parameters that move the contact geometry and the pusher's start placement
#: (the others are :func:`_analytic_partials`' columns).
_DIFFERENCED = layout.GEOMETRY_PARAM_COLUMN.copy()
_DIFFERENCED[layout.POS:layout.QUAT + 4] = True
_DIFFERENCED[_PS:_PS + 6] = True


@njit(cache=True)
def directional_jacobian(theta: np.ndarray, w: np.ndarray, n: int, capsule: bool, dt: float, kappa: float,
                         jn: np.ndarray, jt: np.ndarray, mu: np.ndarray, v0: np.ndarray, md: np.ndarray,
                         compliance: float, full: int, chosen: np.ndarray, pusher: int, directions: np.ndarray,
                         out: np.ndarray) -> bool:
    """d next state / d θ times ``directions`` (THETA_SIZE, P) at the solution ``w``: ``out`` (13, P).

    What a rollout's sensitivities need: with P parameters, column ``j`` of ``directions`` holds d θ / d p_j
    of the step (its state rows the sensitivity of the state the step starts from, its parameter rows 1
    where ``p_j`` sits), and ``out[:, j]`` is d next state / d p_j. Each direction costs one pair of residual
    evaluations, one back-substitution and one pair of next-state evaluations, where :func:`implicit_jacobian`
    solves for all 13 state columns and differences each geometry column on its own.

    The same implicit function theorem: ``da = -R⁻¹ (∂r/∂θ · d)`` with ``R`` the exact residual Jacobian at
    ``w``. ``∂r/∂θ · d`` takes the analytic columns (:func:`_analytic_partials`) times their entries of ``d``,
    and for the position, the orientation and the geometry (:data:`_DIFFERENCED`) one central difference of
    the residual at the fixed ``w`` along those entries of ``d``; the next state's derivative is one central
    difference of the next-state map along ``(d, da)``. Each difference steps :data:`THETA_STEP` times the
    largest entry it moves, so a direction whose pose part is small (a parameter the motion hardly feels)
    keeps its relative accuracy. Arguments as :func:`implicit_jacobian`. Returns False if the residual
    Jacobian is numerically singular at ``w`` (``out`` is then unusable).
    """
    size = 6 + 8 * n
    count = directions.shape[1]
    ok, ratio, cone_a0, cone_bt, q_inverse, q_inv_c, h_inverse, scratch = _exact_factorization(w, n, dt, jn, jt, mu,
                                                                                             md, compliance, pusher)
    if not ok:
        return False
    partials = np.zeros((size, _T))
    _analytic_partials(theta, w, n, capsule, dt, kappa, jn, jt, mu, v0, md, compliance, pusher, partials, scratch)
    buffers = _residual_buffers(full, n)
    work = np.empty(SCRATCH_SIZE)
    plus = np.empty(size)
    minus = np.empty(size)
    perturbed = theta.copy()
    rhs = np.zeros((size, count))
    for j in range(count):
        largest = 0.0
        for m in range(_T):
            d = directions[m, j]
            if d == 0.0:
                continue
            if _DIFFERENCED[m]:
                largest = max(largest, abs(d))
            else:
                for i in range(size):
                    rhs[i, j] += partials[i, m] * d
        if largest == 0.0:
            continue
        h = THETA_STEP / largest
        for sign, values in ((1.0, plus), (-1.0, minus)):
            for m in range(_T):
                perturbed[m] = theta[m] + sign * h * directions[m, j] if _DIFFERENCED[m] else theta[m]
            _perturbed_residual(perturbed, w, n, capsule, dt, full, chosen, pusher, buffers, work, values)
        for i in range(6 + 4 * n):
            rhs[i, j] += (plus[i] - minus[i]) / (2.0 * h)
    solved = np.empty((size, count))
    solve(w, n, rhs, jn, jt, mu, ratio, cone_a0, cone_bt, q_inverse, q_inv_c, h_inverse, solved, scratch,
          compliance, pusher, True)
    _next_state_along(theta, w, dt, directions, solved, out, perturbed, work)
    return True


@njit(cache=True)
def _next_state_along(theta: np.ndarray, w: np.ndarray, dt: float, directions: np.ndarray, solved: np.ndarray,
                      out: np.ndarray, perturbed: np.ndarray, scratch: np.ndarray) -> None:
    """``out[:, j]`` (13, P): the next-state map's derivative along the pose part of ``directions[:, j]`` and the
    velocity rows ``solved[:6, j]`` (central difference; the map reads only the pose of θ and ``a = w[:6]``)."""
    a_plus = np.empty(6)
    a_minus = np.empty(6)
    x_plus = np.empty(layout.STATE_SIZE)
    x_minus = np.empty(layout.STATE_SIZE)
    for j in range(directions.shape[1]):
        largest = 0.0
        for m in range(_T):
            if layout.POSE_COLUMN[m]:
                largest = max(largest, abs(directions[m, j]))
        for k in range(6):
            largest = max(largest, abs(solved[k, j]))
        if largest == 0.0:
            out[:, j] = 0.0
            continue
        h = THETA_STEP / largest
        for m in range(_T):
            perturbed[m] = theta[m] + h * directions[m, j] if layout.POSE_COLUMN[m] else theta[m]
        for k in range(6):
            a_plus[k] = w[k] + h * solved[k, j]
            a_minus[k] = w[k] - h * solved[k, j]
        next_state(perturbed, a_plus, dt, x_plus, scratch)
        for m in range(_T):
            perturbed[m] = theta[m] - h * directions[m, j] if layout.POSE_COLUMN[m] else theta[m]
        next_state(perturbed, a_minus, dt, x_minus, scratch)
        for i in range(layout.STATE_SIZE):
            out[i, j] = (x_plus[i] - x_minus[i]) / (2.0 * h)


@njit(cache=True)
def _add_velocity_path(theta: np.ndarray, a: np.ndarray, dt: float, directions: np.ndarray, dx_dtheta: np.ndarray,
                       scratch: np.ndarray) -> None:
    """``dx_dtheta += ∂x⁺/∂a · da/dθ`` (13, THETA_SIZE): the next state's dependence through the solved velocity
    ``a`` (6,), with ``∂x⁺/∂a`` by central differences of the next-state map and ``da/dθ`` the velocity rows
    of ``directions`` (6, THETA_SIZE)."""
    x_plus = np.empty(layout.STATE_SIZE)
    x_minus = np.empty(layout.STATE_SIZE)
    for k in range(6):
        h = THETA_STEP * max(1.0, abs(a[k]))
        a_k = a[k]
        a[k] = a_k + h
        next_state(theta, a, dt, x_plus, scratch)
        a[k] = a_k - h
        next_state(theta, a, dt, x_minus, scratch)
        a[k] = a_k
        for i in range(layout.STATE_SIZE):
            slope = (x_plus[i] - x_minus[i]) / (2.0 * h)
            for j in range(_T):
                dx_dtheta[i, j] += slope * directions[k, j]


@njit(cache=True)
def _solve_columns(w: np.ndarray, n: int, rhs: np.ndarray, jn: np.ndarray, jt: np.ndarray, mu: np.ndarray,
                   ratio: np.ndarray, cone_a0: np.ndarray, cone_bt: np.ndarray, q_inverse: np.ndarray,
                   q_inv_c: np.ndarray, h_inverse: np.ndarray, scratch: np.ndarray, compliance: float, pusher: int,
                   columns: np.ndarray) -> np.ndarray:
    """The velocity rows (0-5) of ``R⁻¹ (-rhs)`` for the ``columns`` (THETA_SIZE,) asked for, as a
    (6, THETA_SIZE) array whose other columns are zero (:func:`~.newton.solve` on those columns only)."""
    size = 6 + 8 * n
    wanted = np.flatnonzero(columns)
    packed = np.empty((size, wanted.shape[0]))
    for i in range(size):
        for k in range(wanted.shape[0]):
            packed[i, k] = rhs[i, wanted[k]]
    solved = np.empty((size, wanted.shape[0]))
    solve(w, n, packed, jn, jt, mu, ratio, cone_a0, cone_bt, q_inverse, q_inv_c, h_inverse, solved, scratch,
          compliance, pusher, True)
    directions = np.zeros((6, _T))
    for i in range(6):
        for k in range(wanted.shape[0]):
            directions[i, wanted[k]] = solved[i, k]
    return directions


@njit(cache=True)
def _residual_buffers(full: int, n: int) -> tuple:
    """Work arrays of :func:`_perturbed_residual` for a step of ``full`` contacts, ``n`` of them solved."""
    return (np.empty((full, 6)), np.empty((full, 2, 6)), np.empty(full), np.empty((full, 2)), np.empty(full),
            np.empty((n, 6)), np.empty((n, 2, 6)), np.empty(n), np.empty((n, 2)), np.empty(n), np.empty(6),
            np.empty(6), np.empty(4))


@njit(cache=True)
def _perturbed_residual(perturbed: np.ndarray, w: np.ndarray, n: int, capsule: bool, dt: float, full: int,
                        chosen: np.ndarray, pusher: int, buffers: tuple, scratch: np.ndarray, out: np.ndarray) -> None:
    """The equality rows (``6 + 4n``) of the residual at the fixed solution ``w`` with the contact data of
    ``perturbed`` (θ), for the contacts ``chosen[:n]`` (``buffers`` from :func:`_residual_buffers`)."""
    fjn, fjt, fbn, fbt, fmu, pjn, pjt, pbn, pbt, pmu, pv0, pmd, psc = buffers
    problem_data(perturbed, dt, full, capsule, fjn, fjt, fbn, fbt, fmu, pv0, pmd, psc, scratch)
    compact_contacts(chosen, n, fjn, fjt, fbn, fbt, fmu, pjn, pjt, pbn, pbt, pmu)
    equality_residual(w, n, dt, pjn, pjt, pbn, pbt, pmu, pv0, pmd, psc, out, pusher)


@njit(cache=True)
def _geometry_partials(theta: np.ndarray, w: np.ndarray, n: int, capsule: bool, dt: float, full: int,
                       chosen: np.ndarray, pusher: int, rhs: np.ndarray, dx_dtheta: np.ndarray,
                       scratch: np.ndarray, columns: np.ndarray) -> None:
    """The ``columns`` asked for of ``∂r/∂θ`` (rows ``6 + 4n``, into ``rhs``) and ``∂x⁺/∂θ`` (into ``dx_dtheta``)
    that move the contact geometry, by central differences of the compiled maps (see :func:`implicit_jacobian`)."""
    size = 6 + 8 * n
    scratch = scratch.copy()  # problem_data's work space, apart from the caller's
    buffers = _residual_buffers(full, n)
    plus = np.empty(size)
    minus = np.empty(size)
    x_plus = np.empty(layout.STATE_SIZE)
    x_minus = np.empty(layout.STATE_SIZE)
    a = w[0:6].copy()
    perturbed = theta.copy()
    for j in range(_T):
        geometry = (layout.QUAT <= j < layout.QUAT + 4 or layout.GEOMETRY_PARAM_COLUMN[j]
                    or (pusher >= 0 and _PS <= j < (_PS + 6 if capsule else _PS + 3)))
        # the pusher's start columns also give the position's (see implicit_jacobian): always computed
        if not geometry or not (columns[j] or _PS <= j < _PS + 6):
            continue
        pose = layout.POSE_COLUMN[j]  # what the next-state map reads besides a
        h = THETA_STEP * max(1.0, abs(theta[j]))
        perturbed[j] = theta[j] + h
        _perturbed_residual(perturbed, w, n, capsule, dt, full, chosen, pusher, buffers, scratch, plus)
        if pose:
            next_state(perturbed, a, dt, x_plus, scratch)
        perturbed[j] = theta[j] - h
        _perturbed_residual(perturbed, w, n, capsule, dt, full, chosen, pusher, buffers, scratch, minus)
        if pose:
            next_state(perturbed, a, dt, x_minus, scratch)
        perturbed[j] = theta[j]
        for i in range(6 + 4 * n):
            rhs[i, j] = (plus[i] - minus[i]) / (2.0 * h)
        if pose:
            for i in range(layout.STATE_SIZE):
                dx_dtheta[i, j] = (x_plus[i] - x_minus[i]) / (2.0 * h)

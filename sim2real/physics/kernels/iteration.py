"""The compiled interior-point iteration (Mehrotra predictor-corrector with continuation) of one contact step.

Part of :mod:`sim2real.physics.kernels` (see there for the layouts of θ, the iterate and the residual).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sim2real.physics.kernels.common import (
    S_BACKTRACK,
    S_CONT_FACTOR,
    S_CONT_KAPPA,
    S_CONT_KAPPA_RTOL,
    S_CONT_RESIDUAL_TOL,
    S_GAP_FACTOR,
    S_GAP_PATIENCE,
    S_GRAD_KAPPA_RTOL,
    S_KAPPA_RTOL,
    S_MAX_BACKTRACKS,
    S_MAX_ITERATIONS,
    S_RESIDUAL_TOL,
    S_TAU_MIN,
    S_TAU_SOC_MAX,
    SCRATCH_SIZE,
    STATUS_BREAKDOWN,
    STATUS_NOT_CONVERGED,
    STATUS_OK,
    W_ITERATE,
    WARM_MAX_ITERATIONS,
    WARM_SHIFT,
)
from sim2real.physics.kernels.newton import cone_search, factorize, nt_scaling, residual, solve, violations


# --- the interior-point iteration ---------------------------------------------------------------
@njit(cache=True)
def _finite(x: np.ndarray) -> bool:
    """Every entry of the 1-D array ``x`` is finite (the violation maxima skip NaN, so test here)."""
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i] * 0.0
    return total == 0.0


@njit(cache=True)
def pair_gap(w: np.ndarray, n: int) -> float:
    """Largest duality gap of one complementarity pair, ``max(γ s, ξᵀη)`` (N s · m/s)."""
    gap = 0.0
    for c in range(n):
        gap = max(gap, w[6 + c] * w[6 + n + c])
        base_xi = 6 + 2 * n + 3 * c
        base_eta = 6 + 5 * n + 3 * c
        gap = max(gap, w[base_xi] * w[base_eta] + w[base_xi + 1] * w[base_eta + 1]
                  + w[base_xi + 2] * w[base_eta + 2])
    return gap


@njit(cache=True)
def initial_iterate(n: int, jn: np.ndarray, bn: np.ndarray, v0: np.ndarray, md: np.ndarray,
                    scales: np.ndarray, w: np.ndarray) -> None:
    """Free-flight velocities, unit (scaled) cone variables strictly inside their cones."""
    p, v = scales[0], scales[1]
    for k in range(6):
        w[k] = v0[k]
    w[2] -= p / md[0]
    for c in range(n):
        slack = bn[c]
        for k in range(6):
            slack += jn[c, k] * w[k]
        w[6 + c] = p
        w[6 + n + c] = max(slack, v)
        for i in range(3):
            w[6 + 2 * n + 3 * c + i] = p if i == 0 else 0.0
            w[6 + 5 * n + 3 * c + i] = v if i == 0 else 0.0


@njit(cache=True)
def warm_iterate(n: int, warm: np.ndarray, kappa: float, scales: np.ndarray, w: np.ndarray) -> None:
    """A stored solution moved strictly inside its cones: the start of a warm-started solve at ``kappa``.

    ``warm`` is a warm-start buffer (layout ``W_*`` in ``common``) holding a solution with the same ``n``
    contacts. Velocities are kept; every normal pair ``(γ, s)`` is raised to at least ``δ`` (impulse and
    velocity scales) and every cone head to at least its tail's norm plus ``δ``, with
    ``δ = max(WARM_SHIFT, 0.1 √κ)``, so contacts that separated or started touching since the stored step
    can change side without the iterate starting on a cone boundary.
    """
    p, v = scales[0], scales[1]
    delta = max(WARM_SHIFT, 0.1 * np.sqrt(kappa))
    for k in range(6):
        w[k] = warm[W_ITERATE + k]
    for c in range(n):
        w[6 + c] = max(warm[W_ITERATE + 6 + c], delta * p)
        w[6 + n + c] = max(warm[W_ITERATE + 6 + n + c], delta * v)
        for base, unit in ((6 + 2 * n + 3 * c, p), (6 + 5 * n + 3 * c, v)):
            t1, t2 = warm[W_ITERATE + base + 1], warm[W_ITERATE + base + 2]
            w[base + 1] = t1
            w[base + 2] = t2
            w[base] = max(warm[W_ITERATE + base], np.sqrt(t1 * t1 + t2 * t2) + delta * unit)


@njit(cache=True)
def interior_point(w: np.ndarray, n: int, dt: float, kappa: float, settings: np.ndarray, jn: np.ndarray,
                   jt: np.ndarray, bn: np.ndarray, bt: np.ndarray, mu: np.ndarray, v0: np.ndarray,
                   md: np.ndarray, scales: np.ndarray, centred: bool, trace: np.ndarray, trace_count: np.ndarray,
                   substep: int, pusher: int, warm: bool = False) -> tuple[int, int, float, float, float]:
    """Solve ``r(w; κ) = 0`` in place from the starting point in ``w`` (see ``solver.interior_point``).

    Mehrotra predictor-corrector with Nesterov-Todd scaled cone rows, the analytic cone line search and
    violation backtracking; κ continuation through ``continuation_kappa``. With ``warm`` (``w`` is a
    previous solution moved inside its cones by :func:`warm_iterate`) there is no continuation stage,
    the target is κ from the first iteration, only the central-path point at κ is accepted (never the
    duality-gap criterion below: a warm start may approach a different complementarity point than the
    cold start's, and only the central path fixes which), and at most ``WARM_MAX_ITERATIONS``
    iterations are spent (the caller then falls back to the cold start).
    ``centred``: converge onto the central-path point at κ (within S_GRAD_KAPPA_RTOL, for the gradients); else
    after ``gap_patience`` iterations also accept every pair's duality gap within ``gap_factor`` κ.

    ``w`` always ends finite: on failure the best iterate seen (lowest ``max(residual violation,
    complementarity)``), which a caller may accept as a last resort. A ``trace`` buffer (rows,
    len(TRACE_COLUMNS)) gets one row per iteration at ``trace_count[0]`` (rows beyond it dropped, the
    count grows on). ``pusher``: index of the compliant pusher contact among the ``n`` (-1: none).

    Returns
    -------
    (status, iterations, residual violation, complementarity, central-path error)
        ``status`` is :data:`STATUS_OK`, :data:`STATUS_NOT_CONVERGED` or :data:`STATUS_BREAKDOWN`; on
        failure the violations are those of the best iterate left in ``w``.
    """
    size = 6 + 8 * n
    unit = scales[0] * scales[1]
    degree = 2.0 * n
    residual_tol = settings[S_RESIDUAL_TOL]
    kappa_rtol = min(settings[S_KAPPA_RTOL], settings[S_GRAD_KAPPA_RTOL]) if centred else settings[S_KAPPA_RTOL]
    max_iterations = int(settings[S_MAX_ITERATIONS])
    max_backtracks = int(settings[S_MAX_BACKTRACKS])
    floor = max(kappa, settings[S_CONT_KAPPA])
    if warm:
        max_iterations = min(max_iterations, WARM_MAX_ITERATIONS)
        floor = kappa
    res = np.empty(size)
    rhs = np.empty((size, 1))
    d_aff = np.empty((size, 1))
    d = np.empty((size, 1))
    candidate = np.empty(size)
    scale = np.empty((n, 3, 3))
    scale_inverse = np.empty((n, 3, 3))
    lam = np.empty((n, 3))
    ratio = np.empty(n)
    cone_a0 = np.empty((n, 3))
    cone_bt = np.empty((n, 3, 2))
    q_inverse = np.empty((n, 3, 3))
    q_inv_c = np.empty((n, 3, 6))
    h_inverse = np.empty((6, 6))
    sx = np.empty(3)
    se = np.empty(3)
    scratch = np.empty(SCRATCH_SIZE)
    residual(w, n, dt, floor, jn, jt, bn, bt, mu, v0, md, scales, res, pusher)
    r_vio, k_vio, path = violations(res, w, n, floor, scales)
    xi0 = 6 + 2 * n
    eta0 = 6 + 5 * n
    best = w.copy()
    best_merit = np.inf
    best_r, best_k, best_path = r_vio, k_vio, path
    alpha = 0.0
    for iteration in range(max_iterations + 1):
        if floor > kappa and r_vio <= settings[S_CONT_RESIDUAL_TOL] and path <= settings[S_CONT_KAPPA_RTOL]:
            floor = max(kappa, floor * settings[S_CONT_FACTOR])
            residual(w, n, dt, floor, jn, jt, bn, bt, mu, v0, md, scales, res, pusher)
            r_vio, k_vio, path = violations(res, w, n, floor, scales)
        row = trace_count[0]
        if row < trace.shape[0]:
            trace[row, 0] = substep
            trace[row, 1] = kappa
            trace[row, 2] = floor
            trace[row, 3] = iteration
            trace[row, 4] = r_vio
            trace[row, 5] = k_vio
            trace[row, 6] = path
            trace[row, 7] = alpha
        trace_count[0] = row + 1
        if not (r_vio < np.inf and path < np.inf and _finite(w) and _finite(res)):  # also catches NaN
            w[:] = best
            return STATUS_BREAKDOWN, iteration, best_r, best_k, best_path
        merit = max(r_vio, k_vio)
        if merit < best_merit:
            best_merit = merit
            best[:] = w
            best_r, best_k, best_path = r_vio, k_vio, path
        if floor == kappa and r_vio <= residual_tol and (
                path <= kappa_rtol or (not centred and not warm and iteration >= settings[S_GAP_PATIENCE]
                                       and pair_gap(w, n) <= settings[S_GAP_FACTOR] * kappa * unit)):
            return STATUS_OK, iteration, r_vio, k_vio, path
        if iteration == max_iterations:
            break
        if not nt_scaling(w, n, scale, scale_inverse, lam) or not factorize(
                w, n, dt, True, jn, jt, mu, md, scale, scale_inverse, lam, ratio, cone_a0, cone_bt, q_inverse,
                q_inv_c, h_inverse, scratch, scales[3], pusher):
            w[:] = best
            return STATUS_BREAKDOWN, iteration, best_r, best_k, best_path
        # Predictor: κ = 0 in the scaled complementarity rows (λ ∘ λ).
        for i in range(6 + 4 * n):
            rhs[i, 0] = res[i]
        mu_now = 0.0
        for c in range(n):
            rhs[6 + 4 * n + c, 0] = w[6 + c] * w[6 + n + c]
            l0, l1, l2 = lam[c, 0], lam[c, 1], lam[c, 2]
            rhs[6 + 5 * n + 3 * c, 0] = l0 * l0 + l1 * l1 + l2 * l2
            rhs[6 + 5 * n + 3 * c + 1, 0] = 2.0 * l0 * l1
            rhs[6 + 5 * n + 3 * c + 2, 0] = 2.0 * l0 * l2
            mu_now += w[6 + c] * w[6 + n + c]
            for i in range(3):
                mu_now += w[xi0 + 3 * c + i] * w[eta0 + 3 * c + i]
        solve(w, n, rhs, jn, jt, mu, ratio, cone_a0, cone_bt, q_inverse, q_inv_c, h_inverse, d_aff, scratch,
              scales[3], pusher)
        alpha_aff = cone_search(w, d_aff, n, 1.0, 1.0)
        mu_now /= degree * unit
        mu_aff = 0.0
        for c in range(n):
            mu_aff += ((w[6 + c] + alpha_aff * d_aff[6 + c, 0]) * (w[6 + n + c] + alpha_aff * d_aff[6 + n + c, 0]))
            for i in range(3):
                mu_aff += ((w[xi0 + 3 * c + i] + alpha_aff * d_aff[xi0 + 3 * c + i, 0])
                           * (w[eta0 + 3 * c + i] + alpha_aff * d_aff[eta0 + 3 * c + i, 0]))
        mu_aff /= degree * unit
        sigma = min(1.0, max(0.0, mu_aff / mu_now)) ** 3
        target = max(sigma * mu_now, floor) * unit
        second_order = sigma * mu_now > floor
        for c in range(n):
            rhs[6 + 4 * n + c, 0] -= target
            rhs[6 + 5 * n + 3 * c, 0] -= target
            if second_order:
                # Mehrotra's second-order correction, in the scaled space.
                rhs[6 + 4 * n + c, 0] += d_aff[6 + c, 0] * d_aff[6 + n + c, 0]
                for i in range(3):
                    sx[i] = 0.0
                    se[i] = 0.0
                    for j in range(3):
                        sx[i] += scale_inverse[c, i, j] * d_aff[xi0 + 3 * c + j, 0]
                        se[i] += scale[c, i, j] * d_aff[eta0 + 3 * c + j, 0]
                rhs[6 + 5 * n + 3 * c, 0] += sx[0] * se[0] + sx[1] * se[1] + sx[2] * se[2]
                rhs[6 + 5 * n + 3 * c + 1, 0] += sx[0] * se[1] + se[0] * sx[1]
                rhs[6 + 5 * n + 3 * c + 2, 0] += sx[0] * se[2] + se[0] * sx[2]
        solve(w, n, rhs, jn, jt, mu, ratio, cone_a0, cone_bt, q_inverse, q_inv_c, h_inverse, d, scratch, scales[3],
              pusher)
        tau_ort = max(settings[S_TAU_MIN], 1.0 - max(r_vio, k_vio) ** 2)
        tau_soc = min(settings[S_TAU_SOC_MAX], tau_ort)
        alpha = cone_search(w, d, n, tau_ort, tau_soc)
        new_r, new_k, new_path = r_vio, k_vio, path
        for _ in range(max_backtracks):
            for i in range(size):
                candidate[i] = w[i] + alpha * d[i, 0]
            residual(candidate, n, dt, floor, jn, jt, bn, bt, mu, v0, md, scales, res, pusher)
            new_r, new_k, new_path = violations(res, candidate, n, floor, scales)
            if new_r <= max(r_vio, residual_tol) or new_k <= k_vio or new_path <= path:
                break
            alpha *= settings[S_BACKTRACK]
        for i in range(size):
            w[i] = candidate[i]
        r_vio, k_vio, path = new_r, new_k, new_path
    w[:] = best
    return STATUS_NOT_CONVERGED, max_iterations, best_r, best_k, best_path

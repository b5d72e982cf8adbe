"""Compiled Newton system of the interior point: residual, violations, Nesterov-Todd scaling, the block-eliminated
factorisation and solve, the cone line search.

Part of :mod:`sim2real.physics.kernels` (see there for the layouts of θ, the iterate and the residual).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sim2real.physics.kernels.common import _invert3, _invert6


# --- residual ---------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def equality_residual(w: np.ndarray, n: int, dt: float, jn: np.ndarray, jt: np.ndarray, bn: np.ndarray,
                      bt: np.ndarray, mu: np.ndarray, v0: np.ndarray, md: np.ndarray, scales: np.ndarray,
                      out: np.ndarray, pusher: int) -> None:
    """Dynamics, normal-slack, cone-head and slip rows at ``w`` into ``out[:6 + 4n]``.

    The normal row of the pusher contact (index ``pusher``; -1: none) carries its compliance ``scales[3] γ``.
    """
    xi0 = 6 + 2 * n
    eta0 = 6 + 5 * n
    for k in range(6):
        out[k] = md[k] * (w[k] - v0[k])
    out[2] += scales[0]  # minus the gravity impulse -m g dt
    ox, oy, oz = w[3], w[4], w[5]
    ix, iy, iz = md[3] * ox, md[4] * oy, md[5] * oz
    out[3] += dt * (oy * iz - oz * iy)
    out[4] += dt * (oz * ix - ox * iz)
    out[5] += dt * (ox * iy - oy * ix)
    for c in range(n):
        gamma = w[6 + c]
        f1 = w[xi0 + 3 * c + 1]
        f2 = w[xi0 + 3 * c + 2]
        normal_velocity = bn[c]
        t1 = bt[c, 0]
        t2 = bt[c, 1]
        for k in range(6):
            out[k] -= jn[c, k] * gamma + jt[c, 0, k] * f1 + jt[c, 1, k] * f2
            normal_velocity += jn[c, k] * w[k]
            t1 += jt[c, 0, k] * w[k]
            t2 += jt[c, 1, k] * w[k]
        if c == pusher:  # compliant pusher contact: s = Jn a + bn + ε γ
            normal_velocity += scales[3] * gamma
        out[6 + c] = w[6 + n + c] - normal_velocity
        out[6 + n + c] = w[xi0 + 3 * c] - mu[c] * gamma
        out[6 + 2 * n + 2 * c] = w[eta0 + 3 * c + 1] - t1
        out[6 + 2 * n + 2 * c + 1] = w[eta0 + 3 * c + 2] - t2


@njit(cache=True)
def residual(w: np.ndarray, n: int, dt: float, kappa: float, jn: np.ndarray, jt: np.ndarray, bn: np.ndarray,
             bt: np.ndarray, mu: np.ndarray, v0: np.ndarray, md: np.ndarray, scales: np.ndarray,
             out: np.ndarray, pusher: int) -> None:
    """Full residual (6 + 8n) at the central-path value ``kappa`` (dimensionless); ``pusher`` as
    :func:`equality_residual`."""
    equality_residual(w, n, dt, jn, jt, bn, bt, mu, v0, md, scales, out, pusher)
    target = kappa * scales[0] * scales[1]
    xi0 = 6 + 2 * n
    eta0 = 6 + 5 * n
    for c in range(n):
        out[6 + 4 * n + c] = w[6 + c] * w[6 + n + c] - target
        x0, x1, x2 = w[xi0 + 3 * c], w[xi0 + 3 * c + 1], w[xi0 + 3 * c + 2]
        e0, e1, e2 = w[eta0 + 3 * c], w[eta0 + 3 * c + 1], w[eta0 + 3 * c + 2]
        base = 6 + 5 * n + 3 * c
        out[base] = x0 * e0 + x1 * e1 + x2 * e2 - target
        out[base + 1] = x0 * e1 + e0 * x1
        out[base + 2] = x0 * e2 + e0 * x2


@njit(cache=True)
def violations(r: np.ndarray, w: np.ndarray, n: int, kappa: float, scales: np.ndarray) -> tuple[float, float, float]:
    """Scaled (residual violation, complementarity, central-path error) of the residual ``r`` at ``w``.

    As ``solver.violations``: the impulse rows are measured in ``max(m g dt, max γ)``.
    """
    p, v, length = scales[0], scales[1], scales[2]
    p_rows = p
    for c in range(n):
        p_rows = max(p_rows, w[6 + c])
    eq = 0.0
    for k in range(3):
        eq = max(eq, abs(r[k]) / p_rows)
    for k in range(3, 6):
        eq = max(eq, abs(r[k]) / (p_rows * length))
    for c in range(n):
        eq = max(eq, abs(r[6 + c]) / v, abs(r[6 + n + c]) / p_rows,
                 abs(r[6 + 2 * n + 2 * c]) / v, abs(r[6 + 2 * n + 2 * c + 1]) / v)
    unit = p * v
    deviation = 0.0
    products = -np.inf
    for c in range(n):
        cn = r[6 + 4 * n + c]
        h0, h1, h2 = r[6 + 5 * n + 3 * c], r[6 + 5 * n + 3 * c + 1], r[6 + 5 * n + 3 * c + 2]
        deviation = max(deviation, abs(cn), abs(h0), abs(h1), abs(h2))
        products = max(products, cn, abs(h1), abs(h2), h0)
    return eq, products / unit + kappa, deviation / unit / kappa


# --- Newton system ----------------------------------------------------------------------------
@njit(cache=True)
def nt_scaling(w: np.ndarray, n: int, scale: np.ndarray, scale_inverse: np.ndarray, lam: np.ndarray) -> bool:
    """Nesterov-Todd scaling of every cone pair of ``w`` (see ``solver.nt_scaling``).

    Outputs ``scale`` W (n, 3, 3), ``scale_inverse`` W⁻¹ (n, 3, 3), ``lam`` λ = W η (n, 3). Returns False (a
    breakdown) when a pair has no finite, positive scale: an iterate so far out that its cone determinants
    overflow (the ratio of the two is then 0 or inf).
    """
    xi0 = 6 + 2 * n
    eta0 = 6 + 5 * n
    for c in range(n):
        x0, x1, x2 = w[xi0 + 3 * c], w[xi0 + 3 * c + 1], w[xi0 + 3 * c + 2]
        e0, e1, e2 = w[eta0 + 3 * c], w[eta0 + 3 * c + 1], w[eta0 + 3 * c + 2]
        det_xi = max(x0 * x0 - x1 * x1 - x2 * x2, 1e-300)
        det_eta = max(e0 * e0 - e1 * e1 - e2 * e2, 1e-300)
        sx = np.sqrt(det_xi)
        se = np.sqrt(det_eta)
        xb0, xb1, xb2 = x0 / sx, x1 / sx, x2 / sx
        eb0, eb1, eb2 = e0 / se, e1 / se, e2 / se
        norm = np.sqrt(2.0 * (1.0 + xb0 * eb0 + xb1 * eb1 + xb2 * eb2))
        wb0 = (xb0 + eb0) / norm
        root = np.sqrt(2.0 * (wb0 + 1.0))
        v0 = wb0 / root + 1.0 / root
        v1 = (xb1 - eb1) / norm / root
        v2 = (xb2 - eb2) / norm / root
        beta = (det_xi / det_eta) ** 0.25
        if not (0.0 < beta < np.inf):
            return False
        for i in range(3):
            vi = v0 if i == 0 else (v1 if i == 1 else v2)
            for j in range(3):
                vj = v0 if j == 0 else (v1 if j == 1 else v2)
                flip_i = 1.0 if i == 0 else -1.0
                flip_j = 1.0 if j == 0 else -1.0
                jd = flip_i if i == j else 0.0
                scale[c, i, j] = beta * (2.0 * vi * vj - jd)
                scale_inverse[c, i, j] = (2.0 * flip_i * vi * flip_j * vj - jd) / beta
        for i in range(3):
            lam[c, i] = scale[c, i, 0] * e0 + scale[c, i, 1] * e1 + scale[c, i, 2] * e2
    return True


@njit(cache=True)
def factorize(w: np.ndarray, n: int, dt: float, scaled: bool, jn: np.ndarray, jt: np.ndarray, mu: np.ndarray,
              md: np.ndarray, scale: np.ndarray, scale_inverse: np.ndarray, lam: np.ndarray,
              ratio: np.ndarray, cone_a0: np.ndarray, cone_bt: np.ndarray, q_inverse: np.ndarray,
              q_inv_c: np.ndarray, h_inverse: np.ndarray, scratch: np.ndarray, compliance: float, pusher: int) -> bool:
    """Block-eliminate the Newton matrix at ``w`` down to 6 × 6 (see ``solver.factorize``).

    ``scaled``: cone rows ``Arw(λ)(W⁻¹Δξ + WΔη)`` (iterations; needs ``nt_scaling`` outputs);
    otherwise the exact Jacobian ``Arw(η)Δξ + Arw(ξ)Δη`` (implicit gradients). Outputs: ``ratio``
    γ/(s + εγ) (n; ``ε = compliance`` for the pusher contact, index ``pusher``, 0 for the table), ``cone_a0`` (n, 3),
    ``cone_bt`` (n, 3, 2), ``q_inverse`` (n, 3, 3), ``q_inv_c`` (n, 3, 6), ``h_inverse`` (6, 6).
    ``scratch``: at least 126 numbers.

    Returns
    -------
    bool
        False if a block was numerically singular (then the outputs are unusable).
    """
    xi0 = 6 + 2 * n
    eta0 = 6 + 5 * n
    # Work space in ``scratch``, row-major and indexed rather than viewed (each view costs reference counts):
    # the cone blocks A and B (3 × 3) at 0 and 9, the block Q (3 × 3) at 18, C (3 × 6) at 27,
    # H (6 × 6) at 45, Q⁻¹ at 81, H⁻¹ at 90.
    a_at, b_at, q_at, c_at, h_at, qi_at, hi_at = 0, 9, 18, 27, 45, 81, 90
    for j in range(6):
        for k in range(6):
            scratch[h_at + 6 * j + k] = md[k] if j == k else 0.0
    ox, oy, oz = w[3], w[4], w[5]
    ix, iy, iz = md[3] * ox, md[4] * oy, md[5] * oz
    # d(ω × Iω)/dω = [ω]× I - [Iω]×
    scratch[h_at + 6 * 3 + 4] += dt * (-oz * md[4] + iz)
    scratch[h_at + 6 * 3 + 5] += dt * (oy * md[5] - iy)
    scratch[h_at + 6 * 4 + 3] += dt * (oz * md[3] - iz)
    scratch[h_at + 6 * 4 + 5] += dt * (-ox * md[5] + ix)
    scratch[h_at + 6 * 5 + 3] += dt * (-oy * md[3] + iy)
    scratch[h_at + 6 * 5 + 4] += dt * (ox * md[4] - ix)
    for c in range(n):
        eps = compliance if c == pusher else 0.0
        ratio[c] = w[6 + c] / (w[6 + n + c] + eps * w[6 + c])
        if scaled:  # Arw(λ) W⁻¹ and Arw(λ) W
            l0, l1, l2 = lam[c, 0], lam[c, 1], lam[c, 2]
            for j in range(3):
                scratch[a_at + j] = (l0 * scale_inverse[c, 0, j] + l1 * scale_inverse[c, 1, j]
                                     + l2 * scale_inverse[c, 2, j])
                scratch[a_at + 3 + j] = l1 * scale_inverse[c, 0, j] + l0 * scale_inverse[c, 1, j]
                scratch[a_at + 6 + j] = l2 * scale_inverse[c, 0, j] + l0 * scale_inverse[c, 2, j]
                scratch[b_at + j] = l0 * scale[c, 0, j] + l1 * scale[c, 1, j] + l2 * scale[c, 2, j]
                scratch[b_at + 3 + j] = l1 * scale[c, 0, j] + l0 * scale[c, 1, j]
                scratch[b_at + 6 + j] = l2 * scale[c, 0, j] + l0 * scale[c, 2, j]
        else:
            x0, x1, x2 = w[xi0 + 3 * c], w[xi0 + 3 * c + 1], w[xi0 + 3 * c + 2]
            e0, e1, e2 = w[eta0 + 3 * c], w[eta0 + 3 * c + 1], w[eta0 + 3 * c + 2]
            scratch[a_at], scratch[a_at + 1], scratch[a_at + 2] = e0, e1, e2
            scratch[a_at + 3], scratch[a_at + 4], scratch[a_at + 5] = e1, e0, 0.0
            scratch[a_at + 6], scratch[a_at + 7], scratch[a_at + 8] = e2, 0.0, e0
            scratch[b_at], scratch[b_at + 1], scratch[b_at + 2] = x0, x1, x2
            scratch[b_at + 3], scratch[b_at + 4], scratch[b_at + 5] = x1, x0, 0.0
            scratch[b_at + 6], scratch[b_at + 7], scratch[b_at + 8] = x2, 0.0, x0
        for i in range(3):
            scratch[q_at + 3 * i] = scratch[a_at + 3 * i + 1]
            scratch[q_at + 3 * i + 1] = scratch[a_at + 3 * i + 2]
            scratch[q_at + 3 * i + 2] = scratch[b_at + 3 * i]
            cone_a0[c, i] = scratch[a_at + 3 * i]
            cone_bt[c, i, 0] = scratch[b_at + 3 * i + 1]
            cone_bt[c, i, 1] = scratch[b_at + 3 * i + 2]
        if not _invert3(scratch, q_at, scratch, qi_at):
            return False
        for i in range(3):
            for j in range(3):
                q_inverse[c, i, j] = scratch[qi_at + 3 * i + j]
        mr = mu[c] * ratio[c]
        for i in range(3):
            for k in range(6):
                scratch[c_at + 6 * i + k] = (cone_a0[c, i] * mr * jn[c, k]
                                             - cone_bt[c, i, 0] * jt[c, 0, k] - cone_bt[c, i, 1] * jt[c, 1, k])
        for i in range(3):
            for k in range(6):
                q_inv_c[c, i, k] = (q_inverse[c, i, 0] * scratch[c_at + k] + q_inverse[c, i, 1] * scratch[c_at + 6 + k]
                                    + q_inverse[c, i, 2] * scratch[c_at + 12 + k])
        for j in range(6):
            rj = ratio[c] * jn[c, j]
            for k in range(6):
                scratch[h_at + 6 * j + k] += (rj * jn[c, k] - jt[c, 0, j] * q_inv_c[c, 0, k]
                                              - jt[c, 1, j] * q_inv_c[c, 1, k])
    if not _invert6(scratch, h_at, scratch, hi_at):
        return False
    for j in range(6):
        for k in range(6):
            h_inverse[j, k] = scratch[hi_at + 6 * j + k]
    return True


@njit(cache=True)
def solve(w: np.ndarray, n: int, r: np.ndarray, jn: np.ndarray, jt: np.ndarray, mu: np.ndarray,
          ratio: np.ndarray, cone_a0: np.ndarray, cone_bt: np.ndarray, q_inverse: np.ndarray,
          q_inv_c: np.ndarray, h_inverse: np.ndarray, out: np.ndarray, scratch: np.ndarray, compliance: float,
          pusher: int, velocity_only: bool = False) -> None:
    """Newton directions ``Δ`` (6 + 8n, k) with ``R Δ = -r`` for residual columns ``r`` (6 + 8n, k).

    ``velocity_only``: fill only the ``Δa`` rows (0-5) of ``out`` (all the implicit gradients
    need). ``compliance``: ε of the pusher contact (index ``pusher``; -1: none). ``scratch``: at least 4n + 18 numbers.
    """
    xi0 = 6 + 2 * n
    eta0 = 6 + 5 * n
    c_normal = 6 + 4 * n
    c_cone = 6 + 5 * n
    # Work space in ``scratch``, indexed rather than viewed (a view costs a reference count per call): Δγ's
    # part g (n) at 0, z0 (n, 3) at n, c0 (3), the reduced right-hand side (6), Δa (6) and z (3) after them.
    z0_at, c0_at, rhs_at, da_at, z_at = n, 4 * n, 4 * n + 3, 4 * n + 9, 4 * n + 15
    for col in range(r.shape[1]):
        for k in range(6):
            scratch[rhs_at + k] = -r[k, col]
        for c in range(n):
            gamma, s = w[6 + c], w[6 + n + c]
            # Δs = Jn Δa + ε Δγ - r_s (ε: compliance of the pusher contact), so the γ row gives
            # Δγ = g - γ/(s + εγ) Jn Δa.
            eps = compliance if c == pusher else 0.0
            g = (-r[c_normal + c, col] + gamma * r[6 + c, col]) / (s + eps * gamma)
            scratch[c] = g
            base = mu[c] * g - r[6 + n + c, col]
            rs1, rs2 = r[6 + 2 * n + 2 * c, col], r[6 + 2 * n + 2 * c + 1, col]
            for i in range(3):
                scratch[c0_at + i] = (-r[c_cone + 3 * c + i, col] - cone_a0[c, i] * base
                                      + cone_bt[c, i, 0] * rs1 + cone_bt[c, i, 1] * rs2)
            c00, c01, c02 = scratch[c0_at], scratch[c0_at + 1], scratch[c0_at + 2]
            for i in range(3):
                scratch[z0_at + 3 * c + i] = (q_inverse[c, i, 0] * c00 + q_inverse[c, i, 1] * c01
                                              + q_inverse[c, i, 2] * c02)
            z00, z01 = scratch[z0_at + 3 * c], scratch[z0_at + 3 * c + 1]
            for k in range(6):
                scratch[rhs_at + k] += jn[c, k] * g + jt[c, 0, k] * z00 + jt[c, 1, k] * z01
        for j in range(6):
            acc = 0.0
            for k in range(6):
                acc += h_inverse[j, k] * scratch[rhs_at + k]
            scratch[da_at + j] = acc
            out[j, col] = acc
        if velocity_only:
            continue
        for c in range(n):
            jn_da = 0.0
            t1 = 0.0
            t2 = 0.0
            for k in range(6):
                da_k = scratch[da_at + k]
                jn_da += jn[c, k] * da_k
                t1 += jt[c, 0, k] * da_k
                t2 += jt[c, 1, k] * da_k
            dgamma = scratch[c] - ratio[c] * jn_da
            out[6 + c, col] = dgamma
            out[6 + n + c, col] = jn_da - r[6 + c, col] + (compliance * dgamma if c == pusher else 0.0)
            for i in range(3):
                acc = scratch[z0_at + 3 * c + i]
                for k in range(6):
                    acc += q_inv_c[c, i, k] * scratch[da_at + k]
                scratch[z_at + i] = acc
            out[xi0 + 3 * c, col] = mu[c] * dgamma - r[6 + n + c, col]
            out[xi0 + 3 * c + 1, col] = scratch[z_at]
            out[xi0 + 3 * c + 2, col] = scratch[z_at + 1]
            out[eta0 + 3 * c, col] = scratch[z_at + 2]
            out[eta0 + 3 * c + 1, col] = t1 - r[6 + 2 * n + 2 * c, col]
            out[eta0 + 3 * c + 2, col] = t2 - r[6 + 2 * n + 2 * c + 1, col]


@njit(cache=True, error_model="numpy")  # no zero-division check (none can occur): its arrays keep no refcounts
def cone_search(w: np.ndarray, d: np.ndarray, n: int, tau_orthant: float, tau_soc: float) -> float:
    """Analytic line search over the orthant pairs and the second-order cones (Dojo Alg. 1) along the direction
    ``d[:, 0]`` (``d`` of shape (6 + 8n, 1), as :func:`solve` writes it; read in place, not through a view)."""
    ratio = np.inf
    for i in range(6, 6 + 2 * n):
        if d[i, 0] < 0.0:
            ratio = min(ratio, -w[i] / d[i, 0])
    alpha = 1.0 if ratio == np.inf else min(1.0, tau_orthant * ratio)
    worst = 0.0
    for c in range(2 * n):
        base = 6 + 2 * n + 3 * c
        y0, y1, y2 = w[base], w[base + 1], w[base + 2]
        d0, d1, d2 = d[base, 0], d[base + 1, 0], d[base + 2, 0]
        nu = max(y0 * y0 - y1 * y1 - y2 * y2, 1e-300)
        sqrt_nu = np.sqrt(nu)
        zeta = y0 * d0 - y1 * d1 - y2 * d2
        factor = (zeta / sqrt_nu + d0) / (y0 * sqrt_nu + nu)
        rho1 = d1 / sqrt_nu - factor * y1
        rho2 = d2 / sqrt_nu - factor * y2
        gap = np.sqrt(rho1 * rho1 + rho2 * rho2) - zeta / nu
        if gap > worst:
            worst = gap
    if worst > 0.0:
        alpha = min(alpha, min(1.0, tau_soc / worst))
    return alpha

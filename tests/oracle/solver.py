"""Primal-dual interior-point solver for the contact NCP of one step (Dojo §IV-B).

Unknowns ``w = (a, γ, s, ξ, η)`` for ``n`` contacts:

* ``a`` (6): next velocities (v_com m/s world, ω rad/s body);
* ``γ, s`` (n each): normal impulse (N s) and normal slack (m/s), positive-orthant pair;
* ``ξ, η`` (n × 3): friction cone pair in second-order cones; ``ξ = (μγ, friction impulse (2))``,
  ``η = (dual, tangential slip velocity (2))`` — the exact isotropic Coulomb cone.

Residual (rows): dynamics, ``s - (Jn a + bn + ε γ)`` (``ε``: compliance, non-zero only at the
pusher, see ``dynamics.PUSHER_CONTACT_FREQUENCY``), ``ξ₁ - μγ``, ``η_t - (Jt a + bt)``, ``γ s - κ``,
``ξ ∘ η - κ e``. Impulses are measured in units of ``m g dt`` and velocities in ``g dt`` so that κ
and all tolerances are dimensionless.

The Newton system is never formed: per-contact blocks are eliminated analytically (a scalar
and a 3 × 3 block per contact) leaving a 6 × 6 system in ``Δa``; the resulting
:class:`Factorization` is reused for the predictor, the corrector and, via the implicit function
theorem, for any number of sensitivity right-hand sides.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oracle.dynamics import ProblemData
from sim2real.physics.settings import SolverSettings


@dataclass
class Iterate:
    """Solver variables (see module docstring); arrays are owned by the iterate."""

    a: np.ndarray
    gamma: np.ndarray
    s: np.ndarray
    xi: np.ndarray
    eta: np.ndarray

    def copy(self) -> Iterate:
        return Iterate(self.a.copy(), self.gamma.copy(), self.s.copy(), self.xi.copy(), self.eta.copy())

    def stepped(self, d: Iterate, alpha: float) -> Iterate:
        return Iterate(self.a + alpha * d.a, self.gamma + alpha * d.gamma, self.s + alpha * d.s,
                       self.xi + alpha * d.xi, self.eta + alpha * d.eta)


@dataclass(frozen=True)
class Residual:
    """Residual rows (trailing column axis ``k`` optional, e.g. for sensitivity right-hand sides).

    dynamics (6, ...), normal (n, ...), cone_head (n, ...), slip (n, 2, ...), comp_normal (n, ...),
    comp_cone (n, 3, ...).
    """

    dynamics: np.ndarray
    normal: np.ndarray
    cone_head: np.ndarray
    slip: np.ndarray
    comp_normal: np.ndarray
    comp_cone: np.ndarray


class SolverFailureError(Exception):
    """The interior-point iteration did not converge; carries the final violations."""

    def __init__(self, message: str, residual_violation: float, kappa_violation: float, iterations: int):
        super().__init__(message)
        self.residual_violation = residual_violation
        self.kappa_violation = kappa_violation
        self.iterations = iterations


def _gyroscopic(inertia: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """``ω × (I ω)`` for principal moments ``I`` (..., 3) and one ``ω`` (3,)."""
    i_omega = inertia * omega
    return np.stack((omega[1] * i_omega[..., 2] - omega[2] * i_omega[..., 1],
                     omega[2] * i_omega[..., 0] - omega[0] * i_omega[..., 2],
                     omega[0] * i_omega[..., 1] - omega[1] * i_omega[..., 0]), axis=-1)


def cone_product(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Second-order-cone Jordan product ``x ∘ y = (xᵀy, x₁ y_t + y₁ x_t)``; (..., 3) -> (..., 3)."""
    head = np.sum(x * y, axis=-1, keepdims=True)
    return np.concatenate((head, x[..., :1] * y[..., 1:] + y[..., :1] * x[..., 1:]), axis=-1)


def equality_residual(w: Iterate, data: ProblemData, dt: float) -> tuple[np.ndarray, ...]:
    """Dynamics, normal-slack, cone-head and slip rows at ``w``; data may carry batch dimensions.

    Returns
    -------
    tuple of ndarray
        dynamics (..., 6), normal (..., n), cone_head (..., n), slip (..., n, 2).
    """
    a = w.a
    mass_diag = np.concatenate((np.repeat(data.mass[..., None], 3, axis=-1), data.inertia), axis=-1)
    contact = (np.einsum("...ck,...c->...k", data.normal_jacobian, w.gamma)
               + np.einsum("...ctk,...ct->...k", data.tangent_jacobian, w.xi[:, 1:]))
    gyro = np.concatenate((np.zeros(data.inertia.shape), dt * _gyroscopic(data.inertia, a[3:])), axis=-1)
    dynamics = mass_diag * (a - data.velocity_start) + gyro - data.gravity_impulse - contact
    normal = w.s - (data.normal_jacobian @ a + data.normal_offset + data.compliance * w.gamma)
    cone_head = w.xi[:, 0] - data.friction * w.gamma
    slip = w.eta[:, 1:] - (data.tangent_jacobian @ a + data.tangent_offset)
    return dynamics, normal, cone_head, slip


def residual(w: Iterate, data: ProblemData, dt: float, kappa: float) -> Residual:
    """Full residual at central-path value ``kappa`` (dimensionless)."""
    dynamics, normal, cone_head, slip = equality_residual(w, data, dt)
    unit = float(data.impulse_scale) * data.velocity_scale
    comp_cone = cone_product(w.xi, w.eta)
    comp_cone[:, 0] -= kappa * unit
    return Residual(dynamics, normal, cone_head, slip, w.gamma * w.s - kappa * unit, comp_cone)


def violations(res: Residual, data: ProblemData, kappa: float, gamma: np.ndarray) -> tuple[float, float, float]:
    """Scaled violation metrics (Dojo eqs. 49-50) of the residual at an iterate with normal impulses ``gamma``.

    The impulse rows (dynamics, cone head) are measured in ``max(m g dt, max γ)``: at an impact or
    a pusher pressing hard, impulses reach thousands of ``m g dt`` and an absolute tolerance in that
    unit would ask for more digits than the Newton system has (relative accuracy stays 1e-9).

    Returns
    -------
    residual_violation : float
        Max-norm of the scaled equality rows.
    complementarity : float
        Max scaled complementarity product (Dojo's κ_vio).
    central_path_error : float
        Max deviation of the scaled products from their target ``kappa``, relative to ``kappa``.
    """
    p = float(data.impulse_scale)
    p_rows = max(p, float(np.max(gamma))) if gamma.size else p
    v = data.velocity_scale
    length = float(data.length_scale)
    eq = max(
        np.max(np.abs(res.dynamics[:3])) / p_rows,
        np.max(np.abs(res.dynamics[3:])) / (p_rows * length),
        np.max(np.abs(res.normal)) / v if res.normal.size else 0.0,
        np.max(np.abs(res.cone_head)) / p_rows if res.cone_head.size else 0.0,
        np.max(np.abs(res.slip)) / v if res.slip.size else 0.0,
    )
    unit = p * v
    if res.comp_normal.size == 0:
        return float(eq), 0.0, 0.0
    deviation = max(np.max(np.abs(res.comp_normal)), np.max(np.abs(res.comp_cone))) / unit
    products = max(np.max(res.comp_normal), np.max(np.abs(res.comp_cone[:, 1:])),
                   np.max(res.comp_cone[:, 0])) / unit + kappa
    return float(eq), float(products), float(deviation / kappa)


@dataclass(frozen=True)
class Factorization:
    """The Newton matrix at one iterate, block-eliminated down to 6 × 6 (see module docstring).

    The cone rows of the linear system are ``A Δξ + B Δη = -r_cone`` per contact; only the
    columns of ``A`` and ``B`` that multiply known quantities are kept (``cone_a0``, ``cone_bt``).
    """

    w: Iterate
    data: ProblemData
    ratio: np.ndarray          # γ/(s + εγ), (n,)
    cone_a0: np.ndarray        # (n, 3): A[:, :, 0], multiplies Δξ₁ = μΔγ - r_head
    cone_bt: np.ndarray        # (n, 3, 2): B[:, :, 1:], multiplies Δη_t = Jt Δa - r_slip
    q_inverse: np.ndarray      # (n, 3, 3): inverse of the cone block in (Δξ_t, Δη₁)
    q_inv_c: np.ndarray        # (n, 3, 6): its product with the Δa coupling
    h_inverse: np.ndarray      # (6, 6): inverse of the condensed matrix


@dataclass(frozen=True)
class ConeScaling:
    """Nesterov-Todd scaling of the friction-cone pairs: ``W² η = ξ``, ``λ = W η = W⁻¹ ξ``.

    Attributes
    ----------
    w : ndarray (n, 3, 3)
        Symmetric positive-definite scaling matrices ``W``.
    w_inverse : ndarray (n, 3, 3)
        ``W⁻¹``.
    lam : ndarray (n, 3)
        Scaled point ``λ`` (units of sqrt(impulse · velocity)).
    """

    w: np.ndarray
    w_inverse: np.ndarray
    lam: np.ndarray


def arrow(x: np.ndarray) -> np.ndarray:
    """Arrow matrices ``Arw(x)`` with ``Arw(x) y = x ∘ y``; (n, 3) -> (n, 3, 3)."""
    m = np.zeros((x.shape[0], 3, 3))
    m[:, 0, :] = x
    m[:, 1:, 0] = x[:, 1:]
    m[:, 1, 1] = x[:, 0]
    m[:, 2, 2] = x[:, 0]
    return m


def nt_scaling(xi: np.ndarray, eta: np.ndarray) -> ConeScaling:
    """Nesterov-Todd scaling point of cone pairs strictly inside their cones; (n, 3) each.

    With ``det x = x₁² - |x_t|²``: normalise ``ξ̄ = ξ/√det ξ``, ``η̄ = η/√det η``, take
    ``w̄ = (ξ̄ + J η̄) / √(2 (1 + ξ̄ᵀη̄))`` (``J = diag(1, -1, -1)``, ``det w̄ = 1``), its Jordan square
    root ``v = (w̄ + e) / √(2 (w̄₁ + 1))`` and ``β = (det ξ / det η)^¼``; then
    ``W = β (2 v vᵀ - J)`` and ``W⁻¹ = β⁻¹ (2 (J v)(J v)ᵀ - J)``.
    """
    det_xi = np.maximum(xi[:, 0] ** 2 - np.sum(xi[:, 1:] ** 2, axis=1), 1e-300)
    det_eta = np.maximum(eta[:, 0] ** 2 - np.sum(eta[:, 1:] ** 2, axis=1), 1e-300)
    xi_bar = xi / np.sqrt(det_xi)[:, None]
    eta_bar = eta / np.sqrt(det_eta)[:, None]
    flip = np.array([1.0, -1.0, -1.0])
    w_bar = (xi_bar + flip * eta_bar) / np.sqrt(2.0 * (1.0 + np.sum(xi_bar * eta_bar, axis=1)))[:, None]
    v = w_bar / np.sqrt(2.0 * (w_bar[:, 0] + 1.0))[:, None]
    v[:, 0] += 1.0 / np.sqrt(2.0 * (w_bar[:, 0] + 1.0))
    beta = (det_xi / det_eta) ** 0.25
    j = np.diag(flip)
    scale = beta[:, None, None] * (2.0 * v[:, :, None] * v[:, None, :] - j)
    jv = flip * v
    scale_inverse = (2.0 * jv[:, :, None] * jv[:, None, :] - j) / beta[:, None, None]
    lam = np.einsum("cij,cj->ci", scale, eta)
    return ConeScaling(scale, scale_inverse, lam)


def factorize(w: Iterate, data: ProblemData, dt: float, scaling: ConeScaling | None = None) -> Factorization:
    """Factorise the Newton matrix at ``w``.

    Parameters
    ----------
    w : Iterate
    data : ProblemData
    dt : float
        Step, s.
    scaling : ConeScaling, optional
        None: the exact Jacobian of :func:`residual` (cone rows ``Arw(η) Δξ + Arw(ξ) Δη``), as the
        implicit function theorem needs. Given: the Nesterov-Todd linearisation
        ``Arw(λ) (W⁻¹ Δξ + W Δη)`` of ``(W⁻¹ξ) ∘ (Wη)``, which the iterations use (it stays
        well-conditioned when ξ and η approach their cone boundaries without sharing a Jordan frame).
    """
    a = w.a
    inertia = data.inertia
    omega = a[3:]
    jn, jt, mu = data.normal_jacobian, data.tangent_jacobian, data.friction
    ratio = w.gamma / (w.s + data.compliance * w.gamma)
    if scaling is None:
        cone_a, cone_b = arrow(w.eta), arrow(w.xi)
    else:
        arw_lam = arrow(scaling.lam)
        cone_a, cone_b = arw_lam @ scaling.w_inverse, arw_lam @ scaling.w
    n = ratio.shape[0]
    q = np.empty((n, 3, 3))
    q[:, :, 0:2] = cone_a[:, :, 1:]
    q[:, :, 2] = cone_b[:, :, 0]
    q_inverse = np.linalg.inv(q)
    a0 = cone_a[:, :, 0]
    bt = cone_b[:, :, 1:]
    # Coupling of the cone rows to Δa (see solve()).
    mu_ratio_jn = (mu * ratio)[:, None] * jn
    c = a0[:, :, None] * mu_ratio_jn[:, None, :] - bt @ jt
    q_inv_c = q_inverse @ c
    h = np.diag(np.concatenate((np.repeat(data.mass, 3), inertia)))
    h[3:, 3:] += dt * (skew_matrix(omega) * inertia[None, :] - skew_matrix(inertia * omega))
    h += (jn.T * ratio) @ jn
    h -= np.einsum("ctj,ctk->jk", jt, q_inv_c[:, :2])
    # 6 × 6: an explicit inverse is as accurate as LU here and makes every later solve one matmul.
    return Factorization(w, data, ratio, a0, bt, q_inverse, q_inv_c, np.linalg.inv(h))


def skew_matrix(v: np.ndarray) -> np.ndarray:
    """``[v]×`` of one vector (3,) -> (3, 3)."""
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def solve(f: Factorization, r: Residual) -> Iterate:
    """Newton direction ``Δ`` with ``R Δ = -r``; ``r`` rows may carry a trailing column axis ``k``.

    Returns
    -------
    Iterate
        Directions; each field gets the trailing axis ``k`` if ``r`` had it.
    """
    w, data = f.w, f.data
    jn, jt, mu = data.normal_jacobian, data.tangent_jacobian, data.friction
    cols = r.dynamics.ndim == 2
    ex = (lambda x: x[..., None]) if cols else (lambda x: x)
    gamma, s, ratio, mu_e = ex(w.gamma), ex(w.s), ex(f.ratio), ex(mu)
    eps = ex(data.compliance)
    # Δs = Jn Δa + ε Δγ - r_s;  Δξ₁ = μ Δγ - r_ξ;  Δη_t = Jt Δa - r_η
    # γ-row:  s Δγ + γ Δs = -r_c1  ->  Δγ = g_γ - (γ/(s + εγ)) Jn Δa
    g_gamma = (-r.comp_normal + gamma * r.normal) / (s + eps * gamma)
    # cone rows A Δξ + B Δη = -r_cone, known part c0 (the Δa-coupling was folded into the factorization)
    base = mu_e * g_gamma - r.cone_head
    c0 = -r.comp_cone - ex(f.cone_a0) * base[:, None] + np.einsum("cij,cj...->ci...", f.cone_bt, r.slip)
    z0 = np.einsum("cij,cj...->ci...", f.q_inverse, c0)
    rhs = -r.dynamics + np.einsum("ck,c...->k...", jn, g_gamma) + np.einsum("ctk,ct...->k...", jt, z0[:, :2])
    da = f.h_inverse @ rhs
    dgamma = g_gamma - ratio * np.einsum("ck,k...->c...", jn, da)
    z = z0 + np.einsum("cik,k...->ci...", f.q_inv_c, da)
    ds = np.einsum("ck,k...->c...", jn, da) + eps * dgamma - r.normal
    dxi = np.concatenate(((mu_e * dgamma - r.cone_head)[:, None], z[:, :2]), axis=1)
    deta = np.concatenate((z[:, 2:3], np.einsum("ctk,k...->ct...", jt, da) - r.slip), axis=1)
    return Iterate(da, dgamma, ds, dxi, deta)


def _orthant_step(y: np.ndarray, dy: np.ndarray, tau: float) -> float:
    """Largest step (fraction ``tau`` of the way to the boundary, at most 1) keeping ``y + α dy > 0``."""
    neg = dy < 0.0
    if not neg.any():
        return 1.0
    return min(1.0, tau * float((-y[neg] / dy[neg]).min()))


def _cone_step(y: np.ndarray, dy: np.ndarray, tau: float) -> float:
    """Largest step (fraction ``tau`` of the way to the boundary) keeping each row of (n, 3) in the cone."""
    y0, y1, y2 = y[:, 0], y[:, 1], y[:, 2]
    d0, d1, d2 = dy[:, 0], dy[:, 1], dy[:, 2]
    nu = np.maximum(y0 * y0 - y1 * y1 - y2 * y2, 1e-300)
    sqrt_nu = np.sqrt(nu)
    zeta = y0 * d0 - y1 * d1 - y2 * d2
    factor = (zeta / sqrt_nu + d0) / (y0 * sqrt_nu + nu)
    rho1 = d1 / sqrt_nu - factor * y1
    rho2 = d2 / sqrt_nu - factor * y2
    gap = np.sqrt(rho1 * rho1 + rho2 * rho2) - zeta / nu
    hit = gap > 0.0
    if not hit.any():
        return 1.0
    return min(1.0, tau / float(gap[hit].max()))


def cone_search(w: Iterate, d: Iterate, tau_orthant: float, tau_soc: float) -> float:
    """Analytic line search over the orthant and the second-order cones (Dojo Alg. 1, eqs. 41-46)."""
    return min(_orthant_step(np.concatenate((w.gamma, w.s)), np.concatenate((d.gamma, d.s)), tau_orthant),
               _cone_step(np.concatenate((w.xi, w.eta)), np.concatenate((d.xi, d.eta)), tau_soc))


def _pair_gap(w: Iterate) -> float:
    """Largest duality gap of one complementarity pair, ``max(γ s, ξᵀη)`` (N s · m/s)."""
    return float(max(np.max(w.gamma * w.s), np.max(np.sum(w.xi * w.eta, axis=1))))


def initial_iterate(data: ProblemData) -> Iterate:
    """Free-flight velocities and unit (scaled) cone variables strictly inside their cones."""
    n = data.contact_count
    mass_diag = np.concatenate((np.repeat(data.mass, 3), data.inertia))
    a = data.velocity_start + data.gravity_impulse / mass_diag
    p, v = float(data.impulse_scale), data.velocity_scale
    unit_cone = np.zeros((n, 3))
    unit_cone[:, 0] = 1.0
    s = np.maximum(data.normal_jacobian @ a + data.normal_offset, v)
    return Iterate(a, np.full(n, p), s, p * unit_cone, v * unit_cone)


def interior_point(
    data: ProblemData, dt: float, kappa: float, settings: SolverSettings, start: Iterate | None = None,
    centred: bool = True,
) -> tuple[Iterate, int, tuple[float, float, float]]:
    """Solve ``r(w; κ) = 0`` with ``(γ, s)`` and ``(ξ, η)`` strictly inside their cones.

    Mehrotra predictor-corrector: an affine (κ = 0) predictor, centring ``σ = (μ_aff/μ)³``,
    a corrector aiming at ``max(σμ, κ_target)`` with the second-order term, the analytic cone
    line search, then backtracking until a violation metric decreases (Dojo Alg. 2). The
    friction-cone rows of the Newton system use Nesterov-Todd scaling (:func:`nt_scaling`);
    ``κ_target`` is first ``settings.continuation_kappa`` (loose tolerances), then ``kappa``.
    Converged when the scaled equality rows are below ``residual_tol`` and every complementarity
    product is within ``kappa_rtol`` of ``kappa`` (the point the implicit gradients belong to).

    Parameters
    ----------
    data : ProblemData
        Unbatched problem data.
    dt : float
        Step, s.
    kappa : float
        Target central-path value (dimensionless).
    settings : SolverSettings
    start : Iterate, optional
        Starting point (e.g. the solution at a larger κ); default :func:`initial_iterate`.
    centred : bool
        True: converge onto the central-path point at κ (the point implicit gradients belong
        to). False (forward solve): also accept the duality-gap criterion of
        :attr:`SolverSettings.gap_factor`.

    Returns
    -------
    w : Iterate
        Solution.
    iterations : int
    violations : (float, float, float)
        Final :func:`violations`.

    Raises
    ------
    SolverFailureError
        If the tolerances are not met within ``settings.max_iterations``, or on a numerical
        breakdown (a non-finite iterate).
    """
    w = initial_iterate(data) if start is None else start.copy()
    unit = float(data.impulse_scale) * data.velocity_scale
    degree = 2 * data.contact_count
    floor = max(kappa, settings.continuation_kappa)  # current central-path target (continuation)
    res = residual(w, data, dt, floor)
    r_vio, k_vio, path = violations(res, data, floor, w.gamma)
    for iteration in range(settings.max_iterations + 1):
        if (floor > kappa and r_vio <= settings.continuation_residual_tol
                and path <= settings.continuation_kappa_rtol):
            floor = kappa
            res = residual(w, data, dt, floor)
            r_vio, k_vio, path = violations(res, data, floor, w.gamma)
        if not (r_vio < np.inf and path < np.inf):  # also catches NaN
            raise SolverFailureError(
                f"interior-point solver broke down after {iteration} iterations (non-finite iterate)",
                r_vio, k_vio, iteration)
        if floor == kappa and r_vio <= settings.residual_tol and (
                path <= settings.kappa_rtol
                or (not centred and iteration >= settings.gap_patience
                    and _pair_gap(w) <= settings.gap_factor * kappa * unit)):
            return w, iteration, (r_vio, k_vio, path)
        if iteration == settings.max_iterations:
            break
        scaling = nt_scaling(w.xi, w.eta)
        f = factorize(w, data, dt, scaling)
        lam_square = cone_product(scaling.lam, scaling.lam)
        gamma_s = w.gamma * w.s
        d_aff = solve(f, Residual(res.dynamics, res.normal, res.cone_head, res.slip, gamma_s, lam_square))
        alpha_aff = cone_search(w, d_aff, 1.0, 1.0)
        mu = (np.sum(gamma_s) + np.sum(w.xi * w.eta)) / (degree * unit)
        mu_aff = (np.dot(w.gamma + alpha_aff * d_aff.gamma, w.s + alpha_aff * d_aff.s)
                  + np.sum((w.xi + alpha_aff * d_aff.xi) * (w.eta + alpha_aff * d_aff.eta))) / (degree * unit)
        sigma = min(1.0, max(0.0, mu_aff / mu)) ** 3
        target = max(sigma * mu, floor) * unit
        comp_normal = gamma_s - target
        comp_cone = lam_square.copy()
        comp_cone[:, 0] -= target
        if sigma * mu > floor:
            # Mehrotra's second-order correction (in the scaled space); dropped once the target is the
            # fixed κ, where plain Newton on r(w; κ) converges quadratically to the central-path point.
            comp_normal = comp_normal + d_aff.gamma * d_aff.s
            comp_cone += cone_product(np.einsum("cij,cj->ci", scaling.w_inverse, d_aff.xi),
                                      np.einsum("cij,cj->ci", scaling.w, d_aff.eta))
        d = solve(f, Residual(res.dynamics, res.normal, res.cone_head, res.slip, comp_normal, comp_cone))
        tau_ort = max(settings.tau_min, 1.0 - max(r_vio, k_vio) ** 2)
        tau_soc = min(settings.tau_soc_max, tau_ort)
        alpha = cone_search(w, d, tau_ort, tau_soc)
        for _ in range(settings.max_backtracks):
            candidate = w.stepped(d, alpha)
            res = residual(candidate, data, dt, floor)
            new = violations(res, data, floor, candidate.gamma)
            if (new[0] <= max(r_vio, settings.residual_tol) or new[1] <= k_vio
                    or new[2] <= path):
                break
            alpha *= settings.backtrack
        w = candidate
        r_vio, k_vio, path = new
    raise SolverFailureError(
        f"interior-point solver did not converge in {settings.max_iterations} iterations "
        f"(residual violation {r_vio:.3g}, complementarity {k_vio:.3g}, central-path error {path:.3g})",
        r_vio, k_vio, settings.max_iterations,
    )

"""The damped Gauss-Newton step of :func:`~sim2real.sysid.optimizer.levenberg_marquardt`.

Which unknowns the data determine at all, the damped solve ``δ = −(H + λ D²)⁻¹ g`` in scaled coordinates
without the undetermined directions, the larger damping that keeps a step within the trust radius, and
whether a step is too small, against the parameters' standard deviations, to change anything a fit can
resolve (the statistical stop, with the per-trial gradients of the cluster-robust standard deviations).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np


def determined_mask(hessian: np.ndarray, typical: np.ndarray, null_tolerance: float) -> np.ndarray:
    """Parameters whose relative influence ``sqrt(H_ii) |typical_i|`` exceeds ``sqrt(null_tolerance)``
    times the largest; the others have (numerically) no effect on the residuals."""
    influence = np.sqrt(np.maximum(np.diag(hessian), 0.0)) * typical
    top = float(np.max(influence, initial=0.0))
    return influence > np.sqrt(null_tolerance) * top if top > 0.0 else np.zeros(len(typical), dtype=bool)


def damped_solver(hessian: np.ndarray, gradient: np.ndarray, diag: np.ndarray,
                  null_tolerance: float) -> Callable[[float], np.ndarray]:
    """``λ -> δ = −(H + λ D²)⁻¹ g`` in scaled coordinates, dropping undetermined (collinear) directions.

    The eigen-decomposition is made once, so trying several ``λ`` (the trust radius) is cheap.
    """
    d = np.sqrt(np.maximum(diag, 1e-300))
    scaled = hessian / np.outer(d, d)
    eigval, eigvec = np.linalg.eigh(scaled)
    top = max(float(eigval[-1]), 1e-300)
    keep = eigval > null_tolerance * top
    projected = eigvec[:, keep].T @ (gradient / d)

    def solve(damping: float) -> np.ndarray:
        return -(eigvec[:, keep] @ (projected / (eigval[keep] + damping))) / d

    return solve


def within_radius(solve: Callable[[float], np.ndarray], damping: float, typical: np.ndarray,
                  radius: float) -> tuple[np.ndarray, float]:
    """The damped step at ``damping`` or, when it moves a parameter by more than ``radius`` typical
    magnitudes, at a larger damping for which it does not; returns ``(δ, damping)``."""
    delta = solve(damping)
    for _ in range(100):
        longest = float(np.max(np.abs(delta) / typical, initial=0.0))
        if not np.isfinite(radius) or longest <= radius:
            break
        damping *= 1.5 * longest / radius  # for large damping the step shrinks like 1/damping
        delta = solve(damping)
    return delta, damping


def standard_deviations(hessian: np.ndarray, free: np.ndarray, cost: float, rows: int,
                        cluster_gradients: np.ndarray | None = None) -> np.ndarray | None:
    """Standard deviations (p_free,) of the ``free`` (p,) parameters at a point, in their units; None when
    there is no free parameter, too few rows, or a variance is not positive and finite.

    They are ``sqrt(σ² diag(H⁻¹))`` with ``σ² = 2 cost / (m − p)`` (independent rows: the narrowest
    estimate), or, with the gradient of each cluster of rows (``cluster_gradients`` (G, p), G ≥ 2: one
    per trial), the wider of those and the cluster-robust sandwich's (CR1), the standard deviations the
    fit reports: rows of one trial are not independent.
    """
    p = int(np.count_nonzero(free))
    if p == 0 or rows <= p:
        return None
    sub = hessian[np.ix_(free, free)]
    try:
        bread = np.linalg.pinv(sub)
    except np.linalg.LinAlgError:
        return None
    variance = np.diag(bread) * (2.0 * cost / (rows - p))
    if cluster_gradients is not None and cluster_gradients.shape[0] >= 2:
        groups = cluster_gradients.shape[0]
        meat = cluster_gradients[:, free].T @ cluster_gradients[:, free] * groups / (groups - 1)
        variance = np.maximum(variance, np.diag(bread @ meat @ bread))
    if not np.all(np.isfinite(variance)) or np.any(variance <= 0.0):
        return None
    return np.sqrt(variance)


def negligible_step(step: np.ndarray, free: np.ndarray, sigma: np.ndarray | None, stat_tol: float) -> bool:
    """Whether ``step`` (p,) moves every ``free`` (p,) parameter by less than ``stat_tol`` of its standard
    deviation ``sigma`` (p_free,) (:func:`standard_deviations`; None: unknown, never negligible).

    Judged on the independent-rows figure alone, a fit of many rows kept crawling along a correlated valley
    by a fraction of a reported standard deviation per iteration.
    """
    if stat_tol <= 0.0 or sigma is None or not np.any(step):
        return False
    return bool(np.all(np.abs(step[free]) < stat_tol * sigma))


def cluster_gradients(jacobian: np.ndarray, weighted_residuals: np.ndarray, sizes: Sequence[int] | None
                      ) -> np.ndarray | None:
    """Per cluster of consecutive rows (``sizes``: rows per cluster, summing to m) the gradient
    ``J_cᵀ (w r)_c`` (G, p); None without clusters or when the sizes do not cover the rows."""
    if sizes is None or len(sizes) < 2 or int(np.sum(sizes)) != jacobian.shape[0]:
        return None
    edges = np.cumsum([0, *sizes])
    return np.array([jacobian[a:b].T @ weighted_residuals[a:b] for a, b in itertools.pairwise(edges)])

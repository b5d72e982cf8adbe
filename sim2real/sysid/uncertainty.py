"""Uncertainty of fitted parameters: covariance from ``JᵀWJ``, intervals, correlations, warnings.

With residual variance ``s² = Σ w r² / (m − p)`` (``w`` the robust-loss row weights), the
covariance is ``s² (JᵀWJ)⁻¹``, formed in scaled coordinates by an eigen-decomposition.
Directions whose scaled curvature is below ``null_tolerance`` times the largest are *not
determined by the data*: their parameters get no standard deviation (``None``) and a
warning naming the direction; the rest use the pseudo-inverse. 95 % intervals are
``value ± 1.96 std`` (normal approximation) clipped to the registry bounds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Two-sided 95 % quantile of the standard normal distribution.
Z95 = 1.959963984540054
#: Relative standard deviation above which a parameter is reported as poorly determined.
POOR_RELATIVE_STD = 0.5


@dataclass(frozen=True)
class Uncertainty:
    """Uncertainty summary of a fit (JSON-ready pieces).

    Attributes
    ----------
    std : dict of str to float or None
        Standard deviation per parameter, in its unit; None if not determined.
    ci95 : dict of str to [float, float] or None
    correlation : dict
        ``{"names": [...], "matrix": [[...]]}``; entries of undetermined parameters are None.
    covariance : ndarray, shape (p, p)
        NaN rows/columns for undetermined parameters.
    undetermined : tuple of str
    warnings : tuple of str
    residual_std : float
        ``s``, in weighted-residual units.
    """

    std: dict[str, float | None]
    ci95: dict[str, list[float] | None]
    correlation: dict[str, object]
    covariance: np.ndarray
    undetermined: tuple[str, ...]
    warnings: tuple[str, ...]
    residual_std: float


def _direction_text(names: tuple[str, ...], vector: np.ndarray) -> str:
    order = np.argsort(-np.abs(vector))
    parts = [f"{vector[i]:+.2f} {names[i]}" for i in order if abs(vector[i]) >= 0.1]
    return ", ".join(parts[:4])


def summarize_uncertainty(names: tuple[str, ...], x: np.ndarray, jacobian: np.ndarray, residuals: np.ndarray,
                          row_weights: np.ndarray, lower: np.ndarray, upper: np.ndarray, scale: np.ndarray,
                          null_tolerance: float = 1e-10) -> Uncertainty:
    """Covariance, standard deviations, intervals, correlations and identifiability warnings.

    Parameters
    ----------
    names : tuple of str
        Labels of the ``p`` parameters (tied groups as ``a=b``).
    x : ndarray, shape (p,)
        Fitted values.
    jacobian : ndarray, shape (m, p)
    residuals : ndarray, shape (m,)
    row_weights : ndarray, shape (m,)
        Robust-loss weights (ones for least squares).
    lower, upper : ndarray, shape (p,)
        Bounds.
    scale : ndarray, shape (p,)
        Typical magnitude of each parameter (for relative statements), > 0.
    null_tolerance : float
        Relative eigenvalue below which a direction counts as undetermined.
    """
    m, p = jacobian.shape
    H = jacobian.T @ (row_weights[:, None] * jacobian)
    dof = max(m - p, 1)
    s2 = float(np.sum(row_weights * residuals**2)) / dof
    # Scale columns by parameter magnitude so eigenvalues compare relative changes.
    Hs = H * np.outer(scale, scale)
    eigval, eigvec = np.linalg.eigh(Hs)
    top = max(float(eigval[-1]), 0.0)
    null = eigval <= null_tolerance * top if top > 0.0 else np.ones(p, dtype=bool)
    warnings: list[str] = []
    undetermined_mask = np.zeros(p, dtype=bool)
    for k in np.flatnonzero(null):
        vector = eigvec[:, k]
        involved = np.abs(vector) >= 0.1
        undetermined_mask |= involved
        warnings.append(f"not determined by the data: direction {_direction_text(names, vector)} "
                        f"(relative curvature {max(eigval[k], 0.0) / top if top else 0.0:.1e})")
    keep = ~null
    inv_scaled = (eigvec[:, keep] / eigval[keep]) @ eigvec[:, keep].T if np.any(keep) else np.zeros((p, p))
    cov = s2 * inv_scaled * np.outer(scale, scale)
    cov[undetermined_mask, :] = np.nan
    cov[:, undetermined_mask] = np.nan
    std: dict[str, float | None] = {}
    ci95: dict[str, list[float] | None] = {}
    for i, name in enumerate(names):
        if undetermined_mask[i]:
            std[name], ci95[name] = None, None
            continue
        sd = float(np.sqrt(max(cov[i, i], 0.0)))
        std[name] = sd
        ci95[name] = [float(max(x[i] - Z95 * sd, lower[i])), float(min(x[i] + Z95 * sd, upper[i]))]
        if sd > POOR_RELATIVE_STD * scale[i]:
            warnings.append(f"{name} is poorly determined: std {sd:.3g} is more than "
                            f"{POOR_RELATIVE_STD:.0%} of its scale {scale[i]:.3g}")
    matrix: list[list[float | None]] = []
    for i in range(p):
        row: list[float | None] = []
        for j in range(p):
            if undetermined_mask[i] or undetermined_mask[j]:
                row.append(None)
            else:
                denom = np.sqrt(cov[i, i] * cov[j, j])
                row.append(float(np.clip(cov[i, j] / denom, -1.0, 1.0)) if denom > 0 else (1.0 if i == j else 0.0))
        matrix.append(row)
    for i, name in enumerate(names):
        span = upper[i] - lower[i]
        if x[i] <= lower[i] + 1e-9 * span:
            warnings.append(f"{name} = {x[i]:.6g} is pinned at its lower bound {lower[i]:.6g}")
        elif x[i] >= upper[i] - 1e-9 * span:
            warnings.append(f"{name} = {x[i]:.6g} is pinned at its upper bound {upper[i]:.6g}")
    return Uncertainty(std=std, ci95=ci95, correlation={"names": list(names), "matrix": matrix}, covariance=cov,
                       undetermined=tuple(n for i, n in enumerate(names) if undetermined_mask[i]),
                       warnings=tuple(warnings), residual_std=float(np.sqrt(s2)))

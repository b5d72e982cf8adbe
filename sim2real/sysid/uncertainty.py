"""Uncertainty of fitted parameters: covariance, intervals, correlations, warnings.

The residuals of one trial are one rollout: a model error or a noisy start pose shifts all of
them together, so the textbook covariance ``s² (JᵀWJ)⁻¹`` (``s² = Σ w r² / (m − p)``, ``w`` the
robust-loss row weights), which treats every row as independent, is far too confident (the
demo's box height: ±0.2 mm from it against ±8 mm of spread between runs). When the rows come
from two or more trials, the covariance is the **cluster-robust sandwich** with the trials as
clusters (Liang-Zeger; CR1 small-sample factor ``G / (G − 1)``)::

    C = H⁺ (G/(G−1) Σ_g s_g s_gᵀ) H⁺,   H = JᵀWJ,   s_g = J_gᵀ W_g r_g

and the 95 % intervals use Student's t with ``G − 1`` degrees of freedom. A parameter's standard
deviation is never reported below the independent-rows one (few clusters can make the
sandwich small by chance). With a single trial only the independent-rows estimate exists and a
warning says the intervals are likely too narrow.

Both are formed in scaled coordinates by an eigen-decomposition of ``H``. Directions whose
scaled curvature is below ``null_tolerance`` times the largest are *not determined by the
data*: their parameters get no standard deviation (``None``) and a warning naming the
direction; the rest use the pseudo-inverse. Intervals are clipped to the registry bounds.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

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
    method : str
        How ``std`` and ``ci95`` were formed (one line, for fit.json and the report).
    clusters : int
        Trials the rows came from (1: the independent-rows estimate only).
    quantile : float
        Multiplier of ``std`` in ``ci95`` (Student's t with ``clusters − 1`` dof, or the normal's).
    std_independent : dict of str to float or None
        The independent-rows standard deviation, for comparison.
    """

    std: dict[str, float | None]
    ci95: dict[str, list[float] | None]
    correlation: dict[str, object]
    covariance: np.ndarray
    undetermined: tuple[str, ...]
    warnings: tuple[str, ...]
    residual_std: float
    method: str = "independent rows"
    clusters: int = 1
    quantile: float = Z95
    std_independent: dict[str, float | None] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """The JSON-ready ``uncertainty`` entry of fit.json."""
        return {"method": self.method, "clusters": self.clusters, "quantile": self.quantile,
                "std_independent": self.std_independent}


def _direction_text(names: tuple[str, ...], vector: np.ndarray) -> str:
    order = np.argsort(-np.abs(vector))
    parts = [f"{vector[i]:+.2f} {names[i]}" for i in order if abs(vector[i]) >= 0.1]
    return ", ".join(parts[:4])


def _cluster_scores(jacobian: np.ndarray, weighted: np.ndarray, clusters: Sequence[int]) -> np.ndarray:
    """Score ``J_gᵀ W_g r_g`` of each cluster, shape (G, p); ``clusters`` are consecutive row counts."""
    edges = np.concatenate([[0], np.cumsum(clusters)]).astype(int)
    return np.array([jacobian[a:b].T @ weighted[a:b] for a, b in itertools.pairwise(edges)])


def summarize_uncertainty(names: tuple[str, ...], x: np.ndarray, jacobian: np.ndarray, residuals: np.ndarray,
                          row_weights: np.ndarray, lower: np.ndarray, upper: np.ndarray, scale: np.ndarray,
                          null_tolerance: float = 1e-10, clusters: Sequence[int] | None = None) -> Uncertainty:
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
    clusters : sequence of int, optional
        Rows per trial, in row order (summing to ``m``); two or more select the cluster-robust
        sandwich. None or one trial: independent rows.
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
    h_pinv = inv_scaled * np.outer(scale, scale)
    cov_independent = s2 * h_pinv
    counts = [int(c) for c in clusters] if clusters is not None else [m]
    if sum(counts) != m:
        raise ValueError(f"clusters hold {sum(counts)} rows, the Jacobian {m}")
    groups = len([c for c in counts if c > 0])
    if groups >= 2:
        scores = _cluster_scores(jacobian, row_weights * residuals, counts)
        meat = groups / (groups - 1) * (scores.T @ scores)
        cov_cluster = h_pinv @ meat @ h_pinv
        sd_cluster = np.sqrt(np.maximum(np.diag(cov_cluster), 0.0))
        sd = np.maximum(sd_cluster, np.sqrt(np.maximum(np.diag(cov_independent), 0.0)))
        with np.errstate(invalid="ignore", divide="ignore"):
            corr = cov_cluster / np.outer(sd_cluster, sd_cluster)
        corr = np.where(np.outer(sd_cluster, sd_cluster) > 0, corr, np.eye(p))
        cov = np.clip(corr, -1.0, 1.0) * np.outer(sd, sd)
        quantile = float(stats.t.ppf(0.975, groups - 1))
        method = (f"cluster-robust sandwich over {groups} trials (CR1), Student's t with {groups - 1} dof; "
                  "never below the independent-rows estimate")
    else:
        cov = cov_independent
        quantile = Z95
        method = "independent rows (one trial)"
        if m > p:
            warnings.append("intervals from one trial assume independent residual rows and are likely too narrow: "
                            "fit several trials for intervals that hold")
    cov[undetermined_mask, :] = np.nan
    cov[:, undetermined_mask] = np.nan
    std: dict[str, float | None] = {}
    std_independent: dict[str, float | None] = {}
    ci95: dict[str, list[float] | None] = {}
    for i, name in enumerate(names):
        if undetermined_mask[i]:
            std[name], ci95[name], std_independent[name] = None, None, None
            continue
        sd_i = float(np.sqrt(max(cov[i, i], 0.0)))
        std[name] = sd_i
        std_independent[name] = float(np.sqrt(max(cov_independent[i, i], 0.0)))
        ci95[name] = [float(max(x[i] - quantile * sd_i, lower[i])), float(min(x[i] + quantile * sd_i, upper[i]))]
        if sd_i > POOR_RELATIVE_STD * scale[i]:
            warnings.append(f"{name} is poorly determined: std {sd_i:.3g} is more than "
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
                       warnings=tuple(warnings), residual_std=float(np.sqrt(s2)), method=method,
                       clusters=max(groups, 1), quantile=quantile, std_independent=std_independent)

"""Uncertainty of fitted parameters: covariance, intervals, correlations, warnings.

The residuals of one trial are one rollout: a model error or a noisy start pose shifts all of
them together, so the textbook covariance ``s² (JᵀWJ)⁻¹`` (``s² = Σ w r² / (m − p)``, ``w`` the
robust-loss row weights), which treats every row as independent, is far too confident (the
demo's box height: ±0.2 mm from it against ±8 mm of spread between runs). When the rows come
from two or more trials, the covariance is the **cluster-robust sandwich** with the trials as
clusters (Liang-Zeger; CR1 small-sample factor ``G / (G − 1)``)::

    C = H⁺ (G/(G−1) Σ_g s_g s_gᵀ) H⁺,   H = JᵀWJ,   s_g = J_gᵀ W_g r_g

and the 95 % intervals use Student's t with ``G − 1`` degrees of freedom. With few trials, and a
parameter that some trials determine far more than others (a box's centre-of-mass height by the
pushes that tilt it), that sandwich is still too confident; so each trial is also left out by one
Gauss-Newton step from the fit (the linearized trial jackknife, CR3, MacKinnon and Webb)::

    Δ_g = (H − H_g)⁺ s_g,   C₃ = (G−1)/G Σ_g (Δ_g − Δ̄)(Δ_g − Δ̄)ᵀ

and a parameter's standard deviation is the largest of the two and the independent-rows one
(few clusters can make any of them small by chance). A parameter that one trial alone determines
(``H − H_g`` loses it) has no leave-one-out step; it keeps the others.

The degrees of freedom of a parameter's Student's t follow how many trials actually inform it
(Satterthwaite-style, as Bell and McCaffrey's and Imbens and Kolesár's small-sample corrections
do): with ``a_g = (H⁺ H_g H⁺)_jj`` trial ``g``'s share of the parameter's independent-rows variance,
the effective number of trials is ``G_j = (Σ a_g)² / Σ a_g²`` and the parameter's interval uses
``ν_j = max(1, min(G, G_j) − 1)`` degrees of freedom: two tipping pushes among six trials that
determine a centre-of-mass height give it the quantile of two trials, not of six.

With a single trial only the independent-rows estimate exists and a warning says the intervals
are likely too narrow.

Both are formed in scaled coordinates by an eigen-decomposition of ``H``. Directions whose
scaled curvature is below ``null_tolerance`` times the largest are *not determined by the
data*: their parameters get no standard deviation (``None``) and a warning naming the
direction; the rest use the pseudo-inverse. Intervals are clipped to the fit's bounds.

Whether a parameter with an interval is poorly determined or undetermined is judged from the
interval the fit finally reports (after any measured jackknife), in one place:
:func:`sim2real.sysid.solve.fit.with_verdicts` with :mod:`sim2real.sysid.uncertainty.status`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from sim2real.params import spec
from sim2real.sysid.solve import at_bounds

#: Two-sided 95 % quantile of the standard normal distribution.
Z95 = 1.959963984540054


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
        The largest multiplier of a ``std`` in ``ci95`` (Student's t with the fewest degrees of
        freedom, or the normal's).
    dof : dict of str to float
        Degrees of freedom of each parameter's Student's t (empty: the normal quantile).
    std_sandwich : dict of str to float or None
        The standard deviation without the linearized jackknife (the larger of the sandwich and the
        independent-rows one): what a measured jackknife (refits, or a grid's minima) stands on
        instead (:func:`measured_jackknife`).
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
    dof: dict[str, float] = field(default_factory=dict)
    std_sandwich: dict[str, float | None] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """The JSON-ready ``uncertainty`` entry of fit.json."""
        return {"method": self.method, "clusters": self.clusters, "quantile": self.quantile,
                "std_independent": self.std_independent, "dof": self.dof, "std_sandwich": self.std_sandwich}


def _direction_text(names: tuple[str, ...], vector: np.ndarray) -> str:
    order = np.argsort(-np.abs(vector))
    parts = [f"{vector[i]:+.2f} {names[i]}" for i in order if abs(vector[i]) >= 0.1]
    return ", ".join(parts[:4])


def _cluster_scores(jacobian: np.ndarray, weighted: np.ndarray, clusters: Sequence[int]) -> np.ndarray:
    """Score ``J_gᵀ W_g r_g`` of each cluster, shape (G, p); ``clusters`` are consecutive row counts."""
    edges = np.concatenate([[0], np.cumsum(clusters)]).astype(int)
    return np.array([jacobian[a:b].T @ weighted[a:b] for a, b in itertools.pairwise(edges)])


def _cluster_information(jacobian: np.ndarray, row_weights: np.ndarray, clusters: Sequence[int]) -> np.ndarray:
    """Each non-empty cluster's information ``H_g = J_gᵀ W_g J_g``, shape (G, p, p); ``clusters`` are row counts."""
    edges = np.concatenate([[0], np.cumsum(clusters)]).astype(int)
    return np.array([jacobian[a:b].T @ (row_weights[a:b, None] * jacobian[a:b])
                     for a, b in itertools.pairwise(edges) if b > a])


def _leave_one_out_std(H: np.ndarray, blocks: np.ndarray, scores: np.ndarray, scale: np.ndarray,
                       null_tolerance: float) -> np.ndarray:
    """Standard deviations (p,) of the linearized trial jackknife (CR3); 0 where it has none.

    Leaving trial ``g`` out moves the fit by about ``Δ_g = (H − H_g)⁺ s_g`` (one Gauss-Newton step);
    a parameter that ``H − H_g`` no longer determines gets no step from any trial (0). ``blocks``
    (G, p, p) and ``scores`` (G, p) are the non-empty clusters' ``H_g`` and ``s_g``.
    """
    p = H.shape[0]
    determined = np.ones(p, dtype=bool)
    steps = []
    for block, score in zip(blocks, scores, strict=True):
        eigval, eigvec = np.linalg.eigh((H - block) * np.outer(scale, scale))
        top = max(float(eigval[-1]), 0.0)
        keep = eigval > null_tolerance * top if top > 0.0 else np.zeros(p, dtype=bool)
        for k in np.flatnonzero(~keep):
            determined &= np.abs(eigvec[:, k]) < 0.1
        inverse = (eigvec[:, keep] / eigval[keep]) @ eigvec[:, keep].T
        steps.append(scale * (inverse @ (scale * score)))
    deltas = np.array(steps)
    groups = deltas.shape[0]
    spread = (groups - 1) / groups * np.sum((deltas - deltas.mean(axis=0)) ** 2, axis=0)
    return np.where(determined, np.sqrt(spread), 0.0)


def effective_dof(blocks: np.ndarray, h_pinv: np.ndarray) -> np.ndarray:
    """Degrees of freedom (p,) of each parameter's Student's t: its effective number of trials less one."""
    shares = np.array([np.diag(h_pinv @ block @ h_pinv) for block in blocks])  # (G, p)
    groups = shares.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        effective = shares.sum(axis=0) ** 2 / np.sum(shares**2, axis=0)
    effective = np.where(np.isfinite(effective), effective, groups)
    return np.maximum(1.0, np.minimum(effective, groups) - 1.0)


def _undetermined(names: tuple[str, ...], eigval: np.ndarray, eigvec: np.ndarray, top: float, null: np.ndarray
                  ) -> tuple[np.ndarray, list[str]]:
    """The parameters (p,) in a direction the data do not determine, and one warning per such direction.

    ``eigval`` (p,) and ``eigvec`` (p, p) decompose the scaled ``H``, ``top`` is its largest eigenvalue (or 0)
    and ``null`` (p,) marks the undetermined directions.
    """
    warnings: list[str] = []
    undetermined_mask = np.zeros(eigvec.shape[0], dtype=bool)
    for k in np.flatnonzero(null):
        vector = eigvec[:, k]
        involved = np.abs(vector) >= 0.1
        undetermined_mask |= involved
        warnings.append(f"not determined by the data: direction {_direction_text(names, vector)} "
                        f"(relative curvature {max(eigval[k], 0.0) / top if top else 0.0:.1e})")
    return undetermined_mask, warnings


@dataclass(frozen=True)
class _Spread:
    """Covariance of one estimate: ``cov`` (p, p) (its standard deviations on the diagonal), the
    standard deviations without the linearized jackknife ``sd_sandwich`` (p,), each parameter's degrees of
    freedom ``dof`` (p,) and quantile ``quantiles`` (p,), the largest quantile, and the ``method`` line."""

    cov: np.ndarray
    sd_sandwich: np.ndarray
    dof: np.ndarray
    quantiles: np.ndarray
    quantile: float
    method: str


def _cluster_spread(H: np.ndarray, h_pinv: np.ndarray, cov_independent: np.ndarray, jacobian: np.ndarray,
                    residuals: np.ndarray, row_weights: np.ndarray, counts: list[int], groups: int,
                    scale: np.ndarray, null_tolerance: float) -> _Spread:
    """The widest of the cluster-robust sandwich (CR1), the linearized trial jackknife (CR3) and the
    independent rows, over ``groups`` ≥ 2 non-empty clusters of ``counts`` rows, with per-parameter dof.

    ``H`` (p, p) is ``JᵀWJ``, ``h_pinv`` (p, p) its pseudo-inverse, ``cov_independent`` (p, p) the
    independent-rows covariance, ``jacobian`` (m, p), ``residuals`` and ``row_weights`` (m,).
    """
    p = H.shape[0]
    scores = _cluster_scores(jacobian, row_weights * residuals, counts)
    blocks = _cluster_information(jacobian, row_weights, counts)
    scores_nonempty = scores[np.asarray(counts) > 0]
    meat = groups / (groups - 1) * (scores.T @ scores)
    cov_cluster = h_pinv @ meat @ h_pinv
    sd_cluster = np.sqrt(np.maximum(np.diag(cov_cluster), 0.0))
    sd_sandwich = np.maximum(sd_cluster, np.sqrt(np.maximum(np.diag(cov_independent), 0.0)))
    sd = np.maximum(sd_sandwich, _leave_one_out_std(H, blocks, scores_nonempty, scale, null_tolerance))
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = cov_cluster / np.outer(sd_cluster, sd_cluster)
    corr = np.where(np.outer(sd_cluster, sd_cluster) > 0, corr, np.eye(p))
    cov = np.clip(corr, -1.0, 1.0) * np.outer(sd, sd)
    dof = effective_dof(blocks, h_pinv)
    quantiles = stats.t.ppf(0.975, dof)
    quantile = float(np.max(quantiles))
    method = (f"cluster-robust sandwich over {groups} trials (CR1) or the linearized trial jackknife (CR3), "
              f"whichever is wider, never below the independent-rows estimate; Student's t with "
              f"{float(np.min(dof)):.3g} to {groups - 1} dof (the trials that inform each parameter)")
    return _Spread(cov, sd_sandwich, dof, quantiles, quantile, method)


def _independent_spread(cov_independent: np.ndarray) -> _Spread:
    """The independent-rows estimate (p, p) alone (one trial), with the normal quantile."""
    p = cov_independent.shape[0]
    return _Spread(cov_independent, np.sqrt(np.maximum(np.diag(cov_independent), 0.0)), np.full(p, np.inf),
                   np.full(p, Z95), Z95, "independent rows (one trial)")


def _per_parameter(names: tuple[str, ...], x: np.ndarray, lower: np.ndarray, upper: np.ndarray, spread: _Spread,
                   cov_independent: np.ndarray, undetermined_mask: np.ndarray
                   ) -> tuple[dict[str, float | None], dict[str, list[float] | None], dict[str, float | None],
                              dict[str, float | None]]:
    """``(std, ci95, std_independent, std_sandwich)`` by name; None for undetermined parameters.

    The intervals (``x`` (p,) ± quantile × std) are clipped to ``[lower, upper]`` (p,).
    """
    cov, quantiles = spread.cov, spread.quantiles
    std: dict[str, float | None] = {}
    std_independent: dict[str, float | None] = {}
    std_sandwich: dict[str, float | None] = {}
    ci95: dict[str, list[float] | None] = {}
    for i, name in enumerate(names):
        if undetermined_mask[i]:
            std[name], ci95[name], std_independent[name], std_sandwich[name] = None, None, None, None
            continue
        sd_i = float(np.sqrt(max(cov[i, i], 0.0)))
        std[name] = sd_i
        std_independent[name] = float(np.sqrt(max(cov_independent[i, i], 0.0)))
        std_sandwich[name] = float(spread.sd_sandwich[i])
        ci95[name] = [float(max(x[i] - quantiles[i] * sd_i, lower[i])),
                      float(min(x[i] + quantiles[i] * sd_i, upper[i]))]
    return std, ci95, std_independent, std_sandwich


def _correlation_matrix(cov: np.ndarray, undetermined_mask: np.ndarray) -> list[list[float | None]]:
    """Correlations (p × p nested lists) from ``cov`` (p, p); None in rows and columns of undetermined ones."""
    p = cov.shape[0]
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
    return matrix


def _bound_warnings(names: tuple[str, ...], x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> list[str]:
    """One warning per parameter of ``x`` (p,) pinned at a bound of ``[lower, upper]`` (p,)."""
    warnings: list[str] = []
    on_lower, on_upper = at_bounds(x, lower, upper)
    for i, name in enumerate(names):
        if on_lower[i]:
            warnings.append(f"{name} = {x[i]:.6g} is pinned at its lower bound {lower[i]:.6g}")
        elif on_upper[i]:
            warnings.append(f"{name} = {x[i]:.6g} is pinned at its upper bound {upper[i]:.6g}")
    return warnings


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
    s2 = float(np.sum(row_weights * residuals**2)) / max(m - p, 1)
    # Scale columns by parameter magnitude so eigenvalues compare relative changes.
    Hs = H * np.outer(scale, scale)
    eigval, eigvec = np.linalg.eigh(Hs)
    top = max(float(eigval[-1]), 0.0)
    null = eigval <= null_tolerance * top if top > 0.0 else np.ones(p, dtype=bool)
    undetermined_mask, warnings = _undetermined(names, eigval, eigvec, top, null)
    keep = ~null
    inv_scaled = (eigvec[:, keep] / eigval[keep]) @ eigvec[:, keep].T if np.any(keep) else np.zeros((p, p))
    h_pinv = inv_scaled * np.outer(scale, scale)
    cov_independent = s2 * h_pinv
    counts = [int(c) for c in clusters] if clusters is not None else [m]
    if sum(counts) != m:
        raise ValueError(f"clusters hold {sum(counts)} rows, the Jacobian {m}")
    groups = len([c for c in counts if c > 0])
    if groups >= 2:
        spread = _cluster_spread(H, h_pinv, cov_independent, jacobian, residuals, row_weights, counts, groups,
                                 scale, null_tolerance)
    else:
        spread = _independent_spread(cov_independent)
        if m > p:
            warnings.append("intervals from one trial assume independent residual rows and are likely too narrow: "
                            "fit several trials for intervals that hold")
    cov = spread.cov
    cov[undetermined_mask, :] = np.nan
    cov[:, undetermined_mask] = np.nan
    std, ci95, std_independent, std_sandwich = _per_parameter(names, x, lower, upper, spread, cov_independent,
                                                              undetermined_mask)
    matrix = _correlation_matrix(cov, undetermined_mask)
    warnings += _bound_warnings(names, x, lower, upper)
    dof = spread.dof
    return Uncertainty(std=std, ci95=ci95, correlation={"names": list(names), "matrix": matrix}, covariance=cov,
                       undetermined=tuple(n for i, n in enumerate(names) if undetermined_mask[i]),
                       warnings=tuple(warnings), residual_std=float(np.sqrt(s2)), method=spread.method,
                       clusters=max(groups, 1), quantile=spread.quantile, std_independent=std_independent,
                       std_sandwich=std_sandwich,
                       dof={name: float(dof[i]) for i, name in enumerate(names) if np.isfinite(dof[i])})


def measured_jackknife(result: Any, name: str, jackknife_std: float, jackknife_half: float
                       ) -> tuple[float, list[float], bool]:
    """Standard deviation and 95 % interval of ``name`` once its trial jackknife has been measured.

    A measured jackknife (leave-one-out refits, or minima of a grid cost) is the non-linear version of
    the linearized one (CR3), and replaces it: where one trial carries nearly all of a parameter's local
    curvature, the linear step without it runs off (a demo's box height: ±10 cm) while the refitted
    minima move by millimetres. The result is the measured jackknife where it is wider than the
    sandwich (``std_sandwich``), else the sandwich with the parameter's own Student's t.

    Parameters
    ----------
    result : FitResult
    name : str
    jackknife_std, jackknife_half : float
        The measured jackknife's standard deviation and 95 % half-width, in the parameter's unit.

    Returns
    -------
    (std, [low, high] clipped to the fit's bounds (``result.bounds``, else the registry's), whether the
    jackknife was the wider)
    """
    uncertainty = result.data.get("uncertainty", {})
    sandwich = (uncertainty.get("std_sandwich") or {}).get(name)
    fitted = result.std.get(name)
    fitted_std = float(fitted) if fitted is not None else 0.0
    base = float(sandwich) if sandwich is not None else fitted_std
    entry, value = spec(result.free.registry_of[name]), float(result.values[name])
    low, high = (getattr(result, "bounds", None) or {}).get(name, (entry.lower, entry.upper))

    def interval(half: float) -> list[float]:
        return [max(value - half, low), min(value + half, high)]

    if jackknife_std > base or fitted is None:  # a parameter the fit left undetermined takes the measured one
        return jackknife_std, interval(jackknife_half), True
    if base >= fitted_std:  # the linearized jackknife was not the widest: the fit's interval stands
        return fitted_std, list(result.ci95[name]), False
    dof = (uncertainty.get("dof") or {}).get(name)
    return base, interval((float(stats.t.ppf(0.975, dof)) if dof is not None else Z95) * base), False

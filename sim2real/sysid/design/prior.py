"""What is known before the next pushes: the unknowns, their covariance and the noise of a new trial's rows.

A design starts from a fit (its fit.json, :func:`prior_from_fit`) or, before any push, from the bounds
(:func:`prior_from_bounds`). Either gives a :class:`Prior`: the unknowns (one per group of tied names), the
linearisation point, a covariance ``C₀ (p, p)`` and the variance ``σ²`` of one weighted residual row of a new
trial, so that pushes with information ``H_k`` (:mod:`sim2real.sysid.design.information`) are forecast to
leave the covariance ``(R + H₀ + Σ_k H_k / σ²)⁻¹`` (:mod:`sim2real.sysid.design.select`), with ``H₀`` the earlier
trials' information (the inverse of ``C₀`` where the fit determined the unknowns, zero elsewhere) and ``R`` the
uniform prior's weak information.

From a fit, ``C₀`` is the fit's reported covariance (its standard deviations and correlations); an unknown the
fit did not determine (by the fit's own verdict, :func:`~sim2real.sysid.prediction.sampling.undetermined_unknowns`)
enters as uniform over its bounds (variance ``range² / 12``, uncorrelated). The rows of one trial share their
errors (a model error or a start pose shifts them together), which the fit's cluster-robust standard deviations
carry and the independent-rows ones ``s² (JᵀJ)⁻¹`` do not; ``σ² = κ s²`` with ``s`` the fit's residual standard
deviation and ``κ`` the median over determined unknowns of ``(std / std_independent)²``, so that the fit's own
trials, forecast this way, have about the uncertainty the fit reports.

From the bounds, every unknown is uniform over its bounds and ``σ`` is the given row noise with ``κ = 1``
(independent rows): without a fit nothing measures how a trial's rows share their errors, and the forecast is
optimistic by that factor (it says so).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim2real.errors import InputError
from sim2real.params import ParameterSet, spec
from sim2real.sysid.files import FitDocument
from sim2real.sysid.prediction import fit_distribution, undetermined_unknowns
from sim2real.sysid.problem import ColumnMap, FreeParameters
from sim2real.sysid.residuals import ResidualSpec, Weights


@dataclass(frozen=True)
class Prior:
    """The unknowns before the designed pushes.

    Attributes
    ----------
    free : FreeParameters
        The unknowns (groups of tied registry names; the first of each its label).
    params : ParameterSet
        The linearisation point: every parameter, the unknowns at their current values.
    covariance : ndarray, shape (p, p)
        ``C₀``, the unknowns' units squared, finite and positive definite.
    lower, upper : ndarray, shape (p,)
        Bounds of each unknown (SI units).
    undetermined : ndarray of bool, shape (p,)
        Unknowns not determined before the design (uniform over their bounds in ``covariance``).
    trial_information : ndarray, shape (p, p)
        ``H₀``, what the earlier trials tell: the inverse of the fit's reported covariance in its determined
        unknowns, zero elsewhere (zero without a fit); 1 / the unknowns' units squared.
    trial_count : int
        How many trials ``H₀`` comes from (the fit's clusters; 0 without a fit).
    row_variance : float
        ``σ²``: the variance of one weighted residual row of a new trial (weighted units squared).
    spec : ResidualSpec
        The residuals the fit uses (and a refit on the designed pushes will use).
    source : str
        Where the prior comes from, in words.
    noise_note : str
        How ``row_variance`` was set, in words (for the forecast's caveat).
    """

    free: FreeParameters
    params: ParameterSet
    covariance: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    undetermined: np.ndarray
    trial_information: np.ndarray
    trial_count: int
    row_variance: float
    spec: ResidualSpec
    source: str
    noise_note: str

    @property
    def labels(self) -> tuple[str, ...]:
        """One name per unknown."""
        return self.free.labels

    @property
    def regulariser(self) -> np.ndarray:
        """``R`` (p, p): uniform over the bounds as information, ``12 / range²`` (not a trial)."""
        return np.diag(1.0 / _uniform_variance(self.lower, self.upper))

    @property
    def values(self) -> np.ndarray:
        """The unknowns at the linearisation point, shape (p,)."""
        return np.array([float(self.params[g[0]]) for g in self.free.groups])

    @property
    def columns(self) -> ColumnMap:
        """Every registry name of the unknowns on its unknown's Jacobian column."""
        return ColumnMap.of(self.free.names, [k for k, g in enumerate(self.free.groups) for _ in g])

    def points(self, count: int, rng: np.random.Generator) -> list[ParameterSet]:
        """``count`` linearisation points: the current values, then draws from the prior (normal with
        :attr:`covariance` for determined unknowns, uniform within the bounds for undetermined ones; clipped to
        the bounds; tied names follow their unknown).

        Returns
        -------
        list of ParameterSet
            ``count`` complete parameter sets (the first :attr:`params`).
        """
        out = [self.params]
        determined = ~self.undetermined
        for _ in range(count - 1):
            x = self.values.copy()
            if determined.any():
                block = self.covariance[np.ix_(determined, determined)]
                x[determined] = rng.multivariate_normal(x[determined], block)
            x[self.undetermined] = rng.uniform(self.lower[self.undetermined], self.upper[self.undetermined])
            x = np.clip(x, self.lower, self.upper)
            out.append(self.params.replace({n: float(v) for g, v in zip(self.free.groups, x, strict=True)
                                            for n in g}))
        return out

    def target_index(self, targets: Sequence[str] | None) -> np.ndarray:
        """Positions (k,) of ``targets`` among the unknowns (a tied name finds its group); None: all.

        Raises
        ------
        InputError
            A target that is not one of the unknowns, or one given twice.
        """
        if not targets:
            return np.arange(len(self.labels))
        found = []
        for name in targets:
            hits = [k for k, g in enumerate(self.free.groups) if name in g]
            if not hits:
                raise InputError(f"the target {name} is not a free parameter of {self.source} (free: "
                                 f"{', '.join(self.labels)})", option="target")
            if hits[0] in found:
                raise InputError(f"the targets name {name} twice (or with a name tied to it)", option="target")
            found.append(hits[0])
        return np.array(found, dtype=int)


def _uniform_variance(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    return (upper - lower) ** 2 / 12.0


def prior_from_fit(document: FitDocument, source: str, params: ParameterSet, allow_unconverged: bool = False
                   ) -> Prior:
    """The prior a fit gives (see the module docstring).

    Parameters
    ----------
    document : FitDocument
        A converged fit's fit.json.
    source : str
        Names it in messages.
    params : ParameterSet
        Every parameter the fit did not fit (its params file); the fitted values replace the unknowns'.
    allow_unconverged : bool
        Accept a fit that did not converge (linearised where it stopped).

    Raises
    ------
    Sim2RealError
        The fit did not converge, has per-object values (design one object at a time), or lacks what a
        covariance needs (:func:`~sim2real.sysid.prediction.sampling.fit_distribution`).
    """
    objects = (document.data.get("objects") or {}).get("per_object") if isinstance(document.data, dict) else None
    if objects:
        raise InputError(f"{source} fits {', '.join(objects)} per object: design the pushes of one object from "
                         f"a fit of that object's trials")
    dist = fit_distribution(document, source, allow_unconverged=allow_unconverged, allow_undetermined=True)
    undetermined = undetermined_unknowns(dist)
    std = np.where(undetermined, np.nan, dist.std)
    covariance = dist.correlation * np.outer(np.nan_to_num(std), np.nan_to_num(std))
    uniform = _uniform_variance(dist.lower, dist.upper)
    for k in np.flatnonzero(undetermined):
        covariance[k, :] = 0.0
        covariance[:, k] = 0.0
        covariance[k, k] = uniform[k]
    values = {n: float(v) for g, v in zip(dist.groups, dist.mean, strict=True) for n in g}
    point = params.replace(values)
    data = document.data
    residual_std = data.get("residual_std")
    s = float(residual_std) if isinstance(residual_std, (int, float)) and residual_std > 0 else 1.0
    independent = document.uncertainty.get("std_independent") or {}
    ratios = [(float(dist.std[k]) / float(independent[g[0]])) ** 2 for k, g in enumerate(dist.groups)
              if not undetermined[k] and isinstance(independent.get(g[0]), (int, float)) and independent[g[0]] > 0
              and math.isfinite(dist.std[k])]
    kappa = float(np.median(ratios)) if ratios else 1.0
    note = (f"rows as noisy as the fit's (s = {s:.3g}) times {kappa:.3g}, the median ratio of its reported to its "
            f"independent-rows variances" if ratios else
            f"rows as noisy as the fit's (s = {s:.3g}), independent (the fit lists no independent-rows "
            f"standard deviations): optimistic")
    determined = np.flatnonzero(~undetermined)
    information = np.zeros_like(covariance)
    if determined.size:
        block = _positive(covariance, uniform)[np.ix_(determined, determined)]
        information[np.ix_(determined, determined)] = np.linalg.inv(block)
    clusters = document.uncertainty.get("clusters")
    trials = int(clusters) if isinstance(clusters, int) and clusters >= 1 else max(1, len(data.get("trials") or []))
    return Prior(free=dist.free, params=point, covariance=_positive(covariance, uniform), lower=dist.lower,
                 upper=dist.upper, undetermined=undetermined, trial_information=information,
                 trial_count=trials if determined.size else 0, row_variance=kappa * s * s,
                 spec=spec_of(document, source), source=source, noise_note=note)


def prior_from_bounds(free: FreeParameters, params: ParameterSet, spec_: ResidualSpec, row_noise: float,
                      bounds: dict[str, tuple[float, float]] | None = None) -> Prior:
    """The prior before any push: each unknown uniform over its bounds (the registry's, or ``bounds``),
    linearised at ``params``, rows independent with standard deviation ``row_noise`` (weighted units)."""
    if not (math.isfinite(row_noise) and row_noise > 0):
        raise InputError(f"the row noise must be a positive number, got {row_noise:g}")
    ranges = [(bounds or {}).get(g[0], (spec(g[0]).lower, spec(g[0]).upper)) for g in free.groups]
    lower = np.array([r[0] for r in ranges], dtype=float)
    upper = np.array([r[1] for r in ranges], dtype=float)
    uniform = _uniform_variance(lower, upper)
    p = len(free.groups)
    return Prior(free=free, params=params, covariance=np.diag(uniform), lower=lower, upper=upper,
                 undetermined=np.ones(p, dtype=bool), trial_information=np.zeros((p, p)), trial_count=0,
                 row_variance=row_noise ** 2, spec=spec_,
                 source="the bounds (no fit yet)",
                 noise_note=f"independent rows of standard deviation {row_noise:g} (no fit measures how a "
                            f"trial's rows share their errors): optimistic")


def _positive(covariance: np.ndarray, uniform: np.ndarray) -> np.ndarray:
    """``covariance`` made symmetric and positive definite (its eigenvalues at least 1e-12 of the uniform
    variance's scale: a fit's correlations rounded in fit.json may leave it barely indefinite)."""
    scale = np.sqrt(uniform)
    scaled = (covariance / np.outer(scale, scale) + (covariance / np.outer(scale, scale)).T) / 2.0
    values, vectors = np.linalg.eigh(scaled)
    values = np.maximum(values, 1e-12)
    return (vectors * values) @ vectors.T * np.outer(scale, scale)


def spec_of(document: FitDocument, source: str) -> ResidualSpec:
    """The residuals a fit used (fit.json ``data``: horizon, mode, weights, pusher, pusher shape, engine)."""
    data = document.data
    horizon_text = data.get("horizon", "trial")
    horizon = None if horizon_text in ("trial", None) else int(horizon_text)
    recorded = data.get("weights")
    weights: dict[str, object] = recorded if isinstance(recorded, dict) else {}
    try:
        weighted = Weights(**{k: float(v) for k, v in weights.items()})  # type: ignore[arg-type]
        return ResidualSpec(horizon=horizon, weights=weighted,
                            mode=data.get("mode") or "auto", pusher=data.get("pusher") or "auto",
                            pusher_shape=data.get("pusher_shape") or "sphere", engine=data.get("engine") or "ours")
    except (TypeError, ValueError) as err:
        raise InputError(f"{source}: its residuals cannot be formed again ({err})") from None

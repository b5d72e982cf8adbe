"""Parameter sets drawn from a fit, for domain randomization (``sim2real sample``).

A fit report (fit.json, :meth:`sim2real.sysid.solve.fit.FitResult.to_json`) gives, per unknown, the
fitted value, a standard deviation, its 95 % interval, the bounds it was fitted within and a
correlation matrix; :func:`read_fit_distribution` turns them into a :class:`FitDistribution` (mean
``μ`` (p,), covariance ``Σ = diag(σ) R diag(σ)`` (p, p), the fit's bounds of each unknown, its
intervals, its tied names). :func:`draw_samples` draws from it:

* ``normal`` (default): ``x = μ + K A z`` with ``z ~ N(0, I_p)`` and ``A Aᵀ = Σ``;
* ``t``: the multivariate Student's t with the fewest degrees of freedom of the fit's intervals
  (``ν``, rounded down: the parameter the fewest trials inform; ``G − 1`` for ``G`` trials in a
  fit.json that does not list them), ``x = μ + K A z √(ν / χ²_ν)``: each marginal's central 95 %
  then holds at least the fit's ``ci95`` (before the intervals were clipped to the bounds);

``K`` is ``--inflate`` (it multiplies standard deviations; the covariance by ``K²``). Draws
outside the bounds of any unknown (the fit's: the registry's, narrowed by its ``--bounds``) are
rejected and drawn again (the result is the distribution truncated to the bounds); a tied name
takes its leader's value. Which unknowns the fit did not determine (drawn uniformly within their
bounds by ``replay --spread``, :func:`undetermined_unknowns`) is the fit's own verdict,
:func:`sim2real.sysid.uncertainty.status.determination_problems` on each parameter's own 95 % interval.
:func:`sim2real.sysid.files.sample_files.write_samples` writes each set as a complete ROS 2 params file plus
one table and a description.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy import stats

from sim2real.errors import DataError, InputError
from sim2real.params import spec
from sim2real.sysid.files import FitDocument, read_fit_document
from sim2real.sysid.problem import FreeParameters, Unknown
from sim2real.sysid.solve import measured_refits
from sim2real.sysid.uncertainty import determination_problems

#: Fewest draws looked at before the acceptance rate is judged.
MIN_JUDGED_DRAWS = 1000
#: Acceptance rate (inside the bounds) below which sampling gives up: the fitted distribution then
#: lies mostly outside its bounds and its truncation is no longer the fit's distribution.
MIN_ACCEPTANCE = 0.01
#: Draws per batch at least (the batches are deterministic given the seed).
MIN_BATCH = 1024
#: Largest eigenvalue deficit of a correlation matrix still treated as rounding (it is clipped).
_PSD_TOLERANCE = 1e-8
DISTRIBUTIONS: tuple[str, ...] = ("normal", "t")


@dataclass(frozen=True)
class FitDistribution:
    """The fitted distribution of a fit's unknowns (one per tied group).

    Attributes
    ----------
    source : str
        The fit.json it was read from.
    free : FreeParameters
        The fit's unknowns as reported: per unknown, the names its value is reported under (registry names;
        ``NAME[OBJECT]`` per object), the first the leader, the others tied to it.
    mean : ndarray, shape (p,)
        Fitted values, SI units of each parameter.
    std : ndarray, shape (p,)
        Standard deviations, same units (fit.json ``std``).
    correlation : ndarray, shape (p, p)
        Correlation matrix (fit.json ``correlation.matrix``), symmetric, unit diagonal.
    lower, upper : ndarray, shape (p,)
        Bounds of each unknown: the fit's (fit.json ``bounds``, the registry's narrowed by its
        ``--bounds``) within the registry's of each tied name; the registry's for a fit.json that does
        not record them.
    status : str
        The fit's status (``"converged"`` or ``"not converged"``).
    problems : tuple of str
        The fit's problems, one line each.
    clusters : int
        Trials the intervals were formed from (1: independent rows, normal quantile).
    quantile : float
        The fit's largest multiplier of a ``std`` in ``ci95``.
    dof : float or None
        The fewest degrees of freedom of the fit's Student's t intervals (fit.json
        ``uncertainty.dof``; None in a fit.json that does not list them).
    method : str
        The fit's uncertainty method, in words.
    params_file : str or None
        fit.json ``params_file`` (the fitted params YAML as the fit named it).
    ci95 : ndarray, shape (p, 2), or None
        Each unknown's own 95 % interval, SI units: fit.json ``ci95`` (after any jackknife, clipped
        to the bounds); for a fit.json without it, ``std`` times the parameter's own Student's t
        quantile (``uncertainty.dof``) or else ``quantile``, clipped to the bounds. NaN for an
        unknown without standard deviation. None: ``quantile`` standard deviations, clipped.
    refits : tuple of dict, optional
        Per unknown, its measured jackknife as refits of its value by the trial left out
        (:func:`sim2real.sysid.solve.result.measured_refits`; empty without one).
    bounds_source : str
        Where ``lower`` and ``upper`` come from, in words (for messages).
    unknowns : tuple of Unknown
        Per unknown, its registry names and object (fit.json ``unknowns``), in the order of ``free``.
    """

    source: str
    free: FreeParameters
    mean: np.ndarray
    std: np.ndarray
    correlation: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    status: str
    problems: tuple[str, ...] = ()
    clusters: int = 1
    quantile: float = 1.959963984540054
    method: str = ""
    params_file: str | None = None
    dof: float | None = None
    ci95: np.ndarray | None = None
    refits: tuple[Mapping[str, float | None], ...] = ()
    bounds_source: str = "the registry bounds"
    unknowns: tuple[Unknown, ...] = ()

    def __post_init__(self) -> None:
        if not self.unknowns:  # a distribution built in code: shared unknowns under their registry names
            object.__setattr__(self, "unknowns", tuple(Unknown(g) for g in self.free.groups))

    @property
    def groups(self) -> tuple[tuple[str, ...], ...]:
        """Registry names per unknown (:attr:`FreeParameters.groups`)."""
        return self.free.groups

    @property
    def labels(self) -> tuple[str, ...]:
        """One name per unknown (its leader)."""
        return self.free.labels

    @property
    def names(self) -> tuple[str, ...]:
        """Every fitted registry name, leaders and tied ones, group by group."""
        return self.free.names

    @property
    def covariance(self) -> np.ndarray:
        """``diag(std) R diag(std)``, shape (p, p), in the parameters' units squared."""
        return self.correlation * np.outer(self.std, self.std)

    @property
    def t_dof(self) -> int | None:
        """Degrees of freedom of the fit's Student's t (the fewest, rounded down; else ``clusters − 1``), or None."""
        if self.clusters < 2:
            return None
        return max(1, math.floor(self.dof)) if self.dof is not None else self.clusters - 1

    @property
    def objects(self) -> tuple[str, ...]:
        """The object labels of a fit with per-object unknowns (``NAME[OBJECT]``; empty for a fit without)."""
        return tuple(sorted({u.obj for u in self.unknowns if u.obj is not None}))

    def for_object(self, obj: str) -> FitDistribution:
        """The marginal distribution one object's trials are simulated with: the shared unknowns and the object's
        own (``NAME[OBJECT]`` under their registry names), the other objects' left out (a normal's marginal: the
        sub-vector of the mean and the sub-matrix of the covariance).

        Raises
        ------
        InputError
            ``obj`` is not an object of the fit (the message lists them).
        """
        if obj not in self.objects:
            raise InputError(f"{self.source}: no object '{obj}' in the fit (its objects: "
                             f"{', '.join(self.objects) or 'none: the fit has no per-object parameters'})")
        keep = [k for k, u in enumerate(self.unknowns) if u.obj in (None, obj)]
        groups = tuple(self.unknowns[k].names for k in keep)
        index = np.array(keep)
        return replace(
            self, free=FreeParameters(groups), unknowns=(), mean=self.mean[index],
            std=self.std[index],
            correlation=self.correlation[np.ix_(index, index)], lower=self.lower[index], upper=self.upper[index],
            ci95=None if self.ci95 is None else self.ci95[index],
            refits=tuple(self.refits[k] for k in keep) if len(self.refits) == len(self.labels) else ())

    def expand(self, unknowns: np.ndarray) -> np.ndarray:
        """Per-name values from per-unknown values.

        Parameters
        ----------
        unknowns : ndarray, shape (N, p)

        Returns
        -------
        ndarray, shape (N, len(names))
            Each tied name a copy of its leader's column.
        """
        columns = [k for k, g in enumerate(self.groups) for _ in g]
        return unknowns[:, columns]


def _number(value: object, what: str, source: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise DataError(f"{source}: {what} must be a finite number, got {value!r}")
    return float(value)


def read_fit_distribution(path: str | os.PathLike[str], allow_unconverged: bool = False,
                          allow_undetermined: bool = False) -> FitDistribution:
    """Read fit.json into a :class:`FitDistribution`.

    Parameters
    ----------
    path : path-like
        A fit report written by ``sim2real fit`` (or the demo).
    allow_unconverged : bool
        Accept a fit whose status is not ``"converged"``.
    allow_undetermined : bool
        Accept parameters without a standard deviation (not determined by the data): their ``std``
        is infinite and their correlations 0 (:func:`draw_samples` with ``undetermined="uniform"``).

    Raises
    ------
    Sim2RealError
        One line: unreadable or invalid JSON, not a fit report, not converged (unless allowed),
        no free parameters, a parameter without standard deviation (not determined by the data),
        a missing or invalid correlation matrix, invalid bounds or intervals, values outside the
        bounds.
    """
    return fit_distribution(read_fit_document(path), str(path), allow_unconverged, allow_undetermined)


def fit_distribution(document: FitDocument, source: str, allow_unconverged: bool = False,
                     allow_undetermined: bool = False) -> FitDistribution:
    """A :class:`FitDistribution` from a fit report (:func:`read_fit_distribution` reads it from a file; a fit in
    memory gives it by :func:`sim2real.sysid.files.writeback.fit_document`). ``source`` names it in errors."""
    missing = [key for key, value in (("status", document.status), ("std", document.std)) if value is None]
    if missing:
        raise DataError(f"{source}: not a fit report (no {', '.join(repr(k) for k in missing)})")
    status, problems = str(document.status), document.problems
    if status != "converged" and not allow_unconverged:
        reason = next((p for p in problems if p.startswith("not converged")), f"status '{status}'")
        raise InputError(f"{source}: the fit did not converge ({reason.split(';')[0]}); its values are where it "
                            "stopped, not a minimum, and its covariance does not describe them; refit, or allow "
                            "an unconverged fit", option="allow_unconverged")
    values, std_doc = document.values, document.std or {}
    if not values:
        raise InputError(f"{source}: the fit has no free parameters; there is nothing to sample")
    if document.correlation is None:
        raise DataError(f"{source}: no covariance: 'correlation' with 'names' and 'matrix' is missing")
    labels = document.correlation.names
    if not labels:
        raise DataError(f"{source}: no covariance: 'correlation.names' is empty")
    free = FreeParameters(tuple(u.reported for u in document.unknowns))
    groups = free.groups
    names = [n for g in groups for n in g]
    if sorted(names) != sorted(values) or len(set(names)) != len(names):
        raise DataError(f"{source}: the correlation names ({', '.join(labels)}) do not match the fitted "
                        f"values ({', '.join(values)})")
    undetermined = [n for g in groups for n in g[:1] if std_doc.get(n) is None]
    if undetermined and not allow_undetermined:
        raise InputError(f"{source}: no standard deviation for {', '.join(undetermined)} (not determined by the "
                            "data): the fit has no covariance to sample; fix or drop it and refit")
    for unknown in document.unknowns:
        for name in unknown.names:
            spec(name)
    mean = np.array([_number(values[g[0]], f"values['{g[0]}']", source) for g in groups])
    std = np.array([math.inf if std_doc.get(g[0]) is None else _number(std_doc[g[0]], f"std['{g[0]}']", source)
                    for g in groups])
    if np.any(std < 0):
        raise DataError(f"{source}: a standard deviation is negative")
    for group, value in zip(groups, mean, strict=True):
        for name in group[1:]:
            if _number(values[name], f"values['{name}']", source) != value:
                raise DataError(f"{source}: tied parameters {', '.join(group)} have different values")
    correlation = _correlation(document.correlation.matrix, len(groups), source, ~np.isfinite(std))
    lower, upper, narrowed = _bounds(document.bounds, document.unknowns, source)
    where = "the fit's bounds" if narrowed else "the registry bounds"
    outside = [g[0] for g, v, lo, hi in zip(groups, mean, lower, upper, strict=True) if not lo <= v <= hi]
    if outside:
        raise DataError(f"{source}: fitted values outside {where}: {', '.join(outside)}")
    uncertainty = document.uncertainty
    clusters = uncertainty.get("clusters", 1)
    quantile = uncertainty.get("quantile", 1.959963984540054)
    quantile = float(quantile) if isinstance(quantile, (int, float)) else 1.959963984540054
    dofs = uncertainty.get("dof")
    dofs = dofs if isinstance(dofs, dict) else {}
    finite = [float(v) for v in dofs.values() if isinstance(v, (int, float)) and math.isfinite(v) and v > 0]
    intervals = _intervals(document.ci95 or {}, groups, mean, std, lower, upper, dofs, quantile, source)
    return FitDistribution(
        source=source, free=free, mean=mean, std=std, correlation=correlation, lower=lower, upper=upper,
        status=status, problems=problems,
        clusters=int(clusters) if isinstance(clusters, int) and clusters >= 1 else 1,
        quantile=quantile,
        method=str(uncertainty.get("method") or "not recorded (an older fit.json)"),
        params_file=document.params_file,
        dof=min(finite) if finite else None,
        ci95=intervals,
        refits=tuple(measured_refits(uncertainty, g[0], float(v)) for g, v in zip(groups, mean, strict=True)),
        bounds_source=where, unknowns=document.unknowns,
    )


def _pair(value: object, what: str, source: str) -> tuple[float, float]:
    """``[low, high]`` from fit.json, checked: two finite numbers, ``low <= high``."""
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise DataError(f"{source}: {what} must be [low, high], got {value!r}")
    low, high = _number(value[0], what, source), _number(value[1], what, source)
    if low > high:
        raise DataError(f"{source}: {what} [{low:g}, {high:g}] has its low end above its high end")
    return low, high


def _bounds(recorded: Mapping[str, tuple[float, float]], unknowns: Sequence[Unknown], source: str
            ) -> tuple[np.ndarray, np.ndarray, bool]:
    """Bounds (p,) of each unknown: the fit's (fit.json ``bounds`` of its label, when recorded) within
    the registry's of every tied name, and whether the fit's narrowed any of them."""
    lower = np.array([max(spec(n).lower for n in u.names) for u in unknowns])
    upper = np.array([min(spec(n).upper for n in u.names) for u in unknowns])
    narrowed = False
    for k, unknown in enumerate(unknowns):
        label = unknown.label
        if recorded.get(label) is None:
            continue
        low, high = _pair(recorded[label], f"bounds['{label}']", source)
        if low > lower[k] or high < upper[k]:
            narrowed = True
        lower[k], upper[k] = max(lower[k], low), min(upper[k], high)
        if lower[k] > upper[k]:
            raise DataError(f"{source}: bounds['{label}'] [{low:g}, {high:g}] lie outside the registry bounds")
    return lower, upper, narrowed


def _intervals(recorded: Mapping[str, tuple[float, float] | None], groups: Sequence[Sequence[str]], mean: np.ndarray,
               std: np.ndarray, lower: np.ndarray, upper: np.ndarray, dofs: Mapping[str, Any], quantile: float,
               source: str) -> np.ndarray:
    """Each unknown's 95 % interval (p, 2): fit.json ``ci95`` of its first name, else (an older fit.json)
    ``std`` times its own Student's t quantile (``dofs``) or else the fit-wide ``quantile``, clipped to
    ``[lower, upper]`` as the fit clips its intervals; NaN without a standard deviation."""
    out = np.full((len(groups), 2), np.nan)
    for k, group in enumerate(groups):
        if not math.isfinite(std[k]):
            continue
        if recorded.get(group[0]) is not None:
            out[k] = _pair(recorded[group[0]], f"ci95['{group[0]}']", source)
            continue
        dof = dofs.get(group[0])
        usable = isinstance(dof, (int, float)) and not isinstance(dof, bool) and math.isfinite(dof) and dof > 0
        half = (float(stats.t.ppf(0.975, dof)) if usable else quantile) * std[k]
        out[k] = [max(mean[k] - half, lower[k]), min(mean[k] + half, upper[k])]
    return out


def _correlation(matrix: Sequence[Sequence[float | None]], p: int, source: str,
                 undetermined: np.ndarray | None = None) -> np.ndarray:
    """A checked (p, p) correlation matrix from fit.json ``correlation.matrix``; rows and columns of
    ``undetermined`` unknowns (p,) bool are taken as uncorrelated (their entries may be missing)."""
    if len(matrix) != p or not all(len(row) == p for row in matrix):
        raise DataError(f"{source}: no covariance: 'correlation.matrix' must be {p} x {p}")
    if undetermined is not None and np.any(undetermined):
        matrix = [[(1.0 if i == j else 0.0) if undetermined[i] or undetermined[j] else v
                   for j, v in enumerate(row)] for i, row in enumerate(matrix)]
    if any(v is None for row in matrix for v in row):
        raise DataError(f"{source}: no covariance: 'correlation.matrix' has entries without a value "
                            "(parameters not determined by the data)")
    corr = np.array([[_number(v, "a correlation", source) for v in row] for row in matrix])
    if (not np.allclose(corr, corr.T, atol=1e-9) or not np.allclose(np.diag(corr), 1.0, atol=1e-9)
            or np.any(np.abs(corr) > 1.0 + 1e-9)):
        raise DataError(f"{source}: 'correlation.matrix' is not a correlation matrix (symmetric, unit "
                            "diagonal, entries in [-1, 1])")
    corr = 0.5 * (corr + corr.T)
    if float(np.linalg.eigvalsh(corr)[0]) < -_PSD_TOLERANCE:
        raise DataError(f"{source}: 'correlation.matrix' is not positive semidefinite")
    return corr


@dataclass(frozen=True)
class SampleDraw:
    """Parameter sets drawn from a :class:`FitDistribution`.

    Attributes
    ----------
    unknowns : ndarray, shape (N, p)
        Accepted draws, one column per unknown, in draw order.
    values : ndarray, shape (N, len(names))
        The same per fitted name (tied names repeat their leader).
    distribution : str
        ``"normal"`` or ``"t"``.
    dof : int or None
        Degrees of freedom of the t draws.
    inflate : float
        Multiplier of the standard deviations.
    drawn : int
        Draws looked at up to the N-th accepted one.
    rejected : int
        Of those, draws outside the bounds of some unknown (``drawn - N``).
    rejected_by : dict of str to int
        Per leader name: draws outside its bounds (a draw may count for several).
    uniform : tuple of str
        Leader names the fit did not determine, drawn uniformly within their bounds.
    """

    unknowns: np.ndarray
    values: np.ndarray
    distribution: str
    dof: int | None
    inflate: float
    drawn: int
    rejected: int
    rejected_by: dict[str, int] = field(default_factory=dict)
    uniform: tuple[str, ...] = ()

    @property
    def acceptance(self) -> float:
        """Accepted share of the draws looked at."""
        return self.unknowns.shape[0] / self.drawn if self.drawn else 1.0


def _factor(dist: FitDistribution) -> np.ndarray:
    """``A`` (p, p) with ``A Aᵀ = Σ`` (from the eigen-decomposition of the correlation, which may be singular)."""
    eigval, eigvec = np.linalg.eigh(dist.correlation)
    return dist.std[:, None] * (eigvec * np.sqrt(np.clip(eigval, 0.0, None)))


def undetermined_unknowns(dist: FitDistribution) -> np.ndarray:
    """Unknowns (p,) bool the fit did not determine, by the fit's own verdict.

    No standard deviation, or :func:`sim2real.sysid.uncertainty.status.determination_problems` on the unknown's
    own 95 % interval (``dist.ci95``), the fit's bounds and its measured jackknife (``dist.refits``):
    an interval covering :data:`~sim2real.sysid.uncertainty.status.UNDETERMINED_COVERAGE` of the bound range, or
    leave-one-out refits outside it. A :class:`FitDistribution` without ``ci95`` is judged on
    ``quantile`` standard deviations either side, clipped to the bounds.

    Parameters
    ----------
    dist : FitDistribution

    Returns
    -------
    ndarray of bool, shape (p,)
    """
    out = np.zeros(len(dist.groups), dtype=bool)
    for k, group in enumerate(dist.groups):
        if not math.isfinite(dist.std[k]):
            out[k] = True
            continue
        if dist.ci95 is not None:
            interval = [float(dist.ci95[k, 0]), float(dist.ci95[k, 1])]
        else:
            half = dist.quantile * float(dist.std[k])
            interval = [max(float(dist.mean[k]) - half, float(dist.lower[k])),
                        min(float(dist.mean[k]) + half, float(dist.upper[k]))]
        refits = dist.refits[k] if k < len(dist.refits) else None
        out[k] = bool(determination_problems("=".join(group), float(dist.mean[k]), interval,
                                             [float(dist.lower[k]), float(dist.upper[k])], refits))
    return out


def draw_samples(dist: FitDistribution, count: int, rng: np.random.Generator, inflate: float = 1.0,
                 distribution: str = "normal", undetermined: str = "refuse") -> SampleDraw:
    """Draw ``count`` parameter sets inside the bounds (``dist.lower``, ``dist.upper``; rejection of the draws outside).

    With ``undetermined="uniform"`` the unknowns the fit did not determine
    (:func:`undetermined_unknowns`) are drawn uniformly within their bounds, independently of the
    others (all the data say about them); the rest from the fitted distribution. With ``"refuse"``
    every unknown comes from the fitted distribution (a draw mostly outside the bounds is an error).

    Parameters
    ----------
    dist : FitDistribution
    count : int
        Sets wanted, ≥ 1.
    rng : numpy.random.Generator
        Source of randomness (seeded by the caller; the result is a function of its state).
    inflate : float
        Multiplier of the standard deviations (> 0).
    distribution : str
        ``"normal"`` or ``"t"`` (needs a fit with t intervals, ``dist.t_dof``).

    Raises
    ------
    Sim2RealError
        Unknown distribution, ``t`` for a fit without t intervals, or fewer than
        :data:`MIN_ACCEPTANCE` of the draws inside the bounds (judged on whole batches, at least
        :data:`MIN_JUDGED_DRAWS` draws, whatever ``count``).
    """
    if distribution not in DISTRIBUTIONS:
        raise InputError(f"unknown distribution '{distribution}' (choose from {', '.join(DISTRIBUTIONS)})")
    dof = dist.t_dof if distribution == "t" else None
    if distribution == "t" and dof is None:
        raise InputError(f"{dist.source}: the fit's intervals use the normal quantile (one trial, or "
                            "an older fit.json), not Student's t; use the normal distribution",
                         option="distribution")
    if count < 1 or not inflate > 0:
        raise InputError("need at least one sample and an inflation above 0")
    if undetermined not in ("refuse", "uniform"):
        raise ValueError(f"undetermined must be 'refuse' or 'uniform', got {undetermined!r}")
    p = len(dist.groups)
    uniform = undetermined_unknowns(dist) if undetermined == "uniform" else np.zeros(p, dtype=bool)
    if not np.all(np.isfinite(dist.std[~uniform])):
        raise InputError(f"{dist.source}: a parameter without standard deviation cannot be sampled")
    factor = np.zeros((p, p))
    kept_idx = np.flatnonzero(~uniform)
    if kept_idx.size:
        sub = replace(dist, std=dist.std[kept_idx], correlation=dist.correlation[np.ix_(kept_idx, kept_idx)])
        factor[np.ix_(kept_idx, kept_idx)] = _factor(sub) * inflate
    batch = max(MIN_BATCH, 2 * count)
    kept: list[np.ndarray] = []
    accepted = drawn = 0
    judged = judged_inside = 0  # whole batches, for the acceptance rate (independent of count)
    rejected_by = np.zeros(p, dtype=int)
    while accepted < count:
        z = rng.standard_normal((batch, p))
        step = z @ factor.T
        if dof is not None:
            step *= np.sqrt(dof / rng.chisquare(dof, batch))[:, None]
        x = dist.mean + step
        if np.any(uniform):
            x[:, uniform] = rng.uniform(dist.lower[uniform], dist.upper[uniform], (batch, int(uniform.sum())))
        outside = (x < dist.lower) | (x > dist.upper)
        inside = ~outside.any(axis=1)
        judged += batch
        judged_inside += int(inside.sum())
        if judged >= MIN_JUDGED_DRAWS and judged_inside < MIN_ACCEPTANCE * judged:
            worst = int(np.argmax(outside.sum(axis=0)))
            raise InputError(
                f"only {judged_inside} of {judged} draws ({100.0 * judged_inside / judged:.2g} %) fall inside "
                f"{dist.bounds_source} (most often outside: {dist.labels[worst]} [{dist.lower[worst]:g}, "
                f"{dist.upper[worst]:g}]); the fitted distribution lies mostly outside them: lower the inflation, "
                "or refit", option="inflate")
        need = count - accepted
        positions = np.flatnonzero(inside)
        if positions.size >= need:  # stop at the count-th accepted draw: later draws are not looked at
            last = int(positions[need - 1]) + 1
            kept.append(x[positions[:need]])
            rejected_by += outside[:last].sum(axis=0)
            drawn += last
            accepted += need
            break
        kept.append(x[positions])
        rejected_by += outside.sum(axis=0)
        drawn += batch
        accepted += int(positions.size)
    unknowns = np.concatenate(kept, axis=0)
    return SampleDraw(unknowns=unknowns, values=dist.expand(unknowns), distribution=distribution, dof=dof,
                      inflate=float(inflate), drawn=drawn, rejected=drawn - count,
                      rejected_by={label: int(n) for label, n in zip(dist.labels, rejected_by, strict=True)},
                      uniform=tuple(label for label, u in zip(dist.labels, uniform, strict=True) if u))


def describe_method(dist: FitDistribution, draw: SampleDraw) -> str:
    """One line saying what was sampled (samples.json ``method``)."""
    scale = "the fit's standard deviations"
    if draw.inflate != 1:
        scale = f"{draw.inflate:g} x {scale}"
    what = ("multivariate normal" if draw.distribution == "normal"
            else f"multivariate Student's t with {draw.dof} degrees of freedom")
    return (f"{what}: mean = the fitted values, scale = {scale} with the fit's correlation matrix; draws outside "
            f"{dist.bounds_source} rejected and drawn again (a truncated distribution); tied parameters follow "
            "their leader; every other parameter at the fit's value" + (
                f"; not determined by the fit, so drawn uniformly within their bounds: {', '.join(draw.uniform)}"
                if draw.uniform else ""))

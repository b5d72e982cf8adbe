"""When the steps of :func:`~sim2real.sysid.solve.optimizer.levenberg_marquardt` stop mattering: the statistical stops.

A step too small, against the parameters' standard deviations, to change anything a fit can resolve
(:func:`negligible_step`, with the per-trial gradients of the cluster-robust standard deviations), and
a run of iterations that zigzags about a point within a fraction of them (:func:`stalled`), besides the
stop reasons the optimizer reports.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Protocol

import numpy as np

#: The stop reason of a fit that ran out of iterations (the one reason that is not convergence).
STOP_MAX_ITERATIONS = "maximum iterations"
#: The stop reason of :attr:`LMSettings.stat_tol`.
STOP_STATISTICAL = "step below 5 % of the standard deviations"
#: :attr:`LMSettings.stat_tol` applies once an accepted step lowered the cost by less than this fraction.
STAT_COST_FRACTION = 1e-3
#: Iterations over which a fit that zigzags is judged (:data:`STOP_STALLED`).
STALL_WINDOW = 4
#: A fit stalls when the last :data:`STALL_WINDOW` iterations (at least two of them accepted) lowered the
#: cost by less than :data:`STAT_COST_FRACTION` together and moved no free parameter by this fraction of
#: its standard deviation from where they began. Near a minimum of a cost with kinks at the scale of the
#: uncertainty (contacts that switch), single steps of 0.1-0.3 standard deviations can alternate in
#: direction without end, so that no one step is small enough for :attr:`LMSettings.stat_tol` (a block
#: of cube tosses zigzagged from its 12th iteration to its 21st, its values within 0.2 standard
#: deviations all along); net progress over several iterations is what tells a zigzag from a crawl.
STALL_FRACTION = 0.25
#: The stop reason of a fit that stalled (:data:`STALL_FRACTION`).
STOP_STALLED = f"stalled within {100 * STALL_FRACTION:g} % of the standard deviations over {STALL_WINDOW} iterations"


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


class _Iterate(Protocol):
    """What :func:`stalled` reads of a trace entry (:class:`~sim2real.sysid.solve.optimizer.TraceEntry`)."""

    @property
    def cost(self) -> float: ...

    @property
    def accepted(self) -> bool: ...

    @property
    def x(self) -> tuple[float, ...]: ...


def stalled(trace: Sequence[_Iterate], free: np.ndarray, sigma: np.ndarray | None) -> bool:
    """Whether the last :data:`STALL_WINDOW` iterations of ``trace`` (the newest last; entry 0 is the start)
    stalled (:data:`STALL_FRACTION`), judged on the ``free`` (p,) parameters against their standard
    deviations ``sigma`` (p_free,) (:func:`standard_deviations`; None: unknown, no verdict)."""
    if sigma is None or len(trace) <= STALL_WINDOW:
        return False
    window = trace[-STALL_WINDOW - 1:]
    if sum(entry.accepted for entry in window[1:]) < 2:
        return False
    then, now = window[0], window[-1]
    if then.cost - now.cost > STAT_COST_FRACTION * then.cost:
        return False
    moved = np.abs(np.asarray(now.x) - np.asarray(then.x))[free]
    return bool(np.all(moved < STALL_FRACTION * sigma))

"""Gauss-Newton with Levenberg-Marquardt damping, box bounds and an optional robust loss.

The problem is ``min_x ½ Σ ρ(r_i(x)²)`` subject to ``lower ≤ x ≤ upper``, with ``r`` and its
Jacobian ``J`` supplied together by one callable. Each iteration solves the damped normal
equations ``(JᵀWJ + λ D²) δ = −JᵀWr`` on the parameters not held at a bound (``D²`` is the
running maximum of ``diag(JᵀWJ)``, Moré's scaling, so the method does not depend on
parameter units), clips the step into the bounds, and accepts it when the cost falls; ``λ``
follows Nielsen's gain-ratio rule. Directions the data do not determine (relative curvature
below ``settings.null_tolerance``) are left out of the step rather than amplified.

No step moves a parameter by more than a trust radius times its typical magnitude (the
parameter's scale): the radius starts at ``settings.initial_step``, grows after each
accepted step that used it well (fourfold when the cost fell as predicted, else twofold) and shrinks
after a rejected one, and a step longer than it
is taken at a larger ``λ`` (for that step only) for which it fits. A Gauss-Newton step
from a point where the linear model is poor (a whole-trial cost that is nearly flat there) can
otherwise be thousands of scales long, land on the bounds and stop there after one iteration.

The robust losses are applied by iteratively reweighted least squares: each row is scaled by
``sqrt(ρ'(r²))`` with ``ρ`` Huber's or soft-L1 of scale ``settings.loss_scale``.

The linear algebra of one step (determined directions, the damped solve, the trust radius, the
bounds) is in :mod:`sim2real.sysid.solve.damped_step`; the statistical stops (a step too small against the
standard deviations, a zigzag that stalls) are in :mod:`sim2real.sysid.solve.stopping`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from sim2real.errors import InputError, Sim2RealError
from sim2real.sysid.solve.damped_step import (
    at_bounds,
    clip_inside,
    damped_solver,
    determined_mask,
    projected_gradient,
    within_radius,
)
from sim2real.sysid.solve.stopping import (
    STAT_COST_FRACTION,
    STOP_MAX_ITERATIONS,
    STOP_STALLED,
    STOP_STATISTICAL,
    cluster_gradients,
    negligible_step,
    stalled,
    standard_deviations,
)

LOSSES: tuple[str, ...] = ("linear", "huber", "soft_l1")
#: Two accepted steps in a row whose actual cost decrease exceeds the Gauss-Newton prediction by this factor
#: mark a fit that creeps: the second is tried again at twice (and then four times) its length
#: (:func:`_extended_step`), unless it ends the fit anyway (:func:`_ends_fit`).
EXTEND_RATIO = 1.25
#: Doublings tried along such a step.
MAX_EXTENSIONS = 2
#: A rejected step shrinks the trust radius to this fraction of the step's largest move (in typical
#: magnitudes): near a minimum of a cost that is rough at the scale of the parameters' uncertainty (contacts
#: that switch), the steps that follow reach the statistical stop's scale in two rejections, not four.
REJECT_SHRINK = 0.25
#: An accepted step that used at least half the trust radius widens it by this factor when its cost fell at
#: least :data:`FAST_GROWTH_RATIO` of what the model predicted (else by 2): a parameter started on a bound,
#: whose typical magnitude is then 1 % of its range, reaches a Gauss-Newton step of 60 of those in three
#: iterations instead of six (cube tosses from a sharp cube: the radius cut the edge radius's first six steps short).
FAST_GROWTH = 4.0
#: Gain ratio (actual / predicted decrease) from which a step that used the radius widens it by FAST_GROWTH.
FAST_GROWTH_RATIO = 0.9


class FitAbortedError(Sim2RealError):
    """Raised by an ``evaluate`` callable to end the fit (e.g. strict mode); never turned into a rejection."""


@dataclass(frozen=True)
class LMSettings:
    """Stopping tolerances and options of :func:`levenberg_marquardt`.

    Attributes
    ----------
    max_iterations : int
        Accepted-or-rejected iterations before stopping.
    ftol : float
        Stop when an accepted step lowers the cost by less than ``ftol`` times the cost.
    xtol : float
        Stop when the scaled step is below ``xtol`` times (scaled ``x`` + ``xtol``).
    gtol : float
        Stop when the projected gradient's largest scaled component is below ``gtol``.
    initial_damping : float
        ``λ`` of the first iteration, relative to the largest diagonal of ``JᵀWJ``.
    max_damping : float
        Stop when ``λ`` (relative) grows beyond this without an accepted step.
    loss : str
        ``"linear"`` (least squares), ``"huber"`` or ``"soft_l1"``.
    loss_scale : float
        Residual size where the robust loss starts to down-weight rows.
    null_tolerance : float
        Eigenvalues of the scaled ``JᵀWJ`` below this times the largest one count as undetermined.
    initial_step : float
        Trust radius of the first step: no parameter moves by more than this many times its
        typical magnitude (``typical`` of :func:`levenberg_marquardt`). The radius grows after an
        accepted step that reached at least half of it with a gain ratio above 0.75 (by
        :data:`FAST_GROWTH` from a ratio of :data:`FAST_GROWTH_RATIO`, else by 2), and becomes
        :data:`REJECT_SHRINK` times the longest move of a rejected step. ``inf`` disables it.
    stat_tol : float
        Stop when a step moves every free parameter by less than ``stat_tol`` times its standard
        deviation (at the current point: the independent-rows estimate, or with clusters of rows
        the wider cluster-robust one the fit reports), once the last accepted step lowered the
        cost by less than :data:`STAT_COST_FRACTION` (far from a minimum the residuals, and so the
        standard deviations, are inflated). Steps that small change nothing a fit can resolve; on
        the rough costs of hard contact (events shifting by a step) they are all that is left near
        a minimum, and without this test the fit would spend its iterations on them (a cube-toss
        fit zigzagged by 1-2 % of its standard deviations from its 15th iteration to its limit).
        0 disables it.
    """

    max_iterations: int = 20
    ftol: float = 1e-8
    xtol: float = 1e-8
    gtol: float = 1e-10
    initial_damping: float = 1e-3
    max_damping: float = 1e10
    loss: str = "linear"
    loss_scale: float = 1.0
    null_tolerance: float = 1e-10
    stat_tol: float = 0.05
    initial_step: float = 1.0

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise InputError(f"unknown loss '{self.loss}' (choose from {', '.join(LOSSES)})")
        if self.loss_scale <= 0.0 or self.max_iterations < 0:
            raise InputError("loss_scale must be positive and max_iterations non-negative")
        if not self.initial_step > 0.0:
            raise InputError("initial_step must be positive")


@dataclass(frozen=True)
class TraceEntry:
    """One iteration of the optimizer (the values after it).

    ``note`` says why a trial step was rejected when its evaluation failed rather than
    raised the cost (the one-line message of the :class:`Sim2RealError`), else it is empty.
    """

    iteration: int
    cost: float
    step_norm: float
    damping: float
    accepted: bool
    gradient_norm: float
    gain_ratio: float
    x: tuple[float, ...]
    seconds: float
    note: str = ""

    def as_dict(self, names: tuple[str, ...]) -> dict[str, object]:
        """JSON-ready form with ``values`` by parameter name."""
        return {"iteration": self.iteration, "cost": self.cost, "step_norm": self.step_norm,
                "damping": self.damping, "accepted": self.accepted, "gradient_norm": self.gradient_norm,
                "gain_ratio": self.gain_ratio, "values": dict(zip(names, self.x, strict=True)),
                "seconds": self.seconds, "note": self.note}


@dataclass(frozen=True)
class LMResult:
    """Outcome of :func:`levenberg_marquardt`.

    Attributes
    ----------
    x : ndarray, shape (p,)
        Final parameters.
    cost : float
        ``½ Σ ρ(r²)`` at ``x``.
    residuals : ndarray, shape (m,)
        Residuals at ``x`` (unweighted by the loss).
    jacobian : ndarray, shape (m, p)
        Jacobian at ``x``.
    loss_weights : ndarray, shape (m,)
        ``ρ'(r²)`` at ``x`` (ones for the linear loss).
    trace : tuple of TraceEntry
        Iteration 0 is the start.
    stop_reason : str
    evaluations : int
    """

    x: np.ndarray
    cost: float
    residuals: np.ndarray
    jacobian: np.ndarray
    loss_weights: np.ndarray
    trace: tuple[TraceEntry, ...]
    stop_reason: str
    evaluations: int
    active_bounds: tuple[int, ...] = field(default=())


def loss_weights(residuals: np.ndarray, loss: str, scale: float) -> tuple[float, np.ndarray]:
    """Cost ``½ Σ ρ(r²)`` and row weights ``ρ'(r²)`` of a robust loss.

    Parameters
    ----------
    residuals : ndarray, shape (m,)
    loss : str
        ``"linear"``, ``"huber"`` or ``"soft_l1"``.
    scale : float
        Residual size where down-weighting starts.
    """
    z = (residuals / scale) ** 2
    if loss == "linear":
        return 0.5 * float(np.sum(residuals**2)), np.ones_like(residuals)
    if loss == "huber":
        rho = np.where(z <= 1.0, z, 2.0 * np.sqrt(z) - 1.0)
        weight = np.where(z <= 1.0, 1.0, 1.0 / np.sqrt(np.maximum(z, 1.0)))
    else:  # soft_l1
        rho = 2.0 * (np.sqrt(1.0 + z) - 1.0)
        weight = 1.0 / np.sqrt(1.0 + z)
    return 0.5 * scale**2 * float(np.sum(rho)), weight


Evaluate = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
Progress = Callable[[TraceEntry], None]
Evaluated = tuple[np.ndarray, np.ndarray, np.ndarray, float, np.ndarray]  #: x (p,), r (m,), J (m, p), cost, w (m,)


def _snap_to_bounds(evaluate: Evaluate, x: np.ndarray, cost: float, g: np.ndarray, lower: np.ndarray,
                    upper: np.ndarray, settings: LMSettings) -> Evaluated | None:
    """The end point with the unknowns that stopped :data:`~sim2real.sysid.solve.damped_step.BOUND_MARGIN` short of a
    bound, pushed there by the gradient ``g`` (p,), put on the bound, when that costs no more (else None)."""
    on_lower, on_upper = at_bounds(x, lower, upper)
    outward = (on_lower & (g > 0.0) & (x > lower)) | (on_upper & (g < 0.0) & (x < upper))
    if not np.any(outward):
        return None
    x_bound = np.where(outward, np.where(on_lower, lower, upper), x)
    try:
        r, J = evaluate(x_bound)
    except FitAbortedError:
        raise
    except Sim2RealError:
        return None
    cost_bound, w = loss_weights(r, settings.loss, settings.loss_scale)
    return (x_bound, r, J, cost_bound, w) if cost_bound <= cost else None


def _extended_step(evaluate: Evaluate, x_old: np.ndarray, step: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                   cost: float, settings: LMSettings
                   ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, float, np.ndarray] | None, int]:
    """The accepted ``step`` (p,) from ``x_old`` (p,) doubled while the cost keeps falling below ``cost``.

    Gauss-Newton drops the residuals' second derivatives; with large residuals (a model that cannot
    match real data exactly) and contacts that switch within a step, its quadratic model can
    over-estimate the curvature, and its steps then stop short: the actual decrease exceeds the
    predicted one step after step and the fit creeps towards the minimum. Trying the same direction
    at two and four times the length costs one evaluation each and turns that creep into a line search.

    Returns
    -------
    (x, r, J, cost, loss weights) of the best doubled step, or None when none lowered the cost; and
    the number of evaluations spent.
    """
    best = None
    spent = 0
    factor = 1.0
    for _ in range(MAX_EXTENSIONS):
        factor *= 2.0
        x_try = clip_inside(x_old + factor * step, x_old, lower, upper)
        if np.array_equal(x_try, best[0] if best is not None else x_old + step):
            break  # clipped at a bound: no longer step left to try
        spent += 1
        try:
            r_try, J_try = evaluate(x_try)
        except FitAbortedError:
            raise
        except Sim2RealError:
            break
        cost_try, w_try = loss_weights(r_try, settings.loss, settings.loss_scale)
        if not (np.isfinite(cost_try) and cost_try < cost):
            break
        best, cost = (x_try, r_try, J_try, cost_try, w_try), cost_try
    return best, spent


@dataclass(frozen=True)
class _LMProblem:
    """What stays fixed through one :func:`levenberg_marquardt` run (its arguments, bounds and typical
    magnitudes (p,) as float arrays, and the ``time.monotonic()`` of its start)."""

    evaluate: Evaluate
    lower: np.ndarray
    upper: np.ndarray
    typical: np.ndarray
    settings: LMSettings
    progress: Progress | None
    stop_when: Callable[[np.ndarray, float], str | None] | None
    clusters: Callable[[], Sequence[int]] | None
    clock: float

    def record(self, state: _LMState, entry: TraceEntry) -> None:
        """Append ``entry`` to the trace and report it."""
        state.trace.append(entry)
        if self.progress is not None:
            self.progress(entry)


@dataclass
class _LMState:
    """Where a :func:`levenberg_marquardt` run stands: the current point and the step control.

    ``x`` (p,), residuals ``r`` (m,), Jacobian ``J`` (m, p), ``cost``, loss weights ``w`` (m,), gradient
    ``g = Jᵀ W r`` (p,), its projection ``pg`` (p,) onto the bounds and the ``free`` mask (p,); ``diag_max``
    (p,) the running maximum of ``diag(JᵀWJ)``; ``damping`` (relative ``λ``), its growth
    factor ``nu`` after rejections and the trust ``radius`` (typical magnitudes); the relative cost decrease
    and gain ratio of the last accepted step; iterations and evaluations so far, and the trace.
    """

    x: np.ndarray
    r: np.ndarray
    J: np.ndarray
    cost: float
    w: np.ndarray
    g: np.ndarray
    pg: np.ndarray
    free: np.ndarray
    diag_max: np.ndarray
    radius: float
    damping: float
    nu: float = 2.0
    last_decrease: float = float("inf")
    last_ratio: float = 0.0
    iteration: int = 0
    evaluations: int = 1
    trace: list[TraceEntry] = field(default_factory=list)


@dataclass(frozen=True)
class _Proposal:
    """One iteration's trial point ``x_new`` (p,), its ``step`` (p,) from the current point, the step's
    scaled norm, the cost decrease the Gauss-Newton model predicts, whether the statistical stop holds,
    the ``free`` mask (p,) of the step and, once the statistical tests apply (the last accepted step lowered
    the cost by less than :data:`STAT_COST_FRACTION`), the free parameters' standard deviations ``sigma``
    (p_free,) at the current point (else None)."""

    x_new: np.ndarray
    step: np.ndarray
    step_norm: float
    predicted: float
    negligible: bool
    free: np.ndarray
    sigma: np.ndarray | None


def _lm_start(problem: _LMProblem, x: np.ndarray) -> _LMState:
    """The state at ``x`` (p,) after its evaluation, with trace entry 0 recorded."""
    settings = problem.settings
    r, J = problem.evaluate(x)
    cost, w = loss_weights(r, settings.loss, settings.loss_scale)
    diag_max = np.zeros(x.shape[0])
    g = J.T @ (w * r)
    pg, free = projected_gradient(g, x, problem.lower, problem.upper)
    state = _LMState(x, r, J, cost, w, g, pg, free, diag_max, float(settings.initial_step), settings.initial_damping)
    problem.record(state, TraceEntry(0, cost, 0.0, 0.0, True, float(np.max(np.abs(pg), initial=0.0)), float("nan"),
                                     tuple(x), time.monotonic() - problem.clock))
    return state


def _stationary(state: _LMState, H: np.ndarray, settings: LMSettings) -> str | None:
    """The convergence test met at the current point (``H`` = JᵀWJ (p, p) there) before any step, if any."""
    if state.cost <= 1e-30:
        return "zero residual"
    scale = np.sqrt(np.maximum(np.maximum(state.diag_max, np.diag(H)), 1e-300))
    if np.max(np.abs(state.pg) / scale, initial=0.0) <= settings.gtol * max(np.sqrt(2.0 * state.cost), 1e-300):
        return "gradient below gtol"
    return None


def _propose(problem: _LMProblem, state: _LMState, H: np.ndarray, scale: np.ndarray) -> _Proposal:
    """The damped step within the trust radius on the free, determined unknowns (narrowing ``state.free`` to
    those), clipped into the bounds; ``H`` (p, p) is JᵀWJ at the current point and ``scale`` (p,) Moré's."""
    settings, typical, x = problem.settings, problem.typical, state.x
    delta = np.zeros_like(x)
    free = state.free = state.free & determined_mask(H, typical, settings.null_tolerance)
    if np.any(free):
        sub = np.ix_(free, free)
        solve = damped_solver(H[sub], state.g[free], state.diag_max[free], settings.null_tolerance)
        delta[free], _ = within_radius(solve, state.damping, typical[free], state.radius)
    x_new = clip_inside(x + delta, x, problem.lower, problem.upper)
    step = x_new - x
    sigma = None
    if settings.stat_tol > 0.0 and state.last_decrease <= STAT_COST_FRACTION:
        sigma = standard_deviations(H, free, state.cost, state.r.shape[0], cluster_gradients(
            state.J, state.w * state.r, problem.clusters() if problem.clusters is not None else None))
    negligible = negligible_step(step, free, sigma, settings.stat_tol)
    step_norm = float(np.linalg.norm(step * scale))
    predicted = -(state.g @ step) - 0.5 * step @ H @ step
    return _Proposal(x_new, step, step_norm, predicted, negligible, free.copy(), sigma)


def _evaluate_trial(problem: _LMProblem, state: _LMState, x_new: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, float, np.ndarray, str]:
    """``(r, J, cost, loss weights, note)`` at the trial point ``x_new`` (p,); an evaluation that fails
    (:class:`Sim2RealError`) gives an infinite cost with the current point's arrays and its one-line message."""
    settings = problem.settings
    note = ""
    try:
        r_new, J_new = problem.evaluate(x_new)
        cost_new, w_new = loss_weights(r_new, settings.loss, settings.loss_scale)
    except FitAbortedError:
        raise
    except Sim2RealError as err:  # the simulator failed or degraded at the trial point: reject the step
        r_new, J_new, cost_new, w_new = state.r, state.J, float("inf"), state.w
        note = " ".join(str(err).split()) or "evaluation failed"
    return r_new, J_new, cost_new, w_new, note


def _extend(problem: _LMProblem, state: _LMState, x_old: np.ndarray, step: np.ndarray, old_cost: float,
            scale: np.ndarray) -> tuple[np.ndarray, float, float] | None:
    """Take the best doubling of the accepted ``step`` (p,) from ``x_old`` (p,) (:func:`_extended_step`), if
    one lowers the cost further; returns its ``(step, scaled step norm, cost decrease)`` or None."""
    extended, spent = _extended_step(problem.evaluate, x_old, step, problem.lower, problem.upper, state.cost,
                                     problem.settings)
    state.evaluations += spent
    if extended is None:
        return None
    state.x, state.r, state.J, state.cost, state.w = extended
    step = state.x - x_old
    step_norm = float(np.linalg.norm(step * scale))
    actual = old_cost - state.cost
    state.last_decrease = actual / old_cost if old_cost > 0.0 else 0.0
    state.radius = max(state.radius, float(np.max(np.abs(step) / problem.typical, initial=0.0)))
    return step, step_norm, actual


def _accept(problem: _LMProblem, state: _LMState, proposal: _Proposal,
            point: tuple[np.ndarray, np.ndarray, np.ndarray, float, np.ndarray], actual: float, ratio: float,
            scale: np.ndarray) -> tuple[float, float]:
    """Move to the trial ``point`` ``(x, r, J, cost, w)`` (or a doubling of its step), relax the damping,
    widen the trust radius after a step that used it well; returns the step's scaled norm and cost decrease."""
    old_cost = state.cost
    state.last_decrease = actual / old_cost if old_cost > 0.0 else 0.0
    x_old = state.x
    state.x, state.r, state.J, state.cost, state.w = point
    step, step_norm = proposal.step, proposal.step_norm
    if ratio > EXTEND_RATIO and state.last_ratio > EXTEND_RATIO and not _ends_fit(problem, proposal, actual, old_cost):
        extended = _extend(problem, state, x_old, step, old_cost, scale)
        if extended is not None:
            step, step_norm, actual = extended
    state.last_ratio = ratio
    state.damping *= max(1.0 / 3.0, 1.0 - (2.0 * min(ratio, 1.0) - 1.0) ** 3) if ratio > 0 else 1.0
    state.nu = 2.0
    if ratio > 0.75 and float(np.max(np.abs(step) / problem.typical, initial=0.0)) >= 0.5 * state.radius:
        state.radius *= FAST_GROWTH if ratio >= FAST_GROWTH_RATIO else 2.0
    state.g = state.J.T @ (state.w * state.r)
    state.pg, state.free = projected_gradient(state.g, state.x, problem.lower, problem.upper)
    return step_norm, actual


def _ends_fit(problem: _LMProblem, proposal: _Proposal, actual: float, old_cost: float) -> bool:
    """Whether an accepted step (cost ``old_cost`` lowered by ``actual``) ends the run (:func:`_stop_after`):
    negligible against the standard deviations, or a decrease below ``ftol``."""
    return proposal.negligible or actual <= problem.settings.ftol * old_cost


def _reject(problem: _LMProblem, state: _LMState, step: np.ndarray) -> None:
    """Raise the damping and shrink the trust radius to a fraction of the rejected ``step`` (p,)."""
    state.damping *= state.nu
    state.nu *= 2.0
    longest = float(np.max(np.abs(step) / problem.typical, initial=0.0))
    if longest > 0.0:
        state.radius = min(state.radius, REJECT_SHRINK * longest)


def _stop_after(problem: _LMProblem, state: _LMState, accepted: bool, actual: float, old_cost: float,
                proposal: _Proposal, step_norm: float, scale: np.ndarray) -> str | None:
    """The stop reason an iteration ends the run with (``old_cost``: the cost before it), or None."""
    settings = problem.settings
    if accepted and actual <= settings.ftol * old_cost:
        return "cost reduction below ftol"
    if accepted and problem.stop_when is not None:
        reason = problem.stop_when(state.x, state.cost)
        if reason:
            return reason
    if proposal.negligible:
        return STOP_STATISTICAL if settings.stat_tol == 0.05 else \
            f"step below {100 * settings.stat_tol:g} % of the standard deviations"
    if stalled(state.trace, proposal.free, proposal.sigma):
        return STOP_STALLED
    if step_norm <= settings.xtol * (float(np.linalg.norm(state.x * scale)) + settings.xtol):
        return "step below xtol"
    if not accepted and state.damping > settings.max_damping:
        return "damping limit (no further decrease)"
    return None


def _lm_iteration(problem: _LMProblem, state: _LMState, H: np.ndarray) -> str | None:
    """One damped step from the current point (``H`` = JᵀWJ (p, p) there), accepted or rejected and recorded;
    returns the stop reason it ends the run with, or None."""
    state.diag_max = np.maximum(state.diag_max, np.diag(H))
    scale = np.sqrt(np.maximum(state.diag_max, 1e-300))
    state.iteration += 1
    proposal = _propose(problem, state, H, scale)
    state.evaluations += 1
    r_new, J_new, cost_new, w_new, note = _evaluate_trial(problem, state, proposal.x_new)
    actual = state.cost - cost_new
    ratio = actual / proposal.predicted if proposal.predicted > 0.0 else -1.0
    accepted = bool(actual > 0.0 and np.isfinite(cost_new))
    old_cost = state.cost
    step_norm = proposal.step_norm
    if accepted:
        step_norm, actual = _accept(problem, state, proposal, (proposal.x_new, r_new, J_new, cost_new, w_new),
                                    actual, ratio, scale)
    else:
        _reject(problem, state, proposal.step)
    problem.record(state, TraceEntry(state.iteration, state.cost, step_norm, float(state.damping), accepted,
                                     float(np.max(np.abs(state.pg), initial=0.0)), float(ratio), tuple(state.x),
                                     time.monotonic() - problem.clock, note))
    return _stop_after(problem, state, accepted, actual, old_cost, proposal, step_norm, scale)


def _lm_finish(problem: _LMProblem, state: _LMState, stop: str) -> LMResult:
    """The result at the end point, moved onto the bounds it stopped just short of when that costs no more."""
    x, r, J, cost, w = state.x, state.r, state.J, state.cost, state.w
    snapped = _snap_to_bounds(problem.evaluate, x, cost, J.T @ (w * r), problem.lower, problem.upper,
                              problem.settings)
    if snapped is not None:
        state.evaluations += 1
        x, r, J, cost, w = snapped
    on_lower, on_upper = at_bounds(x, problem.lower, problem.upper)
    active = tuple(int(i) for i in np.flatnonzero(on_lower | on_upper))
    return LMResult(x=x, cost=cost, residuals=r, jacobian=J, loss_weights=w, trace=tuple(state.trace),
                    stop_reason=stop, evaluations=state.evaluations, active_bounds=active)


def levenberg_marquardt(evaluate: Evaluate, x0: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                        settings: LMSettings = LMSettings(), progress: Progress | None = None,
                        typical: np.ndarray | None = None,
                        stop_when: Callable[[np.ndarray, float], str | None] | None = None,
                        clusters: Callable[[], Sequence[int]] | None = None) -> LMResult:
    """Minimise ``½ Σ ρ(r(x)²)`` within ``[lower, upper]`` by damped Gauss-Newton.

    Parameters
    ----------
    evaluate : callable
        ``x (p,) -> (r (m,), J (m, p))``.
    x0 : ndarray, shape (p,)
        Start, inside the bounds.
    lower, upper : ndarray, shape (p,)
        Bounds.
    settings : LMSettings
    progress : callable, optional
        Called with every :class:`TraceEntry` as it is made.
        A :class:`Sim2RealError` raised by ``evaluate`` at a trial point (a simulation that
        fails or degrades there) rejects that step like a cost increase, and its message is
        the entry's ``note``; at ``x0`` it propagates, and :class:`FitAbortedError`
        always propagates.
    typical : ndarray, shape (p,), optional
        Typical magnitude of each parameter (default ``max(|x0|, 1)``), > 0, in its unit.
        Parameters whose influence on the residuals, relative to this magnitude, is negligible
        are not moved, and no step moves a parameter by more than the trust radius
        (``settings.initial_step`` at first) times this magnitude.
    stop_when : callable, optional
        ``(x (p,), cost) -> str or None``, asked after every accepted step: a string ends the fit
        with that stop reason (e.g. a second start that reached an optimum already found).
    clusters : callable, optional
        ``() -> rows per cluster`` (consecutive rows; one cluster per trial): the statistical stop
        judges steps against the cluster-robust standard deviations as well
        (:func:`~sim2real.sysid.solve.stopping.negligible_step`).

    Returns
    -------
    LMResult
        ``stop_reason`` is one of: ``"gradient below gtol"``, ``"step below xtol"``,
        ``"cost reduction below ftol"``, ``"zero residual"``, :data:`STOP_STATISTICAL`, :data:`STOP_STALLED`,
        ``"maximum iterations"``
        (:data:`STOP_MAX_ITERATIONS`: not converged), ``"damping limit (no further decrease)"``, or
        the reason ``stop_when`` gave.
    """
    x = np.asarray(x0, dtype=float).copy()
    typical = np.maximum(np.abs(x), 1.0) if typical is None else np.asarray(typical, dtype=float)
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    if np.any(x < lower) or np.any(x > upper):
        raise InputError("start values lie outside the bounds")
    problem = _LMProblem(evaluate, lower, upper, typical, settings, progress, stop_when, clusters, time.monotonic())
    state = _lm_start(problem, x)
    stop = STOP_MAX_ITERATIONS
    while state.iteration < settings.max_iterations:
        H = state.J.T @ (state.w[:, None] * state.J)
        reason = _stationary(state, H, settings)
        if reason is None:
            reason = _lm_iteration(problem, state, H)
        if reason is not None:
            stop = reason
            break
    else:
        # The iteration limit: the point reached may still pass a test (no evaluation needed).
        stop = _stationary(state, state.J.T @ (state.w[:, None] * state.J), settings) or stop
    return _lm_finish(problem, state, stop)

"""Gauss-Newton with Levenberg-Marquardt damping, box bounds and an optional robust loss.

The problem is ``min_x ½ Σ ρ(r_i(x)²)`` subject to ``lower ≤ x ≤ upper``, with ``r`` and its
Jacobian ``J`` supplied together by one callable. Each iteration solves the damped normal
equations ``(JᵀWJ + λ D²) δ = −JᵀWr`` on the parameters not held at a bound (``D²`` is the
running maximum of ``diag(JᵀWJ)``, Moré's scaling, so the method does not depend on
parameter units), clips the step into the bounds, and accepts it when the cost falls; ``λ``
follows Nielsen's gain-ratio rule. Directions the data do not determine (relative curvature
below ``settings.null_tolerance``) are left out of the step rather than amplified.

No step moves a parameter by more than a trust radius times its typical magnitude (the
parameter's scale): the radius starts at ``settings.initial_step``, doubles after each
accepted step that used it well and halves after a rejected one, and a step longer than it
is taken at a larger ``λ`` (for that step only) for which it fits. A Gauss-Newton step
from a point where the linear model is poor (a whole-trial cost that is nearly flat there) can
otherwise be thousands of scales long, land on the bounds and stop there after one iteration.

The robust losses are applied by iteratively reweighted least squares: each row is scaled by
``sqrt(ρ'(r²))`` with ``ρ`` Huber's or soft-L1 of scale ``settings.loss_scale``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from sim2real.errors import Sim2RealError

LOSSES: tuple[str, ...] = ("linear", "huber", "soft_l1")
#: The stop reason of a fit that ran out of iterations (the one reason that is not convergence).
STOP_MAX_ITERATIONS = "maximum iterations"
#: The stop reason of :attr:`LMSettings.stat_tol`.
STOP_STATISTICAL = "step below 5 % of the standard deviations"
#: :attr:`LMSettings.stat_tol` applies once an accepted step lowered the cost by less than this fraction.
STAT_COST_FRACTION = 1e-3
#: Two accepted steps in a row whose actual cost decrease exceeds the Gauss-Newton prediction by this factor
#: mark a fit that creeps: the second is tried again at twice (and then four times) its length
#: (:func:`_extended_step`).
EXTEND_RATIO = 1.25
#: Doublings tried along such a step.
MAX_EXTENSIONS = 2
#: A rejected step shrinks the trust radius to this fraction of the step's largest move (in typical
#: magnitudes): near a minimum of a cost that is rough at the scale of the parameters' uncertainty (contacts
#: that switch), the steps that follow reach the statistical stop's scale in two rejections, not four.
REJECT_SHRINK = 0.25
#: An iterate that comes from inside the bounds stops this fraction of the bound range short of a bound.
#: On the bound itself a parameter's Jacobian column can vanish (a friction coefficient of 0: the cone
#: collapses and the solve no longer depends on it), and the fit could never leave it: a planar-push fit
#: stopped at contact.mu_pusher = 0 with 14 times the truth's cost, and left it when started at 0.02.
BOUND_MARGIN = 1e-3


def at_bounds(x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which unknowns (p,) sit at their lower and at their upper bound (within the iterates' margin)."""
    near = 1.5 * BOUND_MARGIN * (np.asarray(upper, dtype=float) - np.asarray(lower, dtype=float))
    return np.asarray(x) <= lower + near, np.asarray(x) >= upper - near


def clip_inside(x_new: np.ndarray, x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """``x_new`` (p,) clipped into the bounds, :data:`BOUND_MARGIN` of the range short of a bound that the
    current iterate ``x`` (p,) is not already on."""
    margin = BOUND_MARGIN * (upper - lower)
    return np.clip(x_new, np.minimum(lower + margin, x), np.maximum(upper - margin, x))


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
        typical magnitude (``typical`` of :func:`levenberg_marquardt`). The radius doubles after an
        accepted step that reached at least half of it with a gain ratio above 0.75, and becomes
        half the longest move of a rejected step. ``inf`` disables it.
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
            raise Sim2RealError(f"unknown loss '{self.loss}' (choose from {', '.join(LOSSES)})")
        if self.loss_scale <= 0.0 or self.max_iterations < 0:
            raise Sim2RealError("loss_scale must be positive and max_iterations non-negative")
        if not self.initial_step > 0.0:
            raise Sim2RealError("initial_step must be positive")


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


def determined_mask(hessian: np.ndarray, typical: np.ndarray, null_tolerance: float) -> np.ndarray:
    """Parameters whose relative influence ``sqrt(H_ii) |typical_i|`` exceeds ``sqrt(null_tolerance)``
    times the largest; the others have (numerically) no effect on the residuals."""
    influence = np.sqrt(np.maximum(np.diag(hessian), 0.0)) * typical
    top = float(np.max(influence, initial=0.0))
    return influence > np.sqrt(null_tolerance) * top if top > 0.0 else np.zeros(len(typical), dtype=bool)


def _damped_solver(hessian: np.ndarray, gradient: np.ndarray, diag: np.ndarray,
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


def _within_radius(solve: Callable[[float], np.ndarray], damping: float, typical: np.ndarray,
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


def _negligible_step(step: np.ndarray, hessian: np.ndarray, free: np.ndarray, cost: float, rows: int,
                     settings: LMSettings, cluster_gradients: np.ndarray | None = None) -> bool:
    """Whether ``step`` moves every free parameter by less than ``stat_tol`` standard deviations.

    The standard deviations are ``sqrt(σ² diag(H⁻¹))`` over the free parameters with
    ``σ² = 2 cost / (m − p)`` (independent rows: the narrowest estimate), or, with the gradient of
    each cluster of rows (``cluster_gradients`` (G, p), G ≥ 2: one per trial), the wider of those and
    the cluster-robust sandwich's (CR1), the standard deviations the fit reports: rows of one trial
    are not independent, and judged on the independent-rows figure a fit of many rows kept crawling
    along a correlated valley by a fraction of a reported standard deviation per iteration.
    """
    p = int(np.count_nonzero(free))
    if settings.stat_tol <= 0.0 or p == 0 or rows <= p or not np.any(step):
        return False
    sub = hessian[np.ix_(free, free)]
    try:
        bread = np.linalg.pinv(sub)
    except np.linalg.LinAlgError:
        return False
    variance = np.diag(bread) * (2.0 * cost / (rows - p))
    if cluster_gradients is not None and cluster_gradients.shape[0] >= 2:
        groups = cluster_gradients.shape[0]
        meat = cluster_gradients[:, free].T @ cluster_gradients[:, free] * groups / (groups - 1)
        variance = np.maximum(variance, np.diag(bread @ meat @ bread))
    if not np.all(np.isfinite(variance)) or np.any(variance <= 0.0):
        return False
    return bool(np.all(np.abs(step[free]) < settings.stat_tol * np.sqrt(variance)))


def cluster_gradients(jacobian: np.ndarray, weighted_residuals: np.ndarray, sizes: Sequence[int] | None
                      ) -> np.ndarray | None:
    """Per cluster of consecutive rows (``sizes``: rows per cluster, summing to m) the gradient
    ``J_cᵀ (w r)_c`` (G, p); None without clusters or when the sizes do not cover the rows."""
    if sizes is None or len(sizes) < 2 or int(np.sum(sizes)) != jacobian.shape[0]:
        return None
    edges = np.cumsum([0, *sizes])
    return np.array([jacobian[a:b].T @ weighted_residuals[a:b] for a, b in itertools.pairwise(edges)])


def _snap_to_bounds(evaluate: Evaluate, x: np.ndarray, cost: float, g: np.ndarray, lower: np.ndarray,
                    upper: np.ndarray, settings: LMSettings) -> tuple[np.ndarray, ...] | None:
    """The end point with the unknowns that stopped :data:`BOUND_MARGIN` short of a bound, pushed there by
    the gradient ``g`` (p,), put on the bound, when that costs no more (``(x, r, J, cost, w)``, else None)."""
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
        judges steps against the cluster-robust standard deviations as well (:func:`_negligible_step`).

    Returns
    -------
    LMResult
        ``stop_reason`` is one of: ``"gradient below gtol"``, ``"step below xtol"``,
        ``"cost reduction below ftol"``, ``"zero residual"``, :data:`STOP_STATISTICAL`,
        ``"maximum iterations"``
        (:data:`STOP_MAX_ITERATIONS`: not converged), ``"damping limit (no further decrease)"``, or
        the reason ``stop_when`` gave.
    """
    x = np.asarray(x0, dtype=float).copy()
    typical = np.maximum(np.abs(x), 1.0) if typical is None else np.asarray(typical, dtype=float)
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    if np.any(x < lower) or np.any(x > upper):
        raise Sim2RealError("start values lie outside the bounds")
    clock = time.monotonic()
    r, J = evaluate(x)
    evaluations = 1
    cost, w = loss_weights(r, settings.loss, settings.loss_scale)
    trace: list[TraceEntry] = []
    diag_max = np.zeros(x.shape[0])
    damping = None
    nu = 2.0
    radius = float(settings.initial_step)  # trust radius, in typical magnitudes
    stop = STOP_MAX_ITERATIONS
    last_decrease = float("inf")  # relative cost decrease of the last accepted step
    last_ratio = 0.0  # gain ratio of the last accepted step

    def record(entry: TraceEntry) -> None:
        trace.append(entry)
        if progress is not None:
            progress(entry)

    def projected_gradient(g: np.ndarray, xv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        on_lower, on_upper = at_bounds(xv, lower, upper)
        free = ~((on_lower & (g > 0.0)) | (on_upper & (g < 0.0)))
        return np.where(free, g, 0.0), free

    g = J.T @ (w * r)
    pg, free = projected_gradient(g, x)
    record(TraceEntry(0, cost, 0.0, 0.0, True, float(np.max(np.abs(pg), initial=0.0)), float("nan"),
                      tuple(x), time.monotonic() - clock))
    iteration = 0

    def stationary(H: np.ndarray) -> str | None:
        """The convergence test met at the current point before any step, if any."""
        if cost <= 1e-30:
            return "zero residual"
        scale = np.sqrt(np.maximum(np.maximum(diag_max, np.diag(H)), 1e-300))
        if np.max(np.abs(pg) / scale, initial=0.0) <= settings.gtol * max(np.sqrt(2.0 * cost), 1e-300):
            return "gradient below gtol"
        return None

    while iteration < settings.max_iterations:
        H = J.T @ (w[:, None] * J)
        met = stationary(H)
        if met is not None:
            stop = met
            break
        diag_max = np.maximum(diag_max, np.diag(H))
        scale = np.sqrt(np.maximum(diag_max, 1e-300))
        if damping is None:
            damping = settings.initial_damping
        iteration += 1
        delta = np.zeros_like(x)
        free = free & determined_mask(H, typical, settings.null_tolerance)
        if np.any(free):
            sub = np.ix_(free, free)
            solve = _damped_solver(H[sub], g[free], diag_max[free], settings.null_tolerance)
            delta[free], _ = _within_radius(solve, damping, typical[free], radius)
        x_new = clip_inside(x + delta, x, lower, upper)
        step = x_new - x
        negligible = last_decrease <= STAT_COST_FRACTION and _negligible_step(
            step, H, free, cost, r.shape[0], settings,
            cluster_gradients(J, w * r, clusters() if clusters is not None else None))
        step_norm = float(np.linalg.norm(step * scale))
        predicted = -(g @ step) - 0.5 * step @ H @ step
        evaluations += 1
        note = ""
        try:
            r_new, J_new = evaluate(x_new)
            cost_new, w_new = loss_weights(r_new, settings.loss, settings.loss_scale)
        except FitAbortedError:
            raise
        except Sim2RealError as err:  # the simulator failed or degraded at the trial point: reject the step
            r_new, J_new, cost_new, w_new = r, J, float("inf"), w
            note = " ".join(str(err).split()) or "evaluation failed"
        actual = cost - cost_new
        ratio = actual / predicted if predicted > 0.0 else -1.0
        accepted = bool(actual > 0.0 and np.isfinite(cost_new))
        if accepted:
            old_cost = cost
            last_decrease = actual / old_cost if old_cost > 0.0 else 0.0
            x_old = x
            x, r, J, cost, w = x_new, r_new, J_new, cost_new, w_new
            if ratio > EXTEND_RATIO and last_ratio > EXTEND_RATIO:
                extended, spent = _extended_step(evaluate, x_old, step, lower, upper, cost, settings)
                evaluations += spent
                if extended is not None:
                    x, r, J, cost, w = extended
                    step = x - x_old
                    step_norm = float(np.linalg.norm(step * scale))
                    actual = old_cost - cost
                    last_decrease = actual / old_cost if old_cost > 0.0 else 0.0
                    radius = max(radius, float(np.max(np.abs(step) / typical, initial=0.0)))
            last_ratio = ratio
            damping *= max(1.0 / 3.0, 1.0 - (2.0 * min(ratio, 1.0) - 1.0) ** 3) if ratio > 0 else 1.0
            nu = 2.0
            if ratio > 0.75 and float(np.max(np.abs(step) / typical, initial=0.0)) >= 0.5 * radius:
                radius *= 2.0
            g = J.T @ (w * r)
            pg, free = projected_gradient(g, x)
        else:
            damping *= nu
            nu *= 2.0
            longest = float(np.max(np.abs(step) / typical, initial=0.0))
            if longest > 0.0:
                radius = min(radius, REJECT_SHRINK * longest)
        record(TraceEntry(iteration, cost, step_norm, float(damping), accepted,
                          float(np.max(np.abs(pg), initial=0.0)), float(ratio), tuple(x), time.monotonic() - clock,
                          note))
        if accepted and actual <= settings.ftol * old_cost:
            stop = "cost reduction below ftol"
            break
        if accepted and stop_when is not None:
            reason = stop_when(x, cost)
            if reason:
                stop = reason
                break
        if negligible:
            stop = STOP_STATISTICAL if settings.stat_tol == 0.05 else \
                f"step below {100 * settings.stat_tol:g} % of the standard deviations"
            break
        if step_norm <= settings.xtol * (float(np.linalg.norm(x * scale)) + settings.xtol):
            stop = "step below xtol"
            break
        if not accepted and damping > settings.max_damping:
            stop = "damping limit (no further decrease)"
            break
    else:
        # The iteration limit: the point reached may still pass a test (no evaluation needed).
        stop = stationary(J.T @ (w[:, None] * J)) or stop
    snapped = _snap_to_bounds(evaluate, x, cost, J.T @ (w * r), lower, upper, settings)
    if snapped is not None:
        evaluations += 1
        x, r, J, cost, w = snapped
    on_lower, on_upper = at_bounds(x, lower, upper)
    active = tuple(int(i) for i in np.flatnonzero(on_lower | on_upper))
    return LMResult(x=x, cost=cost, residuals=r, jacobian=J, loss_weights=w, trace=tuple(trace),
                    stop_reason=stop, evaluations=evaluations, active_bounds=active)

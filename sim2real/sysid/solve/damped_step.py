"""The damped Gauss-Newton step of :func:`~sim2real.sysid.solve.optimizer.levenberg_marquardt`.

Which unknowns the data determine at all, the damped solve ``δ = −(H + λ D²)⁻¹ g`` in scaled coordinates
without the undetermined directions, the larger damping that keeps a step within the trust radius, and the
bounds: a step clipped a margin short of them, the unknowns held at them, the gradient projected onto them.
When the steps stop mattering is in :mod:`sim2real.sysid.solve.stopping`.
"""

from __future__ import annotations

from collections.abc import Callable

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


def projected_gradient(g: np.ndarray, x: np.ndarray, lower: np.ndarray, upper: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
    """The gradient ``g`` (p,) with the components that push ``x`` (p,) out through a bound it sits on set
    to 0, and the mask (p,) of the unknowns free to move."""
    on_lower, on_upper = at_bounds(x, lower, upper)
    free = ~((on_lower & (g > 0.0)) | (on_upper & (g < 0.0)))
    return np.where(free, g, 0.0), free

"""Whether a fit can be trusted, in words: its status and its problems.

A fit is ``"converged"`` when the optimizer stopped on a convergence test (small gradient,
small step, small cost reduction, zero residual) or because no step lowers the cost any
more (damping limit), and ``"not converged"`` when it ran out of iterations. Its
*problems* are one-line statements a user must see before using the numbers: not
converged, parameters at a bound, parameters the data do not determine, a held-out cost
that rose, residual rows left out because they depend on degraded solver steps, trials
left out. ``sim2real fit`` prints them first, fit.json carries them at the top, and the
report opens its fit section with them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sim2real.sysid.optimizer import STOP_MAX_ITERATIONS
from sim2real.sysid.runs import TrialFailure

CONVERGED = "converged"
NOT_CONVERGED = "not converged"


def fit_status(stop_reason: str) -> str:
    """:data:`CONVERGED` or :data:`NOT_CONVERGED` for an optimizer stop reason."""
    return NOT_CONVERGED if stop_reason == STOP_MAX_ITERATIONS else CONVERGED


def bound_problems(labels: Sequence[str], x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> list[str]:
    """One line per unknown sitting at a bound (within 1e-9 of the bound interval).

    Parameters
    ----------
    labels : sequence of str
        One name per unknown.
    x, lower, upper : ndarray, shape (p,)
        Fitted values and bounds, SI units.
    """
    problems = []
    for name, value, lo, hi in zip(labels, x, lower, upper, strict=True):
        span = hi - lo
        if value <= lo + 1e-9 * span:
            problems.append(f"{name} = {value:.6g} is at its lower bound {lo:.6g}")
        elif value >= hi - 1e-9 * span:
            problems.append(f"{name} = {value:.6g} is at its upper bound {hi:.6g}")
    return problems


def fit_problems(stop_reason: str, iterations: int, bound_lines: Sequence[str], undetermined: Sequence[str],
                 held_out: str | None, dropped_rows: int, total_rows: int,
                 failures: Sequence[TrialFailure]) -> list[str]:
    """The problems of a fit, most important first.

    Parameters
    ----------
    stop_reason : str
        The optimizer's.
    iterations : int
        Iterations run.
    bound_lines : sequence of str
        From :func:`bound_problems`.
    undetermined : sequence of str
        Parameters the data do not determine.
    held_out : str or None
        A rising held-out cost, in words (:meth:`sim2real.sysid.evaluation.HeldOut.rising`).
    dropped_rows, total_rows : int
        Residual rows left out (degraded solver steps) and rows in all.
    failures : sequence of TrialFailure
        Trials left out.
    """
    problems = []
    if fit_status(stop_reason) == NOT_CONVERGED:
        problems.append(f"not converged: stopped at the iteration limit ({iterations} iterations); "
                        "the values are where the fit stopped, not a minimum (raise --max-iterations)")
    problems += list(bound_lines)
    if undetermined:
        problems.append(f"not determined by the data: {', '.join(undetermined)} (no standard deviation; the value "
                        "is the start value or arbitrary along the undetermined direction)")
    if held_out:
        problems.append(held_out)
    if dropped_rows:
        problems.append(f"{dropped_rows} of {total_rows + dropped_rows} residual rows left out: they depend on "
                        "degraded solver steps (see 'solver' and the hard_steps files)")
    problems += [f"trial left out: {failure.line()}" for failure in failures]
    return problems

"""Whether a fit can be trusted, in words: its status and its problems.

A fit is ``"converged"`` when the optimizer stopped on a convergence test (small gradient,
small step, small cost reduction, zero residual) or because no step lowers the cost any
more (damping limit), and ``"not converged"`` when it ran out of iterations. Its
*problems* are one-line statements a user must see before using the numbers, most important
first: parameters the data do not determine (a 95 % interval that covers essentially the
parameter's whole bound range, or leave-one-out refits that land outside the interval:
:func:`determination_problems`; no standard deviation at all), an optimum that depends on the
start (another start as low outside the intervals, :mod:`sim2real.sysid.solve.starts`) or whose
independence of the start is unchecked (no other start could be evaluated), not converged,
a stop on a corner of the bounds after the first steps, parameters at a bound, a held-out cost or
prediction error that rose, residual rows left out because they depend on degraded solver steps,
trials left out. ``sim2real fit`` prints them first, fit.json carries them at the top, and the
report opens its fit section with them.

Every figure a verdict quotes is the one the fit reports: the standard deviation and 95 %
interval of ``FitResult.std`` / ``ci95`` (after any jackknife), so a warning never quotes another
spread than the printed interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from sim2real.sysid.problem import TrialFailure
from sim2real.sysid.solve import STOP_MAX_ITERATIONS, at_bounds

CONVERGED = "converged"
NOT_CONVERGED = "not converged"
#: How the problem line of parameters without any standard deviation (null directions) begins.
NOT_DETERMINED = "not determined by the data:"
#: A 95 % interval covering at least this fraction of a parameter's bound range leaves it undetermined.
UNDETERMINED_COVERAGE = 0.9
#: Relative standard deviation (of the parameter's scale) above which a parameter is poorly determined
#: (a warning; undetermined is a problem).
POOR_RELATIVE_STD = 0.5
#: A fit that ends on a corner of its bounds after at most this many iterations stopped where its first
#: steps ran to, not at a minimum it found.
CORNER_ITERATIONS = 2


def fit_status(stop_reason: str) -> str:
    """:data:`CONVERGED` or :data:`NOT_CONVERGED` for an optimizer stop reason."""
    return NOT_CONVERGED if stop_reason == STOP_MAX_ITERATIONS else CONVERGED


def bound_problems(labels: Sequence[str], x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> list[str]:
    """One line per unknown sitting at a bound (within the optimizer's margin, :func:`at_bounds`).

    Parameters
    ----------
    labels : sequence of str
        One name per unknown.
    x, lower, upper : ndarray, shape (p,)
        Fitted values and bounds, SI units.
    """
    problems = []
    on_lower, on_upper = at_bounds(x, lower, upper)
    for name, value, lo, hi, low, high in zip(labels, x, lower, upper, on_lower, on_upper, strict=True):
        if low:
            problems.append(f"{name} = {value:.6g} is at its lower bound {lo:.6g}")
        elif high:
            problems.append(f"{name} = {value:.6g} is at its upper bound {hi:.6g}")
    return problems


def corner_problem(labels: Sequence[str], x: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                   iterations: int) -> str | None:
    """A problem line when every unknown (two or more) sits at a bound after at most :data:`CORNER_ITERATIONS`.

    A fit that reaches a corner of its box of bounds within its first steps has not found a
    minimum there: its first Gauss-Newton steps ran to the bounds, where the projected gradient
    vanishes. (With one unknown, "at its bound" is said by :func:`bound_problems`.)

    Parameters
    ----------
    labels : sequence of str
        One name per unknown.
    x, lower, upper : ndarray, shape (p,)
        Fitted values and bounds, SI units.
    iterations : int
        Iterations the optimizer ran.
    """
    if len(labels) < 2 or iterations > CORNER_ITERATIONS:
        return None
    at_lower, at_upper = at_bounds(x, lower, upper)
    if not np.all(at_lower | at_upper):
        return None
    where = ", ".join(f"{name} = {value:.6g} ({'lower' if low else 'upper'})"
                      for name, value, low in zip(labels, x, at_lower, strict=True))
    return (f"stopped on a corner of the bounds after {iterations} iteration(s): {where}; the first steps ran "
            "to the bounds, so this is where they stopped, not a minimum (try other start values or --bounds)")


def poorly_determined(label: str, std: float | None, scale: float) -> str | None:
    """A warning when ``std`` exceeds :data:`POOR_RELATIVE_STD` of the parameter's ``scale`` (same unit)."""
    if std is None or not std > POOR_RELATIVE_STD * scale:
        return None
    return f"{label} is poorly determined: std {std:.3g} is more than {POOR_RELATIVE_STD:.0%} of its scale {scale:.3g}"


def determination_problems(label: str, value: float, ci95: Sequence[float] | None, bounds: Sequence[float],
                           refits: Mapping[str, float | None] | None = None) -> list[str]:
    """Why a parameter with an interval is undetermined, one line per reason (empty when it is determined).

    Parameters
    ----------
    label : str
        The parameter (an unknown: a registry name, or the first of tied names).
    value : float
        Fitted value, SI unit.
    ci95 : [low, high] or None
        The 95 % interval the fit reports (None: no standard deviation, said elsewhere).
    bounds : [lower, upper]
        The fit's bounds of the parameter (the registry's, narrowed by ``--bounds``).
    refits : mapping of str to float or None, optional
        A measured jackknife: the value of each leave-one-out refit (or grid minimum), by the trial
        left out (None where a refit failed).

    Returns
    -------
    list of str
        ``"<label> is undetermined: ..."`` when the interval covers at least
        :data:`UNDETERMINED_COVERAGE` of the bound range, and when a refit lies outside the interval.
    """
    if ci95 is None:
        return []
    low, high = float(ci95[0]), float(ci95[1])
    lower, upper = float(bounds[0]), float(bounds[1])
    span = upper - lower
    lines = []
    if span > 0.0 and high - low >= UNDETERMINED_COVERAGE * span:
        lines.append(f"{label} is undetermined: its 95 % interval [{low:.6g}, {high:.6g}] covers "
                     f"{100.0 * (high - low) / span:.0f} % of its bounds [{lower:.6g}, {upper:.6g}] (the value "
                     f"{value:.6g} is not determined by the data)")
    outside = {trial: float(v) for trial, v in (refits or {}).items()
               if v is not None and not low - 1e-9 * span <= float(v) <= high + 1e-9 * span}
    if outside:
        values = [float(v) for v in (refits or {}).values() if v is not None]
        worst = max(outside, key=lambda trial: abs(outside[trial] - value))
        lines.append(f"{label} is undetermined: its leave-one-out refits range over [{min(values):.6g}, "
                     f"{max(values):.6g}], beyond its 95 % interval [{low:.6g}, {high:.6g}] ({len(outside)} of "
                     f"{len(values)} outside; without '{worst}': {outside[worst]:.6g}), so the trials disagree "
                     "on it")
    return lines


def fit_problems(stop_reason: str, iterations: int, bound_lines: Sequence[str], undetermined: Sequence[str],
                 held_out: str | None, dropped_rows: int, total_rows: int,
                 failures: Sequence[TrialFailure], determination: Sequence[str] = (),
                 corner: str | None = None) -> list[str]:
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
        Parameters the data do not determine at all (no standard deviation).
    held_out : str or None
        A rising held-out cost, in words (:meth:`sim2real.sysid.solve.evaluation.HeldOut.rising`).
    dropped_rows, total_rows : int
        Residual rows left out (degraded solver steps) and rows in all.
    failures : sequence of TrialFailure
        Trials left out.
    determination : sequence of str
        Parameters with an interval that the data still do not determine
        (:func:`determination_problems`); they come first.
    corner : str or None
        From :func:`corner_problem`.
    """
    problems = list(determination)
    if undetermined:
        problems.append(f"{NOT_DETERMINED} {', '.join(undetermined)} (no standard deviation; the value "
                        "is the start value or arbitrary along the undetermined direction)")
    if fit_status(stop_reason) == NOT_CONVERGED:
        problems.append(f"not converged: stopped at the iteration limit ({iterations} iterations); "
                        "the values are where the fit stopped, not a minimum (raise --max-iterations)")
    if corner:
        problems.append(corner)
    problems += list(bound_lines)
    if held_out:
        problems.append(held_out)
    if dropped_rows:
        problems.append(f"{dropped_rows} of {total_rows + dropped_rows} residual rows left out: they depend on "
                        "degraded solver steps (see 'solver' and the hard-step files beside the fit's output)")
    problems += [f"trial left out: {failure.line()}" for failure in failures]
    return problems

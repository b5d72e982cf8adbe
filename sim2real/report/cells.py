"""Table cells of the report: numbers formatted in the report's units, "—" where a value is missing.

Values come in SI units (m, deg where the data holds degrees); a missing, non-numeric or non-finite
value (None, NaN, a bool) is shown as "—".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sim2real.trials import TrialRecord

MISSING = "—"


def number_or_none(value: Any) -> float | None:
    """``value`` as a float when it is a finite number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def cm(value: Any) -> str:
    """A length in metres, shown in centimetres with one decimal."""
    number = number_or_none(value)
    return MISSING if number is None else f"{100.0 * number:.1f}"


def mm(value: Any) -> str:
    """A length in metres, shown in millimetres with one decimal."""
    number = number_or_none(value)
    return MISSING if number is None else f"{number * 1000:.1f}"


def degrees(value: Any) -> str:
    """An angle in degrees, with one decimal."""
    number = number_or_none(value)
    return MISSING if number is None else f"{number:.1f}"


def yes_no(value: bool | None) -> str:
    """yes, no, or "—" when unknown."""
    return MISSING if value is None else ("yes" if value else "no")


def solver_tallies(trial: TrialRecord) -> dict[str, dict[str, Any]]:
    """Per-platform solver outcome tallies of a trial (trial.json ``solver``), tolerant of absence."""
    return {str(ns): dict(v) for ns, v in trial.info.solver.items() if isinstance(v, Mapping)}


def describe_tally(tally: Mapping[str, Any]) -> str:
    """``226 steps: 225 converged, 1 recovered, 0 degraded`` (+ worst violations when not all converged)."""
    text = (f"{tally.get('steps', '?')} steps: {tally.get('converged', '?')} converged, "
            f"{tally.get('recovered', '?')} recovered, {tally.get('degraded', '?')} degraded")
    if tally.get("degraded") or tally.get("recovered"):
        text += (f" (worst residual {float(tally.get('worst_residual') or 0.0):.2g}, worst complementarity "
                 f"{float(tally.get('worst_complementarity') or 0.0):.2g})")
    return text


def degraded_steps(tally: Mapping[str, Any]) -> int:
    value = tally.get("degraded")
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else 0

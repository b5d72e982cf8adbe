"""Table cells of the report: numbers formatted in the report's units, "—" where a value is missing.

Values come in SI units (m, deg where the data holds degrees); a missing, non-numeric or non-finite
value (None, NaN, a bool) is shown as "—".
"""

from __future__ import annotations

import math
from typing import Any

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

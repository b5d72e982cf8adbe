"""Formatting for the generated tables: numbers to a few significant digits, units, ranges, Markdown tables."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.tables.store import provenance


def num(value: Any, digits: int = 3) -> str:
    """A number with ``digits`` significant digits (no exponent for ordinary magnitudes), or a dash."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, (bool, int)) or not isinstance(value, float):
        return str(value)
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) < 1e6:
        return str(int(value))
    if abs(value) < 1e-3:
        return f"{value:.{digits - 1}e}"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    return f"{value:.{decimals}f}"


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def dig(mapping: Mapping[str, Any] | None, *keys: str) -> Any:
    """``mapping[k0][k1]...``, or None where a key is missing."""
    value: Any = mapping
    for key in keys:
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def earlier(text: str) -> str:
    """A figure of a benchmark whose output is not stored: the earlier release's, labelled as such."""
    return f"{text} *(measured in an earlier release, not regenerated)*"


def with_provenance(table: str, *benchmarks: str) -> str:
    line = provenance(*benchmarks)
    return f"{table}\n\n{line}" if line else table


def mm(metres: Any) -> str:
    return num(None if metres is None else 1e3 * metres, 2)


def arrow(start: Any, final: Any, scale: float = 1.0, digits: int = 3) -> str:
    values = [None if v is None else scale * v for v in (start, final)]
    return f"{num(values[0], digits)} → {num(values[1], digits)}"


def ms(value: Any) -> str:
    return "–" if value is None else f"{num(value, 3)} ms"


def span(pair: Any, unit: str = "") -> str:
    """``[low, high]`` as ``low-high`` (one number when equal), or a dash."""
    if not pair:
        return "–"
    low, high = pair
    text = f"{low:.1f}" if low == high else f"{low:.1f}-{high:.1f}"
    return text + unit


def cpus(cpus: Sequence[int]) -> str:
    return ("CPU " + ", ".join(str(c) for c in cpus)) if cpus else "the same CPUs"


def idle_loaded(entry: Mapping[str, Any], key: str) -> str:
    """``idle / loaded`` ranges of one figure of a fault (the loaded column when the run has one)."""
    loaded = entry.get("loaded")
    idle = span(entry.get(key))
    return f"{idle} / {span(loaded.get(key))}" if isinstance(loaded, Mapping) else idle


def quantity(name: str, value: Any) -> str:
    """``value`` of parameter ``name`` in a readable unit (s as ms, m as mm), with the unit."""
    from sim2real.params import spec

    if value is None:
        return "–"
    unit = spec(name).unit
    if unit == "s":
        return f"{num(1e3 * value)} ms"
    if unit == "m":
        return f"{num(1e3 * value)} mm"
    return num(value) if unit == "-" else f"{num(value)} {unit}"

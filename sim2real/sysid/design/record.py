"""design.json read back: what a design forecast, for the report's forecast-against-achieved table.

``sim2real design`` writes the record (:meth:`sim2real.sysid.design.plan.Design.as_dict`); :func:`read_design_record`
checks the fields the comparison needs once and names the one that is wrong.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim2real.errors import DataError

#: design.json's format tag (``"format"``).
DESIGN_FORMAT = "sim2real.design/1"
#: A recorded trial is the designed push when every coordinate agrees within this (m, and m/s for the speed).
PUSH_MATCH_TOLERANCE = 5e-4


@dataclass(frozen=True)
class DesignRecord:
    """A design's forecast as written.

    Attributes
    ----------
    path : str
    source : str
        The prior's source (a fit.json, or the bounds).
    unknowns : tuple of str
    targets : tuple of str
    before, after : dict of str to float
        Each unknown's forecast 95 % interval width before and after all designed pushes (its unit).
    pushes : tuple of dict
        The designed pushes' coordinates (``distance``, ``lateral``, ``height``, ``speed``, ``end_x``,
        ``start_x``), in run order.
    noise : str
        How the forecast set the noise of a new trial, in words.
    """

    path: str
    source: str
    unknowns: tuple[str, ...]
    targets: tuple[str, ...]
    before: dict[str, float]
    after: dict[str, float]
    pushes: tuple[dict[str, float], ...]
    noise: str

    def recorded(self, pushes: list[dict[str, float] | None]) -> int:
        """How many designed pushes are among ``pushes`` (recorded trials' trial.json ``push`` with the start
        distance as ``distance``; each recorded trial counts once)."""
        left = [p for p in pushes if p is not None]
        found = 0
        for designed in self.pushes:
            match = next((k for k, p in enumerate(left)
                          if all(abs(float(p.get(key, math.nan)) - value) <= PUSH_MATCH_TOLERANCE
                                 for key, value in designed.items())), None)
            if match is not None:
                found += 1
                left.pop(match)
        return found


def _widths(entry: Any, unknowns: tuple[str, ...], what: str, path: str) -> dict[str, float]:
    if not isinstance(entry, dict):
        raise DataError(f"{path}: '{what}' is not a table of the unknowns' intervals")
    out = {}
    for name in unknowns:
        item = entry.get(name)
        width = item.get("width") if isinstance(item, dict) else None
        if not isinstance(width, (int, float)) or not math.isfinite(width) or width < 0:
            raise DataError(f"{path}: '{what}' has no width for {name}")
        out[name] = float(width)
    return out


def read_design_record(path: str | os.PathLike[str]) -> DesignRecord:
    """Read and check a design.json.

    Raises
    ------
    DataError
        Unreadable, not JSON, not a design record (its format tag), or a field the comparison needs is missing
        or of the wrong type (named).
    """
    text_path = str(path)
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise DataError(f"{text_path}: cannot read the design ({err.strerror or err})") from None
    except ValueError as err:
        raise DataError(f"{text_path}: not JSON ({err})") from None
    if not isinstance(document, dict) or document.get("format") != DESIGN_FORMAT:
        raise DataError(f"{text_path}: not a design written by 'sim2real design' (format {DESIGN_FORMAT})")
    found = document.get("prior")
    prior: dict[str, Any] = found if isinstance(found, dict) else {}
    unknowns = prior.get("unknowns")
    if not isinstance(unknowns, list) or not unknowns or not all(isinstance(u, str) for u in unknowns):
        raise DataError(f"{text_path}: 'prior.unknowns' is not a list of parameter names")
    names = tuple(unknowns)
    after = document.get("after")
    if not isinstance(after, list) or not after:
        raise DataError(f"{text_path}: 'after' holds no forecast")
    pushes = document.get("pushes")
    if not isinstance(pushes, list) or not all(isinstance(p, dict) and isinstance(p.get("push"), dict)
                                               for p in pushes):
        raise DataError(f"{text_path}: 'pushes' is not a list of designed pushes")
    try:
        coordinates = tuple({str(k): float(v) for k, v in p["push"].items()} for p in pushes)
    except (TypeError, ValueError):
        raise DataError(f"{text_path}: a designed push has a coordinate that is not a number") from None
    targets = document.get("targets")
    return DesignRecord(path=text_path, source=str(prior.get("source", "")), unknowns=names,
                        targets=tuple(t for t in targets if isinstance(t, str)) if isinstance(targets, list) else names,
                        before=_widths(document.get("before"), names, "before", text_path),
                        after=_widths(after[-1], names, "after", text_path), pushes=coordinates,
                        noise=str(prior.get("noise", "")))

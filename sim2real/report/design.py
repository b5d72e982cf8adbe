"""The report's design section: what ``sim2real design`` forecast against what the refit achieved.

A design forecasts each parameter's 95 % interval after its pushes (linearised; design.json,
:class:`~sim2real.sysid.design.DesignRecord`). After those pushes are recorded and fitted, this section puts the
forecast beside the refit's interval (``report --design design.json --fit refit.json``) and counts how many of the
designed pushes the runs hold (each trial's recorded ``push`` and start distance against the designed ones).
"""

from __future__ import annotations

from collections.abc import Sequence

from sim2real.report.document import Block, Heading, Note, Paragraph, Table
from sim2real.report.fit_tables import FitSummary
from sim2real.sysid.design import DesignRecord
from sim2real.trials import TrialRecord

#: An achieved interval this many times the forecast or more is named as a forecast that was optimistic.
OPTIMISTIC_RATIO = 2.0


def recorded_pushes(trials: Sequence[TrialRecord]) -> list[dict[str, float] | None]:
    """Each trial's push as recorded (trial.json ``push``, with its start distance), None without one."""
    out: list[dict[str, float] | None] = []
    for trial in trials:
        push, distance = trial.info.push, trial.info.initial_distance_m
        out.append(None if push is None or distance is None else {**push, "distance": float(distance)})
    return out


def _achieved(fits: Sequence[FitSummary], name: str) -> float | None:
    """The interval width of ``name`` in the last fit that fits it (None: no fit has an interval for it)."""
    for fit in reversed(fits):
        interval = fit.ci95.get(name)
        if interval is not None:
            return float(interval[1] - interval[0])
    return None


def design_blocks(record: DesignRecord, fits: Sequence[FitSummary], trials: Sequence[TrialRecord]) -> list[Block]:
    """The section: the forecast per parameter beside the achieved interval, and how many designed pushes the
    runs recorded."""
    blocks: list[Block] = [Heading("Designed pushes: forecast and achieved"),
                           Paragraph(f"From {record.path}: {len(record.pushes)} pushes designed from {record.source}. "
                                     f"The forecast is linearised ({record.noise}); the achieved interval is the "
                                     f"refit's.")]
    found = record.recorded(recorded_pushes(trials))
    blocks.append(Paragraph(f"{found} of the {len(record.pushes)} designed pushes are among the runs' trials."))
    if found < len(record.pushes):
        blocks.append(Note("Not every designed push was recorded: the achieved intervals are of other pushes too "
                           "(or fewer of them)."))
    rows, optimistic = [], []
    for name in record.unknowns:
        achieved = _achieved(fits, name)
        forecast = record.after[name]
        ratio = achieved / forecast if achieved is not None and forecast > 0 else None
        if ratio is not None and ratio >= OPTIMISTIC_RATIO and name in record.targets:
            optimistic.append(f"{name} ({ratio:.3g}x)")
        rows.append((name, "yes" if name in record.targets else "", f"{record.before[name] / 2:.4g}",
                     f"{forecast / 2:.4g}", "-" if achieved is None else f"{achieved / 2:.4g}",
                     "-" if ratio is None else f"{ratio:.3g}"))
    blocks.append(Table(("parameter", "target", "before ±", "forecast ±", "achieved ±", "achieved / forecast"),
                        tuple(rows), "Half-widths of the 95 % intervals (SI units): the design's prior, its forecast "
                                     "after the designed pushes, the refit's", css_class="design"))
    if not fits:
        blocks.append(Note("No fit given (--fit): nothing achieved to compare the forecast with."))
    if optimistic:
        blocks.append(Note(f"The forecast was optimistic for {', '.join(optimistic)}: the refit's interval is at "
                           f"least {OPTIMISTIC_RATIO:g}x its forecast (a push near a threshold, values far from "
                           f"the ones the design was linearised at, or noisier trials than the fit's)."))
    return blocks

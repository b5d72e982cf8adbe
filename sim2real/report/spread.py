"""The outcome spread a sweep predicts, against the real outcomes (``report --sweep DIR``).

A sweep of standard pushes over parameter sets drawn from a fit (``sim2real sample`` then
``sim2real sweep --samples``) predicts, per start distance, a distribution of outcomes: the
probability that the box flips and the spread of its final distance from the arm base. This
module sets the real trials of a run beside it: each real standard push is matched to the
sweep distance nearest its measured start (within :data:`MATCH_TOLERANCE`), and the table says
how many real flips there were and how many real final distances fell inside the sweep's
central 95 % range (the 2.5 and 97.5 % quantiles of its rows, which assume nothing about their
shape). Positions are the box centre's x in the arm base frame, m (shown in cm).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.report.cells import cm
from sim2real.report.document import Block, Figure, Heading, Note, Paragraph, Table
from sim2real.report.figures import spread_figure
from sim2real.report.tables import ExperimentTable
from sim2real.trials.sweep import OUTCOMES_CSV, DistanceSummary

#: Largest |measured start − sweep distance| for a real trial to count at that distance, m.
MATCH_TOLERANCE = 0.015


@dataclass(frozen=True)
class SpreadRow:
    """Predicted and real outcomes at one sweep distance (m; None where there is nothing).

    Attributes
    ----------
    distance : float
        Start distance of the sweep's pushes, m.
    samples : int
        Sweep rows simulated without error at this distance.
    flip_probability : float
        Share of those rows whose box flipped.
    flip_low, flip_high : float
        Wilson 95 % interval of ``flip_probability`` (sampling error of the sweep only).
    final_low, final_median, final_high : float
        2.5, 50 and 97.5 % quantiles of the final x over the rows, m (NaN without rows).
    real_final : tuple of float
        Final x of each matched complete real trial, m.
    real_flips : int
        Of the matched real trials, how many flipped.
    """

    distance: float
    samples: int
    flip_probability: float
    flip_low: float
    flip_high: float
    final_low: float
    final_median: float
    final_high: float
    real_final: tuple[float, ...]
    real_flips: int

    @property
    def real_inside(self) -> int:
        """Real final distances inside the sweep's central 95 % range."""
        return sum(self.final_low <= x <= self.final_high for x in self.real_final)


def read_sweep(sweep_dir: str | Path) -> dict[float, tuple[np.ndarray, np.ndarray]]:
    """Final x (m) and flipped (bool) of the error-free rows of ``sweep_dir/outcomes.csv``, per distance.

    Raises
    ------
    Sim2RealError
        No outcomes.csv, or a table without the sweep's columns or with unreadable numbers.
    """
    table = Path(sweep_dir) / OUTCOMES_CSV
    if not table.is_file():
        raise Sim2RealError(f"--sweep {sweep_dir}: no {OUTCOMES_CSV} in it (a directory written by sim2real sweep)")
    try:
        with table.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = {"distance", "final_x", "flipped", "error"} - set(reader.fieldnames or ())
            if missing:
                raise Sim2RealError(f"--sweep {table}: not a sweep table (no column {', '.join(sorted(missing))})")
            rows: dict[float, tuple[list[float], list[bool]]] = {}
            for row in reader:
                if row["error"] or row["final_x"] in ("", None):
                    continue
                finals, flips = rows.setdefault(float(row["distance"]), ([], []))
                finals.append(float(row["final_x"]))
                flips.append(row["flipped"] == "1")
    except (ValueError, UnicodeDecodeError, csv.Error) as err:
        raise Sim2RealError(f"--sweep {table}: unreadable ({' '.join(str(err).split())[:200]})") from None
    return {d: (np.array(f, dtype=float), np.array(k, dtype=bool)) for d, (f, k) in sorted(rows.items())}


def spread_rows(sweep: dict[float, tuple[np.ndarray, np.ndarray]], table: ExperimentTable) -> list[SpreadRow]:
    """One :class:`SpreadRow` per sweep distance, with the complete real standard pushes of ``table``."""
    out = []
    distances = list(sweep)
    matched: dict[float, list[tuple[float, bool]]] = {d: [] for d in distances}
    for row in table.rows:
        if (not row.complete or not row.standard_push or row.start_m is None or row.real_final_m is None
                or not distances):
            continue
        nearest = min(distances, key=lambda d: abs(d - row.start_m))
        if abs(nearest - row.start_m) <= MATCH_TOLERANCE:
            matched[nearest].append((row.real_final_m, bool(row.real_flip)))
    for distance, (finals, flips) in sweep.items():
        low, high = DistanceSummary(distance, len(flips), int(flips.sum()), math.nan, math.nan).flip_interval()
        quantiles = np.quantile(finals, [0.025, 0.5, 0.975]) if finals.size else np.full(3, math.nan)
        real = matched[distance]
        out.append(SpreadRow(distance, int(finals.size), float(flips.mean()) if flips.size else math.nan, low, high,
                             float(quantiles[0]), float(quantiles[1]), float(quantiles[2]),
                             tuple(x for x, _ in real), sum(flag for _, flag in real)))
    return out


def spread_blocks(sweep_dir: str | Path, table: ExperimentTable) -> list[Block]:
    """Report section: the sweep's predicted flip probability and final-distance range per distance,
    the real outcomes beside them, and the figure."""
    sweep = read_sweep(sweep_dir)
    blocks: list[Block] = [Heading(f"Predicted spread ({Path(sweep_dir).name}) against the real outcomes")]
    if not sweep:
        return [*blocks, Note(f"{sweep_dir}: the sweep has no rows without errors")]
    rows = spread_rows(sweep, table)
    blocks.append(Paragraph(
        f"Each distance: the sweep's rows (simulated standard pushes, one per parameter set) and the complete real "
        f"standard pushes of run '{table.label}' whose measured start lies within {100 * MATCH_TOLERANCE:.1f} cm of "
        "it. The flip interval is the sweep's sampling error only (Wilson, 95 %); the final-x range is the central "
        "95 % of the sweep's rows."))
    body = []
    for row in rows:
        real = (", ".join(f"{100 * x:.1f}" for x in row.real_final)) if row.real_final else "—"
        body.append((f"{100 * row.distance:.1f}", str(row.samples),
                     f"{row.flip_probability:.2f} [{row.flip_low:.2f}, {row.flip_high:.2f}]",
                     f"{cm(row.final_median)} [{cm(row.final_low)}, {cm(row.final_high)}]",
                     str(len(row.real_final)), f"{row.real_flips}/{len(row.real_final)}" if row.real_final else "—",
                     real, f"{row.real_inside}/{len(row.real_final)}" if row.real_final else "—"))
    blocks.append(Table(("start (cm)", "sweep rows", "predicted flip probability [95 %]",
                         "predicted final x, cm: median [95 % range]", "real trials", "real flips",
                         "real final x (cm)", "real inside the range"), tuple(body)))
    real_total = sum(len(r.real_final) for r in rows)
    if real_total == 0:
        blocks.append(Note(f"run '{table.label}' has no complete real standard push at the sweep's distances"))
    else:
        inside = sum(r.real_inside for r in rows)
        blocks.append(Paragraph(f"{inside} of {real_total} real final distances lie inside the predicted 95 % "
                                "range."))
    png = spread_figure([r.distance for r in rows], [sweep[r.distance][0] for r in rows],
                        [(r.final_low, r.final_high) for r in rows], [r.real_final for r in rows])
    blocks.append(Figure("spread.png", png,
                         "Final box x per start distance: sweep rows (grey; bar: central 95 %) and real trials."))
    return blocks

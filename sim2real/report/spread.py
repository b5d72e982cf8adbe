"""The outcome spread a sweep predicts, against the real outcomes (``report --sweep DIR``).

A sweep of standard pushes over parameter sets drawn from a fit (``sim2real sample`` then
``sim2real sweep --samples``) predicts, per start distance, a distribution of outcomes: the
probability that the box flips and the spread of its final position. This module sets the real
trials of a run beside it: each real standard push is matched to the sweep distance nearest its
measured start (within :data:`MATCH_TOLERANCE`), and the table says how many real flips there were
and how many real final distances fell inside the predicted band.

The sweep's rows hold only what the parameters leave open, not the model's discrepancy. When the
sweep keeps the fit's band calibration (sweep.json ``band_calibration``, copied from samples.json by
``sweep --samples DIR``, from fit.json by ``sample``), the band is the calibrated one of
:mod:`sim2real.sysid.prediction.bands`: the rows' outcomes ``[final x (m), final y (m), yaw since the start
(deg)]`` fall into modes (:func:`~sim2real.sysid.prediction.bands.find_modes`), each widened to
``centre ± q √(s² + τ²)`` (:func:`~sim2real.sysid.prediction.bands.mode_boxes`), at the calibration's level.
Without one the band is the central 95 % of the rows (the 2.5 and 97.5 % quantiles, which assume
nothing about their shape), said to be parameter-only. Real trials are judged on their final x
(the run's experiment table holds the final x of a standard push). Positions are the box centre in
the arm base frame, m (shown in cm).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.report.cells import cm
from sim2real.report.document import Block, Figure, Heading, Note, Paragraph, Table
from sim2real.report.figures import spread_figure
from sim2real.report.tables import ExperimentTable
from sim2real.sysid.files import BAND_CALIBRATION_KEY
from sim2real.sysid.prediction import (
    OUTCOMES_CSV,
    SWEEP_JSON,
    BandCalibration,
    DistanceSummary,
    Mode,
    find_modes,
    mode_boxes,
    nearest_mode,
)

#: Largest |measured start − sweep distance| for a real trial to count at that distance, m.
MATCH_TOLERANCE = 0.015
#: Heading of the box's x axis at the start of every standard push, rad: it stands with its body axes
#: along the base axes (:func:`sim2real.control.sim_platform.box_at_distance`). The sweep's ``final_yaw`` (rad) less
#: this is the yaw since the start.
STANDARD_START_YAW_RAD = 0.0
#: Columns of outcomes.csv this module reads.
COLUMNS = ("distance", "final_x", "final_y", "final_yaw", "flipped", "error")


@dataclass(frozen=True)
class SweepOutcomes:
    """The error-free rows of a sweep at one start distance.

    Attributes
    ----------
    final : ndarray, shape (n, 3)
        Final box centre ``x``, ``y`` (m, arm base frame) and the yaw since the start (deg, in
        [−180, 180)): the heading of the box's x axis (``final_yaw``) less its start heading.
    flipped : ndarray of bool, shape (n,)
        Whether the row's box flipped.
    """

    final: np.ndarray
    flipped: np.ndarray

    @property
    def yaw_known(self) -> bool:
        """Whether the yaw since the start is known for every row: a flipped box's x axis points up or
        down, so its heading (``final_yaw``) is not its twist since the start."""
        return not bool(self.flipped.any())

    def mode_points(self) -> np.ndarray:
        """``(n, 3)`` points the modes are found on: :attr:`final`, with the yaw left out (0) when it is
        not known for every row (a constant coordinate never splits)."""
        if self.yaw_known:
            return self.final
        return np.column_stack([self.final[:, :2], np.zeros(self.final.shape[0])])


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
        2.5, 50 and 97.5 % quantiles of the final x over the rows, m (NaN without rows): the
        parameter-only range.
    real_final : tuple of float
        Final x of each matched complete real trial, m.
    real_flips : int
        Of the matched real trials, how many flipped.
    modes : tuple of Mode
        Modes of the rows' outcomes (x m, y m, yaw deg; :meth:`SweepOutcomes.mode_points`).
    mode_flips : tuple of float
        Per mode, the share of its rows (each row counted in its nearest mode) that flipped.
    boxes : ndarray, shape (K, 3, 2), or None
        Per mode and coordinate ``[low, high]`` of the calibrated band (m, m, deg); None without a
        calibration.
    yaw_known : bool
        Whether the yaw coordinate is known for every row (:attr:`SweepOutcomes.yaw_known`).
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
    modes: tuple[Mode, ...] = ()
    mode_flips: tuple[float, ...] = ()
    boxes: np.ndarray | None = None
    yaw_known: bool = True

    @property
    def calibrated(self) -> bool:
        """Whether the band is the calibrated one."""
        return self.boxes is not None

    def final_band(self) -> list[tuple[float, float]]:
        """The predicted band of final x, m: the union of the modes' calibrated x intervals (overlapping
        ones merged, ascending), or the parameter-only range."""
        if self.boxes is None:
            return [(self.final_low, self.final_high)]
        return merged_intervals([(float(b[0, 0]), float(b[0, 1])) for b in self.boxes])

    @property
    def real_inside(self) -> int:
        """Real final distances inside the predicted band (:meth:`final_band`)."""
        band = self.final_band()
        return sum(any(low <= x <= high for low, high in band) for x in self.real_final)

    @property
    def parameter_inside(self) -> int:
        """Real final distances inside the sweep's central 95 % range (parameter-only)."""
        return sum(self.final_low <= x <= self.final_high for x in self.real_final)

    @property
    def flip_split(self) -> bool:
        """The modes split flip from no flip: some mode's rows mostly flipped, another's mostly not."""
        return len(self.modes) > 1 and any(f > 0.5 for f in self.mode_flips) and any(f < 0.5 for f in self.mode_flips)


def merged_intervals(intervals: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """``[low, high]`` intervals with overlapping ones merged, ascending."""
    merged: list[tuple[float, float]] = []
    for low, high in sorted(intervals):
        if merged and low <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


def read_sweep(sweep_dir: str | Path) -> dict[float, SweepOutcomes]:
    """The error-free rows of ``sweep_dir/outcomes.csv``, per distance (ascending).

    Raises
    ------
    Sim2RealError
        No outcomes.csv, or a table without the sweep's columns or with unreadable numbers.
    """
    table = Path(sweep_dir) / OUTCOMES_CSV
    if not table.is_file():
        raise Sim2RealError(f"sweep {sweep_dir}: no {OUTCOMES_CSV} in it (a directory written by sim2real sweep)",
                            option="sweep")
    try:
        with table.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = set(COLUMNS) - set(reader.fieldnames or ())
            if missing:
                raise Sim2RealError(f"sweep {table}: not a sweep table (no column {', '.join(sorted(missing))})",
                                    option="sweep")
            rows: dict[float, tuple[list[list[float]], list[bool]]] = {}
            for row in reader:
                if row["error"] or row["final_x"] in ("", None):
                    continue
                finals, flips = rows.setdefault(float(row["distance"]), ([], []))
                heading = math.degrees(float(row["final_yaw"]) - STANDARD_START_YAW_RAD)
                finals.append([float(row["final_x"]), float(row["final_y"]), (heading + 180.0) % 360.0 - 180.0])
                flips.append(row["flipped"] == "1")
    except (ValueError, UnicodeDecodeError, csv.Error) as err:
        raise Sim2RealError(f"sweep {table}: unreadable ({' '.join(str(err).split())[:200]})",
                            option="sweep") from None
    return {d: SweepOutcomes(np.array(f, dtype=float).reshape(-1, 3), np.array(k, dtype=bool))
            for d, (f, k) in sorted(rows.items())}


def sweep_calibration(sweep_dir: str | Path) -> BandCalibration | None:
    """The band calibration a sweep keeps (sweep.json ``band_calibration``, at its own level); None
    without one (a sweep not over a samples directory, a fit without one, no sweep.json).

    Raises
    ------
    Sim2RealError
        sweep.json is not a JSON object, or its calibration is invalid (one line).
    """
    from sim2real.paths import read_text_file

    path = Path(sweep_dir) / SWEEP_JSON
    if not path.is_file():
        return None
    try:
        document = json.loads(read_text_file(path, SWEEP_JSON))
    except ValueError:
        raise Sim2RealError(f"sweep {path}: not valid JSON", option="sweep") from None
    stored = document.get(BAND_CALIBRATION_KEY) if isinstance(document, dict) else None
    if stored is None:
        return None
    try:
        return BandCalibration.from_dict(stored, f"sweep {path}: {BAND_CALIBRATION_KEY}")
    except ValueError as err:
        raise Sim2RealError(str(err), option="sweep") from None


def _modes(outcomes: SweepOutcomes) -> tuple[tuple[Mode, ...], tuple[float, ...]]:
    """The modes of the rows, and per mode the flipped share of the rows nearest it."""
    points = outcomes.mode_points()
    modes = find_modes(points)
    if not modes:
        return (), ()
    nearest = np.array([nearest_mode(p, modes, np.zeros(3))[0] for p in points])
    flips = tuple(float(outcomes.flipped[nearest == j].mean()) if np.any(nearest == j) else math.nan
                  for j in range(len(modes)))
    return modes, flips


def spread_rows(sweep: dict[float, SweepOutcomes], table: ExperimentTable,
                calibration: BandCalibration | None = None) -> list[SpreadRow]:
    """One :class:`SpreadRow` per sweep distance, with the complete real standard pushes of ``table``;
    the band is calibrated by ``calibration`` (None: parameter-only)."""
    out = []
    distances = list(sweep)
    matched: dict[float, list[tuple[float, bool]]] = {d: [] for d in distances}
    for row in table.rows:
        if (not row.complete or not row.standard_push or row.start_m is None or row.real_final_m is None
                or not distances):
            continue
        start_m = row.start_m
        nearest = min(distances, key=lambda d: abs(d - start_m))
        if abs(nearest - start_m) <= MATCH_TOLERANCE:
            matched[nearest].append((row.real_final_m, bool(row.real_flip)))
    for distance, outcomes in sweep.items():
        finals, flips = outcomes.final[:, 0], outcomes.flipped
        low, high = DistanceSummary(distance, len(flips), int(flips.sum()), math.nan, math.nan).flip_interval()
        quantiles = np.quantile(finals, [0.025, 0.5, 0.975]) if finals.size else np.full(3, math.nan)
        modes, mode_flips = _modes(outcomes)
        boxes = mode_boxes(modes, calibration) if calibration is not None and modes else None
        real = matched[distance]
        out.append(SpreadRow(distance, int(finals.size), float(flips.mean()) if flips.size else math.nan, low, high,
                             float(quantiles[0]), float(quantiles[1]), float(quantiles[2]),
                             tuple(x for x, _ in real), sum(flag for _, flag in real), modes, mode_flips, boxes,
                             outcomes.yaw_known))
    return out


def _flip_word(share: float) -> str:
    if share == 0:
        return "upright"
    return "flipped" if share == 1 else f"{100 * share:.0f} % flipped"


def modes_text(row: SpreadRow) -> str:
    """The modes of a distance's rows: probability, flip and final x (cm) of each; ``one`` for a single mode."""
    if len(row.modes) < 2:
        return "one"
    return ", ".join(f"{m.probability:.2f} {_flip_word(f)} (x {cm(m.centre[0])})"
                     for m, f in zip(row.modes, row.mode_flips, strict=True))


def _interval(low: float, high: float, scale: float) -> str:
    return f"[{scale * low:.1f}, {scale * high:.1f}]"


def band_text(row: SpreadRow) -> str:
    """The predicted band of final x, cm (each of its intervals)."""
    return " ∪ ".join(_interval(low, high, 100.0) if math.isfinite(low) else "[—]" for low, high in row.final_band())


def y_yaw_text(row: SpreadRow) -> str:
    """Per mode, the calibrated band of final y (cm) and of the yaw since the start (deg; n/a when some
    rows flipped); ``—`` without a calibration."""
    if row.boxes is None:
        return "—"
    parts = []
    for box in row.boxes:
        yaw = _interval(box[2, 0], box[2, 1], 1.0) if row.yaw_known else "n/a"
        parts.append(f"{_interval(box[1, 0], box[1, 1], 100.0)} / {yaw}")
    return "; ".join(parts)


def band_words(calibration: BandCalibration | None) -> str:
    """What the predicted band of final x is made of, in words."""
    if calibration is None:
        return ("The final-x range is the central 95 % of the sweep's rows: parameter-only (NOT CALIBRATED): it "
                "holds what the parameters leave open, not the model's discrepancy (the sweep keeps no band "
                "calibration: its samples' fit had none, or it is not a sweep over a 'sim2real sample' directory).")
    tau = calibration.discrepancy
    level = f"{100 * calibration.level:g} %"
    verdict = ("" if calibration.calibrated else
               f" NOT CALIBRATED at {level}: {calibration.trials} calibration trial(s) guarantee "
               f"{100 * calibration.guaranteed_level:.0f} % only.")
    return (f"The final-x band is calibrated ({level}, from the fit's band calibration): the rows' outcomes (final x, "
            "y and the yaw since the start) fall into modes, each widened to its centre ± q √(s² + τ²), with s the "
            f"spread of the mode's rows (the parameters), τ the model's discrepancy the fit estimated on "
            f"{calibration.trials} held-out trial(s) (x {1000 * tau[0]:.3g} mm, y {1000 * tau[1]:.3g} mm, yaw "
            f"{tau[2]:.3g} deg) and q = {calibration.quantile:.3g} their split conformal quantile (guaranteed level "
            f"{100 * calibration.guaranteed_level:.0f} %). Real trials are judged on final x; the yaw band is n/a "
            "where rows flipped (a flipped box's heading is not its yaw since the start). The parameter-only range "
            f"(the rows' central 95 %) is shown beside it.{verdict}")


def _table(rows: Sequence[SpreadRow], calibration: BandCalibration | None) -> Table:
    body = []
    for row in rows:
        real = (", ".join(f"{100 * x:.1f}" for x in row.real_final)) if row.real_final else "—"
        count = len(row.real_final)
        cells = [f"{100 * row.distance:.1f}", str(row.samples),
                 f"{row.flip_probability:.2f} [{row.flip_low:.2f}, {row.flip_high:.2f}]", modes_text(row),
                 f"{cm(row.final_median)} {band_text(row)}"]
        if calibration is not None:
            cells += [_interval(row.final_low, row.final_high, 100.0), y_yaw_text(row)]
        inside = f"{row.real_inside}/{count}" if count else "—"
        if calibration is not None and count:
            inside += f" ({row.parameter_inside}/{count})"
        body.append((*cells, str(count), f"{row.real_flips}/{count}" if count else "—", real, inside))
    header: tuple[str, ...]
    if calibration is None:
        header = ("start (cm)", "sweep rows", "predicted flip probability [95 %]", "modes: probability (final x, cm)",
                  "predicted final x, cm: median [95 % range, parameter-only]", "real trials", "real flips",
                  "real final x (cm)", "real inside the range")
    else:
        level = f"{100 * calibration.level:g} %"
        header = ("start (cm)", "sweep rows", "predicted flip probability [95 %]", "modes: probability (final x, cm)",
                  f"predicted final x, cm: median [calibrated {level} band]", "parameter-only 95 % range (cm)",
                  f"calibrated {level} band per mode: final y (cm) / yaw (deg)", "real trials", "real flips",
                  "real final x (cm)", "real inside the band (the parameter-only range)")
    return Table(header, tuple(body))


def _summary(rows: Sequence[SpreadRow], calibration: BandCalibration | None) -> str:
    inside = sum(r.real_inside for r in rows)
    total = sum(len(r.real_final) for r in rows)
    if calibration is None:
        return (f"{inside} of {total} real final distances lie inside the predicted 95 % range (parameter-only, not "
                "calibrated).")
    return (f"{inside} of {total} real final distances lie inside the calibrated {100 * calibration.level:g} % band; "
            f"the parameter-only 95 % range holds {sum(r.parameter_inside for r in rows)}.")


def _split_words(rows: Sequence[SpreadRow]) -> str | None:
    """The distances whose modes split flip from no flip, with their modes (None when none does)."""
    split = [r for r in rows if r.flip_split]
    if not split:
        return None
    return ("The predicted outcomes split into modes that flip or not: "
            + "; ".join(f"at {100 * r.distance:.1f} cm {modes_text(r)}" for r in split)
            + ". The flip probability is the share of rows that flipped; the band holds each mode.")


def spread_blocks(sweep_dir: str | Path, table: ExperimentTable) -> list[Block]:
    """Report section: the sweep's predicted flip probability and final-distance band per distance (calibrated
    when the sweep keeps the fit's band calibration), the real outcomes beside them, and the figure."""
    sweep = read_sweep(sweep_dir)
    calibration = sweep_calibration(sweep_dir)
    blocks: list[Block] = [Heading(f"Predicted spread ({Path(sweep_dir).name}) against the real outcomes")]
    if not sweep:
        return [*blocks, Note(f"{sweep_dir}: the sweep has no rows without errors")]
    rows = spread_rows(sweep, table, calibration)
    blocks.append(Paragraph(
        f"Each distance: the sweep's rows (simulated standard pushes, one per parameter set) and the complete real "
        f"standard pushes of run '{table.label}' whose measured start lies within {100 * MATCH_TOLERANCE:.1f} cm of "
        "it. The flip interval is the sweep's sampling error only (Wilson, 95 %). " + band_words(calibration)))
    blocks.append(_table(rows, calibration))
    split = _split_words(rows)
    if split is not None:
        blocks.append(Paragraph(split))
    if sum(len(r.real_final) for r in rows) == 0:
        blocks.append(Note(f"run '{table.label}' has no complete real standard push at the sweep's distances"))
    else:
        blocks.append(Paragraph(_summary(rows, calibration)))
    png = spread_figure([r.distance for r in rows], [sweep[r.distance].final[:, 0] for r in rows],
                        [(r.final_low, r.final_high) for r in rows], [r.real_final for r in rows],
                        [r.final_band() for r in rows] if calibration is not None else None)
    bands = "; orange: the calibrated band" if calibration is not None else ""
    blocks.append(Figure("spread.png", png, f"Final box x per start distance: sweep rows (grey; bar: central 95 %, "
                                            f"parameter-only{bands}) and real trials."))
    return blocks

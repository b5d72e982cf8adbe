"""Report tables: the experiment table (sim vs real per trial), before-vs-after (the fit's tables are in
:mod:`sim2real.report.fit_tables`).

Everything here is pure data: trial records and fit.json content in, rows and summary
numbers out. Lengths are metres in the data; formatted, the sim-vs-real errors are millimetres
and the x distances of the standard push (Dojo's Table IV form) centimetres. Frames: every
position is in the arm base frame (x away from the arm, z up; the table plane is base x-y).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim2real.report.cells import cm, degrees, mm, number_or_none, yes_no
from sim2real.trials import (
    PLATFORMS,
    OutcomeErrors,
    PoseSeries,
    TrialRecord,
    box_size_from_meta,
    compute_outcome,
    outcome_errors,
    path_rms,
)


def trial_outcomes(trial: TrialRecord) -> dict[str, dict[str, Any]]:
    """Per-platform outcome dicts: trial.json ``outcomes``, else computed from the box poses."""
    stored = trial.info.outcomes
    outcomes: dict[str, dict[str, Any]] = {}
    for ns in PLATFORMS:
        if isinstance(stored.get(ns), Mapping):
            outcomes[ns] = dict(stored[ns])
            continue
        platform = trial.platform(ns)
        if platform is not None and platform.box_pose is not None and len(platform.box_pose) > 0:
            outcomes[ns] = compute_outcome(platform.box_pose, box_size_from_meta(trial.meta)).as_dict()
    return outcomes


def box_pose(trial: TrialRecord, ns: str) -> PoseSeries | None:
    """The box pose series of platform ``ns`` (None when it recorded none)."""
    platform = trial.platform(ns)
    if platform is None or platform.box_pose is None or len(platform.box_pose) == 0:
        return None
    return platform.box_pose


#: trial.json ``mode`` of recordings from outside this toolkit's push experiment.
IMPORTED_MODES: tuple[str, ...] = ("import", "cube_toss")


def is_standard_push(trial: TrialRecord) -> bool:
    """Whether a trial is this toolkit's standard push, in which distances along base x mean something.

    The standard push (the experiment, the stand-in, ``simulate --distance``, their replays)
    places the box on the base x axis at a start distance from the arm base and pushes it along
    +x, so its start and final x and their sim-vs-real gap are Dojo's Table IV numbers. Another
    lab's recording (a probe pushing a block in any direction) is not: there x says little (a
    push along y moves the box 18 cm and its x by millimetres).

    Parameters
    ----------
    trial : TrialRecord
        Judged from trial.json: the experiment's ``requested_start_m`` says yes; an import (``mode``
        ``import`` or ``cube_toss``, or an ``import`` or ``object`` section, which replays of
        imported trials keep) says no; otherwise a start distance ``initial_distance_m`` says yes.

    Returns
    -------
    bool
    """
    info = trial.info
    requested = info.requested_start_m
    if isinstance(requested, (list, tuple)) and requested:
        return True
    if info.mode in IMPORTED_MODES or info.imported is not None or info.object is not None:
        return False
    return info.initial_distance_m is not None


@dataclass(frozen=True)
class ExperimentRow:
    """One trial in the experiment table (m and deg; None where the data lacks it).

    Attributes
    ----------
    trial : str
        Trial name.
    start_m : float or None
        x of the box centre at the start (distance from the arm base along base x), m.
    real_final_m, sim_final_m : float or None
        x of the box centre at the end, per platform, m.
    real_flip, sim_flip : bool or None
        Whether the box changed the face it rests on, per platform.
    complete : bool
        False for an interrupted trial (listed, not counted in the statistics).
    real_source : str or None
        The run the real outcome came from when it is borrowed from another run.
    standard_push : bool
        The trial is the standard push along base x (:func:`is_standard_push`): only then is
        :attr:`gap_m` given.
    final_error_xy_m, final_error_m : float or None
        Distance between the sim and the real final box centre in the table plane (base x, y)
        and in 3-D, m (:func:`sim2real.trials.outcome_errors`).
    yaw_error_deg : float or None
        ``|sim − real|`` twist of the box about world z since the start, wrapped to [0, 180], deg.
    path_rms_m : float or None
        RMS 3-D distance between the sim and the real box centre over the time span both
        platforms recorded box poses in (:func:`sim2real.trials.path_rms`), m; None without
        both pose series (e.g. a real outcome stored without its poses).
    obj : str or None
        The trial's object label (trial.json ``object.name``, e.g. ``"steel"``), None without one.
    """

    trial: str
    start_m: float | None
    real_final_m: float | None
    sim_final_m: float | None
    real_flip: bool | None
    sim_flip: bool | None
    complete: bool = True
    real_source: str | None = None
    standard_push: bool = True
    final_error_xy_m: float | None = None
    final_error_m: float | None = None
    yaw_error_deg: float | None = None
    path_rms_m: float | None = None
    obj: str | None = None

    @property
    def gap_m(self) -> float | None:
        """Final-distance gap along base x, ``|sim final x − real final x|``, m (standard pushes only)."""
        if not self.standard_push or self.real_final_m is None or self.sim_final_m is None:
            return None
        return abs(self.sim_final_m - self.real_final_m)

    @property
    def agree(self) -> bool | None:
        """Flip agreement between sim and real (None if either is unknown)."""
        if self.real_flip is None or self.sim_flip is None:
            return None
        return self.real_flip == self.sim_flip


@dataclass(frozen=True)
class ExperimentTable:
    """The experiment table of one run, with its summary statistics.

    The statistics (means and maxima of the errors, flip agreement) count complete trials only:
    an interrupted trial (trial.json ``complete: false``) is listed in the table, marked, but its
    box stopped where the recording did, so its errors and flip say nothing about the simulator.
    Each statistic is over the complete rows that have the number (None when none has it).
    """

    label: str
    rows: tuple[ExperimentRow, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def counted(self) -> tuple[ExperimentRow, ...]:
        """The rows the statistics use: complete trials."""
        return tuple(r for r in self.rows if r.complete)

    @property
    def excluded(self) -> tuple[str, ...]:
        """Names of listed trials kept out of the statistics (incomplete)."""
        return tuple(r.trial for r in self.rows if not r.complete)

    @property
    def standard_pushes(self) -> bool:
        """Some row is a standard push along x: the table shows the x-distance columns."""
        return any(r.standard_push for r in self.rows)

    def values(self, name: str) -> np.ndarray:
        """One number of every complete row that has it, e.g. ``"final_error_xy_m"`` or ``"gap_m"``: (K,)."""
        found = (getattr(r, name) for r in self.counted)
        return np.array([v for v in found if v is not None], dtype=float)

    def _mean(self, name: str) -> float | None:
        values = self.values(name)
        return float(np.mean(values)) if values.size else None

    def _max(self, name: str) -> float | None:
        values = self.values(name)
        return float(np.max(values)) if values.size else None

    @property
    def gaps_m(self) -> np.ndarray:
        """x gaps (K,) of the complete standard pushes that have both platforms, m."""
        return self.values("gap_m")

    @property
    def mean_gap_m(self) -> float | None:
        """Mean final-distance gap along x of the standard pushes, m (None without such rows with both
        platforms; imported pushes in other directions do not count)."""
        return self._mean("gap_m")

    @property
    def max_gap_m(self) -> float | None:
        """Largest final-distance gap along x of the standard pushes, m."""
        return self._max("gap_m")

    @property
    def mean_final_error_xy_m(self) -> float | None:
        """Mean sim-vs-real final position error in the table plane, m."""
        return self._mean("final_error_xy_m")

    @property
    def max_final_error_xy_m(self) -> float | None:
        """Largest sim-vs-real final position error in the table plane, m."""
        return self._max("final_error_xy_m")

    @property
    def mean_final_error_m(self) -> float | None:
        """Mean sim-vs-real final position error in 3-D, m."""
        return self._mean("final_error_m")

    @property
    def max_final_error_m(self) -> float | None:
        """Largest sim-vs-real final position error in 3-D, m."""
        return self._max("final_error_m")

    @property
    def mean_yaw_error_deg(self) -> float | None:
        """Mean sim-vs-real yaw error, deg."""
        return self._mean("yaw_error_deg")

    @property
    def max_yaw_error_deg(self) -> float | None:
        """Largest sim-vs-real yaw error, deg."""
        return self._max("yaw_error_deg")

    @property
    def mean_path_rms_m(self) -> float | None:
        """Mean over trials of the RMS distance between the sim and real box paths, m."""
        return self._mean("path_rms_m")

    @property
    def max_path_rms_m(self) -> float | None:
        """Largest per-trial RMS distance between the sim and real box paths, m."""
        return self._max("path_rms_m")

    @property
    def flip_agreement(self) -> float | None:
        """Fraction of complete rows (with both flips known) where sim and real agree on the flip."""
        agree = [r.agree for r in self.counted if r.agree is not None]
        return float(np.mean(agree)) if agree else None

    def has(self, ns: str) -> bool:
        """True if any row has a final box position for platform ``ns``."""
        attr = "real_final_m" if ns == "real" else "sim_final_m"
        return any(getattr(r, attr) is not None for r in self.rows)


def _object_label(trial: TrialRecord) -> str | None:
    """The trial's object label (trial.json ``object.name``), None without one or when unreadable."""
    section = trial.info.object
    name = section.get("name") if isinstance(section, Mapping) else None
    return str(name) if name is not None else None


def _match_key(trial: TrialRecord) -> tuple[str, float | None]:
    start = trial.info.initial_distance_m if is_standard_push(trial) else None
    return trial.name, None if start is None else round(start, 3)


def _x(outcome: Mapping[str, Any] | None, key: str) -> float | None:
    return number_or_none(outcome.get(key)) if outcome else None


def _flip(outcome: Mapping[str, Any] | None) -> bool | None:
    return bool(outcome["flipped"]) if outcome and isinstance(outcome.get("flipped"), bool) else None


_Borrowed = tuple[str, dict[str, Any], PoseSeries | None]


def experiment_table(label: str, trials: Sequence[TrialRecord],
                     real_fallback: tuple[str, Sequence[TrialRecord]] | None = None) -> ExperimentTable:
    """Build the experiment table of one run.

    Parameters
    ----------
    label : str
        Name of the run in the report.
    trials : sequence of TrialRecord
        The run's trials.
    real_fallback : (str, sequence of TrialRecord), optional
        Label and trials of another run whose real outcomes (and real box paths) are used for
        trials of this run that have no real data (matched by trial name, then, for standard
        pushes, by start distance).
    """
    notes: list[str] = []
    by_name: dict[str, _Borrowed] = {}
    by_start: dict[float, _Borrowed] = {}
    if real_fallback is not None:
        other_label, other_trials = real_fallback
        for other in other_trials:
            real = trial_outcomes(other).get("real")
            if real is None:
                continue
            name, start = _match_key(other)
            entry = (other_label, real, box_pose(other, "real"))
            by_name.setdefault(name, entry)
            if start is not None:
                by_start.setdefault(start, entry)
    rows = []
    borrowed = 0
    for trial in trials:
        outcomes = trial_outcomes(trial)
        real, sim = outcomes.get("real"), outcomes.get("sim")
        real_path, sim_path = box_pose(trial, "real"), box_pose(trial, "sim")
        source = None
        if real is None and (by_name or by_start):
            name, start = _match_key(trial)
            found = by_name.get(name) or (by_start.get(start) if start is not None else None)
            if found is not None:
                source, real, real_path = found
                borrowed += 1
        start_m = trial.info.initial_distance_m
        if start_m is None:
            start_m = next((v for v in (_x(real, "initial_distance_m"), _x(sim, "initial_distance_m"))
                            if v is not None), None)
        errors = outcome_errors(real, sim) if real is not None and sim is not None else OutcomeErrors()
        path = path_rms(real_path, sim_path) if real_path is not None and sim_path is not None else None
        rows.append(ExperimentRow(
            trial=trial.name,
            start_m=start_m,
            real_final_m=_x(real, "final_distance_m"),
            sim_final_m=_x(sim, "final_distance_m"),
            real_flip=_flip(real),
            sim_flip=_flip(sim),
            complete=trial.complete,
            real_source=source,
            standard_push=is_standard_push(trial),
            final_error_xy_m=number_or_none(errors.final_position_xy_m),
            final_error_m=number_or_none(errors.final_position_m),
            yaw_error_deg=number_or_none(errors.yaw_deg),
            path_rms_m=path,
            obj=_object_label(trial),
        ))
    table = ExperimentTable(label, tuple(rows))
    if borrowed:
        notes.append(f"{borrowed} trial(s) have no real recording in this run; their real outcome and box path are "
                     f"taken from run '{real_fallback[0] if real_fallback else ''}' (matched by trial name or start "
                     "distance).")
    if not table.has("real"):
        notes.append("No real-platform box poses: real final positions, sim-vs-real errors and flip agreement are "
                     "not available.")
    if not table.has("sim"):
        notes.append("No sim-platform box poses: sim final positions, sim-vs-real errors and flip agreement are "
                     "not available.")
    not_standard = [r.trial for r in rows if not r.standard_push]
    if not_standard and table.standard_pushes:
        notes.append(f"Not the standard push along x from the arm base: {', '.join(not_standard)}; their x columns are "
                     "left empty and they are compared by the final position, yaw and path errors only.")
    elif not_standard:
        notes.append("No trial is the standard push along x from the arm base (e.g. recordings imported from "
                     "another lab): the x-distance columns are left out; trials are compared by the final "
                     "position, yaw and path errors.")
    incomplete = [r.trial for r in rows if not r.complete]
    if incomplete:
        notes.append(f"Interrupted (incomplete) trials: {', '.join(incomplete)}; listed with what was recorded, "
                     "but kept out of the means and maxima and the flip agreement.")
    return ExperimentTable(label, tuple(rows), tuple(notes))


#: Columns of the x distances of the standard push (cm), shown when a table has such trials.
X_COLUMNS: tuple[str, ...] = ("start x (cm)", "real final x (cm)", "sim final x (cm)", "x gap (cm)")
#: The sim-vs-real error columns every table shows.
ERROR_COLUMNS: tuple[str, ...] = ("final error xy (mm)", "final error 3-D (mm)", "yaw error (deg)",
                                  "path RMS (mm)")
FLIP_COLUMNS: tuple[str, ...] = ("real flip", "sim flip", "agree")


def experiment_header(table: ExperimentTable) -> tuple[str, ...]:
    """Column titles of :func:`experiment_rows_text`: the x columns only when the table has standard pushes."""
    return ("trial", *(X_COLUMNS if table.standard_pushes else ()), *ERROR_COLUMNS, *FLIP_COLUMNS)


def _x_cells(row: ExperimentRow) -> list[str]:
    if not row.standard_push:
        return ["—"] * len(X_COLUMNS)
    return [cm(row.start_m), cm(row.real_final_m), cm(row.sim_final_m), cm(row.gap_m)]


def experiment_rows_text(table: ExperimentTable) -> list[list[str]]:
    """Formatted rows (strings) of the experiment table, in :func:`experiment_header` order."""
    rows = []
    for r in table.rows:
        name = r.trial if r.complete else f"{r.trial} (incomplete)"
        rows.append([name, *(_x_cells(r) if table.standard_pushes else []),
                     mm(r.final_error_xy_m), mm(r.final_error_m), degrees(r.yaw_error_deg), mm(r.path_rms_m),
                     yes_no(r.real_flip), yes_no(r.sim_flip), yes_no(r.agree)])
    return rows


def _flip_rate(table: ExperimentTable) -> str:
    agreement = table.flip_agreement
    if agreement is None:
        return "not available"
    return (f"{100.0 * agreement:.0f} % ({sum(1 for r in table.counted if r.agree)}/"
            f"{sum(1 for r in table.counted if r.agree is not None)})")


def experiment_summary_text(table: ExperimentTable) -> str:
    """The run's sim-vs-real statistics in one paragraph (complete trials), or what is missing.

    Final position error in the table plane and in 3-D (mean and max, mm), yaw error (deg), path
    RMS (mm), flip agreement, and for standard pushes the x gap (cm).
    """
    excluded = table.excluded
    left_out = (f" ({len(excluded)} incomplete trial(s) not counted: {', '.join(excluded)})" if excluded else "")
    if table.mean_final_error_xy_m is None:
        return ("Sim-vs-real errors: not available (no complete trial has both real and sim box poses)"
                f"{left_out}.")
    parts = [f"Final position error over {table.values('final_error_xy_m').size} trial(s): mean "
             f"{mm(table.mean_final_error_xy_m)} mm, max {mm(table.max_final_error_xy_m)} mm in the table plane "
             f"(3-D: mean {mm(table.mean_final_error_m)} mm, max {mm(table.max_final_error_m)} mm)"]
    if table.mean_yaw_error_deg is not None:
        parts.append(f"yaw error mean {degrees(table.mean_yaw_error_deg)}°, max {degrees(table.max_yaw_error_deg)}°")
    if table.mean_path_rms_m is not None:
        parts.append(f"path RMS mean {mm(table.mean_path_rms_m)} mm, max {mm(table.max_path_rms_m)} mm over "
                     f"{table.values('path_rms_m').size} trial(s)")
    parts.append(f"flip agreement {_flip_rate(table)}")
    if table.mean_gap_m is not None:
        parts.append(f"x gap of the standard pushes mean {cm(table.mean_gap_m)} cm, max {cm(table.max_gap_m)} cm "
                     f"over {table.gaps_m.size} trial(s)")
    return "; ".join(parts) + f"{left_out}."


def _matching_row(table: ExperimentTable, base: ExperimentRow) -> ExperimentRow | None:
    match = next((r for r in table.rows if r.trial == base.trial), None)
    if match is None and base.standard_push and base.start_m is not None:
        match = next((r for r in table.rows if r.standard_push and r.start_m is not None
                      and abs(r.start_m - base.start_m) < 5e-4), None)
    return match


def side_by_side_rows_text(tables: Sequence[ExperimentTable]) -> tuple[list[str], list[list[str]]]:
    """Runs that are not before and after of each other, one row each: their own sim-vs-real means.

    Per run: complete trials, mean final position error in the table plane and in 3-D (mm), mean yaw
    error (deg), mean path RMS (mm) and flip agreement; no change from one run to another is stated
    (the runs need not hold the same trials: e.g. pushes of different blocks).
    """
    header = ["run", "trials", "mean final error xy (mm)", "mean final error 3-D (mm)", "mean yaw error (deg)",
              "mean path RMS (mm)", "flip agreement"]
    rows = []
    for table in tables:
        rate = table.flip_agreement
        rows.append([table.label, str(len(table.counted)), mm(table.mean_final_error_xy_m),
                     mm(table.mean_final_error_m), degrees(table.mean_yaw_error_deg), mm(table.mean_path_rms_m),
                     "—" if rate is None else f"{100.0 * rate:.0f} %"])
    return header, rows


def comparison_rows_text(tables: Sequence[ExperimentTable]) -> tuple[list[str], list[list[str]]]:
    """Side-by-side table of runs compared as before and after: per trial, each run's sim-vs-real errors.

    ``tables`` are the before run first, then the after run (:mod:`sim2real.report.pairing` decides
    which runs those are). Rows are matched by trial name, then (standard pushes) by start distance,
    against the first run. Per run: final position error in the table plane (mm), yaw error (deg), path RMS (mm),
    with standard pushes the x gap (cm), and flip agreement; a last row holds the means.
    """
    with_x = any(t.standard_pushes for t in tables)
    header = ["trial", *(["start x (cm)", "real final x (cm)"] if with_x else [])]
    for table in tables:
        header += [f"{table.label}: final error xy (mm)", f"{table.label}: yaw error (deg)",
                   f"{table.label}: path RMS (mm)", *([f"{table.label}: x gap (cm)"] if with_x else []),
                   f"{table.label}: agree"]
    width = 4 + int(with_x)
    rows = []
    for base in tables[0].rows:
        cells = [base.trial]
        if with_x:
            cells += [cm(base.start_m), cm(base.real_final_m)] if base.standard_push else ["—", "—"]
        for table in tables:
            match = _matching_row(table, base)
            if match is None:
                cells += ["—"] * width
                continue
            cells += [mm(match.final_error_xy_m), degrees(match.yaw_error_deg), mm(match.path_rms_m),
                      *([cm(match.gap_m)] if with_x else []), yes_no(match.agree)]
        rows.append(cells)
    summary = ["mean", *(["", ""] if with_x else [])]
    for table in tables:
        rate = table.flip_agreement
        summary += [mm(table.mean_final_error_xy_m), degrees(table.mean_yaw_error_deg), mm(table.mean_path_rms_m),
                    *([cm(table.mean_gap_m)] if with_x else []), "—" if rate is None else f"{100.0 * rate:.0f} %"]
    rows.append(summary)
    return header, rows


def comparison_sentence(tables: Sequence[ExperimentTable]) -> str:
    """How the mean final position error (table plane) changed from the before run (first of ``tables``)
    to the after run (last), in plain words; with standard pushes in both, the x gap's change too.
    Callers pass runs that pair as before and after (:mod:`sim2real.report.pairing`), never any two."""
    first, last = tables[0], tables[-1]
    a, b = first.mean_final_error_xy_m, last.mean_final_error_xy_m
    if a is None or b is None:
        return (f"The change of the mean final position error from '{first.label}' to '{last.label}' is not "
                "available (one of them has no trial with both real and sim outcomes).")
    change = b - a
    relative = f" ({100.0 * change / a:+.0f} %)" if a > 0 else ""
    direction = "smaller" if change < 0 else ("larger" if change > 0 else "unchanged")
    text = (f"Mean sim-vs-real final position error in the table plane: {mm(a)} mm ('{first.label}') → {mm(b)} mm "
            f"('{last.label}'), {abs(1000.0 * change):.1f} mm {direction}{relative}.")
    if first.mean_gap_m is not None and last.mean_gap_m is not None:
        text += (f" Mean x gap of the standard pushes: {cm(first.mean_gap_m)} cm → {cm(last.mean_gap_m)} cm.")
    return text

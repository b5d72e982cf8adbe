"""Many simulated standard pushes: parameter points x start distances (``sim2real sweep``).

A sweep is the product of *points* (complete parameter sets: one, a grid over some
parameters, or sets drawn by ``sim2real sample``) and start *distances*; each (point,
distance) pair is one *row*: the standard push of :func:`~sim2real.sysid.prediction.standard_trial.run_standard_trial`,
exactly as ``sim2real simulate --distance D`` runs it, reduced to its outcome.

Rows go to ``outcomes.csv`` one line at a time, in task order (points outer, distances inner),
each line flushed as soon as it is complete, so the file is always a prefix of the full table
(at worst with a partial last line, which :func:`finished_rows` cuts off). ``sweep.json`` holds
the configuration that determines the rows (:func:`sweep_config`); a re-run on the same
directory with the same configuration skips the rows already in the table.

Every function here is pure or touches only the files it is given; :func:`run_sweep_task`
is a top-level function of a picklable :class:`SweepTask`, so any ordered ``map`` (this
process, a process pool) can run it.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import math
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, SupportsFloat

import numpy as np

from sim2real.control import JointTrajectory, PushConfig, plan_push
from sim2real.errors import DataError, InputError, Sim2RealError
from sim2real.model import load_arm
from sim2real.params import ParameterSet, coerce, load_params, spec
from sim2real.spatial import yaw
from sim2real.sysid.prediction.standard_trial import DISTANCE_RANGE, run_standard_trial
from sim2real.trials.experiment import parse_distances as experiment_distances

OUTCOMES_CSV = "outcomes.csv"
SWEEP_JSON = "sweep.json"
SWEEP_SCHEMA = "sim2real.sweep/1"
#: Trial directories (``--write-trials``): ``trials/point_0003/trial_01_d0.350``.
TRIALS_DIR = "trials"
#: Where a trial is written before it is moved into place (cleared on every start).
PARTIAL_DIR = ".partial"
KEY_COLUMNS: tuple[str, ...] = ("point", "distance")
OUTCOME_COLUMNS: tuple[str, ...] = ("final_x", "final_y", "final_z", "final_yaw", "flipped", "max_tilt_deg",
                                    "touched", "degraded_steps", "error")
#: Most rows (points x distances) in one sweep, and most values on one grid axis.
MAX_ROWS = 1_000_000
MAX_GRID_VALUES = 10_000
#: Sample files and table written by ``sim2real sample``.
SAMPLE_GLOB = "sample_*.yaml"
SAMPLES_CSV = "samples.csv"


def parse_distances(text: str) -> tuple[float, ...]:
    """``"0.3,0.35"`` → ``(0.3, 0.35)`` (m), each inside the push workspace (:data:`DISTANCE_RANGE`), none twice:
    the grammar of :func:`sim2real.trials.experiment.parse_distances`.

    Raises
    ------
    Sim2RealError
        Empty list or entry, a value that is not a finite number, outside the workspace, or repeated.
    """
    return experiment_distances(text, within=DISTANCE_RANGE, closed=True, unique=True, what="distances",
                                option="distances")


@dataclass(frozen=True)
class GridAxis:
    """One ``--set-grid NAME=LO:HI:N``: N evenly spaced values from LO to HI (SI units)."""

    name: str
    low: float
    high: float
    count: int

    @classmethod
    def parse(cls, text: str) -> GridAxis:
        """From ``"contact.mu_table=0.3:0.7:5"``.

        Raises
        ------
        Sim2RealError
            Malformed, unknown name, N outside [1, 10000], LO > HI, a value out of bounds, or a
            non-integer value of an integer parameter.
        """
        name, sep, rest = text.partition("=")
        parts = rest.split(":")
        if not sep or len(parts) != 3:
            raise InputError(f"a grid axis expects NAME=LO:HI:N, got '{text}'", option="grid")
        name = name.strip()
        spec(name)
        try:
            low, high, count = float(parts[0]), float(parts[1]), int(parts[2])
        except ValueError:
            raise InputError(f"grid axis {name}: '{rest}' is not LO:HI:N (two numbers and a count)",
                             option="grid") from None
        if not (math.isfinite(low) and math.isfinite(high)) or low > high:
            raise InputError(f"grid axis {name}: need finite LO <= HI, got {rest}", option="grid")
        if not 1 <= count <= MAX_GRID_VALUES:
            raise InputError(f"grid axis {name}: N must be in [1, {MAX_GRID_VALUES}], got {count}", option="grid")
        if count == 1 and low != high:
            raise InputError(f"grid axis {name}: N = 1 needs LO = HI, got {rest}", option="grid")
        axis = cls(name, low, high, count)
        for value in axis.values():
            try:
                coerce(name, value)
            except Sim2RealError as err:
                raise InputError(str(err), option="grid") from None
        return axis

    def values(self) -> list[float]:
        """The N grid values, LO and HI included."""
        values = np.linspace(self.low, self.high, self.count).tolist()
        return [round(v) if spec(self.name).kind is int and float(v).is_integer() else v for v in values]


@dataclass(frozen=True)
class SweepPoints:
    """The parameter points of a sweep.

    Attributes
    ----------
    names : tuple of str
        The parameters that vary between points (the table's parameter columns).
    params : tuple of ParameterSet
        One complete set per point, in point order.
    source : dict
        How they were given (for sweep.json, not compared on resume).
    """

    names: tuple[str, ...]
    params: tuple[ParameterSet, ...]
    source: dict[str, Any]


def grid_points(base: ParameterSet, axes: Sequence[GridAxis], source: Mapping[str, Any]) -> SweepPoints:
    """The product of the grid axes over ``base`` (the first axis varies slowest); no axis: ``base`` alone.

    Raises
    ------
    Sim2RealError
        An axis named twice, or more than :data:`MAX_ROWS` points.
    """
    names = tuple(a.name for a in axes)
    if len(set(names)) != len(names):
        raise InputError("the parameter grid names a parameter twice", option="grid")
    total = math.prod(a.count for a in axes)
    if total > MAX_ROWS:
        raise InputError(f"the parameter grid gives {total} points; at most {MAX_ROWS}", option="grid")
    grids = [a.values() for a in axes]
    points = []
    for index in np.ndindex(*[len(g) for g in grids]) if axes else [()]:
        points.append(base.replace({n: grids[k][i] for k, (n, i) in enumerate(zip(names, index, strict=True))}))
    return SweepPoints(names, tuple(points), {**source, "grid": [asdict(a) for a in axes]})


def _read_table(path: Path) -> tuple[list[str], list[list[str]]]:
    from sim2real.paths import read_text_file

    text = read_text_file(path, "samples table")
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    if not rows:
        raise DataError(f"{path}: empty table (expected a header of parameter names and one row per set)")
    return [h.strip() for h in rows[0]], rows[1:]


def _sample_names(path: Path, header: Sequence[str]) -> list[str]:
    names = [h for h in header if h != "sample"]
    if not names:
        raise DataError(f"{path}: no parameter columns")
    for name in names:
        try:
            spec(name)
        except Sim2RealError as err:
            raise DataError(f"{path}: column {err}") from None
    if len(set(names)) != len(names):
        raise DataError(f"{path}: a parameter column appears twice")
    return names


def samples_points(source: str | os.PathLike[str], base: ParameterSet | None,
                   overrides: Mapping[str, float]) -> SweepPoints:
    """The points of ``--samples DIR_OR_CSV``.

    Parameters
    ----------
    source : path-like
        A directory written by ``sim2real sample`` (its ``sample_*.yaml`` are complete sets; the
        columns are those of its samples.csv), or a CSV table whose header names parameters
        (an optional ``sample`` column is ignored) with one row per set.
    base : ParameterSet or None
        For a CSV: the values of every other parameter (``--params``/``--set``). Must be None for
        a directory (each file is complete).
    overrides : mapping
        ``--set`` values, applied to every set of a directory.

    Raises
    ------
    Sim2RealError
        Missing or malformed table or files, a ``--set`` of a sampled name.
    """
    path = Path(source)
    if path.is_dir():
        files = sorted(path.glob(SAMPLE_GLOB))
        if not files:
            raise InputError(f"samples {path}: no {SAMPLE_GLOB} files (a directory written by 'sim2real sample')",
                             option="samples")
        params = [load_params(f) for f in files]
        table = path / SAMPLES_CSV
        if table.is_file():
            names = _sample_names(table, _read_table(table)[0])
        else:
            names = [n for n in params[0] if any(p[n] != params[0][n] for p in params[1:])]
        clash = sorted(set(names) & set(overrides))
        if clash:
            raise InputError(f"the parameter override {clash[0]} would replace a sampled parameter; drop it",
                             option="overrides")
        points = tuple(p.replace(overrides) if overrides else p for p in params)
        return SweepPoints(tuple(names), points, {"samples": str(path.resolve()), "files": len(files)})
    if not path.is_file():
        raise InputError(f"samples {path}: no such directory or file", option="samples")
    header, rows = _read_table(path)
    names = _sample_names(path, header)
    clash = sorted(set(names) & set(overrides))
    if clash:
        raise InputError(f"the parameter override {clash[0]} would replace a sampled parameter; drop it",
                         option="overrides")
    columns = [header.index(n) for n in names]
    sampled: list[ParameterSet] = []
    base = base or ParameterSet.nominal()
    for line, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise DataError(f"{path}: line {line} has {len(row)} fields, the header {len(header)}")
        try:
            values = {n: float(row[c]) for n, c in zip(names, columns, strict=True)}
            sampled.append(base.replace(values))
        except (ValueError, Sim2RealError) as err:
            raise DataError(f"{path}: line {line}: {' '.join(str(err).split())}") from None
    if not sampled:
        raise DataError(f"{path}: no rows")
    if len(sampled) > MAX_ROWS:
        raise InputError(f"{path}: {len(sampled)} rows; at most {MAX_ROWS}")
    return SweepPoints(tuple(names), tuple(sampled), {"samples": str(path.resolve())})


def header(names: Sequence[str]) -> list[str]:
    """Columns of outcomes.csv: ``point``, ``distance``, the varied parameters, the outcomes."""
    return [*KEY_COLUMNS, *names, *OUTCOME_COLUMNS]


def _fmt(value: SupportsFloat) -> str:
    """Full precision, so that a resumed table equals an uninterrupted one byte for byte."""
    return repr(float(value))


@dataclass(frozen=True)
class SweepTask:
    """One row to simulate.

    Attributes
    ----------
    point : int
        Point index.
    distance_index : int
        Index of ``distance`` in the sweep's distances (names the trial directory).
    distance : float
        Start distance of the box centre (m).
    params : ParameterSet
    names : tuple of str
        The table's parameter columns.
    push : PushConfig
        The standard push.
    trials_dir : str or None
        With ``--write-trials``: the sweep's ``trials`` directory.
    """

    point: int
    distance_index: int
    distance: float
    params: ParameterSet
    names: tuple[str, ...]
    push: PushConfig
    trials_dir: str | None = None

    @property
    def key(self) -> tuple[int, str]:
        """``(point, distance text)``: how a finished row is recognised in outcomes.csv."""
        return self.point, _fmt(self.distance)


@dataclass(frozen=True)
class SweepRow:
    """One row of outcomes.csv.

    Attributes
    ----------
    fields : tuple of str
        The row's values in :func:`header` order.
    flipped : bool or None
        None when the row failed.
    degraded_steps : int
    error : str
        One-line reason the trial failed, or ``""``.
    """

    fields: tuple[str, ...]
    flipped: bool | None
    degraded_steps: int
    error: str = ""

    def line(self) -> str:
        """The CSV line (with its newline)."""
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerow(self.fields)
        return buffer.getvalue()


@functools.lru_cache(maxsize=32)
def planned_push(push: PushConfig, pusher_offset: float, pusher_radius: float, table_height: float) -> JointTrajectory:
    """The planned standard push for these pusher and table values (a per-process cache: the plan
    depends on nothing else, and points of a sweep usually share it)."""
    params = ParameterSet.nominal().replace({"pusher.offset": pusher_offset, "pusher.radius": pusher_radius,
                                             "contact.table_height": table_height})
    return plan_push(load_arm(params), push, table_height)


def run_sweep_task(task: SweepTask) -> SweepRow:
    """Simulate one row (the push of ``sim2real simulate --distance``); a failure becomes an error row.

    With ``task.trials_dir`` the trial is also written as
    ``<trials_dir>/point_NNNN/trial_KK_dD.DDD`` (bag + trial.json), replacing a directory a
    previous, interrupted run may have left there for this row.
    """
    params = task.params
    keys = [str(task.point), _fmt(task.distance), *(_fmt(params[n]) for n in task.names)]
    try:
        reference = planned_push(task.push, float(params["pusher.offset"]), float(params["pusher.radius"]),
                                 float(params["contact.table_height"]))
        trial = run_standard_trial(task.distance, params, reference=reference)
        if task.trials_dir is not None:
            _write_trial(task, trial)
    except Exception as err:  # one row's failure must not end the sweep; it is recorded
        reason = _one_line(err)
        return SweepRow(tuple(keys + [""] * (len(OUTCOME_COLUMNS) - 1) + [reason]), None, 0, reason)
    final = trial.result.box[-1]
    degraded = int(trial.result.solve.degraded)
    outcome = [_fmt(final[0]), _fmt(final[1]), _fmt(final[2]), _fmt(yaw(final[3:7])),
               "1" if trial.outcome.flipped else "0", _fmt(trial.outcome.max_tilt_deg),
               "1" if trial.result.touched else "0", str(degraded), ""]
    return SweepRow(tuple(keys + outcome), bool(trial.outcome.flipped), degraded)


def _one_line(err: BaseException) -> str:
    """An exception as one line (unexpected types carry their class name)."""
    text = " ".join(str(err).split())
    if isinstance(err, Sim2RealError):
        return text or type(err).__name__
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _write_trial(task: SweepTask, trial: Any) -> Path:
    from sim2real.trials.writer import write_trial

    point_dir = f"point_{task.point:04d}"
    root = Path(task.trials_dir or ".")
    staging = root / PARTIAL_DIR / point_dir
    record = trial.record(index=task.distance_index)
    staged = staging / record.name
    if staged.exists():
        shutil.rmtree(staged)
    write_trial(staging, record)
    target = root / point_dir / record.name
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():  # written by an interrupted run whose row never reached the table
        shutil.rmtree(target)
    os.replace(staged, target)
    return target


def points_digest(points: SweepPoints) -> str:
    """SHA-256 of every point's complete parameter set (what the rows depend on)."""
    text = json.dumps([p.as_dict() for p in points.params], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def sweep_config(distances: Sequence[float], points: SweepPoints, push: PushConfig,
                 write_trials: bool) -> dict[str, Any]:
    """What determines the rows of a sweep; a resumed sweep must have the same (sweep.json ``config``)."""
    return {"distances": [float(d) for d in distances], "columns": header(points.names),
            "points": len(points.params), "points_sha256": points_digest(points),
            "push": asdict(push), "write_trials": bool(write_trials)}


def config_differences(stored: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """The configuration keys whose values differ (a key either lacks counts as differing), current ones first."""
    keys = list(dict.fromkeys([*current, *stored]))
    return [k for k in keys if stored.get(k) != current.get(k)]


def finished_rows(path: Path, columns: Sequence[str], expected: Iterable[tuple[int, str]]) -> set[tuple[int, str]]:
    """Keys of the complete rows of an outcomes.csv; a partial last line is cut off the file.

    Parameters
    ----------
    path : Path
        The table (may be missing or empty: no rows, the header is written by the caller).
    columns : sequence of str
        The expected header.
    expected : iterable of (int, str)
        Keys of this sweep's rows.

    Raises
    ------
    Sim2RealError
        A different header, a complete line with the wrong number of fields, or a row that is
        not part of this sweep.
    """
    if not path.exists():
        return set()
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):  # an interrupted write: drop the partial last line
        with path.open("r+b") as handle:
            handle.truncate(end)
        data = data[:end]
    if not data:
        return set()
    lines = list(csv.reader(io.StringIO(data.decode("utf-8", "replace"))))
    if lines[0] != list(columns):
        raise DataError(f"{path}: its header differs from this sweep's columns; not resuming into it")
    wanted = set(expected)
    done: set[tuple[int, str]] = set()
    for number, row in enumerate(lines[1:], start=2):
        if len(row) != len(columns):
            raise DataError(f"{path}: line {number} has {len(row)} fields, the header {len(columns)}; "
                                "the table is damaged (remove that line to resume)")
        try:
            key = (int(row[0]), row[1])
        except ValueError:
            raise DataError(f"{path}: line {number}: point '{row[0]}' is not an index") from None
        if key not in wanted:
            raise DataError(f"{path}: line {number} (point {row[0]}, distance {row[1]}) is not a row of this sweep")
        done.add(key)
    return done


def write_header_if_new(path: Path, columns: Sequence[str]) -> None:
    """Start outcomes.csv with its header unless it already has one."""
    if path.exists() and path.stat().st_size > 0:
        return
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(columns)
    with path.open("w", encoding="utf-8", newline="") as handle:
        handle.write(buffer.getvalue())
        handle.flush()
        os.fsync(handle.fileno())


@dataclass(frozen=True)
class DistanceSummary:
    """Outcomes at one start distance over all points.

    Attributes
    ----------
    distance : float
        m.
    rows : int
        Rows simulated without error.
    flipped : int
        Of those, rows whose box flipped.
    final_mean, final_std : float
        Mean and sample standard deviation (ddof 1; NaN for one row) of the final x (m, the
        distance from the arm base along the push).
    """

    distance: float
    rows: int
    flipped: int
    final_mean: float
    final_std: float

    @property
    def flip_probability(self) -> float:
        """Share of rows that flipped (NaN without rows)."""
        return self.flipped / self.rows if self.rows else math.nan

    def flip_interval(self, z: float = 1.959963984540054) -> tuple[float, float]:
        """Wilson score 95 % interval of the flip probability."""
        n = self.rows
        if n == 0:
            return math.nan, math.nan
        p = self.flipped / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return max(0.0, centre - half), min(1.0, centre + half)


def summarize_by_distance(path: Path, distances: Sequence[float]) -> list[DistanceSummary]:
    """Per distance: flip probability and final-distance mean / std over the rows of outcomes.csv."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    out = []
    for distance in distances:
        ok = [r for r in rows if r["distance"] == _fmt(distance) and not r["error"]]
        final = np.array([float(r["final_x"]) for r in ok])
        out.append(DistanceSummary(
            distance=float(distance), rows=len(ok), flipped=sum(r["flipped"] == "1" for r in ok),
            final_mean=float(final.mean()) if final.size else math.nan,
            final_std=float(final.std(ddof=1)) if final.size > 1 else math.nan))
    return out

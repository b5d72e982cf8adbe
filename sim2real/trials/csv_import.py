"""Reading pose recordings from CSV files (data that is not in bags) into a
:class:`~sim2real.trials.recording.Recording`.

Format: comma-separated, UTF-8, a header row naming the columns (any order, extra columns
ignored), then one row per sample; blank lines and lines starting with ``#`` are skipped.

==========================================  ====================================================
column                                      content
==========================================  ====================================================
``t``                                       sample time, s (any epoch, not negative; decimal)
``box_x``, ``box_y``, ``box_z``             tracked box body origin, recording frame, m
``box_qw``, ``box_qx``, ``box_qy``,         tracked box body orientation, unit quaternion w-x-y-z,
``box_qz``                                  body → recording frame
``pusher_x``, ``pusher_y``, ``pusher_z``    optional: pusher sphere centre, recording frame, m
==========================================  ====================================================

A row may leave the box cells or the pusher cells empty (that body was not tracked at ``t``).
Rows are in time order: a ``t`` earlier than the row before is refused (naming the line); rows
with equal times are repeated stamps, of which the import keeps the first.
The recording frame is named ``csv``; ``--transform`` maps it into the arm base frame and
``--box-offset`` moves the tracked origin to the box centre, as for bags.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.trials.recording import PoseSamples, Recording, seconds_to_ns

CSV_FRAME = "csv"
"""Name of the recording frame of CSV imports."""

BOX_COLUMNS: tuple[str, ...] = ("box_x", "box_y", "box_z", "box_qw", "box_qx", "box_qy", "box_qz")
PUSHER_COLUMNS: tuple[str, ...] = ("pusher_x", "pusher_y", "pusher_z")
MAX_CSV_BYTES = 1 << 30
"""Largest CSV recording read, bytes (1 GiB)."""


def _row_values(row: list[str], columns: dict[str, int], names: tuple[str, ...], path: Path,
                line: int) -> list[float] | None:
    cells = [row[columns[name]].strip() if columns[name] < len(row) else "" for name in names]
    if not any(cells):
        return None
    if not all(cells):
        empty = [name for name, cell in zip(names, cells, strict=True) if not cell]
        raise Sim2RealError(f"{path} line {line}: {', '.join(empty)} empty while other {names[0][:-2]} cells are set")
    try:
        return [float(cell) for cell in cells]
    except ValueError:
        bad = next(name for name, cell in zip(names, cells, strict=True) if not _is_float(cell))
        raise Sim2RealError(f"{path} line {line}: column {bad}: "
                            f"'{cells[names.index(bad)]}' is not a number") from None


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_csv_recording(path: str | Path) -> Recording:
    """Read one CSV pose recording (format: the module docstring).

    Returns
    -------
    Recording
        Box (and pusher) samples in the recording frame ``csv``; header stamp and receive time
        are both ``t``. The pusher orientation is the identity.

    Raises
    ------
    Sim2RealError
        One line naming the file, line and column: unreadable file, missing columns, a cell
        that is not a number, a time that is negative, out of range or earlier than the row
        before (rows must be in time order; equal times are repeated stamps, dropped on
        import), or no box sample.
    """
    from sim2real.paths import read_text_file

    path = Path(path)
    text = read_text_file(path, "CSV recording", max_bytes=MAX_CSV_BYTES)
    lines = [(number, line) for number, line in enumerate(text.splitlines(), start=1)
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise Sim2RealError(f"CSV recording {path} is empty")
    header_line, header = lines[0]
    names = [name.strip() for name in next(csv.reader(io.StringIO(header)))]
    columns = {name: index for index, name in enumerate(names)}
    missing = [name for name in ("t", *BOX_COLUMNS) if name not in columns]
    if missing:
        raise Sim2RealError(f"CSV recording {path} line {header_line}: missing columns {', '.join(missing)} "
                            f"(needs t, {', '.join(BOX_COLUMNS)}; optional {', '.join(PUSHER_COLUMNS)})")
    with_pusher = any(name in columns for name in PUSHER_COLUMNS)
    if with_pusher and not all(name in columns for name in PUSHER_COLUMNS):
        absent = [name for name in PUSHER_COLUMNS if name not in columns]
        raise Sim2RealError(f"CSV recording {path}: missing columns {', '.join(absent)} (pusher needs x, y and z)")
    box_t: list[int] = []
    box_values: list[list[float]] = []
    pusher_t: list[int] = []
    pusher_values: list[list[float]] = []
    previous: tuple[int, int, str] | None = None  # (t_ns, line, cell) of the row before
    for number, line in lines[1:]:
        row = next(csv.reader(io.StringIO(line)))
        cell = row[columns["t"]].strip() if columns["t"] < len(row) else ""
        try:
            t_ns = seconds_to_ns(cell)
        except ValueError as err:
            raise Sim2RealError(f"CSV recording {path} line {number}: column t: {err}") from None
        if t_ns < 0:
            raise Sim2RealError(f"CSV recording {path} line {number}: column t: {cell} s is negative")
        if previous is not None and t_ns < previous[0]:
            raise Sim2RealError(f"CSV recording {path} line {number}: column t: {cell} s is before {previous[2]} s "
                                f"on line {previous[1]}; time must not run backwards (rows in time order)")
        previous = (t_ns, number, cell)
        box = _row_values(row, columns, BOX_COLUMNS, path, number)
        if box is not None:
            box_t.append(t_ns)
            box_values.append(box)
        if with_pusher:
            pusher = _row_values(row, columns, PUSHER_COLUMNS, path, number)
            if pusher is not None:
                pusher_t.append(t_ns)
                pusher_values.append(pusher)
    if not box_t:
        raise Sim2RealError(f"CSV recording {path} has no row with box values")
    box_array = np.array(box_values, dtype=float).reshape(-1, 7)
    t = np.array(box_t, dtype=np.int64)
    box_samples = PoseSamples(t, t, box_array[:, :3], box_array[:, 3:], "csv:box")
    pusher_samples = None
    if pusher_t:
        tp = np.array(pusher_t, dtype=np.int64)
        pusher_array = np.array(pusher_values, dtype=float).reshape(-1, 3)
        pusher_samples = PoseSamples(tp, tp, pusher_array, np.tile([1.0, 0.0, 0.0, 0.0], (tp.shape[0], 1)),
                                     "csv:pusher")
    return Recording(str(path), "csv", CSV_FRAME, box_samples, pusher_samples)

"""Reading pose recordings from CSV files (data that is not in bags) into a
:class:`~sim2real.trials.recording.Recording`.

Format: comma-separated, UTF-8, a header row naming the columns (any order, extra columns
ignored), then one row per sample; blank lines and lines starting with ``#`` are skipped. The box
pose is either 3-D (a position and a quaternion) or planar (a position in the table plane and a
heading), one of the two per file:

==========================================  ====================================================
column                                      content
==========================================  ====================================================
``t``                                       sample time, s (any epoch, not negative; decimal)
``box_x``, ``box_y``, ``box_z``             3-D: tracked box body origin, recording frame, m
``box_qw``, ``box_qx``, ``box_qy``,         3-D: tracked box body orientation, unit quaternion
``box_qz``                                  w-x-y-z, body → recording frame
``box_x``, ``box_y``, ``box_yaw``           planar: tracked box body origin in the table plane
                                            (the recording frame's x-y plane), m, and its heading
                                            about the frame's z axis, rad
``pusher_x``, ``pusher_y``, ``pusher_z``    optional: pusher point (sphere centre, rod tip),
                                            recording frame, m; beside a planar box pose
                                            ``pusher_z`` may be left out
==========================================  ====================================================

A planar recording holds no height and no tilt: the box lies on the table, its orientation is the
rotation by ``box_yaw`` about z, and the import puts its centre at half the object's thickness
(``box.size_z / 2``, so it needs the object) and a pusher without ``pusher_z`` at that height too
(:class:`~sim2real.trials.recording.Recording` ``planar``). A file with ``box_yaw`` and any of
``box_z`` or the quaternion columns, or with neither orientation, is refused.

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

from sim2real.errors import DataError
from sim2real.trials.recording import PoseSamples, Recording, seconds_to_ns

CSV_FRAME = "csv"
"""Name of the recording frame of CSV imports."""

BOX_COLUMNS: tuple[str, ...] = ("box_x", "box_y", "box_z", "box_qw", "box_qx", "box_qy", "box_qz")
"""Columns of a 3-D box pose."""
PLANAR_BOX_COLUMNS: tuple[str, ...] = ("box_x", "box_y", "box_yaw")
"""Columns of a planar box pose (m, m, rad)."""
PUSHER_COLUMNS: tuple[str, ...] = ("pusher_x", "pusher_y", "pusher_z")
"""Columns of the pusher point."""
MAX_CSV_BYTES = 1 << 30
"""Largest CSV recording read, bytes (1 GiB)."""


def _row_values(row: list[str], columns: dict[str, int], names: tuple[str, ...], path: Path,
                line: int) -> list[float] | None:
    cells = [row[columns[name]].strip() if columns[name] < len(row) else "" for name in names]
    if not any(cells):
        return None
    if not all(cells):
        empty = [name for name, cell in zip(names, cells, strict=True) if not cell]
        raise DataError(f"{path} line {line}: {', '.join(empty)} empty while other {names[0][:-2]} cells are set")
    try:
        return [float(cell) for cell in cells]
    except ValueError:
        bad = next(name for name, cell in zip(names, cells, strict=True) if not _is_float(cell))
        raise DataError(f"{path} line {line}: column {bad}: "
                        f"'{cells[names.index(bad)]}' is not a number") from None


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _layout(columns: dict[str, int], path: Path, line: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The box and pusher columns the header names: a 3-D or a planar box pose, and the pusher's
    (none, x-y-z, or x-y beside a planar box). Raises one line naming the file and the columns."""
    three_d = [name for name in BOX_COLUMNS[2:] if name in columns]
    planar = "box_yaw" in columns
    if planar and three_d:
        raise DataError(f"CSV recording {path} line {line}: columns box_yaw and {', '.join(three_d)} mix a "
                        f"planar box pose ({', '.join(PLANAR_BOX_COLUMNS)}) with a 3-D one "
                        f"({', '.join(BOX_COLUMNS)}); give one of them")
    if not planar and not three_d:
        missing = [name for name in ("t", "box_x", "box_y") if name not in columns]
        raise DataError(f"CSV recording {path} line {line}: no box orientation"
                        + (f" (and missing columns {', '.join(missing)})" if missing else "")
                        + f": needs t and either {', '.join(BOX_COLUMNS)} (a 3-D pose) or "
                        f"{', '.join(PLANAR_BOX_COLUMNS)} (a planar pose); optional {', '.join(PUSHER_COLUMNS)}")
    box = PLANAR_BOX_COLUMNS if planar else BOX_COLUMNS
    missing = [name for name in ("t", *box) if name not in columns]
    if missing:
        raise DataError(f"CSV recording {path} line {line}: missing columns {', '.join(missing)} "
                        f"(needs t, {', '.join(box)}; optional {', '.join(PUSHER_COLUMNS)})")
    given = [name for name in PUSHER_COLUMNS if name in columns]
    needed = PUSHER_COLUMNS[:2] if planar and "pusher_z" not in columns else PUSHER_COLUMNS
    if given and len(given) < len(needed):
        absent = [name for name in needed if name not in columns]
        reason = ("the pusher needs x and y" if planar else
                  "the pusher needs x, y and z; x and y alone only beside a planar box pose, box_yaw")
        raise DataError(f"CSV recording {path} line {line}: missing columns {', '.join(absent)} ({reason})")
    return box, (needed if given else ())


def read_csv_recording(path: str | Path) -> Recording:
    """Read one CSV pose recording (format: the module docstring).

    Returns
    -------
    Recording
        Box (and pusher) samples in the recording frame ``csv``; header stamp and receive time
        are both ``t``. The pusher orientation is the identity. A planar file (``box_yaw``) gives
        box positions ``(box_x, box_y, 0)`` and quaternions ``(cos(yaw/2), 0, 0, sin(yaw/2))``,
        pusher positions ``(pusher_x, pusher_y, 0)`` when it has no ``pusher_z``, and a recording
        marked ``planar`` (and ``planar_pusher``): the import sets those heights.

    Raises
    ------
    Sim2RealError
        One line naming the file, line and column: unreadable file, missing columns, a planar
        and a 3-D box pose mixed (or neither), a cell that is not a number, a time that is
        negative, out of range or earlier than the row before (rows must be in time order;
        equal times are repeated stamps, dropped on import), or no box sample.
    """
    from sim2real.paths import read_text_file

    path = Path(path)
    text = read_text_file(path, "CSV recording", max_bytes=MAX_CSV_BYTES)
    lines = [(number, line) for number, line in enumerate(text.splitlines(), start=1)
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise DataError(f"CSV recording {path} is empty")
    header_line, header = lines[0]
    names = [name.strip() for name in next(csv.reader(io.StringIO(header)))]
    columns = {name: index for index, name in enumerate(names)}
    box_columns, pusher_columns = _layout(columns, path, header_line)
    planar = box_columns == PLANAR_BOX_COLUMNS
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
            raise DataError(f"CSV recording {path} line {number}: column t: {err}") from None
        if t_ns < 0:
            raise DataError(f"CSV recording {path} line {number}: column t: {cell} s is negative")
        if previous is not None and t_ns < previous[0]:
            raise DataError(f"CSV recording {path} line {number}: column t: {cell} s is before {previous[2]} s "
                            f"on line {previous[1]}; time must not run backwards (rows in time order)")
        previous = (t_ns, number, cell)
        box = _row_values(row, columns, box_columns, path, number)
        if box is not None:
            box_t.append(t_ns)
            box_values.append(box)
        if pusher_columns:
            pusher = _row_values(row, columns, pusher_columns, path, number)
            if pusher is not None:
                pusher_t.append(t_ns)
                pusher_values.append(pusher)
    if not box_t:
        raise DataError(f"CSV recording {path} has no row with box values")
    t = np.array(box_t, dtype=np.int64)
    if planar:
        position, quaternion = planar_poses(np.array(box_values, dtype=float).reshape(-1, 3))
    else:
        box_array = np.array(box_values, dtype=float).reshape(-1, 7)
        position, quaternion = box_array[:, :3], box_array[:, 3:]
    box_samples = PoseSamples(t, t, position, quaternion, "csv:box")
    pusher_samples = None
    if pusher_t:
        tp = np.array(pusher_t, dtype=np.int64)
        pusher_array = np.zeros((tp.shape[0], 3))
        pusher_array[:, :len(pusher_columns)] = np.array(pusher_values, dtype=float).reshape(-1, len(pusher_columns))
        pusher_samples = PoseSamples(tp, tp, pusher_array, np.tile([1.0, 0.0, 0.0, 0.0], (tp.shape[0], 1)),
                                     "csv:pusher")
    return Recording(str(path), "csv", CSV_FRAME, box_samples, pusher_samples, planar=planar,
                     planar_pusher=bool(pusher_columns) and len(pusher_columns) == 2)


def planar_poses(xy_yaw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Planar poses as 3-D ones in their frame: on its x-y plane, rotated about its z axis.

    Parameters
    ----------
    xy_yaw : numpy.ndarray, shape (N, 3)
        Position x and y (m) and heading about z (rad); non-finite values stay non-finite.

    Returns
    -------
    position : numpy.ndarray, shape (N, 3)
        ``(x, y, 0)``, m.
    quaternion : numpy.ndarray, shape (N, 4)
        ``(cos(yaw / 2), 0, 0, sin(yaw / 2))``, w-x-y-z.
    """
    xy_yaw = np.asarray(xy_yaw, dtype=float).reshape(-1, 3)
    position = np.zeros((xy_yaw.shape[0], 3))
    position[:, :2] = xy_yaw[:, :2]
    half = 0.5 * xy_yaw[:, 2]
    quaternion = np.zeros((xy_yaw.shape[0], 4))
    quaternion[:, 0], quaternion[:, 3] = np.cos(half), np.sin(half)
    return position, quaternion

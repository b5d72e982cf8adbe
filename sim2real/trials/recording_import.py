"""Outside recordings (any lab's ROS 1/2 bags, CSV files) → trial directories: the shared pipeline.

The readers (:mod:`sim2real.trials.bag_import`, :mod:`sim2real.trials.csv_import`) turn one recording
into a :class:`Recording`: samples of the tracked box body and, optionally, the pusher, all in one
*recording frame* (a motion-capture or camera frame), and optionally the arm's joint states. Every
sample keeps two times, its header stamp (acquisition) and its receive (bag log) time. Then, per
recording, :func:`import_recordings`:

1. picks the time axis (``clock``: ``"header"`` stamps, the default, or ``"receive"`` times);
2. cuts the recording into trials (:class:`Split`): one trial per recording, one per run of box
   poses without a gap longer than ``gap_s``, or one per listed time window;
3. in each trial and stream, drops samples with a non-finite value or a zero quaternion (``invalid``;
   for joint states a non-finite position or velocity, while a non-finite effort is written as 0),
   samples that repeat the time stamp of the one before (``duplicate_stamps``), and single-sample
   outliers (:func:`find_outliers`: ``orientation_flips`` and ``position_jumps``);
4. maps poses into the experiment (arm base, ``link_base``) frame: the box centre is the tracked pose
   composed with ``box_offset`` (the box centre frame in the tracked body's frame), then everything
   goes through ``transform`` (the recording frame in the arm base frame);
5. writes each trial (``/real/box_pose``, ``/real/pusher_pose``, ``/real/joint_states`` and a
   trial.json with an ``"import"`` section) into a hidden temporary run directory, renamed to the
   output directory only when every trial is written; on any error nothing is left behind.

Times are integer ns throughout (no float rounding of epoch times); a trial's ``timing.start_ns`` is
its first kept sample on the chosen clock.
"""

from __future__ import annotations

import math
import os
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.filemodes import staging_dir
from sim2real.spatial import normalize
from sim2real.trials.records import N_JOINTS
from sim2real.trials.rigid import RigidTransform, body_offset_poses
from sim2real.trials.scene import SceneSpec
from sim2real.trials.schema import BASE_FRAME
from sim2real.trials.trial_object import TrialObject
from sim2real.trials.writer import TrialBagWriter, write_run_meta

NS_PER_S = 1_000_000_000

CLOCKS: tuple[str, ...] = ("header", "receive")
"""Time axes an import can use: message header stamps (acquisition) or receive (bag log) times."""

DEFAULT_OUTLIER_ANGLE_DEG = 30.0
"""Default orientation-flip threshold, degrees."""

DEFAULT_OUTLIER_JUMP_M = 0.03
"""Default position-jump threshold, m."""

MIN_BOX_POSES = 3
"""Fewest box poses a trial must keep; shorter segments are skipped (and reported)."""

_IDENTITY_Q = np.array([1.0, 0.0, 0.0, 0.0])


# -- samples and recordings ----------------------------------------------------------------------
@dataclass(frozen=True)
class PoseSamples:
    """Pose samples of one tracked body as recorded, in the recording frame.

    Attributes
    ----------
    stamp_ns : numpy.ndarray of int64, shape (N,)
        Header stamp (acquisition time), ns.
    receive_ns : numpy.ndarray of int64, shape (N,)
        Receive (bag log) time, ns.
    position : numpy.ndarray, shape (N, 3)
        Tracked body origin in the recording frame, m.
    quaternion : numpy.ndarray, shape (N, 4)
        Orientation (w, x, y, z), tracked body → recording frame (any norm; normalised on import).
    source : str
        Where the samples came from, for messages and trial.json (``"/vrpn/box/pose"``, ``"tf:box"``).
    has_orientation : bool
        False when the source gives positions only (the quaternions are then the identity).
    """

    stamp_ns: np.ndarray
    receive_ns: np.ndarray
    position: np.ndarray
    quaternion: np.ndarray
    source: str
    has_orientation: bool = True

    def __post_init__(self) -> None:
        n = np.shape(self.stamp_ns)[0]
        object.__setattr__(self, "stamp_ns", np.asarray(self.stamp_ns, dtype=np.int64).reshape(n))
        object.__setattr__(self, "receive_ns", np.asarray(self.receive_ns, dtype=np.int64).reshape(n))
        object.__setattr__(self, "position", np.asarray(self.position, dtype=float).reshape(n, 3))
        object.__setattr__(self, "quaternion", np.asarray(self.quaternion, dtype=float).reshape(n, 4))

    def __len__(self) -> int:
        return int(self.stamp_ns.shape[0])


@dataclass(frozen=True)
class JointSamples:
    """Joint states of the xArm 6 as recorded (joints ``joint1``..``joint6``, in that order).

    Attributes
    ----------
    stamp_ns, receive_ns : numpy.ndarray of int64, shape (N,)
        Header stamp and receive time, ns.
    position, velocity, effort : numpy.ndarray, shape (N, 6)
        rad, rad/s, N·m (zeros where the messages have none).
    source : str
        The topic.
    """

    stamp_ns: np.ndarray
    receive_ns: np.ndarray
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray
    source: str

    def __post_init__(self) -> None:
        n = np.shape(self.stamp_ns)[0]
        object.__setattr__(self, "stamp_ns", np.asarray(self.stamp_ns, dtype=np.int64).reshape(n))
        object.__setattr__(self, "receive_ns", np.asarray(self.receive_ns, dtype=np.int64).reshape(n))
        for name in ("position", "velocity", "effort"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=float).reshape(n, N_JOINTS))

    def __len__(self) -> int:
        return int(self.stamp_ns.shape[0])


@dataclass(frozen=True)
class Recording:
    """One outside recording, read and expressed in its recording frame.

    Attributes
    ----------
    path : str
        The file or bag directory.
    format : str
        ``"rosbag2/mcap"``, ``"rosbag2/sqlite3"``, ``"rosbag1"`` or ``"csv"``.
    frame : str
        The recording frame: every pose of ``box`` and ``pusher`` is expressed in it.
    box : PoseSamples
        The tracked box body.
    pusher : PoseSamples or None
        The tracked pusher (its origin is taken as the pusher sphere centre).
    joints : JointSamples or None
        Arm joint states.
    notes : dict
        Reader details kept in trial.json ``import`` (e.g. static transforms composed).
    """

    path: str
    format: str
    frame: str
    box: PoseSamples
    pusher: PoseSamples | None = None
    joints: JointSamples | None = None
    notes: dict[str, Any] = field(default_factory=dict)


MAX_SECONDS = 9_223_372_036
"""Largest magnitude of a time, s: ns since 1970 held in 64 bits (2**63 - 1 ns, the year 2262)."""


def seconds_to_ns(text: str) -> int:
    """Decimal seconds (``"1712345678.123456789"``) → integer ns, exactly.

    Raises
    ------
    ValueError
        Not a number, not finite, or beyond :data:`MAX_SECONDS` (it would not fit the 64-bit ns
        of bags and arrays), with a one-line reason.
    """
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise ValueError(f"'{text.strip()}' is not a number") from None
    if not value.is_finite():
        raise ValueError(f"'{text.strip()}' is not a finite number")
    if abs(value) > MAX_SECONDS:
        raise ValueError(f"'{text.strip()}' s is out of range (times are within {MAX_SECONDS} s of 1970, "
                         f"ns in 64 bits)")
    return int((value * NS_PER_S).to_integral_value())


@dataclass(frozen=True)
class Split:
    """How a recording is cut into trials.

    Attributes
    ----------
    kind : str
        ``"none"`` (one trial per recording), ``"gaps"`` (a new trial after every gap longer
        than ``gap_s`` in the box pose stream) or ``"windows"`` (one trial per window).
    gap_s : float or None
        Gap length, s (``gaps``).
    windows_ns : tuple of (int, int)
        ``(start, end)`` of each window, ns since the recording's first selected sample on the
        chosen clock, both ends included (``windows``).
    spec : str
        The option text, for trial.json.
    """

    kind: str = "none"
    gap_s: float | None = None
    windows_ns: tuple[tuple[int, int], ...] = ()
    spec: str = "none"


def read_windows(path: str | Path) -> tuple[tuple[int, int], ...]:
    """Read a windows CSV: one ``start,end`` per line, s since the recording's first sample.

    Blank lines, lines starting with ``#`` and a first line that is not numeric (a header) are
    skipped. Windows must have ``start < end``; they may overlap.

    Returns
    -------
    tuple of (int, int)
        Windows in ns.
    """
    from sim2real.paths import read_text_file

    text = read_text_file(path, "windows file")
    windows: list[tuple[int, int]] = []
    first_row = True
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        cells = [cell.strip() for cell in stripped.split(",")]
        header_allowed, first_row = first_row, False
        try:
            if len(cells) != 2:
                raise ValueError(f"expected 2 columns start,end, got {len(cells)}")
            start, end = seconds_to_ns(cells[0]), seconds_to_ns(cells[1])
        except ValueError as err:
            if header_allowed and len(cells) == 2:
                continue  # a header line such as "start,end"
            raise Sim2RealError(f"windows file {path} line {number}: {err}") from None
        if not end > start:
            raise Sim2RealError(f"windows file {path} line {number}: end {cells[1]} s is not after start {cells[0]} s")
        windows.append((start, end))
    if not windows:
        raise Sim2RealError(f"windows file {path} lists no window (expected lines start,end in s)")
    return tuple(windows)


def parse_split(text: str | None) -> Split:
    """Parse ``--split``: ``none``, ``gaps:SECONDS`` or ``windows:FILE``."""
    if text is None or text.strip() == "none":
        return Split()
    kind, _, value = text.partition(":")
    if kind == "gaps":
        try:
            gap = float(value)
        except ValueError:
            gap = float("nan")
        if not (math.isfinite(gap) and gap > 0):
            raise Sim2RealError(f"--split '{text}': gaps:SECONDS needs a positive number of seconds")
        return Split("gaps", gap_s=gap, spec=text)
    if kind == "windows" and value:
        return Split("windows", windows_ns=read_windows(value), spec=text)
    raise Sim2RealError(f"--split '{text}': expected none, gaps:SECONDS or windows:FILE")


@dataclass(frozen=True)
class ImportSettings:
    """Everything an import applies to every recording.

    Attributes
    ----------
    clock : str
        ``"header"`` (header stamps, default) or ``"receive"`` (bag log times).
    transform : RigidTransform
        The recording frame in the experiment (arm base) frame, ``T_base_recording``.
    box_offset : RigidTransform
        The box geometric centre frame in the tracked box body's frame, ``T_body_centre`` (m).
    split : Split
        How recordings are cut into trials.
    outlier_angle_rad : float
        Orientation-flip threshold, rad (0 disables the test).
    outlier_jump_m : float
        Position-jump threshold, m (0 disables the test).
    tool_offset : RigidTransform
        The pusher tip in the tracked pusher body's frame, ``T_body_tip`` (m): e.g. a probe tip
        below a logged tool flange. Needs the pusher's orientation.
    object : TrialObject or None
        The pushed object and the pusher, stored in every trial (``trial.json`` ``"object"``);
        None stores nothing (such a trial cannot be replayed or fitted until one is added).
    """

    clock: str = "header"
    transform: RigidTransform = field(default_factory=RigidTransform)
    box_offset: RigidTransform = field(default_factory=RigidTransform)
    split: Split = field(default_factory=Split)
    outlier_angle_rad: float = math.radians(DEFAULT_OUTLIER_ANGLE_DEG)
    outlier_jump_m: float = DEFAULT_OUTLIER_JUMP_M
    tool_offset: RigidTransform = field(default_factory=RigidTransform)
    object: TrialObject | None = None

    def __post_init__(self) -> None:
        if self.clock not in CLOCKS:
            raise Sim2RealError(f"unknown clock '{self.clock}' (choose from {', '.join(CLOCKS)})")
        if not (math.isfinite(self.outlier_angle_rad) and self.outlier_angle_rad >= 0):
            raise Sim2RealError("--outlier-angle must be a non-negative number of degrees")
        if not (math.isfinite(self.outlier_jump_m) and self.outlier_jump_m >= 0):
            raise Sim2RealError("--outlier-jump must be a non-negative length in m")


# -- cleaning -------------------------------------------------------------------------------------
def quaternion_angle(q1: np.ndarray, q2: np.ndarray) -> np.ndarray:
    """Rotation angle between orientations, rad in [0, π]; ``q`` and ``-q`` are the same orientation.

    Parameters
    ----------
    q1, q2 : numpy.ndarray, shape (..., 4)
        Unit quaternions (w, x, y, z).

    Returns
    -------
    numpy.ndarray, shape (...)
    """
    dot = np.abs(np.sum(np.asarray(q1, float) * np.asarray(q2, float), axis=-1))
    return 2.0 * np.arccos(np.clip(dot, 0.0, 1.0))


def find_outliers(position: np.ndarray, quaternion: np.ndarray, angle_rad: float,
                  jump_m: float) -> tuple[np.ndarray, np.ndarray]:
    """Single-sample outliers of a pose stream.

    A sample ``k`` (not the first or last) is an *orientation flip* when its orientation differs
    from both neighbours by more than ``angle_rad`` while the neighbours agree within
    ``angle_rad`` (a quaternion's sign is not a difference: ``q`` and ``-q`` agree); it is a
    *position jump* when it lies more than ``jump_m`` from both neighbours while they lie within
    ``jump_m`` of each other. Runs of two or more bad samples are not detected.

    Parameters
    ----------
    position : numpy.ndarray, shape (N, 3)
        m, in time order.
    quaternion : numpy.ndarray, shape (N, 4)
        Unit quaternions (w, x, y, z), in time order.
    angle_rad : float
        Orientation threshold, rad; 0 disables the test.
    jump_m : float
        Position threshold, m; 0 disables the test.

    Returns
    -------
    tuple of numpy.ndarray of bool, shape (N,) each
        Orientation flips and position jumps (a sample may be both).
    """
    n = position.shape[0]
    flips = np.zeros(n, dtype=bool)
    jumps = np.zeros(n, dtype=bool)
    if n < 3:
        return flips, jumps
    if angle_rad > 0:
        before = quaternion_angle(quaternion[1:-1], quaternion[:-2])
        after = quaternion_angle(quaternion[1:-1], quaternion[2:])
        across = quaternion_angle(quaternion[:-2], quaternion[2:])
        flips[1:-1] = (before > angle_rad) & (after > angle_rad) & (across <= angle_rad)
    if jump_m > 0:
        before = np.linalg.norm(position[1:-1] - position[:-2], axis=1)
        after = np.linalg.norm(position[1:-1] - position[2:], axis=1)
        across = np.linalg.norm(position[:-2] - position[2:], axis=1)
        jumps[1:-1] = (before > jump_m) & (after > jump_m) & (across <= jump_m)
    return flips, jumps


def _order(t_ns: np.ndarray, receive_ns: np.ndarray) -> tuple[np.ndarray, int]:
    """Indices in time order without repeated time stamps (the first received kept), and the count dropped."""
    order = np.lexsort((receive_ns, t_ns))
    keep = np.ones(order.shape[0], dtype=bool)
    keep[1:] = np.diff(t_ns[order]) != 0
    return order[keep], int(np.count_nonzero(~keep))


@dataclass(frozen=True)
class _CleanPoses:
    t_ns: np.ndarray          # (M,) chosen clock
    receive_ns: np.ndarray    # (M,)
    position: np.ndarray      # (M, 3) recording frame
    quaternion: np.ndarray    # (M, 4) unit
    counts: dict[str, int]


def clean_poses(samples: PoseSamples, index: np.ndarray, clock: str, angle_rad: float,
                jump_m: float) -> _CleanPoses:
    """The samples ``index`` of a stream, in time order, without invalid, repeated and outlier samples.

    Returns the kept samples (quaternions normalised) and the counts of what was dropped:
    ``invalid``, ``duplicate_stamps``, ``orientation_flips``, ``position_jumps``.
    """
    t_all = samples.stamp_ns if clock == "header" else samples.receive_ns
    position, quaternion = samples.position[index], samples.quaternion[index]
    norms = np.linalg.norm(quaternion, axis=1)
    valid = np.all(np.isfinite(position), axis=1) & np.all(np.isfinite(quaternion), axis=1) & (norms > 1e-9)
    index = index[valid]
    order, duplicates = _order(t_all[index], samples.receive_ns[index])
    index = index[order]
    position = samples.position[index]
    quaternion = normalize(samples.quaternion[index])
    flips, jumps = find_outliers(position, quaternion, angle_rad, jump_m)
    keep = ~(flips | jumps)
    counts = {"orientation_flips": int(np.count_nonzero(flips)), "position_jumps": int(np.count_nonzero(jumps)),
              "invalid": int(np.count_nonzero(~valid)), "duplicate_stamps": duplicates}
    return _CleanPoses(t_all[index][keep], samples.receive_ns[index][keep], position[keep], quaternion[keep], counts)


# -- segmentation ---------------------------------------------------------------------------------
def _clock(samples: PoseSamples | JointSamples, clock: str) -> np.ndarray:
    return samples.stamp_ns if clock == "header" else samples.receive_ns


def recording_origin_ns(recording: Recording, clock: str) -> int:
    """The recording's first selected sample on ``clock``, ns: the zero of ``--split windows`` times."""
    streams = [s for s in (recording.box, recording.pusher, recording.joints) if s is not None and len(s)]
    return int(min(int(_clock(s, clock).min()) for s in streams))


def trial_windows(recording: Recording, settings: ImportSettings) -> list[tuple[int, int]]:
    """The ``(start, end)`` of each trial, ns on the chosen clock (both ends included).

    ``none``: the whole recording; ``gaps``: each run of box poses whose consecutive times are at
    most ``gap_s`` apart, from its first to its last box pose; ``windows``: the listed windows.
    """
    split = settings.split
    if split.kind == "windows":
        origin = recording_origin_ns(recording, settings.clock)
        return [(origin + start, origin + end) for start, end in split.windows_ns]
    if split.kind == "none":
        return [(-(2**62), 2**62)]
    t = np.sort(_clock(recording.box, settings.clock))
    gap_ns = round(float(split.gap_s or 0.0) * NS_PER_S)
    breaks = np.flatnonzero(np.diff(t) > gap_ns)
    starts = np.concatenate(([0], breaks + 1))
    ends = np.concatenate((breaks, [t.shape[0] - 1]))
    return [(int(t[a]), int(t[b])) for a, b in zip(starts, ends, strict=True)]


# -- writing ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ImportedTrial:
    """What :func:`import_recordings` wrote for one trial.

    Attributes
    ----------
    name : str
        Trial directory name.
    path : pathlib.Path
        Final trial directory.
    samples : dict of str to int
        Kept samples per series (``box_pose``, ``pusher_pose``, ``joint_states``).
    outliers : dict of str to dict
        Dropped samples per series and reason (see :func:`clean_poses`).
    duration_s : float
        Time from the first to the last kept sample, s.
    """

    name: str
    path: Path
    samples: dict[str, int]
    outliers: dict[str, dict[str, int]]
    duration_s: float


_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")


def recording_stem(path: str | Path) -> str:
    """A trial-name stem from a recording path: its file or directory name without the extension."""
    path = Path(path)
    name = path.name
    for suffix in (".bag", ".mcap", ".db3", ".csv"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    stem = _NAME_CHARS.sub("_", name).strip("._") or "recording"
    return stem


def _unique(name: str, taken: set[str]) -> str:
    candidate, k = name, 2
    while candidate in taken or candidate in {"run.json"}:
        candidate, k = f"{name}_{k}", k + 1
    taken.add(candidate)
    return candidate


def _in_window(t_ns: np.ndarray, window: tuple[int, int]) -> np.ndarray:
    return np.flatnonzero((t_ns >= window[0]) & (t_ns <= window[1]))


def _counts_text(counts: dict[str, int]) -> str:
    labels = (("orientation_flips", "orientation flip"), ("position_jumps", "position jump"),
              ("invalid", "invalid"), ("duplicate_stamps", "repeated stamp"))
    parts = [f"{counts[key]} {label}{'s' if counts[key] != 1 and key != 'invalid' else ''}"
             for key, label in labels if counts.get(key)]
    return ", ".join(parts) if parts else "none"


def _experiment_poses(clean: _CleanPoses, offset: RigidTransform,
                      transform: RigidTransform) -> tuple[np.ndarray, np.ndarray]:
    position, quaternion = body_offset_poses(clean.position, clean.quaternion, offset)
    return transform.apply_poses(position, quaternion)


def _write_trial(run_dir: Path, name: str, recording: Recording, window: tuple[int, int], window_index: int,
                 settings: ImportSettings, origin_ns: int,
                 log: Callable[[str], None]) -> ImportedTrial | None:
    clock = settings.clock
    box = clean_poses(recording.box, _in_window(_clock(recording.box, clock), window), clock,
                      settings.outlier_angle_rad, settings.outlier_jump_m)
    where = f"{recording.path}: window {window_index}" if settings.split.kind != "none" else recording.path
    if box.t_ns.shape[0] < MIN_BOX_POSES:
        if settings.split.kind == "none":  # the whole recording gives no trial: one line, the error itself
            kept = int(box.t_ns.shape[0])
            raise Sim2RealError(f"{recording.path}: no trial with at least {MIN_BOX_POSES} box poses (split "
                                f"{settings.split.spec}): {kept} of {kept + sum(box.counts.values())} box poses "
                                f"kept (dropped: {_counts_text(box.counts)})")
        span = (f" ({(window[0] - origin_ns) / NS_PER_S:.3f}-{(window[1] - origin_ns) / NS_PER_S:.3f} s)"
                if settings.split.kind != "none" else "")
        log(f"{where}{span}: skipped, {box.t_ns.shape[0]} box poses (a trial needs {MIN_BOX_POSES})")
        return None
    pusher = None
    if recording.pusher is not None:
        pusher = clean_poses(recording.pusher, _in_window(_clock(recording.pusher, clock), window), clock,
                             settings.outlier_angle_rad, settings.outlier_jump_m)
    joints_index = None
    joint_counts: dict[str, int] = {}
    if recording.joints is not None:
        joints = recording.joints
        index = _in_window(_clock(joints, clock), window)
        finite = np.all(np.isfinite(joints.position[index]) & np.isfinite(joints.velocity[index]), axis=1)
        index = index[finite]
        order, duplicates = _order(_clock(joints, clock)[index], joints.receive_ns[index])
        joints_index = index[order]
        joint_counts = {"invalid": int(np.count_nonzero(~finite)), "duplicate_stamps": duplicates}

    box_position, box_quaternion = _experiment_poses(box, settings.box_offset, settings.transform)
    events: list[tuple[int, int, int, str, int]] = []  # (t_ns, kind order, k, series, receive)
    for k in range(box.t_ns.shape[0]):
        events.append((int(box.t_ns[k]), 0, k, "box", int(box.receive_ns[k])))
    pusher_position = pusher_quaternion = None
    if pusher is not None and pusher.t_ns.shape[0]:
        pusher_position, pusher_quaternion = _experiment_poses(pusher, settings.tool_offset, settings.transform)
        for k in range(pusher.t_ns.shape[0]):
            events.append((int(pusher.t_ns[k]), 1, k, "pusher", int(pusher.receive_ns[k])))
    if joints_index is not None and recording.joints is not None:
        t_joint = _clock(recording.joints, clock)
        for k, i in enumerate(joints_index):
            events.append((int(t_joint[i]), 2, k, "joints", int(recording.joints.receive_ns[i])))
    events.sort()
    start_ns, end_ns = events[0][0], max(e[0] for e in events)
    if start_ns < 0:
        raise Sim2RealError(f"{where}: time stamps before 1970 ({start_ns} ns); the trial start must be >= 0")

    writer = TrialBagWriter(run_dir, name, start_ns=start_ns, frame_id=BASE_FRAME)
    try:
        has_joints = joints_index is not None and recording.joints is not None
        scene_params = settings.object.parameters if settings.object is not None else None
        writer.write_scene(SceneSpec.from_params(["real"], ["real"] if has_joints else [], params=scene_params),
                           t_ns=min(start_ns, min(e[4] for e in events)))
        for t_ns, _, k, series, receive_ns in events:
            if series == "box":
                writer.write_box_pose("real", receive_ns, box_position[k], box_quaternion[k], stamp_ns=t_ns)
            elif series == "pusher":
                assert pusher_position is not None and pusher_quaternion is not None
                writer.write_pusher_pose("real", receive_ns, pusher_position[k], pusher_quaternion[k], stamp_ns=t_ns)
            else:
                assert joints_index is not None and recording.joints is not None
                i = joints_index[k]
                j = recording.joints
                effort = np.where(np.isfinite(j.effort[i]), j.effort[i], 0.0)  # drivers without torques send NaN
                writer.write_joint_state("real", receive_ns, j.position[i], j.velocity[i], effort, stamp_ns=t_ns)
        samples = {"box_pose": int(box.t_ns.shape[0])}
        outliers = {"box_pose": box.counts}
        sources = {"box_pose": recording.box.source}
        if pusher is not None and recording.pusher is not None:
            samples["pusher_pose"] = int(pusher.t_ns.shape[0])
            outliers["pusher_pose"] = pusher.counts
            sources["pusher_pose"] = recording.pusher.source
        if joints_index is not None and recording.joints is not None:
            samples["joint_states"] = int(joints_index.shape[0])
            outliers["joint_states"] = joint_counts
            sources["joint_states"] = recording.joints.source
        import_meta: dict[str, Any] = {
            "source": str(Path(recording.path).resolve()),
            "format": recording.format,
            "series": sources,
            "clock": clock,
            "recording_frame": recording.frame,
            "transform": {"from": recording.frame, "to": BASE_FRAME, **settings.transform.as_dict()},
            "box_offset": settings.box_offset.as_dict(),
            "tool_offset": settings.tool_offset.as_dict(),
            "split": settings.split.spec,
            "window_s": [(max(window[0], start_ns) - origin_ns) / NS_PER_S,
                         (min(window[1], end_ns) - origin_ns) / NS_PER_S],
            "recording_start_ns": origin_ns,
            "samples": samples,
            "outliers": outliers,
            "outlier_thresholds": {"angle_deg": math.degrees(settings.outlier_angle_rad),
                                   "jump_m": settings.outlier_jump_m},
            **recording.notes,
        }
        meta = {
            "mode": "import",
            "frame": BASE_FRAME,
            "timing": {"start_ns": start_ns, "end_ns": end_ns, "wall_s": (end_ns - start_ns) / NS_PER_S},
            "import": import_meta,
        }
        if settings.object is not None:
            meta["object"] = settings.object.as_dict()
        path = writer.close(meta, complete=True)
    except BaseException:
        writer.abort()
        raise
    trial = ImportedTrial(name, path, samples, outliers, (end_ns - start_ns) / NS_PER_S)
    streams = "; ".join(f"{series} {count}" for series, count in samples.items())
    cleaned = "; ".join(f"{series} {_counts_text(counts)}" for series, counts in outliers.items())
    log(f"{where}: trial {name}: {trial.duration_s:.3f} s, samples: {streams}; dropped: {cleaned}")
    return trial


def import_recordings(recordings: Sequence[Recording], out_dir: str | Path,
                      settings: ImportSettings, log: Callable[[str], None] | None = None,
                      run_meta: dict[str, Any] | None = None) -> list[ImportedTrial]:
    """Write the trials of every recording into a new run directory; all or nothing.

    Parameters
    ----------
    recordings : sequence of Recording
        What to import, in order (trial names follow it).
    out_dir : path
        Run directory to create; it may exist only as an empty directory.
    settings : ImportSettings
        Clock, transforms, split and outlier thresholds.
    log : callable, optional
        Receives one line per trial (and per skipped segment).
    run_meta : dict, optional
        Extra run.json keys.

    Returns
    -------
    list of ImportedTrial
        In recording and time order.

    Raises
    ------
    Sim2RealError
        Existing non-empty output, a recording that yields no trial, or any write error; the
        output directory is then left as it was.
    """
    out_dir = Path(out_dir)
    check_new_run_dir(out_dir)
    for recording in recordings:
        _check_tool_offset(recording, settings.tool_offset)
    say = log or (lambda _line: None)
    parent = out_dir.parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp_run = staging_dir(parent, prefix=f".{out_dir.name}.", suffix=".partial")
    trials: list[ImportedTrial] = []
    try:
        taken: set[str] = set()
        for recording in recordings:
            windows = trial_windows(recording, settings)
            origin = recording_origin_ns(recording, settings.clock)
            stem = recording_stem(recording.path)
            written = 0
            for index, window in enumerate(windows):
                name = stem if settings.split.kind == "none" else f"{stem}_{index:02d}"
                name = _unique(name, taken)
                trial = _write_trial(tmp_run, name, recording, window, index, settings, origin, say)
                if trial is not None:
                    trials.append(trial)
                    written += 1
                else:
                    taken.discard(name)
            if not written:
                raise Sim2RealError(f"{recording.path}: no trial with at least {MIN_BOX_POSES} box poses "
                                    f"(split {settings.split.spec})")
        write_run_meta(tmp_run, {
            "mode": "import",
            "import": {"sources": [str(Path(r.path).resolve()) for r in recordings], "clock": settings.clock,
                       "split": settings.split.spec, "transform": settings.transform.as_dict(),
                       "box_offset": settings.box_offset.as_dict()},
            "trials": [t.name for t in trials],
            **(run_meta or {}),
        })
        check_new_run_dir(out_dir)
        os.rename(tmp_run, out_dir)  # onto an empty directory too (POSIX)
    except BaseException:
        shutil.rmtree(tmp_run, ignore_errors=True)
        raise
    return [ImportedTrial(t.name, out_dir / t.name, t.samples, t.outliers, t.duration_s) for t in trials]


def _check_tool_offset(recording: Recording, offset: RigidTransform) -> None:
    """A tool offset needs a pusher with an orientation (it is fixed in the pusher body's frame)."""
    if offset.is_identity:
        return
    if recording.pusher is None:
        raise Sim2RealError(f"{recording.path}: --tool-offset moves the pusher, but no pusher pose is imported")
    if not recording.pusher.has_orientation:
        raise Sim2RealError(f"{recording.path}: --tool-offset is fixed in the pusher body's frame, but "
                            f"{recording.pusher.source} gives positions only: name its quaternion fields too")


def check_new_run_dir(out_dir: Path) -> None:
    """Raise unless ``out_dir`` is absent or an empty directory."""
    if out_dir.is_symlink() or (out_dir.exists() and not out_dir.is_dir()):
        raise Sim2RealError(f"--out {out_dir} exists and is not a directory; choose a new one")
    if out_dir.is_dir() and any(out_dir.iterdir()):
        raise Sim2RealError(f"output directory {out_dir} already exists and is not empty; choose a new one")

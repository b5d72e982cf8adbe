"""A recording from another lab's tools, as the importers read it: timed pose and joint samples
(:class:`PoseSamples`, :class:`JointSamples`) of one recording (:class:`Recording`), how it is cut into
trials (:class:`Split`, :func:`parse_split`, :func:`read_windows`) and the import's settings
(:class:`ImportSettings`). Times are integer nanoseconds; positions m; quaternions (w, x, y, z).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sim2real.errors import DataError, InputError
from sim2real.trials.camera_tally import ImageDetections
from sim2real.trials.records import N_JOINTS
from sim2real.trials.rigid import RigidTransform
from sim2real.trials.scene_checks import DEFAULT_SCENE_TOLERANCE_M, check_tolerance
from sim2real.trials.trial_object import TrialObject

if TYPE_CHECKING:
    from sim2real.trials.frames_file import FrameUncertainty

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
    planar : bool
        The box poses are planar (x, y and a heading, as a planar-pushing lab records them): ``box``
        holds them on the recording frame's x-y plane (z = 0) with pure rotations about its z axis;
        or, for a box source of positions only that the user declared planar (``import bag
        --planar``; ``box.has_orientation`` False), positions whose height is ignored and no heading.
        Such a recording cannot tell the box's height or whether it tilted: the import puts the
        box centre at half the object's thickness (``box.size_z / 2``) and marks the trial's tilt
        (and a missing heading) unknown (:data:`sim2real.trials.outcome.PLANAR_KEY`).
    planar_pusher : bool
        The pusher positions have no height either (x and y only, z = 0 in ``pusher``): the import
        puts the pusher point at ``box.size_z / 2`` too.
    camera : ImageDetections or None
        The box poses came from camera images (``import bag --box-image``): what each image gave, for
        each trial's detection tally (trial.json ``import.camera``).
    """

    path: str
    format: str
    frame: str
    box: PoseSamples
    pusher: PoseSamples | None = None
    joints: JointSamples | None = None
    notes: dict[str, Any] = field(default_factory=dict)
    planar: bool = False
    planar_pusher: bool = False
    camera: ImageDetections | None = None


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
            raise DataError(f"windows file {path} line {number}: {err}") from None
        if not end > start:
            raise DataError(f"windows file {path} line {number}: end {cells[1]} s is not after start {cells[0]} s")
        windows.append((start, end))
    if not windows:
        raise DataError(f"windows file {path} lists no window (expected lines start,end in s)")
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
            raise InputError(f"the split '{text}': gaps:SECONDS needs a positive number of seconds", option="split")
        return Split("gaps", gap_s=gap, spec=text)
    if kind == "windows" and value:
        return Split("windows", windows_ns=read_windows(value), spec=text)
    raise InputError(f"the split '{text}': expected none, gaps:SECONDS or windows:FILE", option="split")


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
        None stores nothing (such a trial cannot be replayed or fitted until one is added), and
        the scene checks cannot run.
    scene_tolerance_m : float
        Tolerance of the scene checks (:mod:`sim2real.trials.scene_checks`), m, positive.
    force : bool
        Import trials that fail the scene checks, flagged in their trial.json
        (``import.scene_checks.problems``), instead of refusing the import.
    box_transform : RigidTransform
        A correction of the box stream alone in the arm base frame, applied after ``transform``
        (``T_base_base'``: the tracking frame's offset from the arm's that ``sim2real calibrate``
        estimates; the pusher and the joints keep ``transform``).
    box_delay_s : float
        The box stream's delay, s: a box pose stamped ``s`` (on either clock) was the box at
        ``s - box_delay_s`` (``sim2real calibrate`` estimates it); its samples are moved back by it.
    frame_uncertainty : FrameUncertainty, optional
        What the calibration that gave ``box_transform`` leaves unknown of the tracking frame (``--frames``):
        kept in each trial's ``import`` section for the spreads to draw from.
    """

    clock: str = "header"
    transform: RigidTransform = field(default_factory=RigidTransform)
    box_offset: RigidTransform = field(default_factory=RigidTransform)
    split: Split = field(default_factory=Split)
    outlier_angle_rad: float = math.radians(DEFAULT_OUTLIER_ANGLE_DEG)
    outlier_jump_m: float = DEFAULT_OUTLIER_JUMP_M
    tool_offset: RigidTransform = field(default_factory=RigidTransform)
    object: TrialObject | None = None
    scene_tolerance_m: float = DEFAULT_SCENE_TOLERANCE_M
    force: bool = False
    box_transform: RigidTransform = field(default_factory=RigidTransform)
    box_delay_s: float = 0.0
    frame_uncertainty: FrameUncertainty | None = None

    def __post_init__(self) -> None:
        if self.clock not in CLOCKS:
            raise InputError(f"unknown clock '{self.clock}' (choose from {', '.join(CLOCKS)})")
        if not (math.isfinite(self.outlier_angle_rad) and self.outlier_angle_rad >= 0):
            raise InputError("the outlier angle must be a non-negative number of degrees", option="outlier_angle")
        if not (math.isfinite(self.outlier_jump_m) and self.outlier_jump_m >= 0):
            raise InputError("the outlier jump must be a non-negative length in m", option="outlier_jump")
        check_tolerance(self.scene_tolerance_m)


# -- planar recordings ----------------------------------------------------------------------------
def planar_height(settings: ImportSettings) -> float:
    """Height (m, arm base frame) of a planar recording's box centre: half the object's thickness,
    ``box.size_z / 2``, the box resting on the table at z = 0 (the import checked there is an object)."""
    assert settings.object is not None
    return 0.5 * float(settings.object.parameters["box.size_z"])


#: Largest tilt (rad) of ``--transform`` or ``--box-offset`` a planar recording accepts: the rounding
#: of a typed quaternion, not a measured tilt.
PLANAR_TILT_TOLERANCE_RAD = 1e-6


def _tilt_rad(quaternion: np.ndarray) -> float:
    """Angle (rad) between the z axis rotated by a unit quaternion (w, x, y, z) and the z axis."""
    return 2.0 * math.asin(min(1.0, math.hypot(float(quaternion[1]), float(quaternion[2]))))


def check_planar(recording: Recording, settings: ImportSettings) -> None:
    """Refuse a planar recording (:attr:`Recording.planar`) the import cannot place on the table.

    It needs the object (its thickness gives the box centre's height, :func:`planar_height`) and a
    level ``--transform`` and ``--box-offset``: rotations about z within
    :data:`PLANAR_TILT_TOLERANCE_RAD`, the offset without a z component.

    Raises
    ------
    Sim2RealError
        One line naming the recording and the option.
    """
    if not recording.planar:
        return
    what = "box x, y and yaw" if recording.box.has_orientation else "declared planar, box positions only"
    check_planar_settings(settings, f"{recording.path}: a planar recording ({what})")


def check_planar_settings(settings: ImportSettings, where: str) -> None:
    """The part of :func:`check_planar` that needs no recording (``import bag --planar`` runs it before
    reading any bag): the object and level ``--transform``, ``--box-transform`` and ``--box-offset``.

    Parameters
    ----------
    settings : ImportSettings
        The import's settings.
    where : str
        What is planar, opening each message.

    Raises
    ------
    Sim2RealError
        One line naming ``where`` and the option.
    """
    if settings.object is None:
        raise InputError(f"{where} needs the object (the box's size, its mass or density, the pusher's shape and "
                         f"radius): its box rests on the table, its centre at box.size_z / 2")
    tilt = _tilt_rad(settings.transform.quaternion)
    if tilt > PLANAR_TILT_TOLERANCE_RAD:
        raise InputError(f"{where} lies in the table plane, but the frame transform tilts that plane by "
                         f"{math.degrees(tilt):.3g} deg: give a rotation about z only (qx = qy = 0)",
                         option="transform")
    tilt = _tilt_rad(settings.box_transform.quaternion)
    if tilt > PLANAR_TILT_TOLERANCE_RAD:
        raise InputError(f"{where} lies in the table plane, but the box transform tilts it by "
                         f"{math.degrees(tilt):.3g} deg: give a rotation about z only (qx = qy = 0)",
                         option="box_transform")
    offset = settings.box_offset
    if _tilt_rad(offset.quaternion) > PLANAR_TILT_TOLERANCE_RAD or offset.translation[2] != 0.0:
        raise InputError(f"{where}: the box offset moves the box centre in the table plane only: give x, y "
                         f"and a rotation about z (z = 0, qx = qy = 0); the centre's height is box.size_z / 2",
                         option="box_offset")


# -- cleaning -------------------------------------------------------------------------------------

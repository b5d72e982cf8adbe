"""Trial outcome metrics computed from a box pose series (issue 4, "Trial outcomes").

Frames: every pose is in the arm base frame, whose origin is the world origin and whose z
axis points up; the table surface is horizontal. Quaternions are (w, x, y, z).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim2real.errors import DataError, InputError
from sim2real.spatial import normalize, to_matrix
from sim2real.trials.meta import TrialMeta
from sim2real.trials.records import PoseSeries

_AXIS_LABELS = ("x", "y", "z")


def rotation_matrices(quaternion_wxyz: np.ndarray) -> np.ndarray:
    """Rotation matrices of unit quaternions.

    Parameters
    ----------
    quaternion_wxyz : numpy.ndarray, shape (N, 4)
        Quaternions (w, x, y, z); normalised here.

    Returns
    -------
    numpy.ndarray, shape (N, 3, 3)
        ``R[k] @ v_body`` is ``v_body`` expressed in the base frame.
    """
    return to_matrix(normalize(quaternion_wxyz))


def up_axis(rotation: np.ndarray) -> tuple[int, int]:
    """The body axis most aligned with ±world z.

    Parameters
    ----------
    rotation : numpy.ndarray, shape (3, 3)
        Body-to-base rotation.

    Returns
    -------
    (int, int)
        Body axis index (0, 1, 2 for x, y, z) and sign (+1 if it points up, -1 if down).
    """
    world_z_in_body = rotation[2, :]  # z components of the body axes in the base frame
    axis = int(np.argmax(np.abs(world_z_in_body)))
    return axis, 1 if world_z_in_body[axis] >= 0 else -1


def axis_label(axis: int, sign: int) -> str:
    """``(2, +1)`` → ``"+z"``."""
    return f"{'+' if sign > 0 else '-'}{_AXIS_LABELS[axis]}"


def tilt_deg(box_pose: PoseSeries) -> np.ndarray:
    """Angle between the initially-up body axis and world z over time.

    Returns
    -------
    numpy.ndarray, shape (N,)
        Tilt, degrees in [0, 180]; 0 when the box stands as it started.
    """
    rotations = rotation_matrices(box_pose.quaternion)
    axis, sign = up_axis(rotations[0])
    up_world = sign * rotations[:, :, axis]  # (N, 3): the initially-up body axis in the base frame
    return np.degrees(np.arccos(np.clip(up_world[:, 2], -1.0, 1.0)))


def _yaw_deg(q_initial: np.ndarray, q_final: np.ndarray) -> float:
    """Twist about world z of the rotation from the initial to the final orientation, degrees."""
    w0, v0 = q_initial[0], -q_initial[1:]  # conjugate of the initial quaternion
    w1, v1 = q_final[0], q_final[1:]
    w = w1 * w0 - v1 @ v0
    v = w1 * v0 + w0 * v1 + np.cross(v1, v0)  # q_final ⊗ conj(q_initial), world-frame relative rotation
    if abs(w) < 1e-12 and abs(v[2]) < 1e-12:
        return 0.0  # pure 180° rotation about a horizontal axis: no twist
    yaw = np.degrees(2.0 * np.arctan2(v[2], w))
    return float((yaw + 180.0) % 360.0 - 180.0)


@dataclass(frozen=True)
class Outcome:
    """Outcome of one platform in one trial.

    Attributes
    ----------
    initial_position, final_position : numpy.ndarray, shape (3,)
        Box centre at the first and last sample, m, arm base frame.
    final_quaternion : numpy.ndarray, shape (4,)
        Box orientation (w, x, y, z) at the last sample.
    initial_distance_m, final_distance_m : float
        x coordinate of the box centre at the first / last sample, m (distance from the arm
        base along x; the base is the world origin).
    near_face_distance_m : float
        Smallest x over the box's eight corners at the last sample, m (the face nearest the arm).
    yaw_deg : float
        Rotation of the final pose relative to the initial one about world z (twist), degrees
        in [-180, 180).
    max_tilt_deg : float
        Largest angle over time between the initially-up body axis and world z, degrees.
    flipped : bool
        The face the box rests on changed (the body axis most aligned with ±world z, with its
        sign, differs between the first and the last pose).
    up_axis_initial, up_axis_final : str
        That body axis at the first / last sample, e.g. ``"+z"``.
    touched : bool or None
        Whether the pusher touched the box, as given by the caller (None: unknown).
    duration_s : float
        Time from the first to the last box pose sample, s.
    """

    initial_position: np.ndarray
    final_position: np.ndarray
    final_quaternion: np.ndarray
    initial_distance_m: float
    final_distance_m: float
    near_face_distance_m: float
    yaw_deg: float
    max_tilt_deg: float
    flipped: bool
    up_axis_initial: str
    up_axis_final: str
    touched: bool | None
    duration_s: float

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (arrays as lists), as stored under ``outcomes`` in trial.json."""
        return {
            "initial_position_m": [float(v) for v in self.initial_position],
            "final_position_m": [float(v) for v in self.final_position],
            "final_quaternion_wxyz": [float(v) for v in self.final_quaternion],
            "initial_distance_m": self.initial_distance_m,
            "final_distance_m": self.final_distance_m,
            "near_face_distance_m": self.near_face_distance_m,
            "yaw_deg": self.yaw_deg,
            "max_tilt_deg": self.max_tilt_deg,
            "flipped": self.flipped,
            "up_axis_initial": self.up_axis_initial,
            "up_axis_final": self.up_axis_final,
            "touched": self.touched,
            "duration_s": self.duration_s,
        }


def compute_outcome(box_pose: PoseSeries, box_size: Any, touched: bool | None = None) -> Outcome:
    """Outcome metrics of a box pose series.

    Parameters
    ----------
    box_pose : PoseSeries
        Box centre and orientation over time, arm base frame; at least one sample.
    box_size : array_like, shape (3,)
        Box edge lengths along its body x, y, z axes, m.
    touched : bool or None
        Passed through to :attr:`Outcome.touched`.

    Returns
    -------
    Outcome
    """
    if len(box_pose) == 0:
        raise InputError("cannot compute a trial outcome from an empty box pose series")
    size = np.asarray(box_size, dtype=float).reshape(-1)
    if size.shape != (3,) or not np.all(size > 0):
        raise InputError(f"box size must be three positive lengths in m, got {box_size!r}")
    if not (np.all(np.isfinite(box_pose.position)) and np.all(np.isfinite(box_pose.quaternion))):
        raise DataError("box pose series holds non-finite values")
    rotations = rotation_matrices(box_pose.quaternion[[0, -1]])
    first_axis = up_axis(rotations[0])
    last_axis = up_axis(rotations[1])
    corners_body = 0.5 * size * np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    corners_x = box_pose.position[-1, 0] + corners_body @ rotations[1][0, :]
    q_final = box_pose.quaternion[-1] / np.linalg.norm(box_pose.quaternion[-1])
    q_initial = box_pose.quaternion[0] / np.linalg.norm(box_pose.quaternion[0])
    return Outcome(
        initial_position=box_pose.position[0].copy(),
        final_position=box_pose.position[-1].copy(),
        final_quaternion=q_final,
        initial_distance_m=float(box_pose.position[0, 0]),
        final_distance_m=float(box_pose.position[-1, 0]),
        near_face_distance_m=float(np.min(corners_x)),
        yaw_deg=_yaw_deg(q_initial, q_final),
        max_tilt_deg=float(np.max(tilt_deg(box_pose))),
        flipped=first_axis != last_axis,
        up_axis_initial=axis_label(*first_axis),
        up_axis_final=axis_label(*last_axis),
        touched=touched,
        duration_s=float(box_pose.t[-1] - box_pose.t[0]),
    )


PLANAR_KEY = "planar"
"""Marks a planar recording (box x, y and heading only; :func:`sim2real.trials.csv_import.read_csv_recording`):
trial.json ``import.planar`` says what the import set (the box centre's height, the pusher's), and the
recorded platform's outcome carries ``"planar": true`` with its tilt and flip unknown (null)."""

#: Outcome keys a planar recording cannot tell (the tilt, and the face the box rests on).
TILT_KEYS: tuple[str, ...] = ("max_tilt_deg", "flipped", "up_axis_initial", "up_axis_final")
#: Outcome keys a planar recording of box positions only (``import bag --planar``) cannot tell either.
HEADING_KEYS: tuple[str, ...] = ("yaw_deg",)


def planar_platforms(meta: Mapping[str, Any]) -> tuple[str, ...]:
    """The platforms whose box poses in a trial came from a planar recording.

    Parameters
    ----------
    meta : mapping
        trial.json content; a planar import has an ``import.planar`` section (a replay keeps it).

    Returns
    -------
    tuple of str
        ``("real",)`` (an import records the real platform) for a planar recording, else empty.
    """
    section = TrialMeta(meta).imported
    return ("real",) if section is not None and section.get(PLANAR_KEY) else ()


def heading_unknown(meta: Mapping[str, Any]) -> bool:
    """Whether a trial's planar recording holds no heading either (box positions only, ``import bag
    --planar``: trial.json ``import.planar.heading`` is ``"unknown"``)."""
    section = TrialMeta(meta).imported
    planar = section.get(PLANAR_KEY) if section is not None else None
    return isinstance(planar, Mapping) and planar.get("heading") == "unknown"


def tilt_unknown(outcome: Mapping[str, Any], heading: bool = True) -> dict[str, Any]:
    """An outcome (trial.json form, :meth:`Outcome.as_dict`) of a planar recording: tilt and flip unknown.

    A planar recording holds pure rotations about world z, from which :func:`compute_outcome` would
    report a tilt of 0 and "not flipped"; that is no measurement. The keys of :data:`TILT_KEYS`
    become None (null) and ``"planar"`` True; without a recorded ``heading`` (a constant orientation,
    :func:`heading_unknown`) the keys of :data:`HEADING_KEYS` too. An outcome with an ``"error"`` is
    returned as it is.
    """
    if "error" in outcome:
        return dict(outcome)
    unknown = TILT_KEYS if heading else TILT_KEYS + HEADING_KEYS
    return {**outcome, **dict.fromkeys(unknown), PLANAR_KEY: True}


@dataclass(frozen=True)
class OutcomeErrors:
    """How far one platform's trial outcome is from another's (e.g. sim from real).

    The whole-trial prediction errors of a fit (:mod:`sim2real.sysid.prediction.whole_trials`) and the
    sim-vs-real columns of the report are these numbers. NaN (flip: None) where an outcome lacks
    what the number needs.

    Attributes
    ----------
    final_position_m : float
        ``|p_other − p_reference|`` of the final box centres, 3-D, m (arm base frame).
    final_position_xy_m : float
        The same in the table plane (base x and y; the table is horizontal), m.
    yaw_deg : float
        ``|yaw_other − yaw_reference|`` of the twists about world z since each start, wrapped
        to [0, 180], deg.
    flip_agree : bool or None
        Both boxes changed the face they rest on, or neither did.
    """

    final_position_m: float = math.nan
    final_position_xy_m: float = math.nan
    yaw_deg: float = math.nan
    flip_agree: bool | None = None


def _final_position(outcome: Outcome | Mapping[str, Any]) -> np.ndarray | None:
    if isinstance(outcome, Outcome):
        return np.asarray(outcome.final_position, dtype=float)
    raw = outcome.get("final_position_m")
    try:
        position = np.asarray(raw, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        return None
    return position if position.shape == (3,) and np.all(np.isfinite(position)) else None


def _number(outcome: Outcome | Mapping[str, Any], key: str) -> float:
    value = getattr(outcome, key) if isinstance(outcome, Outcome) else outcome.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return math.nan
    return float(value)


def _flipped(outcome: Outcome | Mapping[str, Any]) -> bool | None:
    value = outcome.flipped if isinstance(outcome, Outcome) else outcome.get("flipped")
    return value if isinstance(value, bool) else None


def outcome_errors(reference: Outcome | Mapping[str, Any], other: Outcome | Mapping[str, Any]) -> OutcomeErrors:
    """Final position (3-D and in the table plane), yaw and flip errors of ``other`` against ``reference``.

    Parameters
    ----------
    reference, other : Outcome or mapping
        Outcomes of the same trial on two platforms (real and sim), as :class:`Outcome` or as
        stored in trial.json (:meth:`Outcome.as_dict`: ``final_position_m`` (3,) m, ``yaw_deg``,
        ``flipped``); missing or non-finite entries give NaN / None in the result.

    Returns
    -------
    OutcomeErrors
    """
    errors: dict[str, Any] = {}
    a, b = _final_position(reference), _final_position(other)
    if a is not None and b is not None:
        offset = b - a
        errors["final_position_m"] = float(np.linalg.norm(offset))
        errors["final_position_xy_m"] = float(np.linalg.norm(offset[:2]))
    yaw_a, yaw_b = _number(reference, "yaw_deg"), _number(other, "yaw_deg")
    if math.isfinite(yaw_a) and math.isfinite(yaw_b):
        errors["yaw_deg"] = abs((yaw_b - yaw_a + 180.0) % 360.0 - 180.0)
    flip_a, flip_b = _flipped(reference), _flipped(other)
    if flip_a is not None and flip_b is not None:
        errors["flip_agree"] = flip_a == flip_b
    return OutcomeErrors(**errors)


def _path_offsets(a: PoseSeries, b: PoseSeries) -> np.ndarray | None:
    """``a(t) − b(t)`` (K, 3), m, at the samples of ``b`` inside ``a``'s time span (``a`` interpolated
    linearly), or None when the spans do not overlap or a series is empty."""
    if len(a) == 0 or len(b) == 0:
        return None
    inside = (b.t >= a.t[0]) & (b.t <= a.t[-1])
    if not np.any(inside):
        return None
    t = b.t[inside]
    at = np.column_stack([np.interp(t, a.t, a.position[:, j]) for j in range(3)])
    return at - b.position[inside]


def path_gap(a: PoseSeries, b: PoseSeries) -> float | None:
    """Largest distance between two recorded paths of one body over their common time span.

    Used for the pusher: the real arm's recorded pusher path against the simulated arm's. A large
    gap means the two arms did not move alike (e.g. the real loop's commands reached the arm late),
    so the box outcomes of that trial compare different pushes.

    Parameters
    ----------
    a, b : PoseSeries
        Positions (N, 3) and (M, 3), m, in the arm base frame, times in s since the trial start.

    Returns
    -------
    float or None
        Largest ``|a(t) - b(t)|`` (m) over the samples of ``b`` inside ``a``'s time span (``a``
        linearly interpolated), or None when the spans do not overlap.
    """
    offsets = _path_offsets(a, b)
    return None if offsets is None else float(np.max(np.linalg.norm(offsets, axis=1)))


def path_rms(a: PoseSeries, b: PoseSeries) -> float | None:
    """Root-mean-square distance between two recorded paths of one body over their common time span.

    Used for the box: the real box path against the simulated one (the report's path error).

    Parameters
    ----------
    a, b : PoseSeries
        Positions (N, 3) and (M, 3), m, in the arm base frame, times in s since the trial start.

    Returns
    -------
    float or None
        ``sqrt(mean |a(t) − b(t)|²)`` (m, 3-D) over the samples of ``b`` inside ``a``'s time span
        (``a`` linearly interpolated), or None when the spans do not overlap.
    """
    offsets = _path_offsets(a, b)
    return None if offsets is None else float(np.sqrt(np.mean(np.sum(offsets ** 2, axis=1))))

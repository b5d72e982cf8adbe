"""The box-push experiment's trial sequence, without ROS: poses, moves, tolerances, windows.

The ``experiment`` node (:mod:`sim2real.nodes.experiment`) runs, per start distance:

1. **home** (real arm only): a smooth joint-space move from the measured joints to the
   push start (:func:`return_trajectory`), tracked by the PD controllers, until the arm is
   still within ``joint_tolerance`` of the start (:func:`arm_settled`);
2. **place** the box: request the start pose (:func:`requested_box_pose`); the operator
   (or the stand-in world) places it and the measured pose must stay within
   ``start_tolerance`` (:func:`box_within`); the sim is then reset to the measured joints and
   the measured box pose laid flat on the table (:func:`resting_pose`);
3. **push**: the reference is stamped ``lead_time`` in the future and recorded in the
   window :class:`TrialWindow` (stamps ``[start_ns, end_ns]``);
4. **end**: once every platform has reported past ``end_ns``, the recorder closes the trial
   when its streams cover the window and computes the outcomes from them
   (:mod:`sim2real.trials.coverage`); :func:`recorded_outcomes` reads them back.

Frames: arm base frame (``link_base``), table top at ``contact.table_height``. Units SI;
times in ns where they are ROS stamps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sim2real.control.reference import JointTrajectory, PushConfig, box_start_pose
from sim2real.errors import InputError, Sim2RealError
from sim2real.model import ArmModel, solve_pusher_ik
from sim2real.params import ParameterSet
from sim2real.spatial import multiply, normalize, rotate, yaw
from sim2real.trials.jsonio import read_json
from sim2real.trials.meta import TrialMeta
from sim2real.trials.outcome import Outcome
from sim2real.trials.schema import TRIAL_JSON, trial_name

FloatArray = NDArray[np.float64]
NS_PER_S = 1_000_000_000

#: Platforms each run mode drives.
MODE_PLATFORMS: dict[str, tuple[str, ...]] = {
    "mirror": ("real", "sim"),
    "standin": ("real", "sim"),
    "real": ("real",),
    "sim": ("sim",),
}
MIRROR_MODES = ("closed", "commands")


def platforms_of(mode: str) -> tuple[str, ...]:
    """Platform namespaces of run ``mode`` (``mirror``, ``standin``, ``real`` or ``sim``)."""
    try:
        return MODE_PLATFORMS[mode]
    except KeyError:
        raise InputError(f"unknown mode '{mode}' (expected one of {', '.join(MODE_PLATFORMS)})") from None


def check_mirror(mirror: str, mode: str) -> str:
    """Validate the mirroring mode; ``commands`` needs both platforms."""
    if mirror not in MIRROR_MODES:
        raise InputError(f"unknown mirroring '{mirror}' (expected closed or commands)")
    if mirror == "commands" and len(platforms_of(mode)) < 2:
        raise InputError(f"mirroring 'commands' needs a real and a sim platform; mode '{mode}' has only "
                         f"{platforms_of(mode)[0]}", option="mirror")
    return mirror


#: Topics of one platform the recorder stores.
PLATFORM_SERIES = ("joint_states", "joint_command", "box_pose", "pusher_pose")


def required_matches(platforms: Sequence[str], mirror: str) -> dict[str, tuple[str, ...]]:
    """Which node (by role) must have a matched publisher on which topic before a trial starts.

    Roles: ``recorder``, ``real`` (xarm_node, which runs the real platform's PD law in its read
    loop), ``sim`` (sim_node), ``sim_pd_controller``. Topics are absolute names. Every topic listed has exactly one
    publisher in the graph, so one match means the data path is connected.
    """
    reference = "/reference/joint_trajectory"
    required: dict[str, tuple[str, ...]] = {
        "recorder": (*(f"/{ns}/{series}" for ns in platforms for series in PLATFORM_SERIES), reference)}
    if "real" in platforms:
        required["real"] = (reference,)
    if "sim" in platforms:
        required["sim"] = ("/sim/joint_command", "/sim/reset")
        required["sim_pd_controller"] = (("/real/joint_command",) if mirror == "commands"
                                         else ("/sim/joint_states", reference))
    return required


def missing_matches(required: dict[str, tuple[str, ...]], reports: dict[str, dict[str, int]]) -> list[str]:
    """``"role: topic"`` for every required match not (yet) reported; ``reports`` maps a role to
    its last ``{topic: matched publisher count}``."""
    missing = []
    for role, topics in required.items():
        matched = reports.get(role)
        if matched is None:
            missing.append(f"{role}: no status")
            continue
        missing += [f"{role}: {topic}" for topic in topics if matched.get(topic, 0) < 1]
    return missing


#: Start distances the experiment takes (m, open interval): anything its IK may reach on a table.
EXPERIMENT_DISTANCES: tuple[float, float] = (0.0, 1.5)


def parse_distances(text: str | Sequence[float], within: tuple[float, float] = EXPERIMENT_DISTANCES,
                    closed: bool = False, unique: bool = False, what: str = "distances",
                    option: str | None = None) -> tuple[float, ...]:
    """Start distances (m) from ``"0.30,0.45"`` or a sequence: the one grammar of ``--distances`` everywhere.

    Parameters
    ----------
    text : str or sequence of float
        Numbers in m separated by single commas (spaces allowed), or the numbers.
    within : (float, float)
        The range each must lie in (m): open unless ``closed``.
    unique : bool
        Refuse a distance given twice (a sweep's table is keyed by it).
    what : str
        Names the distances in errors.
    option : str, optional
        The argparse dest of the option that gives them, for errors (:class:`~sim2real.errors.Sim2RealError`).

    Raises
    ------
    Sim2RealError
        No distance, an empty entry (``0.3,,0.4``, a comma at an end), a value that is not a finite number or
        is outside the range, or (``unique``) a repeated value.
    """
    if isinstance(text, str):
        parts = [p.strip() for p in text.split(",")]
        if any(parts) and not all(parts):
            raise InputError(f"{what} '{text}' have an empty entry; give numbers in m separated by single "
                             f"commas, e.g. 0.30,0.45", option=option)
        parts = [p for p in parts if p]
        try:
            values = tuple(float(p) for p in parts)
        except ValueError:
            raise InputError(f"{what} must be comma-separated numbers in m, got '{text}'", option=option) from None
    else:
        values = tuple(float(v) for v in text)
    if not values:
        raise InputError(f"{what} names no start distance", option=option)
    low, high = within
    for value in values:
        inside = low <= value <= high if closed else low < value < high
        if not (np.isfinite(value) and inside):
            interval = f"[{low:g}, {high:g}]" if closed else f"({low:g}, {high:g})"
            raise InputError(f"start distance {value:g} m is outside {interval} m", option=option)
    if unique and len(set(values)) != len(values):
        repeated = next(v for v in values if values.count(v) > 1)
        raise InputError(f"{what}: {repeated:g} is given twice", option=option)
    return values


def start_joints(arm: ArmModel, push: PushConfig, table_height: float = 0.0) -> FloatArray:
    """Joint angles (6,) rad with the pusher at the push start, tool pointing down."""
    target = np.array([push.start_x, push.lateral, table_height + push.height])
    return solve_pusher_ik(arm, target).q


def return_trajectory(q_from: FloatArray, q_to: FloatArray, max_speed: float = 0.5,
                      rate_hz: float = 100.0, min_duration: float = 0.5, hold: float = 0.3) -> JointTrajectory:
    """A smooth joint-space move from ``q_from`` to ``q_to`` (both (6,) rad), then a hold.

    Each joint follows the same cosine blend ``s(τ) = (1 − cos πτ)/2``, with the duration
    chosen so that the fastest joint peaks at ``max_speed`` rad/s.

    Returns
    -------
    JointTrajectory
        ``t`` from 0; ``pusher`` is NaN (the move is not a push).
    """
    q_from = np.asarray(q_from, dtype=float)
    q_to = np.asarray(q_to, dtype=float)
    span = float(np.max(np.abs(q_to - q_from)))
    duration = max(min_duration, np.pi * span / (2.0 * max_speed))
    dt = 1.0 / rate_hz
    t = np.arange(round((duration + hold) / dt) + 1, dtype=float) * dt
    tau = np.clip(t / duration, 0.0, 1.0)
    s = 0.5 * (1.0 - np.cos(np.pi * tau))
    sdot = np.where(t < duration, 0.5 * np.pi / duration * np.sin(np.pi * tau), 0.0)
    position = q_from + s[:, None] * (q_to - q_from)
    velocity = sdot[:, None] * (q_to - q_from)
    return JointTrajectory(t=t, position=position, velocity=velocity, pusher=np.full((len(t), 3), np.nan))


def arm_settled(q: FloatArray, v: FloatArray, q_target: FloatArray, joint_tolerance: float = 0.01,
                velocity_tolerance: float = 0.02) -> bool:
    """True when every joint is within ``joint_tolerance`` rad of ``q_target`` and slower than
    ``velocity_tolerance`` rad/s."""
    return bool(np.max(np.abs(np.asarray(q) - q_target)) <= joint_tolerance
                and np.max(np.abs(v)) <= velocity_tolerance)


def requested_box_pose(distance: float, params: ParameterSet, yaw_deg: float = 0.0) -> tuple[FloatArray, FloatArray]:
    """Start pose of the box the experiment requests (:func:`sim2real.control.reference.box_start_pose`): upright,
    centre ``distance`` m along base x, turned ``yaw_deg`` deg about base z (the trial push's ``box_yaw_deg``).

    Returns
    -------
    position : ndarray, shape (3,)
        Box centre, m, base frame.
    quaternion : ndarray, shape (4,)
        (w, x, y, z); yaw 0: body axes aligned with the base axes.
    """
    return box_start_pose(distance, params, yaw_deg)


def box_yaw_off_deg(quaternion: FloatArray, requested: FloatArray) -> float:
    """|yaw of ``quaternion`` − yaw of ``requested``| about base z (deg, wrapped to [0, 180]); both (w, x, y, z)."""
    turn = yaw(np.asarray(quaternion, dtype=float)) - yaw(np.asarray(requested, dtype=float))
    return float(abs(np.degrees(np.arctan2(np.sin(turn), np.cos(turn)))))


def yaw_deg(quaternion: FloatArray) -> float:
    """The yaw of ``quaternion`` (4,) (w, x, y, z) about base z (deg, in (-180, 180])."""
    return float(np.degrees(yaw(np.asarray(quaternion, dtype=float))))


def mean_heading(quaternions: FloatArray) -> FloatArray:
    """The circular mean of the yaws of ``quaternions`` (n, 4) (w, x, y, z), as a yaw-only quaternion (4,).

    The noise of one measured pose, averaged over several: tilts are dropped (a box at rest is level).
    """
    headings = yaw(np.asarray(quaternions, dtype=float))
    heading = float(np.arctan2(np.mean(np.sin(headings)), np.mean(np.cos(headings))))
    return np.array([np.cos(heading / 2.0), 0.0, 0.0, np.sin(heading / 2.0)])


def box_within(position: FloatArray, requested: FloatArray, tolerance: float) -> bool:
    """True when the box centre is within ``tolerance`` m of ``requested`` in the table plane."""
    return bool(np.hypot(*(np.asarray(position)[:2] - np.asarray(requested)[:2])) <= tolerance)


def mocap_to_base(position: FloatArray, quaternion: FloatArray, translation: FloatArray,
                  rotation: FloatArray) -> tuple[FloatArray, FloatArray]:
    """A motion-capture pose expressed in the arm base frame.

    Parameters
    ----------
    position, quaternion : ndarray, shapes (3,), (4,)
        Box pose in the mocap frame (m; w, x, y, z).
    translation, rotation : ndarray, shapes (3,), (4,)
        ``base_from_mocap``: the mocap frame's origin (m) and orientation (w, x, y, z) in the
        arm base frame, so ``p_base = R · p_mocap + t``.

    Returns
    -------
    position : ndarray, shape (3,)
    quaternion : ndarray, shape (4,)
        Unit (w, x, y, z), base frame.
    """
    rotation = normalize(np.asarray(rotation, dtype=float))
    return (rotate(rotation, np.asarray(position, dtype=float)) + np.asarray(translation, dtype=float),
            normalize(multiply(rotation, np.asarray(quaternion, dtype=float))))


def resting_pose(position: FloatArray, quaternion: FloatArray, params: ParameterSet) -> tuple[FloatArray, FloatArray]:
    """A measured box pose laid flat on the table: measured x, y and yaw, exact height, no tilt.

    Used to start the sim from where the real box actually stands (mocap noise would
    otherwise put the sim box slightly into or above the table).
    """
    w, x, y, z = np.asarray(quaternion, dtype=float)
    heading = np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    height = float(params["contact.table_height"]) + 0.5 * float(params["box.size_z"])
    return (np.array([position[0], position[1], height]),
            np.array([np.cos(heading / 2.0), 0.0, 0.0, np.sin(heading / 2.0)]))


@dataclass(frozen=True)
class ReplayStart:
    """What a recorded trial's replay into the sim starts from.

    Attributes
    ----------
    reference : JointTrajectory
        The recorded reference (``t`` from 0 s; ``pusher`` NaN).
    joints : ndarray, shape (6,)
        First recorded joint angles (rad) of the trial's platform.
    box_pose : tuple of ndarray, shapes (3,), (4,)
        First recorded box pose (m; w, x, y, z), base frame.
    distance : float
        The trial's requested start distance (m).
    """

    reference: JointTrajectory
    joints: FloatArray
    box_pose: tuple[FloatArray, FloatArray]
    distance: float


def replay_start(record: Any) -> ReplayStart:
    """The replay start of a :class:`sim2real.trials.TrialRecord` (the real platform's data if
    it has one, else the sim's).

    Raises
    ------
    Sim2RealError
        The trial has no reference, joint states or box poses.
    """
    platform = "real" if "real" in record.platforms else "sim"
    data = record.platforms.get(platform)
    if record.reference is None or data is None or data.joint_states is None or data.box_pose is None \
            or not len(data.joint_states) or not len(data.box_pose):
        raise InputError(f"trial {record.name}: a replay needs its reference, joint states and box poses")
    ref = record.reference
    reference = JointTrajectory(t=ref.t - ref.t[0], position=ref.position, velocity=ref.velocity,
                                pusher=np.full((len(ref.t), 3), np.nan))
    recorded = record.info.initial_distance_m
    distance = float(data.box_pose.position[0, 0] if recorded is None else recorded)
    return ReplayStart(reference, np.array(data.joint_states.position[0], dtype=float),
                       (np.array(data.box_pose.position[0]), np.array(data.box_pose.quaternion[0])), distance)


@dataclass(frozen=True)
class TrialWindow:
    """One trial's identity and recording window.

    Attributes
    ----------
    index : int
        Trial number in the run (0-based).
    distance : float
        Requested start distance (m).
    name : str
        Trial directory name (:func:`sim2real.trials.trial_name`).
    start_ns, end_ns : int
        ROS stamps (ns) of the first and last reference point; messages stamped in
        ``[start_ns, end_ns]`` belong to the trial.
    """

    index: int
    distance: float
    name: str
    start_ns: int
    end_ns: int

    @classmethod
    def plan(cls, index: int, distance: float, now_ns: int, reference: JointTrajectory,
             lead_time: float) -> TrialWindow:
        """The window of a trial whose reference starts ``lead_time`` s after ``now_ns``."""
        start = int(now_ns + round(lead_time * NS_PER_S))
        end = start + round(float(reference.t[-1] - reference.t[0]) * NS_PER_S)
        return cls(index, float(distance), trial_name(index, distance), start, end)

    def contains(self, stamp_ns: int) -> bool:
        """Whether a message stamped ``stamp_ns`` belongs to the trial."""
        return self.start_ns <= stamp_ns <= self.end_ns

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form (the recorder's trial start event)."""
        return {"index": self.index, "distance": self.distance, "trial": self.name,
                "start_ns": self.start_ns, "end_ns": self.end_ns}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrialWindow:
        """Inverse of :meth:`as_dict`."""
        return cls(int(data["index"]), float(data["distance"]), str(data["trial"]),
                   int(data["start_ns"]), int(data["end_ns"]))


def recorded_outcomes(trial_dir: Path, platforms: Sequence[str]) -> dict[str, Mapping[str, Any] | None]:
    """Each platform's outcome as the recorder stored it in ``trial_dir/trial.json`` (None: none stored)."""
    try:
        document: Mapping[str, Any] | None = read_json(Path(trial_dir) / TRIAL_JSON, "trial file")
    except (OSError, Sim2RealError):
        document = None
    stored = TrialMeta(document).outcomes if document is not None else {}
    return {ns: stored.get(ns) if isinstance(stored.get(ns), Mapping) else None for ns in platforms}


def progress_line(window: TrialWindow, total: int, outcomes: Mapping[str, Outcome | Mapping[str, Any] | None],
                  lateral: float = 0.0, box_yaw_deg: float = 0.0) -> str:
    """One line per finished trial, e.g. ``trial 1/2 d=0.300 m: real 0.300→0.462 m upright; ...``.

    ``outcomes`` per platform: an :class:`Outcome`, its trial.json form, or None (no box pose). A trial
    whose push runs off the box's centre line (``lateral``, the pusher y in m) or meets a box turned at the start
    (``box_yaw_deg``) says so: ``trial 2/2 d=0.300 m lateral=+0.030 m yaw=+20.0 deg: ...``.
    """
    parts = []
    for ns in sorted(outcomes):
        outcome = outcomes[ns]
        data = outcome.as_dict() if isinstance(outcome, Outcome) else outcome
        if data is None or data.get("final_distance_m") is None:
            parts.append(f"{ns}: no outcome" + (f" ({data['error']})" if data and data.get("error") else ""))
        else:
            state = "FLIPPED" if data.get("flipped") else "upright"
            parts.append(f"{ns} {data['initial_distance_m']:.3f}->{data['final_distance_m']:.3f} m {state}")
    offset = (f" lateral={lateral:+.3f} m" if lateral else "") + (f" yaw={box_yaw_deg:+.1f} deg" if box_yaw_deg else "")
    return f"trial {window.index + 1}/{total} d={window.distance:.3f} m{offset}: " + "; ".join(parts)

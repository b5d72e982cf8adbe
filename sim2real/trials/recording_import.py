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
   outliers (:func:`~sim2real.trials.cleaning.find_outliers`: ``orientation_flips`` and ``position_jumps``);
4. maps poses into the experiment (arm base, ``link_base``) frame: the box centre is the tracked pose
   composed with ``box_offset`` (the box centre frame in the tracked body's frame), then everything
   goes through ``transform`` (the recording frame in the arm base frame); a planar recording
   (``Recording.planar``: x, y and heading, level transforms only) has its box centre put at half the
   object's thickness, resting on the table, and its trial.json says so (``import.planar``, the real
   outcome's tilt and flip unknown: :func:`~sim2real.trials.outcome.tilt_unknown`);
5. checks every trial's scene against its object before writing any (:mod:`sim2real.trials.scene_checks`:
   the box starts on the table, not in it nor above it, and the pusher starts outside the box and comes
   within reach of it): a failing trial refuses the import, unless ``force`` keeps it, flagged in its
   trial.json (``import.scene_checks``);
6. writes each trial (``/real/box_pose``, ``/real/pusher_pose``, ``/real/joint_states`` and a
   trial.json with an ``"import"`` section; box poses from camera images add the tally of the images
   in the trial's window, ``import.camera``) into a hidden temporary run directory, renamed to the
   output directory only when every trial is written; on any error nothing is left behind.

Times are integer ns throughout (no float rounding of epoch times); a trial's ``timing.start_ns`` is
its first kept sample on the chosen clock.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.errors import DataError, InputError
from sim2real.filemodes import staging_dir
from sim2real.trials.camera_tally import tally_lines
from sim2real.trials.cleaning import CleanPoses, clean_poses, unique_time_order
from sim2real.trials.outcome import PLANAR_KEY
from sim2real.trials.recording import (
    MIN_BOX_POSES,
    NS_PER_S,
    ImportSettings,
    JointSamples,
    PoseSamples,
    Recording,
    check_planar,
    planar_height,
)
from sim2real.trials.rigid import RigidTransform, body_offset_poses
from sim2real.trials.scene import SceneSpec
from sim2real.trials.scene_checks import SCENE_CHECKS_KEY, SceneSamples, check_trials
from sim2real.trials.schema import BASE_FRAME
from sim2real.trials.writer import TrialBagWriter, write_run_meta


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


def _experiment_poses(clean: CleanPoses, offset: RigidTransform,
                      transform: RigidTransform) -> tuple[np.ndarray, np.ndarray]:
    position, quaternion = body_offset_poses(clean.position, clean.quaternion, offset)
    return transform.apply_poses(position, quaternion)


@dataclass(frozen=True)
class _TrialSamples:
    """One trial window's cleaned samples: box and pusher poses (recording frame), and the indices (K,) of the
    joint states kept, in time order, with the counts of those dropped (``invalid``, ``duplicate_stamps``)."""

    box: CleanPoses
    pusher: CleanPoses | None
    joints_index: np.ndarray | None
    joint_counts: dict[str, int]


#: One sample to write: (time on the chosen clock ns, series order, index in its series, series, receive ns).
_Event = tuple[int, int, int, str, int]


def _window_label(recording: Recording, window_index: int, settings: ImportSettings) -> str:
    """How log lines and errors name a trial window: the recording, and the window unless there is one."""
    return f"{recording.path}: window {window_index}" if settings.split.kind != "none" else recording.path


def _skip_short(box: CleanPoses, recording: Recording, window: tuple[int, int], where: str,
                settings: ImportSettings, origin_ns: int, log: Callable[[str], None]) -> bool:
    """Whether the window keeps too few box poses for a trial (then logged), raising when the whole
    recording is the one window (``--split none``)."""
    if box.t_ns.shape[0] >= MIN_BOX_POSES:
        return False
    if settings.split.kind == "none":  # the whole recording gives no trial: one line, the error itself
        kept = int(box.t_ns.shape[0])
        raise InputError(f"{recording.path}: no trial with at least {MIN_BOX_POSES} box poses (split "
                         f"{settings.split.spec}): {kept} of {kept + sum(box.counts.values())} box poses "
                         f"kept (dropped: {_counts_text(box.counts)})")
    span = (f" ({(window[0] - origin_ns) / NS_PER_S:.3f}-{(window[1] - origin_ns) / NS_PER_S:.3f} s)"
            if settings.split.kind != "none" else "")
    log(f"{where}{span}: skipped, {box.t_ns.shape[0]} box poses (a trial needs {MIN_BOX_POSES})")
    return True


def _clean_joints(joints: JointSamples, window: tuple[int, int], clock: str) -> tuple[np.ndarray, dict[str, int]]:
    """Indices (K,) of the window's joint states with finite positions and velocities, in time order without
    repeated stamps, and the counts dropped (``invalid``, ``duplicate_stamps``)."""
    index = _in_window(_clock(joints, clock), window)
    finite = np.all(np.isfinite(joints.position[index]) & np.isfinite(joints.velocity[index]), axis=1)
    index = index[finite]
    order, duplicates = unique_time_order(_clock(joints, clock)[index], joints.receive_ns[index])
    return index[order], {"invalid": int(np.count_nonzero(~finite)), "duplicate_stamps": duplicates}


def _clean_pusher_and_joints(recording: Recording, box: CleanPoses, window: tuple[int, int],
                             settings: ImportSettings) -> _TrialSamples:
    """The window's cleaned pusher poses and joint states beside its cleaned ``box`` poses."""
    clock = settings.clock
    pusher = None
    if recording.pusher is not None:
        pusher = clean_poses(recording.pusher, _in_window(_clock(recording.pusher, clock), window), clock,
                             settings.outlier_angle_rad, settings.outlier_jump_m)
    joints_index = None
    joint_counts: dict[str, int] = {}
    if recording.joints is not None:
        joints_index, joint_counts = _clean_joints(recording.joints, window, clock)
    return _TrialSamples(box, pusher, joints_index, joint_counts)


def _events(recording: Recording, samples: _TrialSamples, clock: str) -> list[_Event]:
    """Every kept sample of the trial as an :data:`_Event`, sorted (by time, then box, pusher, joints)."""
    box, pusher, joints_index = samples.box, samples.pusher, samples.joints_index
    events: list[_Event] = []  # (t_ns, kind order, k, series, receive)
    for k in range(box.t_ns.shape[0]):
        events.append((int(box.t_ns[k]), 0, k, "box", int(box.receive_ns[k])))
    if pusher is not None and pusher.t_ns.shape[0]:
        for k in range(pusher.t_ns.shape[0]):
            events.append((int(pusher.t_ns[k]), 1, k, "pusher", int(pusher.receive_ns[k])))
    if joints_index is not None and recording.joints is not None:
        t_joint = _clock(recording.joints, clock)
        for k, i in enumerate(joints_index):
            events.append((int(t_joint[i]), 2, k, "joints", int(recording.joints.receive_ns[i])))
    events.sort()
    return events


@dataclass(frozen=True)
class _ExperimentPoses:
    """A trial's box centre poses (N, 3) m and (N, 4), and pusher tip poses (M, 3) and (M, 4) (None without
    pusher samples), in the experiment (arm base) frame."""

    box_position: np.ndarray
    box_quaternion: np.ndarray
    pusher_position: np.ndarray | None
    pusher_quaternion: np.ndarray | None


def _experiment_frame(samples: _TrialSamples, settings: ImportSettings, recording: Recording) -> _ExperimentPoses:
    """The box centre (``box_offset``) and pusher tip (``tool_offset``) poses, mapped through ``transform`` (the
    box then through ``box_transform``);
    a planar recording's box centre (and a pusher without heights) at :func:`planar_height`."""
    box_position, box_quaternion = _experiment_poses(samples.box, settings.box_offset,
                                                     settings.box_transform.compose(settings.transform))
    if recording.planar:
        box_position = np.array(box_position, dtype=float, copy=True)
        box_position[:, 2] = planar_height(settings)
    pusher_position = pusher_quaternion = None
    if samples.pusher is not None and samples.pusher.t_ns.shape[0]:
        pusher_position, pusher_quaternion = _experiment_poses(samples.pusher, settings.tool_offset,
                                                               settings.transform)
        if recording.planar_pusher:
            pusher_position = np.array(pusher_position, dtype=float, copy=True)
            pusher_position[:, 2] = planar_height(settings)
    return _ExperimentPoses(box_position, box_quaternion, pusher_position, pusher_quaternion)


def _write_events(writer: TrialBagWriter, events: list[_Event], poses: _ExperimentPoses, recording: Recording,
                  joints_index: np.ndarray | None) -> None:
    """Write the ``events`` as ``/real`` box poses, pusher poses (``poses``) and joint states (``joints_index``
    (K,) into the recording's)."""
    box_position, box_quaternion = poses.box_position, poses.box_quaternion
    pusher_position, pusher_quaternion = poses.pusher_position, poses.pusher_quaternion
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


def _series_summary(recording: Recording, samples: _TrialSamples
                    ) -> tuple[dict[str, int], dict[str, dict[str, int]], dict[str, str]]:
    """Per series written (``box_pose``, ``pusher_pose``, ``joint_states``): samples kept, samples dropped by
    reason, and the source."""
    box, pusher, joints_index = samples.box, samples.pusher, samples.joints_index
    kept = {"box_pose": int(box.t_ns.shape[0])}
    outliers = {"box_pose": box.counts}
    sources = {"box_pose": recording.box.source}
    if pusher is not None and recording.pusher is not None:
        kept["pusher_pose"] = int(pusher.t_ns.shape[0])
        outliers["pusher_pose"] = pusher.counts
        sources["pusher_pose"] = recording.pusher.source
    if joints_index is not None and recording.joints is not None:
        kept["joint_states"] = int(joints_index.shape[0])
        outliers["joint_states"] = samples.joint_counts
        sources["joint_states"] = recording.joints.source
    return kept, outliers, sources


def _trial_meta(recording: Recording, window: tuple[int, int], settings: ImportSettings, origin_ns: int,
                start_ns: int, end_ns: int, kept: dict[str, int], outliers: dict[str, dict[str, int]],
                sources: dict[str, str]) -> dict[str, Any]:
    """The trial.json of an imported trial (``start_ns``, ``end_ns``: its first and last sample, ns), with
    its ``"import"`` section (``kept``, ``outliers``, ``sources``: :func:`_series_summary`)."""
    import_meta: dict[str, Any] = {
        "source": str(Path(recording.path).resolve()),
        "format": recording.format,
        "series": sources,
        "clock": settings.clock,
        "recording_frame": recording.frame,
        "transform": {"from": recording.frame, "to": BASE_FRAME, **settings.transform.as_dict()},
        "box_offset": settings.box_offset.as_dict(),
        "box_transform": settings.box_transform.as_dict(),
        "box_delay_s": settings.box_delay_s,
        **({"frame_uncertainty": settings.frame_uncertainty.as_dict()} if settings.frame_uncertainty else {}),
        "tool_offset": settings.tool_offset.as_dict(),
        "split": settings.split.spec,
        "window_s": [(max(window[0], start_ns) - origin_ns) / NS_PER_S,
                     (min(window[1], end_ns) - origin_ns) / NS_PER_S],
        "recording_start_ns": origin_ns,
        "samples": kept,
        "outliers": outliers,
        "outlier_thresholds": {"angle_deg": math.degrees(settings.outlier_angle_rad),
                               "jump_m": settings.outlier_jump_m},
        **recording.notes,
    }
    if recording.planar:  # a planar CSV's x, y and yaw; or a bag's positions only (--planar), no heading either
        read = {"columns": ["box_x", "box_y", "box_yaw"]} if recording.box.has_orientation else {"heading": "unknown"}
        import_meta[PLANAR_KEY] = {
            **read, "box_z_m": planar_height(settings),
            "pusher_z_m": planar_height(settings) if recording.planar_pusher and "pusher_pose" in kept else None,
            "tilt": "unknown"}
    if recording.camera is not None:
        import_meta["camera"] = recording.camera.trial_record(settings.clock, window)
    meta = {
        "mode": "import",
        "frame": BASE_FRAME,
        "timing": {"start_ns": start_ns, "end_ns": end_ns, "wall_s": (end_ns - start_ns) / NS_PER_S},
        "import": import_meta,
    }
    if settings.object is not None:
        meta["object"] = settings.object.as_dict()
    return meta


@dataclass(frozen=True)
class _PlannedTrial:
    """One trial window ready to write: its name, recording and window (ns on the chosen clock), the
    recording's first sample (ns), how messages name it, its cleaned samples, its poses in the base frame and
    its sorted samples to write (:func:`_events`, at least one)."""

    name: str
    recording: Recording
    window: tuple[int, int]
    origin_ns: int
    where: str
    samples: _TrialSamples
    poses: _ExperimentPoses
    events: list[_Event]

    @property
    def span_ns(self) -> tuple[int, int]:
        """The trial's first and last sample, ns on the chosen clock."""
        return self.events[0][0], self.events[-1][0]  # the events are sorted by time


def _plan_trial(name: str, recording: Recording, window: tuple[int, int], window_index: int,
                settings: ImportSettings, origin_ns: int, log: Callable[[str], None]) -> _PlannedTrial | None:
    """Clean one trial window of ``recording`` and map it into the base frame; None (logged) when the window
    keeps too few box poses."""
    clock = settings.clock
    box = clean_poses(recording.box, _in_window(_clock(recording.box, clock), window), clock,
                      settings.outlier_angle_rad, settings.outlier_jump_m)
    where = _window_label(recording, window_index, settings)
    if _skip_short(box, recording, window, where, settings, origin_ns, log):
        return None
    samples = _clean_pusher_and_joints(recording, box, window, settings)
    events = _events(recording, samples, clock)
    if events[0][0] < 0:
        raise DataError(f"{where}: time stamps before 1970 ({events[0][0]} ns); the trial start must be >= 0")
    return _PlannedTrial(name, recording, window, origin_ns, where, samples,
                         _experiment_frame(samples, settings, recording), events)


def _scene_samples(plan: _PlannedTrial) -> SceneSamples:
    """What the scene checks read of a planned trial: its base-frame poses, s since its start; a push when it
    has pusher samples or joint states."""
    start_ns = plan.span_ns[0]
    pusher, poses = plan.samples.pusher, plan.poses
    pusher_t = (pusher.t_ns - start_ns) / NS_PER_S if pusher is not None and poses.pusher_position is not None else None
    joints = plan.samples.joints_index is not None and plan.samples.joints_index.shape[0] > 0
    return SceneSamples((plan.samples.box.t_ns - start_ns) / NS_PER_S, poses.box_position, poses.box_quaternion,
                        pusher_t, poses.pusher_position, push=pusher_t is not None or joints)


def _write_trial(run_dir: Path, plan: _PlannedTrial, settings: ImportSettings, scene: dict[str, Any] | None,
                 log: Callable[[str], None]) -> ImportedTrial:
    """Write and log one planned trial into ``run_dir``, with its scene-check record (None: not checked)."""
    recording, samples, events = plan.recording, plan.samples, plan.events
    start_ns, end_ns = plan.span_ns
    writer = TrialBagWriter(run_dir, plan.name, start_ns=start_ns, frame_id=BASE_FRAME)
    try:
        has_joints = samples.joints_index is not None and recording.joints is not None
        scene_params = settings.object.parameters if settings.object is not None else None
        writer.write_scene(SceneSpec.from_params(["real"], ["real"] if has_joints else [], params=scene_params),
                           t_ns=min(start_ns, min(e[4] for e in events)))
        _write_events(writer, events, plan.poses, recording, samples.joints_index)
        kept, outliers, sources = _series_summary(recording, samples)
        meta = _trial_meta(recording, plan.window, settings, plan.origin_ns, start_ns, end_ns, kept, outliers,
                           sources)
        if scene is not None:
            meta["import"][SCENE_CHECKS_KEY] = scene
        path = writer.close(meta, complete=True)
    except BaseException:
        writer.abort()
        raise
    trial = ImportedTrial(plan.name, path, kept, outliers, (end_ns - start_ns) / NS_PER_S)
    streams = "; ".join(f"{series} {count}" for series, count in kept.items())
    cleaned = "; ".join(f"{series} {_counts_text(counts)}" for series, counts in outliers.items())
    log(f"{plan.where}: trial {plan.name}: {trial.duration_s:.3f} s, samples: {streams}; dropped: {cleaned}")
    if "camera" in meta["import"]:
        for line in tally_lines(plan.name, meta["import"]["camera"]):
            log(line)
    return trial


def _plan_all(recordings: Sequence[Recording], settings: ImportSettings,
              log: Callable[[str], None]) -> list[_PlannedTrial]:
    """Every trial of every recording, named (unique) and cleaned, nothing written; a recording without any
    trial is an error."""
    plans: list[_PlannedTrial] = []
    taken: set[str] = set()
    for recording in recordings:
        origin = recording_origin_ns(recording, settings.clock)
        stem = recording_stem(recording.path)
        before = len(plans)
        for index, window in enumerate(trial_windows(recording, settings)):
            name = _unique(stem if settings.split.kind == "none" else f"{stem}_{index:02d}", taken)
            plan = _plan_trial(name, recording, window, index, settings, origin, log)
            if plan is not None:
                plans.append(plan)
            else:
                taken.discard(name)
        if len(plans) == before:
            raise InputError(f"{recording.path}: no trial with at least {MIN_BOX_POSES} box poses "
                             f"(split {settings.split.spec})")
    return plans


def import_recordings(recordings: Sequence[Recording], out_dir: str | Path,
                      settings: ImportSettings, log: Callable[[str], None] | None = None,
                      run_meta: dict[str, Any] | None = None) -> list[ImportedTrial]:
    """Write the trials of every recording into a new run directory; all or nothing.

    Every trial is cleaned and its scene checked (:func:`~sim2real.trials.scene_checks.check_trials`, with
    ``settings.object``) before the first is written.

    Parameters
    ----------
    recordings : sequence of Recording
        What to import, in order (trial names follow it).
    out_dir : path
        Run directory to create; it may exist only as an empty directory.
    settings : ImportSettings
        Clock, transforms, split, outlier thresholds, object, scene tolerance and ``force``.
    log : callable, optional
        Receives one line per trial (and per skipped segment, and per trial flagged by ``force``).
    run_meta : dict, optional
        Extra run.json keys.

    Returns
    -------
    list of ImportedTrial
        In recording and time order.

    Raises
    ------
    Sim2RealError
        Existing non-empty output, a recording that yields no trial, a scene that is not physical
        (without ``force``) or any write error; the output directory is then left as it was.
    """
    out_dir = Path(out_dir)
    check_new_run_dir(out_dir)
    recordings = [box_delayed(recording, settings.box_delay_s) for recording in recordings]
    for recording in recordings:
        _check_tool_offset(recording, settings.tool_offset)
        check_planar(recording, settings)
    say = log or (lambda _line: None)
    plans = _plan_all(recordings, settings, say)
    obj = settings.object
    scenes = check_trials([(plan.name, _scene_samples(plan)) for plan in plans],
                          obj.parameters if obj is not None else None, obj.pusher_shape if obj is not None else None,
                          settings.scene_tolerance_m, settings.force, say)
    parent = out_dir.parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp_run = staging_dir(parent, prefix=f".{out_dir.name}.", suffix=".partial")
    try:
        trials = [_write_trial(tmp_run, plan, settings, scenes.get(plan.name), say) for plan in plans]
        write_run_meta(tmp_run, {
            "mode": "import",
            "import": {"sources": [str(Path(r.path).resolve()) for r in recordings], "clock": settings.clock,
                       "split": settings.split.spec, "transform": settings.transform.as_dict(),
                       "box_offset": settings.box_offset.as_dict(), "box_delay_s": settings.box_delay_s,
                       "box_transform": settings.box_transform.as_dict(),
                       "scene_tolerance_m": settings.scene_tolerance_m,
                       "scene_flagged": [name for name, record in scenes.items() if record["problems"]]},
            "trials": [t.name for t in trials],
            **(run_meta or {}),
        })
        check_new_run_dir(out_dir)
        os.rename(tmp_run, out_dir)  # onto an empty directory too (POSIX)
    except BaseException:
        shutil.rmtree(tmp_run, ignore_errors=True)
        raise
    return [ImportedTrial(t.name, out_dir / t.name, t.samples, t.outliers, t.duration_s) for t in trials]


def box_delayed(recording: Recording, delay_s: float) -> Recording:
    """``recording`` with its box samples moved ``delay_s`` back on both clocks (unchanged at 0)."""
    if delay_s == 0.0:
        return recording
    shift = np.int64(round(delay_s * NS_PER_S))
    box = dataclasses.replace(recording.box, stamp_ns=recording.box.stamp_ns - shift,
                              receive_ns=recording.box.receive_ns - shift)
    camera = recording.camera.shifted(int(shift)) if recording.camera is not None else None
    return dataclasses.replace(recording, box=box, camera=camera)


def _check_tool_offset(recording: Recording, offset: RigidTransform) -> None:
    """A tool offset needs a pusher with an orientation (it is fixed in the pusher body's frame)."""
    if offset.is_identity:
        return
    if recording.pusher is None:
        raise InputError(f"{recording.path}: the tool offset moves the pusher, but no pusher pose is imported",
                         option="tool_offset")
    if not recording.pusher.has_orientation:
        raise InputError(f"{recording.path}: the tool offset is fixed in the pusher body's frame, but "
                         f"{recording.pusher.source} gives positions only: name its quaternion fields too",
                         option="tool_offset")


def check_new_run_dir(out_dir: Path) -> None:
    """Raise unless ``out_dir`` is absent or an empty directory."""
    if out_dir.is_symlink() or (out_dir.exists() and not out_dir.is_dir()):
        raise InputError(f"output {out_dir} exists and is not a directory; choose a new one", option="out")
    if out_dir.is_dir() and any(out_dir.iterdir()):
        raise InputError(f"output directory {out_dir} already exists and is not empty; choose a new one")

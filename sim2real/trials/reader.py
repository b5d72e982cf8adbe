"""Reading trials and runs back into :class:`~sim2real.trials.records.TrialRecord`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from rosbags.rosbag2 import Reader

from sim2real.errors import DataError, InputError, Sim2RealError
from sim2real.paths import check_bag_files
from sim2real.trials.jsonio import read_json
from sim2real.trials.messages import NS_PER_S, reorder_joints, shared_typestore, stamp_to_ns
from sim2real.trials.meta import TrialMeta, check_trial_meta
from sim2real.trials.records import (
    PLATFORMS,
    JointReference,
    JointSeries,
    PlatformRecord,
    PoseSeries,
    TrialRecord,
)
from sim2real.trials.schema import (
    BAG_METADATA,
    MSGTYPE_JOINT_STATE,
    MSGTYPE_JOINT_TRAJECTORY,
    MSGTYPE_POSE_STAMPED,
    REFERENCE_TOPIC,
    RUN_JSON,
    SERIES_MSGTYPE,
    TRIAL_JSON,
    split_topic,
)


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text or type(err).__name__


def _bag_dir(path: Path) -> Path:
    if not path.exists():
        raise InputError(f"trial {path} does not exist")
    if path.is_file():
        if path.name == BAG_METADATA or path.suffix in {".mcap", ".db3"} or path.name == TRIAL_JSON:
            path = path.parent
        else:
            raise InputError(f"{path} is not a rosbag2 directory (expected a directory with {BAG_METADATA})")
    if path.is_dir():
        check_bag_files(path)
    if not (path / BAG_METADATA).is_file():
        if any(path.glob("*.mcap")):
            raise DataError(f"bag {path} has no {BAG_METADATA}: the recording was not closed (killed?)")
        raise InputError(f"{path} is not a rosbag2 directory (no {BAG_METADATA})")
    return path


def _joint_series(samples: list[tuple[int, Any]], start_ns: int, what: str) -> JointSeries:
    t = np.array([(stamp - start_ns) / NS_PER_S for stamp, _ in samples])
    arrays = {name: np.zeros((len(samples), 6)) for name in ("position", "velocity", "effort")}
    for k, (_, msg) in enumerate(samples):
        for name, array in arrays.items():
            array[k] = reorder_joints(list(msg.name), getattr(msg, name), f"{what} {name}")
    return JointSeries(t, arrays["position"], arrays["velocity"], arrays["effort"])


def _pose_series(samples: list[tuple[int, Any]], start_ns: int) -> PoseSeries:
    t = np.array([(stamp - start_ns) / NS_PER_S for stamp, _ in samples])
    position = np.array([[m.pose.position.x, m.pose.position.y, m.pose.position.z] for _, m in samples],
                        dtype=float).reshape(-1, 3)
    quaternion = np.array([[m.pose.orientation.w, m.pose.orientation.x, m.pose.orientation.y,
                            m.pose.orientation.z] for _, m in samples], dtype=float).reshape(-1, 4)
    return PoseSeries(t, position, quaternion)


def _reference(msg: Any, start_ns: int) -> JointReference:
    base = stamp_to_ns(msg.header.stamp) - start_ns
    names = list(msg.joint_names)
    t = np.array([(base + stamp_to_ns(p.time_from_start)) / NS_PER_S for p in msg.points])
    position = np.array([reorder_joints(names, p.positions, "reference positions") for p in msg.points])
    velocity = np.array([reorder_joints(names, p.velocities, "reference velocities") for p in msg.points])
    return JointReference(t, position.reshape(-1, 6), velocity.reshape(-1, 6))


def read_trial(path: str | Path, require: Iterable[str] = ()) -> TrialRecord:
    """Read one trial: a trial directory (bag + trial.json) or a bare rosbag2 directory.

    Parameters
    ----------
    path : path
        The trial directory (or its metadata.yaml / .mcap file).
    require : iterable of str
        Topics that must be present, e.g. ``["/real/box_pose"]``.

    Returns
    -------
    TrialRecord
        Time axes are s since ``trial.json`` ``timing.start_ns``, or since the bag's first
        message when there is no trial.json. Header stamps are used as sample times.

    Raises
    ------
    Sim2RealError
        Missing path, not a bag, unreadable or truncated bag, bad trial.json, a trial of a run
        (its directory's parent holds run.json) without its trial.json, missing required
        topic, or messages that do not follow the topic schema.

    Notes
    -----
    A bare rosbag2 directory (no trial.json) outside a run reads as a complete trial without
    metadata. Inside a run every writer leaves a trial.json (``complete: false`` when the
    recording was interrupted), so one that is missing was removed or never written: reading
    the trial as complete would be a guess, and it is refused instead, naming the trial.
    """
    bag = _bag_dir(Path(path))
    if not (bag / TRIAL_JSON).exists() and (bag.parent / RUN_JSON).is_file():
        raise DataError(f"trial {bag} has no {TRIAL_JSON} (its run {bag.parent} has {RUN_JSON}, and every "
                        f"trial of a run has one): it cannot be told complete or interrupted")
    meta: dict[str, Any] = read_json(bag / TRIAL_JSON, "trial file") if (bag / TRIAL_JSON).exists() else {}
    check_trial_meta(meta, bag / TRIAL_JSON)
    typestore = shared_typestore()
    per_topic: dict[str, list[tuple[int, Any]]] = {}
    reference_msg: Any = None
    try:
        with Reader(bag) as reader:
            connections = [c for c in reader.connections if c.topic == REFERENCE_TOPIC or split_topic(c.topic)]
            if not connections:  # reader.messages(connections=[]) would read every topic
                found = sorted({c.topic for c in reader.connections})
                raise DataError(f"bag {bag} has none of the sim2real topics (/real|sim/..., {REFERENCE_TOPIC}); "
                                f"it has {', '.join(found) if found else 'no topics'}")
            bag_start = int(reader.start_time) if reader.message_count else 0
            for connection, _, raw in reader.messages(connections=connections):
                expected = (MSGTYPE_JOINT_TRAJECTORY if connection.topic == REFERENCE_TOPIC
                            else SERIES_MSGTYPE[split_topic(connection.topic)[1]])  # type: ignore[index]
                if connection.msgtype != expected:
                    raise DataError(f"bag {bag}: topic {connection.topic} has type {connection.msgtype}, "
                                    f"expected {expected}")
                msg: Any = typestore.deserialize_cdr(raw, connection.msgtype)  # the message class of msgtype
                if connection.topic == REFERENCE_TOPIC:
                    reference_msg = msg
                else:
                    per_topic.setdefault(connection.topic, []).append((stamp_to_ns(msg.header.stamp), msg))
    except Sim2RealError:
        raise
    except Exception as err:  # rosbags, mcap and CDR errors of damaged files all end here
        raise DataError(f"cannot read bag {bag}: {_one_line(err)}") from None
    missing = [name for name in require if name not in per_topic and not (name == REFERENCE_TOPIC and reference_msg)]
    if missing:
        raise InputError(f"bag {bag} has no messages on {', '.join(missing)}")
    recorded_start = TrialMeta(meta).start_ns
    start_ns = int(bag_start if recorded_start is None else recorded_start)
    platforms: dict[str, dict[str, Any]] = {}
    try:
        for topic_name, samples in per_topic.items():
            ns, series = split_topic(topic_name)  # type: ignore[misc]
            if ns not in PLATFORMS:
                continue
            samples.sort(key=lambda s: s[0])
            if SERIES_MSGTYPE[series] == MSGTYPE_JOINT_STATE:
                value: Any = _joint_series(samples, start_ns, topic_name)
            else:
                assert SERIES_MSGTYPE[series] == MSGTYPE_POSE_STAMPED
                value = _pose_series(samples, start_ns)
            platforms.setdefault(ns, {})[series] = value
        reference = _reference(reference_msg, start_ns) if reference_msg is not None else None
    except ValueError as err:
        raise DataError(f"bag {bag}: {_one_line(err)}") from None
    name = TrialMeta(meta).trial or bag.name
    return TrialRecord(name=name, platforms={ns: PlatformRecord(**fields) for ns, fields in platforms.items()},
                       reference=reference, meta=meta)


def _looks_like_trial(path: Path) -> bool:
    """A sub-directory holding a rosbag2 metadata.yaml, a trial.json or bag storage files."""
    if (path / BAG_METADATA).is_file() or (path / TRIAL_JSON).exists():
        return True
    return any(child.suffix in (".mcap", ".db3") for child in path.iterdir())


def trial_dirs(run_dir: str | Path) -> list[Path]:
    """Trial directories of a run, sorted by name: sub-directories with a rosbag2 metadata.yaml,
    and also those with a trial.json or bag files but no metadata.yaml (reading them then names
    what is missing, instead of leaving the trial out silently).

    Hidden directories (temporary trials still being written) are skipped.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InputError(f"run directory {run_dir} does not exist")
    return sorted(p for p in run_dir.iterdir() if p.is_dir() and not p.name.startswith(".") and _looks_like_trial(p))


def read_run_meta(run_dir: str | Path) -> dict[str, Any]:
    """Content of ``run_dir/run.json``, or an empty dict if the run has none."""
    path = Path(run_dir) / RUN_JSON
    return read_json(path, "run file") if path.exists() else {}


def read_run(run_dir: str | Path, require: Iterable[str] = ()) -> list[TrialRecord]:
    """Read every trial of a run directory, in name order.

    Raises
    ------
    Sim2RealError
        The directory does not exist, holds no trial, or a trial cannot be read (a trial
        without its trial.json in a run with run.json too: see :func:`read_trial`).
    """
    dirs = trial_dirs(run_dir)
    if not dirs:
        raise InputError(f"run directory {run_dir} holds no trials (no sub-directory with {BAG_METADATA})")
    required = list(require)
    return [read_trial(d, require=required) for d in dirs]

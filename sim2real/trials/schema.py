"""Names of the recording contract: topics, message types, file names, schema tags, versions."""

from __future__ import annotations

import importlib.metadata
import platform as _platform

import numpy as np

from sim2real.errors import InputError

TRIAL_SCHEMA = "sim2real.trial/1"
"""Value of ``"schema"`` in every trial.json."""

RUN_SCHEMA = "sim2real.run/1"
"""Value of ``"schema"`` in every run.json."""

TRIAL_JSON = "trial.json"
RUN_JSON = "run.json"
BAG_METADATA = "metadata.yaml"

BASE_FRAME = "link_base"
"""frame_id of poses in the arm base frame (the world origin of the experiment)."""

REFERENCE_TOPIC = "/reference/joint_trajectory"

MSGTYPE_JOINT_STATE = "sensor_msgs/msg/JointState"
MSGTYPE_POSE_STAMPED = "geometry_msgs/msg/PoseStamped"
MSGTYPE_JOINT_TRAJECTORY = "trajectory_msgs/msg/JointTrajectory"

SERIES_MSGTYPE: dict[str, str] = {
    "joint_states": MSGTYPE_JOINT_STATE,
    "joint_command": MSGTYPE_JOINT_STATE,
    "box_pose": MSGTYPE_POSE_STAMPED,
    "pusher_pose": MSGTYPE_POSE_STAMPED,
}
"""Message type of each per-platform series (the topic basename)."""


def topic(ns: str, series: str) -> str:
    """The topic of ``series`` (e.g. ``"box_pose"``) on platform ``ns``: ``/<ns>/<series>``."""
    if series not in SERIES_MSGTYPE:
        raise InputError(f"unknown series '{series}' (expected one of {tuple(SERIES_MSGTYPE)})")
    return f"/{ns}/{series}"


def split_topic(name: str) -> tuple[str, str] | None:
    """``/<ns>/<series>`` → ``(ns, series)`` for per-platform topics, else None."""
    parts = name.strip("/").split("/")
    if len(parts) == 2 and parts[1] in SERIES_MSGTYPE:
        return parts[0], parts[1]
    return None


def trial_name(index: int, initial_distance_m: float) -> str:
    """Conventional trial directory name, e.g. ``trial_00_d0.300`` for index 0 at 0.30 m."""
    return f"trial_{index:02d}_d{initial_distance_m:.3f}"


def check_trial_name(name: str) -> str:
    """Return ``name`` if it is usable as a trial directory name, else raise Sim2RealError."""
    if not name or name.startswith(".") or "/" in name or "\\" in name or name in {".", ".."}:
        raise InputError(f"bad trial name '{name}': it must be a plain directory name not starting with '.'")
    return name


def versions() -> dict[str, str]:
    """Versions recorded in trial.json and run.json: sim2real, numpy, rosbags, python."""
    from sim2real import __version__

    try:
        rosbags_version = importlib.metadata.version("rosbags")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - rosbags is a requirement
        rosbags_version = "unknown"
    return {
        "sim2real": str(__version__),
        "numpy": np.__version__,
        "rosbags": rosbags_version,
        "python": _platform.python_version(),
    }

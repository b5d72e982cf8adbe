"""Conversion between NumPy samples and ROS 2 messages of rosbags' Kilted typestore.

Messages are always built from the typestore (never from rclpy bytes), and every float64[]
field of a JointState is filled (effort and unused position with zeros), so that readers
in rclpy and rosbags both accept the bytes.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from rosbags.typesys import Stores, get_typestore
from rosbags.typesys.store import Typestore

from sim2real.trials.records import JOINT_NAMES, N_JOINTS
from sim2real.trials.schema import MSGTYPE_JOINT_STATE, MSGTYPE_JOINT_TRAJECTORY, MSGTYPE_POSE_STAMPED

NS_PER_S = 1_000_000_000


def make_typestore() -> Typestore:
    """A new ROS 2 Kilted typestore: the types of every bag of the project (one that may be extended
    with :meth:`~rosbags.typesys.store.Typestore.register`)."""
    return get_typestore(Stores.ROS2_KILTED)


@functools.cache
def shared_typestore() -> Typestore:
    """The process's one ROS 2 Kilted typestore for writing and reading the project's own bags; never
    register types into it. rosbags generates each type's serializer on first use and keeps it in the
    store: a new store per trial regenerated them at every trial's start (about 0.4 s of the
    recorder's time, while the streams kept coming)."""
    return make_typestore()


def _time_msg(ts: Typestore, t_ns: int) -> Any:
    sec, nanosec = divmod(int(t_ns), NS_PER_S)
    return ts.types["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec)


def _header(ts: Typestore, stamp_ns: int, frame_id: str) -> Any:
    return ts.types["std_msgs/msg/Header"](stamp=_time_msg(ts, stamp_ns), frame_id=frame_id)


def stamp_to_ns(stamp: Any) -> int:
    """builtin_interfaces Time or Duration → integer nanoseconds."""
    return int(stamp.sec) * NS_PER_S + int(stamp.nanosec)


def _joint_vector(value: Any | None, what: str) -> np.ndarray:
    if value is None:
        return np.zeros(N_JOINTS)
    array = np.asarray(value, dtype=np.float64).reshape(-1)
    if array.shape != (N_JOINTS,):
        raise ValueError(f"{what} must have 6 values (joint1..joint6), got {array.shape}")
    return array.copy()


def joint_state_cdr(ts: Typestore, stamp_ns: int, position: Any | None, velocity: Any | None,
                    effort: Any | None) -> bytes:
    """Serialize a JointState for joints ``joint1``..``joint6``.

    Parameters
    ----------
    ts : Typestore
        From :func:`make_typestore`.
    stamp_ns : int
        Header stamp, ns.
    position, velocity, effort : array_like, shape (6,), or None
        rad, rad/s, N·m; None is written as zeros (never an empty array).

    Returns
    -------
    bytes
        CDR bytes of a ``sensor_msgs/msg/JointState``.
    """
    msg = ts.types[MSGTYPE_JOINT_STATE](
        header=_header(ts, stamp_ns, ""),
        name=list(JOINT_NAMES),
        position=_joint_vector(position, "position"),
        velocity=_joint_vector(velocity, "velocity"),
        effort=_joint_vector(effort, "effort"),
    )
    return bytes(ts.serialize_cdr(msg, MSGTYPE_JOINT_STATE))


def pose_stamped_cdr(ts: Typestore, stamp_ns: int, position: Any, quaternion_wxyz: Any, frame_id: str) -> bytes:
    """Serialize a PoseStamped.

    Parameters
    ----------
    position : array_like, shape (3,)
        m, in frame ``frame_id``.
    quaternion_wxyz : array_like, shape (4,)
        Unit quaternion (w, x, y, z); ROS stores it as x, y, z, w.
    """
    p = np.asarray(position, dtype=float).reshape(3)
    q = np.asarray(quaternion_wxyz, dtype=float).reshape(4)
    types = ts.types
    pose = types["geometry_msgs/msg/Pose"](
        position=types["geometry_msgs/msg/Point"](x=float(p[0]), y=float(p[1]), z=float(p[2])),
        orientation=types["geometry_msgs/msg/Quaternion"](x=float(q[1]), y=float(q[2]), z=float(q[3]),
                                                            w=float(q[0])),
    )
    msg = types[MSGTYPE_POSE_STAMPED](header=_header(ts, stamp_ns, frame_id), pose=pose)
    return bytes(ts.serialize_cdr(msg, MSGTYPE_POSE_STAMPED))


def joint_trajectory_cdr(ts: Typestore, stamp_ns: int, time_from_start_ns: Any, position: Any,
                         velocity: Any) -> bytes:
    """Serialize the whole reference as one JointTrajectory.

    Parameters
    ----------
    stamp_ns : int
        Header stamp: the time the first point refers to, ns.
    time_from_start_ns : array_like of int, shape (M,)
        Offset of each point from ``stamp_ns``, ns.
    position, velocity : array_like, shape (M, 6)
        rad, rad/s.
    """
    types = ts.types
    point_type = types["trajectory_msgs/msg/JointTrajectoryPoint"]
    duration_type = types["builtin_interfaces/msg/Duration"]
    empty = np.zeros(0)
    points = []
    for offset_ns, pos, vel in zip(time_from_start_ns, np.asarray(position, float), np.asarray(velocity, float),
                                   strict=True):
        sec, nanosec = divmod(int(offset_ns), NS_PER_S)
        points.append(point_type(positions=pos.copy(), velocities=vel.copy(), accelerations=empty,
                                 effort=empty, time_from_start=duration_type(sec=sec, nanosec=nanosec)))
    msg = types[MSGTYPE_JOINT_TRAJECTORY](header=_header(ts, stamp_ns, ""), joint_names=list(JOINT_NAMES),
                                          points=points)
    return bytes(ts.serialize_cdr(msg, MSGTYPE_JOINT_TRAJECTORY))


def reorder_joints(names: list[str], values: Any, what: str) -> np.ndarray:
    """Values of a message's joint array in ``joint1``..``joint6`` order.

    Raises
    ------
    ValueError
        A joint is missing, or the array length does not match the names.
    """
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        return np.zeros(N_JOINTS)
    if list(names) == list(JOINT_NAMES) and array.shape == (N_JOINTS,):
        return array
    if array.shape != (len(names),):
        raise ValueError(f"{what} has {array.size} values for {len(names)} joint names")
    index = {name: i for i, name in enumerate(names)}
    missing = [name for name in JOINT_NAMES if name not in index]
    if missing:
        raise ValueError(f"{what} lacks joints {missing}")
    return np.array([array[index[name]] for name in JOINT_NAMES])

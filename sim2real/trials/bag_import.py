"""Reading any lab's ROS 1 and ROS 2 bags into a :class:`~sim2real.trials.recording_import.Recording`.

Bags are opened with :class:`rosbags.highlevel.AnyReader`: a ROS 1 ``.bag`` file, a rosbag2 directory
(mcap or sqlite3 storage), or a bare ``.mcap`` / ``.db3`` file. Message types come from the
definitions the bag itself carries (every ROS 1 bag, rosbag2 from Iron on, and what ``rosbags``
writes); types a bag does not define (older rosbag2) come from the ROS 2 Kilted store, or for ROS 1
the Noetic store plus ``tf2_msgs/TFMessage``.

Pose sources (``--box-pose`` / ``--pusher-pose``):

``TOPIC``
    a topic of ``geometry_msgs/PoseStamped``, ``geometry_msgs/TransformStamped``,
    ``geometry_msgs/PoseWithCovarianceStamped`` or ``nav_msgs/Odometry``; the pose is in the
    message's ``header.frame_id``.
``tf:FRAME``
    the transforms on ``/tf`` (``tf2_msgs/TFMessage``) whose ``child_frame_id`` is ``FRAME``; the
    pose is the child frame in the transform's parent frame (``header.frame_id``).

Frames: every pose is brought into one *recording frame*: ``--frame`` if given, else the frame of
the first box pose. A pose given in another frame is composed with the chain of *static*
transforms on ``/tf_static`` linking its frame to the recording frame (in either direction);
chains through dynamic ``/tf`` transforms are not composed, and a pose with no static chain to
the recording frame is an error. Leading ``/`` of ROS 1 frame names are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.trials.messages import make_typestore, reorder_joints, stamp_to_ns
from sim2real.trials.recording_import import JointSamples, PoseSamples, Recording, RigidTransform

TF_TOPIC = "/tf"
TF_STATIC_TOPIC = "/tf_static"
MSGTYPE_TF = "tf2_msgs/msg/TFMessage"
MSGTYPE_JOINT_STATE = "sensor_msgs/msg/JointState"

POSE_MSGTYPES: dict[str, str] = {
    "geometry_msgs/msg/PoseStamped": "pose",
    "geometry_msgs/msg/PoseWithCovarianceStamped": "pose.pose",
    "nav_msgs/msg/Odometry": "pose.pose",
    "geometry_msgs/msg/TransformStamped": "transform",
}
"""Message types a pose topic may carry, and the attribute path of the pose in each."""

_TF_MESSAGE_MSG = "geometry_msgs/TransformStamped[] transforms\n"


@dataclass(frozen=True)
class PoseSource:
    """Where a tracked body's poses are in a bag.

    Attributes
    ----------
    kind : str
        ``"topic"`` or ``"tf"``.
    name : str
        The topic (``kind == "topic"``) or the ``/tf`` child frame (``kind == "tf"``).
    option : str
        The command-line option that named it, for messages.
    """

    kind: str
    name: str
    option: str

    def describe(self) -> str:
        """The source as written on the command line: ``/topic`` or ``tf:frame``."""
        return f"tf:{self.name}" if self.kind == "tf" else self.name


def parse_pose_source(text: str, option: str) -> PoseSource:
    """Parse ``TOPIC`` or ``tf:FRAME`` (see the module docstring)."""
    text = text.strip()
    if text.startswith("tf:"):
        frame = _frame(text[3:])
        if not frame:
            raise Sim2RealError(f"{option} '{text}': tf:FRAME needs a child frame name")
        return PoseSource("tf", frame, option)
    if not text:
        raise Sim2RealError(f"{option} needs a topic or tf:FRAME")
    return PoseSource("topic", text if text.startswith("/") else f"/{text}", option)


@dataclass(frozen=True)
class BagSelection:
    """What to take from each bag.

    Attributes
    ----------
    box : PoseSource
        The tracked box body.
    pusher : PoseSource or None
        The tracked pusher (its origin is the pusher sphere centre).
    joint_states : str or None
        A ``sensor_msgs/JointState`` topic with joints ``joint1``..``joint6``.
    frame : str or None
        The recording frame (default: the frame of the first box pose).
    """

    box: PoseSource
    pusher: PoseSource | None = None
    joint_states: str | None = None
    frame: str | None = None


def _frame(name: str) -> str:
    return str(name).strip().lstrip("/")


def _bag_path(path: Path) -> tuple[Path, str]:
    """The path AnyReader opens and the bag format (``rosbag1``, ``rosbag2/mcap``, ``rosbag2/sqlite3``)."""
    if not path.exists():
        raise Sim2RealError(f"bag {path} does not exist")
    if path.is_file() and path.name == "metadata.yaml":
        path = path.parent
    if path.is_dir():
        if not (path / "metadata.yaml").is_file():
            raise Sim2RealError(f"{path} is not a rosbag2 directory (no metadata.yaml); give a rosbag2 directory, "
                                f"a .mcap or .db3 file, or a ROS 1 .bag file")
        storage = "mcap" if any(path.glob("*.mcap*")) else "sqlite3" if any(path.glob("*.db3*")) else "unknown"
        return path, f"rosbag2/{storage}"
    suffix = path.suffix
    if suffix == ".bag":
        return path, "rosbag1"
    if suffix in (".mcap", ".db3"):
        return path, "rosbag2/" + ("mcap" if suffix == ".mcap" else "sqlite3")
    raise Sim2RealError(f"{path} is not a bag: give a rosbag2 directory, a .mcap or .db3 file, or a ROS 1 .bag file")


def _default_typestore(ros1: bool) -> Any:
    """Types for bags that do not define them: ROS 2 Kilted, or ROS 1 Noetic plus tf2_msgs/TFMessage."""
    if not ros1:
        return make_typestore()
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS1_NOETIC)
    store.register(get_types_from_msg(_TF_MESSAGE_MSG, MSGTYPE_TF))
    return store


def _complete_types(reader: Any, default: Any, msgtypes: set[str]) -> None:
    """Register in the reader's typestore the types it lacks (a bag that defines only some), from ``default``."""
    have = reader.typestore.fielddefs
    if all(name in have for name in msgtypes):
        return
    missing = {name: fields for name, fields in default.fielddefs.items() if name not in have}
    reader.typestore.register(missing)


def _pose_of(msg: Any, path: str) -> tuple[list[float], list[float]]:
    obj = msg
    for part in path.split("."):
        obj = getattr(obj, part)
    if path == "transform":
        p, q = obj.translation, obj.rotation
    else:
        p, q = obj.position, obj.orientation
    return [p.x, p.y, p.z], [q.w, q.x, q.y, q.z]


class _Stream:
    """Pose samples collected in bag order, with the frame of each."""

    def __init__(self, source: PoseSource) -> None:
        self.source = source
        self.stamp: list[int] = []
        self.receive: list[int] = []
        self.position: list[list[float]] = []
        self.quaternion: list[list[float]] = []
        self.frames: list[str] = []

    def add(self, stamp_ns: int, receive_ns: int, position: list[float], quaternion: list[float], frame: str) -> None:
        self.stamp.append(stamp_ns)
        self.receive.append(receive_ns)
        self.position.append(position)
        self.quaternion.append(quaternion)
        self.frames.append(_frame(frame))


class _StaticTree:
    """Static transforms from ``/tf_static``: each child frame's pose in its parent (the last one wins)."""

    def __init__(self) -> None:
        self.parent: dict[str, tuple[str, RigidTransform]] = {}

    def add(self, parent: str, child: str, transform: RigidTransform) -> None:
        self.parent[_frame(child)] = (_frame(parent), transform)

    def _to_root(self, frame: str) -> tuple[str, RigidTransform, list[str]]:
        """``(root, T_root_frame, chain)`` walking up the static parents."""
        transform, chain, seen = RigidTransform(), [frame], {frame}
        while frame in self.parent:
            parent, t_parent_frame = self.parent[frame]
            if parent in seen:  # a loop in /tf_static; stop here
                break
            transform = t_parent_frame.compose(transform)
            frame = parent
            chain.append(frame)
            seen.add(frame)
        return frame, transform, chain

    def lookup(self, target: str, source: str) -> tuple[RigidTransform, list[str]] | None:
        """``T_target_source`` through static transforms and the frames on the way, or None if unlinked."""
        root_s, t_root_source, chain_s = self._to_root(source)
        root_t, t_root_target, chain_t = self._to_root(target)
        if root_s != root_t:
            return None
        return t_root_target.inverse().compose(t_root_source), chain_s + chain_t[::-1][1:]


def _listing(topics: dict[str, Any]) -> str:
    if not topics:
        return "no topics"
    return ", ".join(f"{name} ({info.msgtype})" for name, info in sorted(topics.items()))


def _check_topic(path: Path, topics: dict[str, Any], topic: str, option: str, what: str) -> str:
    """The message type of ``topic``, or a one-line error listing the bag's topics."""
    if topic not in topics:
        raise Sim2RealError(f"bag {path} has no topic {topic} ({option} {what}); it has: {_listing(topics)}")
    msgtype = topics[topic].msgtype
    if msgtype is None:
        raise Sim2RealError(f"bag {path}: topic {topic} ({option}) carries several message types")
    return str(msgtype)


def read_bag(path: str | Path, selection: BagSelection) -> Recording:
    """Read the selected poses and joint states of one bag (see the module docstring).

    Parameters
    ----------
    path : path
        A rosbag2 directory (or its metadata.yaml), a ``.mcap`` / ``.db3`` file or a ROS 1 ``.bag``.
    selection : BagSelection
        Sources of the box and pusher poses, the joint-state topic and the recording frame.

    Returns
    -------
    Recording
        Poses in the recording frame (m, quaternion w-x-y-z), times in ns (header stamp and
        receive time of each sample).

    Raises
    ------
    Sim2RealError
        One line: unreadable bag; a missing topic or ``/tf`` child frame (listing what the bag
        has); an unsupported message type; a pose in a frame with no static chain to the
        recording frame; joint states without joints ``joint1``..``joint6``.
    """
    from rosbags.highlevel import AnyReader

    bag, fmt = _bag_path(Path(path))
    ros1 = fmt == "rosbag1"
    default = _default_typestore(ros1)
    sources = [s for s in (selection.box, selection.pusher) if s is not None]
    streams = {id(s): _Stream(s) for s in sources}
    tf_children = {s.name: streams[id(s)] for s in sources if s.kind == "tf"}
    tf_seen: set[str] = set()
    static = _StaticTree()
    joints: dict[str, list[Any]] = {"stamp": [], "receive": [], "position": [], "velocity": [], "effort": []}
    try:
        with AnyReader([bag], default_typestore=default) as reader:
            topics = reader.topics
            wanted: dict[str, str] = {}  # topic -> role
            for source in sources:
                if source.kind == "tf":
                    msgtype = _check_topic(bag, topics, TF_TOPIC, source.option, f"tf:{source.name}")
                    if msgtype != MSGTYPE_TF:
                        raise Sim2RealError(f"bag {path}: {TF_TOPIC} carries {msgtype}, not {MSGTYPE_TF}")
                    wanted[TF_TOPIC] = "tf"
                    continue
                msgtype = _check_topic(bag, topics, source.name, source.option, "pose topic")
                if msgtype == MSGTYPE_TF:
                    raise Sim2RealError(f"{source.option} {source.name}: the topic carries {MSGTYPE_TF}; name the "
                                        f"tracked child frame as tf:FRAME")
                if msgtype not in POSE_MSGTYPES:
                    raise Sim2RealError(f"{source.option} {source.name}: message type {msgtype} is not supported "
                                        f"(use one of {', '.join(POSE_MSGTYPES)}, or tf:FRAME)")
                wanted[source.name] = "pose"
            if selection.joint_states is not None:
                msgtype = _check_topic(bag, topics, selection.joint_states, "--joint-states", "topic")
                if msgtype != MSGTYPE_JOINT_STATE:
                    raise Sim2RealError(f"--joint-states {selection.joint_states}: message type {msgtype} is not "
                                        f"{MSGTYPE_JOINT_STATE}")
                wanted[selection.joint_states] = "joints"
            if TF_STATIC_TOPIC in topics and topics[TF_STATIC_TOPIC].msgtype == MSGTYPE_TF:
                wanted.setdefault(TF_STATIC_TOPIC, "static")
            connections = [c for c in reader.connections if c.topic in wanted]
            _complete_types(reader, default, {c.msgtype for c in connections})
            by_topic = {s.name: streams[id(s)] for s in sources if s.kind == "topic"}
            for connection, receive_ns, raw in reader.messages(connections=connections):
                msg: Any = reader.deserialize(raw, connection.msgtype)
                role = wanted[connection.topic]
                if role == "tf" or role == "static":
                    for item in msg.transforms:
                        child = _frame(item.child_frame_id)
                        if role == "static":
                            t, q = item.transform.translation, item.transform.rotation
                            static.add(item.header.frame_id, child,
                                       RigidTransform(np.array([t.x, t.y, t.z]), np.array([q.w, q.x, q.y, q.z])))
                            continue
                        tf_seen.add(child)
                        stream = tf_children.get(child)
                        if stream is not None:
                            p, q = _pose_of(item, "transform")
                            stream.add(stamp_to_ns(item.header.stamp), int(receive_ns), p, q, item.header.frame_id)
                elif role == "pose":
                    p, q = _pose_of(msg, POSE_MSGTYPES[connection.msgtype])
                    by_topic[connection.topic].add(stamp_to_ns(msg.header.stamp), int(receive_ns), p, q,
                                                   msg.header.frame_id)
                else:
                    names = list(msg.name)
                    where = f"--joint-states {connection.topic}"
                    joints["stamp"].append(stamp_to_ns(msg.header.stamp))
                    joints["receive"].append(int(receive_ns))
                    for field in ("position", "velocity", "effort"):
                        try:
                            values = reorder_joints(names, getattr(msg, field), f"{where} {field}")
                        except ValueError as err:  # joints missing or arrays of the wrong length
                            raise Sim2RealError(f"bag {path}: {err}") from None
                        joints[field].append(values)
    except Sim2RealError:
        raise
    except Exception as err:  # rosbags, storage and deserialisation errors of damaged or foreign files
        reason = " ".join(str(err).split()) or type(err).__name__
        raise Sim2RealError(f"cannot read bag {path}: {reason}") from None

    for source in sources:
        if streams[id(source)].stamp:
            continue
        if source.kind == "tf":
            seen = ", ".join(sorted(tf_seen)) if tf_seen else "none"
            raise Sim2RealError(f"bag {path}: no transform on {TF_TOPIC} has child frame '{source.name}' "
                                f"({source.option} tf:{source.name}); child frames on {TF_TOPIC}: {seen}")
        raise Sim2RealError(f"bag {path}: topic {source.name} ({source.option}) holds no messages")
    if selection.joint_states is not None and not joints["stamp"]:
        raise Sim2RealError(f"bag {path}: topic {selection.joint_states} (--joint-states) holds no messages")

    box_stream = streams[id(selection.box)]
    frame = _frame(selection.frame) if selection.frame is not None else box_stream.frames[0]
    composed: dict[str, list[str]] = {}
    pose_samples = {id(s): _in_frame(streams[id(s)], frame, static, composed, str(path)) for s in sources}
    joint_samples = None
    if selection.joint_states is not None:
        joint_samples = JointSamples(np.array(joints["stamp"], dtype=np.int64),
                                     np.array(joints["receive"], dtype=np.int64),
                                     np.array(joints["position"]).reshape(-1, 6),
                                     np.array(joints["velocity"]).reshape(-1, 6),
                                     np.array(joints["effort"]).reshape(-1, 6), selection.joint_states)
    notes: dict[str, Any] = {}
    if composed:
        notes["static_chains"] = composed
    pusher = pose_samples[id(selection.pusher)] if selection.pusher is not None else None
    return Recording(str(bag), fmt, frame, pose_samples[id(selection.box)], pusher, joint_samples, notes)


def _in_frame(stream: _Stream, frame: str, static: _StaticTree, composed: dict[str, list[str]],
              path: str) -> PoseSamples:
    """The stream's poses in ``frame``, composing static chains for samples in other frames."""
    position = np.array(stream.position, dtype=float).reshape(-1, 3)
    quaternion = np.array(stream.quaternion, dtype=float).reshape(-1, 4)
    frames = np.array(stream.frames, dtype=object)
    for other in sorted(set(stream.frames) - {frame}):
        found = static.lookup(frame, other)
        source = stream.source
        if found is None:
            raise Sim2RealError(
                f"bag {path}: {source.option} {source.describe()} poses are in frame '{other or '(empty)'}', not "
                f"the recording frame '{frame or '(empty)'}', and {TF_STATIC_TOPIC} links no chain between them "
                f"(only static transforms are composed; --frame names the recording frame)")
        transform, chain = found
        rows = np.flatnonzero(frames == other)
        position[rows], quaternion[rows] = transform.apply_poses(position[rows], quaternion[rows])
        composed[other] = chain
    return PoseSamples(np.array(stream.stamp, dtype=np.int64), np.array(stream.receive, dtype=np.int64),
                       position, quaternion, stream.source.describe())

"""Reading any lab's ROS 1 and ROS 2 bags into a :class:`~sim2real.trials.recording.Recording`.

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

or, for the box, camera images of its AprilTags (``--box-image``, :mod:`sim2real.trials.camera_source`):
one box pose per image that gives one, in the arm base frame, which is then the recording frame.

Frames: every pose is brought into one *recording frame*: ``--frame`` if given, else the frame of
the first box pose. A pose given in another frame is composed with the chain of *static*
transforms on ``/tf_static`` linking its frame to the recording frame (in either direction);
chains through dynamic ``/tf`` transforms are not composed, and a pose with no static chain to
the recording frame is an error. Leading ``/`` of ROS 1 frame names are ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sim2real.errors import DataError, InputError, Sim2RealError
from sim2real.paths import check_bag_files, check_regular_file
from sim2real.trials.bag_sources import (
    POSE_MSGTYPES,
    PoseSource,
    StreamOptions,
    StreamSamples,
    constant_transforms,
    field_number,
    frame_name,
    parse_pose_source,
)
from sim2real.trials.messages import make_typestore, reorder_joints, stamp_to_ns
from sim2real.trials.recording import NS_PER_S, JointSamples, PoseSamples, Recording
from sim2real.trials.rigid import RigidTransform

if TYPE_CHECKING:
    from sim2real.trials.camera_source import CameraSelection, CameraStream

__all__ = ["BagSelection", "PoseSource", "parse_pose_source", "read_bag"]

TF_TOPIC = "/tf"
TF_STATIC_TOPIC = "/tf_static"
MSGTYPE_TF = "tf2_msgs/msg/TFMessage"
MSGTYPE_JOINT_STATE = "sensor_msgs/msg/JointState"

_TF_MESSAGE_MSG = "geometry_msgs/TransformStamped[] transforms\n"


@dataclass(frozen=True)
class BagSelection:
    """What to take from each bag.

    Attributes
    ----------
    box : PoseSource
        The tracked box body.
    pusher : PoseSource or None
        The tracked pusher (its origin, moved by the import's tool offset, is the pusher tip).
    joint_states : str or None
        A ``sensor_msgs/JointState`` topic with joints ``joint1``..``joint6``.
    frame : str or None
        The recording frame (default: the frame of the first box pose).
    streams : dict of str to StreamOptions
        Options of the pose streams by source key (topic or ``tf:FRAME``); absent: defaults.
    planar : bool
        The box cannot tilt (``--planar``): a box source of positions only is then read as a planar
        recording (:attr:`Recording.planar`: its tilt and heading unknown). Without it such a
        source is refused, and with it a source that gives the orientation is refused.
    camera : CameraSelection or None
        The camera whose images give the box poses; ``box`` is then its source (kind ``image``).
    """

    box: PoseSource
    pusher: PoseSource | None = None
    joint_states: str | None = None
    frame: str | None = None
    streams: dict[str, StreamOptions] = field(default_factory=dict)
    planar: bool = False
    camera: CameraSelection | None = None

    def __post_init__(self) -> None:
        box = f"{self.box.what} {self.box.describe()}"
        if (self.box.kind == "image") != (self.camera is not None):
            raise InputError(f"{box}: box poses from images come with their camera (and only they do)",
                             option=self.box.option)
        if not self.box.has_orientation and not self.planar:
            raise InputError(f"{box} gives the box's position only, so a tilted or flipped box would be recorded "
                             f"as never tilted: name its quaternion fields too (TOPIC:X,Y,Z,QW,QX,QY,QZ), or "
                             f"declare the box planar if it cannot tilt (its tilt and heading are then recorded "
                             f"as unknown)", option="planar")
        if self.planar and self.box.has_orientation:
            raise InputError(f"a planar box is for a box source of positions only, and {box} gives the box's "
                             f"orientation (its tilt is measured): leave the planar option out", option="planar")

    def options(self, source: PoseSource) -> StreamOptions:
        """The options of ``source`` (defaults when none were given)."""
        return self.streams.get(source.key, StreamOptions())


def _bag_path(path: Path) -> tuple[Path, str]:
    """The path AnyReader opens and the bag format (``rosbag1``, ``rosbag2/mcap``, ``rosbag2/sqlite3``);
    a FIFO, device or socket (as the bag or among a rosbag2 directory's files) is refused: reading it
    would block."""
    if not path.exists():
        raise InputError(f"bag {path} does not exist")
    if path.is_file() and path.name == "metadata.yaml":
        path = path.parent
    if path.is_dir():
        check_bag_files(path)
        if not (path / "metadata.yaml").is_file():
            raise InputError(f"{path} is not a rosbag2 directory (no metadata.yaml); give a rosbag2 directory, "
                             f"a .mcap or .db3 file, or a ROS 1 .bag file")
        storage = "mcap" if any(path.glob("*.mcap*")) else "sqlite3" if any(path.glob("*.db3*")) else "unknown"
        return path, f"rosbag2/{storage}"
    check_regular_file(path, "bag")
    suffix = path.suffix
    if suffix == ".bag":
        return path, "rosbag1"
    if suffix in (".mcap", ".db3"):
        return path, "rosbag2/" + ("mcap" if suffix == ".mcap" else "sqlite3")
    raise InputError(f"{path} is not a bag: give a rosbag2 directory, a .mcap or .db3 file, or a ROS 1 .bag file")


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


def _field_pose(msg: Any, source: PoseSource) -> tuple[list[float], list[float]]:
    """Position and quaternion (identity without quaternion fields) of a ``fields`` source's message."""
    values = [field_number(msg, path, source) for path in source.fields]
    return values[:3], (values[3:] if len(values) == 7 else [1.0, 0.0, 0.0, 0.0])


class _StaticTree:
    """Static transforms from ``/tf_static``: each child frame's pose in its parent (the last one wins)."""

    def __init__(self) -> None:
        self.parent: dict[str, tuple[str, RigidTransform]] = {}

    def add(self, parent: str, child: str, transform: RigidTransform) -> None:
        self.parent[frame_name(child)] = (frame_name(parent), transform)

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
    """The message type of ``topic``, or a one-line error listing the bag's topics (``what``: the topic in
    words; ``option``: the argparse dest of the option that named it)."""
    if topic not in topics:
        raise InputError(f"bag {path} has no topic {topic} ({what}); it has: {_listing(topics)}", option=option)
    msgtype = topics[topic].msgtype
    if msgtype is None:
        raise DataError(f"bag {path}: topic {topic} ({what}) carries several message types", option=option)
    return str(msgtype)


def read_bag(path: str | Path, selection: BagSelection,
             progress: Callable[[int, int], None] | None = None) -> Recording:
    """Read the selected poses and joint states of one bag (see the module docstring).

    Parameters
    ----------
    path : path
        A rosbag2 directory (or its metadata.yaml), a ``.mcap`` / ``.db3`` file or a ROS 1 ``.bag``.
    selection : BagSelection
        Sources of the box and pusher poses, the joint-state topic, the recording frame and the
        options of each stream.
    progress : callable, optional
        ``progress(done, total)`` after each camera image (a ``--box-image`` import; total: the bag's
        images).

    Returns
    -------
    Recording
        Poses in the recording frame (m, quaternion w-x-y-z), times in ns (header stamp and
        receive time of each sample).

    Raises
    ------
    Sim2RealError
        One line: unreadable bag; a missing topic, field or ``/tf`` child frame (listing what the
        bag has); an unsupported message type or image encoding; a pose in a frame with no static
        chain to the recording frame; joint states without joints ``joint1``..``joint6``.
    """
    from rosbags.highlevel import AnyReader

    bag, fmt = _bag_path(Path(path))
    default = _default_typestore(fmt == "rosbag1")
    state = _ReadState(selection)
    try:
        with AnyReader([bag], default_typestore=default) as reader:
            wanted = _wanted_topics(bag, reader.topics, selection)
            connections = [c for c in reader.connections if c.topic in wanted]
            _complete_types(reader, default, {c.msgtype for c in connections})
            images = state.open_camera(reader, path)
            done = 0
            for connection, receive_ns, raw in reader.messages(connections=connections):
                msg: Any = reader.deserialize(raw, connection.msgtype)
                state.take(wanted[connection.topic], connection, int(receive_ns), msg, path)
                if progress is not None and wanted[connection.topic] == "image":
                    done += 1
                    progress(done, images)
    except Sim2RealError:
        raise
    except Exception as err:  # rosbags, storage and deserialisation errors of damaged or foreign files
        reason = " ".join(str(err).split()) or type(err).__name__
        raise DataError(f"cannot read bag {path}: {reason}") from None
    return state.recording(str(bag), fmt, str(path))


def _wanted_topics(bag: Path, topics: dict[str, Any], selection: BagSelection) -> dict[str, str]:
    """``{topic: role}`` to read (``tf``, ``static``, ``pose``, ``fields``, ``joints``, ``image``), checking their
    types (and a camera's CameraInfo topic)."""
    wanted: dict[str, str] = {}
    for source in (s for s in (selection.box, selection.pusher) if s is not None):
        if source.kind == "image":
            wanted[source.name] = _check_camera_topics(bag, topics, selection)
            continue
        if source.kind == "tf":
            msgtype = _check_topic(bag, topics, TF_TOPIC, source.option, f"{source.what} tf:{source.name}")
            if msgtype != MSGTYPE_TF:
                raise DataError(f"bag {bag}: {TF_TOPIC} carries {msgtype}, not {MSGTYPE_TF}")
            continue
        msgtype = _check_topic(bag, topics, source.name, source.option, f"{source.what}, a pose topic")
        if msgtype == MSGTYPE_TF:
            raise InputError(f"{source.what} {source.name}: the topic carries {MSGTYPE_TF}; name the "
                             f"tracked child frame as tf:FRAME", option=source.option)
        if source.kind == "topic" and msgtype not in POSE_MSGTYPES:
            raise InputError(f"{source.what} {source.name}: message type {msgtype} is not a pose type "
                             f"({', '.join(POSE_MSGTYPES)}); name its fields instead: "
                             f"{source.name}:X,Y,Z[,QW,QX,QY,QZ] (see the command's help)", option=source.option)
        wanted[source.name] = source.kind
    if selection.joint_states is not None:
        msgtype = _check_topic(bag, topics, selection.joint_states, "joint_states", "the joint states")
        if msgtype != MSGTYPE_JOINT_STATE:
            raise InputError(f"joint-state topic {selection.joint_states}: message type {msgtype} is not "
                             f"{MSGTYPE_JOINT_STATE}", option="joint_states")
        wanted[selection.joint_states] = "joints"
    for topic, role in ((TF_TOPIC, "tf"), (TF_STATIC_TOPIC, "static")):
        if topic in topics and topics[topic].msgtype == MSGTYPE_TF:
            wanted.setdefault(topic, role)
    return wanted


def check_bag_topics(path: str | Path, selection: BagSelection) -> None:
    """Refuse a bag that lacks a selected topic (or has it with the wrong type) without reading any message:
    what :func:`read_bag` checks first, for checking every bag of an import before its long work begins."""
    from rosbags.highlevel import AnyReader

    bag, fmt = _bag_path(Path(path))
    try:
        with AnyReader([bag], default_typestore=_default_typestore(fmt == "rosbag1")) as reader:
            _wanted_topics(bag, reader.topics, selection)
    except Sim2RealError:
        raise
    except Exception as err:  # rosbags and storage errors of damaged or foreign files
        raise DataError(f"cannot read bag {path}: {' '.join(str(err).split()) or type(err).__name__}") from None


def _check_camera_topics(bag: Path, topics: dict[str, Any], selection: BagSelection) -> str:
    """The role (``image``) of a camera's image topic, after checking it and its camera-info topic."""
    from sim2real.trials.camera_source import IMAGE_MSGTYPES, MSGTYPE_CAMERA_INFO

    camera = selection.camera
    assert camera is not None
    msgtype = _check_topic(bag, topics, camera.image_topic, "box_image", "the box images")
    if msgtype not in IMAGE_MSGTYPES:
        raise InputError(f"image topic {camera.image_topic}: message type {msgtype} is not an image "
                         f"({', '.join(IMAGE_MSGTYPES)})", option="box_image")
    msgtype = _check_topic(bag, topics, camera.camera_info_topic, "camera_info", "the camera info, needed for "
                           "the intrinsics")
    if msgtype != MSGTYPE_CAMERA_INFO:
        raise InputError(f"camera-info topic {camera.camera_info_topic}: message type {msgtype} is not "
                         f"{MSGTYPE_CAMERA_INFO}", option="camera_info")
    return "image"


class _ReadState:
    """What one pass over a bag collects: pose streams, ``/tf`` and ``/tf_static`` transforms, joint states."""

    def __init__(self, selection: BagSelection) -> None:
        self.selection = selection
        self.sources = [s for s in (selection.box, selection.pusher) if s is not None]
        self.streams = {s.key: StreamSamples(s) for s in self.sources}
        self.tf_children = {s.name: self.streams[s.key] for s in self.sources if s.kind == "tf"}
        self.by_topic = {s.name: self.streams[s.key] for s in self.sources if s.kind != "tf"}
        self.tf_samples: dict[str, list[tuple[str, tuple[float, ...]]]] = {}
        self.static = _StaticTree()
        self.joints: dict[str, list[Any]] = {"stamp": [], "receive": [], "position": [], "velocity": [],
                                             "effort": []}
        self.camera: CameraStream | None = None

    def open_camera(self, reader: Any, path: str | Path) -> int:
        """Read the camera's intrinsics (a ``--box-image`` import) and return how many images the bag holds."""
        camera = self.selection.camera
        if camera is None:
            return 0
        from sim2real.trials.camera_source import CameraStream, read_camera_info

        msgtype = str(reader.topics[camera.image_topic].msgtype)
        self.camera = CameraStream(camera, read_camera_info(reader, camera, path), msgtype, path)
        return int(sum(c.msgcount for c in reader.connections if c.topic == camera.image_topic))

    def take(self, role: str, connection: Any, receive_ns: int, msg: Any, path: str | Path) -> None:
        """Collect one message of a wanted topic."""
        if role in ("tf", "static"):
            self._transforms(role, receive_ns, msg)
        elif role == "joints":
            self._joint_state(connection.topic, receive_ns, msg, path)
        elif role == "image":
            assert self.camera is not None
            taken = self.camera.take(msg, receive_ns)
            if taken is not None:
                self.by_topic[connection.topic].add(taken[0], receive_ns, list(taken[1].position),
                                                    list(taken[1].quaternion), self.camera.selection.frame)
        else:
            stream = self.by_topic[connection.topic]
            source = stream.source
            options = self.selection.options(source)
            header = getattr(msg, "header", None)
            stamp = stamp_to_ns(header.stamp) if header is not None and hasattr(header, "stamp") else None
            frame = options.frame if options.frame is not None else getattr(header, "frame_id", "") or ""
            clock = field_number(msg, options.stamp_field, source) if options.stamp_field else None
            if role == "fields":
                p, q = _field_pose(msg, source)
            else:
                p, q = _pose_of(msg, POSE_MSGTYPES[connection.msgtype])
            stream.add(stamp, receive_ns, p, q, frame, clock)

    def _transforms(self, role: str, receive_ns: int, msg: Any) -> None:
        for item in msg.transforms:
            child = frame_name(item.child_frame_id)
            p, q = _pose_of(item, "transform")
            if role == "static":
                self.static.add(item.header.frame_id, child, RigidTransform(np.array(p), np.array(q)))
                continue
            self.tf_samples.setdefault(child, []).append((frame_name(item.header.frame_id), (*p, *q)))
            stream = self.tf_children.get(child)
            if stream is not None:
                frame = self.selection.options(stream.source).frame or item.header.frame_id
                stream.add(stamp_to_ns(item.header.stamp), receive_ns, p, q, frame)

    def _joint_state(self, topic: str, receive_ns: int, msg: Any, path: str | Path) -> None:
        names = list(msg.name)
        where = f"joint-state topic {topic}"
        self.joints["stamp"].append(stamp_to_ns(msg.header.stamp))
        self.joints["receive"].append(receive_ns)
        for name in ("position", "velocity", "effort"):
            try:
                values = reorder_joints(names, getattr(msg, name), f"{where} {name}")
            except ValueError as err:  # joints missing or arrays of the wrong length
                raise DataError(f"bag {path}: {err}", option="joint_states") from None
            self.joints[name].append(values)

    def _check_filled(self, path: str) -> None:
        if self.camera is not None:
            self.camera.check_filled()
        for source in self.sources:
            if self.streams[source.key].receive:
                continue
            if source.kind == "tf":
                seen = ", ".join(sorted(self.tf_samples)) if self.tf_samples else "none"
                raise InputError(f"bag {path}: no transform on {TF_TOPIC} has child frame '{source.name}' "
                                 f"({source.what} tf:{source.name}); child frames on {TF_TOPIC}: {seen}",
                                 option=source.option)
            raise InputError(f"bag {path}: topic {source.name} ({source.what}) holds no messages", option=source.option)
        if self.selection.joint_states is not None and not self.joints["stamp"]:
            raise InputError(f"bag {path}: topic {self.selection.joint_states} (the joint states) holds no messages",
                             option="joint_states")

    def recording(self, bag: str, fmt: str, path: str) -> Recording:
        """The :class:`Recording` of what was collected, every pose in the recording frame."""
        self._check_filled(path)
        notes: dict[str, Any] = {}
        tracked = {s.name for s in self.sources if s.kind == "tf"}
        from_tf = {child: item for child, item in constant_transforms(self.tf_samples, tracked).items()
                   if child not in self.static.parent}
        for child, (parent, transform) in from_tf.items():
            self.static.add(parent, child, transform)
        if from_tf:
            notes["static_from_tf"] = {child: parent for child, (parent, _) in sorted(from_tf.items())}
        box_stream = self.streams[self.selection.box.key]
        frame = frame_name(self.selection.frame) if self.selection.frame is not None else box_stream.frames[0]
        composed: dict[str, list[str]] = {}
        timing: dict[str, str] = {}
        samples = {s.key: _in_frame(self.streams[s.key], self.selection.options(s), frame, self.static, composed,
                                    timing, path) for s in self.sources}
        if composed:
            notes["static_chains"] = composed
        if timing:
            notes["stream_timing"] = timing
        options = {s.key: self.selection.options(s) for s in self.sources}
        given = {key: _options_note(o) for key, o in options.items() if o != StreamOptions()}
        if given:
            notes["streams"] = given
        joint_samples = None
        if self.selection.joint_states is not None:
            j = self.joints
            joint_samples = JointSamples(np.array(j["stamp"], dtype=np.int64), np.array(j["receive"], dtype=np.int64),
                                         np.array(j["position"]).reshape(-1, 6), np.array(j["velocity"]).reshape(-1, 6),
                                         np.array(j["effort"]).reshape(-1, 6), self.selection.joint_states)
        pusher = samples[self.selection.pusher.key] if self.selection.pusher is not None else None
        return Recording(bag, fmt, frame, samples[self.selection.box.key], pusher, joint_samples, notes,
                         planar=self.selection.planar,
                         camera=self.camera.detections() if self.camera is not None else None)


def _options_note(options: StreamOptions) -> dict[str, Any]:
    """A stream's non-default options for trial.json."""
    note: dict[str, Any] = {}
    if options.frame is not None:
        note["frame"] = options.frame
    if options.unit != "m":
        note["unit"] = options.unit
    if options.stamp_field is not None:
        note["stamp_field"] = options.stamp_field
    if options.transform is not None:
        note["transform"] = options.transform.as_dict()
    return note


def _stream_times(stream: StreamSamples, options: StreamOptions, timing: dict[str, str]) -> np.ndarray:
    """Acquisition times (ns) of a stream: its clock field placed on the receive clock, its header
    stamps, or (no header) its receive times; how it was timed goes into ``timing``."""
    receive = np.array(stream.receive, dtype=np.int64)
    key = stream.source.key
    if options.stamp_field is not None:
        clock_ns = np.round(np.array(stream.clock, dtype=float) * NS_PER_S).astype(np.int64)
        offset = int(np.median(receive - clock_ns))
        timing[key] = f"clock field '{options.stamp_field}' (s), placed on the receive clock by its median offset"
        return clock_ns + offset
    if any(stamp is None for stamp in stream.stamp):
        timing[key] = "receive time (the messages have no header)"
        return receive
    return np.array(stream.stamp, dtype=np.int64)


def _in_frame(stream: StreamSamples, options: StreamOptions, frame: str, static: _StaticTree,
              composed: dict[str, list[str]], timing: dict[str, str], path: str) -> PoseSamples:
    """The stream's poses in ``frame`` (m): scaled to m, then through the stream's fixed transform, or
    composed with static chains for samples in other frames."""
    position = np.array(stream.position, dtype=float).reshape(-1, 3) * options.scale
    quaternion = np.array(stream.quaternion, dtype=float).reshape(-1, 4)
    source = stream.source
    if options.transform is not None:
        position, quaternion = options.transform.apply_poses(position, quaternion)
    else:
        frames = np.array(stream.frames, dtype=object)
        for other in sorted(set(stream.frames) - {frame}):
            found = static.lookup(frame, other)
            if found is None:
                hint = (f"; give its stream frame {source.key}=FRAME" if not other else
                        " (only static transforms are composed: /tf_static, and /tf transforms that never change)")
                raise InputError(
                    f"bag {path}: {source.what} {source.describe()} poses are in frame '{other or '(empty)'}', "
                    f"not the recording frame '{frame or '(empty)'}', and no static transform links them{hint}; "
                    f"or give the stream's transform {source.key}=x,y,z,qw,qx,qy,qz",
                    option="stream_transform" if other else "frame")
            transform, chain = found
            rows = np.flatnonzero(frames == other)
            position[rows], quaternion[rows] = transform.apply_poses(position[rows], quaternion[rows])
            composed[other] = chain
    times = _stream_times(stream, options, timing)
    return PoseSamples(times, np.array(stream.receive, dtype=np.int64), position, quaternion, source.describe(),
                       has_orientation=source.has_orientation)

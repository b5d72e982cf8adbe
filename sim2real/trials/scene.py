"""What a 3D viewer (Foxglove, RViz) needs from a trial bag: ``/tf``, ``/tf_static``, the robot
description and markers, and the QoS every topic was offered with.

The trial topics (``/<ns>/joint_states``, ``/<ns>/box_pose``, ...) carry the data; a 3D panel
can only place what it finds in the transform tree. :class:`~sim2real.trials.TrialBagWriter`
writes, next to them (see :meth:`~sim2real.trials.TrialBagWriter.write_scene`):

* ``/robot_description`` (std_msgs/String, latched): one URDF with an xArm 6 per platform that
  has an arm, its links prefixed ``real/`` and ``sim/`` (``real/link1``, ``sim/pusher``, ...),
  both fixed to the root frame ``link_base`` at the same place, so that real and sim overlap
  (real orange, sim translucent blue); the pusher sphere has the trial's ``pusher.radius`` and
  ``pusher.offset``;
* ``/tf_static`` (tf2_msgs/TFMessage, latched): the fixed joints of those URDFs;
* ``/tf`` (tf2_msgs/TFMessage): per joint state the six joint transforms
  (``<ns>/link_base`` → ``<ns>/link1`` … ``<ns>/link5`` → ``<ns>/link6``, as
  robot_state_publisher would send them); per box pose ``link_base`` → ``<ns>/box``; per pusher
  pose ``link_base`` → ``<ns>/pusher`` when the platform has no arm (with an arm, the pusher frame
  is the end of the URDF chain);
* ``/markers`` (visualization_msgs/MarkerArray, latched): per platform a CUBE of the box's size
  in frame ``<ns>/box`` with a text label, a SPHERE (or CYLINDER) for an arm-less pusher in frame
  ``<ns>/pusher``, and the table top; all ``frame_locked``, so they follow their frame.

Stamps follow the trial's topics: a transform has the header stamp of the message it comes
from; the latched messages are stamped and logged at the trial start. Latched topics are
recorded with a transient-local QoS profile, so that ``ros2 bag play`` republishes them latched.
"""

from __future__ import annotations

import functools
import math
import os
import struct
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from rosbags.rosbag2.metadata import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.typesys.store import Typestore

from sim2real.errors import InputError
from sim2real.trials.messages import NS_PER_S
from sim2real.trials.schema import BASE_FRAME, REFERENCE_TOPIC

TF_TOPIC = "/tf"
TF_STATIC_TOPIC = "/tf_static"
ROBOT_DESCRIPTION_TOPIC = "/robot_description"
MARKERS_TOPIC = "/markers"

MSGTYPE_TF = "tf2_msgs/msg/TFMessage"
MSGTYPE_STRING = "std_msgs/msg/String"
MSGTYPE_MARKER_ARRAY = "visualization_msgs/msg/MarkerArray"

BOX_FRAME = "box"
PUSHER_FRAME = "pusher"
ARM_BASE_LINK = "link_base"
#: Colours (r, g, b, a) of each platform's robot and box.
COLORS: dict[str, tuple[float, float, float, float]] = {
    "real": (0.93, 0.55, 0.16, 1.0),
    "sim": (0.20, 0.50, 0.95, 0.55),
}
_TABLE_COLOR = (0.55, 0.55, 0.55, 0.45)


def frame(ns: str, name: str) -> str:
    """Frame (and URDF link) ``name`` of platform ``ns``, e.g. ``sim/link3``."""
    return f"{ns}/{name}"


# -- QoS offered in the bag metadata ------------------------------------------------------------
_UNSET = QosTime(sec=0, nsec=0)  # "default" deadline, lifespan, lease: what rclpy profiles leave


def _qos(depth: int, durability: QosDurability) -> Qos:
    return Qos(history=QosHistory.KEEP_LAST, depth=depth, reliability=QosReliability.RELIABLE,
               durability=durability, deadline=_UNSET, lifespan=_UNSET, liveliness=QosLiveliness.AUTOMATIC,
               liveliness_lease_duration=_UNSET, avoid_ros_namespace_conventions=False)


#: Data streams (the nodes' STREAM_QOS).
STREAM_QOS = _qos(500, QosDurability.VOLATILE)
#: The reference trajectory (the nodes' LATCHED_QOS).
REFERENCE_QOS = _qos(50, QosDurability.TRANSIENT_LOCAL)
#: ``/tf``: tf2_ros's dynamic broadcaster.
TF_QOS = _qos(100, QosDurability.VOLATILE)
#: ``/tf_static``, ``/robot_description``, ``/markers``: latched, the last message only
#: (tf2_ros's static broadcaster and robot_state_publisher offer the same).
LATCHED_QOS = _qos(1, QosDurability.TRANSIENT_LOCAL)

_TOPIC_QOS = {REFERENCE_TOPIC: REFERENCE_QOS, TF_TOPIC: TF_QOS, TF_STATIC_TOPIC: LATCHED_QOS,
              ROBOT_DESCRIPTION_TOPIC: LATCHED_QOS, MARKERS_TOPIC: LATCHED_QOS}


def topic_qos(topic_name: str) -> Qos:
    """The QoS profile recorded as offered for ``topic_name`` (transient-local for latched topics)."""
    return _TOPIC_QOS.get(topic_name, STREAM_QOS)


# -- the scene ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SceneSpec:
    """What :meth:`TrialBagWriter.write_scene` shows.

    Attributes
    ----------
    platforms : tuple of str
        Platforms whose box (and pusher) get frames and markers.
    arms : tuple of str
        Platforms with an xArm: robot description and joint transforms (a subset of ``platforms``).
    box_size : tuple of float
        Box edges (x, y, z), m.
    pusher_radius, pusher_offset : float
        Pusher sphere radius and its centre's distance from the flange, m.
    pusher_length : float
        Straight length of an arm-less capsule pusher along its frame's z axis, m (0: a sphere).
    table_height : float
        Height of the table top above z = 0 of the root frame, m.
    root_frame : str
        Frame of the poses (the arm base frame ``link_base``).
    """

    platforms: tuple[str, ...]
    arms: tuple[str, ...]
    box_size: tuple[float, float, float]
    pusher_radius: float = 0.02
    pusher_offset: float = 0.06
    pusher_length: float = 0.0
    table_height: float = 0.0
    root_frame: str = BASE_FRAME

    @classmethod
    def from_params(cls, platforms: Sequence[str], arms: Sequence[str] = (),
                    params: Mapping[str, Any] | None = None, box_size: Sequence[float] | None = None,
                    root_frame: str = BASE_FRAME, pusher_length: float = 0.0) -> SceneSpec:
        """A scene from simulator parameters (missing ones: nominal values).

        Parameters
        ----------
        platforms, arms : sequence of str
            See the attributes; ``arms`` outside ``platforms`` are added to them.
        params : mapping, optional
            ``box.size_*``, ``pusher.radius``, ``pusher.offset``, ``contact.table_height``.
        box_size : sequence of 3 floats, optional
            Overrides ``box.size_*`` (m).
        """
        from sim2real.params import spec

        values = dict(params or {})

        def value(name: str) -> float:
            return float(values.get(name, spec(name).nominal))

        size = (tuple(float(v) for v in box_size) if box_size is not None
                else tuple(value(f"box.size_{a}") for a in "xyz"))
        shown = tuple(dict.fromkeys([*platforms, *arms]))
        return cls(platforms=shown, arms=tuple(dict.fromkeys(arms)), box_size=size,  # type: ignore[arg-type]
                   pusher_radius=value("pusher.radius"), pusher_offset=value("pusher.offset"),
                   pusher_length=float(pusher_length), table_height=value("contact.table_height"),
                   root_frame=root_frame)


# -- the arm chain -------------------------------------------------------------------------------
@dataclass(frozen=True)
class _ChainLink:
    parent: str  # link names of the URDF, unprefixed
    child: str
    translation: np.ndarray  # (3,) joint origin in the parent frame, m
    quaternion: np.ndarray  # (4,) w, x, y, z: joint origin orientation


@functools.lru_cache(maxsize=4)
def _chain(urdf_path: str | None = None) -> tuple[_ChainLink, ...]:
    """The six revolute joints of the xArm URDF, base to flange."""
    from sim2real.model import load_arm
    from sim2real.spatial import from_matrix

    arm = load_arm(urdf_path=urdf_path)
    links = []
    parent = ARM_BASE_LINK
    for joint in arm.joints:
        links.append(_ChainLink(parent, joint.child, joint.parent_from_joint[:3, 3].copy(),
                                from_matrix(joint.parent_from_joint[:3, :3])))
        parent = joint.child
    return tuple(links)


def chain_transforms(ns: str, q: Any) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
    """The joint transforms of platform ``ns``'s arm at joint angles ``q``.

    Parameters
    ----------
    ns : str
        Platform (frame prefix).
    q : array_like, shape (6,)
        Joint angles ``joint1`` … ``joint6``, rad.

    Returns
    -------
    list of (parent frame, child frame, translation (3,) m, quaternion (4,) w-x-y-z)
        ``<ns>/link_base`` → ``<ns>/link1``, …, ``<ns>/link5`` → ``<ns>/link6``: the joint origin
        turned by the joint angle about its z axis (what robot_state_publisher sends).
    """
    angles = np.asarray(q, dtype=float).reshape(-1)
    chain = _chain()
    if angles.shape != (len(chain),):
        raise InputError(f"expected {len(chain)} joint angles, got {angles.size}")
    out = []
    for link, angle in zip(chain, angles.tolist(), strict=True):
        c, s = math.cos(0.5 * angle), math.sin(0.5 * angle)
        w, x, y, z = link.quaternion.tolist()  # origin orientation times the turn (c, 0, 0, s) about z
        turned = np.array([w * c - z * s, x * c + y * s, y * c - x * s, z * c + w * s])
        out.append((frame(ns, link.parent), frame(ns, link.child), link.translation, turned))
    return out


def static_transforms(spec: SceneSpec) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
    """The fixed joints of the robot description: root → ``<ns>/link_base``, ``<ns>/link6`` → ``<ns>/pusher``."""
    identity = np.array([1.0, 0.0, 0.0, 0.0])
    flange = _chain()[-1].child
    out = []
    for ns in spec.arms:
        out.append((spec.root_frame, frame(ns, ARM_BASE_LINK), np.zeros(3), identity))
        out.append((frame(ns, flange), frame(ns, PUSHER_FRAME), np.array([0.0, 0.0, spec.pusher_offset]), identity))
    return out


# -- robot description -----------------------------------------------------------------------------
def _rgba(color: Sequence[float]) -> str:
    return " ".join(f"{c:g}" for c in color)


def robot_description(spec: SceneSpec, urdf_path: str | os.PathLike[str] | None = None) -> str:
    """One URDF with an xArm 6 per platform of ``spec.arms``, links prefixed by the platform.

    Each arm is the package's ``urdf/xarm6.urdf`` without its ``world`` link, fixed to the
    root link ``spec.root_frame`` by a joint ``<ns>/base_joint``; every collision shape is
    also a visual (in the platform's colour), and the pusher sphere has ``spec.pusher_radius``
    at ``spec.pusher_offset`` from the flange.

    Returns
    -------
    str
        The URDF XML text (empty robot with the root link only when there is no arm).
    """
    from sim2real.paths import urdf_file

    source = ET.parse(os.fspath(urdf_path or urdf_file())).getroot()
    robot = ET.Element("robot", {"name": "sim2real"})
    robot.append(ET.Comment(" generated by sim2real for 3D viewers: one xArm 6 per platform "))
    ET.SubElement(robot, "link", {"name": spec.root_frame})
    for ns in spec.arms:
        material = ET.SubElement(robot, "material", {"name": ns})
        ET.SubElement(material, "color", {"rgba": _rgba(COLORS.get(ns, (0.7, 0.7, 0.7, 1.0)))})
    for ns in spec.arms:
        joint = ET.SubElement(robot, "joint", {"name": frame(ns, "base_joint"), "type": "fixed"})
        ET.SubElement(joint, "parent", {"link": spec.root_frame})
        ET.SubElement(joint, "child", {"link": frame(ns, ARM_BASE_LINK)})
        ET.SubElement(joint, "origin", {"xyz": "0 0 0", "rpy": "0 0 0"})
        for element in source:
            name = element.get("name", "")
            if element.tag == "link" and name != "world":
                link = ET.fromstring(ET.tostring(element))
                link.set("name", frame(ns, name))
                for visual in link.findall("visual"):
                    link.remove(visual)
                for collision in link.findall("collision"):
                    if name == PUSHER_FRAME:
                        for sphere in collision.iter("sphere"):
                            sphere.set("radius", f"{spec.pusher_radius:g}")
                    visual = ET.SubElement(link, "visual")
                    for part in collision:
                        visual.append(ET.fromstring(ET.tostring(part)))
                    ET.SubElement(visual, "material", {"name": ns})
                robot.append(link)
            elif element.tag == "joint" and name != "world_joint":
                joint = ET.fromstring(ET.tostring(element))
                joint.set("name", frame(ns, name))
                for end in ("parent", "child"):
                    node = joint.find(end)
                    if node is not None:
                        node.set("link", frame(ns, node.get("link", "")))
                if name == "pusher_joint":
                    origin = joint.find("origin")
                    if origin is not None:
                        origin.set("xyz", f"0 0 {spec.pusher_offset:g}")
                robot.append(joint)
    ET.indent(robot)
    return '<?xml version="1.0"?>\n' + ET.tostring(robot, encoding="unicode") + "\n"


# -- messages (rosbags typestore) -------------------------------------------------------------------
def _stamp(ts: Typestore, t_ns: int) -> Any:
    sec, nanosec = divmod(int(t_ns), NS_PER_S)
    return ts.types["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec)


def _header(ts: Typestore, t_ns: int, frame_id: str) -> Any:
    return ts.types["std_msgs/msg/Header"](stamp=_stamp(ts, t_ns), frame_id=frame_id)


def _quaternion(ts: Typestore, wxyz: Sequence[float]) -> Any:
    w, x, y, z = (float(v) for v in wxyz)
    return ts.types["geometry_msgs/msg/Quaternion"](x=x, y=y, z=z, w=w)


def tf_message_cdr(ts: Typestore, stamp_ns: int,
                   transforms: Sequence[tuple[str, str, Any, Any]]) -> bytes:
    """Serialize a tf2_msgs/TFMessage (little-endian CDR, as the typestore would).

    Written directly (a /tf message per joint state and per pose: the typestore's generic
    serializer took ~0.15 ms a message); ``tests/test_trials_scene.py`` checks the bytes
    against the typestore's serializer.

    Parameters
    ----------
    ts : Typestore
        The project's typestore (:func:`~sim2real.trials.messages.make_typestore`); unused by
        this encoder, kept so that every ``*_cdr`` function has the same signature.
    stamp_ns : int
        Header stamp of every transform, ns.
    transforms : sequence of (parent, child, translation (3,) m, quaternion (4,) w-x-y-z)
        The child frame's pose in the parent frame.
    """
    del ts
    sec, nanosec = divmod(int(stamp_ns), NS_PER_S)
    out = bytearray(b"\x00\x01\x00\x00")  # CDR_LE encapsulation; alignment counts from after it
    out += _U32.pack(len(transforms))
    for parent, child, translation, quaternion in transforms:
        out += _STAMP.pack(sec, nanosec)
        for name in (parent, child):
            data = name.encode("utf-8") + b"\x00"
            _pad(out, 4)
            out += _U32.pack(len(data)) + data
        _pad(out, 8)
        tx, ty, tz = np.asarray(translation, dtype=float).reshape(3)
        w, x, y, z = np.asarray(quaternion, dtype=float).reshape(4)
        out += _POSE.pack(tx, ty, tz, x, y, z, w)
    return bytes(out)


_U32 = struct.Struct("<I")
_STAMP = struct.Struct("<iI")
_POSE = struct.Struct("<7d")


def _pad(buffer: bytearray, alignment: int) -> None:
    """Pad ``buffer`` (which starts with the 4-byte encapsulation header) to ``alignment``."""
    buffer += b"\x00" * (-(len(buffer) - 4) % alignment)


def string_cdr(ts: Typestore, text: str) -> bytes:
    """Serialize a std_msgs/String."""
    return bytes(ts.serialize_cdr(ts.types[MSGTYPE_STRING](data=text), MSGTYPE_STRING))


def _marker(ts: Typestore, stamp_ns: int, frame_id: str, ns: str, marker_id: int, kind: str,
            scale: Sequence[float], color: Sequence[float], position: Sequence[float] = (0.0, 0.0, 0.0),
            text: str = "") -> Any:
    types = ts.types
    marker_type: Any = types["visualization_msgs/msg/Marker"]  # generated: its constants (ADD, CUBE, ...) too
    px, py, pz = (float(v) for v in position)
    pose = types["geometry_msgs/msg/Pose"](position=types["geometry_msgs/msg/Point"](x=px, y=py, z=pz),
                                           orientation=_quaternion(ts, (1.0, 0.0, 0.0, 0.0)))
    sx, sy, sz = (float(v) for v in scale)
    r, g, b, a = (float(v) for v in color)
    empty = np.zeros(0, dtype=np.uint8)
    return marker_type(
        header=_header(ts, stamp_ns, frame_id), ns=ns, id=marker_id, type=getattr(marker_type, kind),
        action=marker_type.ADD, pose=pose, scale=types["geometry_msgs/msg/Vector3"](x=sx, y=sy, z=sz),
        color=types["std_msgs/msg/ColorRGBA"](r=r, g=g, b=b, a=a),
        lifetime=types["builtin_interfaces/msg/Duration"](sec=0, nanosec=0), frame_locked=True,
        points=[], colors=[], texture_resource="",
        texture=types["sensor_msgs/msg/CompressedImage"](header=_header(ts, 0, ""), format="", data=empty),
        uv_coordinates=[], text=text, mesh_resource="",
        mesh_file=types["visualization_msgs/msg/MeshFile"](filename="", data=empty),
        mesh_use_embedded_materials=False)


def markers_cdr(ts: Typestore, stamp_ns: int, spec: SceneSpec) -> bytes:
    """Serialize the scene's visualization_msgs/MarkerArray (see the module docstring)."""
    markers = []
    for ns in spec.platforms:
        color = COLORS.get(ns, (0.7, 0.7, 0.7, 1.0))
        box = frame(ns, BOX_FRAME)
        markers.append(_marker(ts, stamp_ns, box, ns, 0, "CUBE", spec.box_size, color))
        markers.append(_marker(ts, stamp_ns, box, ns, 1, "TEXT_VIEW_FACING", (0.0, 0.0, 0.04), (*color[:3], 1.0),
                               position=(0.0, 0.0, 0.5 * spec.box_size[2] + 0.04), text=ns))
        if ns not in spec.arms:  # with an arm, the robot description draws the pusher
            diameter = 2.0 * spec.pusher_radius
            if spec.pusher_length > 0.0:
                markers.append(_marker(ts, stamp_ns, frame(ns, PUSHER_FRAME), ns, 2, "CYLINDER",
                                       (diameter, diameter, spec.pusher_length + diameter), color))
            else:
                markers.append(_marker(ts, stamp_ns, frame(ns, PUSHER_FRAME), ns, 2, "SPHERE",
                                       (diameter, diameter, diameter), color))
    if spec.arms:  # the table the arm stands on: its top at contact.table_height
        markers.append(_marker(ts, stamp_ns, spec.root_frame, "table", 0, "CUBE", (1.2, 1.0, 0.02), _TABLE_COLOR,
                               position=(0.35, 0.0, spec.table_height - 0.01)))
    msg = ts.types[MSGTYPE_MARKER_ARRAY](markers=markers)
    return bytes(ts.serialize_cdr(msg, MSGTYPE_MARKER_ARRAY))

"""What an import takes from a bag: pose sources and the options of each stream.

A *pose source* names where a tracked body's poses are:

``TOPIC``
    a topic of a pose message type (:data:`POSE_MSGTYPES`); the pose is in ``header.frame_id``.
``tf:FRAME``
    the transforms on ``/tf`` whose ``child_frame_id`` is ``FRAME``, in their parent frame.
``TOPIC:X,Y,Z[,QW,QX,QY,QZ]``
    any message type: field paths (dotted, e.g. ``pose.x``) of the position and, optionally, of a
    quaternion, scalar first; e.g. a robot's own Cartesian log ``/arm/log:x,y,z,q0,qx,qy,qz``.

Each stream may carry options, keyed by its topic (or ``tf:FRAME``) on the command line
(:class:`StreamOptions`): the frame its poses are in (for an empty or missing ``frame_id``), the
unit of its positions, a clock field that times it, and a fixed transform into the recording
frame that replaces the frame lookup.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

import numpy as np

from sim2real.errors import InputError
from sim2real.trials.rigid import RigidTransform, parse_transform

POSE_MSGTYPES: dict[str, str] = {
    "geometry_msgs/msg/PoseStamped": "pose",
    "geometry_msgs/msg/PoseWithCovarianceStamped": "pose.pose",
    "nav_msgs/msg/Odometry": "pose.pose",
    "geometry_msgs/msg/TransformStamped": "transform",
}
"""Message types a pose topic may carry, and the attribute path of the pose in each."""

UNITS: dict[str, float] = {"m": 1.0, "cm": 0.01, "mm": 0.001}
"""Length units a stream's positions may be in, and their size in m."""

SOURCE_NAMES: dict[str, str] = {"box_pose": "the box source", "pusher_pose": "the pusher source",
                                "box_image": "the box images"}
"""A pose source in messages, by the argparse dest of the option that names it (:attr:`PoseSource.option`)."""

STREAM_OPTIONS: dict[str, str] = {"frame": "the stream frame", "units": "the stream unit",
                                  "stamp_field": "the stamp field", "stream_transform": "the stream transform"}
"""The per-stream options in messages, by their argparse dest."""


def frame_name(name: str) -> str:
    """A frame id as compared here: stripped, without ROS 1's leading ``/``."""
    return str(name).strip().lstrip("/")


@dataclass(frozen=True)
class PoseSource:
    """Where a tracked body's poses are in a bag.

    Attributes
    ----------
    kind : str
        ``"topic"`` (a pose message type), ``"tf"`` (a ``/tf`` child frame) or ``"fields"``
        (field paths of any message type).
    name : str
        The topic (``topic``, ``fields``) or the ``/tf`` child frame (``tf``).
    option : str
        The argparse dest of the option that named it (``box_pose``, ``pusher_pose``, ``box_image``), for
        messages (:class:`~sim2real.errors.Sim2RealError`); :attr:`what` names the source in them.
    fields : tuple of str
        ``fields`` only: 3 position field paths, or 7 with a quaternion (w, x, y, z).
    """

    kind: str
    name: str
    option: str
    fields: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """How stream options name this source: the topic, or ``tf:FRAME``."""
        return f"tf:{self.name}" if self.kind == "tf" else self.name

    @property
    def has_orientation(self) -> bool:
        """Whether the source gives an orientation (a ``fields`` source without quaternion fields does not)."""
        return self.kind != "fields" or len(self.fields) == 7

    @property
    def what(self) -> str:
        """The source in messages: ``the box source``, ``the pusher source``, ``the box images``."""
        return SOURCE_NAMES.get(self.option, "the pose source")

    def describe(self) -> str:
        """The source as written on the command line."""
        return f"{self.name}:{','.join(self.fields)}" if self.kind == "fields" else self.key


def parse_pose_source(text: str, option: str) -> PoseSource:
    """Parse ``TOPIC``, ``tf:FRAME`` or ``TOPIC:X,Y,Z[,QW,QX,QY,QZ]`` (see the module docstring); ``option`` is
    the argparse dest of the option that gives it (:attr:`PoseSource.option`)."""
    text = text.strip()
    what = SOURCE_NAMES.get(option, "the pose source")
    if text.startswith("tf:"):
        frame = frame_name(text[3:])
        if not frame:
            raise InputError(f"{what} '{text}': tf:FRAME needs a child frame name", option=option)
        return PoseSource("tf", frame, option)
    topic, colon, spec = text.partition(":")
    topic = topic.strip()
    if not topic:
        raise InputError(f"{what} needs a topic, TOPIC:X,Y,Z[,QW,QX,QY,QZ] or tf:FRAME", option=option)
    topic = topic if topic.startswith("/") else f"/{topic}"
    if not colon:
        return PoseSource("topic", topic, option)
    paths = tuple(part.strip() for part in spec.split(","))
    if len(paths) not in (3, 7) or not all(paths):
        raise InputError(f"{what} '{text}': after the topic give 3 position fields (x,y,z) or 7 with a "
                         f"quaternion, scalar first (x,y,z,qw,qx,qy,qz)", option=option)
    return PoseSource("fields", topic, option, paths)


@dataclass(frozen=True)
class StreamOptions:
    """How to read one pose stream.

    Attributes
    ----------
    frame : str or None
        The frame its poses are in, overriding the messages' ``frame_id`` (e.g. an empty one).
    unit : str
        Unit of its positions (``m``, ``cm``, ``mm``); converted to m.
    stamp_field : str or None
        Field path of a clock (s) in each message: sample times keep its spacing and are placed
        on the bag's receive clock by the median offset between the two.
    transform : RigidTransform or None
        The stream's frame in the recording frame; replaces the ``/tf_static`` lookup.
    """

    frame: str | None = None
    unit: str = "m"
    stamp_field: str | None = None
    transform: RigidTransform | None = None

    @property
    def scale(self) -> float:
        """Metres per unit of the stream's positions."""
        return UNITS[self.unit]


@dataclass(frozen=True)
class StreamOptionText:
    """The per-stream options as given on the command line (each ``KEY=VALUE``; ``--units`` also ``UNIT``).

    Attributes
    ----------
    frames, units, stamp_fields, transforms : sequence of str
        ``--frame``, ``--units``, ``--stamp-field``, ``--stream-transform`` values.
    """

    frames: Sequence[str] = ()
    units: Sequence[str] = ()
    stamp_fields: Sequence[str] = ()
    transforms: Sequence[str] = ()


def _keyed(values: Iterable[str], option: str, keyless: bool = False) -> tuple[dict[str, str], str | None]:
    """``{stream key: value}`` of ``KEY=VALUE`` items, and the one item without a key (when allowed);
    ``option``: the argparse dest of the option that gives them (a key of :data:`STREAM_OPTIONS`)."""
    what = STREAM_OPTIONS[option]
    keyed: dict[str, str] = {}
    bare: str | None = None
    for text in values:
        key, sep, value = str(text).partition("=")
        if not sep:
            if not keyless:
                raise InputError(f"{what} '{text}': expected TOPIC=VALUE (or tf:FRAME=VALUE)", option=option)
            if bare is not None:
                raise InputError(f"{what} is given twice without a topic ('{bare}', '{text}')", option=option)
            bare = text.strip()
            continue
        key, value = key.strip(), value.strip()
        if not key.startswith("tf:") and not key.startswith("/"):
            key = f"/{key}"
        if not value:
            raise InputError(f"{what} '{text}': empty value after '='", option=option)
        if key in keyed:
            raise InputError(f"{what} gives {key} twice", option=option)
        keyed[key] = value
    return keyed, bare


def stream_options(text: StreamOptionText, sources: Sequence[PoseSource]) -> tuple[dict[str, StreamOptions],
                                                                                     str | None]:
    """Per-stream options of the selected sources, and the recording frame if ``--frame`` named one.

    Parameters
    ----------
    text : StreamOptionText
        The options as given.
    sources : sequence of PoseSource
        The selected sources; every key must name one of them.

    Returns
    -------
    tuple
        ``{source key: StreamOptions}`` (every source has an entry) and the recording frame of a
        keyless ``--frame FRAME`` (None without one).

    Raises
    ------
    Sim2RealError
        One line: a malformed item, a key that names no selected source, an unknown unit, a stamp
        field on a ``tf:`` source.
    """
    frames, recording_frame = _keyed(text.frames, "frame", keyless=True)
    units, default_unit = _keyed(text.units, "units", keyless=True)
    stamps, _ = _keyed(text.stamp_fields, "stamp_field")
    transforms, _ = _keyed(text.transforms, "stream_transform")
    keys = {s.key for s in sources}
    for option, given in (("frame", frames), ("units", units), ("stamp_field", stamps),
                          ("stream_transform", transforms)):
        unknown = sorted(set(given) - keys)
        if unknown:
            raise InputError(f"{STREAM_OPTIONS[option]} names {', '.join(unknown)}, which is not a selected pose "
                             f"source (selected: {', '.join(sorted(keys))})", option=option)
    for unit in [default_unit, *units.values()]:
        if unit is not None and unit not in UNITS:
            raise InputError(f"stream unit '{unit}': choose from {', '.join(UNITS)}", option="units")
    for key in stamps:
        if key.startswith("tf:"):
            raise InputError(f"stamp field of {key}: /tf transforms are timed by their header stamps",
                             option="stamp_field")
    options = {
        s.key: StreamOptions(
            frame=frame_name(frames[s.key]) if s.key in frames else None,
            unit=units.get(s.key, default_unit if s.kind == "fields" and default_unit else "m"),
            stamp_field=stamps.get(s.key),
            transform=parse_transform(transforms[s.key], f"the stream transform of {s.key}", "stream_transform")
            if s.key in transforms
            else None)
        for s in sources}
    if default_unit is not None and not any(s.kind == "fields" for s in sources):
        raise InputError(f"stream unit {default_unit} without a topic applies to field sources (TOPIC:X,Y,Z); "
                         f"for a pose topic write TOPIC={default_unit}", option="units")
    return options, (frame_name(recording_frame) if recording_frame else None)


def read_field(msg: Any, path: str, source: PoseSource) -> Any:
    """The value at a dotted field path of a message, or a one-line error listing the fields there."""
    obj = msg
    for part in path.split("."):
        if not hasattr(obj, part) or part.startswith("_"):
            have = [f.name for f in fields(obj)] if is_dataclass(obj) else []
            raise InputError(f"{source.what} {source.describe()}: the message has no field '{path}' "
                             f"(fields here: {', '.join(have) or 'none'})", option=source.option)
        obj = getattr(obj, part)
    return obj


def field_number(msg: Any, path: str, source: PoseSource) -> float:
    """A numeric field of a message as float (one-line error when it is not a number)."""
    value = read_field(msg, path, source)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{source.what} {source.describe()}: field '{path}' is not a number "
                         f"({type(value).__name__})", option=source.option) from None
    return number


def constant_transforms(samples: Mapping[str, list[tuple[str, tuple[float, ...]]]],
                        exclude: Iterable[str] = (), tolerance: float = 1e-9) -> dict[str, tuple[str, RigidTransform]]:
    """The ``/tf`` child frames whose transform never changed: static transforms published on ``/tf``.

    ROS 1's ``static_transform_propagator`` and ``static_transform_publisher`` publish a fixed
    transform on ``/tf`` over and over; such a transform is static whatever topic carried it.

    Parameters
    ----------
    samples : mapping
        ``{child frame: [(parent frame, (x, y, z, qw, qx, qy, qz)), ...]}`` in bag order.
    exclude : iterable of str
        Child frames never taken as static (the tracked bodies themselves).
    tolerance : float
        Largest change of any component still counted as unchanged (m, or quaternion units).

    Returns
    -------
    dict
        ``{child: (parent, T_parent_child)}`` of children with at least two messages, one parent
        and no change.
    """
    static: dict[str, tuple[str, RigidTransform]] = {}
    skip = set(exclude)
    for child, items in samples.items():
        if child in skip or len(items) < 2 or len({parent for parent, _ in items}) != 1:
            continue
        first = items[0][1]
        if all(max(abs(a - b) for a, b in zip(values, first, strict=True)) <= tolerance for _, values in items):
            static[child] = (items[0][0], RigidTransform(np.array(first[:3]), np.array(first[3:])))
    return static


def finite_pose(position: list[float], quaternion: list[float]) -> bool:
    """Whether every component of a pose is a finite number."""
    return all(math.isfinite(v) for v in (*position, *quaternion))


@dataclass
class StreamSamples:
    """Pose samples of one stream collected in bag order (mutable while the bag is read)."""

    source: PoseSource
    stamp: list[int | None] = field(default_factory=list)
    receive: list[int] = field(default_factory=list)
    clock: list[float] = field(default_factory=list)
    position: list[list[float]] = field(default_factory=list)
    quaternion: list[list[float]] = field(default_factory=list)
    frames: list[str] = field(default_factory=list)

    def add(self, stamp_ns: int | None, receive_ns: int, position: list[float], quaternion: list[float],
            frame: str, clock_s: float | None = None) -> None:
        """One sample: header stamp (None without a header), receive time, pose, frame, clock field (s)."""
        self.stamp.append(stamp_ns)
        self.receive.append(receive_ns)
        self.position.append(position)
        self.quaternion.append(quaternion)
        self.frames.append(frame_name(frame))
        if clock_s is not None:
            self.clock.append(clock_s)

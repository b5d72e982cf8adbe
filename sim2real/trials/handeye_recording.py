"""The recording of a hand-eye calibration (``sim2real handeye``): the arm holds a tagged plate still at several
poses in front of a fixed camera; the camera's pose in the arm base frame follows from those poses.

The bag (a rosbag2 directory, ``.mcap`` / ``.db3`` file or ROS 1 ``.bag``, opened as
:func:`~sim2real.trials.bag_import.read_bag` opens it) holds images (``sensor_msgs/Image`` in ``mono8``,
``rgb8`` or ``bgr8``, or ``CompressedImage``), the camera's ``CameraInfo`` (its first message gives the
intrinsics) and ``sensor_msgs/JointState`` (``joint1``..``joint6``, rad). Every message is timed by its header
stamp (the acquisition time).

Still poses (:func:`still_images`, :func:`still_periods`): an image is *still* when the joint states cover ±
:attr:`StillRule.half_window` around its stamp, with no gap over :attr:`StillRule.max_gap`, and every joint's
speed stays below :attr:`StillRule.max_speed` over that window. The speed at a joint sample is the change of
the angles, linearly interpolated, over :attr:`StillRule.baseline` centred on it (the joint states' own
``velocity`` is not read: many drivers leave it empty). Consecutive still images form a *still period*, one
arm pose; two periods whose joint angles differ by less than :data:`SAME_POSE_RAD` are one. Images taken
while the arm moves (blurred, and timed against the joints only as well as the two clocks agree) are never
used.

One image per period: the one nearest the period's middle in which the tag is decoded exactly once with a
single-tag pose that reprojects within 2 px (up to :data:`TRIES` images from the middle outwards). Its flange
pose is the forward kinematics (:func:`sim2real.model.load_arm`) of the joint angles interpolated at the
image's stamp. The tag is *unambiguous* in it when its two square poses are told apart
(:func:`~sim2real.vision.pose.unambiguous_tag_pose`); an ambiguous image still enters the joint fit (its
corners are measurements; the fit places its pose from the others), but the calibration needs
:data:`~sim2real.vision.handeye.MIN_POSES` unambiguous ones.

Frames: the flange frame of the URDF (``link6``), the arm base frame ``link_base``, the camera's optical frame
(z along the optical axis, x right, y down), the tag's frame of :mod:`sim2real.vision.tags`; m, rad.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sim2real.errors import DataError, InputError, Sim2RealError
from sim2real.model import load_arm
from sim2real.trials.bag_import import MSGTYPE_JOINT_STATE, _bag_path, _check_topic, _complete_types, _default_typestore
from sim2real.trials.camera_source import IMAGE_MSGTYPES, MSGTYPE_CAMERA_INFO, camera_from_info, decode_image
from sim2real.trials.messages import NS_PER_S, reorder_joints, stamp_to_ns
from sim2real.vision.camera import PinholeCamera
from sim2real.vision.detect import Detection, TagDetector
from sim2real.vision.handeye import MIN_POSES, HandEyeResult, calibrate_eye_to_hand
from sim2real.vision.pose import Refusal, unambiguous_tag_pose

FloatArray = NDArray[np.float64]
#: Images tried per still period, from its middle outwards, until one shows the tag.
TRIES = 5
#: Two neighbouring still periods whose joint angles differ by less than this (rad, every joint) are one pose.
SAME_POSE_RAD = 1e-3
#: Status of a still pose whose image enters the calibration: the tag's pose told apart, or ambiguous.
UNAMBIGUOUS, AMBIGUOUS = "unambiguous", "ambiguous"
#: Why a still pose gave no image: the tag not decoded, decoded twice, its pose reprojecting worse than 2 px,
#: or bytes that are no image.
NO_TAG, DUPLICATE, REPROJECTION, UNDECODABLE = "no_tag", "duplicate", "reprojection", "undecodable"


@dataclass(frozen=True)
class StillRule:
    """When the arm counts as still at an image (see the module docstring).

    Attributes
    ----------
    max_speed : float
        rad/s: every joint slower than this ...
    half_window : float
        s: ... over ± this around the image's stamp.
    baseline : float
        s: the span a joint speed is measured over.
    max_gap : float
        s: joint states farther apart than this within the window leave the image not still (unknown).
    """

    max_speed: float = 0.01
    half_window: float = 0.2
    baseline: float = 0.05
    max_gap: float = 0.1

    def describe(self) -> str:
        """The rule in words, for messages."""
        return f"every joint slower than {self.max_speed:g} rad/s for ±{self.half_window:g} s around the image"


@dataclass(frozen=True)
class HandEyeSelection:
    """What to read from the bag and what to look for.

    Attributes
    ----------
    image_topic, camera_info_topic, joint_states : str
        ``Image`` or ``CompressedImage``; ``CameraInfo``; ``JointState`` (joint1..joint6, rad).
    tag_id : int
        The id of the tag on the plate the arm holds.
    tag_size : float
        Its black square's side, m.
    family : str
        Its family (``36h11`` ...).
    refine : str
        The detector's corner refinement (:class:`~sim2real.vision.detect.TagDetector`).
    rule : StillRule
    """

    image_topic: str
    camera_info_topic: str
    joint_states: str
    tag_id: int
    tag_size: float
    family: str = "36h11"
    refine: str = "edges"
    rule: StillRule = field(default_factory=StillRule)


@dataclass(frozen=True)
class StillPose:
    """One still period of the arm and the image taken from it.

    Attributes
    ----------
    first_ns, last_ns : int
        Header stamps of the period's first and last still image, ns.
    images : int
        Still images in the period.
    stamp_ns : int
        The image used (or, when none showed the tag, the middle one), ns.
    joints : ndarray, shape (6,)
        Joint angles interpolated at ``stamp_ns``, rad.
    base_from_flange : ndarray, shape (4, 4)
        The flange's pose there, base frame, m.
    status : str
        :data:`UNAMBIGUOUS` or :data:`AMBIGUOUS` (the image is used), or why there is none (:data:`NO_TAG`,
        :data:`DUPLICATE`, :data:`REPROJECTION`, :data:`UNDECODABLE`).
    detection : Detection or None
        The tag's corners in the image used.
    other_tags : tuple of int
        Ids of other tags decoded in the images tried.
    """

    first_ns: int
    last_ns: int
    images: int
    stamp_ns: int
    joints: FloatArray
    base_from_flange: FloatArray
    status: str
    detection: Detection | None = None
    other_tags: tuple[int, ...] = ()

    @property
    def used(self) -> bool:
        """Whether the pose's image enters the calibration."""
        return self.detection is not None


@dataclass(frozen=True)
class HandEyeRecording:
    """What a hand-eye bag gave.

    Attributes
    ----------
    path : str
        The bag as given.
    camera : PinholeCamera
        The intrinsics of the first CameraInfo.
    image_msgtype : str
    image_count, joint_count, still_count : int
        Images, joint states and still images in the bag.
    t0_ns : int
        The first image's stamp (the time origin of messages), ns.
    poses : tuple of StillPose
        The still periods in time order.
    """

    path: str
    camera: PinholeCamera
    image_msgtype: str
    image_count: int
    joint_count: int
    still_count: int
    t0_ns: int
    poses: tuple[StillPose, ...]

    @property
    def used(self) -> tuple[StillPose, ...]:
        """The poses whose image enters the calibration, in time order."""
        return tuple(p for p in self.poses if p.used)

    @property
    def unambiguous(self) -> int:
        """How many still poses show the tag unambiguously."""
        return sum(p.status == UNAMBIGUOUS for p in self.poses)


def _sample_speeds(joint_t: FloatArray, joint_q: FloatArray, baseline: float) -> FloatArray:
    """The fastest joint's speed (K,), rad/s, at each joint sample: the change over ``baseline`` centred on it."""
    half = baseline / 2.0
    after = np.stack([np.interp(joint_t + half, joint_t, joint_q[:, j]) for j in range(joint_q.shape[1])], axis=1)
    before = np.stack([np.interp(joint_t - half, joint_t, joint_q[:, j]) for j in range(joint_q.shape[1])], axis=1)
    return np.asarray(np.max(np.abs(after - before), axis=1) / baseline, dtype=float)


def still_images(image_t: FloatArray, joint_t: FloatArray, joint_q: FloatArray, rule: StillRule) -> NDArray[np.bool_]:
    """Which images were taken while the arm was still (the rule of the module docstring).

    Parameters
    ----------
    image_t : ndarray, shape (M,)
        Image stamps, s.
    joint_t : ndarray, shape (K,)
        Joint-state stamps, s, increasing (same clock and origin).
    joint_q : ndarray, shape (K, 6)
        Joint angles, rad.
    rule : StillRule

    Returns
    -------
    ndarray of bool, shape (M,)
    """
    speeds = _sample_speeds(joint_t, joint_q, rule.baseline)
    still = np.zeros(len(image_t), dtype=bool)
    for k, t in enumerate(image_t):
        low, high = t - rule.half_window, t + rule.half_window
        if joint_t[0] > low or joint_t[-1] < high:
            continue  # the joint states do not cover the window
        first, last = np.searchsorted(joint_t, low, "right") - 1, np.searchsorted(joint_t, high, "left")
        inside = speeds[(joint_t >= low) & (joint_t <= high)]
        gaps_ok = bool(np.all(np.diff(joint_t[first:last + 1]) <= rule.max_gap))
        still[k] = gaps_ok and inside.size > 0 and bool(np.all(inside < rule.max_speed))
    return still


def _interpolated(t: float, joint_t: FloatArray, joint_q: FloatArray) -> FloatArray:
    return np.array([np.interp(t, joint_t, joint_q[:, j]) for j in range(joint_q.shape[1])])


def still_periods(image_t: FloatArray, still: NDArray[np.bool_], joint_t: FloatArray,
                  joint_q: FloatArray) -> list[NDArray[np.int64]]:
    """The still periods: runs of consecutive still images (indices into ``image_t``, in time order), two
    neighbouring runs merged when their middle images' joint angles differ by less than :data:`SAME_POSE_RAD`.

    Parameters
    ----------
    image_t : ndarray, shape (M,)
        Image stamps, s, increasing.
    still : ndarray of bool, shape (M,)
        :func:`still_images`.
    joint_t, joint_q : ndarray, shapes (K,), (K, 6)
        Joint-state stamps (s) and angles (rad).
    """
    runs: list[NDArray[np.int64]] = []
    edges = np.flatnonzero(np.diff(np.concatenate([[0], still.astype(np.int8), [0]])))
    for start, stop in zip(edges[::2], edges[1::2], strict=True):
        run = np.arange(start, stop, dtype=np.int64)
        if runs:
            previous = _interpolated(image_t[runs[-1][len(runs[-1]) // 2]], joint_t, joint_q)
            if np.max(np.abs(_interpolated(image_t[run[len(run) // 2]], joint_t, joint_q) - previous)) < SAME_POSE_RAD:
                runs[-1] = np.concatenate([runs[-1], run])
                continue
        runs.append(run)
    return runs


def tried_order(period: NDArray[np.int64], image_t: FloatArray) -> list[int]:
    """The images of a period to try, nearest its middle first (at most :data:`TRIES`)."""
    middle = 0.5 * (image_t[period[0]] + image_t[period[-1]])
    return [int(k) for k in sorted(period, key=lambda k: (abs(image_t[k] - middle), k))[:TRIES]]


@dataclass
class _Streams:
    """What the first pass over the bag collects (mutable while read)."""

    camera: PinholeCamera | None = None
    image_ns: list[int] = field(default_factory=list)
    joint_ns: list[int] = field(default_factory=list)
    joint_q: list[FloatArray] = field(default_factory=list)

    def take(self, role: str, msg: Any, selection: HandEyeSelection, path: str) -> None:
        if role == "image":
            self.image_ns.append(stamp_to_ns(msg.header.stamp))
        elif role == "info":
            self.camera = camera_from_info(msg, selection.camera_info_topic, path)
        else:
            try:
                position = reorder_joints(list(msg.name), msg.position, f"joint-state topic {selection.joint_states}")
            except ValueError as err:
                raise DataError(f"bag {path}: {err}", option="joint_states") from None
            self.joint_ns.append(stamp_to_ns(msg.header.stamp))
            self.joint_q.append(position)


def _topics(bag: Path, topics: dict[str, Any], selection: HandEyeSelection) -> tuple[dict[str, str], str]:
    """``{topic: role}`` of the three topics, checked (each there, of its type); and the image type."""
    image_type = _check_topic(bag, topics, selection.image_topic, "image", "the images")
    if image_type not in IMAGE_MSGTYPES:
        raise InputError(f"image topic {selection.image_topic}: message type {image_type} is not an image "
                         f"({', '.join(IMAGE_MSGTYPES)})", option="image")
    checks = ((selection.camera_info_topic, "camera_info", "the camera info, needed for the intrinsics",
               MSGTYPE_CAMERA_INFO), (selection.joint_states, "joint_states", "the joint states", MSGTYPE_JOINT_STATE))
    for topic, option, what, expected in checks:
        msgtype = _check_topic(bag, topics, topic, option, what)
        if msgtype != expected:
            raise InputError(f"topic {topic} ({what.split(',')[0]}): message type {msgtype} is not {expected}",
                             option=option)
    roles = {selection.image_topic: "image", selection.camera_info_topic: "info", selection.joint_states: "joints"}
    return roles, image_type


class _Bag:
    """One open bag (a context manager): the checked topics and their messages, as often as asked."""

    def __init__(self, path: str | Path, selection: HandEyeSelection) -> None:
        from rosbags.highlevel import AnyReader

        self.path = str(path)
        self.selection = selection
        self.bag, fmt = _bag_path(Path(path))
        self.default = _default_typestore(fmt == "rosbag1")
        self.reader = self._guarded(lambda: AnyReader([self.bag], default_typestore=self.default))

    def __enter__(self) -> _Bag:
        self._guarded(self.reader.open)
        try:
            self.roles, self.image_type = _topics(self.bag, self.reader.topics, self.selection)
            self._guarded(lambda: _complete_types(self.reader, self.default,
                                                  {str(self.reader.topics[t].msgtype) for t in self.roles}))
        except BaseException:
            self.reader.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.reader.close()

    def _guarded(self, action: Callable[[], Any]) -> Any:
        try:
            return action()
        except Sim2RealError:
            raise
        except Exception as err:  # rosbags, storage and deserialisation errors of damaged or foreign files
            raise DataError(f"cannot read bag {self.path}: {' '.join(str(err).split()) or type(err).__name__}") \
                from None

    def messages(self, roles: tuple[str, ...]) -> Iterator[tuple[str, Any, bytes]]:
        """``(role, connection, raw bytes)`` of the topics of ``roles``, in log order."""
        connections = [c for c in self.reader.connections if self.roles.get(c.topic) in roles]
        iterator = iter(self.reader.messages(connections=connections))
        while True:
            item = self._guarded(lambda: next(iterator, None))
            if item is None:
                return
            connection, _, raw = item
            yield self.roles[connection.topic], connection, raw

    def deserialize(self, raw: bytes, connection: Any) -> Any:
        return self._guarded(lambda: self.reader.deserialize(raw, connection.msgtype))


def _first_pass(bag: _Bag) -> tuple[_Streams, int]:
    """Stamps of the images, the joint states, the first CameraInfo; and the number of images."""
    streams = _Streams()
    selection, path = bag.selection, bag.path
    for role, connection, raw in bag.messages(("image", "info", "joints")):
        if role == "info" and streams.camera is not None:
            continue
        streams.take(role, bag.deserialize(raw, connection), selection, path)
    for topic, option, what, count in (
            (selection.image_topic, "image", "the images", len(streams.image_ns)),
            (selection.camera_info_topic, "camera_info", "the camera info", int(streams.camera is not None)),
            (selection.joint_states, "joint_states", "the joint states", len(streams.joint_ns))):
        if count == 0:
            raise InputError(f"bag {path}: topic {topic} ({what}) holds no messages", option=option)
    return streams, len(streams.image_ns)


def _joint_series(streams: _Streams, t0_ns: int, path: str) -> tuple[FloatArray, FloatArray]:
    """Joint stamps (K,), s since ``t0_ns``, increasing (repeated stamps dropped), and angles (K, 6), rad."""
    stamps = np.array(streams.joint_ns, dtype=np.int64)
    order = np.argsort(stamps, kind="stable")
    stamps, angles = stamps[order], np.array(streams.joint_q, dtype=float).reshape(-1, 6)[order]
    keep = np.concatenate([[True], np.diff(stamps) > 0])
    if keep.sum() < 2:
        raise DataError(f"bag {path}: the joint states on {len(stamps)} message(s) have fewer than 2 distinct "
                        f"header stamps: they cannot tell when the arm was still")
    return (stamps[keep] - t0_ns) / NS_PER_S, angles[keep]


def _decoded(bag: _Bag, wanted: set[int], camera: PinholeCamera) -> dict[int, NDArray[np.uint8] | None]:
    """The grey images of the wanted images (indices in log order) of the second pass; None: undecodable."""
    images: dict[int, NDArray[np.uint8] | None] = {}
    selection = bag.selection
    for index, (_, connection, raw) in enumerate(bag.messages(("image",))):
        if index not in wanted:
            continue
        grey = decode_image(bag.deserialize(raw, connection), bag.image_type, selection.image_topic, "image")
        if grey is not None and grey.shape != (camera.height, camera.width):
            raise DataError(f"bag {bag.path}: the images on {selection.image_topic} are {grey.shape[1]} × "
                            f"{grey.shape[0]} px, but the CameraInfo on {selection.camera_info_topic} is for "
                            f"{camera.width} × {camera.height} px: give this camera's camera info",
                            option="camera_info")
        images[index] = grey
    return images


#: Which reason names a period without an image, when its tried images failed for several.
_REASON_ORDER = (DUPLICATE, REPROJECTION, NO_TAG, UNDECODABLE)


def _look(tried: list[int], images: dict[int, NDArray[np.uint8] | None], detector: TagDetector,
          selection: HandEyeSelection, camera: PinholeCamera) -> tuple[int, str, Detection | None, tuple[int, ...]]:
    """The first tried image that shows the tag: ``(index, status, detection, other tag ids)``; else the first
    tried image with the weightiest reason."""
    reasons, others = [], set()
    for k in tried:
        grey = images[k]
        if grey is None:
            reasons.append(UNDECODABLE)
            continue
        found = detector.detect(grey)
        own = [d for d in found if d.tag_id == selection.tag_id]
        others |= {d.tag_id for d in found if d.tag_id != selection.tag_id}
        if len(own) != 1:
            reasons.append(DUPLICATE if own else NO_TAG)
            continue
        solved = unambiguous_tag_pose(own[0], selection.tag_size, camera)
        if not isinstance(solved, Refusal):
            return k, UNAMBIGUOUS, own[0], tuple(sorted(others))
        if solved.reason == "ambiguous":
            return k, AMBIGUOUS, own[0], tuple(sorted(others))
        reasons.append(REPROJECTION)
    return tried[0], min(reasons, key=_REASON_ORDER.index), None, tuple(sorted(others))


def read_handeye_bag(path: str | Path, selection: HandEyeSelection) -> HandEyeRecording:
    """Read a hand-eye bag: its still poses, each with the image used and the flange's pose (module docstring).

    Parameters
    ----------
    path : path
        A rosbag2 directory (or its metadata.yaml), a ``.mcap`` / ``.db3`` file or a ROS 1 ``.bag``.
    selection : HandEyeSelection

    Raises
    ------
    Sim2RealError
        One line: an unreadable bag; a missing topic (listing the bag's), a topic of the wrong type or without
        messages; joint states without joint1..joint6; an image encoding not read; images of another size than
        the CameraInfo's; image and joint stamps that do not overlap.
    """
    detector = TagDetector(selection.family, selection.refine)
    with _Bag(path, selection) as bag:
        streams, count = _first_pass(bag)
        camera = streams.camera
        assert camera is not None
        image_ns = np.array(streams.image_ns, dtype=np.int64)
        order = np.argsort(image_ns, kind="stable")  # time order → log order
        t0_ns = int(min(image_ns.min(), min(streams.joint_ns)))
        joint_t, joint_q = _joint_series(streams, t0_ns, bag.path)
        image_t = (image_ns[order] - t0_ns) / NS_PER_S
        if image_t[-1] < joint_t[0] or image_t[0] > joint_t[-1]:
            raise DataError(f"bag {bag.path}: the images (stamps {image_t[0]:.3f} to {image_t[-1]:.3f} s) and the "
                            f"joint states ({joint_t[0]:.3f} to {joint_t[-1]:.3f} s) do not overlap in time: their "
                            f"header stamps come from different clocks")
        still = still_images(image_t, joint_t, joint_q, selection.rule)
        periods = still_periods(image_t, still, joint_t, joint_q)
        tried = [tried_order(period, image_t) for period in periods]
        images = _decoded(bag, {int(order[k]) for ks in tried for k in ks}, camera)
    arm = load_arm()
    poses = []
    for period, ks in zip(periods, tried, strict=True):
        by_time = {k: images[int(order[k])] for k in ks}
        k, status, detection, others = _look(ks, by_time, detector, selection, camera)
        joints = _interpolated(image_t[k], joint_t, joint_q)
        poses.append(StillPose(int(image_ns[order[period[0]]]), int(image_ns[order[period[-1]]]), len(period),
                               int(image_ns[order[k]]), joints, arm.forward(joints), status, detection, others))
    return HandEyeRecording(str(path), camera, bag.image_type, count, len(streams.joint_ns), int(still.sum()),
                            t0_ns, tuple(poses))


def check_enough_poses(recording: HandEyeRecording, selection: HandEyeSelection) -> None:
    """Refuse a recording with fewer than :data:`~sim2real.vision.handeye.MIN_POSES` still poses that show the
    tag unambiguously: one line saying how many were found and what to record.

    Raises
    ------
    InputError
    """
    found, poses, rule = recording.unambiguous, recording.poses, selection.rule
    if found >= MIN_POSES:
        return
    where = f"bag {recording.path}"
    if not poses:
        raise InputError(f"{where}: none of its {recording.image_count} images on {selection.image_topic} was taken "
                         f"while the arm was still ({rule.describe()}); hand-eye calibration needs at least "
                         f"{MIN_POSES} still poses: hold each pose at least {2 * rule.half_window + 0.3:g} s, or "
                         f"check the joint-state topic")
    tag = f"tag {selection.tag_id} ({selection.family}, {1e3 * selection.tag_size:g} mm)"
    if not recording.used:
        others = sorted({i for p in poses for i in p.other_tags})
        seen = f"tags seen: {', '.join(map(str, others))}" if others else "no tag of the family decoded"
        raise InputError(f"{where}: {tag} is in none of the images of its {len(poses)} still pose(s) ({seen}): "
                         f"check the tag's id, its family, and that the plate faces the camera")
    counts = {s: sum(p.status == s for p in poses) for s in (AMBIGUOUS, NO_TAG, DUPLICATE, REPROJECTION, UNDECODABLE)}
    detail = ", ".join(f"{s} {n}" for s, n in counts.items() if n)
    detail = f" ({detail})" if detail else ""
    raise InputError(f"{where}: only {found} of its {len(poses)} still pose(s) show {tag} unambiguously{detail}; "
                     f"hand-eye calibration needs at least {MIN_POSES}: record more poses, each held still at least "
                     f"{2 * rule.half_window + 0.3:g} s, with the tag seen from 20-50° off head-on and the flange "
                     f"turned about different axes")


def calibrate_recording(recording: HandEyeRecording, selection: HandEyeSelection,
                        flange_from_tag: FloatArray | None = None) -> HandEyeResult:
    """The camera's pose in the arm base frame from the recording's used still poses
    (:func:`~sim2real.vision.handeye.calibrate_eye_to_hand`; its per-image arrays follow
    :attr:`HandEyeRecording.used`).

    Parameters
    ----------
    recording : HandEyeRecording
    selection : HandEyeSelection
    flange_from_tag : ndarray, shape (4, 4), optional
        A guess of the tag's pose on the flange, m.

    Raises
    ------
    InputError
        Too few still poses show the tag unambiguously (:func:`check_enough_poses`).
    """
    check_enough_poses(recording, selection)
    used = recording.used
    return calibrate_eye_to_hand([p.base_from_flange for p in used], [p.detection for p in used if p.detection],
                                 recording.camera, selection.tag_size, flange_from_tag)

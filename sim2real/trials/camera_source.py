"""Box poses from camera images in a bag (``import bag --box-image``): decoding and per-image estimation.

The image topic carries ``sensor_msgs/msg/Image`` (encodings ``mono8``, ``rgb8``, ``bgr8``; any other is
refused) or ``sensor_msgs/msg/CompressedImage`` (decoded with ``cv2.imdecode``). The intrinsics are the
first ``sensor_msgs/msg/CameraInfo`` message of the camera-info topic (its ``k``, ``d``, ``width``,
``height``); the box's tags, the detector's corner refinement and the camera's pose in the arm base
frame come from the camera set-up file (:mod:`sim2real.vision.setup`), the box's size from the
trial's object. Each image gives at most one box pose (:class:`~sim2real.vision.estimate.BoxPoseEstimator`),
stamped with the image's header stamp; an image that gives none (a
:class:`~sim2real.vision.pose.Refusal`, or bytes that do not decode: ``undecodable``) is dropped and
counted, never guessed (:class:`~sim2real.trials.camera_tally.ImageDetections`).

Frames: the poses are the box's geometric centre and orientation in the arm base frame (the set-up
file's ``base_from_camera`` maps the camera's optical frame into it), m and unit quaternions (w, x, y, z).
They are given the frame name :attr:`CameraSelection.frame` (``link_base``, or the keyless ``--frame``
that names the arm base frame in the bag), which is the recording frame of such an import.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray

from sim2real.errors import DataError, InputError
from sim2real.params import ParameterSet
from sim2real.spatial.rigid import to_pose
from sim2real.trials.bag_sources import PoseSource
from sim2real.trials.camera_tally import ImageDetections
from sim2real.trials.messages import stamp_to_ns
from sim2real.trials.schema import BASE_FRAME
from sim2real.vision.camera import PinholeCamera
from sim2real.vision.estimate import BoxObservation, BoxPoseEstimator
from sim2real.vision.images import DISTORTION_MODELS, ENCODINGS, grey_from_raw
from sim2real.vision.images import camera_from_info as info_camera
from sim2real.vision.setup import CameraSetup
from sim2real.vision.tags import BoxTags

MSGTYPE_IMAGE = "sensor_msgs/msg/Image"
MSGTYPE_COMPRESSED_IMAGE = "sensor_msgs/msg/CompressedImage"
MSGTYPE_CAMERA_INFO = "sensor_msgs/msg/CameraInfo"
IMAGE_MSGTYPES = (MSGTYPE_IMAGE, MSGTYPE_COMPRESSED_IMAGE)
#: The refusal reason of an image whose bytes do not make an image.
UNDECODABLE = "undecodable"


@dataclass(frozen=True)
class CameraSelection:
    """Where the camera's box poses come from.

    Attributes
    ----------
    image_topic : str
        ``sensor_msgs/msg/Image`` or ``CompressedImage``.
    camera_info_topic : str
        ``sensor_msgs/msg/CameraInfo`` of that camera.
    setup : CameraSetup
        The camera set-up file: tags, corner refinement, ``base_from_camera``.
    tags : BoxTags
        The box's tags, placed by the box's size.
    frame : str
        The name the arm base frame has in the bag; the box poses are in it.
    """

    image_topic: str
    camera_info_topic: str
    setup: CameraSetup
    tags: BoxTags
    frame: str = BASE_FRAME

    @property
    def source(self) -> PoseSource:
        """The box pose source of this camera (kind ``image``; option ``box_image``)."""
        return PoseSource("image", self.image_topic, "box_image")


def _topic(text: str) -> str:
    topic = text.strip()
    return topic if topic.startswith("/") else f"/{topic}"


def camera_selection(image_topic: str, setup: CameraSetup, box_size: dict[str, float],
                     camera_info_topic: str | None = None, frame: str | None = None) -> CameraSelection:
    """The :class:`CameraSelection` of the import options.

    Parameters
    ----------
    image_topic : str
        ``--box-image``.
    setup : CameraSetup
        The loaded ``--camera`` file.
    box_size : dict
        The object's parameters (``box.size_x``, ``box.size_y``, ``box.size_z``, m) that place the tags.
    camera_info_topic : str, optional
        ``--camera-info`` (default: the set-up file's ``camera_info_topic``).
    frame : str, optional
        The keyless ``--frame``: the arm base frame's name in the bag (default ``link_base``).

    Raises
    ------
    InputError
        An empty topic, or a tag that does not fit on its face of the box.
    """
    if not image_topic.strip():
        raise InputError("the box images need a topic", option="box_image")
    if camera_info_topic is not None and not camera_info_topic.strip():
        raise InputError("the camera info needs a topic", option="camera_info")
    info = _topic(camera_info_topic if camera_info_topic is not None else setup.camera_info_topic)
    params = ParameterSet.nominal().replace({k: box_size[k] for k in ("box.size_x", "box.size_y", "box.size_z")})
    try:
        tags = setup.box_tags(params)
    except InputError as err:
        where = f" {setup.source}" if setup.source else ""
        raise InputError(f"{err} (the tags of the camera set-up{where}, the box of the box size)",
                         option="camera") from None
    return CameraSelection(_topic(image_topic), info, setup, tags, frame or BASE_FRAME)


def camera_from_info(msg: Any, topic: str, path: str | Path) -> PinholeCamera:
    """The camera of one ``CameraInfo`` message (ROS 2's ``k``, ``d`` or ROS 1's ``K``, ``D``).

    Raises
    ------
    InputError
        A distortion model OpenCV's pinhole model does not read (``equidistant`` …).
    DataError
        Intrinsics that are no camera (zero focal length, zero size: an uncalibrated camera).
    """
    model = str(getattr(msg, "distortion_model", "") or "")
    if model not in DISTORTION_MODELS:
        raise InputError(f"bag {path}: {topic} has distortion model '{model}'; the tag detector reads "
                         f"{', '.join(m for m in DISTORTION_MODELS if m)} (OpenCV's pinhole model)")
    k: Any = getattr(msg, "k", None)
    d: Any = getattr(msg, "d", None)
    k = getattr(msg, "K", ()) if k is None else k  # ROS 1
    d = getattr(msg, "D", ()) if d is None else d
    try:
        return info_camera(int(msg.width), int(msg.height), list(k), list(d), model)
    except InputError as err:
        raise DataError(f"bag {path}: the CameraInfo on {topic} is not a calibrated camera: {err}") from None


def decode_image(msg: Any, msgtype: str, topic: str, option: str = "box_image") -> NDArray[np.uint8] | None:
    """The grey image (height, width), uint8, of an ``Image`` or ``CompressedImage`` message (``option``: the
    argparse dest of the option that named ``topic``, for messages: :class:`~sim2real.errors.Sim2RealError`).

    Returns
    -------
    ndarray or None
        None when the bytes do not make an image (a damaged message: counted as ``undecodable``).

    Raises
    ------
    InputError
        A raw image in an encoding other than ``mono8``, ``rgb8`` or ``bgr8`` (the whole stream is then
        unreadable: one line naming the encoding).
    """
    data = np.asarray(msg.data, dtype=np.uint8).ravel()
    if msgtype == MSGTYPE_COMPRESSED_IMAGE:
        image = cv2.imdecode(data, cv2.IMREAD_GRAYSCALE) if data.size else None
        return None if image is None else np.asarray(image, np.uint8)
    encoding = str(msg.encoding)
    if encoding not in ENCODINGS:
        raise InputError(f"image topic {topic}: image encoding '{encoding}' is not read (only "
                         f"{', '.join(ENCODINGS)}; or a {MSGTYPE_COMPRESSED_IMAGE} topic)", option=option)
    return grey_from_raw(encoding, int(msg.height), int(msg.width), int(msg.step), data)


class CameraStream:
    """One bag's images → box poses in the arm base frame, and what each image gave (mutable while read).

    Parameters
    ----------
    selection : CameraSelection
    camera : PinholeCamera
        The intrinsics of the bag's first CameraInfo.
    msgtype : str
        The image topic's message type (:data:`IMAGE_MSGTYPES`).
    path : path
        The bag, for messages.
    """

    def __init__(self, selection: CameraSelection, camera: PinholeCamera, msgtype: str, path: str | Path) -> None:
        setup = selection.setup
        self.selection = selection
        self.camera = camera
        self.msgtype = msgtype
        self.path = path
        self.estimator = BoxPoseEstimator(camera, selection.tags, setup.base_from_camera, setup.refine)
        self.stamp: list[int] = []
        self.receive: list[int] = []
        self.refused: list[str] = []
        self.encodings: set[str] = set()

    def take(self, msg: Any, receive_ns: int) -> tuple[int, BoxObservation] | None:
        """One image message: ``(header stamp ns, the box pose)``, or None (the image is counted as refused)."""
        stamp = stamp_to_ns(msg.header.stamp)
        image = decode_image(msg, self.msgtype, self.selection.image_topic)
        self.encodings.add(str(getattr(msg, "encoding", getattr(msg, "format", ""))))
        self.stamp.append(stamp)
        self.receive.append(int(receive_ns))
        if image is None:
            self.refused.append(UNDECODABLE)
            return None
        if image.shape != (self.camera.height, self.camera.width):
            raise DataError(f"bag {self.path}: the images on {self.selection.image_topic} are {image.shape[1]} × "
                            f"{image.shape[0]} px, but the CameraInfo on {self.selection.camera_info_topic} is for "
                            f"{self.camera.width} × {self.camera.height} px: give this camera's camera info",
                            option="camera_info")
        result = self.estimator.estimate(image)
        if isinstance(result, BoxObservation):
            self.refused.append("")
            return stamp, result
        self.refused.append(result.reason)
        return None

    def detections(self) -> ImageDetections:
        """What every image gave, with what trial.json keeps of the camera."""
        setup, camera = self.selection.setup, self.camera
        translation, quaternion = to_pose(setup.base_from_camera)
        info = {"camera_info_topic": self.selection.camera_info_topic,
                "setup_file": str(Path(setup.source).resolve()) if setup.source else "",
                "image_type": self.msgtype, "encodings": sorted(self.encodings),
                "intrinsics": {"width": camera.width, "height": camera.height,
                               "k": [float(v) for v in camera.matrix.ravel()],
                               "d": [float(v) for v in camera.distortion]},
                "tags": {"family": setup.family, "size_m": setup.tag_size, "faces": list(setup.faces)},
                "refine": setup.refine,
                "base_from_camera": {"translation": [float(v) for v in translation],
                                     "rotation_wxyz": [float(v) for v in quaternion]}}
        return ImageDetections(self.selection.image_topic, np.array(self.stamp, np.int64),
                               np.array(self.receive, np.int64), tuple(self.refused), info)

    def check_filled(self) -> None:
        """Refuse a bag whose images gave no box pose at all (one line: how many images, and why)."""
        if self.refused and any(reason == "" for reason in self.refused):
            return
        topic = self.selection.image_topic
        if not self.refused:
            raise InputError(f"bag {self.path}: topic {topic} (the box images) holds no messages",
                             option="box_image")
        raise InputError(f"bag {self.path}: none of the {len(self.refused)} images on {topic} gave a box pose "
                         f"({self.detections().tally().summary()}); check the tags of the camera set-up file and "
                         f"the box size", option="camera")


def read_camera_info(reader: Any, selection: CameraSelection, path: str | Path) -> PinholeCamera:
    """The camera of the first message on the camera-info topic of an open ``AnyReader``.

    Raises
    ------
    InputError
        The topic holds no message (that it exists and carries CameraInfo is checked before).
    """
    connections = [c for c in reader.connections if c.topic == selection.camera_info_topic]
    for connection, _, raw in reader.messages(connections=connections):
        return camera_from_info(reader.deserialize(raw, connection.msgtype), selection.camera_info_topic, path)
    raise InputError(f"bag {path}: topic {selection.camera_info_topic} (the camera info) holds no messages",
                     option="camera_info")

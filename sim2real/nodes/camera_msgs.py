"""``sensor_msgs/Image`` and ``CameraInfo`` ⇄ NumPy images and :class:`~sim2real.vision.camera.PinholeCamera`."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, Image

from sim2real.errors import DataError
from sim2real.nodes.common import time_msg
from sim2real.vision.camera import PinholeCamera
from sim2real.vision.images import camera_from_info, grey_from_raw

#: Images: the newest few only (a detector that falls behind skips frames rather than queueing them).
IMAGE_QOS = QoSProfile(depth=2, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)


def image_msg(stamp_ns: int, image: NDArray[np.uint8], frame_id: str = "camera_optical_frame") -> Image:
    """A mono8 Image of a grey image (height, width), uint8, stamped with its exposure time."""
    msg = Image()
    msg.header.stamp = time_msg(stamp_ns)
    msg.header.frame_id = frame_id
    msg.height, msg.width = (int(v) for v in image.shape[:2])
    msg.encoding = "mono8"
    msg.step = msg.width
    msg.data = np.ascontiguousarray(image, np.uint8).tobytes()
    return msg


def image_array(msg: Image) -> NDArray[np.uint8]:
    """The grey pixels (height, width), uint8, of a mono8, rgb8 or bgr8 Image.

    Raises
    ------
    InputError
        Another encoding (:func:`~sim2real.vision.images.grey_from_raw`).
    DataError
        Data shorter than the image.
    """
    pixels = grey_from_raw(str(msg.encoding), int(msg.height), int(msg.width), int(msg.step), msg.data)
    if pixels is None:
        raise DataError(f"an image of {msg.width} × {msg.height} px has too few bytes for its step {msg.step}")
    return pixels


def camera_info_msg(stamp_ns: int, camera: PinholeCamera, frame_id: str = "camera_optical_frame") -> CameraInfo:
    """The CameraInfo of a camera (plumb-bob distortion)."""
    msg = CameraInfo()
    msg.header.stamp = time_msg(stamp_ns)
    msg.header.frame_id = frame_id
    msg.width, msg.height = camera.width, camera.height
    msg.distortion_model = "plumb_bob"
    msg.d = [float(v) for v in camera.distortion]
    msg.k = [float(v) for v in camera.matrix.ravel()]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    msg.p = [float(v) for v in np.column_stack([camera.matrix, np.zeros(3)]).ravel()]
    return msg


def camera_of(msg: CameraInfo) -> PinholeCamera:
    """The camera a CameraInfo describes (its ``k``, ``d``, distortion model, width and height)."""
    return camera_from_info(msg.width, msg.height, list(msg.k), list(msg.d), str(msg.distortion_model))

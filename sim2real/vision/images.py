"""Camera messages' pixels and intrinsics as the vision layer takes them, for the ROS node and the bag reader.

Both read ``sensor_msgs/Image`` (raw rows in ``mono8``, ``rgb8`` or ``bgr8``) and ``CameraInfo`` (plumb-bob
or rational-polynomial distortion, OpenCV's pinhole model); they differ only in where the message comes from
(rclpy or rosbags), so the decoding lives here once.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np
from numpy.typing import NDArray

from sim2real.errors import InputError
from sim2real.vision.camera import PinholeCamera

#: Raw image encodings read: name → (channels, OpenCV conversion to grey or None).
ENCODINGS: dict[str, tuple[int, int | None]] = {"mono8": (1, None), "rgb8": (3, cv2.COLOR_RGB2GRAY),
                                                "bgr8": (3, cv2.COLOR_BGR2GRAY)}
#: CameraInfo distortion models that OpenCV's pinhole model (the detector's PnP) reads ("" : none given).
DISTORTION_MODELS = ("", "plumb_bob", "rational_polynomial")


def grey_from_raw(encoding: str, height: int, width: int, step: int, data: object) -> NDArray[np.uint8] | None:
    """The grey image (height, width), uint8, of a raw ``Image``'s fields.

    Returns
    -------
    ndarray or None
        None when the bytes are too few for the size (a damaged message).

    Raises
    ------
    InputError
        An encoding other than those of :data:`ENCODINGS` (the message names it).
    """
    if encoding not in ENCODINGS:
        raise InputError(f"image encoding '{encoding}' is not read (only {', '.join(ENCODINGS)})")
    channels, conversion = ENCODINGS[encoding]
    pixels = np.frombuffer(bytes(data), np.uint8) if isinstance(data, (bytes, bytearray, memoryview)) else \
        np.asarray(data, dtype=np.uint8).ravel()
    if height <= 0 or width <= 0 or step < width * channels or pixels.size < height * step:
        return None
    rows = np.ascontiguousarray(pixels[:height * step].reshape(height, step)[:, :width * channels])
    if conversion is None:
        return rows
    return np.asarray(cv2.cvtColor(rows.reshape(height, width, 3), conversion), np.uint8)


def camera_from_info(width: int, height: int, k: Sequence[float], d: Sequence[float],
                     distortion_model: str = "") -> PinholeCamera:
    """The camera of a ``CameraInfo``'s fields.

    Raises
    ------
    InputError
        A distortion model OpenCV's pinhole model does not read (``equidistant`` …), or intrinsics that are
        no camera (zero focal length or size: an uncalibrated camera).
    """
    if distortion_model not in DISTORTION_MODELS:
        raise InputError(f"distortion model '{distortion_model}' is not read (only "
                         f"{', '.join(m for m in DISTORTION_MODELS if m)}: OpenCV's pinhole model)")
    return PinholeCamera.from_camera_info(int(width), int(height), [float(v) for v in k], [float(v) for v in d])

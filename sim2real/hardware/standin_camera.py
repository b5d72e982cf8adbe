"""The stand-in's camera: images of the stand-in box with its AprilTags, as a lab's camera would send them.

With ``run --mode standin --box-pose camera`` the stand-in world publishes no box pose: it renders the box
(:class:`~sim2real.vision.render.BoxRenderer`) at the camera's frame rate from the camera's hidden pose,
and the ``tag_detector`` node turns the images into box poses, as in a lab without motion capture. A
frame shows the world at its exposure time (its stamp) and arrives ``latency`` later.

The world file's ``camera`` group (all optional)::

    camera:
      width: 640              # px
      height: 480
      focal: 615.0            # px (square pixels, principal point at the centre, no distortion)
      eye: [0.80, -0.55, 0.50]     # m, base frame: the camera's centre
      target: [0.40, 0.0, 0.10]    # m: a point on its optical axis
      rate_hz: 30.0
      latency: 0.030          # s, exposure to arrival
      blur_px: 0.7            # Gaussian blur, px
      noise: 2.0              # pixel noise, grey levels
      tag_size: 0.05          # m, the tags' black square
      faces: ["+z", "+x", "-x", "+y", "-y"]
      seed: 11
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sim2real.errors import DataError
from sim2real.hardware.rate_gate import RateGate
from sim2real.params import ParameterSet
from sim2real.spatial.rigid import from_pose, invert, look_at
from sim2real.vision.camera import PinholeCamera
from sim2real.vision.render import BoxRenderer, Optics
from sim2real.vision.setup import CameraSetup

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class StandinCameraConfig:
    """The stand-in camera of a world file (see the module docstring for the keys and units)."""

    width: int = 640
    height: int = 480
    focal: float = 615.0
    eye: tuple[float, float, float] = (0.80, -0.55, 0.50)
    target: tuple[float, float, float] = (0.40, 0.0, 0.10)
    rate_hz: float = 30.0
    latency: float = 0.030
    blur_px: float = 0.7
    noise: float = 2.0
    tag_size: float = 0.05
    faces: tuple[str, ...] = ("+z", "+x", "-x", "+y", "-y")
    seed: int = 11

    @property
    def base_from_camera(self) -> FloatArray:
        """The camera's optical frame in the arm base frame (4, 4): the hidden truth of the stand-in."""
        return look_at(np.array(self.eye), np.array(self.target))

    def camera(self) -> PinholeCamera:
        """Its intrinsics."""
        return PinholeCamera.ideal(self.width, self.height, self.focal)

    def setup(self, image_topic: str = "real/camera/image_raw",
              camera_info_topic: str = "real/camera/camera_info") -> CameraSetup:
        """The set-up a perfectly calibrated lab would give ``tag_detector`` for this camera."""
        return CameraSetup(image_topic, camera_info_topic, "36h11", self.tag_size, self.faces, "edges",
                           self.base_from_camera)


def camera_config(values: Mapping[str, Any], source: str) -> StandinCameraConfig:
    """A :class:`StandinCameraConfig` from the world file's ``camera`` group (nested mapping).

    Raises
    ------
    DataError
        An unknown key or a value of the wrong kind or range.
    """
    default = StandinCameraConfig()
    known = set(default.__dataclass_fields__)
    unknown = sorted(set(values) - known)
    if unknown:
        raise DataError(f"{source}: unknown camera key(s) {', '.join(unknown)} (one of {', '.join(sorted(known))})")
    try:
        merged = {**default.__dict__, **values}
        config = StandinCameraConfig(
            int(merged["width"]), int(merged["height"]), float(merged["focal"]),
            tuple(float(v) for v in merged["eye"]), tuple(float(v) for v in merged["target"]),  # type: ignore[arg-type]
            float(merged["rate_hz"]), float(merged["latency"]), float(merged["blur_px"]), float(merged["noise"]),
            float(merged["tag_size"]), tuple(str(f) for f in merged["faces"]), int(merged["seed"]))
    except (TypeError, ValueError):
        raise DataError(f"{source}: camera values must be numbers (eye and target: 3 each, faces: a list)") from None
    if len(config.eye) != 3 or len(config.target) != 3 or not 1.0 <= config.rate_hz <= 120.0 or config.latency < 0:
        raise DataError(f"{source}: camera eye/target need 3 numbers, rate_hz 1-120 Hz, latency >= 0 s")
    config.camera()  # the intrinsics are valid
    Optics(config.blur_px, config.noise)
    return config


@dataclass(frozen=True)
class CameraFrame:
    """One image of the stand-in camera: exposed at ``acquired``, arriving at ``arrival`` (s, stand-in clock)."""

    acquired: float
    arrival: float
    image: NDArray[np.uint8]


class StandinCamera:
    """Renders the stand-in box at the camera's frame rate (the world's states in, frames out).

    Parameters
    ----------
    config : StandinCameraConfig
    params : ParameterSet
        The stand-in's hidden parameters (the box's size).
    """

    def __init__(self, config: StandinCameraConfig, params: ParameterSet) -> None:
        self.config = config
        self.camera = config.camera()
        self.setup = config.setup()
        self._camera_from_base = invert(config.base_from_camera)
        half = 0.5 * np.array([float(params[f"box.size_{a}"]) for a in "xyz"])
        self._renderer = BoxRenderer(self.camera, half, self.setup.box_tags(params),
                                     Optics(config.blur_px, config.noise), seed=config.seed)
        self._gate = RateGate(config.rate_hz)

    def observe(self, t: float, position: FloatArray, quaternion: FloatArray) -> CameraFrame | None:
        """The frame of the box at ``position`` (3,) m, ``quaternion`` (4,) at time ``t`` (s), when one is due."""
        if not self._gate.due(t):
            return None
        image = self._renderer.render(self._camera_from_base @ from_pose(position, quaternion))
        return CameraFrame(float(t), float(t) + self.config.latency, image)

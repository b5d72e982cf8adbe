"""The camera set-up file (``config/camera.yaml``): topics, the box's tags and the camera's pose in the base frame.

A ROS 2 params file with a ``tag_detector`` section (the node of that name reads it; ``import bag`` reads it
too, and ``handeye`` writes it with a calibrated ``base_from_camera``)::

    tag_detector:
      ros__parameters:
        image_topic: /camera/color/image_raw        # sensor_msgs/Image (mono8, rgb8, bgr8)
        camera_info_topic: /camera/color/camera_info
        tags:
          family: 36h11
          size: 0.05                                # m: the black square's side
          faces: ["+z", "+x", "-x", "+y", "-y"]     # tag ids 0, 1, ... centred on these faces
        refine: edges
        base_from_camera:                           # the optical frame in the arm base frame
          translation: [0.45, -0.45, 0.45]          # m
          rotation_wxyz: [...]                      # unit quaternion (w, x, y, z)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import yaml
from numpy.typing import NDArray

from sim2real.errors import DataError
from sim2real.params import ParameterSet
from sim2real.params.yaml_io import read_node_section
from sim2real.spatial.rigid import from_pose, to_pose
from sim2real.vision.tags import CORNER_REFINEMENTS, FACES, FAMILIES, BoxTags, box_tags

FloatArray = NDArray[np.float64]
SECTION = "tag_detector"


@dataclass(frozen=True)
class CameraSetup:
    """Everything of a camera set-up file.

    Attributes
    ----------
    image_topic, camera_info_topic : str
    family : str
        Tag family (``36h11`` …).
    tag_size : float
        Side of each tag's black square, m.
    faces : tuple of str
        The faces that carry a tag, ids 0, 1, … in this order.
    refine : str
        Corner refinement of the detector.
    base_from_camera : ndarray, shape (4, 4)
        The camera's optical frame in the arm base frame.
    source : str
        The file it came from ("" when built in code).
    """

    image_topic: str = "/camera/color/image_raw"
    camera_info_topic: str = "/camera/color/camera_info"
    family: str = "36h11"
    tag_size: float = 0.05
    faces: tuple[str, ...] = ("+z", "+x", "-x", "+y", "-y")
    refine: str = "edges"
    base_from_camera: FloatArray = field(default_factory=lambda: np.eye(4))
    source: str = ""

    def box_tags(self, params: ParameterSet) -> BoxTags:
        """The tags on the box of ``params`` (its ``box.size_*``)."""
        half = 0.5 * np.array([float(params[f"box.size_{a}"]) for a in "xyz"])
        return box_tags(half, self.tag_size, self.family, self.faces)

    def document(self) -> dict[str, Any]:
        """The set-up as a params file's document (``{tag_detector: {ros__parameters: …}}``)."""
        position, quaternion = to_pose(self.base_from_camera)
        return {SECTION: {"ros__parameters": {
            "image_topic": self.image_topic, "camera_info_topic": self.camera_info_topic,
            "tags": {"family": self.family, "size": self.tag_size, "faces": list(self.faces)},
            "refine": self.refine,
            "base_from_camera": {"translation": [round(float(v), 6) for v in position],
                                 "rotation_wxyz": [round(float(v), 8) for v in quaternion]}}}}


def _numbers(value: Any, count: int, what: str) -> FloatArray:
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        array = np.zeros(0)
    if array.shape != (count,) or not np.all(np.isfinite(array)):
        raise DataError(f"{what} needs {count} finite numbers")
    return array


def setup_from_section(section: Mapping[str, Any], source: str = "") -> CameraSetup:
    """A :class:`CameraSetup` from the ``tag_detector: ros__parameters`` mapping (missing keys: defaults)."""
    default = CameraSetup()
    tags = section.get("tags", {}) or {}
    frame = section.get("base_from_camera", {}) or {}
    if not isinstance(tags, Mapping) or not isinstance(frame, Mapping):
        raise DataError(f"{source or 'camera set-up'}: 'tags' and 'base_from_camera' must be mappings")
    translation = _numbers(frame.get("translation", [0.0, 0.0, 0.0]), 3, "base_from_camera.translation")
    rotation = _numbers(frame.get("rotation_wxyz", [1.0, 0.0, 0.0, 0.0]), 4, "base_from_camera.rotation_wxyz")
    if abs(np.linalg.norm(rotation) - 1.0) > 1e-3:
        raise DataError("base_from_camera.rotation_wxyz must be a unit quaternion "
                        f"(norm {np.linalg.norm(rotation):.4f})")
    faces = tuple(str(f) for f in tags.get("faces", default.faces))
    unknown = [f for f in faces if f not in FACES]
    if unknown or len(set(faces)) != len(faces) or not faces:
        raise DataError(f"tags.faces needs distinct faces among {', '.join(FACES)}, not {list(faces)}")
    size = float(tags.get("size", default.tag_size))
    if not (np.isfinite(size) and 0.005 <= size <= 0.5):
        raise DataError(f"tags.size is the tag's black square in m (0.005-0.5), not {size}")
    family, refine = str(tags.get("family", default.family)), str(section.get("refine", default.refine))
    if family not in FAMILIES:
        raise DataError(f"{source or 'camera set-up'}: unknown tag family {family!r} (one of {', '.join(FAMILIES)})")
    if refine not in CORNER_REFINEMENTS:
        raise DataError(f"{source or 'camera set-up'}: unknown corner refinement {refine!r} (one of "
                        f"{', '.join(CORNER_REFINEMENTS)})")
    return CameraSetup(str(section.get("image_topic", default.image_topic)),
                       str(section.get("camera_info_topic", default.camera_info_topic)), family, size, faces,
                       refine, from_pose(translation, rotation), source)


def load_camera_setup(path: str | os.PathLike[str]) -> CameraSetup:
    """Read a camera set-up file (see the module docstring).

    Raises
    ------
    DataError
        Missing file, no ``tag_detector`` section, or a malformed value.
    """
    return setup_from_section(read_node_section(path, SECTION, "camera set-up file"), str(path))


def dump_camera_setup(setup: CameraSetup) -> str:
    """The set-up file's text."""
    return yaml.safe_dump(setup.document(), sort_keys=False)

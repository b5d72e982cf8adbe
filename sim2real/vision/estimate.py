"""The box's pose in the arm base frame from one camera image, and a tally of the images that gave none."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from sim2real.spatial.rigid import to_pose
from sim2real.vision.camera import PinholeCamera
from sim2real.vision.detect import TagDetector
from sim2real.vision.pose import BoxPoseSolution, Refusal, solve_box_pose
from sim2real.vision.tags import BoxTags

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class BoxObservation:
    """The box pose one image gave.

    Attributes
    ----------
    position : ndarray, shape (3,)
        The box's geometric centre in the arm base frame, m.
    quaternion : ndarray, shape (4,)
        The box's orientation in the base frame (w, x, y, z).
    solution : BoxPoseSolution
        The camera-frame solution (tags used, reprojection error).
    """

    position: FloatArray
    quaternion: FloatArray
    solution: BoxPoseSolution


@dataclass
class DetectionTally:
    """How many images gave a pose, and why the others did not.

    Attributes
    ----------
    images : int
    poses : int
    refused : Counter
        Reason (:class:`~sim2real.vision.pose.Refusal`) → count.
    """

    images: int = 0
    poses: int = 0
    refused: Counter[str] = field(default_factory=Counter)

    @property
    def rate(self) -> float:
        """The fraction of images that gave a pose (0 when there were none)."""
        return self.poses / self.images if self.images else 0.0

    def refuse(self, reason: str) -> None:
        """Count an image that gave no pose, for ``reason``."""
        self.images += 1
        self.refused[reason] += 1

    def as_dict(self) -> dict[str, object]:
        """The tally as plain numbers (for trial.json and reports)."""
        return {"images": self.images, "poses": self.poses, "rate": round(self.rate, 4),
                "refused": dict(sorted(self.refused.items()))}

    def summary(self) -> str:
        """One line: ``412 of 420 images gave a pose (98.1 %); refused: ambiguous 5, no_tag 3``."""
        refused = ", ".join(f"{k} {v}" for k, v in sorted(self.refused.items())) or "none"
        return f"{self.poses} of {self.images} images gave a pose ({100 * self.rate:.1f} %); refused: {refused}"


class BoxPoseEstimator:
    """Images → box poses in the arm base frame.

    Parameters
    ----------
    camera : PinholeCamera
    tags : BoxTags
        The box's tags.
    base_from_camera : ndarray, shape (4, 4)
        The camera's optical frame in the arm base frame (from :mod:`sim2real.vision.handeye` or the frames file).
    refine : str
        The detector's corner refinement (:class:`~sim2real.vision.detect.TagDetector`).
    """

    def __init__(self, camera: PinholeCamera, tags: BoxTags, base_from_camera: FloatArray,
                 refine: str = "subpix") -> None:
        self.camera = camera
        self.tags = tags
        self.base_from_camera = np.asarray(base_from_camera, dtype=float)
        self.detector = TagDetector(tags.family, refine)
        self.tally = DetectionTally()

    def estimate(self, image: NDArray[np.uint8]) -> BoxObservation | Refusal:
        """The box pose in ``image`` (grey or BGR, uint8), or why there is none; counted in :attr:`tally`."""
        result = solve_box_pose(self.detector.detect(image), self.tags, self.camera)
        if isinstance(result, Refusal):
            self.tally.refuse(result.reason)
            return result
        self.tally.images += 1
        self.tally.poses += 1
        position, quaternion = to_pose(self.base_from_camera @ result.camera_from_box)
        return BoxObservation(position, quaternion, result)

"""AprilTag detection in grey images with OpenCV's ``objdetect`` (its AprilTag dictionaries).

Why OpenCV: it is already the project's one vision dependency (PnP, rendering, hand-eye), its detector
decodes the AprilTag families, and on this machine it was as fast as the AprilTag C library's Python
binding and found more of the tags in the real test photographs with sub-pixel corners
(``benchmarks.vision`` measures both).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import cv2
import numpy as np
from numpy.typing import NDArray

from sim2real.errors import InputError
from sim2real.vision.edges import refine_corners
from sim2real.vision.tags import CORNER_REFINEMENTS, FAMILIES

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Detection:
    """One decoded tag in an image.

    Attributes
    ----------
    tag_id : int
    corners : ndarray, shape (4, 2)
        The black square's corners in pixels, OpenCV's order (top left of the tag as read, then clockwise).
    """

    tag_id: int
    corners: FloatArray


class TagDetector:
    """Finds the tags of one family in grey images.

    Parameters
    ----------
    family : str
        A key of :data:`sim2real.vision.tags.FAMILIES`.
    refine : str
        Corner refinement: ``edges`` (default: lines fitted to the square's edges,
        :mod:`sim2real.vision.edges`), OpenCV's ``subpix`` (biased at a square's outer corners) or
        ``apriltag`` (accurate, about 0.1 s per frame), or ``none``.
    """

    #: OpenCV's refinement for each of :data:`~sim2real.vision.tags.CORNER_REFINEMENTS` (``edges`` refines after it).
    REFINEMENTS: ClassVar[dict[str, str]] = dict(zip(CORNER_REFINEMENTS, ("CORNER_REFINE_NONE", "CORNER_REFINE_SUBPIX",
                                                                          "CORNER_REFINE_APRILTAG",
                                                                          "CORNER_REFINE_NONE"), strict=True))

    def __init__(self, family: str = "36h11", refine: str = "edges") -> None:
        if family not in FAMILIES:
            raise InputError(f"unknown tag family {family!r} (one of {', '.join(FAMILIES)})")
        if refine not in self.REFINEMENTS:
            raise InputError(f"unknown corner refinement {refine!r} (one of {', '.join(self.REFINEMENTS)})")
        self.family = family
        self.refine = refine
        dictionary = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, FAMILIES[family]))
        parameters = cv2.aruco.DetectorParameters()
        parameters.cornerRefinementMethod = getattr(cv2.aruco, self.REFINEMENTS[refine])
        # each cell's bit read from 12 x 12 samples of the unwarped square, its outer 30 % ignored (OpenCV's 4 x 4
        # and 13 %): a 3 cm tag at 1 m (18 px) decoded in 85 % of 200 views instead of 75 %, still with no false
        # detection among 9000 random tag-like grids. The error correction stays OpenCV's: 0.8 or 1.0 decoded 92 or
        # 97 % at 1 m, but also 13 or 110 of those grids as tags.
        parameters.perspectiveRemovePixelPerCell = 12
        parameters.perspectiveRemoveIgnoredMarginPerCell = 0.3
        self._cells = int(dictionary.markerSize) + 2
        self._detector = cv2.aruco.ArucoDetector(dictionary, parameters)

    def detect(self, image: NDArray[np.uint8]) -> list[Detection]:
        """Every tag decoded in ``image`` (h, w) grey or (h, w, 3) BGR, uint8 (an id may repeat)."""
        image = np.asarray(image)
        if image.dtype != np.uint8 or image.ndim not in (2, 3):
            raise InputError(f"a tag image needs uint8 grey (h, w) or colour (h, w, 3) pixels, not "
                             f"{image.dtype} {image.shape}")
        grey = image if image.ndim == 2 else np.asarray(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), np.uint8)
        corners, ids, _ = self._detector.detectMarkers(grey)
        if ids is None:
            return []
        found = [Detection(int(i), np.asarray(c, dtype=float).reshape(4, 2))
                 for c, i in zip(corners, ids.ravel(), strict=True)]
        if self.refine == "edges":
            found = [Detection(d.tag_id, refine_corners(grey, d.corners, self._cells)) for d in found]
        return found

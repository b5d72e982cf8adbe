"""A pinhole camera: intrinsics, lens distortion and image size, as ``sensor_msgs/CameraInfo`` holds them.

Frames: the camera's optical frame (z along the optical axis, x right, y down in the image), m; pixels
with the origin at the centre of the top-left pixel's corner convention of OpenCV.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from sim2real.errors import InputError

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class PinholeCamera:
    """Intrinsics of one camera.

    Attributes
    ----------
    width, height : int
        Image size, px.
    matrix : ndarray, shape (3, 3)
        ``K = [[fx, 0, cx], [0, fy, cy], [0, 0, 1]]``, px.
    distortion : ndarray, shape (n,)
        OpenCV's plumb-bob coefficients ``k1, k2, p1, p2[, k3 ...]`` (``CameraInfo.d``); zeros: none.
    """

    width: int
    height: int
    matrix: FloatArray
    distortion: FloatArray = field(default_factory=lambda: np.zeros(5))

    def __post_init__(self) -> None:
        matrix = np.asarray(self.matrix, dtype=float)
        if matrix.shape != (3, 3) or not np.all(np.isfinite(matrix)) or matrix[0, 0] <= 0 or matrix[1, 1] <= 0:
            raise InputError("a camera matrix needs 3 × 3 finite numbers with positive focal lengths fx, fy")
        if self.width <= 0 or self.height <= 0:
            raise InputError(f"a camera image needs a positive size, not {self.width} × {self.height} px")
        distortion = np.asarray(self.distortion, dtype=float).ravel()
        if distortion.size not in (0, 4, 5, 8, 12, 14) or not np.all(np.isfinite(distortion)):
            raise InputError("camera distortion needs 4, 5, 8, 12 or 14 finite coefficients (plumb bob or "
                             f"rational), not {distortion.size}")
        object.__setattr__(self, "matrix", matrix)
        object.__setattr__(self, "distortion", distortion if distortion.size else np.zeros(5))

    @classmethod
    def from_camera_info(cls, width: int, height: int, k: Sequence[float], d: Sequence[float]) -> PinholeCamera:
        """The camera of a ``CameraInfo`` message's fields (``k``: 9 numbers, row-major; ``d``: distortion)."""
        if len(k) != 9:
            raise InputError(f"CameraInfo.k needs 9 numbers, not {len(k)}")
        return cls(int(width), int(height), np.asarray(k, dtype=float).reshape(3, 3), np.asarray(d, dtype=float))

    @classmethod
    def ideal(cls, width: int = 640, height: int = 480, focal: float = 615.0) -> PinholeCamera:
        """A distortion-free camera with square pixels and the principal point at the image centre.

        The default is a RealSense D435's colour stream at 640 × 480 (focal length about 615 px).
        """
        return cls(width, height, np.array([[focal, 0.0, (width - 1) / 2.0],
                                            [0.0, focal, (height - 1) / 2.0], [0.0, 0.0, 1.0]]))

    def project(self, points: FloatArray) -> FloatArray:
        """Pixels (n, 2) of points (n, 3) in the optical frame (m), without lens distortion.

        Points must be in front of the camera (z > 0).
        """
        points = np.asarray(points, dtype=float)
        uvw = points @ self.matrix.T
        return uvw[:, :2] / uvw[:, 2:3]

    @property
    def has_distortion(self) -> bool:
        """Whether any distortion coefficient is non-zero."""
        return bool(np.any(self.distortion != 0.0))

"""Sub-pixel corners of a tag's black square from its four edges (as AprilTag itself refines them).

OpenCV's detector finds and decodes the tags; its corner refinements are either designed for chessboard
saddle points (``subpix``: biased at a square's outer corners, a few mm at 0.5 m) or slow (``apriltag``:
about 0.1 s per frame here). Here, along each edge, the grey level's derivative across the edge is sampled
(bilinearly) at points spread along it; the peak of each profile (a parabola through its largest three
samples) is an edge point; a line through the edge points (weighted by the edge's contrast, total least
squares) per side, and the corners are where neighbouring lines meet. Blur that is symmetric about the edge
does not move the peak, so the corners are not pulled inward.
"""

from __future__ import annotations

import cv2
import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
#: Points sampled along each edge, and the part of the edge they cover (the corners' neighbourhood is left out).
SAMPLES, SPAN = 24, (0.12, 0.88)
#: Step of the profile across the edge, px.
STEP = 0.25
#: Largest move of a corner the refinement may make, px (more: the edge fit is not trusted, the corner kept).
MAX_MOVE = 2.5


def _edge_line(grey: NDArray[np.float32], a: FloatArray, b: FloatArray, reach: float) -> tuple[FloatArray, FloatArray]:
    """The line through one edge from ``a`` to ``b`` (px): a point on it and its unit direction."""
    direction = (b - a) / np.linalg.norm(b - a)
    normal = np.array([-direction[1], direction[0]])
    along = a + np.outer(np.linspace(*SPAN, SAMPLES), b - a)  # (SAMPLES, 2)
    offsets = np.arange(-reach, reach + STEP / 2, STEP)  # (K,)
    grid = along[:, None, :] + offsets[None, :, None] * normal  # (SAMPLES, K, 2)
    values = cv2.remap(grey, grid[..., 0].astype(np.float32), grid[..., 1].astype(np.float32), cv2.INTER_LINEAR)
    slope = np.abs(np.diff(np.asarray(values, dtype=float), axis=1))  # (SAMPLES, K-1), between samples
    peak = np.clip(np.argmax(slope, axis=1), 1, slope.shape[1] - 2)
    rows = np.arange(SAMPLES)
    left, centre, right = slope[rows, peak - 1], slope[rows, peak], slope[rows, peak + 1]
    curvature = left - 2.0 * centre + right
    shift = np.where(curvature < 0.0, 0.5 * (left - right) / np.where(curvature < 0.0, curvature, -1.0), 0.0)
    offset = offsets[0] + STEP * (peak + 0.5 + np.clip(shift, -0.5, 0.5))
    points = along + offset[:, None] * normal
    weights = centre / max(float(centre.sum()), 1e-9)
    mean = weights @ points
    scatter = (points - mean).T @ ((points - mean) * weights[:, None])
    return mean, np.linalg.eigh(scatter)[1][:, -1]


def _meet(p: FloatArray, u: FloatArray, q: FloatArray, v: FloatArray) -> FloatArray | None:
    """Where the lines ``p + s u`` and ``q + t v`` meet (None when nearly parallel)."""
    matrix = np.column_stack([u, -v])
    if abs(np.linalg.det(matrix)) < 1e-6:
        return None
    s, _ = np.linalg.solve(matrix, q - p)
    return p + s * u


def refine_corners(grey: NDArray[np.uint8], corners: FloatArray, cells: int = 8) -> FloatArray:
    """The tag's corners (4, 2), px, moved onto the meeting points of its edges' lines.

    Parameters
    ----------
    grey : ndarray, shape (h, w), uint8
    corners : ndarray, shape (4, 2)
        The detector's corners, in order around the square.
    cells : int
        Cells across the black square (8 for 36h11): the profile reaches at most 0.4 of a cell to each side,
        so that it sees the border's own edge, not the bits inside.

    Returns
    -------
    ndarray, shape (4, 2)
        A corner whose refinement would move it more than :data:`MAX_MOVE` px keeps its detected place.
    """
    image = np.asarray(grey, dtype=np.float32)
    side = float(np.mean(np.linalg.norm(corners - np.roll(corners, -1, axis=0), axis=1)))
    reach = float(np.clip(0.4 * side / cells, 0.75, 3.0))
    lines = [_edge_line(image, corners[i], corners[(i + 1) % 4], reach) for i in range(4)]
    refined = np.array(corners, dtype=float)
    for i in range(4):
        point = _meet(*lines[i - 1], *lines[i])  # corner i joins the edge before it and the edge after it
        if point is not None and np.linalg.norm(point - corners[i]) <= MAX_MOVE:
            refined[i] = point
    return refined

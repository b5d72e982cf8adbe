"""The box's pose in the camera frame from its detected tags (PnP), with flips detected and refused.

One tag: OpenCV's IPPE for squares gives the two poses a planar square's image allows (the second is the
"flip", the tag tilted the other way about the line of sight). When both reproject about equally well and
differ by more than a few degrees, the image cannot tell them apart: the detection is ambiguous and is
refused, never guessed. Two or more tags (on different faces, not coplanar) settle it: each single-tag
solution seeds a Levenberg-Marquardt refinement over all corners, and the one that reprojects best wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray

from sim2real.spatial.rigid import apply, invert, rigid, rotation_angle
from sim2real.vision.camera import PinholeCamera
from sim2real.vision.detect import Detection
from sim2real.vision.tags import BoxTags, tag_corners

FloatArray = NDArray[np.float64]

#: Reprojection error (px, RMS over the corners) above which a solution is refused.
MAX_REPROJECTION_PX = 2.0
#: A single tag's two solutions are ambiguous when the better one's error is above this fraction of the other's
#: or within this many px of it (corner noise alone moves the errors by a few tenths of a pixel: at 1 m a 3 cm tag's
#: flipped pose reprojected better than the true one in 46 of 82 noisy images, 0 of them passed this test) …
AMBIGUITY_RATIO, AMBIGUITY_GAP_PX = 0.5, 0.2
#: … and their orientations differ by more than this, rad (below it either is right).
AMBIGUITY_ANGLE = np.radians(3.0)


@dataclass(frozen=True)
class BoxPoseSolution:
    """A box pose solved from one image.

    Attributes
    ----------
    camera_from_box : ndarray, shape (4, 4)
    tag_ids : tuple of int
        The tags used.
    reprojection_px : float
        RMS reprojection error over the corners used, px.
    """

    camera_from_box: FloatArray
    tag_ids: tuple[int, ...]
    reprojection_px: float


@dataclass(frozen=True)
class Refusal:
    """Why an image gave no pose: ``no_tag``, ``duplicate``, ``ambiguous`` or ``reprojection``."""

    reason: str
    detail: str = ""


def _as_transform(rvec: Any, tvec: Any) -> FloatArray:
    """The transform of OpenCV's rotation vector and translation."""
    rotation = np.asarray(cv2.Rodrigues(np.asarray(rvec, dtype=float).reshape(3))[0], dtype=float)
    return rigid(rotation, np.asarray(tvec, dtype=float).reshape(3))


def _rms(camera: PinholeCamera, camera_from_object: FloatArray, object_points: FloatArray,
         image_points: FloatArray) -> float:
    rvec = cv2.Rodrigues(camera_from_object[:3, :3])[0]
    projected = cv2.projectPoints(object_points, rvec, camera_from_object[:3, 3], camera.matrix,
                                  camera.distortion)[0].reshape(-1, 2)
    return float(np.sqrt(np.mean(np.sum((projected - image_points) ** 2, axis=1))))


#: OpenCV's marker frame (x right, y up, z out of the tag) → ours (x right, y down, z into the face).
_OPENCV_FROM_TAG = rigid(np.diag([1.0, -1.0, -1.0]), np.zeros(3))


def single_tag_solutions(detection: Detection, size: float,
                         camera: PinholeCamera) -> list[tuple[FloatArray, float]]:
    """The two poses of a square tag (``camera_from_tag`` (4, 4), RMS reprojection px), best first.

    IPPE for squares takes the corners in OpenCV's marker frame (the order and signs it requires); the
    solutions are turned into the tag frame of :mod:`sim2real.vision.tags`.
    """
    count, rvecs, tvecs, errors = cv2.solvePnPGeneric(
        apply(_OPENCV_FROM_TAG, tag_corners(size)), detection.corners, camera.matrix, camera.distortion,
        flags=cv2.SOLVEPNP_IPPE_SQUARE)
    found = [(_as_transform(rvecs[i], tvecs[i]) @ _OPENCV_FROM_TAG, float(np.asarray(errors).ravel()[i]))
             for i in range(count)]
    return sorted(found, key=lambda item: item[1])


def unambiguous_tag_pose(detection: Detection, size: float,
                         camera: PinholeCamera) -> tuple[FloatArray, float] | Refusal:
    """A single tag's pose ``camera_from_tag`` (4, 4) and its RMS reprojection (px), or why there is none.

    Refused when the two solutions of the square reproject about equally well (the better one's error above
    :data:`AMBIGUITY_RATIO` of the other's, or within :data:`AMBIGUITY_GAP_PX` of it) and differ by more than
    :data:`AMBIGUITY_ANGLE`, or when the
    better one reprojects worse than :data:`MAX_REPROJECTION_PX`.
    """
    (best, best_error), *rest = single_tag_solutions(detection, size, camera)
    if rest:
        other, other_error = rest[0]
        close = best_error > AMBIGUITY_RATIO * other_error or other_error - best_error < AMBIGUITY_GAP_PX
        if close and rotation_angle(best, other) > AMBIGUITY_ANGLE:
            return Refusal("ambiguous", f"tag {detection.tag_id}: two poses reproject within "
                           f"{best_error:.2f} and {other_error:.2f} px")
    if best_error > MAX_REPROJECTION_PX:
        return Refusal("reprojection", f"tag {detection.tag_id}: {best_error:.2f} px")
    return best, best_error


def _single(detection: Detection, tags: BoxTags, camera: PinholeCamera) -> BoxPoseSolution | Refusal:
    mount = tags.mount(detection.tag_id)
    assert mount is not None
    found = unambiguous_tag_pose(detection, mount.size, camera)
    if isinstance(found, Refusal):
        return found
    pose, error = found
    return BoxPoseSolution(pose @ invert(mount.box_from_tag), (detection.tag_id,), error)


def _refine(seed: FloatArray, object_points: FloatArray, image_points: FloatArray,
            camera: PinholeCamera) -> FloatArray:
    rvec: Any = cv2.Rodrigues(seed[:3, :3])[0]
    tvec: Any = seed[:3, 3].reshape(3, 1).copy()
    rvec, tvec = cv2.solvePnPRefineLM(object_points, image_points, camera.matrix, camera.distortion, rvec, tvec)
    return _as_transform(rvec, tvec)


def _multi(detections: list[Detection], tags: BoxTags, camera: PinholeCamera) -> BoxPoseSolution | Refusal:
    mounts = [tags.mount(d.tag_id) for d in detections]
    object_points = np.concatenate([m.corners_in_box() for m in mounts if m is not None])
    image_points = np.concatenate([d.corners for d in detections])
    seeds = [pose @ invert(m.box_from_tag) for d, m in zip(detections, mounts, strict=True) if m is not None
             for pose, _ in single_tag_solutions(d, m.size, camera)]
    refined = [_refine(seed, object_points, image_points, camera) for seed in seeds]
    scored = sorted(((_rms(camera, pose, object_points, image_points), i) for i, pose in enumerate(refined)))
    error, index = scored[0]
    if error > MAX_REPROJECTION_PX:
        return Refusal("reprojection", f"tags {[d.tag_id for d in detections]}: {error:.2f} px")
    return BoxPoseSolution(refined[index], tuple(d.tag_id for d in detections), error)


def solve_box_pose(detections: list[Detection], tags: BoxTags, camera: PinholeCamera) -> BoxPoseSolution | Refusal:
    """The box's pose in the camera frame from the detections of its tags.

    Parameters
    ----------
    detections : list of Detection
        Everything the detector found; tags not on the box are ignored.
    tags : BoxTags
        The box's tags.
    camera : PinholeCamera
        The image's intrinsics and distortion.

    Returns
    -------
    BoxPoseSolution or Refusal
        A refusal when no tag of the box was found, a box tag was seen twice, one tag's two poses are
        ambiguous, or the best pose reprojects worse than :data:`MAX_REPROJECTION_PX`.
    """
    own = [d for d in detections if tags.mount(d.tag_id) is not None]
    if not own:
        return Refusal("no_tag")
    ids = [d.tag_id for d in own]
    if len(set(ids)) != len(ids):
        return Refusal("duplicate", f"tag ids seen twice: {sorted({i for i in ids if ids.count(i) > 1})}")
    return _single(own[0], tags, camera) if len(own) == 1 else _multi(own, tags, camera)

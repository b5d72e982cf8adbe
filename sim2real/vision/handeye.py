"""The camera's pose in the arm base frame: hand-eye calibration from a tag the arm holds, or a tag fixed at a
known pose.

Eye-to-hand (the camera fixed, a tagged plate on the flange): for each arm pose ``i`` the flange's pose
``A_i = base_from_flange`` (forward kinematics of the joint angles) and the tag's image give
``X · C_i = A_i · Y`` with ``X = base_from_camera`` and ``Y = flange_from_tag`` unknown (the AX = XB family).
OpenCV's closed-form hand-eye solution (Tsai's, for eye-to-hand with inverted flange poses) seeds a
least-squares fit of both transforms to every tag corner's pixel, which is the quantity the camera
measures; its Jacobian gives the calibration's standard deviations, and each pose's residual (px, and the
mm and degrees by which ``X · C_i`` misses ``A_i · Y``) is reported.

A fixed tag (at a known ``base_from_tag``) gives ``X = base_from_tag · C_i⁻¹`` directly; the same
least-squares fit uses every image.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from numpy.typing import NDArray
from scipy.optimize import least_squares

from sim2real.errors import InputError
from sim2real.spatial.rigid import apply, invert, rigid, rotation_angle
from sim2real.vision.camera import PinholeCamera
from sim2real.vision.detect import Detection
from sim2real.vision.pose import Refusal, single_tag_solutions, unambiguous_tag_pose
from sim2real.vision.tags import tag_corners

FloatArray = NDArray[np.float64]
#: Least arm poses for an eye-to-hand calibration (12 unknowns; Tsai's method needs 3 with distinct axes).
MIN_POSES = 4


@dataclass(frozen=True)
class HandEyeResult:
    """A calibrated camera pose.

    Attributes
    ----------
    base_from_camera : ndarray, shape (4, 4)
    tag_pose : ndarray, shape (4, 4)
        ``flange_from_tag`` (eye-to-hand) or the given ``base_from_tag`` (fixed tag).
    std_translation : ndarray, shape (3,)
        Standard deviation of the camera's position in the base frame, m.
    std_rotation : ndarray, shape (3,)
        Standard deviation of its orientation (a small rotation about the base axes), rad.
    reprojection_px : ndarray, shape (n,)
        RMS pixel residual of each image's corners.
    pose_error_m, pose_error_rad : ndarray, shape (n,)
        How far ``X · C_i`` (the tag seen) lies from ``A_i · Y`` (the tag the arm holds), per image.
    """

    base_from_camera: FloatArray
    tag_pose: FloatArray
    std_translation: FloatArray
    std_rotation: FloatArray
    reprojection_px: FloatArray
    pose_error_m: FloatArray
    pose_error_rad: FloatArray


def _transform(params: FloatArray) -> FloatArray:
    return rigid(np.asarray(cv2.Rodrigues(np.asarray(params[:3], dtype=float))[0], dtype=float), params[3:6])


def _vector(transform: FloatArray) -> FloatArray:
    return np.concatenate([np.asarray(cv2.Rodrigues(transform[:3, :3])[0], dtype=float).ravel(), transform[:3, 3]])


def _tag_in_camera(detections: list[Detection], size: float, camera: PinholeCamera) -> list[FloatArray | None]:
    """Each image's pose ``camera_from_tag``, None where its two solutions are ambiguous (see
    :func:`~sim2real.vision.pose.unambiguous_tag_pose`): the joint fit places those from the others."""
    found = [unambiguous_tag_pose(d, size, camera) for d in detections]
    return [None if isinstance(f, Refusal) else f[0] for f in found]


def _pixels(camera: PinholeCamera, camera_from_tag: FloatArray, corners: FloatArray) -> FloatArray:
    points = apply(camera_from_tag, corners)
    if np.any(points[:, 2] <= 0.0):
        return np.full((4, 2), 1e6)
    distorted = cv2.projectPoints(points, np.zeros(3), np.zeros(3), camera.matrix, camera.distortion)[0]
    return np.asarray(distorted, dtype=float).reshape(4, 2)


def _fit(residual_of: object, seeds: list[FloatArray], n_images: int) -> tuple[FloatArray, FloatArray]:
    """Least squares over the stacked corner pixels from each seed; the solution of least cost and its covariance
    (σ² from the residuals)."""
    solutions = [least_squares(residual_of, seed, method="lm", x_scale="jac") for seed in seeds]
    solution = min(solutions, key=lambda s: float(s.fun @ s.fun))
    dof = max(8 * n_images - seeds[0].size, 1)
    sigma2 = float(solution.fun @ solution.fun) / dof
    covariance = np.linalg.pinv(solution.jac.T @ solution.jac) * sigma2
    return np.asarray(solution.x, dtype=float), covariance


def _result(base_from_camera: FloatArray, tag_pose: FloatArray, covariance: FloatArray, flange: list[FloatArray],
            detections: list[Detection], camera: PinholeCamera, size: float) -> HandEyeResult:
    corners = tag_corners(size)
    camera_from_base = invert(base_from_camera)
    reprojection, error_m, error_rad = [], [], []
    for a, d in zip(flange, detections, strict=True):
        expected = a @ tag_pose
        pixels = _pixels(camera, camera_from_base @ expected, corners)
        reprojection.append(float(np.sqrt(np.mean(np.sum((pixels - d.corners) ** 2, axis=1)))))
        # the image's own pose: the nearer of its two solutions (an ambiguous image is judged by its better one)
        solutions = [pose for pose, _ in single_tag_solutions(d, size, camera)]
        observed = base_from_camera @ min(solutions, key=lambda pose: rotation_angle(pose, camera_from_base @ expected))
        error_m.append(float(np.linalg.norm(observed[:3, 3] - expected[:3, 3])))
        error_rad.append(rotation_angle(observed, expected))
    jacobian = _camera_jacobian(camera_from_base)
    spread = np.sqrt(np.clip(np.diag(jacobian @ covariance[:6, :6] @ jacobian.T), 0.0, None))
    return HandEyeResult(base_from_camera, tag_pose, spread[:3], spread[3:], np.array(reprojection),
                         np.array(error_m), np.array(error_rad))


def _camera_jacobian(camera_from_base: FloatArray, step: float = 1e-7) -> FloatArray:
    """d(camera position in base, small rotation about the base axes) / d(camera_from_base's rotation vector,
    translation): (6, 6), by forward differences."""
    base = _vector(camera_from_base)
    nominal = invert(camera_from_base)
    columns = []
    for k in range(6):
        shifted = base.copy()
        shifted[k] += step
        moved = invert(_transform(shifted))
        relative = moved[:3, :3] @ nominal[:3, :3].T  # I + [turn]× to first order
        turn = 0.5 * np.array([relative[2, 1] - relative[1, 2], relative[0, 2] - relative[2, 0],
                               relative[1, 0] - relative[0, 1]])
        columns.append(np.concatenate([moved[:3, 3] - nominal[:3, 3], turn]) / step)
    return np.column_stack(columns)


def calibrate_eye_to_hand(base_from_flange: list[FloatArray], detections: list[Detection], camera: PinholeCamera,
                          tag_size: float, flange_from_tag: FloatArray | None = None) -> HandEyeResult:
    """The pose of a fixed camera from images of a tag the arm holds.

    Parameters
    ----------
    base_from_flange : list of ndarray, shape (4, 4)
        The flange's pose at each image (forward kinematics), base frame, m.
    detections : list of Detection
        The held tag's detection in each image (one per pose, same order).
    camera : PinholeCamera
    tag_size : float
        The held tag's black square, m.
    flange_from_tag : ndarray, shape (4, 4), optional
        A guess of the tag's pose on the flange (flange frame, m): the fit starts from it too (with the camera
        pose it gives, averaged over the images) and keeps the better of the two fits.

    Raises
    ------
    InputError
        Fewer than :data:`MIN_POSES` poses, or a count mismatch.
    """
    if len(base_from_flange) != len(detections):
        raise InputError(f"hand-eye calibration needs one flange pose per image ({len(base_from_flange)} poses, "
                         f"{len(detections)} images)")
    if len(detections) < MIN_POSES:
        raise InputError(f"hand-eye calibration needs at least {MIN_POSES} arm poses with the tag seen, "
                         f"not {len(detections)}")
    seen = _tag_in_camera(detections, tag_size, camera)
    clean = [(invert(a), c) for a, c in zip(base_from_flange, seen, strict=True) if c is not None]
    if len(clean) < MIN_POSES - 1:
        raise InputError(f"only {len(clean)} of {len(detections)} images show the tag unambiguously (a square "
                         "tag seen nearly head-on from afar has two poses): add arm poses that tilt it 20-50° to "
                         "the camera")
    rotation, translation = cv2.calibrateHandEye(
        [f[:3, :3] for f, _ in clean], [f[:3, 3] for f, _ in clean],
        [c[:3, :3] for _, c in clean], [c[:3, 3] for _, c in clean], method=cv2.CALIB_HAND_EYE_TSAI)
    x0 = rigid(np.asarray(rotation, dtype=float), np.asarray(translation, dtype=float).ravel())
    y0 = np.mean([f @ x0 @ c for f, c in clean], axis=0)
    y0 = rigid(_orthonormal(y0[:3, :3]), y0[:3, 3])
    corners = tag_corners(tag_size)

    def residuals(params: FloatArray) -> FloatArray:
        camera_from_base, held = _transform(params[:6]), _transform(params[6:])
        return np.concatenate([(_pixels(camera, camera_from_base @ a @ held, corners) - d.corners).ravel()
                               for a, d in zip(base_from_flange, detections, strict=True)])

    seeds = [np.concatenate([_vector(invert(x0)), _vector(y0)])]
    if flange_from_tag is not None:
        guess = np.asarray(flange_from_tag, dtype=float)
        x1 = np.mean([invert(f) @ guess @ invert(c) for f, c in clean], axis=0)  # A_i · Y · C_i⁻¹
        seeds.append(np.concatenate([_vector(invert(rigid(_orthonormal(x1[:3, :3]), x1[:3, 3]))), _vector(guess)]))
    solution, covariance = _fit(residuals, seeds, len(detections))
    return _result(invert(_transform(solution[:6])), _transform(solution[6:]), covariance, base_from_flange,
                   detections, camera, tag_size)


def calibrate_fixed_tag(base_from_tag: FloatArray, detections: list[Detection], camera: PinholeCamera,
                        tag_size: float) -> HandEyeResult:
    """The pose of a camera from images of one tag fixed at a known pose ``base_from_tag`` (4, 4)."""
    if not detections:
        raise InputError("calibration from a fixed tag needs at least one image with the tag seen")
    seen = [c for c in _tag_in_camera(detections, tag_size, camera) if c is not None]
    if not seen:
        raise InputError(f"none of {len(detections)} images shows the fixed tag unambiguously (a square tag seen "
                         "nearly head-on from afar has two poses): tilt it 20-50° to the camera or bring it closer")
    seed = base_from_tag @ invert(seen[0])
    corners = tag_corners(tag_size)

    def residuals(params: FloatArray) -> FloatArray:
        camera_from_base = _transform(params)
        return np.concatenate([(_pixels(camera, camera_from_base @ base_from_tag, corners) - d.corners).ravel()
                               for d in detections])

    solution, covariance = _fit(residuals, [_vector(invert(seed))], len(detections))
    identity = [np.eye(4)] * len(detections)
    return _result(invert(_transform(solution)), base_from_tag, covariance, identity, detections, camera, tag_size)


def _orthonormal(matrix: FloatArray) -> FloatArray:
    u, _, vt = np.linalg.svd(matrix)
    rotation = u @ vt
    return np.asarray(rotation if np.linalg.det(rotation) > 0 else u @ np.diag([1.0, 1.0, -1.0]) @ vt, dtype=float)

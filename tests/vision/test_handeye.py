"""Hand-eye calibration on the stand-in's synthetic camera recovers a hidden camera pose."""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.errors import InputError
from sim2real.model import load_arm
from sim2real.spatial import from_rotation_vector, to_matrix
from sim2real.spatial.rigid import invert, look_at, rigid, rotation_angle
from sim2real.vision.camera import PinholeCamera
from sim2real.vision.detect import Detection, TagDetector
from sim2real.vision.handeye import calibrate_eye_to_hand, calibrate_fixed_tag
from sim2real.vision.render import Optics, plane_of, render
from sim2real.vision.tags import TagMount

CAMERA = PinholeCamera.ideal()
SIZE = 0.06
PLATE = plane_of(0.09, 0.09, [(TagMount(0, SIZE, np.eye(4)), np.eye(4))], "36h11")
#: The hidden camera: 0.9 m from the arm's work area, looking down at it.
HIDDEN = look_at(np.array([0.5, -0.6, 0.5]), np.array([0.35, 0.0, 0.2]))
#: The plate on the flange: 3 cm out along the flange's z, its tag facing away from the flange.
FLANGE_FROM_TAG = rigid(to_matrix(from_rotation_vector(np.array([np.pi, 0.0, 0.0]))), [0.0, 0.0, 0.03])


def _views(seed: int, count: int) -> tuple[list[np.ndarray], list[Detection]]:
    """Random arm poses near a reachable start where the held tag faces the camera within 55°, rendered."""
    arm = load_arm()
    rng = np.random.default_rng(seed)
    detector = TagDetector()
    start = np.array([0.0, -0.3, -0.6, 0.0, 0.9, 0.0])
    flanges, found = [], []
    for _ in range(3000):
        flange = arm.forward(start + rng.normal(0.0, [0.35, 0.2, 0.2, 0.5, 0.35, 0.8]))
        camera_from_tag = invert(HIDDEN) @ flange @ FLANGE_FROM_TAG
        centre, normal = camera_from_tag[:3, 3], camera_from_tag[:3, 2]
        if centre[2] < 0.2 or normal @ centre < np.cos(np.radians(55.0)) * np.linalg.norm(centre):
            continue
        seen = [d for d in detector.detect(render(CAMERA, [(camera_from_tag, PLATE)], Optics(), rng)) if d.tag_id == 0]
        if len(seen) == 1:
            flanges.append(flange)
            found.append(seen[0])
        if len(found) == count:
            break
    assert len(found) == count
    return flanges, found


@pytest.mark.parametrize("seed", [0, 2, 3])
def test_eye_to_hand_recovers_the_hidden_camera_within_2_mm_and_a_third_of_a_degree(seed: int) -> None:
    flanges, found = _views(seed, 10)
    result = calibrate_eye_to_hand(flanges, found, CAMERA, SIZE)
    error = result.base_from_camera[:3, 3] - HIDDEN[:3, 3]
    assert np.linalg.norm(error) < 0.002
    assert np.degrees(rotation_angle(result.base_from_camera, HIDDEN)) < 0.3
    assert np.all(np.abs(error) < 5.0 * result.std_translation + 2e-4)  # the reported spread is not vacuous …
    assert np.all(result.std_translation < 0.002)  # … nor tiny beside the error
    assert np.linalg.norm(result.tag_pose[:3, 3] - FLANGE_FROM_TAG[:3, 3]) < 0.003
    assert result.reprojection_px.shape == (10,) and np.max(result.reprojection_px) < 1.0


def test_a_fixed_tag_at_a_known_pose_gives_the_camera_pose() -> None:
    base_from_tag = rigid(to_matrix(from_rotation_vector(np.array([np.pi, 0.0, 0.0]))), [0.35, 0.0, 0.001])
    rng = np.random.default_rng(1)
    camera_from_tag = invert(HIDDEN) @ base_from_tag
    found = [TagDetector().detect(render(CAMERA, [(camera_from_tag, PLATE)], Optics(), rng))[0] for _ in range(5)]
    result = calibrate_fixed_tag(base_from_tag, found, CAMERA, SIZE)
    assert np.linalg.norm(result.base_from_camera[:3, 3] - HIDDEN[:3, 3]) < 0.003
    assert np.degrees(rotation_angle(result.base_from_camera, HIDDEN)) < 0.3


def test_too_few_poses_are_refused_with_what_to_do() -> None:
    flanges, found = _views(0, 4)
    with pytest.raises(InputError, match="at least 4"):
        calibrate_eye_to_hand(flanges[:3], found[:3], CAMERA, SIZE)
    with pytest.raises(InputError, match="one flange pose per image"):
        calibrate_eye_to_hand(flanges, found[:3], CAMERA, SIZE)

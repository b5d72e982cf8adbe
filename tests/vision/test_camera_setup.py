"""The camera set-up file, and real photographs of AprilTags (the NASA Swarmathon pictures of AprilTag's tests)."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from sim2real.errors import DataError
from sim2real.params import ParameterSet
from sim2real.spatial.rigid import look_at
from sim2real.vision.camera import PinholeCamera
from sim2real.vision.detect import TagDetector
from sim2real.vision.pose import Refusal, unambiguous_tag_pose
from sim2real.vision.setup import CameraSetup, dump_camera_setup, load_camera_setup

PHOTOS = Path(__file__).resolve().parents[1] / "fixtures" / "apriltag_photos"


def test_a_set_up_file_round_trips_and_builds_the_boxs_tags(tmp_path: Path) -> None:
    setup = CameraSetup(tag_size=0.04, faces=("+z", "-y"), base_from_camera=look_at(np.array([0.5, -0.5, 0.5]),
                                                                                   np.array([0.4, 0.0, 0.1])))
    path = tmp_path / "camera.yaml"
    path.write_text(dump_camera_setup(setup))
    back = load_camera_setup(path)
    assert np.allclose(back.base_from_camera, setup.base_from_camera, atol=1e-6)
    assert (back.tag_size, back.faces, back.family) == (0.04, ("+z", "-y"), "36h11")
    tags = back.box_tags(ParameterSet.nominal())
    assert [m.tag_id for m in tags.mounts] == [0, 1]
    assert np.isclose(tags.mounts[0].box_from_tag[2, 3], 0.105)  # on the top face of the nominal 21 cm box


@pytest.mark.parametrize(("text", "message"), [
    ("tag_detector:\n  ros__parameters:\n    tags: {faces: ['+w']}\n", "tags.faces"),
    ("tag_detector:\n  ros__parameters:\n    tags: {size: 5}\n", "tags.size"),
    ("tag_detector:\n  ros__parameters:\n    tags: {family: 99x1}\n", "unknown tag family"),
    ("tag_detector:\n  ros__parameters:\n    base_from_camera: {rotation_wxyz: [2, 0, 0, 0]}\n", "unit quaternion"),
    ("tag_detector:\n  ros__parameters:\n    base_from_camera: {translation: [0, 0]}\n", "3 finite numbers"),
    ("mocap_bridge:\n  ros__parameters: {}\n", "tag_detector"),
])
def test_a_malformed_set_up_file_is_refused_with_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "camera.yaml"
    path.write_text(text)
    with pytest.raises(DataError, match=message):
        load_camera_setup(path)


def test_real_photographs_of_apriltags_give_their_ids_corners_and_plausible_poses() -> None:
    """Two photographs (CC BY-SA 2.0, NASA Kennedy Space Center, see fixtures/apriltag_photos/README.md) of the
    Swarmathon's cubes, each with 36h11 tags of id 0. The reference corners are the AprilTag C library's
    (pupil-apriltags 1.0.4, no decimation, edge refinement; in OpenCV's pixel convention)."""
    reference = json.loads((PHOTOS / "apriltag_reference.json").read_text())
    detector = TagDetector()
    # the camera is not known: a 799 px wide image and a 60° field of view make a plausible one
    camera = PinholeCamera(799, 533, np.array([[692.0, 0.0, 399.0], [0.0, 692.0, 266.0], [0.0, 0.0, 1.0]]))
    corner_error, matched = [], 0
    for name, tags in reference.items():
        image = cv2.imread(str(PHOTOS / name), cv2.IMREAD_GRAYSCALE)
        found = detector.detect(image)
        assert {d.tag_id for d in found} == {0}
        for tag in tags:
            corners = np.array(tag["corners"])
            near = [d for d in found if np.linalg.norm(d.corners.mean(axis=0) - corners.mean(axis=0)) < 5.0]
            if not near:
                continue  # OpenCV's detector misses tags below about 20 px that AprilTag's finds
            matched += 1
            corner_error.append(min(np.linalg.norm(np.roll(near[0].corners[::s], k, axis=0) - corners, axis=1).mean()
                                    for k in range(4) for s in (1, -1)))
        for d in found:
            pose = unambiguous_tag_pose(d, 0.05, camera)  # the tags are a few cm: 5 cm is plausible
            if not isinstance(pose, Refusal):
                assert 0.2 < pose[0][2, 3] < 10.0  # in front of the camera, at a plausible distance
                assert pose[0][:3, 2] @ pose[0][:3, 3] > 0.0  # seen from the front
    assert matched >= 25  # of 34 (12 and 22 in the two photographs)
    assert np.median(corner_error) < 0.6

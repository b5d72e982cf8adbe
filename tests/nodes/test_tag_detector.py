"""tag_detector: camera images of the box's tags become box poses on real/box_pose, stamped with the image's
capture time; images that give none (no CameraInfo yet, an encoding it does not read, no tag) are counted."""

from __future__ import annotations

import json

import numpy as np

from sim2real.params import ParameterSet
from sim2real.spatial.rigid import invert, look_at, rigid, to_pose
from sim2real.vision.camera import PinholeCamera
from sim2real.vision.render import BoxRenderer
from sim2real.vision.tags import box_tags


def test_images_become_base_frame_poses_with_their_capture_stamps_and_the_rest_is_counted(ros) -> None:
    from rclpy.parameter import Parameter

    from sim2real.nodes.camera_msgs import camera_info_msg, image_msg
    from sim2real.nodes.common import ns_of, pose_arrays
    from sim2real.nodes.tag_detector import TagDetectorNode

    camera = PinholeCamera.ideal()
    base_from_camera = look_at(np.array([0.8, -0.55, 0.5]), np.array([0.4, 0.0, 0.1]))
    origin, quaternion = to_pose(base_from_camera)
    node = TagDetectorNode(context=ros, parameter_overrides=[
        Parameter("image_topic", value="cam/image"), Parameter("camera_info_topic", value="cam/info"),
        Parameter("base_from_camera.translation", value=[float(v) for v in origin]),
        Parameter("base_from_camera.rotation_wxyz", value=[float(v) for v in quaternion])])
    published, results = [], []
    node._pub.publish = published.append  # type: ignore[method-assign]
    node._pub_result.publish = results.append  # type: ignore[method-assign]
    try:
        half = 0.5 * np.array([float(ParameterSet.nominal()[f"box.size_{a}"]) for a in "xyz"])
        truth = rigid(np.eye(3), [0.42, 0.01, 0.105])
        frame = BoxRenderer(camera, half, box_tags(half), seed=3).render(invert(base_from_camera) @ truth)
        node._on_image(image_msg(1_000_000_000, frame))  # before any CameraInfo
        node._on_info(camera_info_msg(1_000_000_000, camera))
        node._on_image(image_msg(2_000_000_000, frame))
        bad = image_msg(3_000_000_000, frame)
        bad.encoding = "yuv422"
        node._on_image(bad)
        node._on_image(image_msg(4_000_000_000, np.full_like(frame, 90)))  # no tag in view
    finally:
        node.destroy_node()
    assert len(published) == 1 and ns_of(published[0].header.stamp) == 2_000_000_000
    seen, _ = pose_arrays(published[0])
    assert np.linalg.norm(seen - truth[:3, 3]) < 0.003
    assert [json.loads(r.data)["refused"] for r in results] == ["no_camera_info", "", "undecodable", "no_tag"]
    assert [json.loads(r.data)["stamp_ns"] for r in results] == [k * 1_000_000_000 for k in (1, 2, 3, 4)]
    assert node.estimator is not None and node.estimator.tally.as_dict()["refused"] == {"no_tag": 1,
                                                                                       "undecodable": 1}
    assert "1 image(s) before the first CameraInfo" in node.tally_line()

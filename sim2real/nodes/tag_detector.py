"""``tag_detector``: the box pose from camera images of its AprilTags, on ``real/box_pose`` (camera mode).

Subscribes to ``image_topic`` (sensor_msgs/Image: mono8, rgb8 or bgr8) and ``camera_info_topic``
(sensor_msgs/CameraInfo: the intrinsics and distortion, the latest one used), finds the box's tags
(:mod:`sim2real.vision`), solves the box's pose and publishes it on ``real/box_pose`` (frame
``link_base``) as the mocap bridge does, stamped with the image's capture stamp, not the detection time.
Images that give no pose (no tag of the box, a tag seen twice, a pose that could be flipped, a poor
reprojection, an image that does not decode, or one before the first CameraInfo) are dropped and counted,
never guessed; the tally is logged every 10 s and at the end, and
each image's result goes out on ``real/camera/detections`` (the recorder's per-trial count).

Parameters (type, default: meaning, unit); config/camera.yaml holds them (``sim2real run --camera``)::

    image_topic                    string, /camera/color/image_raw
    camera_info_topic              string, /camera/color/camera_info
    tags.family                    string, 36h11: the AprilTag family
    tags.size                      double, 0.05: the tags' black square, m
    tags.faces                     string[], [+z, +x, -x, +y, -y]: faces carrying tag ids 0, 1, ...
    refine                         string, edges: corner refinement (edges, subpix, apriltag, none)
    base_from_camera.translation   double[3]: the camera's optical centre in the base frame, m
    base_from_camera.rotation_wxyz double[4]: its optical axes (z forward, x right, y down) in the base frame
    box.size_x, box.size_y, box.size_z  double: the box, m (the simulator parameters)
"""

from __future__ import annotations

import json
import time
from typing import Any

from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import String

from sim2real.errors import Sim2RealError
from sim2real.nodes.camera_msgs import IMAGE_QOS, camera_of, image_array
from sim2real.nodes.common import CAMERA_RESULT_TOPIC, STREAM_QOS, ns_of, pose_msg
from sim2real.nodes.process import run_node
from sim2real.params import ParameterSet
from sim2real.params.yaml_io import nest_dotted
from sim2real.vision.estimate import BoxPoseEstimator
from sim2real.vision.pose import Refusal
from sim2real.vision.setup import CameraSetup, setup_from_section

#: Seconds between two tally lines in the log.
TALLY_PERIOD = 10.0


class TagDetectorNode(Node):
    """Images → ``real/box_pose`` (see the module docstring)."""

    def __init__(self, name: str = "tag_detector", **kwargs: object) -> None:
        super().__init__(name, **kwargs)  # type: ignore[arg-type]
        default = CameraSetup()
        declared: dict[str, Any] = {key: self.declare_parameter(key, value).value for key, value in {
            "image_topic": default.image_topic, "camera_info_topic": default.camera_info_topic,
            "tags.family": default.family, "tags.size": default.tag_size, "tags.faces": list(default.faces),
            "refine": "edges", "base_from_camera.translation": [0.0, 0.0, 0.0],
            "base_from_camera.rotation_wxyz": [1.0, 0.0, 0.0, 0.0]}.items()}
        self.setup = setup_from_section(nest_dotted(declared), "tag_detector parameters")
        nominal = ParameterSet.nominal()
        sizes = {f"box.size_{a}": float(self.declare_parameter(f"box.size_{a}", float(nominal[f"box.size_{a}"])).value)
                 for a in "xyz"}
        self.tags = self.setup.box_tags(nominal.replace(sizes))
        self.estimator: BoxPoseEstimator | None = None
        self._pub = self.create_publisher(PoseStamped, "real/box_pose", STREAM_QOS)
        self._pub_result = self.create_publisher(String, CAMERA_RESULT_TOPIC, STREAM_QOS)
        self.create_subscription(CameraInfo, self.setup.camera_info_topic, self._on_info, IMAGE_QOS)
        self.create_subscription(Image, self.setup.image_topic, self._on_image, IMAGE_QOS)
        self._waiting = 0  # images before the first CameraInfo
        self._logged = time.monotonic()
        self.get_logger().info(f"camera {self.setup.image_topic} -> real/box_pose ({len(self.tags.mounts)} "
                               f"{self.setup.family} tags of {self.setup.tag_size * 1000:.0f} mm)")

    def _on_info(self, msg: CameraInfo) -> None:
        try:
            camera = camera_of(msg)
        except Sim2RealError as err:
            self.get_logger().error(f"{self.setup.camera_info_topic}: {err}", throttle_duration_sec=10.0)
            return
        if self.estimator is None:
            self.estimator = BoxPoseEstimator(camera, self.tags, self.setup.base_from_camera, self.setup.refine)
        else:
            self.estimator.camera = camera

    def _on_image(self, msg: Image) -> None:
        stamp = ns_of(msg.header.stamp)
        if self.estimator is None:  # no intrinsics yet: counted, and the recorder hears of it
            self._waiting += 1
            self._pub_result.publish(String(data=json.dumps({"stamp_ns": stamp, "refused": "no_camera_info"})))
            return
        try:
            found = self.estimator.estimate(image_array(msg))
        except Sim2RealError as err:  # an encoding the detector does not read, or too few bytes
            self.get_logger().error(f"{self.setup.image_topic}: {err}", throttle_duration_sec=10.0)
            self.estimator.tally.refuse("undecodable")
            found = Refusal("undecodable", str(err))
        if not isinstance(found, Refusal):
            self._pub.publish(pose_msg(stamp, found.position, found.quaternion))
        refused = found.reason if isinstance(found, Refusal) else ""
        self._pub_result.publish(String(data=json.dumps({"stamp_ns": stamp, "refused": refused})))
        if time.monotonic() - self._logged > TALLY_PERIOD:
            self._logged = time.monotonic()
            self.get_logger().info(self.tally_line())

    def tally_line(self) -> str:
        """What the detector did so far, in one line."""
        tally = self.estimator.tally.summary() if self.estimator else "no CameraInfo yet"
        return f"{tally}; {self._waiting} image(s) before the first CameraInfo" if self._waiting else tally

    def close(self) -> None:
        """Log the tally."""
        self.get_logger().info(self.tally_line())


def main(args: list[str] | None = None) -> int:
    """Console script ``tag_detector``."""
    return run_node(TagDetectorNode, args, name="tag_detector", doc=__doc__,
                    example="image_topic:=/camera/color/image_raw")


if __name__ == "__main__":
    import sys

    sys.exit(main())

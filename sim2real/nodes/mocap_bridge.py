"""``mocap_bridge``: the box pose of a motion-capture system on ``real/box_pose`` (real and mirror mode).

Subscribes to ``topic`` (geometry_msgs/PoseStamped in the mocap frame, e.g. from a VRPN or
OptiTrack driver), expresses each pose in the arm base frame with the configured transform
(:func:`sim2real.trials.experiment.mocap_to_base`) and republishes it on ``real/box_pose``
(frame ``link_base``) with the original stamp.

Parameters (type, default: meaning, unit); config/mocap.yaml holds them::

    topic                          string, /mocap/box/pose: the mocap driver's PoseStamped topic
    base_from_mocap.translation    double[3], [0, 0, 0]: the mocap origin in the base frame, m
    base_from_mocap.rotation_wxyz  double[4], [1, 0, 0, 0]: the mocap axes in the base frame
                                   (unit quaternion w, x, y, z)
"""

from __future__ import annotations

import numpy as np
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node

from sim2real.nodes.common import STREAM_QOS, ns_of, pose_arrays, pose_msg
from sim2real.nodes.process import run_node
from sim2real.trials.experiment import mocap_to_base


class MocapBridgeNode(Node):
    """Mocap topic → ``real/box_pose`` (see the module docstring)."""

    def __init__(self, name: str = "mocap_bridge", **kwargs: object) -> None:
        super().__init__(name, **kwargs)  # type: ignore[arg-type]
        topic = str(self.declare_parameter("topic", "/mocap/box/pose").value)
        self.translation = np.asarray(self.declare_parameter("base_from_mocap.translation",
                                                             [0.0, 0.0, 0.0]).value, dtype=float)
        self.rotation = np.asarray(self.declare_parameter("base_from_mocap.rotation_wxyz",
                                                          [1.0, 0.0, 0.0, 0.0]).value, dtype=float)
        if self.translation.shape != (3,) or self.rotation.shape != (4,) or not (
                np.all(np.isfinite(self.translation)) and np.linalg.norm(self.rotation) > 0.5):
            raise ValueError("parameter base_from_mocap.translation needs 3 numbers and "
                             "base_from_mocap.rotation_wxyz a quaternion (w, x, y, z) of norm about 1")
        self._pub = self.create_publisher(PoseStamped, "real/box_pose", STREAM_QOS)
        self.create_subscription(PoseStamped, topic, self._on_pose, STREAM_QOS)
        self.get_logger().info(f"mocap {topic} -> real/box_pose")

    def _on_pose(self, msg: PoseStamped) -> None:
        position, quaternion = mocap_to_base(*pose_arrays(msg), self.translation, self.rotation)
        self._pub.publish(pose_msg(ns_of(msg.header.stamp), position, quaternion))


def main(args: list[str] | None = None) -> int:
    """Console script ``mocap_bridge``."""
    return run_node(MocapBridgeNode, args, name="mocap_bridge", doc=__doc__, example="topic:=/vrpn/box/pose")


if __name__ == "__main__":
    import sys

    sys.exit(main())

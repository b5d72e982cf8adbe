"""mocap_bridge: a mocap PoseStamped on the configured topic arrives on real/box_pose in the arm base frame."""

import threading
import time

import numpy as np
import pytest

from sim2real.spatial import from_axis_angle, multiply
from sim2real.trials.experiment import mocap_to_base

QUARTER_TURN_Z = from_axis_angle(np.array([0.0, 0.0, 1.0]), np.pi / 2)


def test_mocap_to_base_rotates_then_translates():
    position, quaternion = mocap_to_base(np.array([1.0, 0.0, 0.2]), np.array([1.0, 0.0, 0.0, 0.0]),
                                         np.array([0.5, -0.1, 0.0]), QUARTER_TURN_Z)
    # mocap x is base y after a quarter turn about z; then the mocap origin offset.
    np.testing.assert_allclose(position, [0.5, 0.9, 0.2], atol=1e-12)
    np.testing.assert_allclose(quaternion, QUARTER_TURN_Z, atol=1e-12)
    _, turned = mocap_to_base(np.zeros(3), QUARTER_TURN_Z, np.zeros(3), QUARTER_TURN_Z)
    np.testing.assert_allclose(turned, multiply(QUARTER_TURN_Z, QUARTER_TURN_Z), atol=1e-12)


def test_bridge_republishes_in_the_base_frame(ros):
    from geometry_msgs.msg import PoseStamped
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.parameter import Parameter

    from sim2real.nodes.common import STREAM_QOS, ns_of, pose_arrays, pose_msg
    from sim2real.nodes.mocap_bridge import MocapBridgeNode

    bridge = MocapBridgeNode(context=ros, parameter_overrides=[
        Parameter("topic", value="/lab/box"),
        Parameter("base_from_mocap.translation", value=[0.5, -0.1, 0.0]),
        Parameter("base_from_mocap.rotation_wxyz", value=[float(x) for x in QUARTER_TURN_Z])])
    probe = Node("probe", context=ros)
    received = []
    probe.create_subscription(PoseStamped, "real/box_pose", received.append, STREAM_QOS)
    publisher = probe.create_publisher(PoseStamped, "/lab/box", STREAM_QOS)
    executor = SingleThreadedExecutor(context=ros)
    executor.add_node(bridge)
    executor.add_node(probe)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while publisher.get_subscription_count() < 1 or bridge._pub.get_subscription_count() < 1:
            assert time.monotonic() < deadline, "bridge never matched"
            time.sleep(0.02)
        publisher.publish(pose_msg(1_234_000_000, [1.0, 0.0, 0.2], [1.0, 0.0, 0.0, 0.0], frame_id="mocap"))
        while not received:
            assert time.monotonic() < deadline, "nothing on real/box_pose"
            time.sleep(0.02)
    finally:
        executor.shutdown(timeout_sec=2.0)
        thread.join(timeout=2.0)
        bridge.destroy_node()
        probe.destroy_node()
    msg = received[0]
    position, quaternion = pose_arrays(msg)
    assert ns_of(msg.header.stamp) == 1_234_000_000 and msg.header.frame_id == "link_base"
    np.testing.assert_allclose(position, [0.5, 0.9, 0.2], atol=1e-12)
    np.testing.assert_allclose(quaternion, QUARTER_TURN_Z, atol=1e-12)


def test_bad_transform_is_refused(ros):
    from rclpy.parameter import Parameter

    from sim2real.nodes.mocap_bridge import MocapBridgeNode

    with pytest.raises(ValueError, match="rotation_wxyz"):
        MocapBridgeNode(context=ros, parameter_overrides=[Parameter("base_from_mocap.rotation_wxyz",
                                                                    value=[0.0, 0.0, 0.0])])

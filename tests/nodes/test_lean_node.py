"""The run's nodes carry no per-entity QoS event handlers (:class:`sim2real.nodes.common.LeanNode`): each one
costs the executor work on every message; the nodes that meet other labs' stacks keep rclpy's."""

import rclpy
from rclpy.event_handler import EventHandler
from rclpy.node import Node
from sensor_msgs.msg import JointState

from sim2real.nodes.common import STREAM_QOS, LeanNode


def _handlers(node: Node) -> int:
    return sum(isinstance(w, EventHandler) for w in node.waitables)


def test_a_lean_node_adds_no_event_handlers_and_still_delivers(ros_env):
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        lean = LeanNode("lean", context=context)
        plain = Node("plain", context=context)
        before = _handlers(lean)
        received = []
        lean.create_subscription(JointState, "lean_test", received.append, STREAM_QOS)
        publisher = lean.create_publisher(JointState, "lean_test", STREAM_QOS)
        assert _handlers(lean) == before
        plain_before = _handlers(plain)
        plain.create_subscription(JointState, "lean_test", lambda m: None, STREAM_QOS)
        assert _handlers(plain) > plain_before  # rclpy's default: what LeanNode leaves out
        executor = rclpy.executors.SingleThreadedExecutor(context=context)
        executor.add_node(lean)
        for _ in range(200):  # discovery within the process, then one message
            publisher.publish(JointState(name=["joint1"], position=[0.5]))
            executor.spin_once(timeout_sec=0.05)
            if received:
                break
        assert received and list(received[0].position) == [0.5]
        executor.shutdown()
        lean.destroy_node()
        plain.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)

"""The nodes of one process read a stream through one subscription (:mod:`sim2real.nodes.streams`): every
listener gets every message, in the order it asked; the graph check counts the hub's matches as the
recorder's; a node started alone subscribes itself."""

import json

import pytest
import rclpy
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from sim2real.nodes.common import GRAPH_STATUS_TOPIC, STREAM_QOS, LeanNode, report_matches
from sim2real.nodes.streams import StreamHub, subscribe_stream


@pytest.fixture
def context(ros_env):
    context = rclpy.Context()
    rclpy.init(context=context)
    yield context
    rclpy.try_shutdown(context=context)


def _spin_until(executor, condition, publish=None, rounds=400):
    for _ in range(rounds):
        if publish is not None:
            publish()
        executor.spin_once(timeout_sec=0.02)
        if condition():
            return True
    return False


def test_every_listener_gets_every_message_through_one_subscription(context):
    hub = StreamHub(context=context, namespace="hubtest")
    first, second = LeanNode("first", context=context, namespace="hubtest"), LeanNode(
        "second", context=context, namespace="hubtest")
    got: list[tuple[str, float]] = []
    subscribe_stream(first, hub, JointState, "real/joint_states", lambda m: got.append(("first", m.position[0])))
    subscribe_stream(second, hub, JointState, "real/joint_states", lambda m: got.append(("second", m.position[0])))
    assert len(list(hub.subscriptions)) == 1 and not list(first.subscriptions) and not list(second.subscriptions)
    publisher = first.create_publisher(JointState, "/hubtest/real/joint_states", STREAM_QOS)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(hub)
    assert _spin_until(executor, lambda: publisher.get_subscription_count() >= 1)
    for value in (1.0, 2.0, 3.0):
        publisher.publish(JointState(name=["joint1"], position=[value]))
    assert _spin_until(executor, lambda: len(got) >= 6)
    assert got == [("first", 1.0), ("second", 1.0), ("first", 2.0), ("second", 2.0), ("first", 3.0),
                   ("second", 3.0)]
    executor.shutdown()
    for node in (hub, first, second):
        node.destroy_node()


def test_a_stream_has_one_type_and_the_hub_one_namespace(context):
    hub = StreamHub(context=context)
    node = LeanNode("elsewhere", context=context, namespace="other")
    subscribe_stream(hub, hub, JointState, "sim/joint_states", lambda m: None)
    with pytest.raises(ValueError, match="JointState, not String"):
        hub.listen(String, "sim/joint_states", lambda m: None)
    with pytest.raises(ValueError, match="namespace"):
        subscribe_stream(node, hub, JointState, "sim/joint_states", lambda m: None)
    hub.destroy_node()
    node.destroy_node()


def test_a_node_without_a_hub_subscribes_itself(context):
    node = LeanNode("alone", context=context)
    subscribe_stream(node, None, JointState, "real/joint_states", lambda m: None)
    assert [s.topic_name for s in node.subscriptions] == ["/real/joint_states"]
    node.destroy_node()


def test_the_graph_status_counts_the_hubs_matches_as_the_nodes(context):
    hub = StreamHub(context=context)
    recorder = LeanNode("recorder_like", context=context)
    subscribe_stream(recorder, hub, JointState, "real/joint_states", lambda m: None)
    recorder.create_subscription(String, "own_topic", lambda m: None, STREAM_QOS)
    publisher = hub.create_publisher(JointState, "real/joint_states", STREAM_QOS)
    reports: list[dict] = []
    listener = LeanNode("graph_listener", context=context)
    listener.create_subscription(String, GRAPH_STATUS_TOPIC, lambda m: reports.append(json.loads(m.data)), 50)
    report_matches(recorder, "recorder", period=0.05, also=hub)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    for node in (hub, recorder, listener):
        executor.add_node(node)
    assert _spin_until(executor, lambda: any(r["matched"].get("/real/joint_states") == 1 for r in reports))
    assert set(reports[-1]["matched"]) == {"/real/joint_states", "/own_topic"}
    executor.shutdown()
    del publisher
    for node in (hub, recorder, listener):
        node.destroy_node()


def test_live_view_leaves_the_shared_message_as_it_came(context):
    """``live_view`` publishes its prefixed joint names on a copy: a listener after it still reads joint1..6."""
    from sim2real.nodes.common import JOINT_NAMES, joint_state_msg
    from sim2real.nodes.live_view import LiveViewNode

    hub = StreamHub(context=context, namespace="liveview")
    live = LiveViewNode(streams=hub, context=context, namespace="liveview")
    after: list[list[str]] = []
    hub.listen(JointState, "real/joint_states", lambda m: after.append(list(m.name)))
    renamed: list[list[str]] = []
    probe = LeanNode("probe", context=context, namespace="liveview")
    probe.create_subscription(JointState, "live/joint_states", lambda m: renamed.append(list(m.name)), STREAM_QOS)
    publisher = probe.create_publisher(JointState, "real/joint_states", STREAM_QOS)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    for node in (hub, live, probe):
        executor.add_node(node)
    assert _spin_until(executor, lambda: publisher.get_subscription_count() >= 1)
    assert _spin_until(executor, lambda: renamed and after,
                       publish=lambda: publisher.publish(joint_state_msg(1, [0.0] * 6, [0.0] * 6)))
    assert after[0] == list(JOINT_NAMES)
    assert renamed[0] == [f"real/{name}" for name in JOINT_NAMES]
    executor.shutdown()
    for node in (hub, live, probe):
        node.destroy_node()

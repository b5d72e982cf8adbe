"""Bags a 3D viewer can show: /tf, /tf_static, the robot description and markers, latched QoS,
rosbag2's log time = receive time, and one time convention (read back with rosbags); the
Foxglove layout of config/ names only what trial bags carry."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from fixtures.foxglove import layout_frames, layout_topics, load_layout, message_paths, panel_ids
from fixtures.synthetic_trials import make_trial
from rosbags.rosbag2 import Reader
from rosbags.rosbag2.metadata import QosDurability
from scipy.spatial.transform import Rotation

from sim2real.model import load_arm
from sim2real.params import ParameterSet
from sim2real.paths import config_file
from sim2real.trials import SceneSpec, TrialBagWriter, read_trial, write_trial
from sim2real.trials import scene as scene_mod
from sim2real.trials.messages import make_typestore

LATCHED = ("/tf_static", "/robot_description", "/markers", "/reference/joint_trajectory")


def _messages(path: Path) -> tuple[dict[str, object], dict[str, list[tuple[int, object]]]]:
    """Connections by topic and (log time, message) lists by topic."""
    typestore = make_typestore()
    by_topic: dict[str, list[tuple[int, object]]] = {}
    with Reader(path) as reader:
        connections = {c.topic: c for c in reader.connections}
        for connection, t_ns, raw in reader.messages():
            by_topic.setdefault(connection.topic, []).append((t_ns, typestore.deserialize_cdr(raw, connection.msgtype)))
    return connections, by_topic


def _matrix(transform) -> np.ndarray:
    t, q = transform.translation, transform.rotation
    out = np.eye(4)
    out[:3, :3] = Rotation.from_quat([q.x, q.y, q.z, q.w]).as_matrix()
    out[:3, 3] = [t.x, t.y, t.z]
    return out


def test_a_written_trial_carries_tf_robot_description_and_markers(tmp_path: Path) -> None:
    from urdf_parser_py.urdf import URDF

    record = make_trial(0, 0.30)
    params = ParameterSet.nominal().replace({"pusher.radius": 0.025, "pusher.offset": 0.07})
    record.meta["params"] = params.as_dict()
    path = write_trial(tmp_path, record)
    connections, messages = _messages(path)

    # QoS offered: latched topics transient-local (ros2 bag play republishes them latched)
    for name, connection in connections.items():
        (qos,) = connection.ext.offered_qos_profiles
        assert (qos.durability == QosDurability.TRANSIENT_LOCAL) == (name in LATCHED), name
    metadata = (path / "metadata.yaml").read_text()
    assert "ros_distro: kilted" in metadata and "durability: transient_local" in metadata

    # robot description: both arms, links prefixed, under link_base, the trial's pusher
    ((_, description),) = messages["/robot_description"]
    robot = URDF.from_xml_string(description.data)
    links = {link.name for link in robot.links}
    assert {"link_base", "real/link1", "real/link6", "real/pusher", "sim/link_base", "sim/pusher"} <= links
    assert robot.get_root() == "link_base"
    pusher = next(link for link in robot.links if link.name == "sim/pusher")
    assert pusher.visuals[0].geometry.radius == pytest.approx(0.025)

    # /tf_static: the fixed joints, pusher at the trial's offset
    ((start_log, static),) = messages["/tf_static"]
    pairs = {(t.header.frame_id, t.child_frame_id): t.transform for t in static.transforms}
    assert set(pairs) == {("link_base", "real/link_base"), ("real/link6", "real/pusher"),
                          ("link_base", "sim/link_base"), ("sim/link6", "sim/pusher")}
    assert pairs[("sim/link6", "sim/pusher")].translation.z == pytest.approx(0.07)

    # /tf: per joint state the chain (composes to the model's FK), per box pose link_base -> <ns>/box
    arm = load_arm(params)
    joint_states = [m for _, m in messages["/sim/joint_states"]]
    chains = [m for _, m in messages["/tf"] if m.transforms[0].child_frame_id == "sim/link1"]
    assert len(chains) == len(joint_states)
    for state, chain in zip(joint_states[::50], chains[::50], strict=True):
        assert [t.child_frame_id for t in chain.transforms] == [f"sim/link{i}" for i in range(1, 7)]
        assert chain.transforms[0].header.frame_id == "sim/link_base"
        assert chain.transforms[0].header.stamp == state.header.stamp
        flange = np.linalg.multi_dot([_matrix(t.transform) for t in chain.transforms])
        pusher_in_base = flange @ _matrix(pairs[("sim/link6", "sim/pusher")])
        np.testing.assert_allclose(pusher_in_base[:3, 3], arm.pusher_position(state.position), atol=1e-12)
    boxes = [m.transforms[0] for _, m in messages["/tf"] if m.transforms[0].child_frame_id == "real/box"]
    poses = [m for _, m in messages["/real/box_pose"]]
    assert len(boxes) == len(poses)
    last = boxes[-1]
    assert last.header.frame_id == "link_base" and last.header.stamp == poses[-1].header.stamp
    assert last.transform.translation.x == poses[-1].pose.position.x
    assert not any(m.transforms[0].child_frame_id.endswith("/pusher") for _, m in messages["/tf"])  # arms draw it

    # /markers: a box cube of the trial's size per platform, frame-locked to <ns>/box
    ((_, markers),) = messages["/markers"]
    cubes = {m.ns: m for m in markers.markers if m.type == m.CUBE and m.ns in ("real", "sim")}
    assert set(cubes) == {"real", "sim"}
    assert cubes["real"].header.frame_id == "real/box" and cubes["real"].frame_locked
    assert (cubes["real"].scale.x, cubes["real"].scale.y, cubes["real"].scale.z) == pytest.approx((0.11, 0.13, 0.21))

    # latched messages come first; the trial reads back as before
    assert start_log == min(t for series in messages.values() for t, _ in series)
    assert set(read_trial(path).platforms) == {"real", "sim"}


def test_the_foxglove_layout_names_only_what_trial_bags_carry(tmp_path: Path) -> None:
    """config/foxglove_layout.json (installed with the package) parses as a Foxglove layout: its
    tree places every configured panel; the 3D panel shows /robot_description and /markers in
    frames that /tf and /tf_static give, and every plotted message path resolves to a number in a
    written trial of both platforms."""
    layout = load_layout()
    assert load_layout(config_file("foxglove_layout.json")) == layout
    assert {"configById", "layout", "globalVariables", "userNodes", "playbackConfig"} <= set(layout)
    assert sorted(panel_ids(layout["layout"])) == sorted(layout["configById"])
    assert {panel.split("!")[0] for panel in layout["configById"]} == {"3D", "Plot"}
    assert {"/robot_description", "/markers"} <= layout_topics(layout)
    assert {"/real/box_pose", "/sim/box_pose"} <= layout_topics(layout)

    path = write_trial(tmp_path, make_trial(0, 0.30))
    _, messages = _messages(path)
    assert layout_topics(layout) <= set(messages)
    frames = {name for topic in ("/tf", "/tf_static") for _, msg in messages[topic] for t in msg.transforms
              for name in (t.header.frame_id, t.child_frame_id)}
    assert layout_frames(layout) <= frames
    for value in message_paths(layout):
        topic, fields = value.split(".", 1)
        field = messages[topic][0][1]
        for name in fields.split("."):
            field = getattr(field, name)
        assert isinstance(field, float), value


def test_tf_encoder_matches_the_typestore() -> None:
    typestore = make_typestore()
    transforms = [*scene_mod.chain_transforms("real", [0.3, -0.7, 0.4, 1.2, -0.5, 2.0]),
                  ("link_base", "sim/box", [0.4, -0.01, 0.105], [0.9, 0.1, -0.2, 0.3]), ("a", "bcdefgh", [0, 0, 0],
                                                                                        [1, 0, 0, 0])]
    stamp = 1_700_000_000_123_456_789
    types = typestore.types
    msg = types["tf2_msgs/msg/TFMessage"](transforms=[types["geometry_msgs/msg/TransformStamped"](
        header=types["std_msgs/msg/Header"](stamp=types["builtin_interfaces/msg/Time"](sec=1_700_000_000,
                                                                                       nanosec=123_456_789),
                                            frame_id=parent),
        child_frame_id=child,
        transform=types["geometry_msgs/msg/Transform"](
            translation=types["geometry_msgs/msg/Vector3"](*(float(v) for v in translation)),
            rotation=types["geometry_msgs/msg/Quaternion"](x=float(q[1]), y=float(q[2]), z=float(q[3]), w=float(q[0]))))
        for parent, child, translation, q in transforms])
    expected = bytes(typestore.serialize_cdr(msg, "tf2_msgs/msg/TFMessage"))
    assert scene_mod.tf_message_cdr(typestore, stamp, transforms) == expected


def test_an_armless_scene_has_pusher_frames_and_no_robot(tmp_path: Path) -> None:
    """simulate SCENARIO --out: a free box and pusher, no arm: pusher on /tf, no description."""
    with TrialBagWriter(tmp_path, "scenario", start_ns=5_000) as writer:
        writer.write_scene(SceneSpec.from_params(["sim"], pusher_length=0.05))
        for k in range(3):
            writer.write_box_pose("sim", 5_000 + k, [0.4, 0, 0.1], [1, 0, 0, 0])
            writer.write_pusher_pose("sim", 5_000 + k, [0.3, 0, 0.1], [1, 0, 0, 0])
    connections, messages = _messages(tmp_path / "scenario")
    assert "/robot_description" not in connections and "/tf_static" not in connections
    children = {m.transforms[0].child_frame_id for _, m in messages["/tf"]}
    assert children == {"sim/box", "sim/pusher"}
    ((_, markers),) = messages["/markers"]
    kinds = {(m.ns, m.type) for m in markers.markers}
    assert ("sim", 3) in kinds and not any(m.ns == "table" for m in markers.markers)  # a CYLINDER pusher


def test_simulated_bags_use_the_wall_clock(tmp_path: Path) -> None:
    """The one time convention: ns since the UNIX epoch, also for a simulated trial."""
    before = time.time_ns()
    scenario = Path(__file__).resolve().parents[2] / "config" / "scenarios" / "slide.yaml"
    from sim2real.cli import main

    out = tmp_path / "slide_bag"
    assert main(["simulate", str(scenario), "--out", str(out)]) in (0, 3)
    trial = json.loads((out / "trial.json").read_text())
    assert before <= trial["timing"]["start_ns"] <= time.time_ns()
    connections, messages = _messages(out)
    stamps = [m.header.stamp.sec for _, m in messages["/sim/box_pose"]]
    assert min(stamps) >= before // 10**9
    assert {"/tf", "/markers", "/sim/box_pose"} <= set(connections)




@pytest.mark.ros
def test_the_recorder_logs_receive_time_and_writes_the_scene(tmp_path: Path, ros_env, capfd) -> None:
    """A trial recorded by the recorder node: log time = receive time >= header stamp for every
    data message, and /tf, /tf_static, /robot_description (sim arm only), /markers. A message stamped
    inside the trial that arrives after the trial closed is said once (it is not in the bag)."""
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from std_msgs.msg import String

    from sim2real.nodes.common import LATCHED_QOS, STREAM_QOS, TRIAL_EVENT_TOPIC, joint_state_msg, now_ns, pose_msg
    from sim2real.nodes.recorder import RecorderNode

    out = tmp_path / "run"
    context = Context()
    rclpy.init(context=context)
    try:
        # The streams never pass the 10 s window's end: the trial closes at the drain deadline.
        recorder = RecorderNode(context=context, parameter_overrides=[Parameter("out_dir", value=str(out)),
                                                                      Parameter("drain_timeout", value=1.0)])
        source = Node("scene_test_source", context=context)
        events = source.create_publisher(String, TRIAL_EVENT_TOPIC, LATCHED_QOS)
        joints = source.create_publisher(type(joint_state_msg(0, np.zeros(6), np.zeros(6))), "sim/joint_states",
                                         STREAM_QOS)
        boxes = source.create_publisher(PoseStamped, "sim/box_pose", STREAM_QOS)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(recorder)
        executor.add_node(source)

        def spin_until(condition, timeout: float = 10.0) -> None:
            deadline = time.monotonic() + timeout
            while not condition():
                assert time.monotonic() < deadline, "timed out"
                executor.spin_once(timeout_sec=0.02)

        spin_until(lambda: joints.get_subscription_count() > 0 and boxes.get_subscription_count() > 0
                   and events.get_subscription_count() > 0)
        events.publish(String(data=json.dumps({"event": "run", "mode": "sim", "platforms": ["sim"]})))
        start = now_ns(source)
        events.publish(String(data=json.dumps({"event": "start", "trial": "trial_00_d0.300", "index": 0,
                                               "distance": 0.3, "start_ns": start, "end_ns": start + 10**10})))
        spin_until(lambda: recorder._writer is not None)
        for k in range(20):
            stamp = now_ns(source)  # acquired now, received a little later
            joints.publish(joint_state_msg(stamp, np.full(6, 0.01 * k), np.zeros(6)))
            boxes.publish(pose_msg(stamp, [0.3 + 0.001 * k, 0.0, 0.105], [1.0, 0.0, 0.0, 0.0]))
            executor.spin_once(timeout_sec=0.005)
        spin_until(lambda: recorder._writer is not None and recorder._writer._counts.get("/sim/box_pose", 0) == 20)
        events.publish(String(data=json.dumps({"event": "end", "trial": "trial_00_d0.300", "meta": {}})))
        spin_until(lambda: len(recorder.written) == 1)
        for _ in range(2):  # late: stamped inside the closed trial
            joints.publish(joint_state_msg(start + 10**9, np.zeros(6), np.zeros(6)))
        spin_until(lambda: "arrived after that trial was closed" in capfd.readouterr().err)
        executor.shutdown()
        recorder.destroy_node()
        source.destroy_node()
    finally:
        rclpy.shutdown(context=context)

    connections, messages = _messages(out / "trial_00_d0.300")
    for name in ("/sim/joint_states", "/sim/box_pose"):
        assert len(messages[name]) == 20
        for log_ns, msg in messages[name]:
            stamp_ns = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
            assert log_ns > stamp_ns, name
    frames = {t.child_frame_id for _, m in messages["/tf"] for t in m.transforms}
    assert frames == {f"sim/link{i}" for i in range(1, 7)} | {"sim/box"}
    ((_, description),) = messages["/robot_description"]
    assert "sim/link3" in description.data and "real/" not in description.data
    assert connections["/robot_description"].ext.offered_qos_profiles[0].durability == QosDurability.TRANSIENT_LOCAL
    assert {"/tf_static", "/markers"} <= set(connections)

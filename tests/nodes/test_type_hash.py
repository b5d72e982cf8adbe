"""RIHS01 type hashes (:mod:`sim2real.trials.type_hash`) against the values ROS 2 itself gives.

Known values: the ``hash_string`` of every rosidl type description the installed Kilted wheels ship
(``share/<package>/msg/<Type>.json``), and the topic type hash rclpy reports for a live publisher.
Then a trial bag as rosbag2 writes it: ``type_description_hash`` in metadata.yaml and
``topic_type_hash`` in each MCAP channel, for every topic (also /tf and /markers, whose packages
have no wheel here).
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from rosbags.rosbag2 import Reader

from sim2real.trials import SceneSpec, TrialBagWriter, read_trial
from sim2real.trials.messages import make_typestore
from sim2real.trials.type_hash import CHANNEL_HASH_KEY, FIELD_TYPE_IDS, rihs01, type_description, type_hash

SHARE = Path(sys.prefix) / "share"
WHEEL_DESCRIPTIONS = sorted(SHARE.glob("*/msg/*.json"))


def known(path: Path) -> tuple[str, str, dict]:
    document = json.loads(path.read_text())
    entry = document["type_hashes"][0]
    return entry["type_name"], entry["hash_string"], document["type_description_msg"]


def test_the_wheels_ship_type_descriptions():
    names = {known(p)[0] for p in WHEEL_DESCRIPTIONS}
    assert {"std_msgs/msg/String", "sensor_msgs/msg/JointState", "geometry_msgs/msg/PoseStamped",
            "trajectory_msgs/msg/JointTrajectory", "std_msgs/msg/Float64MultiArray"} <= names


@pytest.mark.parametrize("path", WHEEL_DESCRIPTIONS, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_hash_of_rosidls_description_and_of_the_typestores_match_the_wheel(path):
    name, expected, description = known(path)
    assert rihs01(description) == expected
    assert type_hash(make_typestore(), name) == expected


def test_a_msg_char_is_uint8_as_rosidl_has_it():
    """.msg ``char`` is rosidl's uint8; rosbags' own hash counts it as CHAR and differs."""
    typestore = make_typestore()
    field = type_description(typestore, "std_msgs/msg/Char")["type_description"]["fields"][0]
    assert field["type"]["type_id"] == FIELD_TYPE_IDS["uint8"]
    assert type_hash(typestore, "std_msgs/msg/Char") != typestore.hash_rihs01("std_msgs/msg/Char")


def test_field_type_ids_are_those_of_type_description_interfaces():
    from type_description_interfaces.msg import FieldType

    for name, constant in [("nested", "NESTED_TYPE"), ("int8", "INT8"), ("uint64", "UINT64"), ("float32", "FLOAT"),
                           ("float64", "DOUBLE"), ("char", "CHAR"), ("bool", "BOOLEAN"), ("byte", "BYTE"),
                           ("string", "STRING"), ("bounded_string", "BOUNDED_STRING")]:
        assert FIELD_TYPE_IDS[name] == getattr(FieldType, f"FIELD_TYPE_{constant}")
    assert FIELD_TYPE_IDS["float64"] + 48 == FieldType.FIELD_TYPE_DOUBLE_ARRAY
    assert FIELD_TYPE_IDS["float64"] + 96 == FieldType.FIELD_TYPE_DOUBLE_BOUNDED_SEQUENCE
    assert FIELD_TYPE_IDS["float64"] + 144 == FieldType.FIELD_TYPE_DOUBLE_UNBOUNDED_SEQUENCE


def test_the_hash_rclpy_reports_for_a_live_topic(ros_env):
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from rclpy.context import Context
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray, String
    from trajectory_msgs.msg import JointTrajectory

    context = Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node("hash_probe", context=context)
        typestore = make_typestore()
        for msg_type, name in [(String, "std_msgs/msg/String"), (JointState, "sensor_msgs/msg/JointState"),
                               (PoseStamped, "geometry_msgs/msg/PoseStamped"),
                               (JointTrajectory, "trajectory_msgs/msg/JointTrajectory"),
                               (Float64MultiArray, "std_msgs/msg/Float64MultiArray")]:
            topic = f"hash_probe/{name.split('/')[-1].lower()}"
            node.create_publisher(msg_type, topic, 1)
            (info,) = node.get_publishers_info_by_topic(f"/{topic}")
            assert str(info.topic_type_hash) == type_hash(typestore, name)
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)


def _string(body: bytes, at: int) -> tuple[str, int]:
    """An MCAP string (u32 length, UTF-8) at ``at``, and the offset after it."""
    size = struct.unpack_from("<I", body, at)[0]
    return body[at + 4:at + 4 + size].decode(), at + 4 + size


def mcap_channel_metadata(path: Path) -> dict[str, dict[str, str]]:
    """``{topic: metadata}`` of the Channel records at the top level of an MCAP file (its summary)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89MCAP0\r\n"
    offset, channels = 8, {}
    while offset + 9 <= len(data) - 8:
        opcode, length = data[offset], struct.unpack_from("<Q", data, offset + 1)[0]
        body = data[offset + 9:offset + 9 + length]
        offset += 9 + length
        if opcode != 0x04:
            continue
        topic, at = _string(body, 4)  # after the channel id and schema id
        _encoding, at = _string(body, at)
        end = at + 4 + struct.unpack_from("<I", body, at)[0]
        at += 4
        metadata = {}
        while at < end:
            key, at = _string(body, at)
            metadata[key], at = _string(body, at)
        channels[topic] = metadata
    return channels


def test_a_trial_bag_carries_the_hash_as_rosbag2_writes_it(tmp_path):
    writer = TrialBagWriter(tmp_path, "trial_00_d0.300", start_ns=10**18)
    writer.write_scene(SceneSpec.from_params(("real", "sim"), ("real", "sim")))
    for k in range(3):
        t = 10**18 + k * 10_000_000
        for ns in ("real", "sim"):
            writer.write_joint_state(ns, t, np.zeros(6), np.zeros(6), np.zeros(6))
            writer.write_joint_command(ns, t, np.zeros(6), np.zeros(6))
            writer.write_box_pose(ns, t, [0.3, 0.0, 0.1], [1.0, 0.0, 0.0, 0.0])
    path = writer.close({"mode": "sim"})
    typestore = make_typestore()
    metadata = yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    topics = {t["topic_metadata"]["name"]: t["topic_metadata"] for t in metadata["topics_with_message_count"]}
    assert {"/tf", "/tf_static", "/markers", "/robot_description", "/real/joint_states"} <= set(topics)
    channels = mcap_channel_metadata(next(path.glob("*.mcap")))
    assert set(channels) == set(topics)
    for name, topic in topics.items():
        expected = type_hash(typestore, topic["type"])
        assert topic["type_description_hash"] == expected, name
        assert channels[name][CHANNEL_HASH_KEY] == expected, name
        assert "offered_qos_profiles" in channels[name]
    with Reader(path) as reader:  # readers that know only offered_qos_profiles still read it
        assert sum(1 for _ in reader.messages()) == reader.message_count
    record = read_trial(path)
    assert len(record.platforms["real"].joint_states) == 3

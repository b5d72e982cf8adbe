"""Round trip of trials through rosbag2 (mcap) and the errors of damaged or wrong inputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from fixtures.synthetic_trials import make_trial
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore

from sim2real.errors import Sim2RealError
from sim2real.trials import (
    TRIAL_SCHEMA,
    PoseSeries,
    TrialBagWriter,
    TrialRecord,
    read_run,
    read_run_meta,
    read_trial,
    write_run_meta,
    write_trial,
)


def _assert_series_equal(a, b) -> None:
    assert type(a) is type(b)
    for name in a.__dataclass_fields__:
        x, y = getattr(a, name), getattr(b, name)
        if name == "t":
            np.testing.assert_allclose(x, y, atol=1e-9, rtol=0)
        else:
            np.testing.assert_array_equal(x, y)


def test_round_trip_keeps_every_value(tmp_path: Path) -> None:
    record = make_trial(0, 0.30)
    path = write_trial(tmp_path, record)
    assert path == tmp_path / record.name
    assert sorted(p.name for p in path.iterdir()) == sorted(["metadata.yaml", f"{record.name}.mcap", "trial.json"])
    back = read_trial(path)
    assert back.name == record.name
    assert set(back.platforms) == {"real", "sim"}
    for ns in ("real", "sim"):
        for series in ("joint_states", "joint_command", "box_pose", "pusher_pose"):
            _assert_series_equal(getattr(record.platforms[ns], series), getattr(back.platforms[ns], series))
    _assert_series_equal(record.reference, back.reference)
    meta = back.meta
    assert meta["schema"] == TRIAL_SCHEMA and meta["complete"] is True and meta["trial"] == record.name
    assert meta["initial_distance_m"] == 0.30 and meta["mode"] == "standin" and meta["mirror"] == "closed"
    assert meta["timing"] == record.meta["timing"]
    assert set(meta["versions"]) == {"sim2real", "numpy", "rosbags", "python"}
    assert meta["topics"]["/real/joint_states"] == len(record.platforms["real"].joint_states)
    # outcomes computed from the recorded poses: the synthetic box slides 0.15 m and topples
    real = meta["outcomes"]["real"]
    assert real["final_distance_m"] == pytest.approx(0.45) and real["flipped"] is True


def test_bag_is_standard_rosbag2_mcap(tmp_path: Path) -> None:
    """Another reader sees the contract's topics and types (plus the 3D viewer's), time-ordered,
    with full JointStates."""
    path = write_trial(tmp_path, make_trial(1, 0.35, sim=False))
    typestore = get_typestore(Stores.ROS2_KILTED)
    with Reader(path) as reader:
        assert (path / f"{path.name}.mcap").is_file()
        assert "storage_identifier: mcap" in (path / "metadata.yaml").read_text()
        types = {c.topic: c.msgtype for c in reader.connections}
        assert types == {"/real/joint_states": "sensor_msgs/msg/JointState",
                         "/real/joint_command": "sensor_msgs/msg/JointState",
                         "/real/box_pose": "geometry_msgs/msg/PoseStamped",
                         "/real/pusher_pose": "geometry_msgs/msg/PoseStamped",
                         "/reference/joint_trajectory": "trajectory_msgs/msg/JointTrajectory",
                         "/tf": "tf2_msgs/msg/TFMessage", "/tf_static": "tf2_msgs/msg/TFMessage",
                         "/robot_description": "std_msgs/msg/String",
                         "/markers": "visualization_msgs/msg/MarkerArray"}
        times = []
        for connection, t_ns, raw in reader.messages():
            times.append(t_ns)
            if connection.topic == "/real/joint_command":
                msg = typestore.deserialize_cdr(raw, connection.msgtype)
                assert list(msg.name) == [f"joint{i}" for i in range(1, 7)]
                assert msg.effort.shape == (6,) and msg.position.shape == (6,)
        assert times == sorted(times)


def test_partial_platforms_and_bare_bag(tmp_path: Path) -> None:
    record = make_trial(2, 0.40, real=False)
    record = TrialRecord(record.name, {"sim": record.platforms["sim"]}, None, {})
    path = write_trial(tmp_path, record)
    (path / "trial.json").unlink()  # a bare bag: times relative to its first message
    back = read_trial(path)
    assert set(back.platforms) == {"sim"} and back.reference is None and back.meta == {}
    assert back.platforms["sim"].box_pose.t[0] == 0.0
    with pytest.raises(Sim2RealError, match="no messages on /real/box_pose"):
        read_trial(path, require=["/real/box_pose"])


def test_incremental_writer_interrupted_keeps_data(tmp_path: Path) -> None:
    start = 5_000_000_000
    with pytest.raises(KeyboardInterrupt), TrialBagWriter(tmp_path, "trial_07_d0.450", start_ns=start) as writer:
        for k in range(5):
            t_ns = start + k * 10_000_000
            writer.write_joint_state("real", t_ns, np.full(6, 0.1 * k), np.zeros(6), None)
            writer.write_box_pose("real", t_ns, [0.45 + 0.01 * k, 0, 0.105], [1, 0, 0, 0])
        raise KeyboardInterrupt
    back = read_trial(tmp_path / "trial_07_d0.450")
    assert back.meta["complete"] is False and back.complete is False
    assert len(back.platforms["real"].joint_states) == 5
    np.testing.assert_allclose(back.platforms["real"].joint_states.t, np.arange(5) * 0.01)
    assert back.meta["outcomes"]["real"]["final_distance_m"] == pytest.approx(0.49)
    assert [p.name for p in tmp_path.iterdir()] == ["trial_07_d0.450"]  # no temporary left


def test_failure_leaves_nothing_and_no_overwrite(tmp_path: Path) -> None:
    record = make_trial(3, 0.30)
    write_trial(tmp_path, record)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(Sim2RealError, match="already exists"):
        write_trial(tmp_path, record)
    bad = TrialRecord("trial_99", {"real": record.platforms["real"]}, None, {"params": {"box.size_x": -1}})
    with pytest.raises(Sim2RealError, match="box size"):
        write_trial(tmp_path, bad)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    with pytest.raises(Sim2RealError, match="unknown platform"), TrialBagWriter(tmp_path, "t") as writer:
        writer.write_box_pose("robot", 0, [0, 0, 0], [1, 0, 0, 0])
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_damaged_inputs_give_one_line_errors(tmp_path: Path) -> None:
    path = write_trial(tmp_path / "run", make_trial(4, 0.30))
    with pytest.raises(Sim2RealError, match="does not exist"):
        read_trial(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(Sim2RealError, match="not a rosbag2 directory"):
        read_trial(tmp_path / "empty")
    mcap = path / f"{path.name}.mcap"
    truncated = tmp_path / "truncated"
    shutil.copytree(path, truncated)
    data = mcap.read_bytes()
    (truncated / mcap.name).write_bytes(data[: len(data) // 2])
    with pytest.raises(Sim2RealError, match="cannot read bag") as info:
        read_trial(truncated)
    assert "\n" not in str(info.value)
    garbage = tmp_path / "garbage"
    shutil.copytree(path, garbage)
    (garbage / mcap.name).write_bytes(b"\x89MCAP0\r\n" + bytes(range(256)) * 4)
    with pytest.raises(Sim2RealError, match="cannot read bag"):
        read_trial(garbage)
    (garbage / "metadata.yaml").unlink()
    with pytest.raises(Sim2RealError, match="not closed"):
        read_trial(garbage)
    badjson = tmp_path / "badjson"
    shutil.copytree(path, badjson)
    (badjson / "trial.json").write_text("{not json")
    with pytest.raises(Sim2RealError, match="cannot read trial file"):
        read_trial(badjson)


def test_run_directory(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_run_meta(run, {"mode": "standin", "mirror": "closed", "distances_m": [0.3, 0.35]})
    for i, d in enumerate((0.30, 0.35)):
        write_trial(run, make_trial(i, d))
    (run / ".trial_09.abc.partial").mkdir()  # a recording in progress is not a trial
    trials = read_run(run)
    assert [t.meta["initial_distance_m"] for t in trials] == [0.30, 0.35]
    meta = read_run_meta(run)
    assert meta["schema"] == "sim2real.run/1" and meta["distances_m"] == [0.3, 0.35]
    assert json.loads((run / "run.json").read_text())["mode"] == "standin"
    with pytest.raises(Sim2RealError, match="holds no trials"):
        read_run(tmp_path)


def test_pose_series_shape_checked() -> None:
    with pytest.raises(Sim2RealError, match=r"shape \(N, 4\)"):
        PoseSeries(np.zeros(3), np.zeros((3, 3)), np.zeros((3, 3)))


def test_live_writer_threads_and_bad_meta_keep_the_recording(tmp_path: Path) -> None:
    """Several executor threads write at once; a bad box size in meta does not lose the data."""
    import threading

    writer = TrialBagWriter(tmp_path, "live", start_ns=0)

    def publish(ns: str, offset: int) -> None:
        for k in range(100):
            t_ns = (offset + 4 * k) * 1_000_000
            writer.write_joint_state(ns, t_ns, np.full(6, k), np.zeros(6))
            writer.write_box_pose(ns, t_ns, [0.3, 0, 0.105], [1, 0, 0, 0])

    threads = [threading.Thread(target=publish, args=(ns, i)) for i, ns in enumerate(("real", "sim", "real", "sim"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    path = writer.close({"params": {"box.size_x": 0.0}})
    back = read_trial(path)
    assert len(back.platforms["real"].joint_states) == 200 and len(back.platforms["sim"].box_pose) == 200
    assert "box size" in back.meta["outcomes"]["real"]["error"]
    with pytest.raises(Sim2RealError, match="already closed"):
        writer.write_box_pose("real", 0, [0, 0, 0], [1, 0, 0, 0])

"""``sim2real import bag`` / ``import csv`` end to end on bags written here with ``rosbags``.

One synthetic truth (a box pushed along x by a probe, in the arm base frame, two pushes 1 s apart) is
recorded the way a motion-capture lab would: in a ``mocap`` frame (needs ``--transform``), the box
body's origin 10 cm above its centre (needs ``--box-offset``), header stamps 3-5 ms before the receive
times, one orientation flip, one position jump and one harmless quaternion sign change in the box
stream. It is written as a rosbag2 with sqlite3 storage, as a rosbag2 with mcap storage (plus
joint states with shuffled joint names) and as a ROS 1 bag (the probe on ``/tf`` under a ``world``
frame that ``/tf_static`` links to ``mocap``). The imports are checked against the truth.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rosbags.rosbag1 import Writer as Writer1
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer as Writer2
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from sim2real.cli import import_cmd, main
from sim2real.spatial import conjugate, from_axis_angle, multiply, rotate
from sim2real.trials import read_run
from sim2real.trials.cleaning import find_outliers
from sim2real.trials.recording import DEFAULT_OUTLIER_ANGLE_DEG, DEFAULT_OUTLIER_JUMP_M
from sim2real.trials.rigid import RigidTransform, parse_transform

T0_NS = 1_700_000_000_000_000_000
STEP_NS = 10_000_000
GAP_NS = 1_000_000_000
N_FIRST, N_SECOND = 120, 60
FLIP_K, JUMP_K, SIGN_K = 40, 70, 55

# the mocap frame in the arm base frame, and the ROS 1 bag's world frame in the mocap frame
BASE_FROM_MOCAP = RigidTransform(np.array([0.5, -0.2, 0.01]), multiply(from_axis_angle([0, 0, 1], np.pi / 2),
                                                                       from_axis_angle([1, 0, 0], 0.02)))
MOCAP_FROM_WORLD = RigidTransform(np.array([0.1, 0.2, -0.05]), from_axis_angle([0, 1, 1], 0.3))
BOX_OFFSET = np.array([0.01, -0.02, -0.10])  # box centre in the tracked body's frame
TRANSFORM_ARG = ",".join(f"{v:.17g}" for v in (*BASE_FROM_MOCAP.translation, *BASE_FROM_MOCAP.quaternion))
OFFSET_ARG = ",".join(f"{v:g}" for v in BOX_OFFSET)
JOINT_ORDER = ["joint3", "joint1", "gripper", "joint2", "joint6", "joint4", "joint5"]


@dataclass(frozen=True)
class Truth:
    """The synthetic recording: times ns, box centre and pusher in the base frame, what the bag holds."""

    stamp_ns: np.ndarray          # (N,) header stamps of box and joint samples
    receive_ns: np.ndarray        # (N,)
    box_position: np.ndarray      # (N, 3) box centre, base frame, m
    box_quaternion: np.ndarray    # (N, 4)
    pusher_stamp_ns: np.ndarray   # (N,)
    pusher_receive_ns: np.ndarray
    pusher_position: np.ndarray   # (N, 3) base frame
    body_position: np.ndarray     # (N, 3) tracked box body in mocap, as recorded (outliers included)
    body_quaternion: np.ndarray   # (N, 4)
    pusher_mocap: np.ndarray      # (N, 3) pusher in mocap
    pusher_q_mocap: np.ndarray    # (N, 4)
    joints: np.ndarray            # (N, 6) joint1..joint6, rad


def make_truth() -> Truth:
    k = np.concatenate([np.arange(N_FIRST), np.arange(N_SECOND)])
    first = np.arange(N_FIRST + N_SECOND) < N_FIRST
    stamp = T0_NS + np.where(first, k * STEP_NS, N_FIRST * STEP_NS + GAP_NS + k * STEP_NS).astype(np.int64)
    receive = stamp + 3_000_000 + (k % 3) * 1_000_000
    s = np.where(first, k / (N_FIRST - 1), k / (N_SECOND - 1))
    smooth = 3 * s**2 - 2 * s**3
    box_position = np.stack([0.40 + 0.05 * smooth, 0.01 * smooth, np.full_like(s, 0.105)], axis=1)
    box_quaternion = multiply(from_axis_angle([0, 0, 1], 0.2 * smooth), from_axis_angle([1, 0, 0], 0.02 * s))
    # tracked body: T_base_body = T_base_centre ∘ T_centre_body, T_centre_body = (-offset, identity)
    body_base = box_position - rotate(box_quaternion, np.broadcast_to(BOX_OFFSET, box_position.shape))
    mocap_from_base = BASE_FROM_MOCAP.inverse()
    body_position, body_quaternion = mocap_from_base.apply_poses(body_base, box_quaternion)
    body_position, body_quaternion = body_position.copy(), body_quaternion.copy()
    body_quaternion[FLIP_K] = multiply(body_quaternion[FLIP_K], np.array([0.0, 1.0, 0.0, 0.0]))  # 180° flip
    body_position[JUMP_K] += np.array([0.0, 0.12, 0.0])
    body_quaternion[SIGN_K] *= -1.0
    # the probe closes in on the box and touches its -x face at the end of each push (0.5 mm gap)
    pusher_position = np.stack([0.28 + 0.095 * smooth, np.zeros_like(s), np.full_like(s, 0.10)], axis=1)
    pusher_mocap, pusher_q_mocap = mocap_from_base.apply_poses(pusher_position, np.tile([1.0, 0, 0, 0], (s.size, 1)))
    joints = np.stack([0.1 * (j + 1) * smooth for j in range(6)], axis=1)
    return Truth(stamp, receive, box_position, box_quaternion, stamp + 2_000_000, receive + 4_000_000,
                 pusher_position, body_position, body_quaternion, pusher_mocap, pusher_q_mocap, joints)


TRUTH = make_truth()


def _time(types: dict[str, Any], t_ns: int) -> Any:
    sec, nanosec = divmod(int(t_ns), 1_000_000_000)
    return types["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec)


def _header(types: dict[str, Any], t_ns: int, frame: str, ros1: bool) -> Any:
    extra = {"seq": 0} if ros1 else {}
    return types["std_msgs/msg/Header"](stamp=_time(types, t_ns), frame_id=frame, **extra)


def _pose(types: dict[str, Any], p: np.ndarray, q: np.ndarray) -> Any:
    return types["geometry_msgs/msg/Pose"](
        position=types["geometry_msgs/msg/Point"](x=float(p[0]), y=float(p[1]), z=float(p[2])),
        orientation=types["geometry_msgs/msg/Quaternion"](x=float(q[1]), y=float(q[2]), z=float(q[3]), w=float(q[0])))


def _transform(types: dict[str, Any], t_ns: int, parent: str, child: str, p: np.ndarray, q: np.ndarray,
               ros1: bool) -> Any:
    return types["geometry_msgs/msg/TransformStamped"](
        header=_header(types, t_ns, parent, ros1), child_frame_id=child,
        transform=types["geometry_msgs/msg/Transform"](
            translation=types["geometry_msgs/msg/Vector3"](x=float(p[0]), y=float(p[1]), z=float(p[2])),
            rotation=types["geometry_msgs/msg/Quaternion"](x=float(q[1]), y=float(q[2]), z=float(q[3]),
                                                           w=float(q[0]))))


def _messages(types: dict[str, Any], ros1: bool, joints: bool) -> list[tuple[int, str, str, Any]]:
    """(receive ns, topic, msgtype, message) of the whole recording, in receive order."""
    truth = TRUTH
    out: list[tuple[int, str, str, Any]] = []
    box_frame = "/mocap" if ros1 else "mocap"
    for k in range(truth.stamp_ns.size):
        out.append((int(truth.receive_ns[k]), "/vrpn/box/pose", "geometry_msgs/msg/PoseStamped",
                    types["geometry_msgs/msg/PoseStamped"](
                        header=_header(types, truth.stamp_ns[k], box_frame, ros1),
                        pose=_pose(types, truth.body_position[k], truth.body_quaternion[k]))))
        if ros1:  # the probe under "world", which /tf_static places in "mocap"
            p, q = MOCAP_FROM_WORLD.inverse().apply_poses(truth.pusher_mocap[k:k + 1], truth.pusher_q_mocap[k:k + 1])
            parent, p, q = "/world", p[0], q[0]
        else:
            parent, p, q = "mocap", truth.pusher_mocap[k], truth.pusher_q_mocap[k]
        transforms = [_transform(types, truth.pusher_stamp_ns[k], parent, "probe", p, q, ros1),
                      _transform(types, truth.pusher_stamp_ns[k], parent, "table_marker", np.zeros(3),
                                 np.array([1.0, 0, 0, 0]), ros1)]
        out.append((int(truth.pusher_receive_ns[k]), "/tf", "tf2_msgs/msg/TFMessage",
                    types["tf2_msgs/msg/TFMessage"](transforms=transforms)))
        if joints:
            values = {f"joint{j + 1}": truth.joints[k, j] for j in range(6)} | {"gripper": 0.5}
            position = np.array([values[name] for name in JOINT_ORDER])
            out.append((int(truth.receive_ns[k]) + 1, "/joint_states", "sensor_msgs/msg/JointState",
                        types["sensor_msgs/msg/JointState"](
                            header=_header(types, truth.stamp_ns[k], "", ros1), name=list(JOINT_ORDER),
                            position=position, velocity=np.zeros(7), effort=np.zeros(7))))
    if ros1:
        static = _transform(types, T0_NS, "mocap", "/world", MOCAP_FROM_WORLD.translation,
                            MOCAP_FROM_WORLD.quaternion, ros1)
        out.append((T0_NS, "/tf_static", "tf2_msgs/msg/TFMessage", types["tf2_msgs/msg/TFMessage"](
            transforms=[static])))
    out.sort(key=lambda m: m[0])
    return out


def write_ros2_bag(path: Path, storage: StoragePlugin, joints: bool) -> Path:
    typestore = get_typestore(Stores.ROS2_KILTED)
    with Writer2(path, version=9, storage_plugin=storage) as writer:
        connections: dict[str, Any] = {}
        for receive, topic, msgtype, msg in _messages(typestore.types, ros1=False, joints=joints):
            if topic not in connections:
                connections[topic] = writer.add_connection(topic, msgtype, typestore=typestore)
            writer.write(connections[topic], receive, typestore.serialize_cdr(msg, msgtype))
    return path


def write_ros1_bag(path: Path) -> Path:
    typestore = get_typestore(Stores.ROS1_NOETIC)  # has no tf2_msgs: registered from its definition
    typestore.register(get_types_from_msg("geometry_msgs/TransformStamped[] transforms\n", "tf2_msgs/msg/TFMessage"))
    with Writer1(path) as writer:
        connections: dict[str, Any] = {}
        for receive, topic, msgtype, msg in _messages(typestore.types, ros1=True, joints=False):
            if topic not in connections:
                connections[topic] = writer.add_connection(topic, msgtype, typestore=typestore)
            writer.write(connections[topic], receive, typestore.serialize_ros1(msg, msgtype))
    return path


@pytest.fixture(scope="module")
def bags(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bags")
    return {
        "sqlite3": write_ros2_bag(root / "lab_sqlite", StoragePlugin.SQLITE3, joints=False),
        "mcap": write_ros2_bag(root / "lab_mcap", StoragePlugin.MCAP, joints=True),
        "ros1": write_ros1_bag(root / "lab_ros1.bag"),
    }


def _import(bag: Path, out: Path, *extra: str) -> int:
    return main(["import", "bag", str(bag), "--box-pose", "/vrpn/box/pose", "--pusher-pose", "tf:probe",
                 "--transform", TRANSFORM_ARG, "--box-offset", OFFSET_ARG, "--out", str(out), *extra])


def _stamps(t: np.ndarray, start_ns: int) -> np.ndarray:
    return start_ns + np.round(t * 1e9).astype(np.int64)


def _check_poses(trial: Any, clock_ns: np.ndarray, pusher_clock_ns: np.ndarray, expected_box: np.ndarray) -> None:
    """Box and pusher samples of an imported trial equal the truth at the same times (1e-6)."""
    start = trial.meta["timing"]["start_ns"]
    box, pusher = trial.platforms["real"].box_pose, trial.platforms["real"].pusher_pose
    box_ns = _stamps(box.t, start)
    np.testing.assert_array_equal(box_ns, clock_ns[expected_box])
    np.testing.assert_allclose(box.position, TRUTH.box_position[expected_box], atol=1e-6, rtol=0)
    same_sign = np.sign(np.sum(box.quaternion * TRUTH.box_quaternion[expected_box], axis=1))[:, None]
    np.testing.assert_allclose(box.quaternion * same_sign, TRUTH.box_quaternion[expected_box], atol=1e-6, rtol=0)
    pusher_rows = np.flatnonzero((pusher_clock_ns >= box_ns[0]) & (pusher_clock_ns <= box_ns[-1]))
    np.testing.assert_array_equal(_stamps(pusher.t, start), pusher_clock_ns[pusher_rows])
    np.testing.assert_allclose(pusher.position, TRUTH.pusher_position[pusher_rows], atol=1e-6, rtol=0)
    assert start == box_ns[0]


@pytest.mark.parametrize("fmt", ["sqlite3", "mcap", "ros1"])
def test_import_splits_maps_frames_and_drops_outliers(bags: dict[str, Path], fmt: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "imported"
    extra = ["--joint-states", "/joint_states"] if fmt == "mcap" else []
    assert _import(bags[fmt], out, "--split", "gaps:0.5", *extra) == 0
    captured = capsys.readouterr()
    assert "wrote 2 trials" in captured.out
    assert "box_pose 1 orientation flip, 1 position jump; pusher_pose none" in captured.err
    stem = bags[fmt].name.removesuffix(".bag")
    trials = read_run(out)
    assert [t.name for t in trials] == [f"{stem}_00", f"{stem}_01"]
    first = np.arange(TRUTH.stamp_ns.size) < N_FIRST
    expected = [np.flatnonzero(first & ~np.isin(np.arange(first.size), [FLIP_K, JUMP_K])), np.flatnonzero(~first)]
    for trial, rows in zip(trials, expected, strict=True):
        _check_poses(trial, TRUTH.stamp_ns, TRUTH.pusher_stamp_ns, rows)
        assert trial.meta["mode"] == "import" and trial.meta["frame"] == "link_base"
    outliers = trials[0].meta["import"]["outliers"]
    assert outliers["box_pose"] == {"orientation_flips": 1, "position_jumps": 1, "invalid": 0, "duplicate_stamps": 0}
    assert outliers["pusher_pose"] == {"orientation_flips": 0, "position_jumps": 0, "invalid": 0,
                                       "duplicate_stamps": 0}
    assert set(trials[1].meta["import"]["outliers"]["box_pose"].values()) == {0}
    section = trials[0].meta["import"]
    assert section["clock"] == "header" and section["recording_frame"] == "mocap"
    assert section["format"] == {"sqlite3": "rosbag2/sqlite3", "mcap": "rosbag2/mcap", "ros1": "rosbag1"}[fmt]
    assert section["series"] == {"box_pose": "/vrpn/box/pose", "pusher_pose": "tf:probe",
                                 **({"joint_states": "/joint_states"} if extra else {})}
    np.testing.assert_allclose(section["transform"]["translation_m"], BASE_FROM_MOCAP.translation)
    np.testing.assert_allclose(section["box_offset"]["translation_m"], BOX_OFFSET)
    assert section["window_s"][0] == 0.0 and section["window_s"][1] == pytest.approx((N_FIRST - 1) * 0.01)
    if fmt == "ros1":
        assert section["static_chains"] == {"world": ["world", "mocap"]}
    if fmt == "mcap":  # joint names reordered to joint1..joint6, extra joints ignored
        joints = trials[0].platforms["real"].joint_states
        np.testing.assert_array_equal(joints.position, TRUTH.joints[first])
    run = json.loads((out / "run.json").read_text())
    assert run["mode"] == "import" and run["trials"] == [t.name for t in trials]


def test_receive_clock_windows_and_no_split(bags: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "receive"
    assert _import(bags["sqlite3"], out, "--clock", "receive", "--split", "gaps:0.5") == 0
    trial = read_run(out)[0]
    rows = np.flatnonzero(~np.isin(np.arange(N_FIRST), [FLIP_K, JUMP_K]))
    _check_poses(trial, TRUTH.receive_ns, TRUTH.pusher_receive_ns, rows)
    assert trial.meta["import"]["clock"] == "receive"

    windows = tmp_path / "windows.csv"
    windows.write_text("# s since the first sample\nstart,end\n0.0,0.5\n2.2,2.79\n")
    out = tmp_path / "windows"
    assert _import(bags["mcap"], out, "--split", f"windows:{windows}") == 0
    first, second = read_run(out)
    assert len(first.platforms["real"].box_pose) == 51 - 1  # 0.00-0.50 s, the flip at 0.40 s dropped
    assert first.meta["import"]["outliers"]["box_pose"]["orientation_flips"] == 1
    # the second push starts at 1.2 + 1.0 s: 2.20-2.79 s holds its first 60 poses
    _check_poses(second, TRUTH.stamp_ns, TRUTH.pusher_stamp_ns, np.arange(N_FIRST, N_FIRST + N_SECOND))

    out = tmp_path / "whole"
    assert _import(bags["ros1"], out) == 0
    (whole,) = read_run(out)
    assert whole.name == "lab_ros1" and len(whole.platforms["real"].box_pose) == TRUTH.stamp_ns.size - 2


def test_imported_pusher_trial_replays(bags: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "imported"
    # the trial carries what replays it (an imported trial without its object is refused, never defaulted)
    assert _import(bags["sqlite3"], out, "--split", "gaps:0.5", "--box-size", "0.11,0.13,0.21", "--box-mass", "0.5",
                   "--pusher-shape", "sphere", "--pusher-radius", "0.02") == 0
    replayed = tmp_path / "replayed"
    assert main(["replay", str(out / "lab_sqlite_01"), "--out", str(replayed)]) == 0
    (trial,) = read_run(replayed)
    assert trial.meta["mirror"] == "pusher" and "sim" in trial.platforms


def test_csv_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "push.csv"
    rows = ["# exported from the lab's tracker", "box_qw,t,box_x,box_y,box_z,box_qx,box_qy,box_qz,pusher_x,pusher_y,"
            "pusher_z,note"]
    for k in range(N_FIRST):
        p, q, pusher = TRUTH.body_position[k], TRUTH.body_quaternion[k], TRUTH.pusher_mocap[k]
        t = f"{TRUTH.stamp_ns[k] // 10**9}.{TRUTH.stamp_ns[k] % 10**9:09d}"
        pusher_cells = ",,," if k == 5 else ",".join(f"{v:.17g}" for v in pusher) + ","
        x = "nan" if k == 100 else f"{p[0]:.17g}"  # tracking lost: invalid
        rows.append(f"{q[0]:.17g},{t},{x},{p[1]:.17g},{p[2]:.17g},{q[1]:.17g},{q[2]:.17g},{q[3]:.17g},"
                    f"{pusher_cells}x")
        if k == 110:  # the exporter repeated a row: a repeated stamp
            rows.append(rows[-1])
    path.write_text("\n".join(rows) + "\n")
    out = tmp_path / "csv_run"
    assert main(["import", "csv", str(path), "--transform", TRANSFORM_ARG, "--box-offset", OFFSET_ARG,
                 "--out", str(out)]) == 0
    assert "box_pose 1 orientation flip, 1 position jump, 1 invalid, 1 repeated stamp" in capsys.readouterr().err
    (trial,) = read_run(out)
    assert trial.meta["import"]["outliers"]["box_pose"] == {"orientation_flips": 1, "position_jumps": 1,
                                                           "invalid": 1, "duplicate_stamps": 1}
    rows_kept = np.flatnonzero(~np.isin(np.arange(N_FIRST), [FLIP_K, JUMP_K, 100]))
    box = trial.platforms["real"].box_pose
    np.testing.assert_array_equal(_stamps(box.t, trial.meta["timing"]["start_ns"]), TRUTH.stamp_ns[rows_kept])
    np.testing.assert_allclose(box.position, TRUTH.box_position[rows_kept], atol=1e-6, rtol=0)
    pusher = trial.platforms["real"].pusher_pose
    assert len(pusher) == N_FIRST - 1
    np.testing.assert_allclose(pusher.position, np.delete(TRUTH.pusher_position[:N_FIRST], 5, axis=0), atol=1e-6)
    assert trial.meta["import"]["format"] == "csv"

    bad = tmp_path / "bad.csv"
    bad.write_text("t,box_x,box_y,box_z,box_qw,box_qx,box_qy\n0,0,0,0,1,0,0\n")
    assert main(["import", "csv", str(bad), "--out", str(tmp_path / "bad_run")]) == 2
    assert "missing columns box_qz" in capsys.readouterr().err
    bad.write_text("t,box_x,box_y,box_z,box_qw,box_qx,box_qy,box_qz\n0,0,0,0,1,0,0,0\n0.1,0,zero,0,1,0,0,0\n")
    assert main(["import", "csv", str(bad), "--out", str(tmp_path / "bad_run")]) == 2
    assert "line 3: column box_y: 'zero' is not a number" in capsys.readouterr().err
    assert not (tmp_path / "bad_run").exists()


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.startswith("sim2real: error:") and err.count("\n") == 1, err
    return err


def test_errors_are_one_line_and_write_nothing(bags: dict[str, Path], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    cases: list[tuple[list[str], list[str]]] = [
        (["--box-pose", "/nope"], ["error: --box-pose: ", "has no topic /nope (the box source",
                                   "/vrpn/box/pose (geometry_msgs/msg/PoseStamped)", "/tf (tf2_msgs/msg/TFMessage)"]),
        (["--box-pose", "/vrpn/box/pose", "--pusher-pose", "tf:nothing"],
         ["no transform on /tf has child frame 'nothing'", "child frames on /tf: probe, table_marker"]),
        (["--box-pose", "/vrpn/box/pose", "--joint-states", "/joints"],
         ["error: --joint-states: ", "has no topic /joints (the joint states"]),
        (["--box-pose", "/tf"], ["name the tracked child frame as tf:FRAME"]),
        (["--box-pose", "/vrpn/box/pose", "--pusher-pose", "tf:probe", "--frame", "link_base"],
         ["poses are in frame 'mocap', not the recording frame 'link_base'"]),
        (["--box-pose", "/vrpn/box/pose", "--transform", "1,2,3"], ["expected x,y,z,qw,qx,qy,qz"]),
        (["--box-pose", "/vrpn/box/pose", "--transform", "0,0,0,0,0,0,2"], ["has norm 2"]),
        (["--box-pose", "/vrpn/box/pose", "--split", "gaps:-1"], ["positive number of seconds"]),
        (["--box-pose", "/vrpn/box/pose", "--split", "windows:" + str(tmp_path / "none.csv")],
         ["windows file not found"]),
    ]
    for bag in ("mcap", "ros1"):
        for options, expected in cases:
            assert main(["import", "bag", str(bags[bag]), *options, "--out", str(out)]) == 2, options
            err = _one_line_error(capsys)
            for text in expected:
                assert text in err, (bag, options, err)
    # a window list that selects nothing: no trial, nothing written (the failure comes after reading)
    windows = tmp_path / "far.csv"
    windows.write_text("100,101\n")
    assert main(["import", "bag", str(bags["sqlite3"]), "--box-pose", "/vrpn/box/pose", "--split",
                 f"windows:{windows}", "--out", str(out)]) == 2
    skipped, error = capsys.readouterr().err.splitlines()
    assert "window 0 (100.000-101.000 s): skipped, 0 box poses" in skipped
    assert error.startswith("sim2real: error:") and "no trial with at least 3 box poses" in error
    assert main(["import", "bag", str(tmp_path / "missing.bag"), "--box-pose", "/x", "--out", str(out)]) == 2
    assert "does not exist" in _one_line_error(capsys)
    not_a_bag = tmp_path / "notes.txt"
    not_a_bag.write_text("hello")
    assert main(["import", "bag", str(not_a_bag), "--box-pose", "/x", "--out", str(out)]) == 2
    assert "is not a bag" in _one_line_error(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["far.csv", "notes.txt"]
    # an existing empty directory is used, a non-empty one refused
    out.mkdir()
    assert _import(bags["sqlite3"], out) == 0
    capsys.readouterr()
    assert _import(bags["sqlite3"], out) == 2
    assert "already exists and is not empty" in _one_line_error(capsys)
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []


def test_outlier_rule() -> None:
    """Sign changes are no outliers; a single flip or jump is; two in a row are not detected."""
    n = 10
    position = np.zeros((n, 3))
    position[:, 0] = np.linspace(0.0, 0.09, n)
    quaternion = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
    quaternion[3] *= -1.0
    quaternion[5] = [0.0, 0.0, 0.0, 1.0]
    position[7] += [0.0, 0.0, 0.5]
    flips, jumps = find_outliers(position, quaternion, np.radians(30.0), 0.03)
    assert np.flatnonzero(flips).tolist() == [5] and np.flatnonzero(jumps).tolist() == [7]
    position[8] += [0.0, 0.0, 0.5]
    assert not find_outliers(position, quaternion, np.radians(30.0), 0.03)[1].any()
    assert not any(m.any() for m in find_outliers(position, quaternion, 0.0, 0.0))


def test_transform_parsing_and_help_defaults() -> None:
    transform = parse_transform("1,2,3,0,0,0,1")
    np.testing.assert_allclose(transform.apply_poses(np.array([[1.0, 0, 0]]), np.array([[1.0, 0, 0, 0]]))[0],
                               [[0.0, 2.0, 3.0]], atol=1e-15)
    round_trip = transform.compose(transform.inverse())
    np.testing.assert_allclose(round_trip.translation, 0.0, atol=1e-15)
    np.testing.assert_allclose(np.abs(multiply(round_trip.quaternion, conjugate(round_trip.quaternion))),
                               [1.0, 0, 0, 0], atol=1e-15)
    assert import_cmd.OUTLIER_ANGLE_DEG == DEFAULT_OUTLIER_ANGLE_DEG
    assert import_cmd.OUTLIER_JUMP_M == DEFAULT_OUTLIER_JUMP_M

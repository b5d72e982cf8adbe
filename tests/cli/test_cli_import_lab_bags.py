"""Another lab's bags, imported with options only (no user code), then replayed with no ``--set``.

The recording is written here the way a planar-pushing lab's tools write it, as a ROS 1 bag and as a
rosbag2 (mcap): a flat steel block (99 x 99 x 9.5 mm) tracked by Vicon in a ``world`` frame whose
origin sits off the block centre; the static transform from ``world`` to the robot's ``base_link`` on
``/tf`` only (ROS 1's static publisher repeats it there), never on ``/tf_static``; the probe's pose
(``PoseStamped``) with an empty ``frame_id``; and the robot's own Cartesian log, a custom message
without a header: the tool flange in millimetres, its quaternion ``q0, qx, qy, qz``, a controller
clock in seconds and date and time strings. The probe tip is 0.17 m beyond the flange along the
flange's z axis (pointing down).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rosbags.rosbag1 import Writer as Writer1
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer as Writer2
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from sim2real.cli import main
from sim2real.spatial import from_axis_angle, multiply, rotate
from sim2real.trials import read_run
from sim2real.trials.rigid import RigidTransform

T0_NS = 1_712_000_000_000_000_000
STEP_NS = 10_000_000
N = 121                                   # 1.2 s at 100 Hz
SIZE = (0.099, 0.099, 0.0095)             # m
DENSITY = 7850.0                          # kg/m^3
TIP_BEYOND_FLANGE = 0.17                  # m, along the flange z axis
LOG_LATENCY_NS = 4_000_000                # the Cartesian log arrives 4 ms after the instant it reports
CONTROLLER_CLOCK_S = 1234.5               # the controller clock at T0
#: The Vicon world in the robot base (T_base_world), and the Vicon body origin in the block's frame.
BASE_FROM_WORLD = RigidTransform(np.array([0.62, -0.35, -0.012]), from_axis_angle([0, 0, 1], np.pi / 2))
VICON_ORIGIN_IN_BLOCK = np.array([0.006, -0.004, 0.012])
FLANGE_DOWN = np.array([0.0, 1.0, 0.0, 0.0])  # 180 degrees about x: flange z points down
CARTESIAN_LOG_MSG = """float64 x
float64 y
float64 z
float64 q0
float64 qx
float64 qy
float64 qz
float64 clock
string date
string time
"""
LOG_TYPE = "lab_msgs/msg/CartesianLog"


def _truth() -> dict[str, np.ndarray]:
    """Block centre and probe tip in the base frame at each sample, and the block's orientation."""
    s = np.linspace(0.0, 1.0, N)
    tip = np.stack([0.30 + 0.12 * s, 0.004 * np.ones(N), np.full(N, 0.003)], axis=1)
    moved = np.clip(tip[:, 0] + 0.0031 + SIZE[0] / 2 - 0.40, 0.0, None)  # the probe reaches the block at s ~ 0.8
    centre = np.stack([0.40 + moved, 0.002 + 0.3 * moved, np.full(N, SIZE[2] / 2)], axis=1)
    quaternion = np.array([from_axis_angle([0, 0, 1], 4.0 * m) for m in moved])
    stamps = T0_NS + STEP_NS * np.arange(N, dtype=np.int64)
    return {"stamp": stamps, "centre": centre, "quaternion": quaternion, "tip": tip}


TRUTH = _truth()


def _types(ros1: bool) -> Any:
    store = get_typestore(Stores.ROS1_NOETIC if ros1 else Stores.ROS2_KILTED)
    if ros1:
        store.register(get_types_from_msg("geometry_msgs/TransformStamped[] transforms\n", "tf2_msgs/msg/TFMessage"))
    store.register(get_types_from_msg(CARTESIAN_LOG_MSG, LOG_TYPE))
    return store


def _header(t: Any, t_ns: int, frame: str, ros1: bool) -> Any:
    sec, nanosec = divmod(int(t_ns), 1_000_000_000)
    return t["std_msgs/msg/Header"](stamp=t["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec), frame_id=frame,
                                    **({"seq": 0} if ros1 else {}))


def _quat(t: Any, q: np.ndarray) -> Any:
    return t["geometry_msgs/msg/Quaternion"](w=float(q[0]), x=float(q[1]), y=float(q[2]), z=float(q[3]))


def _pose_stamped(t: Any, t_ns: int, frame: str, p: np.ndarray, q: np.ndarray, ros1: bool) -> Any:
    point = t["geometry_msgs/msg/Point"](x=float(p[0]), y=float(p[1]), z=float(p[2]))
    return t["geometry_msgs/msg/PoseStamped"](header=_header(t, t_ns, frame, ros1),
                                              pose=t["geometry_msgs/msg/Pose"](position=point, orientation=_quat(t, q)))


def _static_on_tf(t: Any, t_ns: int, ros1: bool) -> Any:
    """world -> base_link as ROS 1's static publisher sends it: on /tf, again and again."""
    world_from_base = BASE_FROM_WORLD.inverse()
    p = world_from_base.translation
    transform = t["geometry_msgs/msg/TransformStamped"](
        header=_header(t, t_ns, "world", ros1), child_frame_id="base_link",
        transform=t["geometry_msgs/msg/Transform"](
            translation=t["geometry_msgs/msg/Vector3"](x=float(p[0]), y=float(p[1]), z=float(p[2])),
            rotation=_quat(t, world_from_base.quaternion)))
    return t["tf2_msgs/msg/TFMessage"](transforms=[transform])


def _messages(store: Any, ros1: bool) -> list[tuple[int, str, str, Any]]:
    t = store.types
    world_from_base = BASE_FROM_WORLD.inverse()
    out: list[tuple[int, str, str, Any]] = []
    for k in range(N):
        stamp = int(TRUTH["stamp"][k])
        q_block = TRUTH["quaternion"][k]
        body = TRUTH["centre"][k] + rotate(q_block, VICON_ORIGIN_IN_BLOCK)  # Vicon origin off the centre
        p_world, q_world = world_from_base.apply_poses(body[None], q_block[None])
        out.append((stamp + 2_000_000, "/vicon/steel/pose", "geometry_msgs/msg/PoseStamped",
                    _pose_stamped(t, stamp, "world", p_world[0], q_world[0], ros1)))
        out.append((stamp + 3_000_000, "/probe/pose", "geometry_msgs/msg/PoseStamped",
                    _pose_stamped(t, stamp, "", TRUTH["tip"][k], np.array([1.0, 0, 0, 0]), ros1)))
        flange = TRUTH["tip"][k] - rotate(FLANGE_DOWN, np.array([0.0, 0.0, TIP_BEYOND_FLANGE]))
        log = t[LOG_TYPE](x=1000 * flange[0], y=1000 * flange[1], z=1000 * flange[2], q0=FLANGE_DOWN[0],
                          qx=FLANGE_DOWN[1], qy=FLANGE_DOWN[2], qz=FLANGE_DOWN[3],
                          clock=CONTROLLER_CLOCK_S + k * STEP_NS / 1e9, date="2024-04-01",
                          time=f"12:00:{k / 100:05.2f}")
        jitter = (k % 3) * 700_000
        out.append((stamp + LOG_LATENCY_NS + jitter, "/arm/cartesian_log", LOG_TYPE, log))
        if k % 10 == 0:
            out.append((stamp + 1_000_000, "/tf", "tf2_msgs/msg/TFMessage", _static_on_tf(t, stamp, ros1)))
    out.sort(key=lambda m: m[0])
    return out


def write_lab_bag(path: Path, ros1: bool) -> Path:
    store = _types(ros1)
    writer_type = Writer1 if ros1 else Writer2
    options: dict[str, Any] = {} if ros1 else {"version": 9, "storage_plugin": StoragePlugin.MCAP}
    with writer_type(path, **options) as writer:
        connections: dict[str, Any] = {}
        for receive, topic, msgtype, msg in _messages(store, ros1):
            if topic not in connections:
                connections[topic] = writer.add_connection(topic, msgtype, typestore=store)
            raw = store.serialize_ros1(msg, msgtype) if ros1 else store.serialize_cdr(msg, msgtype)
            writer.write(connections[topic], receive, raw)
    return path


@pytest.fixture(scope="module", params=["ros1", "ros2"])
def lab_bag(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lab")
    ros1 = request.param == "ros1"
    return write_lab_bag(root / ("steel_push_03.bag" if ros1 else "steel_push_03"), ros1)


BLOCK = ["--box-pose", "/vicon/steel/pose", "--frame", "base_link",
         "--box-offset=" + ",".join(f"{-v:g}" for v in VICON_ORIGIN_IN_BLOCK)]
OBJECT = ["--box-size", ",".join(f"{v:g}" for v in SIZE), "--box-density", f"{DENSITY:g}", "--pusher-shape", "rod",
          "--pusher-radius", "0.0031", "--object", "steel"]
PROBE = ["--pusher-pose", "/probe/pose", "--frame", "/probe/pose=base_link"]
ROBOT_LOG = ["--pusher-pose", "/arm/cartesian_log:x,y,z,q0,qx,qy,qz", "--units", "mm",
             "--frame", "/arm/cartesian_log=base_link", "--stamp-field", "/arm/cartesian_log=clock",
             "--tool-offset", f"0,0,{TIP_BEYOND_FLANGE}"]


def _import(bag: Path, out: Path, *options: str) -> int:
    return main(["import", "bag", str(bag), *BLOCK, *options, "--out", str(out)])


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert err, "no error printed"
    return err[-1]


def test_block_and_probe_come_into_the_base_frame_through_a_static_transform_on_tf(lab_bag: Path,
                                                                                    tmp_path: Path) -> None:
    assert _import(lab_bag, tmp_path / "run", *PROBE, *OBJECT) == 0
    (trial,) = read_run(tmp_path / "run")
    real = trial.platforms["real"]
    np.testing.assert_allclose(real.box_pose.position, TRUTH["centre"], atol=1e-9)
    np.testing.assert_allclose(np.abs(np.sum(real.box_pose.quaternion * TRUTH["quaternion"], axis=1)), 1.0,
                               atol=1e-9)
    np.testing.assert_allclose(real.pusher_pose.position, TRUTH["tip"], atol=1e-9)
    meta = json.loads((tmp_path / "run" / trial.name / "trial.json").read_text())
    assert meta["import"]["static_from_tf"] == {"base_link": "world"}
    assert meta["object"]["name"] == "steel" and meta["object"]["pusher_shape"] == "rod"
    params = meta["object"]["parameters"]
    assert params["box.size_z"] == pytest.approx(0.0095)
    assert params["box.mass"] == pytest.approx(DENSITY * SIZE[0] * SIZE[1] * SIZE[2])


def test_a_headerless_robot_log_in_mm_with_a_clock_field_is_a_pusher_source(lab_bag: Path, tmp_path: Path) -> None:
    assert _import(lab_bag, tmp_path / "run", *ROBOT_LOG, *OBJECT) == 0
    (trial,) = read_run(tmp_path / "run")
    pusher = trial.platforms["real"].pusher_pose
    np.testing.assert_allclose(pusher.position, TRUTH["tip"], atol=1e-9)  # mm -> m, flange -> tip
    box = trial.platforms["real"].box_pose
    # the clock field keeps the controller's even spacing (no receive jitter), placed on the receive clock
    spacing = np.diff(pusher.t)
    np.testing.assert_allclose(spacing, STEP_NS / 1e9, atol=1e-9)
    lag = (pusher.t[0] - box.t[0])
    assert 0.0 <= lag <= (LOG_LATENCY_NS + 1_400_000) / 1e9 + 1e-9
    meta = json.loads((tmp_path / "run" / trial.name / "trial.json").read_text())
    assert "clock field 'clock'" in meta["import"]["stream_timing"]["/arm/cartesian_log"]
    assert meta["import"]["streams"]["/arm/cartesian_log"]["unit"] == "mm"


def test_an_imported_trial_replays_with_its_own_object_and_no_set(lab_bag: Path, tmp_path: Path) -> None:
    assert _import(lab_bag, tmp_path / "run", *PROBE, *OBJECT) == 0
    (trial,) = read_run(tmp_path / "run")
    assert main(["replay", str(tmp_path / "run" / trial.name), "--out", str(tmp_path / "replayed")]) == 0
    (replayed,) = read_run(tmp_path / "replayed")
    assert replayed.meta["pusher_shape"] == "rod"
    assert replayed.meta["params"]["box.size_z"] == pytest.approx(0.0095)
    assert replayed.meta["params"]["pusher.radius"] == pytest.approx(0.0031)
    sim_box = replayed.platforms["sim"].box_pose
    assert abs(sim_box.position[0, 2] - SIZE[2] / 2) < 1e-3  # the steel block on the table, not a default box


def test_a_trial_without_its_object_is_refused_by_replay_naming_it(lab_bag: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert _import(lab_bag, tmp_path / "run", *PROBE) == 0
    assert "no object given" in capsys.readouterr().err
    (trial,) = read_run(tmp_path / "run")
    assert main(["replay", str(tmp_path / "run" / trial.name), "--out", str(tmp_path / "replayed")]) == 2
    line = _error(capsys)
    assert f"'{trial.name}'" in line and "carries no object" in line and "the box's size" in line
    assert not (tmp_path / "replayed").exists()


def test_a_box_that_would_start_inside_the_table_is_refused(lab_bag: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    tall = [v if v != ",".join(f"{s:g}" for s in SIZE) else "0.099,0.099,0.21" for v in OBJECT]
    # the import refuses this scene itself (the box 100 mm inside the table); --force keeps it, to test replay's check
    assert _import(lab_bag, tmp_path / "run", *PROBE, *tall) == 2
    assert "100.2 mm inside the table" in _error(capsys) and not (tmp_path / "run").exists()
    assert _import(lab_bag, tmp_path / "run", *PROBE, *tall, "--force") == 0
    (trial,) = read_run(tmp_path / "run")
    assert main(["replay", str(tmp_path / "run" / trial.name), "--out", str(tmp_path / "replayed")]) == 2
    line = _error(capsys)
    assert f"'{trial.name}'" in line and "inside the table" in line


@pytest.mark.parametrize(("options", "expected"), [
    (["--pusher-pose", "/arm/cartesian_log"], "name its fields instead: /arm/cartesian_log:X,Y,Z"),
    (["--pusher-pose", "/probe/pose"], ("error: --frame: ", "give its stream frame /probe/pose=FRAME")),
    (["--pusher-pose", "/arm/cartesian_log:x,y,z", "--units", "mm", "--frame", "/arm/cartesian_log=base_link",
      "--tool-offset", "0,0,0.17"], "gives positions only"),
    (["--pusher-pose", "/arm/cartesian_log:x,y,zz", "--frame", "/arm/cartesian_log=base_link"],
     "has no field 'zz' (fields here: x, y, z, q0"),
    ([*PROBE, "--units", "/probe/pose=inch"], "--units: stream unit 'inch'"),
    ([*PROBE, "--frame", "/nowhere=base_link"],
     "--frame: the stream frame names /nowhere, which is not a selected pose source"),
    ([*PROBE, "--box-size", "0.1,0.1", "--box-mass", "1", "--pusher-shape", "rod", "--pusher-radius", "0.003"],
     "--box-size '0.1,0.1'"),
    ([*PROBE, "--box-size", "0.1,0.1,0.1", "--pusher-shape", "rod", "--pusher-radius", "0.003"],
     "--box-mass: give the box's mass (kg) or its density"),
])
def test_bad_import_options_fail_in_one_line_and_write_nothing(lab_bag: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str],
                                                               options: list[str],
                                                               expected: str | tuple[str, ...]) -> None:
    out = tmp_path / "run"
    assert _import(lab_bag, out, *options) == 2
    line = _error(capsys)
    assert all(part in line for part in ((expected,) if isinstance(expected, str) else expected)), line
    assert not out.exists()


def test_block_turn_is_kept_in_the_base_frame() -> None:
    """The truth itself turns the block (so that the orientation test above means something)."""
    turn = 2 * np.degrees(np.arccos(np.clip(np.abs(multiply(TRUTH["quaternion"][-1],
                                                            np.array([1.0, 0, 0, 0]))[0]), 0, 1)))
    assert turn > 5.0

"""The last holes in bad-input handling (issue 58), in the form of ``test_cli_bad_input.py``: each case is
the real ``sim2real`` command in a child, in a directory of its own with a canary file; it must give one
line on stderr (``error:``, the expected words) and exit 2, before any work, and leave the directory
byte for byte as it was. A hang shows as a timeout.

The holes: a box pose without orientation taken as never tilted (``import bag --planar`` now says the
box cannot tilt, and its tilt, flip and heading are recorded as unknown); per-object fit outputs that
collide or exist, found only after the fit; FIFOs read as bags and trials (a hang); a bad stand-in world
and a bad ros2_control controller name found only by a child; and silent accepts of empty lists,
repeated inputs, absurd offsets and a params file that is not YAML.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from children import HANG_GUARD_S
from fixtures.synthetic_trials import make_trial
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from sim2real.trials import write_run_meta, write_trial
from sim2real.trials.trial_object import TrialObject

#: Every test here may start ROS 2 (in a child, to refuse): its own domain and log directory.
pytestmark = pytest.mark.usefixtures("ros_child_env")

ROOT = Path(__file__).resolve().parents[2]
OBJECT = ["--box-size", "0.11,0.13,0.21", "--box-mass", "0.5", "--pusher-shape", "sphere", "--pusher-radius", "0.01"]
#: The box source of positions only (no quaternion fields).
POSITIONS = "/box/pose:pose.position.x,pose.position.y,pose.position.z"


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "sim2real", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=HANG_GUARD_S)


def _snapshot(directory: Path) -> dict[str, bytes | None]:
    """Every path under ``directory``: file contents (None for directories and FIFOs)."""
    return {str(p.relative_to(directory)): p.read_bytes() if p.is_file() else None
            for p in sorted(directory.rglob("*"))}


def _pose_bag(path: Path, flip: bool = False) -> Path:
    """A rosbag2 (mcap) of a box (``/box/pose``) pushed 5 cm along x by a probe (``/probe/pose``), both
    PoseStamped in ``world`` at z = 0.2 m, 30 samples at 100 Hz; with ``flip`` the box turns over about x
    meanwhile."""
    store = get_typestore(Stores.ROS2_KILTED)
    types = store.types
    pose_type = "geometry_msgs/msg/PoseStamped"
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        box = writer.add_connection("/box/pose", pose_type, typestore=store)
        probe = writer.add_connection("/probe/pose", pose_type, typestore=store)
        for k in range(30):
            t_ns = 1_700_000_000_000_000_000 + k * 10_000_000
            angle = math.pi * k / 29 if flip else 0.0
            for connection, x, q in ((box, 0.40 + 0.05 * k / 29, (math.cos(angle / 2), math.sin(angle / 2))),
                                     (probe, 0.30 + 0.05 * k / 29, (1.0, 0.0))):
                msg = types[pose_type](
                    header=types["std_msgs/msg/Header"](
                        stamp=types["builtin_interfaces/msg/Time"](sec=t_ns // 10**9, nanosec=t_ns % 10**9),
                        frame_id="world"),
                    pose=types["geometry_msgs/msg/Pose"](
                        position=types["geometry_msgs/msg/Point"](x=x, y=0.0, z=0.2),
                        orientation=types["geometry_msgs/msg/Quaternion"](x=q[1], y=0.0, z=0.0, w=q[0])))
                writer.write(connection, t_ns, store.serialize_cdr(msg, pose_type))
    return path


def _bag_import(p: Path, *extra: str, box: str = "/box/pose") -> list[str]:
    _pose_bag(p / "push")
    return ["import", "bag", "push", "--box-pose", box, *extra, "--out", "imported"]


def _run_dir(path: Path, labels: tuple[str | None, ...] = (None,)) -> Path:
    """A run of short synthetic trials, trial ``k`` carrying an object labelled ``labels[k]`` (None: no object)."""
    write_run_meta(path, {"mode": "standin", "mirror": "closed", "distances_m": [0.30, 0.45][:len(labels)]})
    for k, label in enumerate(labels):
        record = make_trial(k, [0.30, 0.45][k], duration=0.5, rate_hz=50.0)
        if label is not None:
            obj = TrialObject({"box.size_x": 0.11, "box.size_y": 0.13, "box.size_z": 0.21, "box.mass": 0.5,
                               "pusher.radius": 0.02}, "sphere", label)
            record = dataclasses.replace(record, meta={**record.meta, "object": obj.as_dict()})
        write_trial(path, record)
    return path


def _fifo_trial(p: Path) -> Path:
    """A run whose one trial's mcap is a FIFO (reading it would block until a writer came)."""
    run = _run_dir(p / "run")
    (storage,) = (run / "trial_00_d0.300").glob("*.mcap")
    storage.unlink()
    os.mkfifo(storage)
    return run


def _fit_per_object(p: Path, *labels: str) -> list[str]:
    run = _run_dir(p / "run", labels)
    return ["fit", str(run), "--free", "box.mass", "--per-object", "box.mass", "--max-iterations", "1", "--starts",
            "1", "--horizon", "1", "--out", "fitted.yaml"]


def _fit_per_object_beside_own_file(p: Path) -> list[str]:
    (p / "fitted.steel.yaml").write_text("# my own notes on the steel block\nbox:\n  mass: 0.73\n")
    return _fit_per_object(p, "steel", "alu")


def _sample_per_object(p: Path) -> list[str]:
    """``sample`` of a per-object fit (made here, outside the snapshot: the fit is not the bad input)."""
    fit = p.parent / "fit"
    fit.mkdir()
    made = _run(fit, *_fit_per_object(fit, "steel", "alu"))
    assert (fit / "fitted.json").is_file(), made.stderr[-2000:]
    return ["sample", str(fit / "fitted.json"), "-n", "4", "--allow-unconverged", "--out", "samples"]


def _experiment(p: Path, distances: str) -> str:
    (p / "experiment.yaml").write_text(f"experiment:\n  ros__parameters:\n    distances: {distances}\n")
    return "experiment.yaml"


def _world(p: Path) -> str:
    (p / "world.yaml").write_text("standin_world:\n  ros__parameters:\n    arm:\n      servo_tau: -0.05\n")
    return "world.yaml"


def _fifo(p: Path, name: str) -> str:
    os.mkfifo(p / name)
    return name


def _params_txt(p: Path) -> list[str]:
    (p / "fitted.txt").write_text("/**:\n  ros__parameters:\n    box:\n      mass: 0.7\n")
    return ["params", "--params", "fitted.txt"]


def _bag_twice(p: Path) -> list[str]:
    """One rosbag2 named twice: as its directory and as its metadata.yaml."""
    args = _bag_import(p, *OBJECT)
    return [*args[:3], "push/metadata.yaml", *args[3:]]


def _bag_and_its_storage(p: Path) -> list[str]:
    """One rosbag2 named twice: as its directory and as the .mcap inside it (imported as two trials before)."""
    args = _bag_import(p, *OBJECT)
    storage = next((p / "push").glob("*.mcap"))
    return [*args[:3], str(storage.relative_to(p)), *args[3:]]


def _csv_twice(p: Path) -> list[str]:
    rows = "".join(f"{0.01 * k:.2f},0.4,0,0.105,1,0,0,0\n" for k in range(5))
    (p / "rec.csv").write_text("t,box_x,box_y,box_z,box_qw,box_qx,box_qy,box_qz\n" + rows)
    return ["import", "csv", "rec.csv", "./rec.csv", "--out", "imported"]


CASES: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    # 1. a box pose without orientation: refused unless the box cannot tilt (--planar)
    "bag_box_positions_only": (lambda p: _bag_import(p, *OBJECT, box=POSITIONS), "--planar: the box source"),
    "bag_planar_with_orientation": (lambda p: _bag_import(p, "--planar", *OBJECT),
                                    "--planar: a planar box is for a box source of positions only"),
    "bag_planar_without_object": (lambda p: _bag_import(p, "--planar", box=POSITIONS), "needs the object"),
    # 2. per-object outputs: checked before the fit
    "fit_per_object_names_collide": (lambda p: _fit_per_object(p, "a/b", "a_b"), "would both be written to"),
    "fit_per_object_beside_own_file": (_fit_per_object_beside_own_file, "was not written by a fit"),
    "sample_per_object_fit_without_object": (_sample_per_object, "give --object NAME"),
    # 3. FIFOs are no bags, trials, tosses or files
    "import_bag_fifo_mcap": (lambda p: ["import", "bag", _fifo(p, "push.mcap"), "--box-pose", "/box/pose",
                                        "--out", "imported"], "not a regular file"),
    "import_bag_fifo_ros1": (lambda p: ["import", "bag", _fifo(p, "push.bag"), "--box-pose", "/box/pose",
                                        "--out", "imported"], "not a regular file"),
    "fit_trial_fifo_mcap": (lambda p: ["fit", str(_fifo_trial(p)), "--free", "box.mass", "--out", "fitted.yaml"],
                            "not a regular file"),
    "report_trial_fifo_mcap": (lambda p: ["report", str(_fifo_trial(p)), "--out", "rep"], "not a regular file"),
    "cube_toss_fifo": (lambda p: ["import", "cube-toss", _fifo(p, "tosses.npz"), "--out", "tosses"],
                       "not a regular file"),
    "resolve_step_fifo": (lambda p: ["resolve-step", _fifo(p, "step.json")], "not a regular file"),
    "run_mocap_fifo": (lambda p: ["run", "--mode", "real", "--robot-ip", "10.0.0.9", "--mocap",
                                  _fifo(p, "mocap.yaml"), "--out", "run"], "not a regular file"),
    # 4. 5. the stand-in world and the controller name: checked before any process starts
    "run_world_negative_time_constant": (lambda p: ["run", "--mode", "standin", "--world", _world(p), "--out", "run"],
                                         "'arm.servo_tau' = -0.05 s is out of bounds"),
    "run_controller_bad_name": (lambda p: ["run", "--mode", "standin", "--via", "ros2_control", "--controller",
                                           "bad name!", "--out", "run"], "is not a ROS 2 controller name"),
    "run_controller_leading_digit": (lambda p: ["run", "--mode", "standin", "--via", "ros2_control", "--controller",
                                                "arm/9velocity", "--out", "run"], "is not a ROS 2 controller name"),
    # 6. silent accepts
    "simulate_grad_no_names": (lambda p: ["simulate", "--distance", "0.35", "--grad", ",,", "--json"],
                               "names no parameter"),
    "simulate_grad_empty_entry": (lambda p: ["simulate", "--distance", "0.35", "--grad", "box.mass,,pd.kp",
                                             "--json"], "empty entry"),
    "experiment_distances_empty": (lambda p: ["simulate", "--distance", "0.35", "--experiment",
                                              _experiment(p, "[]"), "--json"], "distances is empty"),
    "run_distances_empty_entry": (lambda p: ["run", "--mode", "sim", "--distances", "0.3,,0.4", "--out", "run"],
                                  "have an empty entry"),
    "cube_toss_repeated_ranges": (lambda p: ["import", "cube-toss", "--tosses", "0-0,0-0", "--out", "tosses"],
                                  "selects toss 0 again"),
    "cube_toss_overlapping_ranges": (lambda p: ["import", "cube-toss", "--tosses", "0-3,2", "--out", "tosses"],
                                     "selects toss 2 again"),
    "emulate_version_string_garbage": (lambda p: ["emulate-xarm", "--host", "127.0.0.1", "--port", "5936",
                                                  "--version-string", "garbage", "--duration", "2"],
                                       "is not an xArm version string"),
    "bag_pusher_pose_no_fields": (lambda p: _bag_import(p, "--pusher-pose", "/probe/pose:", *OBJECT),
                                  "after the topic give 3 position fields"),
    "bag_tool_offset_huge": (lambda p: _bag_import(p, "--pusher-pose", "/probe/pose", "--tool-offset", "1e308,0,0",
                                                   *OBJECT), "must be within 10 m"),
    "bag_transform_huge": (lambda p: _bag_import(p, "--transform", "1e300,0,0,1,0,0,0", *OBJECT),
                           "must be within 100 m"),
    "bag_object_label_empty": (lambda p: _bag_import(p, *OBJECT, "--object", ""),
                               "--object: the object label '' is empty"),
    # issue 57: a scene that cannot be real (the box 95 mm in the air, the probe 35 mm short of it), refused at import
    "bag_scene_not_physical": (lambda p: _bag_import(p, "--pusher-pose", "/probe/pose", *OBJECT),
                               "trial 'push': the box starts 95.0 mm above the table"),
    "bag_scene_tolerance_negative": (lambda p: _bag_import(p, *OBJECT, "--scene-tolerance", "-2"),
                                     "expected a positive, finite length in mm"),
    "bag_given_twice": (_bag_twice, "is given twice"),
    "bag_and_its_mcap": (_bag_and_its_storage, "is given twice"),
    "csv_given_twice": (_csv_twice, "is given twice"),
    "replay_seed_without_spread": (lambda p: ["replay", str(_run_dir(p / "run")), "--seed", "3", "--out", "rep"],
                                   "--seed given without --spread"),
    "replay_default_draws_without_spread": (lambda p: ["replay", str(_run_dir(p / "run")), "--draws", "30", "--out",
                                                       "rep"], "--draws given without --spread"),
    "params_out_not_yaml": (lambda p: ["params", "--out", "p.txt"], "--out must name a params YAML file"),
    "params_file_not_yaml": (_params_txt, "expected a YAML file (.yaml or .yml)"),
    "run_params_file_not_yaml": (lambda p: ["run", "--mode", "sim", "--params", _params_txt(p)[2], "--out", "run"],
                                 "expected a YAML file (.yaml or .yml)"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_one_line_and_harmless(tmp_path: Path, name: str) -> None:
    make, message = CASES[name]
    work = tmp_path / "work"
    work.mkdir()
    args = make(work)
    (work / "canary.txt").write_text("canary\n")
    before = _snapshot(work)
    result = _run(work, *args)
    lines = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("SDK_VERSION")]
    assert result.returncode == 2, (result.returncode, result.stdout[-500:], result.stderr[-2000:])
    assert len(lines) == 1 and "error:" in lines[0] and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert message in lines[0], lines[0]
    assert _snapshot(work) == before  # nothing written (no fit, no trial, no run), the canary untouched


def test_planar_bag_records_tilt_flip_and_heading_unknown(tmp_path: Path) -> None:
    """A box that turns over, recorded with its orientation, shows the flip; recorded as positions only it
    needs --planar, and then its trial says the tilt, the flip and the heading are unknown, never 0."""
    bag = _pose_bag(tmp_path / "flip", flip=True)
    full = _run(tmp_path, "import", "bag", str(bag), "--box-pose", "/box/pose", *OBJECT, "--outlier-angle", "0",
                "--out", "full")
    assert full.returncode == 0, full.stderr
    seen = json.loads((tmp_path / "full" / "flip" / "trial.json").read_text())["outcomes"]["real"]
    assert seen["flipped"] is True and seen["max_tilt_deg"] > 170.0

    planar = _run(tmp_path, "import", "bag", str(bag), "--box-pose", POSITIONS, "--planar", *OBJECT, "--out", "planar")
    assert planar.returncode == 0, planar.stderr
    meta = json.loads((tmp_path / "planar" / "flip" / "trial.json").read_text())
    assert meta["import"]["planar"] == {"heading": "unknown", "box_z_m": 0.105, "pusher_z_m": None,
                                        "tilt": "unknown"}
    real = meta["outcomes"]["real"]
    assert real["planar"] is True
    assert all(real[key] is None for key in ("max_tilt_deg", "flipped", "up_axis_initial", "up_axis_final",
                                             "yaw_deg"))
    assert real["final_position_m"] == pytest.approx([0.45, 0.0, 0.105], abs=1e-9)


def test_controller_names_of_the_ros_rules_pass() -> None:
    from sim2real.errors import Sim2RealError
    from sim2real.nodes.routes import DEFAULT_CONTROLLER, RouteOptions, check_controller_name

    for name in (DEFAULT_CONTROLLER, "arm/velocity_controller", "_private", "c2"):
        assert check_controller_name(name) == name
    for name in ("", "/abs", "a//b", "trailing/", "9lives", "a-b", "a b"):
        with pytest.raises(Sim2RealError, match="is not a ROS 2 controller name"):
            RouteOptions(controller=name)


def test_paths_with_spaces_are_fine(tmp_path: Path) -> None:
    """A space in a path is harmless (arguments are passed as lists, never through a shell): accepted."""
    out = tmp_path / "my runs" / "my params.yaml"
    out.parent.mkdir()
    assert _run(tmp_path, "params", "--out", str(out)).returncode == 0
    shown = _run(tmp_path, "params", "--params", str(out))
    assert shown.returncode == 0 and np.isclose(float(shown.stdout.split("box.mass")[1].split()[1]), 0.5)

"""``sim2real import csv`` / ``import bag`` refuse a scene that cannot be real (issue 57), before writing anything:
a box that starts above the table (a push starts with it resting there) or inside it, a pusher that starts
inside the box, a pusher that never comes within reach of it. ``--force`` imports such trials flagged in
trial.json, and ``report`` and ``replay`` say so; ``--scene-tolerance MM`` sets the tolerance.

The scene, in the arm base frame (table top at z = 0): a 100 x 100 x 50 mm block rests 0.3 s at x = 0.5 m,
then is pushed 30 mm along x over 0.5 s by a 10 mm sphere that closes in from 40 mm and touches the block's
-x face at its centre height from 0.3 s on; 100 Hz, 80 samples. Recording frame = base frame.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer as Writer2
from rosbags.typesys import Stores, get_typestore

from sim2real.cli import import_cmd, main
from sim2real.spatial import from_axis_angle, from_rotation_vector, multiply
from sim2real.trials.scene_checks import (
    DEFAULT_SCENE_TOLERANCE_M,
    REACH_MARGIN_M,
    START_SAMPLES,
    box_lowest_z,
    box_signed_distance,
    pusher_box_distance,
    scene_problems,
)

SIZE = (0.1, 0.1, 0.05)  # m
RADIUS = 0.01  # m, sphere pusher
OBJECT = ["--box-size", "0.1,0.1,0.05", "--box-mass", "3.9", "--pusher-shape", "sphere", "--pusher-radius", "0.01",
          "--object", "steel"]
N, DT = 80, 0.01
REST_S, PUSH_S = 0.3, 0.5


@dataclass(frozen=True)
class Scene:
    """What one recording puts where (all m): the box centre raised by ``box_dz`` above its resting height;
    the pusher ``gap`` from the box face after its approach of ``approach`` (a negative gap: inside the
    box), shifted ``pusher_dy`` along y; tracking noise ``noise`` (std per position axis, m; and 0.3 degrees
    per orientation axis with it)."""

    box_dz: float = 0.0
    gap: float = 0.0
    approach: float = 0.04
    pusher_dy: float = 0.0
    noise: float = 0.0
    seed: int = 0


def _poses(scene: Scene) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Times (N,) s, box centre (N, 3), box quaternion (N, 4) and pusher centre (N, 3), base frame."""
    t = DT * np.arange(N)
    s = np.clip((t - REST_S) / PUSH_S, 0.0, 1.0)
    box = np.stack([0.5 + 0.03 * (3 * s**2 - 2 * s**3), np.zeros(N), np.full(N, SIZE[2] / 2 + scene.box_dz)], axis=1)
    closing = scene.approach * (1.0 - np.clip(t / REST_S, 0.0, 1.0))
    pusher = box + np.stack([-(SIZE[0] / 2 + RADIUS) - closing - scene.gap, np.full(N, scene.pusher_dy),
                             np.zeros(N)], axis=1)
    quaternion = np.tile([1.0, 0.0, 0.0, 0.0], (N, 1))
    if scene.noise:
        rng = np.random.default_rng(scene.seed)
        box = box + rng.normal(0.0, scene.noise, box.shape)
        pusher = pusher + rng.normal(0.0, scene.noise, pusher.shape)
        quaternion = from_rotation_vector(rng.normal(0.0, math.radians(0.3), (N, 3)))
    return t, box, quaternion, pusher


def _csv(path: Path, scene: Scene = Scene(), pusher: bool = True) -> Path:
    t, box, q, tip = _poses(scene)
    header = "t,box_x,box_y,box_z,box_qw,box_qx,box_qy,box_qz" + (",pusher_x,pusher_y,pusher_z" if pusher else "")
    rows = [",".join(f"{v:.17g}" for v in (t[k], *box[k], *q[k], *(tip[k] if pusher else ()))) for k in range(N)]
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def _import(paths: list[Path], out: Path, *extra: str) -> int:
    return main(["import", "csv", *map(str, paths), *OBJECT, *extra, "--out", str(out)])


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("sim2real: error:")]
    assert len(lines) == 1 and err.strip().splitlines()[-1] == lines[0], err
    return lines[0]


def _scene_record(run: Path, trial: str) -> dict:
    return json.loads((run / trial / "trial.json").read_text())["import"]["scene_checks"]


FLOATING = Scene(box_dz=0.010)
SUNKEN = Scene(box_dz=-0.061)
INSIDE = Scene(gap=-0.008, approach=0.0)
AWAY = Scene(gap=0.030)

#: Scene, check, the exact refusal of a trial 'push' (tolerance 2 mm).
BAD = {
    "floating": (FLOATING, "trial 'push': the box starts 10.0 mm above the table (its lowest corner; tolerance "
                 "2.0 mm): a push starts with the box on the table; check the frame transform, the box's offset in its "
                 "tracked frame and its size (sim2real calibrate estimates the box's frame), or import it flagged "
                 "(forced) (see --transform, --box-offset, --box-size, --force)"),
    "sunken": (SUNKEN, "trial 'push': the box starts 61.0 mm inside the table (its lowest corner; tolerance "
               "2.0 mm): a box cannot start inside the table; check the box's size, the frame transform and the box's "
               "offset in its tracked frame (sim2real calibrate estimates the box's frame), or import it flagged "
               "(forced) (see --box-size, --transform, --box-offset, --force)"),
    "pusher_inside": (INSIDE, "trial 'push': the sphere pusher starts 8.0 mm inside the box (median of its first "
                      "5 samples; tolerance 2.0 mm): it would push the box away before the trial begins; check "
                      "the pusher's radius, the tool offset and the pusher's frame, or import it flagged (forced) "
                      "(see --pusher-radius, --tool-offset, --force)"),
    "out_of_reach": (AWAY, "trial 'push': the sphere pusher never comes within 5.0 mm of the box (closest 30.0 mm; "
                     "tolerance 2.0 mm + 3.0 mm reach margin): it never touches the box; check the frame transform, "
                     "the tool offset and the pusher's pose source, or import it flagged (forced) "
                     "(see --transform, --tool-offset, --force)"),  # csv columns give the pusher: no --pusher-pose
}


@pytest.mark.parametrize("check", list(BAD))
def test_a_scene_that_is_not_physical_is_refused_in_one_line_writing_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], check: str) -> None:
    scene, message = BAD[check]
    path = _csv(tmp_path / "push.csv", scene)
    assert _import([path], tmp_path / "run") == 2
    assert _one_line_error(capsys) == f"sim2real: error: {message}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["push.csv"]  # no run, no staging directory
    # into an existing empty directory: left as it was
    (tmp_path / "empty").mkdir()
    assert _import([path], tmp_path / "empty") == 2
    assert list((tmp_path / "empty").iterdir()) == []


@pytest.mark.parametrize("check", list(BAD))
def test_force_imports_it_flagged_in_trial_json(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                check: str) -> None:
    scene, message = BAD[check]
    out = tmp_path / "run"
    assert _import([_csv(tmp_path / "push.csv", scene)], out, "--force") == 0
    err = capsys.readouterr().err
    text = message.removeprefix("trial 'push': ").split("; check ")[0]
    assert f"import: WARNING: trial push imported flagged (forced): {text}" in err.splitlines()
    record = _scene_record(out, "push")
    (problem,) = record["problems"]
    assert problem["check"] == check and problem["text"] == text
    expected = {"floating": 0.010, "sunken": 0.061, "pusher_inside": 0.008, "out_of_reach": 0.030}[check]
    assert problem["value_m"] == pytest.approx(expected, abs=1e-9)
    assert problem["limit_m"] == pytest.approx(0.002 if check != "out_of_reach" else 0.005)
    assert record["tolerance_m"] == 0.002 and record["checks"] == ["sunken", "floating", "pusher_inside",
                                                                     "out_of_reach"]
    assert json.loads((out / "run.json").read_text())["import"]["scene_flagged"] == ["push"]
    assert scene_problems(json.loads((out / "push" / "trial.json").read_text())) == [text]


def test_several_failing_trials_are_counted_and_each_named(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    paths = [_csv(tmp_path / "a_good.csv"), _csv(tmp_path / "b_floating.csv", FLOATING),
             _csv(tmp_path / "c_away.csv", AWAY), _csv(tmp_path / "d_both.csv", Scene(box_dz=0.010, gap=0.030))]
    assert _import(paths, tmp_path / "run") == 2
    line = _one_line_error(capsys)
    assert line.startswith("sim2real: error: trial 'b_floating': the box starts 10.0 mm above the table")
    assert ("(3 of 4 trials fail the scene checks; also 'c_away' pusher never nearer than 30.0 mm, 'd_both' box "
            "10.0 mm above the table, 'd_both' pusher never nearer than 30.0 mm)") in line
    assert line.endswith("or import them flagged (forced) (see --transform, --box-offset, --box-size, --force)")
    assert not (tmp_path / "run").exists()


def test_a_correct_scene_with_1_mm_of_tracking_noise_imports_unflagged(tmp_path: Path) -> None:
    for seed in range(5):
        out = tmp_path / f"run{seed}"
        assert _import([_csv(tmp_path / "push.csv", Scene(noise=0.001, seed=seed))], out) == 0
        record = _scene_record(out, "push")
        assert record["problems"] == [] and len(record["checks"]) == 4
        assert json.loads((out / "run.json").read_text())["import"]["scene_flagged"] == []


def test_the_tolerance_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _csv(tmp_path / "push.csv", Scene(box_dz=0.003, gap=0.0065))  # 3 mm up, 6.5 mm short of the face
    assert _import([path], tmp_path / "strict") == 2
    assert "the box starts 3.0 mm above the table (its lowest corner; tolerance 2.0 mm)" in _one_line_error(capsys)
    assert _import([path], tmp_path / "loose", "--scene-tolerance", "4") == 0
    record = _scene_record(tmp_path / "loose", "push")
    assert record["problems"] == [] and record["tolerance_m"] == 0.004 and record["reach_m"] == pytest.approx(0.007)
    assert _import([path], tmp_path / "tight", "--scene-tolerance", "3.2") == 2  # the reach scales with it: 6.2 mm
    assert "never comes within 6.2 mm of the box (closest 6.5 mm; tolerance 3.2 mm + 3.0 mm" in _one_line_error(capsys)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "two", ""])
def test_a_bad_tolerance_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                value: str) -> None:
    path = _csv(tmp_path / "push.csv")
    with pytest.raises(SystemExit) as exit_:  # a usage error, from the option's parser
        _import([path], tmp_path / "run", "--scene-tolerance", value)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err == (f"sim2real import csv: error: argument --scene-tolerance: expected a positive, finite length in "
                   f"mm, got {value!r}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["push.csv"]


def test_report_and_replay_name_the_flagged_trials(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = [_csv(tmp_path / "good.csv"), _csv(tmp_path / "floating.csv", FLOATING), _csv(tmp_path / "away.csv", AWAY)]
    run = tmp_path / "run"
    assert _import(paths, run, "--force") == 0
    assert main(["report", str(run), "--out", str(tmp_path / "report")]) == 0
    report = (tmp_path / "report" / "report.md").read_text()
    assert "2 trial(s) imported with --force although their scene is not physical: " in report
    assert "floating (the box starts 10.0 mm above the table (its lowest corner; tolerance 2.0 mm)" in report
    assert report.count("Imported with --force although its scene is not physical:") == 2
    assert "Imported with --force although its scene is not physical: the sphere pusher never comes within 5.0 mm" \
        in report
    capsys.readouterr()
    assert main(["replay", str(run / "away"), str(run / "good"), "--out", str(tmp_path / "replayed")]) == 0
    flagged = [line for line in capsys.readouterr().err.splitlines() if "imported with --force" in line]
    assert len(flagged) == 1 and flagged[0].startswith("replay: away: imported with --force although its scene is "
                                                       "not physical: the sphere pusher never comes within"), flagged
    replayed = json.loads((tmp_path / "replayed" / "away" / "trial.json").read_text())
    assert scene_problems(replayed)  # a replay keeps the flag


def test_a_fit_on_flagged_trials_says_so_first_and_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Fitted (or held-out) trials imported with --force although their scene is not physical: a warning per
    trial before the fit, and a problem naming them (exit 3): the answer rests on scenes that cannot be real."""
    paths = [_csv(tmp_path / "good.csv"), _csv(tmp_path / "floating.csv", FLOATING), _csv(tmp_path / "other.csv")]
    run = tmp_path / "run"
    assert _import(paths, run, "--force") == 0
    capsys.readouterr()
    out = tmp_path / "fit.yaml"
    assert main(["fit", str(run / "good"), str(run / "floating"), "--free", "contact.mu_table", "--max-iterations",
                 "2", "--starts", "1", "--validate", str(run / "other"), "--out", str(out)]) == 3
    err = capsys.readouterr().err
    warning = err.index("fit: WARNING floating: imported with --force although its scene is not physical")
    assert warning < err.index("fit: iteration  0")
    problems = json.loads(out.with_suffix(".json").read_text())["problems"]
    assert any(p.startswith("1 trial(s) imported with --force although their scene is not physical (floating)")
               for p in problems), problems
    assert main(["fit", str(run / "good"), str(run / "other"), "--free", "contact.mu_table", "--max-iterations", "2",
                 "--starts", "1", "--out", str(tmp_path / "clean.yaml")]) in (0, 3)
    clean = json.loads((tmp_path / "clean.json").read_text())["problems"]
    assert not any("imported with --force" in p for p in clean)


def test_box_only_trials_get_the_sunken_check_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    thrown = _csv(tmp_path / "toss.csv", Scene(box_dz=0.3), pusher=False)  # 30 cm up: a toss, not a push
    assert _import([thrown], tmp_path / "run") == 0
    assert _scene_record(tmp_path / "run", "toss") == {"tolerance_m": 0.002, "reach_m": 0.005, "checks": ["sunken"],
                                                       "problems": []}
    sunk = _csv(tmp_path / "sunk.csv", Scene(box_dz=-0.01), pusher=False)
    assert _import([sunk], tmp_path / "sunk_run") == 2
    assert "trial 'sunk': the box starts 10.0 mm inside the table" in _one_line_error(capsys)


def test_planar_trials_keep_the_pusher_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def planar(path: Path, scene: Scene) -> Path:
        t, box, _, tip = _poses(scene)
        rows = [f"{t[k]:.2f},{box[k, 0]:.17g},{box[k, 1]:.17g},0.0,{tip[k, 0]:.17g},{tip[k, 1]:.17g}" for k in range(N)]
        path.write_text("\n".join(["t,box_x,box_y,box_yaw,pusher_x,pusher_y", *rows]) + "\n")
        return path

    # the box height is not recorded: placed on the table, it cannot float (nor the pusher beside it)
    assert _import([planar(tmp_path / "lifted.csv", FLOATING)], tmp_path / "run") == 0
    assert _scene_record(tmp_path / "run", "lifted")["problems"] == []
    assert _import([planar(tmp_path / "away.csv", AWAY)], tmp_path / "away_run") == 2
    assert "trial 'away': the sphere pusher never comes within 5.0 mm of the box (closest 30.0 mm" \
        in _one_line_error(capsys)


def _probe_csv(path: Path, tip_z: float) -> Path:
    """A steel plate 10 mm thick at x = 0.5 m and a probe tip running along x at height ``tip_z`` (m)."""
    t = DT * np.arange(N)
    box = np.tile([0.5, 0.0, 0.005, 1.0, 0.0, 0.0, 0.0], (N, 1))
    tip = np.stack([0.40 + 0.2 * t, np.zeros(N), np.full(N, tip_z)], axis=1)
    rows = [",".join(f"{v:.17g}" for v in (t[k], *box[k], *tip[k])) for k in range(N)]
    path.write_text("t,box_x,box_y,box_z,box_qw,box_qx,box_qy,box_qz,pusher_x,pusher_y,pusher_z\n" + "\n".join(rows))
    return path


def test_a_rod_passing_over_the_block_never_reaches_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 3 mm probe whose rod tip runs 10 mm above the plate (the case of issue 57) never touches it; 3 mm
    above the table it hits the plate's face."""
    rod = ["--box-size", "0.1,0.1,0.01", "--box-density", "7850", "--pusher-shape", "rod", "--pusher-radius", "0.003",
           "--pusher-length", "0.1"]
    over = _probe_csv(tmp_path / "over.csv", 0.023)  # the rod's lower end 20 mm up: 10 mm above the plate's top
    assert main(["import", "csv", str(over), *rod, "--out", str(tmp_path / "run")]) == 2
    assert "the rod pusher never comes within 5.0 mm of the box (closest 10.0 mm;" in _one_line_error(capsys)
    low = _probe_csv(tmp_path / "low.csv", 0.003)
    assert main(["import", "csv", str(low), *rod, "--out", str(tmp_path / "low_run")]) == 0, capsys.readouterr().err


def _pose_bag(path: Path, scene: Scene) -> Path:
    """The scene as a rosbag2 (mcap): /box/pose and /probe/pose, PoseStamped in frame 'world' (= base)."""
    store = get_typestore(Stores.ROS2_KILTED)
    types = store.types
    pose_type = "geometry_msgs/msg/PoseStamped"
    t, box, q, tip = _poses(scene)
    with Writer2(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connections = [writer.add_connection(topic, pose_type, typestore=store)
                       for topic in ("/box/pose", "/probe/pose")]
        for k in range(N):
            t_ns = 1_700_000_000_000_000_000 + round(t[k] * 1e9)
            for connection, p, quat in ((connections[0], box[k], q[k]), (connections[1], tip[k], [1.0, 0, 0, 0])):
                msg = types[pose_type](
                    header=types["std_msgs/msg/Header"](
                        stamp=types["builtin_interfaces/msg/Time"](sec=t_ns // 10**9, nanosec=t_ns % 10**9),
                        frame_id="world"),
                    pose=types["geometry_msgs/msg/Pose"](
                        position=types["geometry_msgs/msg/Point"](x=p[0], y=p[1], z=p[2]),
                        orientation=types["geometry_msgs/msg/Quaternion"](w=quat[0], x=quat[1], y=quat[2], z=quat[3])))
                writer.write(connection, t_ns, store.serialize_cdr(msg, pose_type))
    return path


def test_import_bag_refuses_a_floating_box_and_forces_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bag = _pose_bag(tmp_path / "push", FLOATING)
    command = ["import", "bag", str(bag), "--box-pose", "/box/pose", "--pusher-pose", "/probe/pose", *OBJECT]
    assert main([*command, "--out", str(tmp_path / "run")]) == 2
    assert _one_line_error(capsys) == f"sim2real: error: {BAD['floating'][1]}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["push"]
    assert main([*command, "--force", "--out", str(tmp_path / "run")]) == 0
    assert _scene_record(tmp_path / "run", "push")["problems"][0]["check"] == "floating"


def test_without_the_object_nothing_is_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "csv", str(_csv(tmp_path / "push.csv", FLOATING)), "--out", str(tmp_path / "run")]) == 0
    assert "their scenes were not checked" in capsys.readouterr().err
    assert "scene_checks" not in json.loads((tmp_path / "run" / "push" / "trial.json").read_text())["import"]


# -- the geometry ---------------------------------------------------------------------------------
def test_lowest_corner_of_a_tilted_box() -> None:
    tilt = from_axis_angle([1.0, 0.0, 0.0], 0.3)  # the body y and z axes leave the table plane
    expected = 0.2 - 0.05 * (math.sin(0.3) + math.cos(0.3))
    assert box_lowest_z(np.array([0.0, 0.0, 0.2]), tilt, (0.1, 0.1, 0.1)) == pytest.approx(expected)
    assert box_lowest_z(np.array([0.0, 0.0, 0.025]), np.array([2.0, 0, 0, 0]), SIZE) == pytest.approx(0.0)


def test_signed_distance_and_rod_distance_against_dense_sampling() -> None:
    assert box_signed_distance(np.array([[0.08, 0.0, 0.0], [0.0, 0.0, 0.0], [0.08, 0.09, 0.0]]), SIZE) \
        == pytest.approx([0.03, -0.025, math.hypot(0.03, 0.04)])
    rng = np.random.default_rng(3)
    m = 200
    points = rng.uniform(-0.15, 0.15, (m, 3))
    centres = rng.uniform(-0.02, 0.02, (m, 3))
    quaternions = np.array([multiply(from_axis_angle([0, 0, 1], a), from_axis_angle([1, 0, 0], b))
                            for a, b in rng.uniform(-1.0, 1.0, (m, 2))])
    params = {"box.size_x": 0.1, "box.size_y": 0.08, "box.size_z": 0.05, "pusher.radius": 0.004, "pusher.length": 0.12}
    rod = pusher_box_distance(points, centres, quaternions, params, "rod")
    sphere = pusher_box_distance(points, centres, quaternions, params, "sphere")
    dense = np.min([pusher_box_distance(points + np.array([0.0, 0.0, s]), centres, quaternions, params, "sphere")
                    for s in np.linspace(0.0, 0.12, 2401)], axis=0)
    assert np.all(rod <= dense + 1e-12) and np.all(dense - rod < 3e-5)  # sampled every 0.05 mm
    assert np.all(rod <= sphere + 1e-12)


def test_help_states_the_defaults() -> None:
    assert import_cmd.SCENE_TOLERANCE_MM == 1000 * DEFAULT_SCENE_TOLERANCE_M
    epilog = " ".join(import_cmd.BAG_EPILOG.split())
    assert f"tolerance + {1000 * REACH_MARGIN_M:g} mm" in epilog and f"first {START_SAMPLES} samples" in epilog

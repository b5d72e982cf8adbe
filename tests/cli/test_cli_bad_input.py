"""Bad input never hurts: every case gives one line on stderr and a non-zero exit, before any long
work, writes nothing and touches no file it did not create.

Each case runs the real ``sim2real`` command in a subprocess (a hang shows as a timeout) inside a
directory of its own that holds the case's inputs and a canary file next to every output; after
the command the directory must hold exactly what it held before, byte for byte.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from children import HANG_GUARD_S
from fixtures.synthetic_trials import make_trial

from sim2real.trials import write_run_meta, write_trial

#: Every test here may start ROS 2 (in a child): its own domain and log directory.
pytestmark = pytest.mark.usefixtures("ros_child_env")

ROOT = Path(__file__).resolve().parents[2]
#: Bound on any one case (s): a guard against hangs; every case fails in a few seconds.
WITHIN = HANG_GUARD_S


def _env(tmp_path: Path) -> dict[str, str]:
    """The child's environment: the module's ROS 2 domain and log directory (``ros_child_env``), no bytecode."""
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(ROOT)}


def _snapshot(directory: Path) -> dict[str, bytes | None]:
    """Every path under ``directory``: file contents (None for directories and FIFOs)."""
    out: dict[str, bytes | None] = {}
    for path in sorted(directory.rglob("*")):
        rel = str(path.relative_to(directory))
        out[rel] = path.read_bytes() if path.is_file() else None
    return out


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sim2real", *args], cwd=tmp_path, capture_output=True, text=True,
                          env=_env(tmp_path), timeout=WITHIN)


def _run_dir(path: Path, trials: int = 2) -> Path:
    write_run_meta(path, {"mode": "standin", "mirror": "closed", "distances_m": [0.3, 0.45][:trials]})
    for k in range(trials):
        write_trial(path, make_trial(k, [0.30, 0.45][k], duration=0.5, rate_hz=50.0))
    return path


def _binary(p: Path) -> list[str]:
    (p / "params.yaml").write_bytes(bytes(range(256)) * 4)
    return ["params", "--params", "params.yaml"]


def _fifo_params(p: Path) -> list[str]:
    os.mkfifo(p / "params.yaml")
    return ["params", "--params", "params.yaml"]


def _params_out_existing(p: Path) -> list[str]:
    (p / "mine.yaml").write_text("# my own notes\nbox:\n  mass: 1\n")
    return ["params", "--out", "mine.yaml"]


def _params_out_existing_forced(p: Path) -> list[str]:
    (p / "mine.yaml").write_text("# my own notes\nbox:\n  mass: 1\n")
    return ["params", "--out", "mine.yaml", "--force"]


def _params_out_under_file(p: Path) -> list[str]:
    (p / "afile.txt").write_text("x")
    return ["params", "--out", "afile.txt/params.yaml"]


def _fit_onto_trial(p: Path) -> list[str]:
    run = _run_dir(p / "run")
    return ["fit", str(run), "--free", "box.mass", "--out", str(run / "trial_00_d0.300" / "trial.yaml"), "--force"]


def _fit_out_existing(p: Path) -> list[str]:
    run = _run_dir(p / "run", trials=1)
    (p / "fitted.yaml").write_text("# someone else's file\n")
    return ["fit", str(run), "--free", "box.mass", "--out", "fitted.yaml"]


def _fit_loss_scale_nan(p: Path) -> list[str]:
    run = _run_dir(p / "run", trials=1)
    return ["fit", str(run), "--free", "box.mass", "--out", "fitted.yaml", "--loss-scale", "nan"]


def _simulate_edge_radius_too_large(p: Path) -> list[str]:
    return ["simulate", "--distance", "0.35", "--set", "box.size_x=0.05", "--set", "box.edge_radius=0.03", "--json"]


def _simulate_mujoco_rounded(p: Path) -> list[str]:
    return ["simulate", "--distance", "0.35", "--engine", "mujoco", "--set", "box.edge_radius=0.004", "--json"]


def _report_out_with_user_files(p: Path) -> list[str]:
    run = _run_dir(p / "run", trials=1)
    (p / "rep").mkdir()
    (p / "rep" / "fig_holiday.png").write_bytes(b"\x89PNG holiday")
    return ["report", str(run), "--out", "rep"]


def _report_out_foreign_name(p: Path) -> list[str]:
    run = _run_dir(p / "run", trials=1)
    (p / "rep").mkdir()
    (p / "rep" / "report.md").write_text("my own report\n")
    return ["report", str(run), "--out", "rep", "--force"]


def _trial_without_metadata(p: Path) -> list[str]:
    run = _run_dir(p / "run")
    (run / "trial_01_d0.450" / "metadata.yaml").rename(p / "metadata.yaml.kept")
    return ["report", str(run), "--out", "rep"]


def _trial_json_nan(p: Path) -> list[str]:
    run = _run_dir(p / "run", trials=1)
    meta = run / "trial_00_d0.300" / "trial.json"
    meta.write_text(meta.read_text().replace('"initial_distance_m": 0.3', '"initial_distance_m": NaN'))
    assert "NaN" in meta.read_text()
    return ["report", str(run), "--out", "rep"]


def _trial_json_wrong_schema(p: Path) -> list[str]:
    run = _run_dir(p / "run", trials=1)
    meta = run / "trial_00_d0.300" / "trial.json"
    content = json.loads(meta.read_text())
    content["timing"] = "yesterday"
    meta.write_text(json.dumps(content))
    return ["report", str(run), "--out", "rep"]


def _bag_wrong_topics(p: Path) -> list[str]:
    from rosbags.rosbag2 import Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_HUMBLE)
    string = store.types["std_msgs/msg/String"]
    (p / "run").mkdir()
    with Writer(p / "run" / "trial_00", version=8) as writer:
        connection = writer.add_connection("/chatter", string.__msgtype__, typestore=store)
        writer.write(connection, 1000, store.serialize_cdr(string(data="hi"), string.__msgtype__))
    return ["report", "run", "--out", "rep"]


def _experiment(p: Path, **push: float) -> str:
    lines = "".join(f"      {k}: {v}\n" for k, v in push.items())
    (p / "experiment.yaml").write_text(f"experiment:\n  ros__parameters:\n    distances: [0.3]\n    push:\n{lines}")
    return "experiment.yaml"


def _run_out_file(p: Path) -> list[str]:
    (p / "afile.txt").write_text("x")
    return ["run", "--mode", "sim", "--distances", "0.3", "--out", "afile.txt"]


def _run_timeout_negative(p: Path) -> list[str]:
    return ["run", "--mode", "sim", "--timeout", "-1", "--out", "run"]


def _run_distances_empty(p: Path) -> list[str]:
    return ["run", "--mode", "sim", "--distances", "", "--out", "run"]


def _run_settle_huge(p: Path) -> list[str]:
    return ["run", "--mode", "sim", "--experiment", _experiment(p, settle_time=1e6), "--out", "run"]


def _run_settle_nan(p: Path) -> list[str]:
    return ["run", "--mode", "sim", "--experiment", _experiment(p, settle_time=".nan"), "--out", "run"]


def _simulate_duration_huge(p: Path) -> list[str]:
    scenario = (ROOT / "config" / "scenarios" / "slide.yaml").read_text()
    lines = [("duration: 10000000.0" if line.startswith("duration:") else line) for line in scenario.splitlines()]
    (p / "scenario.yaml").write_text("\n".join(lines) + "\n")
    return ["simulate", "scenario.yaml", "--out", "bag"]


def _emulate_world_beyond_limit(p: Path) -> list[str]:
    (p / "world.yaml").write_text("arm:\n  initial_joints: [7.0, 0, 0, 0, 0, 0]\n")
    return ["emulate-xarm", "--host", "127.0.0.1", "--port", "5931", "--world", "world.yaml", "--duration", "2"]


def _emulate_duration_nan(p: Path) -> list[str]:
    return ["emulate-xarm", "--host", "127.0.0.1", "--port", "5931", "--duration", "nan"]


def _demo_max_iterations_negative(p: Path) -> list[str]:
    return ["demo", "--out", "demo", "--max-iterations", "-1"]


def _demo_distances_empty(p: Path) -> list[str]:
    return ["demo", "--out", "demo", "--distances", " "]


def _demo_mujoco_closed(p: Path) -> list[str]:
    return ["demo", "--out", "demo", "--engine", "mujoco", "--box-mode", "closed"]


def _fit_unknown_engine(p: Path) -> list[str]:
    return ["fit", str(p), "--free", "contact.mu_table", "--engine", "bullet", "--out", "fit.yaml"]


def _replay_out_under_file(p: Path) -> list[str]:
    run = _run_dir(p / "run", trials=1)
    (p / "afile.txt").write_text("x")
    return ["replay", str(run), "--out", "afile.txt/replayed"]


def _import_out_under_file(p: Path) -> list[str]:
    (p / "afile.txt").write_text("x")
    return ["import", "cube-toss", "tosses.npz", "--out", "afile.txt/tosses"]


def _simulate_hard_steps_under_file(p: Path) -> list[str]:
    (p / "afile.txt").write_text("x")
    return ["simulate", str(ROOT / "config" / "scenarios" / "slide.yaml"), "--save-hard-steps", "afile.txt/hard"]


#: A directory no one can create anything in, not even root (the kernel's process table).
UNWRITABLE = "/proc"

#: One row of a CSV recording: t, then the box pose (x, y, z, qw, qx, qy, qz).
CSV_HEADER = "t,box_x,box_y,box_z,box_qw,box_qx,box_qy,box_qz\n"


def _csv(p: Path, *rows: str) -> list[str]:
    (p / "rec.csv").write_text(CSV_HEADER + "".join(f"{row}\n" for row in rows))
    return ["import", "csv", "rec.csv", "--out", "imported"]


def _params_out_proc(p: Path) -> list[str]:
    return ["params", "--out", f"{UNWRITABLE}/x.yaml"]


def _simulate_distance_out_proc(p: Path) -> list[str]:
    return ["simulate", "--distance", "0.35", "--out", f"{UNWRITABLE}/trial_sim"]


def _simulate_scenario_out_proc(p: Path) -> list[str]:
    return ["simulate", str(ROOT / "config" / "scenarios" / "slide.yaml"), "--out", f"{UNWRITABLE}/bag"]


def _simulate_distance_out_under_file(p: Path) -> list[str]:
    (p / "afile.txt").write_text("x")
    return ["simulate", "--distance", "0.35", "--out", "afile.txt/t"]


def _fit_out_proc(p: Path) -> list[str]:
    run = _run_dir(p / "run", trials=1)
    return ["fit", str(run), "--free", "box.mass", "--out", f"{UNWRITABLE}/fitted.yaml"]


def _replay_out_proc(p: Path) -> list[str]:
    run = _run_dir(p / "run", trials=1)
    return ["replay", str(run), "--out", f"{UNWRITABLE}/replayed"]


def _import_cube_toss_out_proc(p: Path) -> list[str]:
    return ["import", "cube-toss", "--tosses", "0-1", "--out", f"{UNWRITABLE}/tosses"]


def _binary_scenario(p: Path) -> list[str]:
    (p / "scenario.yaml").write_bytes(bytes(range(256)) * 4)
    return ["simulate", "scenario.yaml"]


def _csv_time_huge(p: Path) -> list[str]:
    return _csv(p, "0,0.3,0,0.05,1,0,0,0", "1e300,0.3,0,0.05,1,0,0,0", "2e300,0.3,0,0.05,1,0,0,0")


def _csv_time_1e20(p: Path) -> list[str]:
    return _csv(p, "0,0.3,0,0.05,1,0,0,0", "0.1,0.3,0,0.05,1,0,0,0", "1e20,0.3,0,0.05,1,0,0,0")


def _params_huge_list(p: Path) -> list[str]:
    (p / "params.yaml").write_text("[" + ",".join(["1"] * 500_000) + "]\n")  # 1 MB
    return ["params", "--params", "params.yaml"]


def _csv_nan(p: Path) -> list[str]:
    return _csv(p, "0,0.3,0,0.05,1,0,0,0", "0.1,nan,0,0.05,1,0,0,0", "0.2,0.3,0,0.05,1,0,0,0")


def _csv_zero_quaternion(p: Path) -> list[str]:
    return _csv(p, "0,0.3,0,0.05,1,0,0,0", "0.1,0.3,0,0.05,0,0,0,0", "0.2,0.3,0,0.05,1,0,0,0")


def _csv_time_backwards(p: Path) -> list[str]:
    return _csv(p, "0,0.3,0,0.05,1,0,0,0", "0.2,0.3,0,0.05,1,0,0,0", "0.1,0.3,0,0.05,1,0,0,0",
                "0.3,0.3,0,0.05,1,0,0,0")


def _trial_without_trial_json(p: Path) -> list[str]:
    run = _run_dir(p / "run")
    (run / "trial_01_d0.450" / "trial.json").rename(p / "trial.json.kept")
    return ["report", str(run), "--out", "rep"]


def _fit_trial_without_trial_json(p: Path) -> list[str]:
    run = _run_dir(p / "run", trials=1)
    (run / "trial_00_d0.300" / "trial.json").rename(p / "trial.json.kept")
    return ["fit", str(run), "--free", "box.mass", "--out", "fitted.yaml"]


def _params_duplicate_key(p: Path) -> list[str]:
    (p / "params.yaml").write_text("/**:\n  ros__parameters:\n    box:\n      mass: 0.5\n      mass: 0.7\n")
    return ["params", "--params", "params.yaml"]


def _experiment_duplicate_key(p: Path) -> list[str]:
    (p / "experiment.yaml").write_text("experiment:\n  ros__parameters:\n    distances: [0.3]\n"
                                       "    distances: [0.4]\n")
    return ["simulate", "--distance", "0.35", "--experiment", "experiment.yaml"]


def _report_same_run_twice(p: Path) -> list[str]:
    run = _run_dir(p / "run", trials=1)
    return ["report", str(run), f"{run}/", "--out", "rep"]


CASES: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    "replay_out_under_file": (_replay_out_under_file, "is a file"),
    "import_out_under_file": (_import_out_under_file, "is a file"),
    "simulate_hard_steps_under_file": (_simulate_hard_steps_under_file, "is a file"),
    "binary_yaml": (_binary, "not UTF-8"),
    "fifo_params": (_fifo_params, "not a regular file"),
    "params_out_existing": (_params_out_existing, "pass --force"),
    "params_out_existing_forced_foreign": (_params_out_existing_forced, "not written by sim2real"),
    "params_out_under_file": (_params_out_under_file, "is a file"),
    "fit_out_onto_trial_json": (_fit_onto_trial, "not written by sim2real"),
    "fit_out_existing": (_fit_out_existing, "pass --force"),
    "fit_loss_scale_nan": (_fit_loss_scale_nan, "finite"),
    "report_out_with_user_files": (_report_out_with_user_files, "not empty"),
    "report_force_foreign_file": (_report_out_foreign_name, "no sim2real report wrote"),
    "trial_without_metadata": (_trial_without_metadata, "metadata.yaml"),
    "trial_json_nan": (_trial_json_nan, "NaN"),
    "trial_json_wrong_schema": (_trial_json_wrong_schema, "timing must be"),
    "bag_wrong_topics": (_bag_wrong_topics, "none of the sim2real topics"),
    "run_out_is_a_file": (_run_out_file, "is a file"),
    "run_timeout_negative": (_run_timeout_negative, "--timeout"),
    "run_distances_empty": (_run_distances_empty, "--distances is empty"),
    "run_settle_time_huge": (_run_settle_huge, "at most 120 s"),
    "run_settle_time_nan": (_run_settle_nan, "finite"),
    "simulate_duration_huge": (_simulate_duration_huge, "longer than"),
    "emulate_world_joint_beyond_limit": (_emulate_world_beyond_limit, "outside joint 1's limits"),
    "emulate_duration_nan": (_emulate_duration_nan, "finite"),
    "demo_max_iterations_negative": (_demo_max_iterations_negative, "--max-iterations"),
    "demo_distances_empty": (_demo_distances_empty, "--distances"),
    "demo_mujoco_closed": (_demo_mujoco_closed, "--box-mode kinematic"),
    "fit_unknown_engine": (_fit_unknown_engine, "unknown engine 'bullet'"),
    "simulate_edge_radius_too_large": (_simulate_edge_radius_too_large, "below half the smallest box size"),
    "simulate_mujoco_rounded": (_simulate_mujoco_rounded, "sharp boxes only"),
    "params_out_proc": (_params_out_proc, "cannot create anything in /proc"),
    "simulate_distance_out_proc": (_simulate_distance_out_proc, "cannot create anything in /proc"),
    "simulate_scenario_out_proc": (_simulate_scenario_out_proc, "cannot create anything in /proc"),
    "simulate_distance_out_under_file": (_simulate_distance_out_under_file, "afile.txt is a file"),
    "fit_out_proc": (_fit_out_proc, "cannot create anything in /proc"),
    "replay_out_proc": (_replay_out_proc, "cannot create anything in /proc"),
    "import_cube_toss_out_proc": (_import_cube_toss_out_proc, "cannot create anything in /proc"),
    "binary_scenario": (_binary_scenario, "not UTF-8"),
    "csv_time_huge": (_csv_time_huge, "line 3: column t"),
    "csv_time_1e20": (_csv_time_1e20, "line 4: column t"),
    "params_huge_list": (_params_huge_list, "bytes, more than"),
    "csv_nan": (_csv_nan, "1 invalid"),
    "csv_zero_quaternion": (_csv_zero_quaternion, "1 invalid"),
    "csv_time_backwards": (_csv_time_backwards, "line 4: column t"),
    "trial_without_trial_json": (_trial_without_trial_json, "trial_01_d0.450 has no trial.json"),
    "fit_trial_without_trial_json": (_fit_trial_without_trial_json, "trial_00_d0.300 has no trial.json"),
    "params_duplicate_key": (_params_duplicate_key, "duplicate key 'mass' at line 5"),
    "experiment_duplicate_key": (_experiment_duplicate_key, "duplicate key 'distances' at line 4"),
    "report_same_run_twice": (_report_same_run_twice, "given twice"),
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
    lines = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith(("SDK_VERSION",))]
    assert result.returncode != 0, (result.stdout[-500:], result.stderr[-2000:])
    assert len(lines) == 1 and "error:" in lines[0] and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert message in lines[0], lines[0]
    assert _snapshot(work) == before  # nothing written, replaced or deleted; the canary untouched


def test_run_refuses_other_distances_for_an_experiment_whose_trials_have_their_own_pushes(tmp_path: Path) -> None:
    """The trials section belongs to the file's distances: ``--distances`` with it is bad input (exit 2, one
    line) before anything starts; nothing is written."""
    (tmp_path / "designed.yaml").write_text(
        "/**:\n  ros__parameters:\n    distances: [0.30, 0.45]\n    push: {end_x: 0.40}\n"
        "    trials:\n      lateral: [0.0, 0.03]\n")
    before = _snapshot(tmp_path)
    result = _run(tmp_path, "run", "--mode", "sim", "--distances", "0.3", "--experiment", "designed.yaml",
                  "--out", "run")
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, result.stderr[-2000:]
    assert lines == ["sim2real: error: --distances 0.3: the experiment file gives each trial its own push (its "
                     "'trials' section): its start distances cannot be replaced; edit the file instead"]
    assert _snapshot(tmp_path) == before and not result.stdout


def test_report_force_keeps_files_it_did_not_write(tmp_path: Path) -> None:
    """With --force a report replaces its own earlier files only: a user's fig_holiday.png stays."""
    run = _run_dir(tmp_path / "run", trials=1)
    out = tmp_path / "rep"
    out.mkdir()
    (out / "fig_holiday.png").write_bytes(b"\x89PNG holiday")
    for _ in range(2):
        result = _run(tmp_path, "report", str(run), "--out", str(out), "--force", "--max-trial-figures", "0")
        assert result.returncode == 0, result.stderr
        assert (out / "fig_holiday.png").read_bytes() == b"\x89PNG holiday"
    assert (out / "report.html").is_file()


def test_params_force_replaces_its_own_file(tmp_path: Path) -> None:
    """--force replaces a params file sim2real wrote (and only with --force)."""
    assert _run(tmp_path, "params", "--out", "p.yaml").returncode == 0
    first = (tmp_path / "p.yaml").read_text()
    assert _run(tmp_path, "params", "--out", "p.yaml", "--set", "box.mass=0.7").returncode == 2
    assert (tmp_path / "p.yaml").read_text() == first
    assert _run(tmp_path, "params", "--out", "p.yaml", "--set", "box.mass=0.7", "--force").returncode == 0
    assert "0.7" in (tmp_path / "p.yaml").read_text()

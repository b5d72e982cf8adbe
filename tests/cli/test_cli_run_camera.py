"""``sim2real run --box-pose camera``: the stand-in renders its box with AprilTags, the tag detector turns the
images into the box poses that are recorded; bad input is refused before anything starts."""

import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import standin_runs

from sim2real.trials import read_trial
from sim2real.trials.meta import TrialMeta

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def env(ros_env, tmp_path):
    return {**ros_env, "ROS_LOG_DIR": str(tmp_path / "roslog"), "PYTHONPATH": str(ROOT)}


def _run(*args: str, env: dict, timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sim2real", "run", *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def test_a_standin_run_seen_by_a_camera_records_the_box_poses_of_its_images(tmp_path, env):
    """Exit 0, or 3 when the busy machine starved the real control loop (named STARVED); a run the load cut or
    stopped is made again, as every stand-in run's test does (:mod:`standin_runs`)."""
    out, done = standin_runs.until_recorded(
        lambda number: (tmp_path / f"run{number}", _run("--mode", "standin", "--box-pose", "camera", "--distances",
                                                        "0.30", "--out", str(tmp_path / f"run{number}"), env=env,
                                                        timeout=240)),
        lambda run: (run[1].returncode, run[1].stdout, run[1].stderr))
    assert standin_runs.recorded(done.returncode, done.stdout), done.stdout[-2000:] + done.stderr[-3000:]
    assert "images gave a pose" in done.stderr
    record = read_trial(next(p for p in out.iterdir() if p.is_dir()))
    assert record.complete, record.meta.get("note")
    box = record.platforms["real"].box_pose
    stamps = np.asarray(box.t)
    rate = (len(stamps) - 1) / (stamps[-1] - stamps[0])
    assert 24.0 < rate < 31.0  # the camera's 30 Hz, less the frames a busy machine drops
    # the box starts at rest where it was placed, seen by the camera (the 0.30 m start, 21 cm box on the table)
    start = box.position[: len(stamps) // 10]
    assert np.all(np.abs(start[:, 0] - 0.30) < 0.01) and np.all(np.abs(start[:, 2] - 0.105) < 0.005)
    assert np.std(start[:, 0]) < 0.001  # at rest: pose noise under a millimetre
    # the recorder counted the detector's images inside the trial's window
    tally = TrialMeta(record.meta).camera
    assert tally is not None and tally["images"] >= len(stamps) and tally["poses"] == len(stamps), tally
    assert tally["rate"] > 0.95
    # and the report says what the camera gave
    report = subprocess.run([sys.executable, "-m", "sim2real", "report", str(out), "--out", str(tmp_path / "report")],
                            env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr[-2000:]
    text = (tmp_path / "report" / "report.md").read_text()
    assert "box poses from a camera in 1 trial(s)" in text and "pose noise at rest" in text, text[:3000]
    assert f"Camera: {tally['poses']} of {tally['images']} images gave a box pose" in text


@pytest.mark.parametrize(("args", "message"), [
    (["--camera", "config/camera.yaml"], "--camera applies to --box-pose camera only"),
    (["--box-pose", "camera", "--camera", "nope.yaml"], "camera file"),
    (["--box-pose", "camera", "--camera", "config/mocap.yaml"], "tag_detector"),
    (["--box-pose", "camera", "--mode", "sim"], "need a real platform"),
])
def test_bad_camera_input_is_one_line_and_status_2(tmp_path, env, args, message):
    mode = [] if "--mode" in args else ["--mode", "standin"]
    done = _run(*mode, *args, "--out", str(tmp_path / "run"), env=env)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().count("\n") == 0 and message in done.stderr, done.stderr
    assert not (tmp_path / "run").exists()

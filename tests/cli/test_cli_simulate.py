"""``sim2real simulate SCENARIO.yaml`` end to end, its JSON outcome, bag output and bad-input errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from children import HANG_GUARD_S

from sim2real.cli import main
from sim2real.paths import config_file
from sim2real.trials import read_trial

SLIDE = {"duration": 0.3, "box": {"position": [0.0, 0.0, 0.105], "quaternion": [1, 0, 0, 0],
                                  "linear_velocity": [1.0, 0.0, 0.0]}}
PUSH = {"duration": 0.3, "dt": 0.01,
        "box": {"position": [0.4, 0.0, 0.105], "quaternion": [1, 0, 0, 0]},
        "pusher": {"radius": 0.01, "waypoints": [[0.0, 0.334, 0.0, 0.05], [0.3, 0.37, 0.0, 0.05]]}}


def _write(tmp_path: Path, doc: object, name: str = "scenario.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


def _run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sim2real", "simulate", *args], capture_output=True, text=True,
                          timeout=HANG_GUARD_S, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def test_push_scenario_json_with_gradients_and_bag(tmp_path: Path) -> None:
    bag = tmp_path / "run" / "push_bag"
    proc = _run([str(_write(tmp_path, PUSH)), "--json", "--grad", "contact.mu_table,box.size_x",
                 "--set", "contact.mu_table=0.5", "--out", str(bag)])
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["steps"] == 30 and out["flipped"] is False and out["max_tilt_deg"] < 1.0
    assert out["min_signed_distance_m"] > -1e-4 and out["wall_s"] > 0
    assert len(out["final"]["box_position"]) == 3 and len(out["final"]["box_quaternion"]) == 4
    # The pusher (radius 1 cm) ends at x = 0.37, so the box's back face (x - 0.055) is at 0.38.
    assert out["final"]["box_position"][0] == pytest.approx(0.37 + 0.01 + 0.055, abs=1e-3)
    grads = out["gradients"]
    assert set(grads) == {"contact.mu_table", "box.size_x"}
    # Pushed kinematically: a wider box ends further by half the extra width.
    assert grads["box.size_x"]["box_position"][0] == pytest.approx(0.5, abs=0.05)
    trial = read_trial(bag, require=["/sim/box_pose"])
    poses = trial.platforms["sim"].box_pose
    assert len(poses) == 31
    np.testing.assert_allclose(poses.position[-1], out["final"]["box_position"], atol=1e-12)
    np.testing.assert_allclose(poses.t[1] - poses.t[0], 0.01, atol=1e-9)


def test_slide_scenario_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(_write(tmp_path, SLIDE)), "--set", "contact.mu_table=0.5"]) == 0
    text = capsys.readouterr().out
    assert "final box position" in text and "flipped             False" in text


def test_example_scenarios_parse() -> None:
    from sim2real.physics.scenario import load_scenario

    for name in ("push_sphere.yaml", "push_capsule.yaml", "slide.yaml", "topple.yaml"):
        scenario = load_scenario(config_file(f"scenarios/{name}"))
        assert scenario.duration > 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("duration"), "missing key 'duration'"),
        (lambda d: d["box"].update(quaternion=[1, 0.2, 0, 0]), "unit quaternion"),
        (lambda d: d["box"].update(position=[0.0, 0.0, 0.05]), "inside the table"),
        (lambda d: d.update(durration=1.0), "unknown key 'durration'"),
        (lambda d: d["box"].update(position=[0.0, 0.0]), "list of 3 numbers"),
        (lambda d: d.update(dt=1.0), "out of bounds"),
        (lambda d: d["box"].update(velocities="midpoint"), "box.velocities must be one of instant, step_before"),
    ],
)
@pytest.mark.slow
def test_bad_scenarios_give_one_line_errors(tmp_path: Path, change, message: str) -> None:
    doc = json.loads(json.dumps(SLIDE))
    change(doc)
    bag = tmp_path / "never"
    proc = _run([str(_write(tmp_path, doc)), "--out", str(bag)])
    assert proc.returncode == 2
    assert proc.stderr.startswith("sim2real: error: ") and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not bag.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "box.mas=0.3"], "did you mean 'box.mass'"),
        (["--grad", "pd.kp"], "not differentiable"),
        (["--grad", "contact.mu_tabel"], "unknown parameter"),
    ],
)
@pytest.mark.slow
def test_bad_options_give_one_line_errors(tmp_path: Path, args: list[str], message: str) -> None:
    proc = _run([str(_write(tmp_path, SLIDE)), *args])
    assert proc.returncode == 2 and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_missing_scenario_file(tmp_path: Path) -> None:
    proc = _run([str(tmp_path / "nope.yaml")])
    assert proc.returncode == 2 and "cannot read scenario" in proc.stderr


CAPSULE = {"duration": 0.3, "dt": 0.01,
           "box": {"position": [0.4, 0.0, 0.105], "quaternion": [1, 0, 0, 0]},
           "pusher": {"shape": "capsule", "radius": 0.01, "half_length": 0.04,
                      "waypoints": [[0.0, 0.334, -0.04, 0.05, 0.334, 0.04, 0.05],
                                    [0.3, 0.37, -0.04, 0.05, 0.37, 0.04, 0.05]]}}


def test_capsule_scenario_json_with_gradients_and_bag(tmp_path: Path) -> None:
    bag = tmp_path / "run" / "capsule_bag"
    proc = _run([str(_write(tmp_path, CAPSULE)), "--json", "--grad", "box.size_x,pusher.radius",
                 "--set", "contact.mu_table=0.5", "--out", str(bag)])
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["steps"] == 30 and out["flipped"] is False and out["max_tilt_deg"] < 1.0
    assert out["min_signed_distance_m"] > -1e-4 and out["min_pusher_distance_m"] > -1e-4
    # The capsule (radius 1 cm) lies across the -x face and ends at x = 0.37: the face is at 0.38.
    assert out["final"]["box_position"][0] == pytest.approx(0.37 + 0.01 + 0.055, abs=1e-3)
    assert abs(out["final"]["box_position"][1]) < 1e-4
    assert out["gradients"]["box.size_x"]["box_position"][0] == pytest.approx(0.5, abs=0.05)
    assert out["gradients"]["pusher.radius"]["box_position"][0] == pytest.approx(1.0, abs=0.05)
    trial = read_trial(bag, require=["/sim/box_pose", "/sim/pusher_pose"])
    pusher = trial.platforms["sim"].pusher_pose
    np.testing.assert_allclose(pusher.position[-1], [0.37, 0.0, 0.05], atol=1e-12)  # the segment's midpoint


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda p: p.pop("half_length"), "missing key 'half_length'"),
        (lambda p: p.update(shape="cylinder"), "pusher.shape must be one of sphere, capsule"),
        (lambda p: p["waypoints"][1].pop(), "list of 7 numbers"),
        (lambda p: p.update(half_length=0.03), "end points are 0.08 m apart, but 2 * half_length = 0.06 m"),
        (lambda p: p.update(half_length=-0.01), "half_length must be non-negative"),
        (lambda p: p.update(shape="sphere"), "half_length is only for shape: capsule"),
    ],
)
@pytest.mark.slow
def test_bad_capsule_scenarios_give_one_line_errors(tmp_path: Path, change, message: str) -> None:
    doc = json.loads(json.dumps(CAPSULE))
    change(doc["pusher"])
    proc = _run([str(_write(tmp_path, doc))])
    assert proc.returncode == 2
    assert proc.stderr.startswith("sim2real: error: ") and message in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1

"""``sim2real import csv`` of planar recordings (box x, y and yaw, pusher x, y): the poses it writes, the
tilt it does not claim, and the files it refuses.

The recording frame is a lab's table frame, turned 0.5 rad about z and shifted (also in z, which a
planar recording's box ignores: it rests on the table) from the arm base frame.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from sim2real.cli import main
from sim2real.trials import read_run

THETA = 0.5  # rad, the recording frame's turn about z in the arm base frame
SHIFT = np.array([0.45, -0.1, 0.2])  # m, its origin in the arm base frame
TRANSFORM_ARG = ",".join(f"{v:.17g}" for v in (*SHIFT, math.cos(THETA / 2), 0.0, 0.0, math.sin(THETA / 2)))
SIZE = (0.099, 0.099, 0.0095)  # m, a flat steel block
OBJECT_ARGS = ["--box-size", ",".join(f"{v:g}" for v in SIZE), "--box-density", "7850", "--pusher-shape", "rod",
               "--pusher-radius", "0.0031", "--pusher-length", "0.1"]
N = 40


def _rows() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Times (N,) s, box x-y (N, 2) m and yaw (N,) rad, pusher x-y (N, 2) m, in the recording frame."""
    t = 0.01 * np.arange(N)
    s = np.linspace(0.0, 1.0, N)
    box = np.stack([0.02 * s, 0.005 * s ** 2], axis=1)
    yaw = 0.3 + 0.4 * s  # the block turns by 0.4 rad (22.9 deg) while pushed
    pusher = box + np.array([-0.06, 0.01])
    return t, box, yaw, pusher


def _write(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def _planar_csv(path: Path, pusher_z: float | None = None) -> Path:
    t, box, yaw, pusher = _rows()
    header = "t,box_x,box_y,box_yaw,pusher_x,pusher_y" + (",pusher_z" if pusher_z is not None else "") + ",note"
    rows = [f"{t[k]:.2f},{box[k, 0]:.17g},{box[k, 1]:.17g},{yaw[k]:.17g},{pusher[k, 0]:.17g},{pusher[k, 1]:.17g}"
            + (f",{pusher_z:g}" if pusher_z is not None else "") + ",probe" for k in range(N)]
    return _write(path, header, rows)


def _to_base(xy: np.ndarray) -> np.ndarray:
    """Recording-frame x-y (N, 2) → arm base frame x-y (N, 2)."""
    c, s = math.cos(THETA), math.sin(THETA)
    return xy @ np.array([[c, s], [-s, c]]) + SHIFT[:2]


def test_planar_recording_rests_on_the_table_turned_by_its_yaw_alone(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = _planar_csv(tmp_path / "steel_push.csv")
    out = tmp_path / "run"
    assert main(["import", "csv", str(path), "--transform", TRANSFORM_ARG, *OBJECT_ARGS, "--object", "steel",
                 "--out", str(out)]) == 0, capsys.readouterr().err
    (trial,) = read_run(out)
    t, box, yaw, pusher = _rows()
    poses = trial.platforms["real"].box_pose
    np.testing.assert_allclose(poses.t, t, atol=1e-9, rtol=0)
    np.testing.assert_allclose(poses.position[:, :2], _to_base(box), atol=1e-9, rtol=0)
    np.testing.assert_array_equal(poses.position[:, 2], np.full(N, SIZE[2] / 2))  # half the thickness, exactly
    heading = yaw + THETA
    expected = np.stack([np.cos(heading / 2), np.zeros(N), np.zeros(N), np.sin(heading / 2)], axis=1)
    sign = np.sign(np.sum(poses.quaternion * expected, axis=1))[:, None]  # q and -q are one orientation
    np.testing.assert_allclose(sign * poses.quaternion, expected, atol=1e-9, rtol=0)
    tips = trial.platforms["real"].pusher_pose
    np.testing.assert_allclose(tips.position[:, :2], _to_base(pusher), atol=1e-9, rtol=0)
    np.testing.assert_array_equal(tips.position[:, 2], np.full(N, SIZE[2] / 2))  # no pusher_z: the box's height
    meta = json.loads((out / "steel_push" / "trial.json").read_text())
    assert meta["import"]["planar"] == {"columns": ["box_x", "box_y", "box_yaw"], "box_z_m": SIZE[2] / 2,
                                        "pusher_z_m": SIZE[2] / 2, "tilt": "unknown"}
    real = meta["outcomes"]["real"]
    # a planar recording cannot show a tilt: no "never tilted, not flipped" without evidence
    assert real["planar"] is True
    assert all(real[key] is None for key in ("max_tilt_deg", "flipped", "up_axis_initial", "up_axis_final"))
    assert real["yaw_deg"] == pytest.approx(math.degrees(0.4), abs=1e-6)
    assert real["final_position_m"][2] == SIZE[2] / 2
    assert meta["object"]["name"] == "steel"


def test_a_recorded_pusher_height_is_kept(tmp_path: Path) -> None:
    # the probe tip 3 mm above the table in the arm base frame: below the recording frame's origin (SHIFT z)
    path = _planar_csv(tmp_path / "push.csv", pusher_z=0.003 - SHIFT[2])
    out = tmp_path / "run"
    assert main(["import", "csv", str(path), "--transform", TRANSFORM_ARG, *OBJECT_ARGS, "--out", str(out)]) == 0
    (trial,) = read_run(out)
    np.testing.assert_allclose(trial.platforms["real"].pusher_pose.position[:, 2], 0.003, atol=1e-12)
    np.testing.assert_array_equal(trial.platforms["real"].box_pose.position[:, 2], np.full(N, SIZE[2] / 2))
    assert trial.meta["import"]["planar"]["pusher_z_m"] is None  # recorded, not set


def test_a_replay_keeps_the_recorded_tilt_unknown(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["import", "csv", str(_planar_csv(tmp_path / "push.csv")), *OBJECT_ARGS, "--out", str(out)]) == 0
    replayed = tmp_path / "replayed"
    assert main(["replay", str(out), "--out", str(replayed)]) == 0
    outcomes = json.loads((replayed / "push" / "trial.json").read_text())["outcomes"]
    assert outcomes["real"]["planar"] is True and outcomes["real"]["flipped"] is None
    assert isinstance(outcomes["sim"]["flipped"], bool) and "planar" not in outcomes["sim"]  # simulated: known


PLANAR_ROWS = ["0,0.4,0,0.1", "0.01,0.41,0,0.1", "0.02,0.42,0,0.1"]


@pytest.mark.parametrize(("header", "rows", "extra", "message"), [
    ("t,box_x,box_y,box_yaw,box_z,box_qw,box_qx,box_qy,box_qz", [r + ",0.05,1,0,0,0" for r in PLANAR_ROWS], [],
     "columns box_yaw and box_z, box_qw, box_qx, box_qy, box_qz mix a planar box pose (box_x, box_y, box_yaw) "
     "with a 3-D one"),
    ("t,box_x,box_y,box_yaw,box_qz", [r + ",0" for r in PLANAR_ROWS], [], "columns box_yaw and box_qz mix"),
    ("t,box_x,box_y", ["0,0.4,0", "0.01,0.41,0", "0.02,0.42,0"], [],
     "no box orientation: needs t and either box_x, box_y, box_z, box_qw, box_qx, box_qy, box_qz (a 3-D pose) "
     "or box_x, box_y, box_yaw (a planar pose)"),
    ("t,box_x,box_yaw", ["0,0.4,0", "0.01,0.41,0", "0.02,0.42,0"], [],
     "missing columns box_y (needs t, box_x, box_y, box_yaw;"),
    ("t,box_x,box_y,box_yaw,pusher_x", [r + ",0.3" for r in PLANAR_ROWS], [],
     "missing columns pusher_y (the pusher needs x and y)"),
    ("t,box_x,box_y,box_z,box_qw,box_qx,box_qy,box_qz,pusher_x,pusher_y",
     ["0,0.4,0,0.05,1,0,0,0,0.3,0", "0.01,0.41,0,0.05,1,0,0,0,0.3,0", "0.02,0.42,0,0.05,1,0,0,0,0.3,0"], [],
     "missing columns pusher_z (the pusher needs x, y and z; x and y alone only beside a planar box pose"),
    ("t,box_x,box_y,box_yaw", PLANAR_ROWS, ["--no-object"], "a planar recording (box x, y and yaw) needs the object"),
    ("t,box_x,box_y,box_yaw", PLANAR_ROWS, ["--transform", "0,0,0,0.9950042,0.0998334,0,0"],
     ("error: --transform: ", "the frame transform tilts that plane by 11.5 deg")),
    ("t,box_x,box_y,box_yaw", PLANAR_ROWS, ["--box-transform", "0,0,0,0.9950042,0.0998334,0,0"],
     ("error: --box-transform: ", "the box transform tilts it by 11.5 deg")),
    ("t,box_x,box_y,box_yaw", PLANAR_ROWS, ["--box-offset", "0.01,0,-0.005"],
     ("error: --box-offset: ", "the box offset moves the box centre in the table plane only")),
])
def test_refusals_are_one_line_naming_the_file_and_write_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 header: str, rows: list[str], extra: list[str],
                                                                 message: str | tuple[str, ...]) -> None:
    path = _write(tmp_path / "rec.csv", header, rows)
    out = tmp_path / "out"
    objects = [] if "--no-object" in extra else OBJECT_ARGS
    options = [arg for arg in extra if arg != "--no-object"]
    assert main(["import", "csv", str(path), *objects, *options, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sim2real: error:") and err.count("\n") == 1, err
    assert all(part in err for part in ((message,) if isinstance(message, str) else message)) and str(path) in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec.csv"]

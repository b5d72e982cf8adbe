"""``sim2real import cube-toss`` end to end on a few real tosses, and its bad-input errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from children import HANG_GUARD_S

from sim2real.cli import main
from sim2real.data import cube_toss_npz
from sim2real.trials import read_run, read_trial

NPZ = cube_toss_npz()


def test_import_selected_tosses_round_trip(tmp_path: Path) -> None:
    out = tmp_path / "tosses"
    proc = subprocess.run([sys.executable, "-m", "sim2real", "import", "cube-toss", str(NPZ), "--out", str(out),
                           "--tosses", "0-2,100"], capture_output=True, text=True, timeout=HANG_GUARD_S,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "wrote 4 trials" in proc.stdout and "imported 4/4 tosses" in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["run.json", "toss_000", "toss_001", "toss_002", "toss_100"]
    with np.load(NPZ) as data:
        rows = slice(int(data["traj_offsets"][100]), int(data["traj_offsets"][101]))
        position, quaternion, t = data["position"][rows], data["quaternion"][rows], data["t"][rows]
    trial = read_trial(out / "toss_100", require=["/real/box_pose"])
    poses = trial.platforms["real"].box_pose
    assert set(trial.platforms) == {"real"} and trial.reference is None
    np.testing.assert_array_equal(poses.position, position)
    np.testing.assert_array_equal(poses.quaternion, quaternion)
    np.testing.assert_allclose(poses.t, t, atol=1e-9, rtol=0)
    assert np.allclose(np.diff(poses.t), 1 / 148, atol=1e-8)
    meta = trial.meta
    assert meta["object"]["side_m"] == 0.1048 and meta["object"]["mass_kg"] == 0.37
    assert meta["params"]["box.size_x"] == 0.1048 and meta["source"]["toss_id"] == 100
    assert "BSD-3-Clause" in meta["source"]["license"]
    # the cube ends at rest on a face, about half a side above the surface
    assert abs(meta["outcomes"]["real"]["final_position_m"][2] - 0.0524) < 0.003
    assert len(read_run(out)) == 4
    assert json.loads((out / "run.json").read_text())["tosses"] == [0, 1, 2, 100]


@pytest.mark.parametrize("tosses, message", [
    ("5-2", "runs backwards"), ("0-1000", "outside 0-569"), ("a,b", "is not N or N-M"), ("", "is not N or N-M"),
])
def test_bad_selection(tmp_path: Path, capsys: pytest.CaptureFixture[str], tosses: str, message: str) -> None:
    out = tmp_path / "out"
    assert main(["import", "cube-toss", str(NPZ), "--out", str(out), "--tosses", tosses]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("sim2real: error:")
    assert list(tmp_path.iterdir()) == []


def test_bad_files_and_existing_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["import", "cube-toss", str(tmp_path / "missing.npz"), "--out", str(out)]) == 2
    assert "does not exist" in capsys.readouterr().err
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, t=np.zeros(3), position=np.zeros((3, 3)))
    assert main(["import", "cube-toss", str(wrong), "--out", str(out)]) == 2
    assert "missing keys quaternion, traj_offsets, cube_side_m" in capsys.readouterr().err
    broken = tmp_path / "broken.npz"
    broken.write_bytes(b"PK\x03\x04 not really a zip")
    assert main(["import", "cube-toss", str(broken), "--out", str(out)]) == 2
    assert "cannot read cube-toss file" in capsys.readouterr().err
    offsets = tmp_path / "offsets.npz"
    np.savez(offsets, t=np.zeros(3), position=np.zeros((3, 3)), quaternion=np.zeros((3, 4)),
             traj_offsets=np.array([0, 2, 5]), cube_side_m=np.float64(0.1))
    assert main(["import", "cube-toss", str(offsets), "--out", str(out)]) == 2
    assert "traj_offsets" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.npz", "offsets.npz", "wrong.npz"]
    assert not out.exists()
    out.mkdir()
    assert main(["import", "cube-toss", str(offsets), "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert list(out.iterdir()) == []


def test_every_shipped_toss_passes_the_scene_check() -> None:
    """The cube starts in the air in every toss: none is refused as starting inside the surface (``sunken``,
    the one check a box-only trial gets), so ``import cube-toss`` still imports all 570."""
    from sim2real.trials.cube_toss import _scenes, load_cube_tosses

    data = load_cube_tosses(NPZ)
    records = _scenes(data, list(range(data.n_tosses)), 0.002, False, print)
    assert len(records) == 570 and all(r["checks"] == ["sunken"] and r["problems"] == [] for r in records.values())


def test_a_toss_starting_inside_the_surface_is_refused_unless_forced(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    side = 0.1
    z = np.array([0.2, 0.15, 0.1, 0.02, 0.03, 0.04])  # toss 1 starts 30 mm inside the surface
    npz = tmp_path / "tosses.npz"
    np.savez(npz, t=np.tile([0.0, 0.01, 0.02], 2), position=np.stack([np.zeros(6), np.zeros(6), z], axis=1),
             quaternion=np.tile([1.0, 0.0, 0.0, 0.0], (6, 1)), traj_offsets=np.array([0, 3, 6]),
             cube_side_m=np.float64(side))
    out = tmp_path / "out"
    assert main(["import", "cube-toss", str(npz), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == ("sim2real: error: trial 'toss_001': the box starts 30.0 mm inside the table (its lowest corner; "
                   "tolerance 2.0 mm): a box cannot start inside the table; check the file's frame (the landing "
                   "surface at z = 0) and cube_side_m, or import it flagged (forced) (see --force)\n")
    assert not out.exists()
    assert main(["import", "cube-toss", str(npz), "--out", str(out), "--scene-tolerance", "31"]) == 0
    capsys.readouterr()
    forced = tmp_path / "forced"
    assert main(["import", "cube-toss", str(npz), "--out", str(forced), "--force"]) == 0
    assert "import: WARNING: trial toss_001 imported flagged (forced)" in capsys.readouterr().err
    problems = read_trial(forced / "toss_001").meta["import"]["scene_checks"]["problems"]
    assert [p["check"] for p in problems] == ["sunken"] and problems[0]["value_m"] == pytest.approx(0.03)
    assert read_trial(forced / "toss_000").meta["import"]["scene_checks"]["problems"] == []

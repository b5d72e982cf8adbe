"""``sim2real calibrate`` end to end: hidden frames and a late box clock recovered from the pushes themselves,
written as a frames file that ``import --frames`` applies; bad input refused in one line.

One seed of ``benchmarks.frames_truth`` (which runs ten): eight slow pushes of a plate by a rod, recorded as CSV
with the tracking frame shifted and turned, the box height and the tracking origin off and the box stream late
(``tests/fixtures/framed_pushes.py``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from fixtures import framed_pushes

from sim2real.cli import main
from sim2real.trials import read_run

#: Largest error per correction (the issue's targets: 1 mm, 0.2°, 5 ms), in the corrections' units.
TOLERANCE = {"dx_m": 1e-3, "dy_m": 1e-3, "dyaw_rad": np.radians(0.2), "dz_m": 1e-3, "ox_m": 1e-3, "oy_m": 1e-3,
             "delay_s": 5e-3}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], dict[str, float]]:
    """Seed 0's recordings imported as recorded (``--force``: the boxes float by the hidden height)."""
    root = tmp_path_factory.mktemp("framed")
    paths, hidden = framed_pushes.write_recordings(root / "rec", 0)
    recordings = [str(p) for p in paths]
    assert main(["import", "csv", *recordings, *framed_pushes.OBJECT_OPTIONS, "--out", str(root / "refused")]) == 2
    assert main(["import", "csv", *recordings, *framed_pushes.OBJECT_OPTIONS, "--force", "--out",
                 str(root / "raw")]) == 0
    return root, recordings, hidden


def _corrections(path: Path) -> dict[str, dict]:
    return yaml.safe_load(path.read_text())["calibration"]["corrections"]


@pytest.mark.slow
def test_calibrate_recovers_the_hidden_frames_and_the_calibrated_import_is_physical(recorded, capsys) -> None:
    root, recordings, hidden = recorded
    frames = root / "frames.yaml"
    assert main(["calibrate", str(root / "raw"), "--out", str(frames)]) == 0
    err = capsys.readouterr().err
    assert "as imported: contact distance" in err and "calibrated : contact distance" in err
    document = yaml.safe_load(frames.read_text())
    assert document["format"] == "sim2real.frames/1"
    truth = framed_pushes.at_pivot(hidden, document["calibration"]["pivot_m"])
    for name, tolerance in TOLERANCE.items():
        c = document["calibration"]["corrections"][name]
        assert c["determined"], name
        assert abs(c["value"] - truth[name]) <= tolerance, (name, c, truth[name])
        assert c["ci95"][0] <= truth[name] <= c["ci95"][1], (name, c, truth[name])
    after = document["calibration"]["residuals"]["after"]
    assert after["contact_p95_m"] < 1e-3 and max(abs(h) for h in after["rest_height_m"]) < 5e-4
    # Applied at import: the scene checks pass without --force, and nothing is left to correct.
    assert main(["import", "csv", *recordings, *framed_pushes.OBJECT_OPTIONS, "--frames", str(frames),
                 "--out", str(root / "calibrated")]) == 0
    records = read_run(root / "calibrated")
    assert all(not r.meta["import"]["scene_checks"]["problems"] for r in records)
    assert records[0].meta["import"]["box_delay_s"] == pytest.approx(document["box_delay_s"])
    # What the calibration leaves unknown of the frame goes with each trial, for the spreads to draw from.
    kept = records[0].meta["import"]["frame_uncertainty"]
    for name in ("dx_m", "dy_m", "dyaw_rad", "ox_m", "oy_m"):  # the origin's too: both were determined here
        std = document["calibration"]["corrections"][name]["std"]
        assert std > 0 and kept[f"{name}_std"] == pytest.approx(std), name
    assert kept["pivot_m"] == pytest.approx(document["calibration"]["pivot_m"])
    assert main(["calibrate", str(root / "calibrated"), "--out", str(root / "again.yaml")]) == 0
    again = _corrections(root / "again.yaml")
    for name in ("dx_m", "dy_m", "dz_m", "ox_m", "oy_m"):
        assert abs(again[name]["value"]) < 2e-4, (name, again[name])
    assert abs(again["dyaw_rad"]["value"]) < np.radians(0.05) and abs(again["delay_s"]["value"]) < 2e-3


@pytest.mark.slow
def test_pushes_on_one_face_leave_the_offset_along_it_undetermined_and_unapplied(recorded, tmp_path) -> None:
    """The trials whose pushes met the plate's -x face (every fourth met its -y face): nothing tells the origin's
    offset along that face; it is reported NOT DETERMINED, and the frames file does not apply it."""
    root, _, _ = recorded
    trials = [p for p in sorted((root / "raw").iterdir()) if p.is_dir() and not p.name.endswith(("_00", "_04"))]
    out = tmp_path / "frames.yaml"
    assert main(["calibrate", *map(str, trials), "--out", str(out)]) == 0
    document = yaml.safe_load(out.read_text())
    oy = document["calibration"]["corrections"]["oy_m"]
    assert not oy["determined"] and oy["std"] >= 0.01
    offset = [float(v) for v in document["box_offset"].split(",")]
    assert offset[1] == 0.0 and abs(offset[0]) > 0.0  # oy not applied; ox is
    drawn = document["frame_uncertainty"]  # and not drawn by the spreads (its ±20 mm prior says nothing)
    assert drawn["oy_m_std"] == 0.0 and drawn["ox_m_std"] > 0.0


@pytest.mark.parametrize("case", ["one_trial", "out_exists", "mixed_imports", "not_imported_pushes"])
def test_calibrate_bad_input_is_one_line_and_writes_nothing(case: str, recorded, tmp_path, capsys) -> None:
    root, recordings, _ = recorded
    trials = sorted(p for p in (root / "raw").iterdir() if p.is_dir())
    out = tmp_path / "frames.yaml"
    args = [str(trials[0]), str(trials[1])]
    expected = ""
    if case == "one_trial":
        args, expected = [str(trials[0])], "at least 2 trials"
    elif case == "out_exists":
        out.write_text("mine\n")
        expected = "exists"
    elif case == "mixed_imports":
        other = tmp_path / "shifted"
        assert main(["import", "csv", recordings[0], *framed_pushes.OBJECT_OPTIONS, "--force", "--box-delay", "0.01",
                     "--out", str(other)]) == 0
        args, expected = [str(trials[1]), str(other)], "imported with other frames"
    elif case == "not_imported_pushes":
        bare = tmp_path / "bare"
        assert main(["import", "csv", *recordings[:2], "--out", str(bare)]) == 0  # no object
        args, expected = [str(bare)], "no object with a pusher"
    capsys.readouterr()
    assert main(["calibrate", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expected in err, err
    assert out.read_text() == "mine\n" if case == "out_exists" else not out.exists()


@pytest.mark.parametrize("case", ["with_box_offset", "missing", "not_frames", "bad_delay"])
def test_import_frames_bad_input_is_one_line_and_writes_nothing(case: str, recorded, tmp_path, capsys) -> None:
    _, recordings, _ = recorded
    frames = tmp_path / "frames.yaml"
    extra: list[str] = []
    document = {"format": "sim2real.frames/1", "box_transform": "0,0,0,1,0,0,0", "box_offset": "0,0,0",
                "box_delay_s": 0.01}
    expected = {"with_box_offset": "give one or the other", "missing": "not a file", "not_frames": "not a frames file",
                "bad_delay": "not a delay"}[case]
    if case == "with_box_offset":
        extra = ["--box-offset", "0,0,0"]
    elif case == "not_frames":
        document = {"experiment": 1}  # type: ignore[dict-item]
    elif case == "bad_delay":
        document["box_delay_s"] = 1e9
    if case != "missing":
        frames.write_text(yaml.safe_dump(document))
    out = tmp_path / "run"
    capsys.readouterr()
    assert main(["import", "csv", recordings[0], *framed_pushes.OBJECT_OPTIONS, "--force", "--frames", str(frames),
                 *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expected in err, err
    assert not out.exists()


def test_a_box_delay_moves_the_box_samples_back(recorded, tmp_path) -> None:
    _, recordings, _ = recorded
    plain, late = tmp_path / "plain", tmp_path / "late"
    assert main(["import", "csv", recordings[0], *framed_pushes.OBJECT_OPTIONS, "--force", "--out", str(plain)]) == 0
    assert main(["import", "csv", recordings[0], *framed_pushes.OBJECT_OPTIONS, "--force", "--box-delay", "0.05",
                 "--out", str(late)]) == 0
    (a,), (b,) = read_run(plain), read_run(late)
    box_a, box_b = a.platforms["real"].box_pose, b.platforms["real"].box_pose
    pusher_a, pusher_b = a.platforms["real"].pusher_pose, b.platforms["real"].pusher_pose
    np.testing.assert_allclose(box_b.position, box_a.position)
    # Times are from the trial's start: the box samples moved 50 ms earlier against the pusher's.
    shift = (box_b.t - pusher_b.t[0]) - (box_a.t - pusher_a.t[0])
    np.testing.assert_allclose(shift, -0.05, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("ros1", [True, False], ids=["ros1_bag", "ros2_mcap"])
def test_calibrate_bags_as_a_lab_records_them(ros1: bool, tmp_path: Path) -> None:
    """The same pushes (seed 1) as ROS 1 bags and as ROS 2 mcap bags of PoseStamped topics: imported as
    recorded, calibrated, imported again with --frames: the hidden frames recovered and the scene physical."""
    bags, hidden = framed_pushes.write_bags(tmp_path / "bags", 1, ros1)
    options = ["--box-pose", framed_pushes.BOX_TOPIC, "--pusher-pose", framed_pushes.PUSHER_TOPIC,
               *framed_pushes.OBJECT_OPTIONS]
    assert main(["import", "bag", *map(str, bags), *options, "--force", "--out", str(tmp_path / "raw")]) == 0
    frames = tmp_path / "frames.yaml"
    assert main(["calibrate", str(tmp_path / "raw"), "--out", str(frames)]) == 0
    document = yaml.safe_load(frames.read_text())
    truth = framed_pushes.at_pivot(hidden, document["calibration"]["pivot_m"])
    for name, tolerance in TOLERANCE.items():
        c = document["calibration"]["corrections"][name]
        assert c["determined"] and abs(c["value"] - truth[name]) <= tolerance, (name, c, truth[name])
    assert main(["import", "bag", *map(str, bags), *options, "--frames", str(frames), "--out",
                 str(tmp_path / "calibrated")]) == 0
    assert all(not r.meta["import"]["scene_checks"]["problems"] for r in read_run(tmp_path / "calibrated"))


#: The rod tip in the flange's axes (a flange pointing down: +z is down), m, and the user's error in it.
TOOL = np.array([0.0, 0.0, 0.12])
TOOL_ERROR = np.array([0.004, -0.006, 0.0])


def _tool_import(bags: list[Path], out: Path, *extra: str) -> int:
    given = TOOL + TOOL_ERROR
    return main(["import", "bag", *map(str, bags), "--box-pose", framed_pushes.BOX_TOPIC, "--pusher-pose",
                 framed_pushes.PUSHER_TOPIC, *framed_pushes.OBJECT_OPTIONS, "--tool-offset",
                 ",".join(f"{v:g}" for v in given), *extra, "--out", str(out)])


@pytest.mark.slow
def test_a_wrong_tool_offset_is_recovered_when_the_flange_turns_between_pushes(tmp_path: Path, capsys) -> None:
    """Flange poses turned ±40° about the vertical from push to push, imported with a tool offset 4 mm and
    -6 mm off in the flange's x and y: calibrate estimates the error in the pusher's axes (within 1 mm, its
    95 % interval holding it; the component along the rod is held), the frame still within the targets; the
    frames file's --tool-offset is the true one, and the import with it leaves nothing to correct."""
    bags, hidden = framed_pushes.write_bags(tmp_path / "bags", 2, ros1=False, tool=TOOL, turn_deg=40.0)
    assert _tool_import(bags, tmp_path / "raw", "--force") == 0
    frames = tmp_path / "frames.yaml"
    assert main(["calibrate", str(tmp_path / "raw"), "--out", str(frames)]) == 0
    assert "tool offset was not" not in capsys.readouterr().err
    document = yaml.safe_load(frames.read_text())
    corrections = document["calibration"]["corrections"]
    for name, error in zip(("tx_m", "ty_m"), TOOL_ERROR, strict=False):
        c = corrections[name]
        assert c["determined"] and abs(c["value"] + error) <= 1e-3, (name, c)
        assert c["ci95"][0] <= -error <= c["ci95"][1], (name, c)
    assert "tz_m" not in corrections  # along the rod, pointing down: no vertical face sees it, so it is held
    truth = framed_pushes.at_pivot(hidden, document["calibration"]["pivot_m"])
    for name, tolerance in TOLERANCE.items():
        assert abs(corrections[name]["value"] - truth[name]) <= tolerance, (name, corrections[name], truth[name])
    tool = np.array([float(v) for v in document["tool_offset"].split(",")])
    assert np.allclose(tool[:2], TOOL[:2], atol=1e-3), tool
    # --frames sets the tool offset: the same --tool-offset beside it is refused as another one
    assert _tool_import(bags, tmp_path / "both", "--frames", str(frames)) == 2
    assert "sets the tool offset" in capsys.readouterr().err and not (tmp_path / "both").exists()
    assert main(["import", "bag", *map(str, bags), "--box-pose", framed_pushes.BOX_TOPIC, "--pusher-pose",
                 framed_pushes.PUSHER_TOPIC, *framed_pushes.OBJECT_OPTIONS, "--frames", str(frames), "--out",
                 str(tmp_path / "calibrated")]) == 0
    again = tmp_path / "again.yaml"
    assert main(["calibrate", str(tmp_path / "calibrated"), "--out", str(again)]) == 0
    left = _corrections(again)
    assert all(abs(left[name]["value"]) < 5e-4 for name in ("dx_m", "dy_m", "tx_m", "ty_m")), left


@pytest.mark.slow
def test_a_tool_offset_with_one_flange_orientation_is_named_and_taken_up_by_the_frame(tmp_path: Path,
                                                                                      capsys) -> None:
    """The same wrong tool offset with the flange in one orientation: a tool offset is then a frame shift, so
    calibrate says it was not estimated and why, and the frame shift takes it up (the calibrated import is
    physical: contact distances within a millimetre)."""
    bags, _ = framed_pushes.write_bags(tmp_path / "bags", 2, ros1=False, tool=TOOL, turn_deg=0.0)
    assert _tool_import(bags, tmp_path / "raw", "--force") == 0
    frames = tmp_path / "frames.yaml"
    assert main(["calibrate", str(tmp_path / "raw"), "--out", str(frames)]) == 0
    err = capsys.readouterr().err
    assert "the tool offset was not estimated: the pusher's recorded orientation turned 0.0°" in err, err
    document = yaml.safe_load(frames.read_text())
    assert "tx_m" not in document["calibration"]["corrections"]
    assert "tool offset was not estimated" in document["calibration"]["tool_note"]
    assert document["calibration"]["residuals"]["after"]["contact_p95_m"] < 1e-3
    assert _tool_import(bags, tmp_path / "calibrated", "--frames", str(frames)) == 0  # the same tool offset

"""The report compares sim and real by outcomes that hold for a push in any direction.

Issue 15: a trial whose sim box ended 183 mm from the real one showed a "0.4 cm" gap because the
push ran along y and the gap was measured along x. Probe pushes imported from another lab (no
arm: no joint states, commands or reference) are built here with the project's writers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fixtures.synthetic_trials import make_trial

from sim2real.report import build_report, experiment_table
from sim2real.report.tables import experiment_header, experiment_rows_text, is_standard_push
from sim2real.trials import PlatformRecord, PoseSeries, TrialRecord, read_run, write_run_meta, write_trial

START = np.array([0.40, 0.0, 0.05])  # m, box centre in the arm base frame
SIZE = {"box.size_x": 0.10, "box.size_y": 0.10, "box.size_z": 0.10}
T = np.arange(51) / 50.0  # s


def _yaw_quaternions(angle_rad: np.ndarray) -> np.ndarray:
    """(N, 4) quaternions (w, x, y, z) of turns about world z."""
    half = 0.5 * angle_rad
    return np.stack([np.cos(half), np.zeros_like(half), np.zeros_like(half), np.sin(half)], axis=-1)


def _box(travel_y: float, drift_x: float, yaw_deg: float) -> PoseSeries:
    """The box sliding ``travel_y`` along +y (smoothly), drifting ``drift_x`` along x, turning ``yaw_deg``."""
    s = 3 * T**2 - 2 * T**3
    position = START + np.outer(s, [drift_x, travel_y, 0.0])
    return PoseSeries(T, position, _yaw_quaternions(np.radians(yaw_deg) * s))


def _probe_trial(index: int, sim_travel_y: float, sim_drift_x: float) -> TrialRecord:
    """A probe push along +y imported from another lab and replayed: real travels 20 cm along y and
    turns 10°; the sim box travels ``sim_travel_y`` and turns 4°. No arm data at all."""
    identity = np.tile([1.0, 0.0, 0.0, 0.0], (T.size, 1))
    probe = PoseSeries(T, START + np.outer(T, [0.0, 0.2, 0.0]) - [0.0, 0.07, 0.0], identity)
    platforms = {"real": PlatformRecord(box_pose=_box(0.20, 0.0, 10.0), pusher_pose=probe),
                 "sim": PlatformRecord(box_pose=_box(sim_travel_y, sim_drift_x, 4.0), pusher_pose=probe)}
    start_ns = 1_700_000_000_000_000_000 + index * 10**10
    meta = {"mode": "replay", "mirror": "pusher", "replay_of": f"pushes_{index:02d}", "params": SIZE,
            "import": {"source": "/data/lab/pushes.bag", "format": "ros1"},
            "timing": {"start_ns": start_ns, "end_ns": start_ns + 10**9, "wall_s": 1.0}}
    return TrialRecord(f"pushes_{index:02d}", platforms, None, meta)


def _probe_run(path: Path, sim_travel_y: float, sim_drift_x: float) -> Path:
    write_run_meta(path, {"mode": "replay"})
    for index in range(2):
        write_trial(path, _probe_trial(index, sim_travel_y, sim_drift_x))
    return path


def test_a_push_along_y_is_compared_by_its_true_final_error(tmp_path: Path) -> None:
    before = _probe_run(tmp_path / "before", sim_travel_y=0.017, sim_drift_x=0.004)  # 18.3 cm short along y
    after = _probe_run(tmp_path / "after", sim_travel_y=0.19, sim_drift_x=0.004)  # 1 cm short
    paths = build_report([before, after], tmp_path / "report", labels=["before", "after"])
    table, fitted = paths.tables
    error = float(np.hypot(0.183, 0.004))  # 183.04 mm, where x alone says 4 mm
    assert [r.final_error_xy_m for r in table.rows] == pytest.approx([error, error])
    assert table.mean_final_error_xy_m == pytest.approx(error) and table.max_final_error_xy_m == pytest.approx(error)
    assert table.mean_final_error_m == pytest.approx(error)  # both boxes stay on the table: 3-D = 2-D
    assert table.mean_yaw_error_deg == pytest.approx(6.0)
    s = 3 * T**2 - 2 * T**3  # the two paths part along the same smooth profile
    offsets = np.outer(s, [0.004, 0.017 - 0.20])
    assert table.mean_path_rms_m == pytest.approx(np.sqrt(np.mean(np.sum(offsets**2, axis=1))))
    assert fitted.mean_final_error_xy_m == pytest.approx(np.hypot(0.01, 0.004))
    # Not the standard push along x: no x columns, no x gap anywhere (mean_gap_m is None).
    assert not table.standard_pushes and table.mean_gap_m is None and fitted.mean_gap_m is None
    assert all(r.gap_m is None for r in table.rows)
    assert experiment_header(table) == ("trial", "final error xy (mm)", "final error 3-D (mm)", "yaw error (deg)",
                                        "path RMS (mm)", "real flip", "sim flip", "agree")
    rms = f"{1000 * table.mean_path_rms_m:.1f}"
    assert experiment_rows_text(table)[0] == ["pushes_00", "183.0", "183.0", "6.0", rms, "no", "no", "yes"]
    md = paths.markdown.read_text()
    assert f"| pushes_00 | 183.0 | 183.0 | 6.0 | {rms} | no | no | yes |" in md
    assert "Final position error over 2 trial(s): mean 183.0 mm, max 183.0 mm in the table plane" in md
    assert ("Mean sim-vs-real final position error in the table plane: 183.0 mm ('before') → 10.8 mm ('after'), "
            "172.3 mm smaller (-94 %).") in md
    assert "x gap" not in md and "| 0.4 |" not in md and "No trial is the standard push along x" in md
    assert "real: final at x 40.0 cm, y 20.0 cm" in md  # per trial: where the box ended, not its x alone
    assert "Sim vs real: final position error 183.0 mm in the table plane (183.0 mm in 3-D), yaw error 6.0°" in md
    assert "x gap" not in paths.text and "mean 183.0 mm" in paths.text


@pytest.mark.slow
def test_a_trial_without_joint_states_has_no_joint_figure(tmp_path: Path) -> None:
    probe = _probe_run(tmp_path / "probe", sim_travel_y=0.19, sim_drift_x=0.0)
    paths = build_report([probe], tmp_path / "report")
    names = sorted(p.name for p in paths.figures)
    assert names == ["fig_0_pushes_00_box.png", "fig_0_pushes_01_box.png"]  # no joints, commands, x distances
    md = paths.markdown.read_text()
    assert md.count("No arm data in this trial") == 2
    assert "joint positions" not in md and "joint states" not in md.replace("no joint states", "")
    assert "Not recorded in this trial" not in md  # nothing an arm-less push should have had is missing
    # A trial of the arm keeps its joint figures next to it.
    mixed = tmp_path / "mixed"
    write_run_meta(mixed, {"mode": "standin"})
    write_trial(mixed, make_trial(0, 0.30, duration=1.0, rate_hz=50.0))
    write_trial(mixed, _probe_trial(1, 0.19, 0.0))
    names = sorted(p.name for p in build_report([mixed], tmp_path / "report2").figures)
    assert names == ["fig_0_pushes_01_box.png", "fig_0_trial_00_d0.300_box.png", "fig_0_trial_00_d0.300_commands.png",
                     "fig_0_trial_00_d0.300_joints.png", "fig_final_distance.png"]


def test_x_columns_only_for_the_standard_push(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_run_meta(run, {"mode": "standin"})
    write_trial(run, make_trial(0, 0.30, duration=1.0, rate_hz=50.0, real_travel=0.17, sim_travel=0.15))
    write_trial(run, _probe_trial(1, 0.017, 0.004))
    table = experiment_table("run", read_run(run))
    probe, standard = table.rows  # in name order
    assert standard.standard_push and not probe.standard_push
    assert table.mean_gap_m == pytest.approx(0.02)  # the standard push alone: the probe push's x says nothing
    assert table.mean_final_error_xy_m == pytest.approx((0.02 + np.hypot(0.183, 0.004)) / 2)
    assert experiment_header(table)[1:5] == ("start x (cm)", "real final x (cm)", "sim final x (cm)", "x gap (cm)")
    rows = {row[0]: row for row in experiment_rows_text(table)}
    assert rows["trial_00_d0.300"][1:6] == ["30.0", "47.0", "45.0", "2.0", "20.0"]
    assert rows["pushes_01"][1:6] == ["—", "—", "—", "—", "183.0"]
    assert any("Not the standard push along x from the arm base: pushes_01" in note for note in table.notes)


@pytest.mark.parametrize(("meta", "standard"), [
    ({"initial_distance_m": 0.3, "mode": "standin", "requested_start_m": [0.3, 0.0]}, True),  # the experiment
    ({"initial_distance_m": 0.3, "mode": "sim"}, True),  # simulate --distance, the stand-in, their replays
    ({"initial_distance_m": 0.41, "mode": "import", "import": {"source": "a.bag"}}, False),  # import bag|csv
    ({"initial_distance_m": 0.41, "mode": "replay", "import": {"source": "a.bag"}}, False),  # ... replayed
    ({"initial_distance_m": 0.0, "mode": "cube_toss", "object": {"side_m": 0.1}}, False),
    ({"mode": "replay", "object": {"side_m": 0.1}}, False),
    ({}, False),  # a bare bag: nothing says where the box started
])
def test_which_trials_are_the_standard_push(meta: dict, standard: bool) -> None:
    assert is_standard_push(TrialRecord("t", {}, None, meta)) is standard

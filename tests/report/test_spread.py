"""``report --sweep``: the outcome spread a sweep predicts, beside the real outcomes (issue 17)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from fixtures.synthetic_trials import make_trial

from sim2real.cli import main
from sim2real.report import experiment_table
from sim2real.report.spread import read_sweep, spread_rows
from sim2real.sysid.prediction.sweep import OUTCOME_COLUMNS
from sim2real.trials import read_run, write_run_meta, write_trial

SHORT_EXPERIMENT = """\
/**:
  ros__parameters:
    push: {height: 0.15, lateral: 0.0, start_x: 0.20, end_x: 0.30, speed: 0.55, ramp_time: 0.1,
           pre_time: 0.05, settle_time: 0.2, rate_hz: 100.0}
"""


def _real_run(path: Path) -> Path:
    """Synthetic real pushes: two from 0.30 m ending at 0.45 m (toppled), one from 0.40 m ending at 0.70 m."""
    write_run_meta(path, {"mode": "standin"})
    for index, (distance, travel, topple) in enumerate(((0.30, 0.15, True), (0.30, 0.15, True),
                                                        (0.40, 0.30, False))):
        write_trial(path, make_trial(index, distance, sim=False, real_travel=travel, real_topple=topple))
    return path


def _sweep_table(path: Path) -> Path:
    """outcomes.csv with known rows: at 0.30 m, final x 0.40..0.50 m (41 rows, 10 flipped, one failed row);
    at 0.40 m, final x 0.50..0.60 m (41 rows, none flipped)."""
    path.mkdir()
    with (path / "outcomes.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["point", "distance", "contact.mu_table", *OUTCOME_COLUMNS])
        for distance, low, flips in ((0.30, 0.40, 10), (0.40, 0.50, 0)):
            for k, final in enumerate(np.linspace(low, low + 0.10, 41)):
                writer.writerow([k, repr(distance), 0.5, final, 0.0, 0.05, 0.0, int(k < flips), 3.0, 1, 0, ""])
        writer.writerow([99, repr(0.30), 0.5, "", "", "", "", "", "", "", "", "solver failed"])
    return path


def test_spread_rows_count_flips_ranges_and_real_trials_inside(tmp_path: Path) -> None:
    table = experiment_table("real", read_run(_real_run(tmp_path / "real")))
    rows = spread_rows(read_sweep(_sweep_table(tmp_path / "sweep")), table)
    assert [r.distance for r in rows] == [0.30, 0.40] and [r.samples for r in rows] == [41, 41]
    near, far = rows
    assert near.flip_probability == pytest.approx(10 / 41) and near.flip_low < 10 / 41 < near.flip_high
    assert near.final_low == pytest.approx(0.4025) and near.final_high == pytest.approx(0.4975)
    assert near.real_final == pytest.approx((0.45, 0.45)) and near.real_flips == 2 and near.real_inside == 2
    assert far.real_final == pytest.approx((0.70,)) and far.real_flips == 0 and far.real_inside == 0


@pytest.mark.slow
def test_report_sweep_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    real = _real_run(tmp_path / "real")
    experiment = tmp_path / "short.yaml"
    experiment.write_text(SHORT_EXPERIMENT)
    sweep = tmp_path / "sweep"  # a real sweep: its table is what the report reads
    assert main(["sweep", "--distances", "0.30,0.40", "--set-grid", "contact.mu_table=0.3:0.6:2", "--experiment",
                 str(experiment), "--out", str(sweep)]) == 0
    out = tmp_path / "report"
    assert main(["report", str(real), "--sweep", str(sweep), "--out", str(out)]) == 0
    markdown = (out / "report.md").read_text()
    assert "## Predicted spread (sweep) against the real outcomes" in markdown
    assert "real final distances lie inside the predicted 95 % range" in markdown
    assert (out / "spread.png").stat().st_size > 1000
    capsys.readouterr()


def test_report_sweep_without_a_table_is_an_error_and_writes_nothing(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    real = _real_run(tmp_path / "real")
    (tmp_path / "empty").mkdir()
    out = tmp_path / "report"
    assert main(["report", str(real), "--sweep", str(tmp_path / "empty"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no outcomes.csv" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


# ------------------------------------------------------------------------------- calibrated bands (issue 55)

#: The fit's band calibration: 9 calibration trials at level 0.9 (q = the largest score, 1.8), discrepancy x 0.1 m.
CALIBRATION = {"level": 0.9, "discrepancy": {"x_m": 0.1, "y_m": 0.004, "yaw_deg": 2.0},
               "scores": [0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8]}


def _keep_calibration(sweep: Path, calibration: dict | None = CALIBRATION) -> Path:
    """sweep.json as ``sweep --samples DIR`` writes it over samples whose fit kept ``calibration``."""
    from sim2real.sysid.prediction.bands import BandCalibration

    stored = BandCalibration.from_dict(calibration, "test").as_dict() if calibration is not None else None
    (sweep / "sweep.json").write_text(json.dumps({"schema": "sim2real.sweep/1", "config": {},
                                                  "band_calibration": stored}))
    return sweep


def _report(tmp_path: Path, sweep: Path) -> str:
    out = tmp_path / "report"
    assert main(["report", str(_real_run(tmp_path / "real")), "--sweep", str(sweep), "--out", str(out)]) == 0
    return (out / "report.md").read_text()


def test_the_calibrated_band_widens_each_mode_by_the_discrepancy(tmp_path: Path) -> None:
    from sim2real.report.spread import sweep_calibration

    sweep = _keep_calibration(_sweep_table(tmp_path / "sweep"))
    table = experiment_table("real", read_run(_real_run(tmp_path / "real")))
    rows = spread_rows(read_sweep(sweep), table, sweep_calibration(sweep))
    far = rows[1]  # 41 rows, final x evenly 0.50..0.60 m: one mode, centre 0.55 m, s = 0.0025 sqrt((41^2 - 1)/12) m
    s = 0.0025 * np.sqrt((41 ** 2 - 1) / 12)
    half = 1.8 * np.sqrt(s ** 2 + 0.1 ** 2)
    assert far.calibrated and len(far.modes) == 1
    assert far.final_band() == [pytest.approx((0.55 - half, 0.55 + half))]
    assert far.final_low == pytest.approx(0.5025) and far.final_high == pytest.approx(0.5975)  # parameter-only
    # the real push from 0.40 m ended at 0.70 m: outside the parameter-only range, inside the calibrated band
    assert far.parameter_inside == 0 and far.real_inside == 1
    y_half = 1.8 * np.sqrt(1e-5 ** 2 + 0.004 ** 2)  # every row at y = 0: the draws' scale is its floor
    assert far.boxes[0, 1] == pytest.approx([-y_half, y_half])
    markdown = _report(tmp_path / "r", sweep)
    assert "calibrated 90 % band" in markdown and "The final-x band is calibrated (90 %" in markdown
    assert f"[{100 * (0.55 - half):.1f}, {100 * (0.55 + half):.1f}]" in markdown
    assert "3 of 3 real final distances lie inside the calibrated 90 % band; the parameter-only 95 % range holds 2" \
        in markdown
    assert "NOT CALIBRATED" not in markdown


@pytest.mark.slow
def test_without_a_calibration_the_range_is_parameter_only(tmp_path: Path) -> None:
    from sim2real.report.spread import sweep_calibration

    for name, sweep in (("no sweep.json", _sweep_table(tmp_path / "bare")),
                        ("none kept", _keep_calibration(_sweep_table(tmp_path / "none"), None))):
        assert sweep_calibration(sweep) is None, name
        markdown = _report(tmp_path / name.replace(" ", "_"), sweep)
        assert "parameter-only (NOT CALIBRATED" in markdown, name
        assert "95 % range, parameter-only" in markdown and "calibrated 90 % band" not in markdown, name
        assert "2 of 3 real final distances lie inside the predicted 95 % range (parameter-only, not calibrated)" \
            in markdown, name


def _two_mode_table(path: Path, yaw_rad: float = 0.0, flipped_rows: int = 10) -> Path:
    """At 0.30 m: 30 upright rows ending near 0.48 m (heading ``yaw_rad``) and ``flipped_rows`` flipped rows near
    0.40 m (two clusters; a flipped box's x axis points down: its heading is -pi)."""
    path.mkdir()
    with (path / "outcomes.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["point", "distance", "contact.mu_table", *OUTCOME_COLUMNS])
        for k in range(30 + flipped_rows):
            flipped = k < flipped_rows
            final = (0.40 if flipped else 0.48) + 0.001 * (k % 5)
            writer.writerow([k, repr(0.30), 0.5, final, 0.0, 0.05, -np.pi if flipped else yaw_rad, int(flipped), 3.0,
                             1, 0, ""])
    return path


@pytest.mark.slow
def test_modes_that_split_flip_from_no_flip_are_named(tmp_path: Path) -> None:
    from sim2real.report.spread import sweep_calibration

    sweep = _keep_calibration(_two_mode_table(tmp_path / "sweep"))
    rows = spread_rows(read_sweep(sweep), experiment_table("real", read_run(_real_run(tmp_path / "real"))),
                       sweep_calibration(sweep))
    near = rows[0]
    assert near.flip_probability == pytest.approx(0.25)  # still the share of the rows
    assert [m.probability for m in near.modes] == [0.75, 0.25] and near.mode_flips == (0.0, 1.0) and near.flip_split
    assert [m.centre[0] for m in near.modes] == pytest.approx([0.482, 0.402])
    assert not near.yaw_known  # flipped rows: the heading of the box's x axis (-180 deg here) is not a yaw
    markdown = _report(tmp_path / "r", sweep)
    assert "split into modes that flip or not: at 30.0 cm 0.75 upright (x 48.2), 0.25 flipped (x 40.2)" in markdown
    assert "/ n/a" in markdown


def test_yaw_since_the_start_is_the_sweeps_heading_in_degrees(tmp_path: Path) -> None:
    from sim2real.control.sim_platform import box_at_distance
    from sim2real.params import ParameterSet
    from sim2real.report.spread import STANDARD_START_YAW_RAD
    from sim2real.spatial import yaw

    assert yaw(box_at_distance(0.3, ParameterSet.nominal()).quaternion) == STANDARD_START_YAW_RAD
    sweep = _two_mode_table(tmp_path / "sweep", yaw_rad=0.1)
    outcomes = read_sweep(sweep)[0.30]
    upright = outcomes.final[~outcomes.flipped]
    assert upright[:, 2] == pytest.approx(np.degrees(0.1)) and upright[:, 1] == pytest.approx(0.0)
    assert np.all(outcomes.mode_points()[:, 2] == 0.0)  # unknown for the flipped rows: left out of the modes
    upright_only = read_sweep(_two_mode_table(tmp_path / "upright", yaw_rad=0.1, flipped_rows=0))[0.30]
    assert upright_only.yaw_known and upright_only.mode_points()[:, 2] == pytest.approx(np.degrees(0.1))

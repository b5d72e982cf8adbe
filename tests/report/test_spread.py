"""``report --sweep``: the outcome spread a sweep predicts, beside the real outcomes (issue 17)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from fixtures.synthetic_trials import make_trial

from sim2real.cli import main
from sim2real.report import experiment_table
from sim2real.report.spread import read_sweep, spread_rows
from sim2real.trials import read_run, write_run_meta, write_trial
from sim2real.trials.sweep import OUTCOME_COLUMNS

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

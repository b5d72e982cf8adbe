"""The report does not average in what it cannot trust: interrupted trials are listed but kept out of
the means and the flip agreement, a fit that did not converge is flagged at the top of its section,
and trials with degraded solver steps are named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.synthetic_trials import make_trial

from sim2real.cli import main
from sim2real.report import build_report, experiment_table
from sim2real.trials import read_run, write_run_meta, write_trial

FIT = {
    "status": "not converged",
    "problems": ["not converged: stopped at the iteration limit (1 iterations)",
                 "box.com_z = -0.1 is at its lower bound -0.1"],
    "values": {"box.com_z": -0.1}, "start_values": {"box.com_z": 0.0},
    "trace": [{"iteration": 0, "cost": 4.0}, {"iteration": 1, "cost": 3.0}],
    "stop_reason": "maximum iterations",
    "solver": {"start": {"steps": 450, "converged": 447, "recovered": 2, "degraded": 1, "worst_residual": 1e-5,
                         "worst_complementarity": 1e-6}, "final": None},
}


def _run(path: Path) -> Path:
    """Three trials: two complete (gaps 2 and 4 cm, flips agree), one interrupted (gap 10 cm, disagrees)."""
    write_run_meta(path, {"mode": "standin"})
    write_trial(path, make_trial(0, 0.30, duration=1.0, rate_hz=50.0, real_travel=0.17, sim_travel=0.15))
    write_trial(path, make_trial(1, 0.35, duration=1.0, rate_hz=50.0, real_travel=0.16, sim_travel=0.12))
    interrupted = make_trial(2, 0.40, duration=1.0, rate_hz=50.0, real_travel=0.20, sim_travel=0.10,
                             sim_topple=False)
    interrupted.meta.update({"complete": False,
                             "solver": {"sim": {"steps": 50, "converged": 48, "recovered": 0, "degraded": 2,
                                                "worst_residual": 3e-4, "worst_complementarity": 1e-3}}})
    write_trial(path, interrupted)
    return path


def test_incomplete_trials_are_listed_but_not_counted(tmp_path: Path) -> None:
    table = experiment_table("run", read_run(_run(tmp_path / "run")))
    assert [r.trial for r in table.rows] == ["trial_00_d0.300", "trial_01_d0.350", "trial_02_d0.400"]
    assert table.excluded == ("trial_02_d0.400",)
    assert table.mean_gap_m == pytest.approx(0.03) and table.max_gap_m == pytest.approx(0.04)
    assert table.mean_final_error_xy_m == pytest.approx(0.03) and table.max_final_error_xy_m == pytest.approx(0.04)
    assert table.flip_agreement == pytest.approx(1.0)


def test_report_flags_the_fit_status_and_degraded_trials(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path / "run")
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps(FIT))
    out = tmp_path / "report"
    assert main(["report", str(run), "--fit", str(fit), "--out", str(out), "--max-trial-figures", "0"]) == 0
    stdout = capsys.readouterr().out
    assert stdout.splitlines()[0] == f"fit {fit}: NOT CONVERGED, 2 problem(s)"
    assert ("Final position error over 2 trial(s): mean 30.0 mm, max 40.0 mm in the table plane" in stdout
            and "flip agreement 100 % (2/2); x gap of the standard pushes mean 3.0 cm, max 4.0 cm over 2 trial(s) "
            "(1 incomplete trial(s) not counted: trial_02_d0.400)." in stdout)
    md = (out / "report.md").read_text()
    section = md[md.index("### Fit 'fit'"):]  # the fit's own subsection, titled by the file stem
    first = [line for line in section.splitlines()[1:] if line.strip()]
    assert first[0] == "> **Warning:** Fit status: NOT CONVERGED, 2 problem(s). Check these before using the values:"
    assert first[1] == "> **Warning:** Problem: not converged: stopped at the iteration limit (1 iterations)"
    assert "Solver at the start values: 450 steps: 447 converged, 2 recovered, 1 degraded" in section
    assert "degraded solver steps" in md and "trial_02_d0.400 (sim: 2)" in md
    assert "| trial_02_d0.400 (incomplete) | 40.0 |" in md
    html = (out / "report.html").read_text()
    assert '<p class="alert">Fit status: NOT CONVERGED' in html


def test_a_converged_fit_says_so_and_an_old_fit_file_says_it_has_no_status(tmp_path: Path) -> None:
    run = _run(tmp_path / "run")
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps({**FIT, "status": "converged", "problems": [], "solver": {}}))
    md = build_report([run], tmp_path / "r1", fit=fit, max_trial_figures=0).markdown.read_text()
    assert "Fit status: converged, no problems." in md and "Warning:** Fit status" not in md
    old = {k: v for k, v in FIT.items() if k not in ("status", "problems")}
    fit.write_text(json.dumps(old))
    paths = build_report([run], tmp_path / "r2", fit=fit, max_trial_figures=0)
    assert "The fit file records no status" in paths.markdown.read_text()
    assert paths.fit_ok is False and paths.fit_status == (f"fit {fit}: no status recorded",)

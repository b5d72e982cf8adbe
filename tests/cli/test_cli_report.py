"""``sim2real report`` end to end: from recorded run directories to report.html / report.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from children import HANG_GUARD_S
from fixtures.synthetic_trials import make_trial

from sim2real.cli import main
from sim2real.trials import write_run_meta, write_trial


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    write_run_meta(run, {"mode": "standin", "mirror": "closed", "distances_m": [0.3, 0.45]})
    write_trial(run, make_trial(0, 0.30, duration=1.0, rate_hz=50.0))
    write_trial(run, make_trial(1, 0.45, duration=1.0, rate_hz=50.0, real_topple=False, sim_topple=False))
    return run


@pytest.mark.slow
def test_report_command_end_to_end(tmp_path: Path, run_dir: Path) -> None:
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps({"values": {"contact.mu_table": 0.4}, "start_values": {"contact.mu_table": 0.35}}))
    out = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "sim2real", "report", str(run_dir), "--out", str(out),
                           "--fit", str(fit), "--max-trial-figures", "1"],
                          capture_output=True, text=True, timeout=HANG_GUARD_S,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out / 'report.html'}" in proc.stdout
    assert "trial_00_d0.300" in proc.stdout and "flip agreement 100 % (2/2)" in proc.stdout
    names = sorted(p.name for p in out.iterdir() if p.name != ".sim2real-report.json")  # the report's manifest
    assert names[-2:] == ["report.html", "report.md"] and all(n.endswith(".png") for n in names[:-2])
    md = (out / "report.md").read_text()
    assert "The fit file lacks: std, ci95, correlation, trace" in md
    assert "Figures are shown for the first 1 of 2 trials" in md
    # running again (--force) replaces the report (fewer figures now) without stale files
    assert main(["report", str(run_dir), "--out", str(out), "--max-trial-figures", "0", "--force"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [".sim2real-report.json", "fig_final_distance.png",
                                                     "report.html", "report.md"]


@pytest.mark.parametrize("extra, message", [
    (["--labels", "a,b"], "got 2 label(s) for 1 run"),
    (["--fit", "/nonexistent/fit.json"], "fit report not found: /nonexistent/fit.json"),
    (["--max-trial-figures", "-1"], "max trial figures must be >= 0"),
])
def test_report_bad_input(tmp_path: Path, run_dir: Path, capsys: pytest.CaptureFixture[str], extra: list[str],
                          message: str) -> None:
    out = tmp_path / "out"
    assert main(["report", str(run_dir), "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists()


def test_report_rejects_missing_or_empty_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "nope"), "--out", str(tmp_path / "out")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty"), "--out", str(tmp_path / "out")]) == 2
    assert "holds no trials" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]

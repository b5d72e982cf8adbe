"""``sim2real replay --spread``: predictions as distributions, judged against trials with known truth.

Two pushes are simulated with a hidden table friction (the "real" recordings). A fit report centred
on the truth with a plausible uncertainty must predict a spread that holds the real outcomes; one
centred far from it with a tiny uncertainty must not, and say so per trial.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from sim2real.cli import main

HIDDEN_MU = 0.4


def _fit_json(path: Path, mu: float, std: float) -> Path:
    document = {"status": "converged", "problems": [], "values": {"contact.mu_table": mu},
                "start_values": {"contact.mu_table": 0.5}, "std": {"contact.mu_table": std}, "ci95": {},
                "correlation": {"names": ["contact.mu_table"], "matrix": [[1.0]]}, "trace": [], "tied": [],
                "data": {"uncertainty": {"method": "test", "clusters": 5, "quantile": float(stats.t.ppf(0.975, 4))}}}
    path.write_text(json.dumps(document))
    return path


@pytest.fixture(scope="module")
def pushes(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    root = tmp_path_factory.mktemp("pushes")
    out = []
    for distance in ("0.35", "0.45"):
        path = root / f"push_{distance}"
        assert main(["simulate", "--distance", distance, "--set", f"contact.mu_table={HIDDEN_MU}",
                     "--out", str(path)]) == 0
        out.append(str(path))
    return out


@pytest.mark.slow
def test_a_fit_around_the_truth_predicts_a_spread_holding_the_real_outcomes(
        pushes: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fit = _fit_json(tmp_path / "fit.json", HIDDEN_MU + 0.01, 0.03)
    out = tmp_path / "replayed"
    assert main(["replay", *pushes, "--spread", str(fit), "--draws", "8", "--start-noise", "0.5,0.2",
                 "--out", str(out)]) == 0
    assert "inside the predicted 95 % spread in 2 of 2 trial(s)" in capsys.readouterr().out
    spread = json.loads((out / "spread.json").read_text())
    assert spread["inside"] == 2 and spread["judged"] == 2 and spread["draws"] == 8
    for trial in spread["trials"]:
        assert trial["inside"] is True and trial["failed_draws"] == 0
        x = trial["outcome"]["x_m"]
        assert x["band"][0] < x["band"][1]  # the draws moved the outcome: a spread, not one number
        assert len(trial["predicted"]) == 8
    report = tmp_path / "report"
    assert main(["report", str(out), "--out", str(report)]) == 0
    text = (report / "report.md").read_text()
    assert "Predicted spread" in text and "Real outcome against the predicted band" in text
    assert list(report.glob("*_spread.png"))


def test_a_fit_far_from_the_truth_with_a_tiny_uncertainty_says_outside(
        pushes: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fit = _fit_json(tmp_path / "fit.json", 0.9, 0.002)
    out = tmp_path / "replayed"
    assert main(["replay", *pushes, "--spread", str(fit), "--draws", "4", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "in 0 of 2 trial(s)" in captured.out
    assert captured.err.count(": OUTSIDE: ") == 2
    spread = json.loads((out / "spread.json").read_text())
    real_x = np.array([t["outcome"]["x_m"]["real"] for t in spread["trials"]])
    median_x = np.array([t["outcome"]["x_m"]["median"] for t in spread["trials"]])
    assert np.all(median_x < real_x)  # more table friction: the box stops short


@pytest.mark.parametrize(("option", "value", "expected"), [
    ("--start-noise", "1", "--start-noise '1': expected MM,DEG"),
    ("--start-noise", "-1,0", "must be finite and >= 0"),
    ("--draws", "1", "at least 2 draws"),
])
def test_bad_spread_options_fail_in_one_line_and_write_nothing(
        pushes: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str,
        expected: str) -> None:
    fit = _fit_json(tmp_path / "fit.json", HIDDEN_MU, 0.03)
    out = tmp_path / "replayed"
    assert main(["replay", pushes[0], "--spread", str(fit), f"{option}={value}", "--out", str(out)]) == 2
    assert expected in capsys.readouterr().err
    assert not out.exists()

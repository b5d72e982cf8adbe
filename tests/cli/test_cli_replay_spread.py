"""``sim2real replay --spread``: predictions as distributions, judged against trials with known truth.

Two pushes are simulated with a hidden table friction (the "real" recordings). A fit report centred
on the truth with a plausible uncertainty must predict a spread that holds the real outcomes; one
centred far from it with a tiny uncertainty must not, and say so per trial. A fit report without a
band calibration gives the parameter-only band, said first (exit 3); one with a calibration (as
``fit --spread-draws`` keeps it) gives the calibrated band.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from sim2real.cli import main

HIDDEN_MU = 0.4


def _fit_json(path: Path, mu: float, std: float, calibration: dict | None = None) -> Path:
    document = {"status": "converged", "problems": [], "values": {"contact.mu_table": mu},
                "start_values": {"contact.mu_table": 0.5}, "std": {"contact.mu_table": std}, "ci95": {},
                "correlation": {"names": ["contact.mu_table"], "matrix": [[1.0]]}, "trace": [], "tied": [],
                "data": {"uncertainty": {"method": "test", "clusters": 5, "quantile": float(stats.t.ppf(0.975, 4))}}}
    if calibration is not None:
        document["validation"] = {"spread": {"calibration": calibration}}
    path.write_text(json.dumps(document))
    return path


#: A calibration as ``fit --spread-draws`` keeps it: 2 mm, 2 mm and 1 deg of discrepancy, 19 scores up to 3.
CALIBRATION = {"level": 0.9, "discrepancy": {"x_m": 0.002, "y_m": 0.002, "yaw_deg": 1.0},
               "scores": [0.15 * k for k in range(1, 20)]}


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
                 "--out", str(out)]) == 3  # written, but the band is not calibrated
    captured = capsys.readouterr()
    assert captured.out.startswith("NOT CALIBRATED: the parameter-only 90 % band")
    assert "holds the real outcome in 2 of 2 trial(s)" in captured.out
    assert "the band is NOT CALIBRATED" in captured.err
    spread = json.loads((out / "spread.json").read_text())
    assert spread["inside"] == 2 and spread["judged"] == 2 and spread["draws"] == 8
    assert spread["calibrated"] is False and spread["calibration"] is None
    for trial in spread["trials"]:
        assert trial["inside"] is True and trial["failed_draws"] == 0 and trial["calibrated"] is False
        x = trial["outcome"]["x_m"]
        assert x["band"][0] < x["band"][1]  # the draws moved the outcome: a spread, not one number
        assert x["band"] == x["parameter_band"]
        assert len(trial["predicted"]) == 8 and len(trial["modes"]) == 1
    report = tmp_path / "report"
    assert main(["report", str(out), "--out", str(report)]) == 0
    text = (report / "report.md").read_text()
    assert "Predicted spread" in text and "Real outcome against the predicted band" in text
    assert list(report.glob("*_spread.png"))


@pytest.mark.slow
def test_a_calibrated_fit_widens_the_band_by_its_discrepancy_and_quantile(
        pushes: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fit = _fit_json(tmp_path / "fit.json", HIDDEN_MU + 0.01, 0.01, CALIBRATION)
    out = tmp_path / "replayed"
    assert main(["replay", *pushes, "--spread", str(fit), "--draws", "6", "--level", "0.8",
                 "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert ("the calibrated 80 % band (calibrated on 19 trial(s) held out of the fit that predicted them) holds the "
            "real outcome in 2 of 2" in captured.out)
    spread = json.loads((out / "spread.json").read_text())
    assert spread["calibrated"] is True and spread["calibration"]["level"] == 0.8
    quantile = spread["calibration"]["quantile"]
    assert quantile == pytest.approx(0.15 * 16)  # rank ceil(20 x 0.8) = 16 of the 19 scores
    for trial in spread["trials"]:
        mode = trial["modes"][0]
        x = mode["x_m"]
        sigma = np.hypot(x["scale"], 0.002)
        assert x["band"] == pytest.approx([x["centre"] - quantile * sigma, x["centre"] + quantile * sigma])
        assert trial["outcome"]["x_m"]["band"] == pytest.approx(x["band"])  # one mode: the hull is its box


def test_a_fit_far_from_the_truth_with_a_tiny_uncertainty_says_outside(
        pushes: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fit = _fit_json(tmp_path / "fit.json", 0.9, 0.002)
    out = tmp_path / "replayed"
    assert main(["replay", *pushes, "--spread", str(fit), "--draws", "4", "--out", str(out)]) == 3
    captured = capsys.readouterr()
    assert "in 0 of 2 trial(s)" in captured.out
    assert captured.err.count(": OUTSIDE: ") == 2
    spread = json.loads((out / "spread.json").read_text())
    real_x = np.array([t["outcome"]["x_m"]["real"] for t in spread["trials"]])
    median_x = np.array([t["outcome"]["x_m"]["median"] for t in spread["trials"]])
    assert np.all(median_x < real_x)  # more table friction: the box stops short


@pytest.mark.parametrize(("option", "value", "expected"), [
    ("--start-noise", "1", "--start-noise '1': expected auto or MM,DEG"),
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


@pytest.mark.parametrize("spread", ["missing", "calibration"])
def test_a_bad_spread_file_is_refused_before_any_replay(
        pushes: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], spread: str) -> None:
    if spread == "missing":
        fit, expected = tmp_path / "nope.json", "nope.json"
    else:
        fit = _fit_json(tmp_path / "fit.json", HIDDEN_MU, 0.03, {**CALIBRATION, "scores": []})
        expected = "validation.spread.calibration: the band calibration's scores must be a non-empty list"
    out = tmp_path / "replayed"
    assert main(["replay", pushes[0], "--spread", str(fit), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert expected in err and "predicted spread" not in err and "(auto; pusher" not in err  # nothing replayed
    assert not out.exists()


@pytest.mark.parametrize("option", [["--draws", "5"], ["--start-noise", "1,1"], ["--level", "0.5"],
                                    ["--allow-unconverged"]])
def test_spread_options_without_spread_are_refused(
        pushes: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], option: list[str]) -> None:
    out = tmp_path / "replayed"
    assert main(["replay", pushes[0], *option, "--out", str(out)]) == 2
    assert "given without --spread FIT_JSON" in capsys.readouterr().err
    assert not out.exists()


def test_a_level_outside_the_unit_interval_is_an_argument_error(pushes: list[str], tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["replay", pushes[0], "--spread", "fit.json", "--level", "1", "--out", str(tmp_path / "out")])
    assert exit_info.value.code == 2
    assert "--level: must be in (0, 1), got 1" in capsys.readouterr().err

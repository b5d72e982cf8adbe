"""``fit --spread-draws --start-error`` and ``replay --spread``: the band's start error chosen on the calibration
trials, kept in fit.json, and drawn with again by the replay (which takes the fit's params file for what the fit
did not draw)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.pushed_box import friction_push

from sim2real.cli import main
from sim2real.trials import write_run_meta, write_trial


def _run(path: Path, frictions: tuple[float, ...], first: int = 0) -> Path:
    for k, mu in enumerate(frictions):
        write_trial(path, friction_push(f"push_{first + k}", 0.5 + 0.03 * (first + k), mu))
    write_run_meta(path, {"mode": "imported"})
    return path


def test_the_fit_chooses_a_start_error_keeps_it_and_the_replay_draws_with_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path / "run", (0.36, 0.42, 0.38, 0.45, 0.4, 0.34))
    new = _run(tmp_path / "new", (0.39, 0.41), first=6)
    out = tmp_path / "fitted.yaml"
    code = main(["fit", str(run), "--free", "contact.mu_table", "--set", "box.com_z=0.01", "--spread-draws", "4",
                 "--cross-fit", "3", "--level", "0.8", "--out", str(out)])
    err = capsys.readouterr().err
    assert code in (0, 3), err
    chosen = json.loads(out.with_suffix(".json").read_text())["validation"]["spread"]["start_error"]
    assert chosen["chosen_by"] == "mean log score of the calibration trials" and chosen["judged"] == 6
    assert [c["position_mm"] for c in chosen["candidates"]] == [0.0, 0.25, 0.5, 1.0, 2.0, 4.0]
    best = max(chosen["candidates"], key=lambda c: c["mean_log_score"])
    assert (chosen["position_mm"], chosen["yaw_deg"]) == (best["position_mm"], best["yaw_deg"])
    assert err.count("(chosen)") == 1 and "mean log score" in err

    fit_json = str(out.with_suffix(".json"))
    assert main(["replay", str(new), "--spread", fit_json, "--out", str(tmp_path / "r")]) in (0, 3)
    err = capsys.readouterr().err
    assert f"the parameters not drawn from the fit: {out}" in err  # its --set box.com_z, not the nominal one
    spread = json.loads((tmp_path / "r" / "spread.json").read_text())
    assert spread["start_error"]["position_mm"] == pytest.approx(chosen["position_mm"])
    assert all(t["start_noise"]["error_mm"] == pytest.approx(chosen["position_mm"]) for t in spread["trials"])
    assert "WARNING" not in err

    other = "3,0" if chosen["position_mm"] != 3 else "2,0"
    assert main(["replay", str(new), "--spread", str(out.with_suffix(".json")), "--start-error", other, "--out",
                 str(tmp_path / "r2")]) in (0, 3)
    err = capsys.readouterr().err
    assert "WARNING: the band was calibrated with a start error of" in err
    spread = json.loads((tmp_path / "r2" / "spread.json").read_text())
    assert spread["start_error"]["position_mm"] == pytest.approx(float(other.split(",")[0]))


def test_a_fixed_start_error_is_kept_as_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path / "run", (0.36, 0.42, 0.38, 0.45, 0.4, 0.34))
    out = tmp_path / "fitted.yaml"
    assert main(["fit", str(run), "--free", "contact.mu_table", "--spread-draws", "4", "--cross-fit", "3",
                 "--level", "0.8", "--start-error", "0,0", "--out", str(out)]) in (0, 3)
    err = capsys.readouterr().err
    assert "drawn again" not in err  # one candidate: the spreads are drawn once
    chosen = json.loads(out.with_suffix(".json").read_text())["validation"]["spread"]["start_error"]
    assert chosen == {"position_mm": 0.0, "yaw_deg": 0.0, "chosen_by": "--start-error"}


@pytest.mark.parametrize(("argv", "message"), [
    (["--start-error", "1,1"], "--start-error sets the spreads' start error: it needs --spread-draws N or "
                               "--robust-unstable"),
    (["--spread-draws", "4", "--cross-fit", "3", "--start-error", "1"], "--start-error '1': expected auto or MM,DEG"),
    (["--spread-draws", "4", "--cross-fit", "3", "--start-error", "-1,0"], "must be finite and >= 0"),
])
def test_bad_start_errors_are_refused_before_the_fit(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      argv: list[str], message: str) -> None:
    run = _run(tmp_path / "run", (0.36, 0.42, 0.38))
    out = tmp_path / "fitted.yaml"
    assert main(["fit", str(run), "--free", "contact.mu_table", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.strip().count("\n") == 0, err
    assert not out.exists() and not out.with_suffix(".json").exists()


def test_a_replay_start_error_without_a_spread_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path / "run", (0.36,))
    assert main(["replay", str(run), "--start-error", "1,1", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "--start-error given without --spread FIT_JSON" in err and not (tmp_path / "r").exists()


def test_a_fit_json_with_a_broken_start_error_is_refused_before_any_replay(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path / "run", (0.36, 0.42, 0.38, 0.45))
    out = tmp_path / "fitted.yaml"
    assert main(["fit", str(run), "--free", "contact.mu_table", "--spread-draws", "3", "--cross-fit", "2",
                 "--level", "0.6", "--start-error", "0,0", "--out", str(out)]) in (0, 3)
    fit_json = out.with_suffix(".json")
    document = json.loads(fit_json.read_text())
    document["validation"]["spread"]["start_error"] = {"position_mm": -1, "yaw_deg": 0}
    fit_json.write_text(json.dumps(document))
    capsys.readouterr()
    assert main(["replay", str(run), "--spread", str(fit_json), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "validation.spread.start_error: a start error's position_mm and yaw_deg must be finite numbers >= 0" \
        in err and err.strip().count("\n") == 0, err
    assert not (tmp_path / "r").exists()

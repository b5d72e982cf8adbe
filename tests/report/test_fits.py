"""Everything the fits produced reaches the report: several fits (the stages of one identification),
each with its intervals and their method, the known truth and whether each interval holds it,
residuals against time per trial, and the correlation picture only when more than one parameter is free.

The fit.json files are small synthetic dicts; the residual series of a real fit comes from a tiny
simulated push (tests/test_sysid_robust_inputs.py)."""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from fixtures.pushed_box import NOMINAL, data, pusher_record
from fixtures.synthetic_trials import make_trial

import sim2real.sysid.solve.fit as fit_module
from sim2real.cli import main
from sim2real.errors import Sim2RealError
from sim2real.report import build_report, read_fit
from sim2real.report.figures import MAX_RESIDUAL_TRIALS, residual_figure
from sim2real.sysid import FitProblem, LMSettings, ResidualSpec, Weights, fit_trials, trial_residuals
from sim2real.sysid.files.writeback import fit_document
from sim2real.trials import write_run_meta, write_trial


def _series(group: str, unit: str, trials: int, scale: float) -> dict:
    t = [round(0.01 * k, 2) for k in range(1, 51)]
    return {"group": group, "unit": unit, "norm": "Euclidean norm", "max_points": 200, "trials": [
        {"name": f"trial_{i:02d}", "t": t, "start": [scale * (1 + i) * k / 50 for k in range(50)],
         "final": [None, *(0.1 * scale * (1 + i) * k / 50 for k in range(1, 50))]} for i in range(trials)]}


#: Stage 1: the servo, one free parameter (a 1 x 1 correlation), joint residuals.
SERVO = {
    "status": "converged", "problems": [],
    "values": {"arm.servo_tau": 0.064}, "start_values": {"arm.servo_tau": 0.05}, "std": {"arm.servo_tau": 0.001},
    "ci95": {"arm.servo_tau": [0.062, 0.066]},
    "correlation": {"names": ["arm.servo_tau"], "matrix": [[1.0]]},
    "trace": [{"iteration": 0, "cost": 3.0}, {"iteration": 1, "cost": 1.0}],
    "data": {"parameter_count": 1, "uncertainty": {"method": "sandwich, clustered by trial (7 trials)"},
             "trials": [{"name": "trial_00", "rms_start": {"joint_position": 0.01, "joint_velocity": 0.1},
                         "rms_final": {"joint_position": 0.002, "joint_velocity": 0.05}}],
             "residual_series": _series("joint_position", "rad", 2, 0.01)},
}
#: Stage 2: the box, two free parameters, one widened by the grid jackknife, 14 trials of residuals.
FITTED = {
    "status": "converged", "problems": [],
    "values": {"box.com_z": -0.058, "contact.mu_table": 0.42},
    "start_values": {"box.com_z": -0.05, "contact.mu_table": 0.5},
    "std": {"box.com_z": 0.004, "contact.mu_table": 0.01},
    "ci95": {"box.com_z": [-0.067, -0.049], "contact.mu_table": [0.40, 0.44]},
    "correlation": {"names": ["box.com_z", "contact.mu_table"], "matrix": [[1.0, 0.3], [0.3, 1.0]]},
    "trace": [{"iteration": 0, "cost": 5.0}, {"iteration": 1, "cost": 2.0}],
    "data": {"parameter_count": 2,
             "uncertainty": {"method": "sandwich, clustered by trial (7 trials); box.com_z: trial jackknife of the "
                                       "grid minimum (7 leave-one-out minima, Student's t with 6 dof), wider there",
                             "grid_jackknife": {"parameter": "box.com_z", "std": 0.004, "grid_minimum": -0.058,
                                                "leave_one_out": [-0.06] * 7, "ci95_halfwidth": 0.009}},
             "residual_series": _series("box_position", "m", 14, 0.002)},
}
TRUTH = {"arm.servo_tau": 0.065, "box.com_z": -0.06, "contact.mu_table": 0.3, "arm.command_delay": 0.02}


def _run(path: Path) -> Path:
    write_run_meta(path, {"mode": "standin"})
    write_trial(path, make_trial(0, 0.30, duration=1.0, rate_hz=50.0))
    return path


def _fits(tmp_path: Path, servo: dict = SERVO, fitted: dict = FITTED) -> tuple[Path, Path]:
    (tmp_path / "fit").mkdir(exist_ok=True)
    a, b = tmp_path / "fit" / "servo.json", tmp_path / "fit" / "fitted.json"
    a.write_text(json.dumps(servo))
    b.write_text(json.dumps(fitted))
    return a, b


def _row(md: str, section: str, name: str) -> list[str]:
    """The cells of parameter ``name``'s row in the subsection starting at ``section``."""
    part = md[md.index(section):]
    line = next(line for line in part.splitlines() if line.startswith(f"| {name} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def _not_blank(png: bytes) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.image as mpimg

    pixels = mpimg.imread(io.BytesIO(png), format="png")
    assert pixels.shape[0] > 100 and np.std(pixels[..., :3]) > 0.02


def test_two_stages_with_truth_methods_residuals_and_correlation_only_with_two_free(tmp_path: Path) -> None:
    servo, fitted = _fits(tmp_path)
    paths = build_report([_run(tmp_path / "run")], tmp_path / "report", fit=[servo, fitted], truth=TRUTH,
                         max_trial_figures=0)
    md = paths.markdown.read_text()
    # one subsection per fit, in the order given, each opening with its status
    assert md.index("### Fit 'servo'") < md.index("### Fit 'fitted'")
    for title in ("servo", "fitted"):
        first = [line for line in md[md.index(f"### Fit '{title}'"):].splitlines()[1:] if line.strip()]
        assert first[0] == "Fit status: converged, no problems."
    assert paths.fit_ok is True and [f.path for f in paths.fits] == [str(servo), str(fitted)]
    assert paths.fit_status == (f"fit {servo}: converged, no problems", f"fit {fitted}: converged, no problems")
    # truth columns: inside / outside the 95 % interval
    assert "| parameter | unit | before (start) | after (fitted) | change | std | 95 % interval | truth | " \
           "truth inside 95 %? |" in md
    assert _row(md, "### Fit 'servo'", "arm.servo_tau")[-2:] == ["0.065", "yes"]
    assert _row(md, "### Fit 'fitted'", "box.com_z")[-3:] == ["[-0.067, -0.049] (grid jackknife)", "-0.06", "yes"]
    assert _row(md, "### Fit 'fitted'", "contact.mu_table")[-3:] == ["[0.4, 0.44]", "0.3", "no"]
    assert "The known truth lies outside the 95 % interval of: contact.mu_table (truth 0.3, fitted 0.42, " \
           "interval [0.4, 0.44])." in md
    assert "Truth given for parameters no fit frees: arm.command_delay." in md
    # the interval method of each fit, and the jackknife's widening
    assert "Interval method: sandwich, clustered by trial (7 trials)." in md
    assert "The 95 % interval of box.com_z was widened by the grid jackknife (7 leave-one-out grid minima)" in md
    # correlations only for the fit with two free parameters; residuals and trace for both
    names = [p.name for p in paths.figures]
    assert "fig_fit_servo_correlation.png" not in names and "fig_fit_fitted_correlation.png" in names
    assert md.count("Strongly correlated pairs") == 1
    for title in ("servo", "fitted"):
        assert f"fig_fit_{title}_residuals.png" in names and f"fig_fit_{title}_trace.png" in names
    assert len(names) == 1 + 2 + 1 + 2  # final distance; servo residuals, trace; fitted correlation, residuals, trace
    assert f"The residual figure shows the first {MAX_RESIDUAL_TRIALS} of 14 trials." in md
    assert "| trial_00 | 0.573 → 0.115 | 5.73 → 2.86 |" in md  # per-trial RMS, deg and deg/s
    html = paths.html.read_text()
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    assert len(images) == len(names)
    for image in images:
        _not_blank(base64.b64decode(image))


def test_single_path_still_accepted_and_jackknife_not_wider(tmp_path: Path) -> None:
    run = _run(tmp_path / "run")
    not_wider = json.loads(json.dumps(FITTED))
    not_wider["std"]["box.com_z"] = 0.006  # the fit's own interval was wider than the jackknife's (0.004)
    _, fitted = _fits(tmp_path, fitted=not_wider)
    paths = build_report([run], tmp_path / "report", fit=str(fitted), max_trial_figures=0)
    md = paths.markdown.read_text()
    assert "### Fit 'fitted'" in md and "truth inside" not in md
    assert "The grid jackknife of box.com_z (7 leave-one-out grid minima) was not wider than the fit's own " \
           "interval, which is kept." in md
    assert "(grid jackknife)" not in md
    with pytest.raises(Sim2RealError, match="give a fit file too"):
        build_report([run], tmp_path / "r2", truth={"box.com_z": -0.06})


def test_an_old_fit_file_without_series_says_so(tmp_path: Path) -> None:
    old = {k: v for k, v in FITTED.items() if k != "data"}
    _, fitted = _fits(tmp_path, fitted=old)
    md = build_report([_run(tmp_path / "run")], tmp_path / "report", fit=[fitted],
                      max_trial_figures=0).markdown.read_text()
    assert "records no residual series against time" in md
    assert "does not name its interval method" in md
    assert "fig_fit_fitted_correlation.png" in md  # two names in the correlation: two free parameters


def test_residual_figure_needs_a_usable_series() -> None:
    assert residual_figure({}) is None
    assert residual_figure({"trials": [{"name": "a", "t": [0.1, 0.2], "start": [None, None],
                                        "final": [None, None]}]}) is None
    assert residual_figure({"trials": [{"name": "a", "t": [0.1, 0.2], "start": [1.0], "final": [1.0, 2.0]}]}) is None
    png = residual_figure(_series("box_position", "m", 3, 0.002), "fitted")
    assert png is not None and png.startswith(b"\x89PNG")


def test_fit_json_holds_the_residual_series_against_time(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The box-position residual norm per grid sample, unweighted (m), on the trial's time grid."""
    records = [pusher_record("a"), pusher_record("b")]
    result = fit_trials(FitProblem(records, NOMINAL, "contact.mu_table", spec=ResidualSpec(horizon=None)),
                        settings=LMSettings(max_iterations=3))
    series = result.data["residual_series"]
    assert series["group"] == "box_position" and series["unit"] == "m"
    assert [t["name"] for t in series["trials"]] == ["a", "b"]
    trial = data(records[0])
    expected = trial_residuals(trial, NOMINAL, (), ResidualSpec(horizon=None))
    norms = np.linalg.norm(expected.residuals[expected.groups == 0].reshape(-1, 3) / 1000.0, axis=1)
    first = series["trials"][0]
    # a played-back pusher over the whole trial: one sample per grid step from the first one to the last
    np.testing.assert_allclose(first["t"], trial.t[1:] - trial.t[0], atol=1e-9)
    # 4 significant digits; the fit's evaluation solves each step with its gradient (κ_grad, then κ_sim) and
    # this one without: at the hard-contact κ the two answers may differ by a few nm within the tolerance.
    np.testing.assert_allclose(first["start"], norms, rtol=1e-3, atol=1e-8)
    assert max(first["final"]) < 0.5 * max(first["start"])  # the fit moved toward the hidden friction
    # in fit.json, and the report draws it
    path = tmp_path / "fit.json"
    path.write_text(json.dumps(fit_document(result).to_json()))
    assert read_fit(path).residual_series["trials"][1]["name"] == "b"
    # teacher-forced segments start one sample later; long trials are thinned to the cap
    monkeypatch.setattr(fit_module, "RESIDUAL_SERIES_POINTS", 12)
    segments = fit_trials(FitProblem(records[:1], NOMINAL, "contact.mu_table", spec=ResidualSpec(horizon=10)),
                          settings=LMSettings(max_iterations=1)).data["residual_series"]["trials"][0]
    assert len(segments["t"]) == len(segments["start"]) == len(segments["final"]) == 12
    assert segments["t"][0] == pytest.approx(2 * trial.dt) and segments["t"][-1] == pytest.approx(trial.t[-1])


def test_a_servo_fit_without_box_rows_keeps_the_joint_residuals() -> None:
    record = pusher_record("a", joints=np.array([0.0, 0.2, -0.5, 0.0, 0.3, 0.0]), commands=True)
    result = fit_trials(FitProblem([record], NOMINAL, "arm.servo_tau",
                                   spec=ResidualSpec(horizon=20, weights=Weights(position=0.0, orientation=0.0))),
                        settings=LMSettings(max_iterations=1))
    series = result.data["residual_series"]
    assert series["group"] == "joint_position" and series["unit"] == "rad"
    assert len(series["trials"][0]["t"]) == data(record).steps


def test_cli_report_with_two_fits_and_truth(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path / "run")
    servo, fitted = _fits(tmp_path)
    out = tmp_path / "report"
    assert main(["report", str(run), "--out", str(out), "--fit", str(servo), "--fit", str(fitted), "--truth",
                 "box.com_z=-0.06,contact.mu_table=0.3", "--truth", "arm.servo_tau=0.065",
                 "--max-trial-figures", "0"]) == 0
    stdout = capsys.readouterr().out
    assert stdout.splitlines()[:2] == [f"fit {servo}: converged, no problems", f"fit {fitted}: converged, no problems"]
    md = (out / "report.md").read_text()
    assert "### Fit 'servo'" in md and "### Fit 'fitted'" in md
    assert _row(md, "### Fit 'fitted'", "contact.mu_table")[-2:] == ["0.3", "no"]
    for extra, message in ((["--truth", "box.com_z"], "--truth expects NAME=VALUE"),
                           (["--truth", "box.com_q=1"], "box.com_q"),
                           (["--truth", "box.com_z=x"], "'x' is not a number"),
                           (["--truth", "box.com_z=1", "--truth", "box.com_z=2"], "gives box.com_z twice")):
        assert main(["report", str(run), "--out", str(tmp_path / "bad"), "--fit", str(fitted), *extra]) == 2
        assert message in capsys.readouterr().err
    assert main(["report", str(run), "--out", str(tmp_path / "bad"), "--truth", "box.com_z=1"]) == 2
    assert "--truth needs --fit" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()

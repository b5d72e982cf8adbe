"""Validation on trials the fit never saw: seeded hold-out by whole trials, prediction errors in the
report's units before and after the fit, a held-out rise judged against the trial-to-trial scatter,
and the statistical stop of the optimizer.

The recordings are simulated (a sphere pushing the box along x at several speeds, then stopping, so
the box slides out under table friction) with a hidden table friction the fit must find.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fixtures.pushed_box import HIDDEN, NOMINAL, friction_push, pushed_box

from sim2real.cli import main
from sim2real.errors import Sim2RealError
from sim2real.sysid import FitProblem, LMSettings, ResidualSpec, fit_trials
from sim2real.sysid.prediction.whole_trials import rising_metrics
from sim2real.sysid.problem.runs import LoadedTrials, split_holdout
from sim2real.sysid.solve.evaluation import HeldOut
from sim2real.sysid.solve.optimizer import STOP_STATISTICAL, levenberg_marquardt
from sim2real.trials import PlatformRecord, PoseSeries, TrialRecord, write_run_meta, write_trial


def probe_push(name: str, speed: float) -> TrialRecord:
    """A probe push recorded with the hidden friction: box and pusher poses only."""
    t, states, path = pushed_box(HIDDEN, speed=speed)
    identity = np.tile([1.0, 0.0, 0.0, 0.0], (t.size, 1))
    platform = PlatformRecord(box_pose=PoseSeries(t, states[:, 0:3], states[:, 3:7]),
                              pusher_pose=PoseSeries(t, path, identity))
    return TrialRecord(name, {"real": platform}, None, {"complete": True})


def loaded(count: int) -> LoadedTrials:
    records = tuple(TrialRecord(f"trial_{k:02d}", {}, None, {}) for k in range(count))
    return LoadedTrials(records, tuple(f"/runs/{r.name}" for r in records), ())


def test_holdout_splits_whole_trials_reproducibly_and_refuses_an_empty_side() -> None:
    fit_part, held = split_holdout(loaded(10), 0.3, seed=4)
    assert len(held.records) == 3 and len(fit_part.records) == 7
    names = [r.name for r in fit_part.records + held.records]
    assert sorted(names) == [f"trial_{k:02d}" for k in range(10)]
    assert [r.name for r in fit_part.records] == sorted(r.name for r in fit_part.records)  # original order
    assert held.sources == tuple(f"/runs/{r.name}" for r in held.records)
    again = split_holdout(loaded(10), 0.3, seed=4)[1]
    assert [r.name for r in again.records] == [r.name for r in held.records]
    others = {tuple(r.name for r in split_holdout(loaded(10), 0.3, seed=s)[1].records) for s in range(8)}
    assert len(others) > 1  # the seed matters
    with pytest.raises(Sim2RealError, match="at least one trial on each side"):
        split_holdout(loaded(3), 0.1, seed=0)
    with pytest.raises(Sim2RealError, match="between 0 and 1"):
        split_holdout(loaded(3), 1.0, seed=0)


def test_a_fit_reports_held_out_prediction_errors_before_and_after_in_report_units() -> None:
    training = [probe_push("train_a", 0.5), probe_push("train_b", 0.6)]
    held = [probe_push("held_c", 0.45)]
    result = fit_trials(FitProblem(training, NOMINAL, "contact.mu_table", spec=ResidualSpec(horizon=1),
                                   validation=held), settings=LMSettings(max_iterations=15))
    assert result.ok, result.problems
    assert result.values["contact.mu_table"] == pytest.approx(0.3, rel=1e-3)
    prediction = result.validation["prediction"]
    for label, names in (("training", ["train_a", "train_b"]), ("validation", ["held_c"])):
        block = prediction[label]
        assert [t["trial"] for t in block["trials"]] == names
        before, after = block["start"], block["final"]
        print(f"{label}: final position error {before['final_position_m'] * 1000:.1f} -> "
              f"{after['final_position_m'] * 1000:.3f} mm, yaw {before['yaw_deg']:.2f} -> {after['yaw_deg']:.3f} deg")
        # Nominal friction (0.5 vs 0.3) stops the box centimetres short; the fitted one reproduces it.
        assert before["final_position_m"] > 0.01 and after["final_position_m"] < 1e-4
        assert after["flip_agreement"] == f"{len(names)}/{len(names)}" and after["failed"] == 0
        assert block["horizon_rms"]["final"]["position_m"] < block["horizon_rms"]["start"]["position_m"]
    assert json.dumps(result.validation)  # JSON-ready


def test_fit_holdout_on_the_command_line_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "probe"
    for k, speed in enumerate((0.45, 0.5, 0.55, 0.6)):
        write_trial(run, probe_push(f"push_{k}", speed))
    write_run_meta(run, {"mode": "imported"})
    out = tmp_path / "fitted.yaml"
    code = main(["fit", str(run), "--free", "contact.mu_table", "--holdout", "0.25", "--seed", "2",
                 "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "1 of 4 trials held out" in err and "validation (1 trials): final position" in err
    document = json.loads(out.with_suffix(".json").read_text())
    held = document["validation"]["prediction"]["validation"]
    assert held["final"]["final_position_m"] < held["start"]["final_position_m"]
    assert len(document["data"]["trials"]) == 3
    # The report shows training and held-out trials side by side.
    assert main(["report", str(run), "--fit", str(out.with_suffix(".json")), "--out", str(tmp_path / "report")]) == 0
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "Training and validation" in markdown
    held_row = next(line for line in markdown.splitlines() if line.startswith("| held out |"))
    assert "| 1 |" in held_row and "1/1 → 1/1" in held_row
    # A fraction that leaves no trial on one side is bad input: one line, exit 2, nothing written.
    bad = tmp_path / "bad.yaml"
    code = main(["fit", str(run / "push_0"), "--free", "contact.mu_table", "--holdout", "0.5", "--out", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and "on each side" in err and len(err.strip().splitlines()) == 1
    assert not bad.exists() and not bad.with_suffix(".json").exists()
    with pytest.raises(SystemExit) as exit_info:
        main(["fit", str(run), "--free", "contact.mu_table", "--holdout", "1", "--out", str(bad)])
    assert exit_info.value.code == 2


def _held_out_with(trial_costs: dict[int, list[float]]) -> HeldOut:
    held = HeldOut(None, [], NOMINAL, lambda x: {}, None, "linear", 1.0)  # type: ignore[arg-type]
    held.trial_costs = {i: np.array(c) for i, c in trial_costs.items()}
    held.costs = [(i, float(np.sum(c))) for i, c in trial_costs.items()]
    return held


def test_a_held_out_rise_must_stand_out_from_the_trial_to_trial_scatter() -> None:
    # Total up 8 %, but two trials rose a lot and three fell: scatter, not a failure to generalise.
    mixed = _held_out_with({0: [10.0, 10.0, 10.0, 10.0, 10.0], 5: [14.0, 13.0, 9.5, 9.0, 8.5]})
    assert mixed.rising() is None
    # Every trial rose by about the same amount: a real rise.
    steady = _held_out_with({0: [10.0, 10.0, 10.0, 10.0, 10.0], 5: [10.9, 11.0, 11.1, 10.8, 11.2]})
    problem = steady.rising()
    assert problem is not None and "5 of 5 held-out trials rose" in problem
    # Consistent but within 5 %: not a meaningful rise.
    assert _held_out_with({0: [10.0, 10.0, 10.0], 5: [10.3, 10.3, 10.4]}).rising() is None
    # A dip along the way that settles below the start is not a rise (the start is the reference).
    assert _held_out_with({0: [10.0, 10.0], 1: [1.0, 1.2], 9: [2.0, 2.4]}).rising() is None
    # One held-out trial: the relative rule alone.
    single = _held_out_with({0: [10.0], 3: [10.8]})
    assert single.rising() is not None and _held_out_with({0: [10.0], 3: [10.4]}).rising() is None


def test_a_degraded_step_at_the_fitted_values_does_not_hide_a_held_out_rise() -> None:
    from sim2real.sysid.residuals.types import TrialResiduals

    held = HeldOut(None, [], NOMINAL, lambda x: {}, None, "linear", 1.0)  # type: ignore[arg-type]
    rows = np.arange(50)
    start = [TrialResiduals(f"t{k}", np.full(50, 1.0), None, np.zeros(50, dtype=int)) for k in range(3)]
    # Every row is 50 % larger at the fitted values, but each trial's last 40 rows rest on a degraded step.
    final = [TrialResiduals(f"t{k}", np.full(50, 1.5), None, np.zeros(50, dtype=int), dropped=rows >= 10)
             for k in range(3)]
    held.costs = [(0, held._cost(np.zeros(1), start, 0)), (4, held._cost(np.zeros(1), final, 4))]
    problem = held.rising()
    assert problem is not None and "3 of 3 held-out trials rose" in problem
    assert held.costs[1][1] == pytest.approx(2.25 * held.costs[0][1])
    assert held.notes == ["iteration 4: 120 held-out residual rows rest on degraded solver steps (counted in the "
                          "held-out cost)"]


def test_the_optimizer_stops_when_its_steps_fall_below_a_percent_of_the_standard_deviations() -> None:
    rng = np.random.default_rng(7)
    A = np.column_stack([np.ones(200), np.linspace(0.0, 1.0, 200)])
    y = A @ np.array([2.0, -1.0]) + 0.05 * rng.standard_normal(200)

    def evaluate(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return A @ x - y, A

    exact = np.linalg.lstsq(A, y, rcond=None)[0]
    sigma = np.sqrt(np.sum((A @ exact - y) ** 2) / 198)
    std = sigma * np.sqrt(np.diag(np.linalg.inv(A.T @ A)))
    settings = LMSettings(max_iterations=50, ftol=0.0, xtol=0.0, gtol=0.0)
    result = levenberg_marquardt(evaluate, np.array([10.0, 10.0]), np.full(2, -100.0), np.full(2, 100.0), settings)
    assert result.stop_reason == STOP_STATISTICAL
    assert len(result.trace) < 10
    assert np.all(np.abs(result.x - exact) < 0.02 * std)
    off = levenberg_marquardt(evaluate, np.array([10.0, 10.0]), np.full(2, -100.0), np.full(2, 100.0),
                              LMSettings(max_iterations=8, ftol=0.0, xtol=0.0, gtol=0.0, stat_tol=0.0))
    assert off.stop_reason == "maximum iterations"


def test_a_held_out_prediction_error_that_rises_is_a_problem_even_when_the_held_out_cost_barely_moves(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two held-out pushes with other frictions (0.5, 0.42) recorded with 1 mm of pose noise: their one-step
    cost is noise and rises by under 5 % (no cost problem), but simulated whole, the fitted friction (0.3)
    stops them centimetres from where they stopped: the mean final position and path errors rise."""
    train = tmp_path / "train"
    write_trial(train, friction_push("train", 0.5, 0.3))
    held = tmp_path / "held"
    write_trial(held, friction_push("held_a", 0.5, 0.5, noise_m=0.001, seed=1))
    write_trial(held, friction_push("held_b", 0.55, 0.42, noise_m=0.001, seed=2))
    out = tmp_path / "fitted.yaml"
    code = main(["fit", str(train / "train"), "--free", "contact.mu_table", "--validate", str(held), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 3, err
    document = json.loads(out.with_suffix(".json").read_text())
    costs = [c["cost"] for c in document["validation"]["cost"]]
    assert costs[-1] < 1.05 * costs[0]  # the held-out cost alone says nothing
    block = document["validation"]["prediction"]["validation"]
    before, after = block["start"], block["final"]
    assert after["final_position_m"] > before["final_position_m"] + 0.005
    assert after["path_rms_m"] > before["path_rms_m"]
    problem = next(p for p in document["problems"] if p.startswith("held-out prediction error rose"))
    assert (f"final position error {before['final_position_m'] * 1000:.1f} -> {after['final_position_m'] * 1000:.1f} mm"
            in problem)
    assert f"path error (RMS) {before['path_rms_m'] * 1000:.1f} -> {after['path_rms_m'] * 1000:.1f} mm" in problem
    assert "yaw error" not in problem  # the yaw error did not rise
    assert f"problem: {problem}" in err


def _block(start: dict[str, float], final: dict[str, float]) -> dict:
    return {"trials": [{"trial": "held", "start": {**start, "error": None}, "final": {**final, "error": None}}]}


def test_each_held_out_metric_that_rises_is_named_with_both_values() -> None:
    base = {"final_position_m": 0.010, "yaw_deg": 2.0, "path_rms_m": 0.004}
    assert rising_metrics(_block(base, base)) is None
    assert rising_metrics(_block(base, {**base, "final_position_m": 0.0099})) is None  # lower: fine
    assert rising_metrics(_block(base, {**base, "final_position_m": 0.01005})) is None  # under the 1 % resolution
    line = rising_metrics(_block(base, {**base, "yaw_deg": 3.5, "path_rms_m": 0.006}))
    assert line == ("held-out prediction error rose after the fit (1 held-out trial, start -> fitted values, means): "
                    "yaw error 2.0 -> 3.5 deg, path error (RMS) 4.0 -> 6.0 mm (the fitted values predict unseen "
                    "trials worse)")
    failed = _block(base, {**base, "yaw_deg": 9.0})
    failed["trials"][0]["final"]["error"] = "the simulation failed"
    assert rising_metrics(failed) is None  # a trial that could not be simulated is compared by nobody

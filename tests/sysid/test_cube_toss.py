"""System identification on the real ContactNets cube tosses (shipped in sim2real/data/cube_toss).

Fits the table friction, the cube side (three tied sizes) and the radius of its rounded edges on
20 imported tosses, the table at the tag board's z = 0 (the recording frame), starting from a sharp
cube that is too small: with teacher-forced segments of 40 samples (0.27 s at 148 Hz) it checks the
side against the measured 0.1048 m and the multi-step prediction error on 20 tosses not used in the
fit against the error at the start values; with one-step predictions, the side and a rounding of a
few millimetres (the geometry the tosses show step by step).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks import cube_toss
from sim2real.data import cube_toss_npz
from sim2real.params import ParameterSet
from sim2real.sysid import FitProblem, LMSettings, ResidualSpec, Weights, fit_trials, prepare_trial, trial_residuals
from sim2real.trials import read_trial
from sim2real.trials.cube_toss import import_cube_tosses

NPZ = cube_toss_npz()
MEASURED_SIDE = cube_toss.MEASURED_SIDE
HORIZON = 40
FREE = cube_toss.FREE  # the README's fit
WEIGHTS = Weights.parse(cube_toss.WEIGHTS)  # the README's (from the recordings' pose noise)
SIDE0 = 0.095  # too small by 9 %: the recorded resting poses do not penetrate it
START = ParameterSet.nominal().replace({"box.mass": 0.37, "box.size_x": SIDE0, "box.size_y": SIDE0,
                                        "box.size_z": SIDE0, "contact.mu_table": 0.4})


def _tosses(tmp_path: Path, tosses: str) -> list:
    run = tmp_path / "tosses"
    import_cube_tosses(NPZ, run, tosses)
    return [read_trial(d) for d in sorted(run.glob("toss_*"))]


def prediction_rms(records: list, params: ParameterSet, horizon: int) -> float:
    """RMS box position error (m) of ``horizon``-step rollouts from recorded states over ``records``."""
    spec = ResidualSpec(horizon=horizon)
    squares, count = 0.0, 0
    for record in records:
        data = prepare_trial(record, float(params["sim.dt"]))
        res = trial_residuals(data, params, (), spec)
        rows = res.residuals[res.groups == 0] / spec.weights.position
        squares += float(np.sum(rows**2))
        count += rows.size
    return float(np.sqrt(squares / count))


@pytest.mark.slow
def test_cube_side_from_real_tosses_and_held_out_prediction(tmp_path, capsys) -> None:
    records = _tosses(tmp_path, "0-39")
    fit_set, held_out = records[:20], records[20:]
    result = fit_trials(FitProblem(fit_set, START, FREE, spec=ResidualSpec(horizon=HORIZON, weights=WEIGHTS)),
                        settings=LMSettings(max_iterations=15))
    side = result.values["box.size_x"]
    assert result.values["box.size_y"] == side == result.values["box.size_z"]
    assert side == pytest.approx(MEASURED_SIDE, rel=0.03)
    assert 0.05 < result.values["contact.mu_table"] < 0.5
    assert 0.0 < result.values["box.edge_radius"] < 0.03
    assert not result.undetermined
    before = prediction_rms(held_out, START, HORIZON)
    after = prediction_rms(held_out, result.params, HORIZON)
    with capsys.disabled():
        print(f"\ncube tosses, {HORIZON}-step: side {side:.4f} m (measured {MEASURED_SIDE}), mu_table "
              f"{result.values['contact.mu_table']:.3f}, edge radius {result.values['box.edge_radius'] * 1e3:.1f} mm; "
              f"held-out {HORIZON}-step position RMS {before * 1e3:.2f} mm -> {after * 1e3:.2f} mm")
    assert after < 0.8 * before


@pytest.mark.slow
def test_one_step_fit_of_real_tosses_finds_a_cube_with_rounded_edges(tmp_path, capsys) -> None:
    """Step by step the tosses show a cube whose edges are rounded by a few millimetres. A sharp cube
    fitted the same way comes out about 7 % small on a raised table: its shape, not its size, is wrong."""
    records = _tosses(tmp_path, "0-19")
    rounded = fit_trials(FitProblem(records, START, FREE, spec=ResidualSpec(horizon=1, weights=WEIGHTS)))
    sharp = fit_trials(FitProblem(records, START,
                                  "contact.mu_table,box.size_x=box.size_y=box.size_z,contact.table_height",
                                  spec=ResidualSpec(horizon=1, weights=WEIGHTS)))
    side, radius = rounded.values["box.size_x"], rounded.values["box.edge_radius"]
    with capsys.disabled():
        print(f"\ncube tosses, one-step: rounded side {side:.4f} m, edge radius {radius * 1e3:.1f} mm, cost "
              f"{rounded.cost_final:.1f}; sharp side {sharp.values['box.size_x']:.4f} m on a table at "
              f"{sharp.values['contact.table_height'] * 1e3:.1f} mm, cost {sharp.cost_final:.1f}")
    assert rounded.status == "converged" and not rounded.problems
    assert side == pytest.approx(MEASURED_SIDE, rel=0.03)
    assert 0.001 < radius < 0.005
    assert sharp.values["box.size_x"] < 0.95 * MEASURED_SIDE  # the sharp cube's side is off by more than 5 %
    assert rounded.cost_final < sharp.cost_final


@pytest.mark.slow
def test_the_readme_fit_converges_on_the_block_whose_steps_zigzag(tmp_path) -> None:
    """Tosses 420-449 (block 14 of 30): from its 12th iteration the fit's steps of 0.1-0.3 standard
    deviations alternate in direction on a cost with kinks, and no single step got small enough for the
    statistical stop before the default 20 iterations ran out. Net progress over 4 iterations tells the
    zigzag apart: the fit stops converged, at the side the tosses measure."""
    records = _tosses(tmp_path, "420-449")
    start = ParameterSet.nominal().replace(cube_toss.START)
    result = fit_trials(FitProblem(records, start, FREE, spec=ResidualSpec(horizon=HORIZON, weights=WEIGHTS)),
                        settings=LMSettings(), workers=2)
    assert result.status == "converged" and result.trace[-1]["iteration"] < LMSettings().max_iterations, \
        result.stop_reason
    assert result.values["box.size_x"] == pytest.approx(MEASURED_SIDE, rel=0.03)


TIED = ("contact.mu_table", "box.size_x", "box.size_y", "box.size_z", "box.edge_radius")
TIED_COLUMNS = (0, 1, 1, 1, 2)  # the README's tie: the three sides are one unknown


def _summed(jacobian: np.ndarray, columns: tuple[int, ...]) -> np.ndarray:
    place = np.zeros((len(columns), max(columns) + 1))
    place[np.arange(len(columns)), columns] = 1.0
    return jacobian @ place


@pytest.mark.parametrize(("horizon", "engine"), [(HORIZON, "ours"), (None, "ours"), (HORIZON, "mujoco")])
def test_tied_sides_are_differentiated_along_the_tie(tmp_path, horizon, engine) -> None:
    """A fit's tie is one Jacobian column, the sum of its names' columns: the engine differentiates along
    the tie once (segments: one direction of the rollout sensitivities instead of three) and gives what
    the names' columns summed give, on real tosses that bounce, slide and tumble."""
    if engine == "mujoco":
        pytest.importorskip("mujoco")
    spec = ResidualSpec(horizon=horizon, weights=WEIGHTS, engine=engine)
    for record in _tosses(tmp_path, "3-5"):
        data = prepare_trial(record, float(START["sim.dt"]))
        names = TIED if engine == "ours" else TIED[:4]
        columns = TIED_COLUMNS[:len(names)]
        per_name = trial_residuals(data, START, names, spec)
        tied = trial_residuals(data, START, names, spec, columns)
        np.testing.assert_array_equal(tied.residuals, per_name.residuals)
        assert tied.grad_names == names[:2] + names[4:]
        summed = _summed(per_name.jacobian, columns)
        scale = np.max(np.abs(summed), axis=0)
        assert np.all(scale > 0.0)
        # the tie's column is one central difference along (1, 1, 1) against three along each side
        assert np.all(np.max(np.abs(tied.jacobian - summed), axis=0) <= 1e-4 * scale), data.name


@pytest.mark.slow
@pytest.mark.parametrize("tosses", ["0-29", "30-59"])
def test_calibrated_band_holds_the_held_out_40_step_outcomes_of_a_block(tmp_path, capsys, tosses) -> None:
    """Issue 55 on real data: a block of 30 tosses, the README's fit on 15 (``--holdout 0.5``'s split), the
    other 15 tosses' outcome 40 simulated steps after their start state predicted under 30 draws from the fit
    with each recording's measured start noise; the 90 % band calibrated on those 15, each judged by the
    calibration from the other 14, holds at least 12 of them (the parameter-only band held 0-1 of 15 per
    block in benchmarks.cube_toss: without the discrepancy and the conformal quantile this fails)."""
    from sim2real.execution import LocalExecutor

    records = _tosses(tmp_path, tosses)
    cut = cube_toss.cut_record(records[0], cube_toss.BAND_STEPS + 2)
    assert len(cut.platform("real").box_pose) == 42 and len(records[0].platform("real").box_pose) > 42
    executor = LocalExecutor(2)
    try:
        out = cube_toss.block_bands(records, executor, LMSettings().max_iterations, WEIGHTS)
    finally:
        executor.close()
    band = out["bands"]
    assert len(out["held_out"]) == 15 and not set(out["held_out"]) & set(out["fitted"])
    assert out["grid_dt_s"] == pytest.approx(1.0 / 148.0, rel=1e-6)  # one simulated step per recorded sample
    assert out["steps"] == HORIZON and out["poses"] == HORIZON + 2
    assert band["judged"] == 15 and band["failed_draws"] == 0 and band["calibrated"]
    assert isinstance(band["parameter_inside"], int) and 0 <= band["parameter_inside"] <= band["judged"]
    assert all(value > 0 for value in band["discrepancy"].values())
    with capsys.disabled():
        print(f"\ncube tosses {tosses}, 40-step outcomes of 15 held-out tosses: calibrated 90 % band "
              f"{band['inside']}/15 (x, y alone {out['position_only']['inside']}/15), parameter-only "
              f"{band['parameter_inside']}/15; discrepancy x {1000 * band['discrepancy']['x_m']:.1f} mm, "
              f"y {1000 * band['discrepancy']['y_m']:.1f} mm, yaw {band['discrepancy']['yaw_deg']:.1f} deg, "
              f"quantile {band['quantile']:.2f}")
    assert band["inside"] >= 12, band["outside"]
    assert out["position_only"]["inside"] >= 12, out["position_only"]["outside"]

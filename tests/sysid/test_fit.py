"""System identification: the optimizer on closed-form problems, Jacobians against finite
differences, and known-truth recovery from simulated arm trials."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from sim2real.control import load_experiment_config, plan_push
from sim2real.control.sim_platform import box_at_distance, simulate_arm_trial
from sim2real.errors import Sim2RealError
from sim2real.model import load_arm
from sim2real.params import ParameterSet
from sim2real.sysid import (
    FitProblem,
    FreeParameters,
    LMSettings,
    ResidualSpec,
    Weights,
    finite_difference_jacobian,
    fit_trials,
    levenberg_marquardt,
    prepare_trial,
    trial_residuals,
)
from sim2real.sysid.prediction.replay import platform_from_arm_result
from sim2real.sysid.solve.optimizer import STOP_STATISTICAL
from sim2real.trials import JointReference, TrialRecord

NOMINAL = ParameterSet.nominal()
# Hidden truth: 20-40 % away from nominal (box.com_z: 0.03 m, 29 % of the half height 0.105 m).
TRUTH = NOMINAL.replace({
    "contact.mu_table": 0.7 * NOMINAL["contact.mu_table"],
    "contact.mu_pusher": 1.3 * NOMINAL["contact.mu_pusher"],
    "box.com_z": -0.03,
    "arm.servo_tau": 1.3 * NOMINAL["arm.servo_tau"],
    "arm.command_delay": 0.75 * NOMINAL["arm.command_delay"],
})
# Three short pushes (about 1 s each): a low, fast push (the box slides on after the pusher
# stops), a high push (the box tips over its front edge) and a low push 3 cm off the box's
# centre line (the box slides and turns, so the pusher-box contact slides: mu_pusher matters).
PUSHES = ({"height": 0.06, "ramp_time": 0.05}, {"height": 0.19, "ramp_time": 0.1},
          {"height": 0.04, "lateral": 0.03, "ramp_time": 0.06})


def simulated_trial(name: str, params: ParameterSet, push: dict[str, float]) -> TrialRecord:
    """A trial recorded from the simulator with ``params`` (stored as the ``real`` platform)."""
    arm = load_arm(params)
    config = replace(load_experiment_config().push, start_x=0.2, end_x=0.34, speed=0.3, pre_time=0.05,
                     settle_time=0.4, **push)
    reference = plan_push(arm, config)
    result = simulate_arm_trial(params, reference, box_at_distance(0.30, params), arm=arm)
    return TrialRecord(name, {"real": platform_from_arm_result(result)},
                       JointReference(reference.t, reference.position, reference.velocity), {})


@pytest.fixture(scope="module")
def truth_trials() -> list[TrialRecord]:
    return [simulated_trial(f"push_{i}", TRUTH, push) for i, push in enumerate(PUSHES)]


def test_lm_solves_a_bounded_nonlinear_fit_and_stops_with_a_reason() -> None:
    t = np.linspace(0.0, 2.0, 40)
    truth = np.array([1.5, 0.8])

    def evaluate(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        model = x[0] * np.exp(-x[1] * t)
        jac = np.stack((np.exp(-x[1] * t), -x[0] * t * np.exp(-x[1] * t)), axis=1)
        return model - truth[0] * np.exp(-truth[1] * t), jac

    free = levenberg_marquardt(evaluate, np.array([1.0, 0.2]), np.array([0.0, 0.0]), np.array([5.0, 5.0]))
    np.testing.assert_allclose(free.x, truth, rtol=1e-6)
    assert free.stop_reason in {"zero residual", "step below xtol", "cost reduction below ftol", "gradient below gtol",
                                STOP_STATISTICAL}
    assert free.trace[0].iteration == 0 and free.trace[-1].cost < 1e-12
    bounded = levenberg_marquardt(evaluate, np.array([1.0, 0.2]), np.array([0.0, 0.0]), np.array([1.2, 5.0]))
    assert bounded.x[0] == pytest.approx(1.2) and 0 in bounded.active_bounds


def _gaussian_dip(v: float, centre: float, width: float) -> tuple[float, float]:
    """``exp(-u²)`` with ``u = (v - centre) / width``, and its derivative in ``v``."""
    u = (v - centre) / width
    return float(np.exp(-u * u)), float(-2.0 * u / width * np.exp(-u * u))


def test_lm_first_steps_stay_within_the_parameter_scale_and_do_not_jump_to_a_corner() -> None:
    """Two frictions (bounds [0, 2], start 0.5 each) whose residuals are nearly flat at the start: the
    minimum lies in narrow dips near 0.8 and 0.3. The undamped Gauss-Newton step leaves the bounds on
    both; it used to land on the corner (2, 0), where the projected gradient vanishes: a stop after one
    iteration. Within a trust radius of the parameters' scale the fit finds the dips."""
    def evaluate(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a, da = _gaussian_dip(x[0], 0.8, 0.15)
        b, db = _gaussian_dip(x[1], 0.3, 0.1)
        residuals = np.array([0.5 - 0.01 * (x[0] - 0.5) - 0.5 * a, 0.3 + 0.01 * (x[1] - 0.5) - 0.3 * b])
        return residuals, np.array([[-0.01 - 0.5 * da, 0.0], [0.0, 0.01 - 0.3 * db]])

    x0, typical = np.array([0.5, 0.5]), np.array([0.5, 0.5])
    r0, jac0 = evaluate(x0)
    gauss_newton = -np.linalg.solve(jac0, r0)
    # The unscaled step: several scales long, beyond both bounds (to the corner (2, 0) once clipped).
    assert np.all(np.abs(gauss_newton) > 2 * typical) and x0[0] + gauss_newton[0] > 2.0 > 0.0 > x0[1] + gauss_newton[1]
    result = levenberg_marquardt(evaluate, x0, np.zeros(2), np.full(2, 2.0), typical=typical)
    first = np.array(result.trace[1].x) - x0
    assert np.all(np.abs(first) <= LMSettings().initial_step * typical + 1e-12)
    assert 0.7 < result.x[0] < 0.9 and 0.2 < result.x[1] < 0.4 and result.cost < 1e-12
    assert not result.active_bounds


def test_lm_leaves_a_parameter_without_influence_where_it_is() -> None:
    def evaluate(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.array([x[0] - 2.0, 3.0 * (x[0] - 2.0)]), np.array([[1.0, 1e-14], [3.0, 0.0]])

    result = levenberg_marquardt(evaluate, np.array([0.0, 0.7]), np.array([-10.0, 0.0]), np.array([10.0, 10.0]))
    assert result.x[0] == pytest.approx(2.0) and result.x[1] == 0.7


def test_huber_loss_resists_an_outlier() -> None:
    t = np.arange(20.0)
    data = 2.0 * t
    data[5] += 500.0

    def evaluate(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return x[0] * t - data, t[:, None]

    plain = levenberg_marquardt(evaluate, np.array([1.0]), np.array([-10.0]), np.array([10.0]))
    robust = levenberg_marquardt(evaluate, np.array([1.0]), np.array([-10.0]), np.array([10.0]),
                                 LMSettings(loss="huber", loss_scale=1.0, max_iterations=50))
    assert abs(robust.x[0] - 2.0) < 0.1 * abs(plain.x[0] - 2.0)


def test_free_names_weights_and_ties_are_checked() -> None:
    free = FreeParameters.parse("contact.mu_table, box.size_x=box.size_y=box.size_z")
    assert free.labels == ("contact.mu_table", "box.size_x")
    assert free.expand(np.array([0.2, 0.1]))["box.size_z"] == 0.1
    with pytest.raises(Sim2RealError, match=r"did you mean 'contact\.mu_table'"):
        FreeParameters.parse("contact.mu_tabel")
    with pytest.raises(Sim2RealError, match="frozen"):
        FreeParameters.parse("sim.dt")
    with pytest.raises(Sim2RealError, match="twice"):
        FreeParameters.parse("box.mass,box.mass")
    assert Weights.parse("position=10").position == 10.0
    with pytest.raises(Sim2RealError, match="residual weight") as err:
        Weights.parse("pos=3")
    assert err.value.option == "weights"  # the CLI prefixes --weights


@pytest.mark.parametrize("index", [0, 2])
def test_residuals_vanish_at_the_truth_and_jacobian_matches_finite_differences(truth_trials, index) -> None:
    data = prepare_trial(truth_trials[index], float(NOMINAL["sim.dt"]))
    names = ("contact.mu_table", "contact.mu_pusher", "box.com_z", "arm.servo_tau", "arm.command_delay")
    spec = ResidualSpec(horizon=1)
    assert np.max(np.abs(trial_residuals(data, TRUTH, (), spec).residuals)) < 1e-8
    analytic = trial_residuals(data, NOMINAL, names, spec).jacobian
    numeric = finite_difference_jacobian(data, NOMINAL, names, spec)
    for k, name in enumerate(names):
        if name == "contact.mu_pusher" and index == 0:  # centred push: the pusher contact does not slide
            continue
        error = np.linalg.norm(analytic[:, k] - numeric[:, k]) / np.linalg.norm(numeric[:, k])
        assert error < 0.02, f"{name}: relative Jacobian error {error:.3g}"


@pytest.mark.parametrize(("horizon", "mode"), [(20, "auto"), (None, "commands"), (None, "kinematic")])
def test_tied_names_share_a_column_that_is_the_sum_of_theirs(truth_trials, horizon, mode) -> None:
    """Names sharing a Jacobian column (a fit's tie) give the sum of their own columns, through each path:
    box and servo segments, the whole simulated arm, the whole trial under the played-back pusher."""
    data = prepare_trial(truth_trials[2], float(NOMINAL["sim.dt"]))
    servo = () if mode == "kinematic" else ("arm.servo_tau", "arm.command_delay")
    names = ("contact.mu_table", "box.com_x", "box.com_y", "contact.mu_pusher", *servo)
    columns = (0, 1, 1, 2, 3, 3)[:len(names)]
    spec = ResidualSpec(horizon=horizon, mode=mode)
    per_name = trial_residuals(data, NOMINAL, names, spec)
    tied = trial_residuals(data, NOMINAL, names, spec, columns)
    np.testing.assert_array_equal(tied.residuals, per_name.residuals)
    assert tied.grad_names == ("contact.mu_table", "box.com_x", "contact.mu_pusher", *servo[:1])
    place = np.zeros((len(names), max(columns) + 1))
    place[np.arange(len(names)), columns] = 1.0
    summed = per_name.jacobian @ place
    scale = np.max(np.abs(summed), axis=0)
    assert np.all(scale > 0.0)
    assert np.all(np.max(np.abs(tied.jacobian - summed), axis=0) <= 1e-4 * scale)
    with pytest.raises(Sim2RealError, match="gradient columns"):
        trial_residuals(data, NOMINAL, names, spec, (0, 2, 2, 2, 2, 2)[:len(names)])


@pytest.mark.slow
def test_known_truth_recovery_from_nominal(truth_trials) -> None:
    free = ["contact.mu_table", "contact.mu_pusher", "box.com_z", "arm.servo_tau", "arm.command_delay", "box.mass"]
    result = fit_trials(FitProblem(truth_trials, NOMINAL, free, spec=ResidualSpec(horizon=1)),
                        settings=LMSettings(max_iterations=8))
    for name in ("contact.mu_table", "contact.mu_pusher", "box.com_z", "arm.servo_tau", "arm.command_delay"):
        assert result.values[name] == pytest.approx(TRUTH[name], rel=0.03), name
        assert name not in result.undetermined
    # Mass never changes a kinematically pushed box's motion: it must be reported, not guessed.
    assert "box.mass" in result.undetermined and result.std["box.mass"] is None
    assert any("box.mass" in w and "not determined" in w for w in result.warnings)
    # The off-centre push is what determines the pusher friction (it does not move in the centred ones).
    assert result.values["contact.mu_pusher"] != NOMINAL["contact.mu_pusher"]
    assert result.cost_final < 1e-6 * result.cost_start
    assert [e["iteration"] for e in result.trace][:2] == [0, 1]
    assert result.params["box.com_z"] == result.values["box.com_z"]

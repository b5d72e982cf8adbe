"""Whole-trial gradients of the mirrored arm trial against central finite differences.

A push low on the box (it slides, it does not topple): the derivatives of the final box
position with respect to the servo model (time constant, command delay) and the PD gains,
chained through the servo model, the FK Jacobian and the engine's implicit gradients.
"""

import numpy as np
import pytest

from sim2real.control import PushConfig, plan_push
from sim2real.model import load_arm
from sim2real.params import ParameterSet
from sim2real.sysid.prediction.standard_trial import run_standard_trial

NAMES = ("arm.servo_tau", "arm.command_delay", "pd.kp", "pd.kd")


@pytest.mark.slow
def test_whole_trial_gradients_match_finite_differences():
    params = ParameterSet.nominal()
    push = PushConfig(height=0.05, start_x=0.2, end_x=0.30, speed=0.2, ramp_time=0.15, pre_time=0.05,
                      settle_time=0.4)
    reference = plan_push(load_arm(params), push)
    trial = run_standard_trial(0.30, params, NAMES, reference=reference)
    assert trial.result.touched and not trial.outcome.flipped
    assert trial.result.box[-1, 0] > 0.35  # the box was pushed
    gradient = trial.result.d_box[-1][:3]
    for column, name in enumerate(NAMES):
        step = 1e-4 * abs(params[name])
        plus = run_standard_trial(0.30, params.replace({name: params[name] + step}), reference=reference)
        minus = run_standard_trial(0.30, params.replace({name: params[name] - step}), reference=reference)
        finite = (plus.result.box[-1][:3] - minus.result.box[-1][:3]) / (2 * step)
        error = np.linalg.norm(gradient[:, column] - finite) / np.linalg.norm(finite)
        assert error < 1e-2, f"{name}: implicit {gradient[:, column]}, finite differences {finite}"


@pytest.mark.slow
def test_chain_is_exact_for_the_smoothed_model_with_limits_active():
    """Fast, off-centre push (PD rate limit active, box sliding and turning) with forward
    and gradient solves at the same central-path value: the chain rule must be exact."""
    params = ParameterSet.nominal().replace({"contact.kappa_grad": 1e-4, "contact.kappa_sim": 1e-4})
    push = PushConfig(height=0.04, lateral=0.03, start_x=0.2, end_x=0.28, speed=0.35, ramp_time=0.06,
                      pre_time=0.05, settle_time=0.3)
    reference = plan_push(load_arm(params), push)
    names = ("arm.servo_tau", "pd.kd", "contact.mu_table", "contact.mu_pusher")
    trial = run_standard_trial(0.30, params, names, reference=reference)
    assert not trial.outcome.flipped and abs(trial.result.box[-1, 1]) > 1e-3  # pushed sideways too
    gradient = trial.result.d_box[-1][:3]
    for column, name in enumerate(names):
        step = 1e-5 * abs(params[name])
        plus = run_standard_trial(0.30, params.replace({name: params[name] + step}), reference=reference)
        minus = run_standard_trial(0.30, params.replace({name: params[name] - step}), reference=reference)
        finite = (plus.result.box[-1][:3] - minus.result.box[-1][:3]) / (2 * step)
        error = np.linalg.norm(gradient[:, column] - finite) / np.linalg.norm(finite)
        assert error < 1e-3, f"{name}: implicit {gradient[:, column]}, finite differences {finite}"

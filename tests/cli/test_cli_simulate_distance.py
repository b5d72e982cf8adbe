"""``sim2real simulate --distance D``: the standard arm trial end to end."""

import json
import subprocess
import sys

import numpy as np
import pytest
from children import HANG_GUARD_S

from sim2real.trials import read_trial


def _cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "sim2real", "simulate", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def trial(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim") / "trial_d0.35"
    result = _cli("--distance", "0.35", "--grad", "pd.kp,arm.servo_tau", "--out", str(out), "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), out


def test_json_outcome(trial):
    summary, _ = trial
    assert summary["initial_distance_m"] == 0.35
    assert summary["flipped"] is True and summary["touched"] is True
    assert summary["final_distance_m"] == pytest.approx(summary["final"]["box_position"][0])
    assert len(summary["final"]["box_quaternion"]) == 4
    assert summary["max_tilt_deg"] > 80
    assert summary["min_signed_distance_m"] > -1e-4
    assert summary["steps"] > 100
    for name in ("pd.kp", "arm.servo_tau"):
        gradient = summary["gradients"][name]
        assert len(gradient["box_position"]) == 3 and np.all(np.isfinite(gradient["box_position"]))


def test_bag_holds_the_trial(trial):
    summary, out = trial
    record = read_trial(out, require=["/sim/box_pose", "/sim/joint_states", "/sim/joint_command"])
    sim = record.platform("sim")
    np.testing.assert_allclose(sim.box_pose.position[-1], summary["final"]["box_position"], atol=1e-9)
    assert record.reference is not None and len(record.reference) > 100
    assert record.meta["outcomes"]["sim"]["flipped"] is True
    # commands were recorded at every 10 ms tick
    np.testing.assert_allclose(np.diff(sim.joint_command.t), 0.01, atol=1e-6)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--distance", "2"], "outside the push workspace"),
        (["--distance", "0.4", "--grad", "contact.kappa_grad"], "no whole-trial gradient"),
        (["--distance", "0.4", "--set", "pd.kq=3"], "did you mean 'pd.kp'"),
        ([], "needs a SCENARIO.yaml or --distance"),
    ],
)
@pytest.mark.slow
def test_bad_input(args, message):
    result = _cli(*args, timeout=HANG_GUARD_S)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_existing_out_is_refused(tmp_path):
    out = tmp_path / "taken"
    out.mkdir()
    result = _cli("--distance", "0.4", "--out", str(out), timeout=HANG_GUARD_S)
    assert result.returncode == 2 and "refusing to overwrite" in result.stderr

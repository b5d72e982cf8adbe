"""Arm trials replayed from their recorded commands: where the arm starts and which instants are compared.

A replay in ``commands`` mode drives the simulated arm open loop by the recorded velocity commands,
so an error in its starting joint angles stays in the whole replay. One noisy joint reading (0.5
mrad) used to be that start, and it moved a fitted ``contact.mu_pusher`` by 0.09 on clean box poses
(``benchmarks.coverage``, problem ``arm``). The start is now the mean of the joint samples before the
first command. And the replay's grid is kept to the command ticks: a grid started at a jittered joint
stamp compared the simulation with the recording up to 1 ms off.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from benchmarks.coverage import JOINT_NOISE, NOMINAL, _noisy_joints, _probe_reference
from sim2real.sysid.prediction.standard_trial import run_standard_trial
from sim2real.sysid.problem.data import prepare_trial, resting_joints
from sim2real.sysid.residuals.trial import GROUPS, ResidualSpec, trial_residuals
from sim2real.trials import PlatformRecord, TrialRecord

DT = float(NOMINAL["sim.dt"])


def _rest_then_move(seed: int, rest: int = 30, moving: int = 40, drift: float = 0.0,
                    command_noise: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Joint angles (K+1, 6) at rest (or drifting, rad per tick) then commanded to move; commands (K, 6),
    with ``command_noise`` rad/s of noise (a PD law holding the arm still on noisy joint readings)."""
    rng = np.random.default_rng(seed)
    steps = rest + moving
    command = rng.normal(0.0, command_noise, (steps, 6)) if command_noise else np.zeros((steps, 6))
    command[rest:] = 0.5
    truth = np.linspace(-1.0, 1.0, 6)
    position = np.tile(truth, (steps + 1, 1)) + drift * np.arange(steps + 1)[:, None]
    position[rest + 1:] += 0.5 * DT * np.arange(1, moving + 1)[:, None]
    return position + rng.normal(0.0, JOINT_NOISE, position.shape), command


def test_the_arm_starts_from_the_mean_of_its_resting_samples() -> None:
    errors_mean, errors_first = [], []
    for seed in range(20):
        position, command = _rest_then_move(seed)
        start = resting_joints(position, command)
        assert start is not None and start[1] == 31  # the rest and the tick of the first command
        truth = np.linspace(-1.0, 1.0, 6)
        errors_mean.append(np.abs(start[0] - truth).max())
        errors_first.append(np.abs(position[0] - truth).max())
    print(f"largest joint error: mean of the rest {np.median(errors_mean) * 1e3:.3f} mrad, "
          f"first sample {np.median(errors_first) * 1e3:.3f} mrad (medians over 20 recordings)")
    assert np.median(errors_mean) < 0.3 * np.median(errors_first)


def test_a_pd_law_holding_the_arm_still_does_not_hide_the_rest() -> None:
    """At rest a PD law commands the noise of the joint readings (kp 10/s × 0.5 mrad), not zeros."""
    for seed in range(5):
        position, command = _rest_then_move(seed, command_noise=10.0 * JOINT_NOISE)
        start = resting_joints(position, command)
        assert start is not None and 25 <= start[1] <= 31, start
        assert np.abs(start[0] - np.linspace(-1.0, 1.0, 6)).max() < 4 * JOINT_NOISE / np.sqrt(25)


def test_no_resting_start_when_the_arm_moves_at_once_or_drifts() -> None:
    position, command = _rest_then_move(0, rest=0)
    assert resting_joints(position, command) is None
    position, command = _rest_then_move(0, drift=2e-4)  # 0.2 mrad per tick: moving, not noise
    assert resting_joints(position, command) is None
    position, command = _rest_then_move(0)
    assert resting_joints(position, command) is not None


def _probe(jitter_first: float = 0.0) -> TrialRecord:
    """The coverage benchmark's first probe push, joint states noisy, the box recorded exactly."""
    clean = run_standard_trial(0.30, NOMINAL, reference=_probe_reference(0)).record(0).platforms["sim"]
    joints = _noisy_joints(clean.joint_states, np.random.default_rng(3))
    if jitter_first:
        joints.t[0] = clean.joint_states.t[0] + jitter_first
    platform = PlatformRecord(joint_states=joints, joint_command=clean.joint_command, box_pose=clean.box_pose)
    return TrialRecord("probe", {"real": platform}, None, {"complete": True})


def test_the_grid_keeps_to_the_command_ticks_when_the_first_joint_stamp_is_late() -> None:
    record = _probe(jitter_first=0.0007)
    data = prepare_trial(record, DT)
    ticks = record.platforms["real"].joint_command.t
    assert np.min(np.abs(ticks - data.t[0])) < 1e-12
    assert data.t[0] >= record.platforms["real"].joint_states.t[0]


def test_a_noisy_joint_reading_does_not_offset_the_replayed_box() -> None:
    """At the hidden values the replayed box matches its exact recording; it did not from one noisy sample."""
    data = prepare_trial(_probe(), DT)
    spec = ResidualSpec(horizon=None, mode="commands")
    box_rows = [GROUPS.index("box_position"), GROUPS.index("box_orientation")]
    rows = trial_residuals(data, NOMINAL, (), spec)
    resting = float(np.sqrt(np.mean(rows.residuals[np.isin(rows.groups, box_rows)] ** 2)))
    first = trial_residuals(replace(data, start_joints=None), NOMINAL, (), spec)
    single = float(np.sqrt(np.mean(first.residuals[np.isin(first.groups, box_rows)] ** 2)))
    print(f"box pose RMS at the hidden values (weighted: 1 = 1 mm or 10 mrad): {resting:.3f} from the resting "
          f"mean, {single:.3f} from the first joint sample")
    assert data.start_joint_samples > 10
    assert resting < 0.5 * single

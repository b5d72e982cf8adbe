"""Coverage of the fit's 95 % intervals on sim-as-reality trials with known truth.

``python -m benchmarks.coverage --json [--seeds N]`` repeats, per seed, a fit on trials simulated
with hidden values drawn at random, recorded with realistic noise, and counts how often the
reported 95 % interval contains the hidden value. The problems:

``arm``
    All five: ``arm.servo_tau`` and ``arm.command_delay`` (stage 1), then ``contact.mu_table``,
    ``contact.mu_pusher`` and ``box.com_z`` (stage 2), as the demo fits them, from six probe pushes
    the simulated arm makes with the hidden values (0.3 m/s; low and central: the box slides;
    low and 4 cm off centre to either side, and once more from 5 cm farther away: it turns and
    the pusher slides on its face; high, twice: it tilts or tips). Recorded with 0.5 mrad and 5 mrad/s of white
    noise on the joint states, 0.5 mm and 3 mrad on the box poses, every sample stamp jittered by
    up to ±1 ms. Stage 1: 20-step segments of joint residuals. Stage 2: whole trials of the
    simulated arm driven by the recorded commands with the stage-1 servo (``--mode commands``),
    from a start away from the hidden values.
``servo``
    ``arm.servo_tau`` and ``arm.command_delay`` from three standard pushes (0.30, 0.45, 0.50 m),
    the same joint noise and jitter; 20-step segments of joint residuals (the demo's stage 1).
``playback``
    ``contact.mu_table``, ``contact.mu_pusher`` and ``box.com_z`` from three fast probe pushes with
    the probe's *recorded* pose played back (``--mode pusher``), box and probe poses with 0.5 mm
    and 3 mrad of noise and ±1 ms stamp jitter, ``--jackknife`` intervals. It shows what playing
    back a noisy recorded pusher does: the noise is played as motion and biases the fit (README,
    "Intervals").
``planar``
    ``contact.mu_table``, ``contact.mu_pusher`` and ``contact.support_ratio`` from the six planar
    pushes of ``tests/fixtures/planar_pushes.py`` (a rod pushes a 9.5 mm plate off centre and at
    angles, then stops; box and rod poses with 0.3 mm and 0.29° of noise per sample, a new noise
    seed per repeat, the hidden values fixed): whole trials with the recorded rod played back and
    ``--jackknife`` intervals, as the README's flat-block fit.

Prints one JSON object: per problem and parameter the coverage (hits / seeds), the median
ratio of the error to the reported standard deviation, the median 95 % half-width (an interval
that covers only by being as wide as the prior range says nothing), and fit failures.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import tempfile
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fixtures import planar_pushes

from sim2real.control.reference import JointTrajectory, PushConfig, plan_push
from sim2real.control.sim_platform import box_at_distance
from sim2real.model.arm import load_arm
from sim2real.params import ParameterSet
from sim2real.physics import BoxWorld
from sim2real.sim import rollout
from sim2real.spatial import from_rotation_vector, multiply, normalize
from sim2real.sysid import FitProblem, LMSettings, ResidualSpec, Weights, fit_trials
from sim2real.sysid.prediction import run_standard_trial
from sim2real.trials import JointSeries, PlatformRecord, PoseSeries, TrialRecord, read_trial

NOMINAL = ParameterSet.nominal()
#: Noise of the recordings: joint angle (rad), joint velocity (rad/s), pose position (m) and
#: orientation (rad), and the largest shift of a sample's stamp (s).
JOINT_NOISE, JOINT_VELOCITY_NOISE, POSITION_NOISE, ORIENTATION_NOISE, JITTER = 5e-4, 5e-3, 5e-4, 3e-3, 1e-3
SERVO_FREE = ("arm.servo_tau", "arm.command_delay")
ARM_FREE = ("arm.servo_tau", "arm.command_delay", "contact.mu_table", "contact.mu_pusher", "box.com_z")
BOX_FREE = ("contact.mu_table", "contact.mu_pusher", "box.com_z")
PLANAR_FREE = ("contact.mu_table", "contact.mu_pusher", "contact.support_ratio")

#: Each fit runs from its one start: what is measured is the interval of one fit from a fixed start (other
#: starts, the default for small problems, are a separate question, tested in tests/sysid/test_starts.py).
STARTS = 1


def _jittered(t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.maximum.accumulate(t + rng.uniform(-JITTER, JITTER, t.shape[0]))


#: The ranges hidden values are drawn from, uniformly (SI units).
HIDDEN_RANGES = {"arm.servo_tau": (0.04, 0.09), "arm.command_delay": (0.005, 0.03), "contact.mu_table": (0.3, 0.6),
                 "contact.mu_pusher": (0.2, 0.5), "box.com_z": (-0.04, 0.02)}


def _hidden(names: tuple[str, ...], rng: np.random.Generator) -> dict[str, float]:
    return {name: float(rng.uniform(*HIDDEN_RANGES[name])) for name in names}


def _hidden_servo(rng: np.random.Generator) -> dict[str, float]:
    return _hidden(SERVO_FREE, rng)


def _hidden_box(rng: np.random.Generator) -> dict[str, float]:
    return _hidden(BOX_FREE, rng)


def _noisy_joints(states: JointSeries, rng: np.random.Generator) -> JointSeries:
    return JointSeries.from_arrays(
        _jittered(states.t, rng), states.position + rng.normal(0.0, JOINT_NOISE, states.position.shape),
        states.velocity + rng.normal(0.0, JOINT_VELOCITY_NOISE, states.velocity.shape))


#: The arm problem's probe pushes: (name, box distance m, push height above the table m, pusher y m).
ARM_PROBES = (("slide", 0.30, 0.04, 0.0), ("turn_left", 0.30, 0.04, 0.04), ("turn_right", 0.30, 0.04, -0.04),
              ("turn_far", 0.35, 0.04, 0.04), ("tilt", 0.30, 0.15, 0.0), ("tip", 0.30, 0.18, 0.0))
#: Their cruise speed (m/s) and the hold after the push (s).
ARM_PROBE_SPEED, ARM_PROBE_SETTLE = 0.3, 0.4


@functools.cache
def _probe_reference(index: int) -> JointTrajectory:
    """The planned joint path of probe push ``index`` (the hidden values do not change the arm's geometry)."""
    _, _, height, lateral = ARM_PROBES[index]
    push = PushConfig(height=height, lateral=lateral, speed=ARM_PROBE_SPEED, settle_time=ARM_PROBE_SETTLE)
    return plan_push(load_arm(NOMINAL), push, float(NOMINAL["contact.table_height"]))


def arm_trials(seed: int) -> tuple[dict[str, float], list[TrialRecord]]:
    """Hidden servo and box values and the six noisy probe pushes the simulated arm made with them."""
    rng = np.random.default_rng(seed)
    box = _hidden_box(rng)
    truth = {**_hidden_servo(rng), **box}
    hidden = NOMINAL.replace(truth)
    records = []
    for index, (name, distance, _, _) in enumerate(ARM_PROBES):
        clean = run_standard_trial(distance, hidden, reference=_probe_reference(index)).record(index).platforms["sim"]
        box_pose = _noisy_pose(_jittered(clean.box_pose.t, rng), clean.box_pose.position,
                               clean.box_pose.quaternion, rng)
        platform = PlatformRecord(joint_states=_noisy_joints(clean.joint_states, rng),
                                  joint_command=clean.joint_command, box_pose=box_pose)
        records.append(TrialRecord(name, {"real": platform}, None, {"complete": True}))
    return truth, records


def servo_trials(seed: int) -> tuple[dict[str, float], list[TrialRecord]]:
    """Hidden servo values and three noisy standard pushes recorded with them (``real`` platform)."""
    rng = np.random.default_rng(seed)
    truth = _hidden_servo(rng)
    hidden = NOMINAL.replace(truth)
    records = []
    for index, distance in enumerate((0.30, 0.45, 0.50)):
        clean = run_standard_trial(distance, hidden).record(index).platforms["sim"]
        joints = _noisy_joints(clean.joint_states, rng)
        platform = PlatformRecord(joint_states=joints, joint_command=clean.joint_command, box_pose=clean.box_pose,
                                  pusher_pose=clean.pusher_pose)
        records.append(TrialRecord(f"push_{index}", {"real": platform}, None, {"complete": True}))
    return truth, records


def _noisy_pose(t: np.ndarray, position: np.ndarray, quaternion: np.ndarray,
                rng: np.random.Generator) -> PoseSeries:
    noisy = np.array([normalize(multiply(from_rotation_vector(rng.normal(0.0, ORIENTATION_NOISE, 3)), q))
                      for q in quaternion])
    return PoseSeries(t, position + rng.normal(0.0, POSITION_NOISE, position.shape), noisy)


def _probe_push(name: str, params: ParameterSet, rng: np.random.Generator, lateral: float, height: float,
                speed: float, push_time: float, duration: float = 0.8) -> TrialRecord:
    dt = float(params["sim.dt"])
    t = dt * np.arange(round(duration / dt) + 1)
    x = 0.40 - 0.5 * float(params["box.size_x"]) - float(params["pusher.radius"]) - 0.005 \
        + speed * np.clip(t - 0.05, 0.0, push_time)
    path = np.stack([x, np.full_like(t, lateral), np.full_like(t, height)], axis=1)
    states = rollout(BoxWorld.from_params(params), box_at_distance(0.40, params), pusher_path=path).states
    stamps = _jittered(t, rng)
    identity = np.tile([1.0, 0.0, 0.0, 0.0], (t.shape[0], 1))
    platform = PlatformRecord(box_pose=_noisy_pose(stamps, states[:, 0:3], states[:, 3:7], rng),
                              pusher_pose=_noisy_pose(stamps, path, identity, rng))
    return TrialRecord(name, {"real": platform}, None, {"complete": True})


def playback_trials(seed: int) -> tuple[dict[str, float], list[TrialRecord]]:
    """Hidden friction and centre-of-mass height and three noisy probe pushes recorded with them."""
    rng = np.random.default_rng(seed)
    truth = _hidden_box(rng)
    hidden = NOMINAL.replace(truth)
    return truth, [_probe_push("slide", hidden, rng, 0.0, 0.04, 0.5, 0.3),
                   _probe_push("turn", hidden, rng, 0.045, 0.05, 0.4, 0.4),
                   _probe_push("tip", hidden, rng, 0.0, 0.17, 0.3, 0.3, duration=0.9)]


def fit_servo(records: list[TrialRecord]) -> Any:
    """The demo's stage 1 on ``records`` (20-step segments of joint residuals)."""
    return fit_trials(FitProblem(records, NOMINAL, SERVO_FREE,
                                 spec=ResidualSpec(horizon=20, weights=Weights(position=0.0, orientation=0.0))),
                      settings=LMSettings(max_iterations=25), starts=STARTS)


#: Where stage 2 of the arm problem starts (the hidden values are drawn around it).
BOX_START = {"contact.mu_table": 0.45, "contact.mu_pusher": 0.35, "box.com_z": -0.01}


def fit_arm(records: list[TrialRecord]) -> Any:
    """The demo's two stages on the probe pushes: the servo, then the box with the arm driven by the commands."""
    servo = fit_servo(records)
    box = fit_trials(FitProblem(records, servo.params.replace(BOX_START), BOX_FREE,
                                spec=ResidualSpec(horizon=None, mode="commands")),
                     settings=LMSettings(max_iterations=25), starts=STARTS)
    return _Stages(servo, box)


@dataclass(frozen=True)
class _Stages:
    """Two fits read as one: values, standard deviations and intervals of both; the worse status."""

    servo: Any
    box: Any

    @property
    def status(self) -> str:
        return self.servo.status if self.servo.status != "converged" else self.box.status

    @property
    def values(self) -> dict[str, float]:
        return {**self.servo.values, **self.box.values}

    @property
    def std(self) -> dict[str, float | None]:
        return {**self.servo.std, **self.box.std}

    @property
    def ci95(self) -> dict[str, list[float] | None]:
        return {**self.servo.ci95, **self.box.ci95}


def fit_playback(records: list[TrialRecord]) -> Any:
    """Whole probe pushes, the recorded probe played back."""
    return fit_trials(FitProblem(records, NOMINAL.replace(BOX_START), BOX_FREE,
                                 spec=ResidualSpec(horizon=None, mode="pusher")),
                      settings=LMSettings(max_iterations=25), starts=STARTS, jackknife=True)


def planar_trials(seed: int) -> tuple[dict[str, float], list[TrialRecord]]:
    """The fixture's hidden values and its six training pushes recorded with noise seed ``seed``."""
    truth = dict(planar_pushes.TRUTH)
    with tempfile.TemporaryDirectory() as tmp:
        run = planar_pushes.write_pushes(Path(tmp) / "train", planar_pushes.TRAINING, planar_pushes.params(truth),
                                         noise_m=3e-4, noise_rad=5e-3, seed=seed)
        records = [read_trial(d) for d in sorted(p for p in run.iterdir() if p.is_dir())]
    return truth, records


def fit_planar(records: list[TrialRecord]) -> Any:
    """The README's flat-block fit: whole trials, the recorded rod played back, from the nominal values."""
    return fit_trials(FitProblem(records, planar_pushes.params(), PLANAR_FREE,
                                 spec=ResidualSpec(horizon=None, mode="pusher", pusher_shape="rod")),
                      settings=LMSettings(max_iterations=40), starts=STARTS, jackknife=True)


PROBLEMS: dict[str, tuple[Callable[[int], tuple[dict[str, float], list[TrialRecord]]], Callable[..., Any]]] = {
    "arm": (arm_trials, fit_arm), "servo": (servo_trials, fit_servo), "playback": (playback_trials, fit_playback),
    "planar": (planar_trials, fit_planar)}
FREE_NAMES = {"arm": ARM_FREE, "servo": SERVO_FREE, "playback": BOX_FREE, "planar": PLANAR_FREE}


def one_seed(problem: str, seed: int) -> dict[str, Any]:
    """One repeat: ``{name: {truth, fitted, std, ci95, covered}}`` or ``{"error": reason}``."""
    make, fit = PROBLEMS[problem]
    truth, records = make(seed)
    try:
        result = fit(records)
    except Exception as err:  # a repeat that fails is counted as such, never as covered
        return {"error": " ".join(str(err).split())}
    out: dict[str, Any] = {"status": result.status}
    for name, value in truth.items():
        ci = result.ci95.get(name)
        out[name] = {"truth": value, "fitted": result.values[name], "std": result.std[name],
                     "ci95": list(ci) if ci else None, "covered": bool(ci is not None and ci[0] <= value <= ci[1])}
    return out


def coverage(problem: str, seeds: int, workers: int = 1) -> dict[str, Any]:
    """Run ``seeds`` repeats of ``problem``; coverage per parameter."""
    names = FREE_NAMES[problem]
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            runs = list(pool.map(one_seed, [problem] * seeds, range(seeds)))
    else:
        runs = [one_seed(problem, seed) for seed in range(seeds)]
    done = [run for run in runs if "error" not in run]
    summary: dict[str, Any] = {"seeds": seeds, "fits": len(done), "errors": [r["error"] for r in runs if "error" in r],
                               "not_converged": sum(r["status"] != "converged" for r in done)}
    for name in names:
        ratios = [abs(r[name]["fitted"] - r[name]["truth"]) / r[name]["std"] for r in done if r[name]["std"]]
        halfwidths = [0.5 * (r[name]["ci95"][1] - r[name]["ci95"][0]) for r in done if r[name]["ci95"]]
        summary[name] = {"covered": sum(r[name]["covered"] for r in done), "of": seeds,
                         "coverage": sum(r[name]["covered"] for r in done) / seeds,
                         "median_error_over_std": statistics.median(ratios) if ratios else None,
                         "median_ci95_halfwidth": statistics.median(halfwidths) if halfwidths else None}
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object (the default output)")
    parser.add_argument("--seeds", type=int, default=20, help="repeats per problem (default 20)")
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--problems", default="arm,servo,playback,planar",
                        help="comma-separated: arm, servo, playback, planar (default all)")
    args = parser.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)
    report: dict[str, Any] = {"benchmark": "coverage", "noise": {
        "joint_rad": JOINT_NOISE, "joint_velocity_rad_s": JOINT_VELOCITY_NOISE, "position_m": POSITION_NOISE,
        "orientation_rad": ORIENTATION_NOISE, "stamp_jitter_s": JITTER}}
    for problem in args.problems.split(","):
        report[problem] = coverage(problem.strip(), args.seeds, args.workers)
        print(f"{problem}: {json.dumps(report[problem])}", file=sys.stderr, flush=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

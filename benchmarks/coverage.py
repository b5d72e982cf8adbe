"""Coverage of the fit's 95 % intervals on sim-as-reality trials with known truth.

``python -m benchmarks.coverage --json [--seeds N]`` repeats, per seed, a fit on trials simulated
with hidden values drawn at random, recorded with realistic noise, and counts how often the
reported 95 % interval contains the hidden value. Two problems:

``servo``
    ``arm.servo_tau`` and ``arm.command_delay`` from three standard pushes (0.30, 0.45, 0.50 m):
    joint positions with 0.5 mrad and velocities with 5 mrad/s of white noise, sample stamps
    jittered by up to ±1 ms; 20-step segments of joint residuals (the demo's stage 1).
``box``
    ``contact.mu_table``, ``contact.mu_pusher`` and ``box.com_z`` from three probe pushes of the
    nominal box (low and central: the box slides; off-centre: it turns and the probe slides on
    its face; high: it tips), box and probe poses with 0.5 mm and 3 mrad of noise and ±1 ms
    stamp jitter; whole trials with the recorded probe played back, intervals checked by the
    trial jackknife of refits (``fit --jackknife``).
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
import json
import statistics
import sys
import tempfile
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fixtures import planar_pushes

from sim2real.control.sim_platform import box_at_distance
from sim2real.params import ParameterSet
from sim2real.physics import BoxWorld, rollout
from sim2real.spatial import from_rotation_vector, multiply, normalize
from sim2real.sysid import LMSettings, Weights, fit_trials
from sim2real.trials import JointSeries, PlatformRecord, PoseSeries, TrialRecord, read_trial
from sim2real.trials.standard_trial import run_standard_trial

NOMINAL = ParameterSet.nominal()
#: Noise of the recordings: joint angle (rad), joint velocity (rad/s), pose position (m) and
#: orientation (rad), and the largest shift of a sample's stamp (s).
JOINT_NOISE, JOINT_VELOCITY_NOISE, POSITION_NOISE, ORIENTATION_NOISE, JITTER = 5e-4, 5e-3, 5e-4, 3e-3, 1e-3
SERVO_FREE = ("arm.servo_tau", "arm.command_delay")
BOX_FREE = ("contact.mu_table", "contact.mu_pusher", "box.com_z")
PLANAR_FREE = ("contact.mu_table", "contact.mu_pusher", "contact.support_ratio")


def _jittered(t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.maximum.accumulate(t + rng.uniform(-JITTER, JITTER, t.shape[0]))


def servo_trials(seed: int) -> tuple[dict[str, float], list[TrialRecord]]:
    """Hidden servo values and three noisy standard pushes recorded with them (``real`` platform)."""
    rng = np.random.default_rng(seed)
    truth = {"arm.servo_tau": float(rng.uniform(0.04, 0.09)), "arm.command_delay": float(rng.uniform(0.005, 0.03))}
    hidden = NOMINAL.replace(truth)
    records = []
    for index, distance in enumerate((0.30, 0.45, 0.50)):
        clean = run_standard_trial(distance, hidden).record(index).platforms["sim"]
        states = clean.joint_states
        joints = JointSeries.from_arrays(
            _jittered(states.t, rng), states.position + rng.normal(0.0, JOINT_NOISE, states.position.shape),
            states.velocity + rng.normal(0.0, JOINT_VELOCITY_NOISE, states.velocity.shape))
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


def box_trials(seed: int) -> tuple[dict[str, float], list[TrialRecord]]:
    """Hidden friction and centre-of-mass height and three noisy probe pushes recorded with them."""
    rng = np.random.default_rng(seed)
    truth = {"contact.mu_table": float(rng.uniform(0.3, 0.6)), "contact.mu_pusher": float(rng.uniform(0.2, 0.5)),
             "box.com_z": float(rng.uniform(-0.04, 0.02))}
    hidden = NOMINAL.replace(truth)
    return truth, [_probe_push("slide", hidden, rng, 0.0, 0.04, 0.5, 0.3),
                   _probe_push("turn", hidden, rng, 0.045, 0.05, 0.4, 0.4),
                   _probe_push("tip", hidden, rng, 0.0, 0.17, 0.3, 0.3, duration=0.9)]


def fit_servo(records: list[TrialRecord]) -> Any:
    """The demo's stage 1 on ``records`` (20-step segments of joint residuals)."""
    return fit_trials(records, NOMINAL, SERVO_FREE, horizon=20, weights=Weights(position=0.0, orientation=0.0),
                      settings=LMSettings(max_iterations=25))


def fit_box(records: list[TrialRecord]) -> Any:
    """Whole probe pushes, the recorded probe played back."""
    start = NOMINAL.replace({"contact.mu_table": 0.45, "contact.mu_pusher": 0.35, "box.com_z": -0.01})
    return fit_trials(records, start, BOX_FREE, horizon=None, mode="pusher", settings=LMSettings(max_iterations=25),
                      jackknife=True)


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
    return fit_trials(records, planar_pushes.params(), PLANAR_FREE, horizon=None, mode="pusher", pusher_shape="rod",
                      settings=LMSettings(max_iterations=40), jackknife=True)


PROBLEMS: dict[str, tuple[Callable[[int], tuple[dict[str, float], list[TrialRecord]]], Callable[..., Any]]] = {
    "servo": (servo_trials, fit_servo), "box": (box_trials, fit_box), "planar": (planar_trials, fit_planar)}
FREE_NAMES = {"servo": SERVO_FREE, "box": BOX_FREE, "planar": PLANAR_FREE}


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
    parser.add_argument("--problems", default="servo,box,planar",
                        help="comma-separated: servo, box, planar (default all)")
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

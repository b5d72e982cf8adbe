"""Robustness of the contact solve: does any trial abort, and how many steps end degraded?

Three families of forward simulations, each run with fixed seeds (the numbers are reproducible;
trial ``i`` of a family is the same whatever ``--trials``/``--tosses``/``--recontact`` say):

``pushes``
    The standard arm push (``config/experiment.yaml``) at start distances drawn from 0.28-0.52 m,
    box placement error ±5 mm (x, y) and ±3° yaw, alternately with the nominal parameters and
    the reality stand-in's hidden ones (``config/standin.yaml``). The PD command stream of each
    parameter set is computed once (a clean closed-loop trial: the arm does not feel the box) and
    then perturbed per trial as an SDK link perturbs it: an extra delay of 0-3 ticks; jitter (1-5 %
    of ticks: a command arrives one tick late or early, so two neighbours swap or one is repeated
    while the other is lost); dropped ticks (1-5 % of ticks, in bursts of 1-8: the previous
    command is repeated, or zero once the driver's 50 ms watchdog would have fired). The sim is
    driven verbatim by the perturbed stream (``simulate_arm_trial(commands=...)``).
``cube_tosses``
    Every recorded ContactNets cube toss (shipped in ``sim2real/data/cube_toss``, 570) replayed box-only as
    ``sim2real replay`` does it: the README's cube parameters (``box.mass`` 0.37 kg, 95 mm cube;
    the README gives no ``contact.*`` values, so those stay nominal), ``sim.dt`` = the recording's
    1/148 s, initial state from the first two poses (finite differences), then free simulation
    to the end of the recording.
``recontact``
    A 2 cm sphere pusher (``BoxWorld.from_params`` default) approaches a resting box (0-0.1 mm
    settled into the table; any yaw) at an angle of ±30° to a face, 10-110 % of the box height up
    and up to ±120 % of the half width aside, pushes it, backs off until separated and hits it
    again, 1-3 cycles, each phase at 0.1-1 m/s (every fourth scenario at exactly 1 m/s); box
    heights 0.012 / 0.03 / 0.21 m (11 × 13 cm base), masses 0.1-2 kg, μ_table and μ_pusher
    0.1-1.0; Gaussian jitter of every pusher sample of 0, 0.5 or 2 mm. The path is steered by the
    simulation (each re-hit homes in on where the box, possibly toppled, now is, and every fifth
    scenario keeps pressing along that slanted line after touching), so nearly every scenario
    re-hits; ``rehits`` counts touches after a separation of more than 1 mm,
    ``max_speed_m_s`` is the fastest jitter-free pusher speed at such a re-hit,
    ``max_sample_speed_m_s`` the fastest jittered sample-to-sample speed.

How to read the output (one JSON object with ``--json``): per family ``aborted`` counts trials
that raised (any exception; it must be 0; the first messages go to stderr and the exit status is
1). ``steps`` are engine steps; ``recovered`` steps needed the escalation ladder but met every
tolerance (as exact as converged, only dearer); ``degraded`` steps were accepted at a relaxed
central-path value or as a best iterate (see ``sim2real.physics.ladder``);
``degraded_per_million_steps`` normalises them. ``worst_residual`` is the largest scaled
equality-row violation of a recovered or degraded step, ``rungs`` the histogram of the ladder
rung that produced each non-first-solve answer, ``degraded_trials`` the trials with at least one
degraded step, ``degraded_by`` / ``trials_by`` where they came from. ``wall_s`` excludes the
numba warm-up (``warmup_s``). ``--save-cases DIR`` writes the step of every abort (up to 5 per
family) and a few hard steps per family (degraded first) as reproduction files; re-solve one with
``sim2real resolve-step FILE --trace``.

Run: ``python -m benchmarks.robustness --json`` (default: 1000 pushes, all 570 tosses, 1000
re-contact scenarios; about 1.5 minutes on 2 idle cores). Quick: ``--trials 50 --tosses 20
--recontact 50``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.robustness_families.recontact import recontact_family
from benchmarks.robustness_families.tally import (
    FAILED_STEPS,
    MAX_PRINTED_ERRORS,
    Cases,
    Tally,
    capture_failed_steps,
    run_cases,
)
from sim2real.control import load_experiment_config, plan_push
from sim2real.control.sim_platform import box_at_distance, simulate_arm_trial
from sim2real.data import cube_toss_npz
from sim2real.errors import Sim2RealError
from sim2real.hardware.standin import load_standin
from sim2real.model import load_arm
from sim2real.params import ParameterSet
from sim2real.physics import BoxWorld
from sim2real.sim import BoxState, rollout
from sim2real.spatial import conjugate, from_axis_angle, multiply, tilt, to_matrix, to_rotation_vector

#: Default cube-toss recording (shipped with the package).
CUBE_TOSS_NPZ = cube_toss_npz()
#: The README's cube parameters (``sim2real fit runs/tosses ... --set``).
CUBE_PARAMS = {"box.mass": 0.37, "box.size_x": 0.095, "box.size_y": 0.095, "box.size_z": 0.095}
#: Seed-stream tag of the pushes (trial i draws from [seed, tag, i]; the re-contact family's is its own).
PUSH_TAG = 1
#: The xArm driver's watchdog (``DriverConfig.watchdog_timeout``), in 10 ms ticks: zero velocity
#: once no fresh command arrived for this many ticks.
WATCHDOG_TICKS = 5


# --------------------------------------------------------------------------------------------- pushes


def perturb_commands(commands: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, dict[str, int]]:
    """The command stream as a 100 Hz SDK link delivers it, one draw of its timing faults.

    Parameters
    ----------
    commands : ndarray, shape (T, 6)
        Joint velocity commands, rad/s, one per tick, as the PD law sent them.
    rng : numpy.random.Generator

    Returns
    -------
    applied : ndarray, shape (T + delay, 6)
        The command in force at each tick of the arm: ``delay`` leading zeros (0-3 ticks), then
        the stream with neighbours swapped (one late, the next early), repeated (late: the stale
        one held, the fresh one lost) or pulled forward (early), and dropped ticks holding the
        previous command, or zero once the watchdog (:data:`WATCHDOG_TICKS`) would have fired.
    faults : dict
        ``delay``, ``swapped``, ``held``, ``early``, ``dropped``, ``watchdog`` tick counts.
    """
    stream = np.array(commands, dtype=float)
    count = stream.shape[0]
    faults = {"delay": int(rng.integers(0, 4)), "swapped": 0, "held": 0, "early": 0, "dropped": 0, "watchdog": 0}
    jitter_rate = rng.uniform(0.01, 0.05)
    k = 1
    while k < count - 1:
        if rng.random() < jitter_rate:
            kind = rng.integers(0, 3)
            if kind == 0:  # command k arrives late, k + 1 on time: they swap
                stream[[k, k + 1]] = stream[[k + 1, k]]
                faults["swapped"] += 1
            elif kind == 1:  # command k arrives late, after k + 1's slot began: k - 1 held, k lost
                stream[k] = stream[k - 1]
                faults["held"] += 1
            else:  # command k + 1 arrives early and overwrites k
                stream[k] = stream[k + 1]
                faults["early"] += 1
            k += 2
        else:
            k += 1
    drop_rate = rng.uniform(0.01, 0.05)
    dropped = np.zeros(count, dtype=bool)
    mean_burst = 1.6
    k = 1
    while k < count:
        if rng.random() < drop_rate / mean_burst:
            burst = int(min(rng.geometric(1.0 / mean_burst), 8))
            dropped[k:k + burst] = True
            k += burst + 1
        else:
            k += 1
    applied = np.empty_like(stream)
    last = np.zeros(6)
    since_fresh = 0
    for k in range(count):
        if dropped[k]:
            since_fresh += 1
            faults["dropped"] += 1
            if since_fresh >= WATCHDOG_TICKS:
                last = np.zeros(6)
                faults["watchdog"] += 1
        else:
            since_fresh = 0
            last = stream[k]
        applied[k] = last
    delay = faults["delay"]
    return np.concatenate((np.zeros((delay, 6)), applied)), faults


def _placed_box(rng: np.random.Generator, params: ParameterSet) -> tuple[float, BoxState]:
    distance = float(rng.uniform(0.28, 0.52))
    box = box_at_distance(distance, params)
    offset = np.array([rng.uniform(-0.005, 0.005), rng.uniform(-0.005, 0.005), 0.0])
    yaw = math.radians(rng.uniform(-3.0, 3.0))
    return distance, BoxState(box.position + offset, from_axis_angle([0.0, 0.0, 1.0], yaw))


def push_family(trials: int, seed: int) -> tuple[Tally, dict[str, int]]:
    """The standard push with perturbed command timing and box placement."""
    push = load_experiment_config().push
    sets = {"nominal": ParameterSet.nominal(), "standin": load_standin().params}
    plans = {}
    for name, params in sets.items():
        reference = plan_push(load_arm(params), push)
        clean = simulate_arm_trial(params, reference, box_at_distance(0.4, params), context=f"clean {name}")
        plans[name] = (params, reference, clean.command)

    def cases() -> Cases:
        for i in range(trials):
            name = "nominal" if i % 2 == 0 else "standin"
            params, reference, commands = plans[name]
            rng = np.random.default_rng([seed, PUSH_TAG, i])
            distance, box = _placed_box(rng, params)
            applied, faults = perturb_commands(commands, rng)
            for key, value in faults.items():
                link[key] = link.get(key, 0) + value
            link["ticks"] += applied.shape[0]
            label = f"push_{i:04d}_{name}_d{distance:.3f}"
            groups = (name, "watchdog_fired" if faults["watchdog"] else "no_watchdog")

            def case(params=params, reference=reference, box=box, applied=applied, label=label):
                result = simulate_arm_trial(params, reference, box, commands=applied, context=label)
                tipped = float(tilt(result.box[-1, 3:7])) > math.radians(45.0)
                found = ("touched" if result.touched else "not_touched",) + (("tipped",) if tipped else ())
                return result.solve, result.hard_steps, found

            yield label, case, groups

    link = {"ticks": 0}
    tally = run_cases(Tally("pushes"), cases())
    return tally, link


# ----------------------------------------------------------------------------------------- cube tosses


def toss_initial_state(position: np.ndarray, quaternion: np.ndarray, dt: float) -> BoxState:
    """State at the second sample from the first two poses, as replay does (``box_states``, centroid COM).

    Parameters
    ----------
    position : ndarray, shape (N, 3)
        Cube centre, m, surface frame.
    quaternion : ndarray, shape (N, 4)
        (w, x, y, z), body -> surface.
    dt : float
        Sample interval, s.
    """
    omega_body = to_rotation_vector(multiply(conjugate(quaternion[0]), quaternion[1])) / dt
    omega_world = to_matrix(quaternion[1]) @ omega_body
    velocity = (position[1] - position[0]) / dt
    return BoxState(position[1], quaternion[1], velocity, omega_world)


def toss_family(limit: int | None, path: Path) -> Tally | dict[str, str]:
    """Every cube toss (or the first ``limit``) replayed box-only with the README's cube parameters."""
    from sim2real.trials.cube_toss import load_cube_tosses

    if not path.is_file():
        return {"skipped": f"cube-toss data {path} not found"}
    try:
        data = load_cube_tosses(path)
    except Sim2RealError as err:
        return {"skipped": f"cannot load cube-toss data: {err}"}
    count = data.n_tosses if limit is None else min(limit, data.n_tosses)
    base = ParameterSet.nominal().replace(CUBE_PARAMS)

    def cases() -> Cases:
        for i in range(count):
            lo, hi = int(data.offsets[i]), int(data.offsets[i + 1])
            label = f"toss_{i:03d}"

            def case(lo=lo, hi=hi, label=label):
                t = data.t[lo:hi]
                dt = float(np.mean(np.diff(t)))
                world = BoxWorld.from_params(base.replace({"sim.dt": dt}), None)
                initial = toss_initial_state(data.position[lo:hi], data.quaternion[lo:hi], dt)
                result = rollout(world, initial, steps=hi - lo - 2, context=label)
                return result.solve, result.hard_steps, ()

            yield label, case, ()

    tally = run_cases(Tally("cube_tosses"), cases())
    tally.trials_by = {"available": data.n_tosses}
    return tally


# ----------------------------------------------------------------------------------------------- main


def warm_up() -> float:
    """Compile (or load from the numba cache) the engine kernels; returns the seconds spent."""
    t0 = time.perf_counter()
    params = ParameterSet.nominal()
    world = BoxWorld.from_params(params)
    box = box_at_distance(0.4, params)
    path = np.linspace([0.3, 0.0, 0.1], [0.37, 0.0, 0.1], 8)
    rollout(world, box, path)
    rollout(BoxWorld.from_params(params, None), box, steps=3)
    return time.perf_counter() - t0


def save_cases(tallies: list[Tally], directory: Path, per_family: int) -> list[dict[str, str]]:
    """Write up to ``per_family`` hard steps per family (degraded first) into ``directory``."""
    saved = []
    for tally in tallies:
        for label, hard in tally.failed[:MAX_PRINTED_ERRORS] + tally.hard[:per_family]:
            path = directory / f"{label}_step{hard.step_index:04d}_{hard.outcome or 'hard'}.json"
            try:
                hard.save(path)
            except Sim2RealError as err:
                print(f"robustness: not saved: {err}", file=sys.stderr)
                continue
            saved.append({"file": str(path), "context": hard.context, "outcome": hard.outcome, "rung": hard.rung})
    return saved


def run(trials: int, tosses: int | None, recontact: int, seed: int, cube_toss: Path,
        cases_dir: Path | None = None, cases_per_family: int = 3) -> dict[str, Any]:
    """All three families; returns the JSON-ready result."""
    warmup_s = warm_up()
    t0 = time.perf_counter()
    with capture_failed_steps(FAILED_STEPS if cases_dir is not None else None):
        pushes, link = push_family(trials, seed)
        toss = toss_family(tosses, cube_toss)
        recon, speeds = recontact_family(recontact, seed)
    wall = time.perf_counter() - t0
    families = [pushes, recon] + ([toss] if isinstance(toss, Tally) else [])
    result: dict[str, Any] = {
        "seed": seed,
        "pushes": {**pushes.as_dict(), "link_faults": link},
        "cube_tosses": toss.as_dict() if isinstance(toss, Tally) else toss,
        "recontact": {**recon.as_dict(), **speeds},
        "aborted": sum(t.aborted for t in families),
        "wall_s": round(wall, 2), "warmup_s": round(warmup_s, 2),
    }
    if isinstance(toss, Tally):
        result["cube_tosses"]["params"] = CUBE_PARAMS
    if cases_dir is not None:
        result["cases_saved"] = save_cases(families, cases_dir, cases_per_family)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--trials", type=int, default=1000, help="standard pushes (default 1000)")
    parser.add_argument("--tosses", type=int, default=None, help="cube tosses to replay (default: all)")
    parser.add_argument("--recontact", type=int, default=1000, help="re-contact scenarios (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="base seed of every random draw (default 0)")
    parser.add_argument("--cube-toss", type=Path, default=CUBE_TOSS_NPZ, help="cube-toss NPZ file")
    parser.add_argument("--save-cases", type=Path, default=None, metavar="DIR",
                        help="write a few hard steps per family (degraded first) as reproduction files")
    parser.add_argument("--cases-per-family", type=int, default=3, help="hard steps saved per family")
    args = parser.parse_args(argv)
    for name in ("trials", "recontact", "tosses"):
        value = getattr(args, name)
        if value is not None and value < 0:
            parser.error(f"--{name} must be >= 0")
    result = run(args.trials, args.tosses, args.recontact, args.seed, args.cube_toss, args.save_cases,
                 args.cases_per_family)
    if args.json:
        print(json.dumps(result))
    else:
        for family in ("pushes", "cube_tosses", "recontact"):
            print(f"{family}: {json.dumps(result[family])}")
        print(f"aborted {result['aborted']}, wall {result['wall_s']} s (warm-up {result['warmup_s']} s)")
    return 1 if result["aborted"] else 0


if __name__ == "__main__":
    sys.exit(main())

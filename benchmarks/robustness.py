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
import contextlib
import json
import math
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.control import load_experiment_config, plan_push
from sim2real.control.sim_platform import TOUCH_DISTANCE, box_at_distance, simulate_arm_trial
from sim2real.data import cube_toss_npz
from sim2real.errors import Sim2RealError
from sim2real.hardware.standin import load_standin
from sim2real.model import load_arm
from sim2real.params import ParameterSet
from sim2real.physics import BoxState, BoxWorld, HardStep, SolveLog, SolveSummary, rollout
from sim2real.spatial import conjugate, from_axis_angle, multiply, tilt, to_matrix, to_rotation_vector

#: Default cube-toss recording (shipped with the package).
CUBE_TOSS_NPZ = cube_toss_npz()
#: The README's cube parameters (``sim2real fit runs/tosses ... --set``).
CUBE_PARAMS = {"box.mass": 0.37, "box.size_x": 0.095, "box.size_y": 0.095, "box.size_z": 0.095}
#: Seed-stream tags of the three families (trial i of a family draws from [seed, tag, i]).
PUSH_TAG, RECONTACT_TAG = 1, 3
#: The xArm driver's watchdog (``DriverConfig.watchdog_timeout``), in 10 ms ticks: zero velocity
#: once no fresh command arrived for this many ticks.
WATCHDOG_TICKS = 5
RECONTACT_HEIGHTS = (0.012, 0.03, 0.21)
RECONTACT_JITTER = (0.0, 0.0005, 0.002)
#: Longest push or back-off phase of a re-contact scenario, ticks (re-hits: up to four times that).
PHASE_TICKS = 60
#: Pusher-box distance (m) beyond which pusher and box count as separated (a later touch is a re-hit).
SEPARATED = 1e-3
#: Exception messages printed to stderr per family.
MAX_PRINTED_ERRORS = 5


def _severity(hard: HardStep) -> tuple[bool, float]:
    """Sort key putting the worst hard step first: degraded before recovered, then larger residual."""
    return hard.outcome != "degraded", -hard.violation[0]


@dataclass
class Tally:
    """Outcome tally of one family of trials."""

    name: str
    trials: int = 0
    aborted: int = 0
    summary: SolveSummary = field(default_factory=SolveSummary)
    degraded_trials: int = 0
    recovered_trials: int = 0
    worst_trial: str = ""
    degraded_by: dict[str, int] = field(default_factory=dict)
    trials_by: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    hard: list[tuple[str, HardStep]] = field(default_factory=list)
    failed: list[tuple[str, HardStep]] = field(default_factory=list)
    wall_s: float = 0.0

    def add(self, label: str, solve: SolveSummary, hard_steps: tuple[HardStep, ...], groups: tuple[str, ...]) -> None:
        """Count one trial that returned."""
        self.trials += 1
        if (solve.worst, solve.worst_residual) > (self.summary.worst, self.summary.worst_residual):
            self.worst_trial = label
        self.summary = self.summary.merged(solve)
        self.recovered_trials += int(solve.recovered > 0)
        self.degraded_trials += int(solve.degraded > 0)
        for group in groups:
            self.trials_by[group] = self.trials_by.get(group, 0) + 1
            if solve.degraded:
                self.degraded_by[group] = self.degraded_by.get(group, 0) + solve.degraded
        # keep a few reproduction records: the worst (degraded first, then by residual) of the family
        for hard in sorted(hard_steps, key=_severity)[:3]:
            self.hard.append((label, hard))
        self.hard.sort(key=lambda item: _severity(item[1]))
        del self.hard[12:]

    def abort(self, label: str, err: BaseException) -> None:
        """Count one trial that raised."""
        self.trials += 1
        self.aborted += 1
        if len(self.errors) < MAX_PRINTED_ERRORS:
            self.errors.append(f"{self.name} {label}: {type(err).__name__}: {err}")
            print(f"robustness: {self.errors[-1]}", file=sys.stderr)
            traceback.print_exc(limit=3, file=sys.stderr)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready counts."""
        s = self.summary
        return {
            "trials": self.trials, "aborted": self.aborted, "steps": s.steps, "converged": s.converged,
            "recovered": s.recovered, "degraded": s.degraded,
            "degraded_per_million_steps": round(1e6 * s.degraded / s.steps, 3) if s.steps else 0.0,
            "recovered_per_million_steps": round(1e6 * s.recovered / s.steps, 3) if s.steps else 0.0,
            "worst_residual": s.worst_residual, "worst_complementarity": s.worst_complementarity,
            "worst_trial": self.worst_trial or None, "rungs": dict(sorted(s.rungs.items())),
            "recovered_trials": self.recovered_trials, "degraded_trials": self.degraded_trials,
            "degraded_by": dict(sorted(self.degraded_by.items())), "trials_by": dict(sorted(self.trials_by.items())),
            "errors": list(self.errors), "wall_s": round(self.wall_s, 2),
        }


#: One case: a label, the simulation (returning its tally, hard steps and groups known only after
#: running), and the groups known before.
CaseResult = tuple[SolveSummary, tuple[HardStep, ...], tuple[str, ...]]
Cases = Iterator[tuple[str, Callable[[], CaseResult], tuple[str, ...]]]


@contextlib.contextmanager
def capture_failed_steps(sink: list[HardStep] | None) -> Iterator[None]:
    """Record the problem of every engine step whose solve raises into ``sink`` (None: do nothing).

    The engine's :class:`~sim2real.physics.SimulationError` names the step but does not carry its
    problem, so the solve called by ``BoxWorld.step`` is wrapped for the duration (benchmark only).
    """
    from sim2real.physics import world as world_module

    original = getattr(world_module, "solve_step", None)
    if sink is None or original is None:
        yield
        return

    def solve_step(problem: HardStep, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(problem, *args, **kwargs)
        except Exception:
            sink.append(problem)
            raise

    world_module.solve_step = solve_step
    try:
        yield
    finally:
        world_module.solve_step = original


#: Problems of steps whose solve raised (filled while ``--save-cases`` is given).
FAILED_STEPS: list[HardStep] = []


def _run(tally: Tally, cases: Cases) -> Tally:
    """Run every case, counting outcomes and exceptions (a case never stops the family)."""
    t0 = time.perf_counter()
    for label, case, groups in cases:
        seen = len(FAILED_STEPS)
        try:
            solve, hard_steps, found = case()
        except Exception as err:  # an abort of any kind is what this benchmark counts
            tally.abort(label, err)
            if len(FAILED_STEPS) > seen:
                tally.failed.append((label, FAILED_STEPS[-1].with_context(context=f"{label} (aborted: {err})",
                                                                         outcome="failed")))
            continue
        tally.add(label, solve, hard_steps, groups + found)
    tally.wall_s = time.perf_counter() - t0
    return tally


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
    tally = _run(Tally("pushes"), cases())
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

    tally = _run(Tally("cube_tosses"), cases())
    tally.trials_by = {"available": data.n_tosses}
    return tally


# ------------------------------------------------------------------------------------------- re-contact


@dataclass(frozen=True)
class RecontactRun:
    """What one re-contact scenario did.

    Attributes
    ----------
    solve : SolveSummary
    hard_steps : tuple of HardStep
    groups : tuple of str
        Box height, jitter level, speed class, number of re-hits that touched.
    rehits : int
        Re-hit phases that reached the box again after a separation.
    max_rehit_speed : float
        Fastest pusher speed (m/s, jitter-free path) at which a re-hit touched the box.
    max_sample_speed : float
        Fastest speed between consecutive jittered pusher samples, m/s.
    steps : int
    """

    solve: SolveSummary
    hard_steps: tuple[HardStep, ...]
    groups: tuple[str, ...]
    rehits: int
    max_rehit_speed: float
    max_sample_speed: float
    steps: int


def recontact_groups(i: int) -> tuple[str, ...]:
    """The groups of scenario ``i`` known before running it (box height, jitter, speed class)."""
    return (f"height_{RECONTACT_HEIGHTS[i % 3]:g}m", f"jitter_{1e3 * RECONTACT_JITTER[(i // 3) % 3]:g}mm",
            "speed_1m_s" if i % 4 == 0 else "speed_random", "follow_press" if i % 5 == 4 else "follow_level")


def recontact_run(i: int, seed: int) -> RecontactRun:
    """Scenario ``i``: push a resting box, back off until separated, hit it again (1-3 times).

    The jitter-free pusher path is steered by what the simulation does (closed loop), so that
    scenarios separate and re-hit: ``push`` phases advance at their speed until the pusher has
    travelled 5-40 mm past first touch (at most :data:`PHASE_TICKS` ticks without touching);
    ``back`` phases retreat until the pusher is 2-30 mm clear of the box (at most
    :data:`PHASE_TICKS` ticks: a rocking box may follow the pusher); every re-hit heads in a
    straight line for a point up to ±60 % of the half width beside the box's current centre, at
    20-90 % of the box's current top, so a toppled box is hit too; once it touches it pushes on
    horizontally, or (every fifth scenario, ``follow_press``) on along its slanted approach, which
    presses a toppled box into the table. A re-hit is counted when the
    pusher touches the box again after having been more than :data:`SEPARATED` away. The samples
    given to the engine carry Gaussian jitter on top of that path.
    """
    rng = np.random.default_rng([seed, RECONTACT_TAG, i])
    size_z = RECONTACT_HEIGHTS[i % 3]
    jitter = RECONTACT_JITTER[(i // 3) % 3]
    fast = i % 4 == 0
    press = i % 5 == 4
    params = ParameterSet.nominal().replace({
        "contact.mu_table": float(rng.uniform(0.1, 1.0)), "contact.mu_pusher": float(rng.uniform(0.1, 1.0)),
        "box.size_z": size_z, "box.mass": float(rng.uniform(0.1, 2.0))})
    world = BoxWorld.from_params(params)
    dt, radius = world.dt, float(params["pusher.radius"])
    half = world.half_size
    yaw = float(rng.uniform(-np.pi, np.pi))
    rotation = to_matrix(from_axis_angle([0.0, 0.0, 1.0], yaw))
    table = float(params["contact.table_height"])
    centre = np.array([0.4, 0.0, table + half[2] - rng.uniform(0.0, 1e-4)])  # resting, settled 0-0.1 mm
    state = BoxState(centre, from_axis_angle([0.0, 0.0, 1.0], yaw))
    # first approach: towards the box's -x face at angle alpha, aimed at (-hx, lateral) in the box frame
    alpha = float(rng.uniform(-np.pi / 6, np.pi / 6))
    lateral = float(rng.uniform(-1.2, 1.2)) * half[1]
    direction = rotation @ np.array([np.cos(alpha), np.sin(alpha), 0.0])
    aim = centre + rotation @ np.array([-half[0], lateral, 0.0])
    nominal = aim - direction * (radius + float(rng.uniform(0.005, 0.03))) / np.cos(alpha)
    nominal[2] = table + float(rng.uniform(0.1, 1.1)) * size_z
    cycles = 1 + int(rng.integers(0, 3))
    phases: list[tuple[str, float, float]] = [("push", 1.0 if fast else float(rng.uniform(0.1, 1.0)),
                                               float(rng.uniform(0.005, 0.04)))]
    for _ in range(cycles):
        phases.append(("back", 1.0 if fast else float(rng.uniform(0.1, 1.0)), float(rng.uniform(0.002, 0.03))))
        phases.append(("rehit", 1.0 if fast else float(rng.uniform(0.1, 1.0)), float(rng.uniform(0.005, 0.04))))
    hold = int(rng.integers(5, 30))
    heights = rng.uniform(0.2, 0.9, cycles)  # re-hit heights, fractions of the box's current top
    offsets = rng.uniform(-0.6, 0.6, cycles) * half[1]  # re-hit aim: left or right of the box's centre
    noise_rng = np.random.default_rng([seed, RECONTACT_TAG, i, 1])

    touch_force = 0.01 * float(params["box.mass"]) * 9.81  # N: the pusher carries 1 % of the box's weight
    log = SolveLog(f"recontact_{i:04d} {' '.join(recontact_groups(i))}")
    sent = nominal + (noise_rng.normal(0.0, jitter, 3) if jitter else 0.0)
    tick, distance, touching, speed = 0, np.inf, False, 0.0
    rehits, separated, touched_once, max_rehit_speed, max_sample_speed = 0, False, False, 0.0, 0.0

    def advance(target: np.ndarray) -> None:
        """One engine step with the pusher moving to ``target`` (plus jitter); counts re-hits."""
        nonlocal state, sent, tick, distance, touching, rehits, separated, touched_once, max_rehit_speed
        nonlocal max_sample_speed
        nxt = target + (noise_rng.normal(0.0, jitter, 3) if jitter else 0.0)
        result = world.step(state, sent, nxt, step_index=tick)
        log.record(result, tick)
        max_sample_speed = max(max_sample_speed, float(np.linalg.norm(nxt - sent)) / dt)
        state, sent, tick = result.state, nxt, tick + 1
        distance = float(result.contacts.pusher_distance)
        touching = distance <= TOUCH_DISTANCE or float(result.contacts.pusher_force) > touch_force
        if distance > SEPARATED:
            separated = True
        elif touching and (separated or not touched_once):
            if touched_once:  # touching again after a separation: a re-hit
                rehits += 1
                max_rehit_speed = max(max_rehit_speed, speed)
            separated, touched_once = False, True

    def homing(fraction_height: float, offset: float) -> np.ndarray:
        """Unit vector from the pusher to a point beside the box's current centre, at a height."""
        top = 2.0 * (float(state.position[2]) - table)  # the box's current top, roughly
        ahead = state.position[:2] - nominal[:2]
        side = np.array([-ahead[1], ahead[0]]) / max(float(np.linalg.norm(ahead)), 1e-9)
        target = np.append(state.position[:2] + offset * side, table + fraction_height * top)
        towards = target - nominal
        norm = float(np.linalg.norm(towards))
        return towards / norm if norm > 1e-9 else direction

    cycle = -1
    for kind, speed, amount in phases:
        if kind == "back":
            for _ in range(PHASE_TICKS):
                nominal = nominal - speed * dt * direction
                advance(nominal)
                if distance > amount:
                    break
            continue
        ticks = PHASE_TICKS
        if kind == "rehit":
            cycle += 1
            ticks = min(4 * PHASE_TICKS, PHASE_TICKS + math.ceil(distance / (speed * dt)))
        travelled, touched = 0.0, touching
        for _ in range(ticks):
            if kind == "rehit" and not touched:  # steer towards the box until it is reached
                direction = homing(heights[cycle], offsets[cycle])
            if touched and direction[2] != 0.0 and not press:  # push on horizontally
                direction = np.array([direction[0], direction[1], 0.0]) / max(float(np.hypot(*direction[:2])), 1e-9)
            nominal = nominal + speed * dt * direction
            advance(nominal)
            touched = touched or touching
            if touched:
                travelled += speed * dt
                if travelled >= amount:
                    break
    speed = 0.0
    for _ in range(hold):
        advance(nominal)
    groups = (*recontact_groups(i), f"rehits_{rehits}")
    return RecontactRun(log.summary(), tuple(log.hard_steps), groups, rehits, max_rehit_speed, max_sample_speed, tick)


def recontact_family(count: int, seed: int) -> tuple[Tally, dict[str, float]]:
    """Push, separate, re-hit scenarios with a sphere pusher."""
    stats = {"rehits": 0, "scenarios_with_rehit": 0, "max_speed_m_s": 0.0, "max_sample_speed_m_s": 0.0}

    def cases() -> Cases:
        for i in range(count):
            def case(i=i) -> CaseResult:
                run = recontact_run(i, seed)
                stats["rehits"] += run.rehits
                stats["scenarios_with_rehit"] += int(run.rehits > 0)
                stats["max_speed_m_s"] = max(stats["max_speed_m_s"], run.max_rehit_speed)
                stats["max_sample_speed_m_s"] = round(max(stats["max_sample_speed_m_s"], run.max_sample_speed), 3)
                return run.solve, run.hard_steps, run.groups[len(recontact_groups(i)):]

            yield f"recontact_{i:04d}", case, recontact_groups(i)

    return _run(Tally("recontact"), cases()), stats


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

"""The re-contact family: a sphere pusher pushes a resting box, backs off until separated, hits it again.

Scenario ``i`` draws everything from ``[seed, RECONTACT_TAG, i]`` (the pusher's jitter from
``[seed, RECONTACT_TAG, i, 1]``), so it is the same whatever the family's size. See
:mod:`benchmarks.robustness` for the family's description and how to read its counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from benchmarks.robustness_families.tally import CaseResult, Cases, Tally, run_cases
from sim2real.control.sim_platform import TOUCH_DISTANCE
from sim2real.params import ParameterSet
from sim2real.physics import BoxWorld, HardStep
from sim2real.sim import BoxState, SolveLog, SolveSummary
from sim2real.spatial import from_axis_angle, to_matrix

#: Seed-stream tag of the family (scenario i draws from [seed, tag, i]).
RECONTACT_TAG = 3
RECONTACT_HEIGHTS = (0.012, 0.03, 0.21)
RECONTACT_JITTER = (0.0, 0.0005, 0.002)
#: Longest push or back-off phase of a re-contact scenario, ticks (re-hits: up to four times that).
PHASE_TICKS = 60
#: Pusher-box distance (m) beyond which pusher and box count as separated (a later touch is a re-hit).
SEPARATED = 1e-3


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


@dataclass
class _Plan:
    """What scenario ``i`` drew before its first step.

    Attributes
    ----------
    phases : list of (str, float, float)
        ``(kind, speed m/s, amount m)``: ``push``, then ``back`` and ``rehit`` per cycle.
    hold : int
        Ticks the pusher rests at the end.
    heights, offsets : ndarray, shape (cycles,)
        Re-hit aims: fractions of the box's current top, and metres beside its centre.
    """

    phases: list[tuple[str, float, float]]
    hold: int
    heights: np.ndarray
    offsets: np.ndarray


@dataclass
class _Scenario:
    """The running state of one scenario: the world, the box, the pusher's path and what it touched.

    Positions in the world frame, metres; ``direction`` is the pusher's unit heading.
    """

    world: BoxWorld
    state: BoxState
    nominal: np.ndarray
    direction: np.ndarray
    table: float
    jitter: float
    noise_rng: np.random.Generator
    touch_force: float
    log: SolveLog
    sent: np.ndarray = field(init=False)
    tick: int = 0
    distance: float = np.inf
    touching: bool = False
    speed: float = 0.0
    rehits: int = 0
    separated: bool = False
    touched_once: bool = False
    max_rehit_speed: float = 0.0
    max_sample_speed: float = 0.0

    def __post_init__(self) -> None:
        self.sent = self.nominal + (self.noise_rng.normal(0.0, self.jitter, 3) if self.jitter else 0.0)

    def advance(self, target: np.ndarray) -> None:
        """One engine step with the pusher moving to ``target`` (plus jitter); counts re-hits."""
        nxt = target + (self.noise_rng.normal(0.0, self.jitter, 3) if self.jitter else 0.0)
        result = self.world.step(self.state, self.sent, nxt, step_index=self.tick)
        self.log.record(result, self.tick)
        self.max_sample_speed = max(self.max_sample_speed, float(np.linalg.norm(nxt - self.sent)) / self.world.dt)
        self.state, self.sent, self.tick = result.state, nxt, self.tick + 1
        self.distance = float(result.contacts.pusher_distance)
        self.touching = self.distance <= TOUCH_DISTANCE or float(result.contacts.pusher_force) > self.touch_force
        if self.distance > SEPARATED:
            self.separated = True
        elif self.touching and (self.separated or not self.touched_once):
            if self.touched_once:  # touching again after a separation: a re-hit
                self.rehits += 1
                self.max_rehit_speed = max(self.max_rehit_speed, self.speed)
            self.separated, self.touched_once = False, True

    def homing(self, fraction_height: float, offset: float) -> np.ndarray:
        """Unit vector from the pusher to a point beside the box's current centre, at a height."""
        state, nominal, table = self.state, self.nominal, self.table
        top = 2.0 * (float(state.position[2]) - table)  # the box's current top, roughly
        ahead = state.position[:2] - nominal[:2]
        side = np.array([-ahead[1], ahead[0]]) / max(float(np.linalg.norm(ahead)), 1e-9)
        target = np.append(state.position[:2] + offset * side, table + fraction_height * top)
        towards = target - nominal
        norm = float(np.linalg.norm(towards))
        return towards / norm if norm > 1e-9 else self.direction

    def back_off(self, amount: float) -> None:
        """Retreat along the heading until ``amount`` m clear of the box (at most :data:`PHASE_TICKS` ticks)."""
        for _ in range(PHASE_TICKS):
            self.nominal = self.nominal - self.speed * self.world.dt * self.direction
            self.advance(self.nominal)
            if self.distance > amount:
                break

    def push_on(self, ticks: int, amount: float, aim: tuple[float, float] | None, press: bool) -> None:
        """Advance until ``amount`` m past the first touch (at most ``ticks``); home in on ``aim``
        (fraction of the box's top, offset beside it) until touching, when given."""
        dt = self.world.dt
        travelled, touched = 0.0, self.touching
        for _ in range(ticks):
            if aim is not None and not touched:  # steer towards the box until it is reached
                self.direction = self.homing(*aim)
            direction = self.direction
            if touched and direction[2] != 0.0 and not press:  # push on horizontally
                self.direction = np.array([direction[0], direction[1], 0.0]) / max(
                    float(np.hypot(*direction[:2])), 1e-9)
            self.nominal = self.nominal + self.speed * dt * self.direction
            self.advance(self.nominal)
            touched = touched or self.touching
            if touched:
                travelled += self.speed * dt
                if travelled >= amount:
                    break


def _setup(i: int, seed: int) -> tuple[_Scenario, _Plan]:
    """Scenario ``i``'s world, box, first approach and plan, drawn in a fixed order."""
    rng = np.random.default_rng([seed, RECONTACT_TAG, i])
    size_z = RECONTACT_HEIGHTS[i % 3]
    jitter = RECONTACT_JITTER[(i // 3) % 3]
    fast = i % 4 == 0
    params = ParameterSet.nominal().replace({
        "contact.mu_table": float(rng.uniform(0.1, 1.0)), "contact.mu_pusher": float(rng.uniform(0.1, 1.0)),
        "box.size_z": size_z, "box.mass": float(rng.uniform(0.1, 2.0))})
    world = BoxWorld.from_params(params)
    radius = float(params["pusher.radius"])
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
    touch_force = 0.01 * float(params["box.mass"]) * 9.81  # N: the pusher carries 1 % of the box's weight
    scenario = _Scenario(world, state, nominal, direction, table, jitter,
                         np.random.default_rng([seed, RECONTACT_TAG, i, 1]), touch_force,
                         SolveLog(f"recontact_{i:04d} {' '.join(recontact_groups(i))}"))
    return scenario, _Plan(phases, hold, heights, offsets)


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
    scenario, plan = _setup(i, seed)
    press = i % 5 == 4
    cycle = -1
    for kind, speed, amount in plan.phases:
        scenario.speed = speed
        if kind == "back":
            scenario.back_off(amount)
            continue
        ticks, aim = PHASE_TICKS, None
        if kind == "rehit":
            cycle += 1
            ticks = min(4 * PHASE_TICKS, PHASE_TICKS + math.ceil(scenario.distance / (speed * scenario.world.dt)))
            aim = (float(plan.heights[cycle]), float(plan.offsets[cycle]))
        scenario.push_on(ticks, amount, aim, press)
    scenario.speed = 0.0
    for _ in range(plan.hold):
        scenario.advance(scenario.nominal)
    groups = (*recontact_groups(i), f"rehits_{scenario.rehits}")
    return RecontactRun(scenario.log.summary(), tuple(scenario.log.hard_steps), groups, scenario.rehits,
                        scenario.max_rehit_speed, scenario.max_sample_speed, scenario.tick)


def recontact_family(count: int, seed: int) -> tuple[Tally, dict[str, float]]:
    """Push, separate, re-hit scenarios with a sphere pusher."""
    stats = {"rehits": 0, "scenarios_with_rehit": 0, "max_speed_m_s": 0.0, "max_sample_speed_m_s": 0.0}

    def cases() -> Cases:
        for i in range(count):
            def case(i: int = i) -> CaseResult:
                run = recontact_run(i, seed)
                stats["rehits"] += run.rehits
                stats["scenarios_with_rehit"] += int(run.rehits > 0)
                stats["max_speed_m_s"] = max(stats["max_speed_m_s"], run.max_rehit_speed)
                stats["max_sample_speed_m_s"] = round(max(stats["max_sample_speed_m_s"], run.max_sample_speed), 3)
                return run.solve, run.hard_steps, run.groups[len(recontact_groups(i)):]

            yield f"recontact_{i:04d}", case, recontact_groups(i)

    return run_cases(Tally("recontact"), cases()), stats

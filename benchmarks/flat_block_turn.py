"""What makes a near-centrally pushed flat block turn 60-80° and leave the probe (issue 29): a sweep.

Scene (after the recordings of the issue): a steel-like plate, 99 x 99 x 9.5 mm, 0.73 kg, lying on the table;
a vertical rod of radius 3.1 mm (``pusher_shape="rod"``: a capsule from the tip up ``pusher.length``), tip
4 mm above the table, starts 5 mm behind the plate's -x face and moves in a straight line along +x at
0.1 m/s (``--speed``) for a 45 cm stroke after touching, at a lateral offset ``e`` (world y) of 0-5 mm from
the plate's centre line. The pusher path is played back as ``sim2real replay`` plays a recorded one
(:func:`~sim2real.sysid.problem.inputs.pusher_primitive`, :func:`~sim2real.sysid.problem.inputs.pusher_placement`,
:func:`~sim2real.engines.make_world`, :func:`~sim2real.sim.rollout`).

Candidates: the nominal parameters, then one change each (the probe speed; a centre-of-mass offset,
``box.com_y`` across and ``box.com_x`` along the push, which moves the centre of pressure and of friction
with it; ``contact.support_ratio``; ``contact.mu_pusher``; ``contact.mu_table``; a 1° misalignment of the
plate), and the same scene in MuJoCo (its default pyramidal friction cone, the elliptic cone, stiffer and
softer contact, the same centre-of-mass offset). A quasi-static reference (exact Coulomb friction, no
limit-surface approximation; the plate on its four support points as our engine has it, or on a 16 x 16
grid under uniform pressure) checks the engine where theory has an answer.

Reported per candidate and offset: the final yaw (deg; negative = clockwise seen from above), the lateral
exit (the plate centre's world-y displacement at the end, m), the advance (world x, m), whether the probe
lost contact (from some step on the probe-plate distance stays above 1 mm to the end: the probe has passed
the plate, which stays behind) and when (probe travel since touching, m, and time, s), where along the face
it left (m, plate frame; the corner is at ±0.0495), the yaw at which the probe started to slide along the
face (its plate-frame position along the face turns from rolling inwards to moving outwards), and the
solver outcome tally of every run (converged / recovered / degraded, with the worst).

``python -m benchmarks.flat_block_turn --json`` prints one JSON object (about 30 s on one core).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim2real.engines import make_world
from sim2real.errors import Sim2RealError
from sim2real.params import ParameterSet
from sim2real.physics import SolverSettings
from sim2real.sim import BoxState, rollout
from sim2real.sim.box import uniform_support_ratio
from sim2real.sim.constants import GRAVITY
from sim2real.spatial import to_matrix, yaw
from sim2real.sysid.problem import pusher_placement, pusher_primitive

#: The plate (steel-like block of the recordings) and the probe.
STEEL = {"box.size_x": 0.099, "box.size_y": 0.099, "box.size_z": 0.0095, "box.mass": 0.73}
PROBE = {"pusher.radius": 0.0031, "pusher.length": 0.05}
TIP_HEIGHT = 0.004  # m above the table
APPROACH = 0.005  # m between the probe and the face at the start
STROKE = 0.45  # m of probe travel after touching
SPEED = 0.1  # m/s
OFFSETS_MM = (0.0, 0.5, 1.0, 2.0, 3.0, 5.0)
#: Final yaw magnitudes of the real recordings, deg.
REAL_YAW_DEG = (63.0, 81.0)
#: Probe-plate distance (m) below which the probe touches, and above which (to the end) it has left.
TOUCH_GAP = 1e-4
LEFT_GAP = 1e-3
#: Outward motion along the face (m) beyond the innermost point that counts as sliding.
SLIDE_MOVE = 5e-4
#: Largest residual (m/s per m/s of probe speed; scaled moments) of an accepted quasi-static solve.
RESIDUAL_TOL = 1e-8
UNIFORM_RATIO = uniform_support_ratio(STEEL["box.size_x"], STEEL["box.size_y"])


@dataclass(frozen=True)
class Candidate:
    """One setting of the sweep: an engine, parameter changes from the nominal set, a start yaw and a speed."""

    name: str
    what: str
    engine: str = "ours"
    values: dict[str, float] = field(default_factory=dict)
    yaw0_deg: float = 0.0
    speed: float | None = None


CANDIDATES: tuple[Candidate, ...] = (
    Candidate("nominal", "nominal parameters: table friction at the four bottom corners (support_ratio 1), "
              "mu_pusher 0.3, mu_table 0.5"),
    Candidate("speed 0.05 m/s", "nominal, probe at 0.05 m/s", speed=0.05),
    Candidate("speed 0.2 m/s", "nominal, probe at 0.2 m/s", speed=0.2),
    Candidate("com_y +2 mm", "centre of mass (and so of pressure and friction) 2 mm to the side of positive "
              "offsets", values={"box.com_y": 0.002}),
    Candidate("com_y -2 mm", "centre of mass 2 mm to the other side", values={"box.com_y": -0.002}),
    Candidate("com_x +10 mm", "centre of mass 10 mm further from the pushed face", values={"box.com_x": 0.01}),
    Candidate("com_x -10 mm", "centre of mass 10 mm nearer the pushed face", values={"box.com_x": -0.01}),
    Candidate("support uniform", f"support_ratio {UNIFORM_RATIO:.4f}: the friction torque of a square face under "
              "uniform pressure", values={"contact.support_ratio": UNIFORM_RATIO}),
    Candidate("support 0.3", "support_ratio 0.3: pressure concentrated near the centre",
              values={"contact.support_ratio": 0.3}),
    Candidate("support uniform, com_y +2 mm", "uniform support and the centre of mass 2 mm to the side of positive "
              "offsets", values={"contact.support_ratio": UNIFORM_RATIO, "box.com_y": 0.002}),
    Candidate("mu_pusher 0.1", "probe friction 0.1", values={"contact.mu_pusher": 0.1}),
    Candidate("mu_pusher 0.6", "probe friction 0.6", values={"contact.mu_pusher": 0.6}),
    Candidate("support uniform, mu_pusher 0.15", "uniform support and probe friction 0.15",
              values={"contact.support_ratio": UNIFORM_RATIO, "contact.mu_pusher": 0.15}),
    Candidate("mu_table 0.25", "table friction halved", values={"contact.mu_table": 0.25}),
    Candidate("misaligned 1 deg", "plate turned 1° (counter-clockwise) against the push direction at the start",
              yaw0_deg=1.0),
    Candidate("mujoco pyramidal", "MuJoCo, its default pyramidal friction cone", engine="mujoco"),
    Candidate("mujoco elliptic", "MuJoCo, elliptic friction cone", engine="mujoco",
              values={"mujoco.elliptic_cone": 1}),
    Candidate("mujoco elliptic, stiff contact", "MuJoCo, elliptic cone, contact time constant 5 ms (4x stiffer)",
              engine="mujoco", values={"mujoco.elliptic_cone": 1, "mujoco.timeconst": 0.005}),
    Candidate("mujoco elliptic, soft contact", "MuJoCo, elliptic cone, contact time constant 50 ms (2.5x softer)",
              engine="mujoco", values={"mujoco.elliptic_cone": 1, "mujoco.timeconst": 0.05}),
    Candidate("mujoco elliptic, com_y +2 mm", "MuJoCo, elliptic cone, centre of mass 2 mm to the side of positive "
              "offsets", engine="mujoco", values={"mujoco.elliptic_cone": 1, "box.com_y": 0.002}),
)


def _params(values: dict[str, float]) -> ParameterSet:
    return ParameterSet.nominal().replace({**STEEL, **PROBE, **values})


def _travel_of(index: int | None, touch: int | None, speed: float, dt: float) -> float | None:
    """Probe travel (m) from the first touch to the end of step ``index``."""
    if index is None or touch is None:
        return None
    return float((index - touch) * speed * dt)


def push(engine: str, values: dict[str, float], offset: float, speed: float = SPEED, yaw0_deg: float = 0.0
         ) -> dict[str, Any]:
    """One straight push of the plate by the rod; see the module notes for what is reported.

    Parameters
    ----------
    engine : str
        ``"ours"`` or ``"mujoco"``.
    values : dict
        Parameter changes from the nominal set (the plate and the probe are set here).
    offset : float
        Lateral offset of the probe's line from the plate centre, m, world y.
    speed : float
        Probe speed, m/s.
    yaw0_deg : float
        Yaw of the plate at the start, deg.
    """
    params = _params(values)
    world = make_world(engine, params, pusher_primitive(params, "rod"), SolverSettings())
    dt = world.dt
    half = world.half_size
    centre = np.array([0.5, 0.0, half[2] + float(params["contact.table_height"])])
    start_x = centre[0] - half[0] - float(params["pusher.radius"]) - APPROACH
    steps = round((STROKE + APPROACH) / (speed * dt))
    travel = np.arange(steps + 1) * speed * dt
    tip = np.stack([start_x + travel, np.full(steps + 1, offset), np.full(steps + 1, TIP_HEIGHT)], axis=1)
    angle = math.radians(yaw0_deg)
    initial = BoxState.at_rest(centre, np.array([math.cos(angle / 2), 0.0, 0.0, math.sin(angle / 2)]))
    clock = time.perf_counter()
    result = rollout(world, initial, pusher_placement(tip, params, "rod"), context=f"{engine} e={offset:g}")
    wall = time.perf_counter() - clock
    states = result.states
    yaws = np.degrees([yaw(q) for q in states[:, 3:7]])
    gap = np.array([c.pusher_distance for c in result.contacts])  # end of step t: state t + 1
    # The probe tip in the plate frame: its y is where along the face the probe is.
    along = np.einsum("kji,kj->ki", to_matrix(states[:, 3:7]), tip - states[:, 0:3])[:, 1]
    touching = np.nonzero(gap < TOUCH_GAP)[0]
    touch = int(touching[0]) if touching.size else None
    lost_index = None
    if touch is not None and gap[-1] > LEFT_GAP:
        near = np.nonzero(gap <= LEFT_GAP)[0]
        lost_index = int(near[-1]) + 1
    slide_yaw = slide_travel = None
    if touch is not None:
        stop = (lost_index if lost_index is not None else steps) + 1
        phase = along[touch + 1:stop]
        side = np.sign(phase[-1] - phase[0]) if phase.size > 1 and phase[-1] != phase[0] else 0.0
        if side != 0.0:
            inner = int(np.argmin(side * phase))
            if side * (phase[-1] - phase[inner]) > SLIDE_MOVE:
                slide_yaw = float(yaws[touch + 1 + inner])
                slide_travel = _travel_of(touch + inner, touch, speed, dt)
    lost = lost_index is not None
    return {
        "offset_mm": 1e3 * offset,
        "final_yaw_deg": float(yaws[-1]),
        "max_abs_yaw_deg": float(np.max(np.abs(yaws))),
        "lateral_exit_m": float(states[-1, 1] - centre[1]),
        "advance_m": float(states[-1, 0] - centre[0]),
        "lost_contact": lost,
        "lost_at_travel_m": _travel_of(lost_index, touch, speed, dt),
        "lost_at_time_s": float(lost_index * dt) if lost else None,
        "exit_along_face_m": float(along[lost_index]) if lost else None,
        "final_gap_m": float(gap[-1]),
        "slide_onset_yaw_deg": slide_yaw,
        "slide_onset_travel_m": slide_travel,
        "in_real_window": bool(lost and REAL_YAW_DEG[0] <= abs(yaws[-1]) <= REAL_YAW_DEG[1]),
        "solver": result.solve.as_dict(),
        "wall_s": wall,
    }


def sweep_candidate(candidate: Candidate, offsets_mm: tuple[float, ...], speed: float) -> dict[str, Any]:
    """Every offset of one candidate, with a summary; ``{"skipped": reason}`` when its engine is missing."""
    runs = []
    for offset_mm in offsets_mm:
        try:
            runs.append(push(candidate.engine, candidate.values, 1e-3 * offset_mm, candidate.speed or speed,
                             candidate.yaw0_deg))
        except Sim2RealError as err:
            return {"what": candidate.what, "engine": candidate.engine, "skipped": str(err)}
    left = [r["offset_mm"] for r in runs if r["lost_contact"]]
    tally = {key: sum(r["solver"][key] for r in runs) for key in ("steps", "converged", "recovered", "degraded")}
    return {
        "what": candidate.what,
        "engine": candidate.engine,
        "values": candidate.values,
        "yaw0_deg": candidate.yaw0_deg,
        "speed_m_s": candidate.speed or speed,
        "runs": runs,
        "summary": {
            "offsets_left_mm": left,
            "smallest_offset_left_mm": min(left) if left else None,
            "offsets_in_real_window_mm": [r["offset_mm"] for r in runs if r["in_real_window"]],
            "final_yaw_deg": [round(r["final_yaw_deg"], 2) for r in runs],
            "solver": tally,
        },
    }


# --- quasi-static reference -------------------------------------------------------------------------------
def _friction_wrench(twist: np.ndarray, points: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, float]:
    """Coulomb friction on the plate per unit μN, from support points (k, 2) (plate frame, about the centre)
    with normal-force shares ``weights`` (k,), for the twist (vx, vy, ω): force (2,) and moment."""
    ux = twist[0] - twist[2] * points[:, 1]
    uy = twist[1] + twist[2] * points[:, 0]
    speed = np.hypot(ux, uy) + 1e-15
    fx, fy = -weights * ux / speed, -weights * uy / speed
    return np.array([fx.sum(), fy.sum()]), float((points[:, 0] * fy - points[:, 1] * fx).sum())


def _quasi_static_twist(contact: np.ndarray, probe_velocity: np.ndarray, points: np.ndarray, weights: np.ndarray,
                        mu_pusher: float, previous: np.ndarray | None = None) -> tuple[np.ndarray, bool, bool]:
    """The plate's twist under a probe at ``contact`` (on the -x face, plate frame) moving at ``probe_velocity``.

    Sticking if the force that moves the contact point with the probe lies in the probe's friction cone;
    else sliding, the force on the cone's edge and only the normal velocities equal. The root finder starts
    from ``previous`` (the last step's twist), then from a few fixed guesses, until a residual is below
    :data:`RESIDUAL_TOL`. Returns the twist, whether it slides, and whether a root was found.
    """
    from scipy.optimize import fsolve

    def moment(twist: np.ndarray) -> tuple[np.ndarray, float]:
        force, torque = _friction_wrench(twist, points, weights)
        return -force, contact[0] * -force[1] - contact[1] * -force[0] + torque

    def point_velocity(twist: np.ndarray) -> np.ndarray:
        return np.array([twist[0] - twist[2] * contact[1], twist[1] + twist[2] * contact[0]])

    def sticking(twist: np.ndarray) -> list[float]:
        _, m = moment(twist)
        v = point_velocity(twist)
        return [v[0] - probe_velocity[0], v[1] - probe_velocity[1], 100.0 * m]

    guesses = [np.array([probe_velocity[0], probe_velocity[1], spin]) for spin in (0.0, -10.0, 10.0)]
    if previous is not None:
        guesses.insert(0, previous)

    def root(equations: Any) -> tuple[np.ndarray, bool]:
        twist = guesses[0]
        for guess in guesses:
            with warnings.catch_warnings():  # a guess that does not converge is followed by the next
                warnings.simplefilter("ignore", RuntimeWarning)
                twist = fsolve(equations, guess, xtol=1e-12)
            if np.max(np.abs(equations(twist))) < RESIDUAL_TOL:
                return twist, True
        return twist, False

    twist, ok = root(sticking)
    force, _ = moment(twist)
    if ok and abs(force[1]) <= mu_pusher * force[0]:
        return twist, False, True
    edge = np.array([1.0, math.copysign(mu_pusher, force[1])])

    def sliding(twist: np.ndarray) -> list[float]:
        pushed, m = moment(twist)
        return [point_velocity(twist)[0] - probe_velocity[0], 10.0 * (pushed[0] * edge[1] - pushed[1] * edge[0]),
                100.0 * m]

    guesses.insert(0, twist)
    twist, ok_sliding = root(sliding)
    return twist, True, ok and ok_sliding


def quasi_static_push(offset: float, support: str, ratio: float = 1.0, mu_pusher: float = 0.3,
                      step: float = 5e-4) -> dict[str, Any]:
    """The plate pushed quasi-statically by the rod (centred mass, no inertia, no tipping; probe travel ``step``).

    Parameters
    ----------
    offset : float
        Lateral offset of the probe's line, m.
    support : str
        ``"corners"``: the four bottom corners, friction at ``ratio`` times their distance from the centre
        (our engine's support); ``"uniform"``: a 16 x 16 grid of equal shares over the face.
    ratio : float
        ``contact.support_ratio`` of the corner support.
    mu_pusher : float
        Probe friction.

    Returns
    -------
    dict
        Final yaw (deg), lateral exit (m), whether the probe's axis passed the corner (left) and the travel
        then (m), the yaw and travel at slide onset (the first force outside the probe's cone), and a note
        if the root finder failed (the run stops there).
    """
    hx, hy = 0.5 * STEEL["box.size_x"], 0.5 * STEEL["box.size_y"]
    radius = PROBE["pusher.radius"]
    if support == "corners":
        points = ratio * np.array([[sx * hx, sy * hy] for sx in (-1.0, 1.0) for sy in (-1.0, 1.0)])
    else:
        grid = (np.arange(16) + 0.5) / 16 * 2.0 - 1.0
        gx, gy = np.meshgrid(grid * hx, grid * hy)
        points = np.stack([gx.ravel(), gy.ravel()], axis=1)
    weights = np.full(points.shape[0], 1.0 / points.shape[0])
    pose = np.zeros(3)  # plate centre x, y (world), yaw
    rod = np.array([-hx - radius, offset])
    slide_yaw = slide_travel = left_travel = None
    failed = None
    twist = None
    count = round(STROKE / step)
    for k in range(count):
        c, s = math.cos(pose[2]), math.sin(pose[2])
        rotation = np.array([[c, -s], [s, c]])
        rod_plate = rotation.T @ (rod - pose[:2])
        if abs(rod_plate[1]) > hy:
            left_travel = k * step
            break
        twist, sliding, ok = _quasi_static_twist(np.array([-hx, rod_plate[1]]), rotation.T @ np.array([1.0, 0.0]),
                                                 points, weights, mu_pusher, twist)
        if not ok:
            failed = f"root finder failed at {k * step:.4f} m of travel"
            break
        if sliding and slide_yaw is None:
            slide_yaw, slide_travel = math.degrees(pose[2]), k * step
        pose[:2] += step * (rotation @ twist[:2])
        pose[2] += step * twist[2]
        rod[0] += step
    return {"offset_mm": 1e3 * offset, "final_yaw_deg": math.degrees(pose[2]), "lateral_exit_m": float(pose[1]),
            "left": left_travel is not None, "left_at_travel_m": left_travel, "slide_onset_yaw_deg": slide_yaw,
            "slide_onset_travel_m": slide_travel, "failed": failed}


def _reference(results: dict[str, Any]) -> dict[str, Any]:
    """The engine's nominal and uniform-support pushes next to the quasi-static reference, at 1 and 3 mm."""
    rows = []
    for name, support, ratio in (("nominal", "corners", 1.0), ("support uniform", "corners", UNIFORM_RATIO),
                                 ("support uniform", "uniform", UNIFORM_RATIO)):
        engine_runs = {r["offset_mm"]: r for r in results.get(name, {}).get("runs", [])}
        for offset_mm in (1.0, 3.0):
            ref = quasi_static_push(1e-3 * offset_mm, support, ratio)
            run = engine_runs.get(offset_mm)
            rows.append({
                "engine_candidate": name, "reference_support": support if support == "uniform"
                else f"corners, ratio {ratio:.4f}", "offset_mm": offset_mm, "reference": ref,
                "engine": None if run is None else {k: run[k] for k in (
                    "final_yaw_deg", "lateral_exit_m", "lost_contact", "lost_at_travel_m", "slide_onset_yaw_deg",
                    "slide_onset_travel_m")},
            })
    return {"what": "quasi-static pushing with exact Coulomb friction at the support points (no limit-surface "
                    "approximation): 'left' when the probe's axis passes the face's corner (the engine's "
                    "'lost' comes a little later, at 1 mm of gap); slide onset when the sticking force leaves "
                    "the probe's friction cone", "rows": rows}


def _sliding_check(speed: float = 0.8, mu: float = 0.3) -> dict[str, Any]:
    """The plate thrown sliding along +x, its centre of mass 10 mm across and 5 mm along: it stops after
    ``v² / (2 μ g)`` without turning, whatever the support ratio (the friction of a translation acts at the
    centre of pressure, under the centre of mass)."""
    rows = []
    for ratio in (1.0, UNIFORM_RATIO, 0.3):
        params = _params({"contact.support_ratio": ratio, "contact.mu_table": mu, "box.com_x": -0.005,
                          "box.com_y": 0.01})
        world = make_world("ours", params, None, SolverSettings())
        start = BoxState(np.array([0.5, 0.0, world.half_size[2]]), np.array([1.0, 0.0, 0.0, 0.0]),
                         np.array([speed, 0.0, 0.0]), np.zeros(3))
        result = rollout(world, start, steps=round(1.5 * speed / (mu * GRAVITY) / world.dt), instantaneous_start=True)
        final = result.states[-1]
        rows.append({"support_ratio": ratio, "slide_m": float(final[0] - 0.5),
                     "closed_form_m": speed**2 / (2.0 * mu * GRAVITY),
                     "final_yaw_deg": float(np.degrees(yaw(final[3:7]))), "lateral_m": float(final[1]),
                     "degraded": result.solve.degraded})
    return {"speed_m_s": speed, "mu_table": mu, "com_mm": [-5.0, 10.0, 0.0], "rows": rows}


def _checks(results: dict[str, Any]) -> dict[str, Any]:
    """Physics checks on the sweep's runs (simplest cases with known answers)."""

    def run(name: str, offset_mm: float) -> dict[str, Any] | None:
        for r in results.get(name, {}).get("runs", []):
            if r["offset_mm"] == offset_mm:
                return r
        return None

    out: dict[str, Any] = {}
    central = {name: run(name, 0.0) for name in ("nominal", "support uniform", "mujoco elliptic", "mujoco pyramidal")}
    out["central_push_goes_straight"] = {
        name: None if r is None else {"final_yaw_deg": r["final_yaw_deg"], "lateral_exit_m": r["lateral_exit_m"]}
        for name, r in central.items()}
    out["push_through_centre_of_friction_goes_straight"] = {
        name: None if r is None else {"com_y_mm": 2.0, "offset_mm": 2.0, "final_yaw_deg": r["final_yaw_deg"],
                                      "lateral_exit_m": r["lateral_exit_m"]}
        for name, r in ((n, run(n, 2.0)) for n in ("com_y +2 mm", "support uniform, com_y +2 mm",
                                                   "mujoco elliptic, com_y +2 mm"))}
    out["sliding_plate_with_offset_centre_of_mass"] = _sliding_check()
    ours = [r for name, c in results.items() if c.get("engine") == "ours" and "runs" in c
            and not any(k.startswith("box.com") for k in c.get("values", {})) and not c.get("yaw0_deg")
            for r in c["runs"] if r["offset_mm"] > 0]
    out["offset_turns_the_plate_away_from_the_probe_side"] = {
        "runs": len(ours), "clockwise": sum(r["final_yaw_deg"] < 0 for r in ours),
        "probe_left_by_its_own_side": sum(1 for r in ours if r["lost_contact"] and r["exit_along_face_m"] > 0),
        "probe_left": sum(r["lost_contact"] for r in ours)}
    nominal = {r["offset_mm"]: r["final_yaw_deg"] for r in results.get("nominal", {}).get("runs", [])}
    half = {r["offset_mm"]: r["final_yaw_deg"] for r in results.get("mu_table 0.25", {}).get("runs", [])}
    common = sorted(set(nominal) & set(half))
    out["table_friction_leaves_the_path_unchanged"] = {
        "max_abs_yaw_change_deg": max((abs(nominal[o] - half[o]) for o in common), default=None)}
    fine = push("ours", {"sim.dt": 0.005}, 0.001)
    coarse = run("nominal", 1.0)
    out["time_step_5ms_vs_10ms_at_1mm"] = {"final_yaw_deg_5ms": fine["final_yaw_deg"],
                                           "final_yaw_deg_10ms": None if coarse is None else coarse["final_yaw_deg"]}
    return out


def run(offsets_mm: tuple[float, ...] = OFFSETS_MM, speed: float = SPEED, mujoco: bool = True,
        reference: bool = True) -> dict[str, Any]:
    """The whole sweep as one JSON-ready dict."""
    clock = time.perf_counter()
    results: dict[str, Any] = {}
    for candidate in CANDIDATES:
        if candidate.engine == "mujoco" and not mujoco:
            continue
        print(f"flat_block_turn: {candidate.name}", file=sys.stderr, flush=True)
        results[candidate.name] = sweep_candidate(candidate, offsets_mm, speed)
    out: dict[str, Any] = {
        "scene": {"block": STEEL, "probe": {**PROBE, "shape": "rod", "tip_height_m": TIP_HEIGHT},
                  "approach_m": APPROACH, "stroke_m": STROKE, "speed_m_s": speed, "offsets_mm": list(offsets_mm),
                  "dt_s": float(ParameterSet.nominal()["sim.dt"]), "real_final_yaw_deg": list(REAL_YAW_DEG),
                  "uniform_support_ratio": UNIFORM_RATIO,
                  "left_gap_m": LEFT_GAP},
        "candidates": results,
        "checks": _checks(results),
    }
    if reference:
        print("flat_block_turn: quasi-static reference", file=sys.stderr, flush=True)
        out["quasi_static_reference"] = _reference(results)
    out["wall_s"] = time.perf_counter() - clock
    return out


def _table(out: dict[str, Any]) -> str:
    lines = [f"{'candidate':36s} " + " ".join(f"{o:>12g}mm" for o in out["scene"]["offsets_mm"])]
    for name, c in out["candidates"].items():
        if "skipped" in c:
            lines.append(f"{name:36s} skipped: {c['skipped']}")
            continue
        cells = []
        for r in c["runs"]:
            mark = f"L{r['lost_at_travel_m']:.2f}" if r["lost_contact"] else "  ride"
            cells.append(f"{r['final_yaw_deg']:7.1f} {mark}")
        tally = c["summary"]["solver"]
        note = ", ".join(f"{key} {tally[key]}" for key in ("recovered", "degraded") if tally[key])
        lines.append(f"{name:36s} " + " ".join(f"{cell:>14s}" for cell in cells) + (f"  ({note})" if note else ""))
    lines.append("cells: final yaw deg, then L<travel m> when the probe left, 'ride' when it stayed on")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object (else a table)")
    parser.add_argument("--offsets", default=",".join(f"{o:g}" for o in OFFSETS_MM),
                        help="lateral offsets of the probe's line, mm, comma-separated (default %(default)s)")
    parser.add_argument("--speed", type=float, default=SPEED,
                        help="probe speed, m/s, of candidates without their own (default %(default)s)")
    parser.add_argument("--no-mujoco", action="store_true", help="leave out the MuJoCo candidates")
    parser.add_argument("--no-reference", action="store_true", help="leave out the quasi-static reference")
    args = parser.parse_args(argv)
    try:
        offsets = tuple(float(v) for v in args.offsets.split(",") if v.strip())
    except ValueError:
        parser.error(f"--offsets must be numbers in mm separated by commas, got {args.offsets!r}")
    if not offsets or any(not math.isfinite(o) or abs(o) > 40.0 for o in offsets):
        parser.error("--offsets must be finite and within ±40 mm (the face's half width is 49.5 mm)")
    if not 0.005 <= args.speed <= 1.0:
        parser.error(f"--speed must be within [0.005, 1] m/s, got {args.speed}")
    out = run(offsets, args.speed, mujoco=not args.no_mujoco, reference=not args.no_reference)
    print(json.dumps(out) if args.json else _table(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

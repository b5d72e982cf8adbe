"""Scenario files for ``sim2real simulate``: initial box state and an optional pusher path.

Format (YAML; times s, lengths m, world frame with the table top at ``contact.table_height``)::

    duration: 2.0                     # s, required
    dt: 0.01                          # s, optional (else sim.dt)
    box:                              # required; size, mass, friction come from parameters
      position: [0.40, 0.0, 0.105]    # required
      quaternion: [1, 0, 0, 0]        # w, x, y, z (default identity)
      linear_velocity: [0, 0, 0]      # m/s at t = 0 (default 0)
      angular_velocity: [0, 0, 0]     # rad/s, world, at t = 0 (default 0)
      velocities: instant             # or step_before (default instant; see below)
    pusher:                           # optional kinematic sphere
      radius: 0.01                    # m (default pusher.radius)
      waypoints: [[t, x, y, z], ...]  # linear in between, held before the first and after the last

or a kinematic capsule, placed by its two segment end points (each waypoint's end points must
be ``2 * half_length`` apart within :data:`CAPSULE_LENGTH_TOL`; in between they move linearly)::

    pusher:
      shape: capsule                  # "sphere" (default) or "capsule"
      radius: 0.01                    # m (default pusher.radius)
      half_length: 0.03               # m, required for a capsule
      waypoints: [[t, x1, y1, z1, x2, y2, z2], ...]

The box's velocities are those at the instant ``t = 0``; the rollout starts with a half step
(:func:`~sim2real.sim.rollout.staggered_start`), so a sliding or flying box follows the closed form
to second order in ``dt``. ``velocities: step_before`` reads them as the engine reads its own states
(the velocity over the step before ``t = 0``, as a saved hard step or a state rebuilt from poses
holds them) and starts without the half step.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from sim2real.errors import DataError, InputError
from sim2real.params import ParameterSet
from sim2real.physics.settings import SolverSettings
from sim2real.physics.world import BoxWorld
from sim2real.sim.box import table_distance
from sim2real.sim.rollout import Rollout, rollout
from sim2real.sim.shapes import Capsule, Sphere
from sim2real.sim.state import BoxState
from sim2real.spatial import to_matrix, yaw, yaw_gradient

_TOP_KEYS = {"duration", "dt", "box", "pusher"}
_BOX_KEYS = {"position", "quaternion", "linear_velocity", "angular_velocity", "velocities"}
#: Readings of a scenario's start velocities (``box.velocities``): at the instant t = 0, or over the step before.
VELOCITY_READINGS = ("instant", "step_before")
_PUSHER_KEYS = {"shape", "radius", "half_length", "waypoints"}
_SHAPES = ("sphere", "capsule")
#: Largest difference, m, between a capsule waypoint's segment length and ``2 * half_length``.
CAPSULE_LENGTH_TOL = 1e-4

#: A box counts as flipped when its initially upward body axis tilts more than this, deg.
FLIP_TILT_DEG = 45.0


@dataclass(frozen=True)
class Scenario:
    """A parsed scenario.

    Attributes
    ----------
    duration : float
        s.
    dt : float or None
        s; None means ``sim.dt``.
    initial : BoxState
    pusher_radius : float or None
        m; None means ``pusher.radius`` (only meaningful with waypoints).
    waypoints : ndarray (k, 4) or (k, 7), or None
        Rows ``[t s, x m, y m, z m]`` (sphere centre) or ``[t, x1, y1, z1, x2, y2, z2]`` (capsule
        segment end points), world, with strictly increasing t.
    pusher_half_length : float or None
        Capsule half length, m; None for a sphere.
    instant_velocities : bool
        The start velocities are those at ``t = 0`` (else over the step before; ``box.velocities``).
    """

    duration: float
    dt: float | None
    initial: BoxState
    pusher_radius: float | None
    waypoints: np.ndarray | None
    pusher_half_length: float | None = None
    instant_velocities: bool = True

    def pusher_path(self, dt: float, steps: int) -> np.ndarray | None:
        """Pusher placement at the step boundaries ``k dt``, ``k = 0..steps``, m world, or None.

        Shape (steps+1, 3) (sphere centre) or (steps+1, 6) (capsule end points).
        """
        if self.waypoints is None:
            return None
        t = np.arange(steps + 1) * dt
        w = self.waypoints
        return np.stack([np.interp(t, w[:, 0], w[:, i]) for i in range(1, w.shape[1])], axis=1)


def _number(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise DataError(f"{where} must be a finite number, got {value!r}")
    return float(value)


def _vector(where: str, value: Any, size: int) -> np.ndarray:
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != size:
        raise DataError(f"{where} must be a list of {size} numbers, got {value!r}")
    return np.array([_number(f"{where}[{i}]", v) for i, v in enumerate(value)])


def _check_keys(where: str, mapping: Any, allowed: set[str], required: set[str]) -> Mapping[str, Any]:
    if not isinstance(mapping, Mapping):
        raise DataError(f"{where} must be a mapping, got {type(mapping).__name__}")
    unknown = sorted(set(map(str, mapping)) - allowed)
    if unknown:
        raise DataError(f"{where}: unknown key '{unknown[0]}' (allowed: {', '.join(sorted(allowed))})")
    missing = sorted(required - set(mapping))
    if missing:
        raise DataError(f"{where}: missing key '{missing[0]}'")
    return mapping


def parse_scenario(document: Any, source: str = "scenario") -> Scenario:
    """Validate a scenario mapping (as loaded from YAML).

    Raises
    ------
    Sim2RealError
        One line naming the source, the key and the reason.
    """
    doc = _check_keys(source, document, _TOP_KEYS, {"duration", "box"})
    duration = _number(f"{source}: duration", doc["duration"])
    if duration <= 0:
        raise DataError(f"{source}: duration must be positive, got {duration!r} s")
    dt = None
    if doc.get("dt") is not None:
        dt = _number(f"{source}: dt", doc["dt"])
        if not 1e-4 <= dt <= 0.05:
            raise DataError(f"{source}: dt = {dt!r} s is out of bounds [0.0001, 0.05]")
    box = _check_keys(f"{source}: box", doc["box"], _BOX_KEYS, {"position"})
    quaternion = _vector(f"{source}: box.quaternion", box.get("quaternion", [1, 0, 0, 0]), 4)
    norm = float(np.linalg.norm(quaternion))
    if abs(norm - 1.0) > 1e-6:
        raise DataError(f"{source}: box.quaternion must be a unit quaternion (w, x, y, z), got norm {norm:.6g}")
    initial = BoxState(
        _vector(f"{source}: box.position", box["position"], 3),
        quaternion,
        _vector(f"{source}: box.linear_velocity", box.get("linear_velocity", [0, 0, 0]), 3),
        _vector(f"{source}: box.angular_velocity", box.get("angular_velocity", [0, 0, 0]), 3),
    )
    reading = box.get("velocities", "instant")
    if reading not in VELOCITY_READINGS:
        raise DataError(f"{source}: box.velocities must be one of {', '.join(VELOCITY_READINGS)}, got {reading!r}")
    radius = None
    waypoints = None
    half_length = None
    if doc.get("pusher") is not None:
        pusher = _check_keys(f"{source}: pusher", doc["pusher"], _PUSHER_KEYS, {"waypoints"})
        shape = pusher.get("shape", "sphere")
        if shape not in _SHAPES:
            raise DataError(f"{source}: pusher.shape must be one of {', '.join(_SHAPES)}, got {shape!r}")
        if pusher.get("radius") is not None:
            radius = _number(f"{source}: pusher.radius", pusher["radius"])
            if radius <= 0:
                raise DataError(f"{source}: pusher.radius must be positive, got {radius!r} m")
        if shape == "capsule":
            if pusher.get("half_length") is None:
                raise DataError(f"{source}: pusher: missing key 'half_length' (required for a capsule)")
            half_length = _number(f"{source}: pusher.half_length", pusher["half_length"])
            if half_length < 0:
                raise DataError(f"{source}: pusher.half_length must be non-negative, got {half_length!r} m")
        elif "half_length" in pusher:
            raise DataError(f"{source}: pusher.half_length is only for shape: capsule")
        row = "[t, x, y, z]" if shape == "sphere" else "[t, x1, y1, z1, x2, y2, z2]"
        raw = pusher["waypoints"]
        if not isinstance(raw, Sequence) or isinstance(raw, str) or len(raw) == 0:
            raise DataError(f"{source}: pusher.waypoints must be a non-empty list of {row}")
        size = 4 if shape == "sphere" else 7
        waypoints = np.array([_vector(f"{source}: pusher.waypoints[{i}] {row}", r, size) for i, r in enumerate(raw)])
        if np.any(np.diff(waypoints[:, 0]) <= 0):
            raise DataError(f"{source}: pusher.waypoints times must be strictly increasing")
        if half_length is not None:
            lengths = np.linalg.norm(waypoints[:, 4:7] - waypoints[:, 1:4], axis=1)
            worst = int(np.argmax(np.abs(lengths - 2.0 * half_length)))
            if abs(lengths[worst] - 2.0 * half_length) > CAPSULE_LENGTH_TOL:
                raise DataError(f"{source}: pusher.waypoints[{worst}]: the end points are {lengths[worst]:.6g} m "
                                f"apart, but 2 * half_length = {2.0 * half_length:.6g} m")
    return Scenario(duration, dt, initial, radius, waypoints, half_length, reading == "instant")


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario YAML file."""
    from sim2real.paths import read_text_file

    path = Path(path)
    text = read_text_file(path, "scenario")  # a FIFO or device refused unopened, not read (it would block)
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise DataError(f"scenario {path} is not valid YAML: {str(err).splitlines()[0]}") from None
    return parse_scenario(document, f"scenario {path}")


@dataclass(frozen=True)
class ScenarioRun:
    """Result of :func:`run_scenario`: the rollout, the pusher path, parameters and the summary."""

    rollout: Rollout
    pusher_path: np.ndarray | None
    params: ParameterSet
    summary: dict[str, Any]


def _up_axis_tilt_deg(quaternions: np.ndarray, axis: int, sign: float) -> np.ndarray:
    z_of_axis = to_matrix(quaternions)[..., 2, axis] * sign
    return np.degrees(np.arccos(np.clip(z_of_axis, -1.0, 1.0)))


def run_scenario(scenario: Scenario, params: ParameterSet, grad_names: Sequence[str] = (),
                 strict: bool = False, world_factory: Callable[..., Any] = BoxWorld) -> ScenarioRun:
    """Simulate a scenario and summarise it (``strict``: raise on a step that would be degraded).

    ``world_factory(params, pusher_shape, settings)`` builds the world (default our engine; the CLI
    passes :func:`sim2real.engines.make_world` of the chosen engine).

    Returns
    -------
    ScenarioRun
        ``summary`` holds ``final.box_position`` (3), ``final.box_quaternion`` (4), ``final.yaw_rad``,
        ``flipped``, ``max_tilt_deg``, ``min_signed_distance_m`` (box-table, whole run),
        ``min_pusher_distance_m``, ``max_pusher_force_n``, ``steps``, ``dt``, ``wall_s``, ``iterations``
        ``solver`` (the step outcome tally, see :class:`~sim2real.sim.SolveSummary`) and with
        ``grad_names`` ``gradients[name] = {"box_position": (3), "yaw": float}``.

    Raises
    ------
    Sim2RealError
        Box starting inside the table; SimulationError in strict mode for a step that would be degraded.
    """
    if scenario.dt is not None:
        params = params.replace({"sim.dt": scenario.dt})
    if scenario.pusher_radius is not None:
        params = params.replace({"pusher.radius": scenario.pusher_radius})
    radius = float(params["pusher.radius"])
    shape = Sphere(radius) if scenario.pusher_half_length is None else Capsule(radius, scenario.pusher_half_length)
    world = world_factory(params, shape, SolverSettings(strict=strict))
    half = world.half_size
    table_h = float(params["contact.table_height"])
    start_gap = float(table_distance(scenario.initial.as_vector(), half, table_h, float(params["box.edge_radius"])))
    if start_gap < -1e-6:
        raise InputError(f"box starts inside the table: its lowest point is {-start_gap:.4g} m below the "
                         f"table surface (z = {table_h:g} m)")
    steps = max(1, round(scenario.duration / world.dt))
    path = scenario.pusher_path(world.dt, steps)
    wall = time.perf_counter()
    result = rollout(world, scenario.initial, path, steps=steps, grad_names=grad_names, context="scenario",
                     instantaneous_start=scenario.instant_velocities)
    wall = time.perf_counter() - wall
    r0 = to_matrix(scenario.initial.quaternion)
    axis = int(np.argmax(np.abs(r0[2])))
    sign = float(np.sign(r0[2, axis]))
    tilt = _up_axis_tilt_deg(result.states[:, 3:7], axis, sign)
    final = result.states[-1]
    summary: dict[str, Any] = {
        "final": {
            "box_position": final[0:3].tolist(),
            "box_quaternion": final[3:7].tolist(),
            "yaw_rad": float(yaw(final[3:7])),
        },
        "flipped": bool(tilt[-1] > FLIP_TILT_DEG),
        "max_tilt_deg": float(tilt.max()),
        "min_signed_distance_m": float(min(start_gap, min(c.table_distance for c in result.contacts))),
        "min_pusher_distance_m": float(min(c.pusher_distance for c in result.contacts)) if path is not None else None,
        "max_pusher_force_n": float(max(c.pusher_force for c in result.contacts)) if path is not None else None,
        "steps": steps,
        "dt": world.dt,
        "iterations": {"mean": float(result.iterations.mean()), "max": int(result.iterations.max())},
        "wall_s": wall,
        "solver": result.solve.as_dict(),
    }
    if grad_names:
        assert result.sensitivities is not None
        s_final = result.sensitivities[-1]
        dyaw = yaw_gradient(final[3:7]) @ s_final[3:7]
        summary["gradients"] = {
            name: {"box_position": s_final[0:3, k].tolist(), "yaw": float(dyaw[k])}
            for k, name in enumerate(result.param_names)
        }
    return ScenarioRun(result, path, params, summary)

"""The standard push: a joint-space reference trajectory sampled at 100 Hz.

The pusher (sphere centre) moves along +x at a fixed height and lateral offset from
``start_x`` to ``end_x`` with a velocity profile that ramps up and down smoothly
(cosine blends of ``ramp_time``), then holds for ``settle_time`` while the box comes to
rest. Each sample is solved with the pusher IK (tool pointing down), seeded with the
previous one; joint velocities come from the Jacobian. The result maps directly onto
``trajectory_msgs/JointTrajectory`` (positions, velocities, time_from_start).

The push is described by the ``experiment`` node's section of ``config/experiment.yaml``
(ROS 2 params file). All lengths in m (base frame), times in s.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from sim2real.errors import Sim2RealError
from sim2real.model import PUSHER_LINK, ArmModel, solve_pusher_ik
from sim2real.params import ParameterSet
from sim2real.params.yaml_io import node_parameters

FloatArray = NDArray[np.float64]


#: Longest trial a push configuration may describe (s): bounds recording size and run time.
MAX_TRIAL_SECONDS = 120.0
#: Largest |coordinate| of the push (m), fastest push (m/s), highest reference rate (Hz).
MAX_PUSH_EXTENT, MAX_PUSH_SPEED, MAX_RATE_HZ = 2.0, 2.0, 1000.0
#: Largest |yaw| of the box at the start (deg): beyond 45 deg the pusher meets another face first.
MAX_BOX_YAW_DEG = 45.0


@dataclass(frozen=True)
class PushConfig:
    """The standard push (base frame; the table top is at z = 0).

    Attributes
    ----------
    height : float
        Pusher centre height above the table (m).
    lateral : float
        Pusher centre y (m).
    start_x, end_x : float
        Pusher centre x at the start and the end of the push (m).
    speed : float
        Cruise speed along +x (m/s).
    ramp_time : float
        Duration of the smooth acceleration and deceleration (s).
    pre_time : float
        Hold at the start pose before moving (s).
    settle_time : float
        Hold at the end pose after the push (s).
    rate_hz : float
        Sample rate of the reference (Hz).
    box_yaw_deg : float
        Yaw of the box at the start, about base z (deg; 0: its body axes along the base axes, so the pusher
        meets its near face square on; otherwise at that angle to the face's normal). The pusher's path does
        not depend on it: it places the box.
    """

    height: float = 0.15
    lateral: float = 0.0
    start_x: float = 0.20
    end_x: float = 0.40
    speed: float = 0.55
    ramp_time: float = 0.2
    pre_time: float = 0.2
    settle_time: float = 1.5
    rate_hz: float = 100.0
    box_yaw_deg: float = 0.0

    def __post_init__(self) -> None:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        bad = [name for name, value in values.items() if not math.isfinite(value)]
        if bad:
            raise Sim2RealError(f"bad push configuration: {', '.join(bad)} must be finite")
        problems = []
        for name in ("height", "lateral", "start_x", "end_x"):
            if abs(values[name]) > MAX_PUSH_EXTENT:
                problems.append(f"{name} = {values[name]:g} m is beyond ±{MAX_PUSH_EXTENT:g} m")
        if self.speed > MAX_PUSH_SPEED:
            problems.append(f"speed {self.speed:g} m/s is above {MAX_PUSH_SPEED:g} m/s")
        if abs(self.box_yaw_deg) > MAX_BOX_YAW_DEG:
            problems.append(f"box_yaw_deg {self.box_yaw_deg:g} is beyond ±{MAX_BOX_YAW_DEG:g} deg")
        if self.rate_hz > MAX_RATE_HZ:
            problems.append(f"rate_hz {self.rate_hz:g} is above {MAX_RATE_HZ:g} Hz")
        if self.end_x <= self.start_x:
            problems.append("end_x must be greater than start_x")
        if self.speed <= 0 or self.rate_hz <= 0:
            problems.append("speed and rate_hz must be positive")
        if min(self.ramp_time, self.pre_time, self.settle_time) < 0:
            problems.append("times must be non-negative")
        if self.ramp_time * self.speed > self.end_x - self.start_x:
            problems.append("push too short for its ramps (ramp_time * speed > end_x - start_x)")
        if not problems:
            total = self.pre_time + self.ramp_time + (self.end_x - self.start_x) / self.speed + self.settle_time
            if total > MAX_TRIAL_SECONDS:
                problems.append(f"a trial would last {total:.4g} s (pre_time + push + settle_time); at most "
                                f"{MAX_TRIAL_SECONDS:g} s")
        if problems:
            raise Sim2RealError(f"bad push configuration: {'; '.join(problems)}")


#: Push keys a trial may set for itself (the file's ``trials`` section: one list per key, one entry per start
#: distance); the others (timing, rate) are the run's.
TRIAL_PUSH_KEYS = ("height", "lateral", "start_x", "end_x", "speed", "box_yaw_deg")


def box_start_pose(distance: float, params: ParameterSet, yaw_deg: float = 0.0) -> tuple[FloatArray, FloatArray]:
    """The box's start pose in a trial: upright on the table, centre ``distance`` m along base x.

    Parameters
    ----------
    distance : float
        Box centre x, m, base frame (its y is 0).
    params : ParameterSet
        ``contact.table_height`` and ``box.size_z`` (m).
    yaw_deg : float
        Yaw about base z, deg (the trial push's :attr:`PushConfig.box_yaw_deg`; 0: body axes along the base axes,
        ``box.size_x`` along the pushing direction, ``box.size_z`` up).

    Returns
    -------
    position : ndarray, shape (3,)
        Box centre, m, base frame.
    quaternion : ndarray, shape (4,)
        (w, x, y, z).
    """
    height = float(params["contact.table_height"]) + 0.5 * float(params["box.size_z"])
    half = 0.5 * math.radians(yaw_deg)
    return np.array([distance, 0.0, height]), np.array([math.cos(half), 0.0, 0.0, math.sin(half)])


@dataclass(frozen=True)
class ExperimentConfig:
    """What ``config/experiment.yaml`` describes: the start distances and the push of each trial.

    Attributes
    ----------
    distances : tuple of float
        Box start distances along base x (m), one trial each.
    push : PushConfig
        The push every trial makes unless :attr:`trial_pushes` says otherwise.
    start_tolerance : float
        The box must be within this distance of its requested start (m).
    trial_pushes : tuple of PushConfig
        Empty (every trial pushes :attr:`push`) or one push per distance: the file's ``trials`` section
        (e.g. a designed experiment, ``sim2real design``).
    """

    distances: tuple[float, ...]
    push: PushConfig
    start_tolerance: float = 0.01
    trial_pushes: tuple[PushConfig, ...] = ()

    def __post_init__(self) -> None:
        if self.trial_pushes and len(self.trial_pushes) != len(self.distances):
            raise Sim2RealError(f"{len(self.trial_pushes)} trial pushes for {len(self.distances)} start distances")

    def push_of(self, index: int) -> PushConfig:
        """The push of trial ``index`` (0-based)."""
        return self.trial_pushes[index] if self.trial_pushes else self.push

    def with_distances(self, distances: tuple[float, ...]) -> ExperimentConfig:
        """The same experiment at other start distances (``--distances``): refused when its trials have
        pushes of their own (they belong to the file's distances)."""
        if self.trial_pushes and tuple(distances) != self.distances:
            raise Sim2RealError("the experiment file gives each trial its own push (its 'trials' section): its "
                                "start distances cannot be replaced; edit the file instead")
        return dataclasses.replace(self, distances=tuple(distances))


def load_experiment_config(path: str | os.PathLike[str] | None = None) -> ExperimentConfig:
    """Read the ``experiment`` node's parameters from a ROS 2 params file.

    As rcl gives them to the node: the ``/**`` section (the package's file uses it, so that a
    launch override, which launch_ros writes under ``/**`` after it, wins), then an ``experiment``
    section over it.

    Parameters
    ----------
    path : path-like, optional
        Default: the package's ``config/experiment.yaml``.

    Raises
    ------
    Sim2RealError
        Missing file, malformed YAML, unknown or mistyped keys.
    """
    from sim2real.paths import config_file

    path = Path(path) if path else config_file("experiment.yaml")
    section = node_parameters(path, "experiment", "experiment file")
    push_keys = {f.name for f in fields(PushConfig)}
    push_values = section.get("push", {}) or {}
    unknown = set(push_values) - push_keys
    if unknown:
        raise Sim2RealError(f"{path}: unknown push keys {sorted(unknown)} (known: {sorted(push_keys)})")
    if not isinstance(push_values, dict):
        raise Sim2RealError(f"{path}: push must be a mapping of push keys, got {type(push_values).__name__}")
    try:
        push = PushConfig(**{k: float(v) for k, v in push_values.items()})
        distances = tuple(float(d) for d in section.get("distances", ()))
        tolerance = float(section.get("start_tolerance", 0.01))
    except (TypeError, ValueError) as err:
        raise Sim2RealError(f"{path}: {err}") from None
    except Sim2RealError as err:
        raise Sim2RealError(f"{path}: {err}") from None
    if "distances" in section and not distances:
        raise Sim2RealError(f"{path}: distances is empty; give start distances in m (e.g. [0.30, 0.45]) or leave "
                            f"the key out")
    for distance in distances:
        if not (math.isfinite(distance) and 0.0 < distance < 1.5):
            raise Sim2RealError(f"{path}: start distance {distance} m is outside (0, 1.5) m")
    if not (math.isfinite(tolerance) and 0.0 < tolerance <= 0.5):
        raise Sim2RealError(f"{path}: start_tolerance {tolerance} m must be in (0, 0.5] m")
    trial_pushes = build_trial_pushes(section.get("trials"), push, distances, str(path))
    return ExperimentConfig(distances=distances, push=push, start_tolerance=tolerance, trial_pushes=trial_pushes)


def build_trial_pushes(section: object, push: PushConfig, distances: tuple[float, ...], where: str
                       ) -> tuple[PushConfig, ...]:
    """Each trial's push from a ``trials`` section: the one rule of the experiment file and the node's parameters.

    Parameters
    ----------
    section : object
        None (no section: every trial pushes ``push``) or a mapping of :data:`TRIAL_PUSH_KEYS` to lists, one
        entry per start distance (m for the lengths, m/s for ``speed``); a key not listed is ``push``'s.
    push : PushConfig
        The run's push (``push.*``).
    distances : tuple of float
        The start distances (m) the section belongs to.
    where : str
        Opens every error: the file, or the node's parameters.

    Returns
    -------
    tuple of PushConfig
        Empty without a section, else one push per distance.

    Raises
    ------
    Sim2RealError
        One line: a section that is not a non-empty mapping, an unknown key, no distances, a list whose length is
        not the number of distances, a non-number, or a trial whose push is invalid (named by its number and
        distance).
    """
    if section is None:
        return ()
    if not isinstance(section, dict) or not section:
        raise Sim2RealError(f"{where}: trials must map push keys ({', '.join(TRIAL_PUSH_KEYS)}) to lists, one "
                            f"entry per start distance")
    unknown = sorted(set(section) - set(TRIAL_PUSH_KEYS))
    if unknown:
        raise Sim2RealError(f"{where}: unknown trials keys {unknown} (a trial may set {', '.join(TRIAL_PUSH_KEYS)})")
    if not distances:
        raise Sim2RealError(f"{where}: a trials section needs the start distances it belongs to (distances)")
    columns: dict[str, list[float]] = {}
    for key, values in section.items():
        if not isinstance(values, (list, tuple)):
            raise Sim2RealError(f"{where}: trials.{key} must be a list of {len(distances)} numbers, one per start "
                                f"distance")
        if len(values) != len(distances):
            raise Sim2RealError(f"{where}: trials.{key} has {len(values)} entries but distances has "
                                f"{len(distances)}; give one entry per start distance")
        if any(isinstance(v, bool) for v in values):
            raise Sim2RealError(f"{where}: trials.{key} must hold numbers, got {list(values)}")
        try:
            columns[key] = [float(v) for v in values]
        except (TypeError, ValueError):
            raise Sim2RealError(f"{where}: trials.{key} must hold numbers, got {list(values)}") from None
    pushes = []
    for index in range(len(distances)):
        try:
            pushes.append(dataclasses.replace(push, **{key: column[index] for key, column in columns.items()}))
        except Sim2RealError as err:
            raise Sim2RealError(f"{where}: trial {index + 1} (d = {distances[index]:g} m): {err}") from None
    return tuple(pushes)


def experiment_document(config: ExperimentConfig) -> dict[str, object]:
    """The ROS 2 params document of ``config`` (under ``/**``, as the package's file), which
    :func:`load_experiment_config` reads back as ``config``: the trials' own pushes as lists under ``trials``."""
    body: dict[str, object] = {
        "distances": [float(d) for d in config.distances],
        "start_tolerance": float(config.start_tolerance),
        "push": {f.name: float(getattr(config.push, f.name)) for f in fields(PushConfig)},
    }
    if config.trial_pushes:
        body["trials"] = {key: [float(getattr(p, key)) for p in config.trial_pushes] for key in TRIAL_PUSH_KEYS
                          if any(getattr(p, key) != getattr(config.push, key) for p in config.trial_pushes)}
        if not body["trials"]:
            del body["trials"]
    return {"/**": {"ros__parameters": body}}


def save_experiment_config(path: str | os.PathLike[str], config: ExperimentConfig, header: str | None = None) -> Path:
    """Write ``config`` as an experiment params file (``run --experiment``, the launch file's ``experiment_file``),
    atomically, with ``header`` as comment lines at the top; parent directories are created."""
    import yaml

    from sim2real.filemodes import write_text_atomic

    path = Path(path)
    body = yaml.safe_dump(experiment_document(config), sort_keys=False, default_flow_style=None)
    comment = "".join(f"# {line}\n" for line in header.splitlines()) if header else ""
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(path, comment + body)


def push_profile(push: PushConfig) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Pusher x position and velocity along the push, sampled at ``push.rate_hz``.

    The speed rises from 0 to ``push.speed`` over ``ramp_time`` as ``(1 − cos)/2``, cruises,
    and falls back symmetrically so that the travel is exactly ``end_x − start_x``.

    Returns
    -------
    t : ndarray, shape (N,)
        Sample times from the start of the trajectory (s).
    x : ndarray, shape (N,)
        Pusher centre x (m).
    xdot : ndarray, shape (N,)
        Pusher centre x velocity (m/s).
    """
    distance = push.end_x - push.start_x
    ramp = push.ramp_time
    cruise = (distance - ramp * push.speed) / push.speed  # each ramp covers speed·ramp/2
    move_time = 2 * ramp + cruise
    total = push.pre_time + move_time + push.settle_time
    dt = 1.0 / push.rate_hz
    t = np.arange(round(total / dt) + 1) * dt
    s = np.clip(t - push.pre_time, 0.0, move_time)

    def speed_at(s_: FloatArray) -> FloatArray:
        up = np.where(s_ < ramp, 0.5 * (1 - np.cos(np.pi * s_ / max(ramp, 1e-12))), 1.0)
        down_s = move_time - s_
        down = np.where(down_s < ramp, 0.5 * (1 - np.cos(np.pi * down_s / max(ramp, 1e-12))), 1.0)
        return push.speed * np.minimum(up, down)

    def travel_at(s_: FloatArray) -> FloatArray:
        # Integral of speed_at, piecewise closed form.
        r = max(ramp, 1e-12)
        up_part = 0.5 * (np.minimum(s_, ramp) - r / np.pi * np.sin(np.pi * np.minimum(s_, ramp) / r))
        cruise_part = np.clip(s_ - ramp, 0.0, cruise)
        d = np.clip(s_ - ramp - cruise, 0.0, ramp)
        down_part = 0.5 * (d + r / np.pi * np.sin(np.pi * d / r))
        return push.speed * (up_part + cruise_part + down_part)

    moving = (t > push.pre_time) & (t < push.pre_time + move_time)
    x = push.start_x + travel_at(s)
    xdot = np.where(moving, speed_at(s), 0.0).astype(np.float64, copy=False)
    return t.astype(np.float64, copy=False), x, xdot


@dataclass(frozen=True)
class JointTrajectory:
    """A joint-space reference, ``trajectory_msgs/JointTrajectory`` compatible.

    Attributes
    ----------
    t : ndarray, shape (N,)
        ``time_from_start`` of each point (s), uniformly spaced.
    position : ndarray, shape (N, 6)
        Joint positions (rad).
    velocity : ndarray, shape (N, 6)
        Joint velocities (rad/s).
    pusher : ndarray, shape (N, 3)
        Pusher centre of each point in the base frame (m), for reference and plots.
    """

    t: FloatArray
    position: FloatArray
    velocity: FloatArray
    pusher: FloatArray

    @property
    def dt(self) -> float:
        """Sample period (s)."""
        return float(self.t[1] - self.t[0]) if len(self.t) > 1 else 0.0

    def sample(self, time: float) -> tuple[FloatArray, FloatArray]:
        """Reference position and velocity at ``time`` (s): linear interpolation, held at the ends."""
        if time <= self.t[0]:
            return self.position[0], self.velocity[0]
        if time >= self.t[-1]:
            return self.position[-1], self.velocity[-1]
        i = int(np.searchsorted(self.t, time, side="right")) - 1
        w = (time - self.t[i]) / (self.t[i + 1] - self.t[i])
        return ((1 - w) * self.position[i] + w * self.position[i + 1],
                (1 - w) * self.velocity[i] + w * self.velocity[i + 1])


def plan_push(arm: ArmModel, push: PushConfig, table_height: float = 0.0) -> JointTrajectory:
    """Plan the standard push as a joint-space trajectory.

    Parameters
    ----------
    arm : ArmModel
        The xArm 6 chain with its pusher.
    push : PushConfig
        The pusher path and timing.
    table_height : float
        Table surface z in the base frame (m); the push height is measured from it.

    Raises
    ------
    UnreachableError
        If a point of the path cannot be reached with the tool pointing down.
    """
    t, x, xdot = push_profile(push)
    z = table_height + push.height
    positions = np.empty((len(t), 6))
    velocities = np.empty((len(t), 6))
    seed = None
    for i, (xi, vi) in enumerate(zip(x, xdot, strict=True)):
        q = solve_pusher_ik(arm, np.array([xi, push.lateral, z]), seed=seed).q
        jac = arm.jacobian(q, PUSHER_LINK)
        # Pusher moves along +x without rotating: solve the full 6-D twist for joint rates.
        velocities[i] = np.linalg.solve(jac, np.array([vi, 0.0, 0.0, 0.0, 0.0, 0.0]))
        positions[i] = q
        seed = q
    pusher = arm.pusher_position(positions)
    return JointTrajectory(t=t, position=positions, velocity=velocities, pusher=pusher)

"""The reality stand-in: a box world with hidden parameters, driven by the emulated arm, seen by mocap.

For runs without hardware, "reality" is

* the xArm controller emulator (:class:`~sim2real.hardware.emulator.XArmEmulator`), whose
  servo uses the stand-in's ``arm.servo_tau`` and ``arm.command_delay``, reached by the
  driver through the real SDK on loopback;
* a :class:`StandinWorld`: the contact engine with the stand-in's own parameters (box,
  friction, centre of mass — deliberately different from the nominal ones), whose pusher
  follows the emulator's true joint angles through forward kinematics;
* a :class:`MocapModel`: the box pose as a motion-capture system reports it, with Gaussian
  position and orientation noise and a latency.

The world file (``config/standin.yaml``) is a ROS 2 params file with a ``standin_world``
section: registry parameter names (``contact.mu_table``, …) override the nominal values of
``config/params.yaml``; ``mocap.*`` and ``placement.*`` configure the measurement and the
operator's placement error.

Times are seconds on one monotonic clock (the emulator's ``time.monotonic``); lengths m,
angles rad unless a name says ``_deg``; poses in the arm base frame.
"""

from __future__ import annotations

import bisect
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sim2real.errors import Sim2RealError
from sim2real.hardware.rate_gate import RateGate
from sim2real.hardware.standin_camera import StandinCameraConfig, camera_config
from sim2real.model import ArmModel, load_arm
from sim2real.params import ParameterSet, load_params
from sim2real.params.registry import coerce, names
from sim2real.params.yaml_io import read_node_section
from sim2real.physics import BoxWorld
from sim2real.sim import BoxState, SolveLog
from sim2real.spatial import from_rotation_vector, multiply, normalize, to_matrix

FloatArray = NDArray[np.float64]
SECTION = "standin_world"


@dataclass(frozen=True)
class MocapConfig:
    """Motion-capture measurement model.

    Attributes
    ----------
    position_noise : float
        Standard deviation of the position noise per axis (m).
    angle_noise_deg : float
        Standard deviation of the orientation noise (deg), a random rotation vector per sample.
    latency : float
        Age of a pose when it arrives (s): the pose acquired at ``t`` (its header stamp) is
        delivered at ``t + latency``.
    rate_hz : float
        Report rate (Hz).
    seed : int
        Seed of the noise generator.
    """

    position_noise: float = 0.002
    angle_noise_deg: float = 0.5
    latency: float = 0.005
    rate_hz: float = 100.0
    seed: int = 7


@dataclass(frozen=True)
class PlacementConfig:
    """How accurately the stand-in "operator" places the box at a requested pose.

    Attributes
    ----------
    position_error : float
        Standard deviation of the placement error per horizontal axis (m).
    yaw_error_deg : float
        Standard deviation of the yaw error (deg).
    """

    position_error: float = 0.002
    yaw_error_deg: float = 1.0


@dataclass(frozen=True)
class StandinConfig:
    """Everything in a stand-in world file.

    Attributes
    ----------
    params : ParameterSet
        The hidden "true" parameters of reality (nominal, then the file's overrides).
    mocap : MocapConfig
    placement : PlacementConfig
    source : str
        File the configuration came from.
    camera : StandinCameraConfig
        The camera that sees the box when the run takes box poses from images (``--box-pose camera``).
    """

    params: ParameterSet
    mocap: MocapConfig
    placement: PlacementConfig
    source: str = ""
    camera: StandinCameraConfig = field(default_factory=StandinCameraConfig)


def _flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict):
            flat.update(_flatten(value, name))
        else:
            flat[name] = value
    return flat


def load_standin(path: str | Path | None = None, base: ParameterSet | None = None) -> StandinConfig:
    """Read a stand-in world file.

    Parameters
    ----------
    path : path-like, optional
        Default: the package's ``config/standin.yaml``.
    base : ParameterSet, optional
        Values of parameters the file does not set (default: ``config/params.yaml``).

    Raises
    ------
    Sim2RealError
        Missing file, malformed YAML, no ``standin_world`` section, unknown key, bad value.
    """
    from sim2real.paths import config_file

    path = Path(path) if path else config_file("standin.yaml")
    section = dict(read_node_section(path, SECTION, "stand-in world file") or {})
    camera_values = section.pop("camera", None) or {}
    if not isinstance(camera_values, dict):
        raise Sim2RealError(f"{path}: 'camera' must be a mapping of camera settings")
    camera = camera_config(camera_values, str(path))
    flat = _flatten(section)
    registry = set(names())
    values: dict[str, float | int] = {}
    groups: dict[str, dict[str, float]] = {"mocap": {}, "placement": {}}
    for name, value in flat.items():
        group, _, leaf = name.partition(".")
        try:
            if name in registry:
                values[name] = coerce(name, value)
            elif group in groups:
                groups[group][leaf] = float(value)
            else:
                raise Sim2RealError(f"unknown key '{name}' (simulator parameters, mocap.*, placement.* or camera.*)")
        except (TypeError, ValueError):
            raise Sim2RealError(f"{path}: '{name}' must be a number, got {value!r}") from None
        except Sim2RealError as err:
            raise Sim2RealError(f"{path}: {err}") from None
    base = base or load_params(config_file("params.yaml"))
    try:
        mocap_values = dict(groups["mocap"])
        if "seed" in mocap_values:
            mocap_values["seed"] = int(mocap_values["seed"])
        mocap = MocapConfig(**mocap_values)  # type: ignore[arg-type]
        placement = PlacementConfig(**groups["placement"])
    except TypeError as err:
        raise Sim2RealError(f"{path}: {err}") from None
    if min(mocap.position_noise, mocap.angle_noise_deg, mocap.latency, placement.position_error,
           placement.yaw_error_deg) < 0 or mocap.rate_hz <= 0:
        raise Sim2RealError(f"{path}: noise, latency and errors must be >= 0 and mocap.rate_hz > 0")
    return StandinConfig(base.replace(values), mocap, placement, str(path), camera)


class StandinWorld:
    """The box world of reality, stepped at ``sim.dt`` behind the emulator's joint samples.

    Joint samples ``(t, q)`` arrive from the emulator's tick hook (any rate, in time order);
    :meth:`advance` steps the engine over every whole ``sim.dt`` period they cover, with the
    pusher moving linearly between FK positions interpolated at the period ends. While the
    box rests and the pusher is far from it (farther than ``quiet_margin``), a step leaves
    the box unchanged without calling the solver (a box at rest on a level table stays at
    rest); this keeps the stand-in cheap between pushes. Thread-safe.

    Parameters
    ----------
    config : StandinConfig
    initial_box : BoxState
        Box state at the first sample.
    arm : ArmModel, optional
        Default: the URDF model with the stand-in's pusher.
    quiet_margin : float
        Pusher-to-box clearance (m) beyond which a resting box is not simulated.

    Attributes
    ----------
    log : SolveLog
        Outcome of every contact solve since the last :meth:`place_box` (a hard step never stops the
        stand-in: it is recovered or degraded, and counted here).
    """

    def __init__(self, config: StandinConfig, initial_box: BoxState, arm: ArmModel | None = None,
                 quiet_margin: float = 0.02) -> None:
        self.config = config
        self.arm = arm or load_arm(config.params)
        self.world = BoxWorld.from_params(config.params)
        self.log = SolveLog("standin")
        self.dt = self.world.dt
        self.quiet_margin = float(quiet_margin)
        self.box = initial_box
        self._warm = self.world.new_warm_start()  # the previous contact solution of the current placement
        self.steps = 0
        self.solver_steps = 0
        self._lock = threading.Lock()
        self._samples: deque[tuple[float, FloatArray]] = deque()
        self._t: float | None = None  # time of self.box
        self._pusher: FloatArray | None = None
        self._rng = np.random.default_rng(config.mocap.seed + 1)

    # --- inputs ---------------------------------------------------------------------------
    def add_joint_sample(self, t: float, q: FloatArray) -> None:
        """Record the arm's true joint angles ``q`` (6,) rad at time ``t`` (s)."""
        with self._lock:
            if self._samples and t <= self._samples[-1][0]:
                return
            self._samples.append((float(t), np.array(q, dtype=float)))
            if self._t is None:
                self._t = float(t)
                self._pusher = self.arm.pusher_position(self._samples[-1][1])

    def place_box(self, position: FloatArray, yaw: float) -> BoxState:
        """Put the box at rest at ``position`` (3,) m with heading ``yaw`` rad, plus the
        placement error of :class:`PlacementConfig` (what an operator would do)."""
        placement = self.config.placement
        with self._lock:
            error = self._rng.normal(0.0, placement.position_error, 2)
            heading = yaw + np.radians(self._rng.normal(0.0, placement.yaw_error_deg))
            pos = np.array([position[0] + error[0], position[1] + error[1], position[2]])
            quat = np.array([np.cos(heading / 2), 0.0, 0.0, np.sin(heading / 2)])
            self.box = BoxState.at_rest(pos, quat)
            self._warm = self.world.new_warm_start()
            self.log = SolveLog("standin")
            return self.box

    # --- stepping -------------------------------------------------------------------------
    def _pusher_at(self, t: float) -> FloatArray:
        times = [s[0] for s in self._samples]
        i = bisect.bisect_right(times, t) - 1
        if i < 0:
            return self.arm.pusher_position(self._samples[0][1])
        if i >= len(times) - 1:
            return self.arm.pusher_position(self._samples[-1][1])
        (t0, q0), (t1, q1) = self._samples[i], self._samples[i + 1]
        w = (t - t0) / (t1 - t0)
        return self.arm.pusher_position((1 - w) * q0 + w * q1)

    def _quiet(self, pusher_end: FloatArray) -> bool:
        box = self.box
        if np.any(np.abs(box.linear_velocity) > 1e-9) or np.any(np.abs(box.angular_velocity) > 1e-9):
            return False
        assert self._pusher is not None
        rotation = to_matrix(box.quaternion)
        half = self.world.half_size
        radius = float(self.config.params["pusher.radius"])
        for pusher in (self._pusher, pusher_end):
            local = rotation.T @ (pusher - box.position)
            clearance = float(np.linalg.norm(np.maximum(np.abs(local) - half, 0.0))) - radius
            if clearance <= self.quiet_margin:
                return False
        return True

    def advance(self) -> list[tuple[float, FloatArray, FloatArray]]:
        """Step the world over every whole period covered by the joint samples.

        Returns
        -------
        list of (t, position (3,), quaternion (4,))
            The true box pose after each step taken, with its time (s).
        """
        states: list[tuple[float, FloatArray, FloatArray]] = []
        while True:
            with self._lock:
                if self._t is None or not self._samples or self._samples[-1][0] < self._t + self.dt:
                    return states
                t_next = self._t + self.dt
                pusher_end = self._pusher_at(t_next)
                if self._quiet(pusher_end):
                    box = self.box
                else:
                    result = self.world.step(self.box, self._pusher, pusher_end, step_index=self.steps,
                                             warm_start=self._warm)
                    self.log.record(result, self.steps)
                    box = result.state
                    self.solver_steps += 1
                self.box, self._pusher, self._t = box, pusher_end, t_next
                self.steps += 1
                while len(self._samples) > 2 and self._samples[1][0] <= t_next:
                    self._samples.popleft()
                states.append((t_next, box.position.copy(), box.quaternion.copy()))

    @property
    def time(self) -> float | None:
        """Time (s) of the current box state, or None before the first joint sample."""
        return self._t


@dataclass(frozen=True)
class MocapReport:
    """One motion-capture report of the stand-in box.

    Attributes
    ----------
    acquired : float
        When the pose was measured (s, the world's clock): the header stamp.
    arrival : float
        When the report reaches its receiver, ``acquired + latency`` (s, same clock): it must
        not be published earlier.
    position : ndarray, shape (3,)
        Measured box centre (m, arm base frame), with noise.
    quaternion : ndarray, shape (4,)
        Measured orientation (w, x, y, z), with noise.
    """

    acquired: float
    arrival: float
    position: FloatArray
    quaternion: FloatArray


class MocapModel:
    """Noisy, delayed, rate-limited measurements of the stand-in box pose.

    A true pose at time ``t`` is measured at ``t`` (the report's stamp, as a motion-capture
    system stamps a frame with its exposure time) and arrives at ``t + latency``, at most once
    per ``1 / rate_hz``. Following rosbag2, a recorder logs it when it arrives, so that in a
    bag log time - header stamp is the latency (plus transport).

    Parameters
    ----------
    config : MocapConfig
    """

    def __init__(self, config: MocapConfig) -> None:
        self.config = config
        self._rng = np.random.default_rng(config.seed)
        self._gate = RateGate(config.rate_hz)

    def observe(self, t: float, position: FloatArray, quaternion: FloatArray) -> MocapReport | None:
        """The report of the true pose ``position`` (3,) m, ``quaternion`` (4,) at time ``t`` (s).

        Returns
        -------
        MocapReport or None
            The noisy pose, acquired at ``t`` and arriving at ``t + latency``; None when the
            pose falls between two reports.
        """
        if not self._gate.due(t):
            return None
        noisy = np.asarray(position, float) + self._rng.normal(0.0, self.config.position_noise, 3)
        rotation_vector = self._rng.normal(0.0, np.radians(self.config.angle_noise_deg), 3)
        turned = normalize(multiply(from_rotation_vector(rotation_vector), np.asarray(quaternion, float)))
        return MocapReport(float(t), float(t) + self.config.latency, noisy, turned)

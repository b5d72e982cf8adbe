"""The box world in MuJoCo: soft, convex, continuous-time contact next to our hard contact.

The MuJoCo model is generated from the parameters (:func:`mjcf`): the box is a free body whose frame
is its geometric centre (as :class:`BoxState`), with its mass, centre-of-mass offset and principal
inertia (a uniform box's times ``box.inertia_scale``); the table is a plane at
``contact.table_height``; the pusher is a sphere or capsule geom that touches the box only.

Parameters with the same name mean the same thing in both engines (box, ``contact.mu_table``,
``contact.mu_pusher``, ``contact.table_height``, ``pusher.radius``, ``sim.dt``, ``sim.substeps``; each
sub-step is ``mujoco.substeps`` MuJoCo steps, 5 by default: MuJoCo's usual 2 ms);
MuJoCo's own contact parameters are ``mujoco.*`` (solref time constant and damping ratio, solimp
impedance, ``condim`` with torsional and rolling friction, the cone type). ``contact.kappa_*`` and
``contact.support_ratio`` belong to our engine and are ignored here (MuJoCo's torsional friction,
``condim`` 4, plays the support ratio's part). Friction: MuJoCo takes the larger coefficient of the two
geoms of a contact, so the box geom has none, the table ``contact.mu_table`` and the pusher
``contact.mu_pusher``.

The pusher is kinematic: MuJoCo mocap bodies have no velocity, so their contacts would see a moving
pusher as standing still and its friction would act against the box's own motion. It is therefore a
free body of 10⁴ times the box's mass and inertia, compensated for gravity, whose position and
velocity are set at the start of every step from the placements at the start and end of the step
(velocity = displacement / ``dt``): the box feels the pusher's true motion and hardly moves it.

Gradients are finite differences. A rollout with sensitivities differentiates whole rollouts
(:func:`~sim2real.sim.rollout.rollout` asks :attr:`MujocoWorld.gradient_method`); a single
:meth:`MujocoWorld.step` with ``grad`` (one-step residuals, the mirrored arm) differentiates that step:
state, pusher placement, and parameters (models with the perturbed parameter, built once per world).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim2real.errors import InputError, Sim2RealError
from sim2real.params import ParameterSet, names, spec
from sim2real.sim.box import box_inertia, table_distance
from sim2real.sim.constants import GRAVITY
from sim2real.sim.errors import SimulationError
from sim2real.sim.outcome import StepOutcome
from sim2real.sim.shapes import Capsule, Sphere, placement_pose
from sim2real.sim.state import STATE_SIZE, BoxState
from sim2real.sim.step import ContactInfo, StepResult, checked_step_inputs
from sim2real.sim.trajectory import Trajectory
from sim2real.sim.world import advance_each
from sim2real.spatial import to_matrix

try:  # MuJoCo is an optional dependency: ``pip install sim2real[mujoco]``
    import mujoco
except ImportError:  # pragma: no cover - exercised only where MuJoCo is missing
    mujoco = None

#: Parameters whose derivatives :meth:`MujocoWorld.step` computes (by finite differences).
MUJOCO_DIFFERENTIABLE: tuple[str, ...] = (
    "box.mass", "box.size_x", "box.size_y", "box.size_z", "box.com_x", "box.com_y", "box.com_z",
    "box.inertia_scale", "contact.mu_table", "contact.mu_pusher", "contact.table_height", "pusher.radius",
    "mujoco.timeconst", "mujoco.dampratio", "mujoco.impedance_min", "mujoco.impedance_max",
    "mujoco.impedance_width", "mujoco.torsional_friction", "mujoco.rolling_friction",
)
#: The pusher's mass and inertia as multiples of the box's.
PUSHER_MASS_RATIO = 1e4
#: Relative step of the central differences of single steps (of max(1, |value|)).
FD_STEP = 1e-6
#: Relative step of the central differences of whole rollouts. MuJoCo rollouts of a pushed box jump at
#: small scales: the box-table contacts come and go as the box rocks by 0.1-0.2 mm, and a change of 1e-5
#: in contact.mu_table moved a pushed plate's end by 0.04 mm to 2.7 mm (40-270 per unit, measured on three
#: pushes), while changes of 1e-3 gave 0.3-3.6 per unit. A step of 1e-2 differentiates the trend.
ROLLOUT_FD_STEP = 1e-2
_CONDIMS = (1, 3, 4, 6)


def _require_mujoco() -> Any:
    if mujoco is None:
        raise Sim2RealError("the MuJoCo engine needs the mujoco package: pip install 'sim2real[mujoco]' "
                            "(or pip install mujoco)")
    return mujoco


def _fmt(values: Iterable[float]) -> str:
    return " ".join(repr(float(v)) for v in values)


def mjcf(params: ParameterSet, pusher: Sphere | Capsule | None) -> str:
    """The MJCF model of the box world for ``params`` (see the module notes).

    Raises
    ------
    Sim2RealError
        A ``mujoco.condim`` that MuJoCo does not have, a time constant below two sub-steps,
        impedances out of order, or rounded box edges (``box.edge_radius`` > 0).
    """
    p = {name: float(params[name]) for name in names()}
    condim = int(params["mujoco.condim"])
    if condim not in _CONDIMS:
        raise InputError(f"mujoco.condim must be one of {', '.join(map(str, _CONDIMS))}, got {condim}")
    timestep = p["sim.dt"] / (int(params["sim.substeps"]) * int(params["mujoco.substeps"]))
    if p["mujoco.timeconst"] < 2.0 * timestep:
        raise InputError(f"mujoco.timeconst = {p['mujoco.timeconst']:g} s is below two MuJoCo steps "
                         f"(2 x {timestep:g} s): MuJoCo would stiffen it silently")
    if p["mujoco.impedance_min"] > p["mujoco.impedance_max"]:
        raise InputError("mujoco.impedance_min must not exceed mujoco.impedance_max")
    if p["box.edge_radius"] > 0.0:
        raise InputError(f"box.edge_radius = {p['box.edge_radius']:g} m: the MuJoCo engine models sharp boxes "
                         "only (set it to 0, or use the engine 'ours')", option="engine")
    size = np.array([p["box.size_x"], p["box.size_y"], p["box.size_z"]])
    mass = p["box.mass"]
    inertia = box_inertia(np.array(mass), size) * p["box.inertia_scale"]
    solref = _fmt((p["mujoco.timeconst"], p["mujoco.dampratio"]))
    solimp = _fmt((p["mujoco.impedance_min"], p["mujoco.impedance_max"], p["mujoco.impedance_width"], 0.5, 2.0))
    cone = "elliptic" if int(params["mujoco.elliptic_cone"]) else "pyramidal"
    table_friction = _fmt((p["contact.mu_table"], p["mujoco.torsional_friction"], p["mujoco.rolling_friction"]))
    pusher_xml = ""
    if pusher is not None:
        pm = PUSHER_MASS_RATIO * mass
        pi = PUSHER_MASS_RATIO * float(inertia.max())
        if isinstance(pusher, Capsule):
            geom = f'type="capsule" size="{pusher.radius!r} {max(pusher.half_length, 1e-6)!r}"'
        else:
            geom = f'type="sphere" size="{pusher.radius!r}"'
        pusher_xml = f"""
    <body name="pusher" pos="0 0 10" gravcomp="1">
      <freejoint name="pusher"/>
      <inertial pos="0 0 0" mass="{pm!r}" diaginertia="{pi!r} {pi!r} {pi!r}"/>
      <geom name="pusher" {geom} contype="2" conaffinity="2" condim="{condim}"
            friction="{_fmt((p['contact.mu_pusher'], 0.0, 0.0))}"/>
    </body>"""
    return f"""<mujoco model="sim2real box world">
  <option timestep="{timestep!r}" gravity="0 0 {-GRAVITY!r}" cone="{cone}"/>
  <default><geom solref="{solref}" solimp="{solimp}"/></default>
  <worldbody>
    <geom name="table" type="plane" size="0 0 1" pos="0 0 {p['contact.table_height']!r}"
          contype="1" conaffinity="1" condim="{condim}" friction="{table_friction}"/>
    <body name="box" pos="0 0 1">
      <freejoint name="box"/>
      <inertial pos="{_fmt((p['box.com_x'], p['box.com_y'], p['box.com_z']))}" mass="{mass!r}"
                diaginertia="{_fmt(inertia)}"/>
      <geom name="box" type="box" size="{_fmt(0.5 * size)}" contype="3" conaffinity="3" condim="{condim}"
            friction="0 0 0"/>
    </body>{pusher_xml}
  </worldbody>
</mujoco>"""


@dataclass
class _Sim:
    """One compiled model, its data, and the ids of the box and pusher geoms (-1: no pusher)."""

    model: Any
    data: Any
    box_geom: int
    pusher_geom: int


@dataclass
class MujocoWorld:
    """Box, table and pusher in MuJoCo, with fixed parameters (the :class:`~sim2real.sim.World` interface).

    Attributes
    ----------
    params : ParameterSet
    pusher : Sphere, Capsule or None
    strict : bool
        Raise :class:`SimulationError` for a step whose state is not finite (else the step is returned as
        degraded, with the state it started from).
    """

    params: ParameterSet
    pusher: Sphere | Capsule | None
    strict: bool = False
    engine: str = field(default="mujoco", init=False)
    gradient_method: str = field(default="finite differences", init=False)
    rollout_fd_step: float = field(default=ROLLOUT_FD_STEP, init=False)
    differentiable: tuple[str, ...] = field(default=MUJOCO_DIFFERENTIABLE, init=False)
    _main: _Sim = field(init=False, repr=False)
    _perturbed: dict[tuple[str, float], _Sim] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._main = self._compile(self.params)

    def _compile(self, params: ParameterSet) -> _Sim:
        mj = _require_mujoco()
        model = mj.MjModel.from_xml_string(mjcf(params, self.pusher))
        box = mj.mj_name2id(model, mj.mjtObj.mjOBJ_GEOM, "box")
        pusher = mj.mj_name2id(model, mj.mjtObj.mjOBJ_GEOM, "pusher") if self.pusher is not None else -1
        return _Sim(model, mj.MjData(model), box, pusher)

    @property
    def dt(self) -> float:
        """Time step, s."""
        return float(self.params["sim.dt"])

    @property
    def substeps(self) -> int:
        """MuJoCo steps per time step (``sim.substeps`` × ``mujoco.substeps``)."""
        return int(self.params["sim.substeps"]) * int(self.params["mujoco.substeps"])

    @property
    def half_size(self) -> np.ndarray:
        """Half edge lengths of the box, m, body frame, shape (3,)."""
        return 0.5 * np.array([self.params["box.size_x"], self.params["box.size_y"], self.params["box.size_z"]])

    # --- one step -------------------------------------------------------------------------------
    def _advance(self, sim: _Sim, x: np.ndarray, start: np.ndarray | None, end: np.ndarray | None
                 ) -> tuple[np.ndarray, int]:
        """Next state (13,) from state ``x`` and the pusher placement; also the solver iterations."""
        mj = _require_mujoco()
        model, data = sim.model, sim.data
        mj.mj_resetData(model, data)
        q = x[3:7] / np.linalg.norm(x[3:7])
        data.qpos[0:3] = x[0:3]
        data.qpos[3:7] = q
        data.qvel[0:3] = x[7:10]
        data.qvel[3:6] = to_matrix(q).T @ x[10:13]
        if self.pusher is not None:
            if start is None or end is None:  # no pusher this step: park it far away, at rest
                data.qpos[7:10] = (0.0, 0.0, 10.0)
                data.qpos[10:14] = (1.0, 0.0, 0.0, 0.0)
            else:
                c0, q0 = placement_pose(start)
                c1, q1 = placement_pose(end)
                data.qpos[7:10] = c0
                data.qpos[10:14] = q0
                data.qvel[6:9] = (c1 - c0) / self.dt
                rel = np.empty(4)
                mj.mju_negQuat(rel, q0)
                turn = np.empty(4)
                mj.mju_mulQuat(turn, rel, q1)
                omega = np.empty(3)
                mj.mju_quat2Vel(omega, turn, self.dt)
                data.qvel[9:12] = omega
        iterations = 0
        for _ in range(self.substeps):
            mj.mj_step(model, data)
            iterations += int(data.solver_niter[0])
        out = np.empty(STATE_SIZE)
        qn = data.qpos[3:7] / np.linalg.norm(data.qpos[3:7])
        out[0:3] = data.qpos[0:3]
        out[3:7] = qn
        out[7:10] = data.qvel[0:3]
        out[10:13] = to_matrix(qn) @ data.qvel[3:6]
        return out, iterations

    def _contacts(self, sim: _Sim, state: np.ndarray) -> ContactInfo:
        mj = _require_mujoco()
        model, data = sim.model, sim.data
        pusher_id = sim.pusher_geom
        force = np.zeros(6)
        pusher_force = 0.0
        for i in range(data.ncon):
            contact = data.contact[i]
            if pusher_id >= 0 and pusher_id in (contact.geom1, contact.geom2):
                mj.mj_contactForce(model, data, i, force)
                pusher_force += abs(float(force[0]))
        pusher_distance = math.inf
        if pusher_id >= 0:
            mj.mj_kinematics(model, data)  # geometry at the end of the step
            pusher_distance = float(mj.mj_geomDistance(model, data, sim.box_geom, pusher_id, 1.0, None))
        return ContactInfo(active=int(data.ncon),
                           table_distance=float(table_distance(state, self.half_size,
                                                               float(self.params["contact.table_height"]))),
                           pusher_distance=pusher_distance, pusher_force=pusher_force)

    def with_params(self, values: dict[str, float]) -> MujocoWorld:
        """The same world with some parameters changed (a new compiled model)."""
        return MujocoWorld(self.params.replace(values), self.pusher, self.strict)

    def _perturbed_sim(self, name: str, value: float) -> _Sim:
        key = (name, value)
        if key not in self._perturbed:
            self._perturbed[key] = self._compile(self.params.replace({name: value}))
        return self._perturbed[key]

    def advance(self, traj: Trajectory, first: int, last: int, running: np.ndarray | None = None,
                running0: np.ndarray | None = None) -> None:
        """Steps ``first .. last - 1`` of ``traj`` in place, one :meth:`step` each (the ``World`` interface;
        :func:`~sim2real.sim.world.advance_each`)."""
        advance_each(self, traj, first, last, running, running0)

    def new_warm_start(self) -> None:
        """None: each step sets MuJoCo's state from its arguments alone (the ``World`` interface)."""
        return None

    def step(self, state: BoxState, pusher_start: np.ndarray | None = None, pusher_end: np.ndarray | None = None,
             grad: bool = False, param_names: Sequence[str] = (), step_index: int | None = None,
             warm_start: object | None = None) -> StepResult:
        """Advance the box by ``sim.dt`` (``sim.substeps`` MuJoCo steps); the contract of ``BoxWorld.step``.

        ``warm_start`` is accepted and ignored: each step sets MuJoCo's state from ``state`` alone.

        With ``grad``, the derivatives are central differences of this step (relative step
        :data:`FD_STEP`): state (13 columns; a quaternion column changes the raw component, as in our
        engine), pusher placement at the start and at the end, and each parameter of ``param_names``.

        Raises
        ------
        Sim2RealError
            Bad arguments, or a parameter MuJoCo cannot differentiate here.
        SimulationError
            With ``strict``, a step whose state is not finite.
        """
        names, start, end = checked_step_inputs("the MuJoCo engine", MUJOCO_DIFFERENTIABLE, self.pusher,
                                                param_names, pusher_start, pusher_end, step_index)
        with_pusher = start is not None
        size = self.pusher.placement_size if self.pusher is not None else 3
        x = state.as_vector()
        nxt, iterations = self._advance(self._main, x, start, end)
        if not np.all(np.isfinite(nxt)):
            where = f"step {step_index}" if step_index is not None else "step"
            if self.strict:
                raise SimulationError(f"{where}: MuJoCo produced a non-finite state [strict mode]")
            contacts = ContactInfo(0, float("nan"), math.inf, 0.0)
            return StepResult(state=state, contacts=contacts, iterations=iterations, violation=(math.inf, math.inf),
                              param_names=names, outcome=StepOutcome.DEGRADED, rung="mujoco")
        contacts = self._contacts(self._main, nxt)
        next_state = BoxState._from_engine(nxt)
        if not grad:
            return StepResult(next_state, contacts, iterations, (0.0, 0.0), param_names=names, rung="mujoco")
        d_state = np.empty((STATE_SIZE, STATE_SIZE))
        for j in range(STATE_SIZE):
            h = FD_STEP * max(1.0, abs(x[j]))
            up, down = x.copy(), x.copy()
            up[j] += h
            down[j] -= h
            d_state[:, j] = (self._advance(self._main, up, start, end)[0]
                             - self._advance(self._main, down, start, end)[0]) / (2.0 * h)
        d_start = np.zeros((STATE_SIZE, size))
        d_end = np.zeros((STATE_SIZE, size))
        if with_pusher:
            assert start is not None and end is not None
            for target, which in ((d_start, 0), (d_end, 1)):
                for j in range(size):
                    h = FD_STEP * max(1.0, abs((start, end)[which][j]))
                    placements = [start.copy(), end.copy()]
                    placements[which][j] += h
                    up = self._advance(self._main, x, placements[0], placements[1])[0]
                    placements[which][j] -= 2.0 * h
                    down = self._advance(self._main, x, placements[0], placements[1])[0]
                    target[:, j] = (up - down) / (2.0 * h)
        d_params = np.empty((STATE_SIZE, len(names)))
        for k, name in enumerate(names):
            value = float(self.params[name])
            h = FD_STEP * max(1.0, abs(value))
            spec_ = spec(name)
            hi, lo = min(value + h, spec_.upper), max(value - h, spec_.lower)
            up = self._advance(self._perturbed_sim(name, hi), x, start, end)[0]
            down = self._advance(self._perturbed_sim(name, lo), x, start, end)[0]
            d_params[:, k] = (up - down) / (hi - lo)
        return StepResult(next_state, contacts, iterations, (0.0, 0.0), d_state=d_state, d_pusher_start=d_start,
                          d_pusher_end=d_end, d_params=d_params, param_names=names, smoothed_state=nxt, rung="mujoco")

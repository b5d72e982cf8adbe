"""Weighted residuals between a recorded trial and the simulator, with their Jacobian.

:func:`trial_residuals` is the one place the fit gets residuals and Jacobians from. The
Jacobian columns come from the simulator's own derivatives: the engine's implicit-function
gradients (``box.*``, ``contact.*``) chained through the rollout by forward mode, the
servo model's analytic Jacobians (``arm.servo_tau``, ``arm.command_delay``) and, for whole
arm trials under the PD law, the PD law's (``pd.kp``, ``pd.kd``). Central finite differences
of the same residuals (:func:`finite_difference_jacobian`) exist only to check those
Jacobians and to benchmark them; the fit never uses them.

Horizons
--------
``horizon = N`` (an int ≥ 1)
    Teacher forcing over segments of ``N`` steps: each segment starts from the *recorded*
    state (box state rebuilt from consecutive poses, see :func:`sim2real.sysid.data.box_states`;
    joint state as recorded) and is simulated ``N`` steps. ``N = 1`` is the one-step
    residual of Dojo's system identification (eqs. 55-57). In arm trials the pusher follows
    the recorded joint states through forward kinematics, and the joints are simulated by the
    servo model from the recorded commands, so box and servo residuals each see recorded inputs.
``horizon = None`` (``trial``)
    One free rollout of the whole trial from its first recorded state. Arm trials run the
    simulated platform (servo → FK → pusher → engine) driven by the recorded real commands
    (``mode="commands"``) or by the recorded reference under the PD law (``mode="closed"``).

Gradients
---------
By default (:attr:`ResidualSpec.exact_gradients`) the engine's implicit gradients are taken
at the forward solution (``contact.kappa_grad`` set to ``contact.kappa_sim``): the Jacobian
is the derivative of the very residuals being minimised. At the registry's ``kappa_grad``
(1e-4) the smoothed gradients of sticking and resting contacts differ from finite
differences of the hard-contact rollout (smoothing bias). Known limitation: over whole
trials with sliding, turning pusher contact (off-centre pushes) the exact-κ (1e-8) chain can
be off by tens of per cent for the servo parameters and ``box.com_z`` while ``kappa_grad =
1e-6`` matches finite differences to about 0.5 %; one-step and short segments are exact.

Residual rows (each multiplied by its weight, see :class:`Weights`): box position error (m,
3 per sample), box orientation error ``2 sgn(w) vec(q_rec* ⊗ q_sim)`` (rad for small errors,
3 per sample), joint position error (rad, 6 per sample) and joint velocity error (rad/s, 6
per sample, horizons ``N`` only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from sim2real.control import JointTrajectory
from sim2real.control.sim_platform import ENGINE_PARAMS, PD_PARAMS, SERVO_PARAMS, simulate_arm_trial
from sim2real.errors import Sim2RealError
from sim2real.model import load_arm
from sim2real.params import ParameterSet
from sim2real.physics import DIFFERENTIABLE_PARAMS, BoxState, BoxWorld, rollout
from sim2real.physics.servo import ServoParams, delay_split, servo_step
from sim2real.sysid.data import TrialData, box_states

#: Residual groups, in the order of their integer codes in :attr:`TrialResiduals.groups`.
GROUPS: tuple[str, ...] = ("box_position", "box_orientation", "joint_position", "joint_velocity")
COM_PARAMS: tuple[str, ...] = ("box.com_x", "box.com_y", "box.com_z")
MODES: tuple[str, ...] = ("auto", "commands", "closed")


@dataclass(frozen=True)
class Weights:
    """Multipliers of the residual groups (the inverse of the error each group tolerates).

    Attributes
    ----------
    position : float
        Box position rows, 1/m (default 1000: 1 mm counts as 1).
    orientation : float
        Box orientation rows, 1/rad (default 100: 0.01 rad counts as 1).
    joint_position : float
        Joint angle rows, 1/rad (default 1000).
    joint_velocity : float
        Joint velocity rows, s/rad (default 100).
    """

    position: float = 1000.0
    orientation: float = 100.0
    joint_position: float = 1000.0
    joint_velocity: float = 100.0

    @classmethod
    def parse(cls, text: str | None) -> Weights:
        """Parse ``"position=1000,orientation=50,..."`` (unnamed groups keep their default).

        Raises
        ------
        Sim2RealError
            Unknown group, non-numeric, negative or non-finite weight, or all weights zero.
        """
        if not text:
            return cls()
        known = {f.name for f in fields(cls)}
        values: dict[str, float] = {}
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            name, sep, raw = part.partition("=")
            name = name.strip()
            if not sep or name not in known:
                raise Sim2RealError(f"--weights expects GROUP=VALUE with GROUP one of {', '.join(sorted(known))}; "
                                    f"got '{part}'")
            try:
                value = float(raw)
            except ValueError:
                raise Sim2RealError(f"--weights {name}: '{raw.strip()}' is not a number") from None
            if not np.isfinite(value) or value < 0.0:
                raise Sim2RealError(f"--weights {name}: weight must be finite and >= 0, got {raw.strip()}")
            values[name] = value
        weights = cls(**values)
        if all(getattr(weights, f.name) == 0.0 for f in fields(cls)):
            raise Sim2RealError("--weights: all weights are zero; nothing to fit")
        return weights

    def as_dict(self) -> dict[str, float]:
        """``{group: weight}``."""
        return {f.name: float(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True)
class ResidualSpec:
    """How a trial is compared with the simulator.

    Attributes
    ----------
    horizon : int or None
        Steps per teacher-forced segment (1 = one-step), or None for whole trials.
    weights : Weights
    mode : str
        Whole arm trials: ``"commands"`` (drive the sim by the recorded real commands),
        ``"closed"`` (PD law on the recorded reference) or ``"auto"`` (commands when recorded).
    exact_gradients : bool
        True (default): take the engine's implicit gradients at the forward solution
        (``contact.kappa_grad`` set to ``contact.kappa_sim``), i.e. the derivatives of the
        very residuals being minimised. False: at the parameters' ``contact.kappa_grad``
        (smoothed contact; biased for sticking and resting contacts).
    """

    horizon: int | None = 1
    weights: Weights = Weights()
    mode: str = "auto"
    exact_gradients: bool = True

    def __post_init__(self) -> None:
        if self.horizon is not None and (not isinstance(self.horizon, int) or self.horizon < 1):
            raise Sim2RealError(f"horizon must be a positive number of steps or 'trial', got {self.horizon!r}")
        if self.mode not in MODES:
            raise Sim2RealError(f"mode must be one of {', '.join(MODES)}, got '{self.mode}'")

    @property
    def label(self) -> str:
        """``"1"``, ``"N"`` or ``"trial"`` as given on the command line."""
        return "trial" if self.horizon is None else str(self.horizon)


@dataclass(frozen=True)
class TrialResiduals:
    """Residuals of one trial.

    Attributes
    ----------
    name : str
        Trial name.
    residuals : ndarray, shape (m,)
        Weighted residuals (simulated minus recorded, times the group weight).
    jacobian : ndarray, shape (m, p) or None
        d residuals / d parameters, in the order of ``grad_names``.
    groups : ndarray of int, shape (m,)
        Index into :data:`GROUPS` of each row.
    grad_names : tuple of str
    """

    name: str
    residuals: np.ndarray
    jacobian: np.ndarray | None
    groups: np.ndarray
    grad_names: tuple[str, ...] = ()

    def counts(self) -> dict[str, int]:
        """Rows per residual group."""
        return {g: int(np.sum(self.groups == i)) for i, g in enumerate(GROUPS) if np.any(self.groups == i)}

    def rms(self, weights: Weights) -> dict[str, float]:
        """Root-mean-square *unweighted* error per group (m, rad, rad, rad/s)."""
        scale = (weights.position, weights.orientation, weights.joint_position, weights.joint_velocity)
        out = {}
        for i, g in enumerate(GROUPS):
            rows = self.residuals[self.groups == i]
            if rows.size and scale[i] > 0.0:
                out[g] = float(np.sqrt(np.mean((rows / scale[i]) ** 2)))
        return out


def available_gradients(kind: str, horizon: int | None) -> tuple[str, ...]:
    """Parameters whose residual derivatives are available for a trial kind and horizon."""
    engine = tuple(DIFFERENTIABLE_PARAMS)
    if kind == "box":
        return engine
    if horizon is None:
        return tuple(ENGINE_PARAMS) + tuple(SERVO_PARAMS) + tuple(PD_PARAMS)
    return engine + tuple(SERVO_PARAMS) + tuple(PD_PARAMS)


def pose_residual(state: np.ndarray, position: np.ndarray, quaternion: np.ndarray,
                  weights: Weights) -> tuple[np.ndarray, np.ndarray]:
    """Weighted pose error of a simulated box state against a recorded pose.

    Parameters
    ----------
    state : ndarray, shape (13,)
        Simulated box state.
    position : ndarray, shape (3,)
        Recorded centre, m.
    quaternion : ndarray, shape (4,)
        Recorded orientation (w, x, y, z).
    weights : Weights

    Returns
    -------
    residual : ndarray, shape (6,)
        ``w_p (p_sim - p_rec)`` and ``w_o 2 sgn(w) vec(q_rec* ⊗ q_sim)``.
    d_residual : ndarray, shape (6, 13)
        Its derivative with respect to the state vector.
    """
    a0, a1, a2, a3 = quaternion[0], -quaternion[1], -quaternion[2], -quaternion[3]  # q_rec*
    left = np.array([[a0, -a1, -a2, -a3], [a1, a0, -a3, a2], [a2, a3, a0, -a1], [a3, -a2, a1, a0]])
    relative = left @ state[3:7]
    sign = 1.0 if relative[0] >= 0.0 else -1.0
    residual = np.empty(6)
    residual[:3] = weights.position * (state[:3] - position)
    residual[3:] = weights.orientation * 2.0 * sign * relative[1:]
    d_residual = np.zeros((6, 13))
    d_residual[:3, :3] = weights.position * np.eye(3)
    d_residual[3:, 3:7] = weights.orientation * 2.0 * sign * left[1:]
    return residual, d_residual


def _columns(grad_names: Sequence[str], subset: Sequence[str]) -> tuple[tuple[str, ...], list[int]]:
    chosen = tuple(n for n in grad_names if n in subset)
    return chosen, [list(grad_names).index(n) for n in chosen]


def step_params(data: TrialData, params: ParameterSet, exact_gradients: bool = False) -> ParameterSet:
    """The parameters a trial is simulated with: ``sim.dt`` set to the trial's grid step, and
    with ``exact_gradients`` the gradient central-path value set to the forward one."""
    changes: dict[str, float] = {"sim.dt": data.dt} if data.dt_override else {}
    if exact_gradients:
        changes["contact.kappa_grad"] = float(params["contact.kappa_sim"])
    return params.replace(changes) if changes else params


class _Rows:
    """Accumulates residual rows, their Jacobian rows and group codes."""

    def __init__(self, p: int) -> None:
        self.p = p
        self.r: list[np.ndarray] = []
        self.j: list[np.ndarray] = []
        self.g: list[np.ndarray] = []

    def add(self, residual: np.ndarray, jacobian: np.ndarray | None, group: int) -> None:
        self.r.append(residual)
        self.j.append(jacobian if jacobian is not None else np.zeros((residual.shape[0], self.p)))
        self.g.append(np.full(residual.shape[0], group, dtype=int))

    def add_pose(self, state: np.ndarray, sens: np.ndarray | None, data: TrialData, k: int,
                 weights: Weights) -> None:
        residual, d_residual = pose_residual(state, data.box_position[k], data.box_quaternion[k], weights)
        jac = d_residual @ sens if sens is not None else None
        if weights.position > 0.0:
            self.add(residual[:3], None if jac is None else jac[:3], 0)
        if weights.orientation > 0.0:
            self.add(residual[3:], None if jac is None else jac[3:], 1)

    def build(self, name: str, grad_names: tuple[str, ...], grad: bool) -> TrialResiduals:
        if not self.r:
            return TrialResiduals(name, np.zeros(0), np.zeros((0, self.p)) if grad else None,
                                  np.zeros(0, dtype=int), grad_names)
        return TrialResiduals(name, np.concatenate(self.r), np.concatenate(self.j) if grad else None,
                              np.concatenate(self.g), grad_names)


def trial_residuals(data: TrialData, params: ParameterSet, grad_names: Sequence[str] = (),
                    spec: ResidualSpec = ResidualSpec()) -> TrialResiduals:
    """Residuals of one trial and (with ``grad_names``) their Jacobian from the simulator's gradients.

    Parameters
    ----------
    data : TrialData
        The recorded trial on its grid.
    params : ParameterSet
        Simulator parameters.
    grad_names : sequence of str
        Parameters for the Jacobian columns (each must be in :func:`available_gradients`).
    spec : ResidualSpec
        Horizon, weights and mirroring mode.

    Returns
    -------
    TrialResiduals

    Raises
    ------
    Sim2RealError
        A parameter without a gradient for this trial, a whole closed-loop trial without a
        recorded reference, or a simulation failure (message names the trial).
    """
    names = tuple(grad_names)
    available = available_gradients(data.kind, spec.horizon)
    for name in names:
        if name not in available:
            raise Sim2RealError(f"trial '{data.name}': no simulator gradient for '{name}' with horizon "
                                f"{spec.label} (available: {', '.join(available)})")
    rows = _Rows(len(names))
    sim_params = step_params(data, params, spec.exact_gradients and bool(names))
    try:
        if spec.horizon is None:
            if data.kind == "box":
                _box_rollout(rows, data, sim_params, names, spec.weights)
            else:
                _arm_trial(rows, data, sim_params, names, spec)
        else:
            # Groups weighted zero are not simulated at all (e.g. a servo fit on joint states only).
            weights = spec.weights
            if weights.position > 0.0 or weights.orientation > 0.0:
                pusher = None
                if data.kind == "arm":
                    assert data.joint_position is not None
                    pusher = load_arm(sim_params).pusher_position(data.joint_position)
                _box_segments(rows, data, sim_params, names, spec.horizon, weights, pusher)
            if (data.kind == "arm" and data.command is not None
                    and (weights.joint_position > 0.0 or weights.joint_velocity > 0.0)):
                _joint_segments(rows, data, sim_params, names, spec.horizon, weights)
    except Sim2RealError as err:
        raise Sim2RealError(f"trial '{data.name}': {err}") from None
    return rows.build(data.name, names, bool(names))


def _initial_sensitivity(names: tuple[str, ...], d_com: np.ndarray) -> np.ndarray:
    sens = np.zeros((13, len(names)))
    for axis, com_name in enumerate(COM_PARAMS):
        if com_name in names:
            sens[:, names.index(com_name)] = d_com[:, axis]
    return sens


def _box_segments(rows: _Rows, data: TrialData, params: ParameterSet, names: tuple[str, ...], horizon: int,
                  weights: Weights, pusher: np.ndarray | None) -> None:
    """Teacher-forced segments of ``horizon`` steps (box); segments start at k = 1, 1 + N, ..."""
    world = BoxWorld.from_params(params, pusher="sphere" if pusher is not None else None)
    engine_names, engine_cols = _columns(names, DIFFERENTIABLE_PARAMS)
    grad = bool(names)
    com = np.array([float(params[n]) for n in COM_PARAMS])
    states, d_com = box_states(data, com)
    K = data.steps
    for start in range(1, K, horizon):
        state = BoxState.from_vector(states[start])
        sens = _initial_sensitivity(names, d_com[start]) if grad else None
        for k in range(start, min(start + horizon, K)):
            p0 = pusher[k] if pusher is not None else None
            p1 = pusher[k + 1] if pusher is not None else None
            step = world.step(state, p0, p1, grad=grad, param_names=engine_names, step_index=k)
            if sens is not None:
                sens = step.d_state @ sens
                if engine_cols:
                    sens[:, engine_cols] += step.d_params
            state = step.state
            rows.add_pose(state.as_vector(), sens, data, k + 1, weights)


def _joint_segments(rows: _Rows, data: TrialData, params: ParameterSet, names: tuple[str, ...], horizon: int,
                    weights: Weights) -> None:
    """Teacher-forced servo segments: joints from the recorded state under the recorded commands."""
    if weights.joint_position == 0.0 and weights.joint_velocity == 0.0:
        return
    assert data.command is not None and data.joint_position is not None and data.joint_velocity is not None
    servo = ServoParams.from_params(params)
    shift, lead = delay_split(servo.delay, data.dt)
    p = len(names)
    col_tau = names.index("arm.servo_tau") if "arm.servo_tau" in names else None
    col_delay = names.index("arm.command_delay") if "arm.command_delay" in names else None
    zero = np.zeros(6)
    K = data.steps
    for start in range(0, K, horizon):
        q, v = data.joint_position[start], data.joint_velocity[start]
        s_q, s_v = np.zeros((6, p)), np.zeros((6, p))
        for k in range(start, min(start + horizon, K)):
            early, late = k - shift - 1, k - shift
            u_early = data.command[early] if early >= 0 else zero
            u_late = data.command[late] if late >= 0 else zero
            st = servo_step(q, v, u_early, u_late, lead, data.dt, servo)
            s_q = s_q + st.dq_dv0[:, None] * s_v
            s_v = st.dv_dv0[:, None] * s_v
            if col_tau is not None:
                s_q[:, col_tau] += st.dq_dtau
                s_v[:, col_tau] += st.dv_dtau
            if col_delay is not None:
                s_q[:, col_delay] += st.dq_dlead
                s_v[:, col_delay] += st.dv_dlead
            q, v = st.position, st.velocity
            if weights.joint_position > 0.0:
                rows.add(weights.joint_position * (q - data.joint_position[k + 1]),
                         weights.joint_position * s_q if p else None, 2)
            if weights.joint_velocity > 0.0:
                rows.add(weights.joint_velocity * (v - data.joint_velocity[k + 1]),
                         weights.joint_velocity * s_v if p else None, 3)


def _box_rollout(rows: _Rows, data: TrialData, params: ParameterSet, names: tuple[str, ...],
                 weights: Weights) -> None:
    """Whole box-only trial: one rollout from the state rebuilt from the first two poses."""
    world = BoxWorld.from_params(params, pusher=None)
    com = np.array([float(params[n]) for n in COM_PARAMS])
    states, d_com = box_states(data, com)
    grad = bool(names)
    result = rollout(world, BoxState.from_vector(states[1]), steps=data.steps - 1, grad_names=names,
                     initial_grad=grad)
    for j in range(1, result.states.shape[0]):
        sens = None
        if grad:
            assert result.sensitivities is not None and result.initial_sensitivities is not None
            sens = result.sensitivities[j] + result.initial_sensitivities[j] @ _initial_sensitivity(names, d_com[1])
        rows.add_pose(result.states[j], sens, data, j + 1, weights)


def resolve_mode(data: TrialData, mode: str) -> str:
    """The mirroring mode used for a whole arm trial (``auto``: commands when they were recorded)."""
    if mode == "auto":
        return "commands" if data.command is not None else "closed"
    if mode == "commands" and data.command is None:
        raise Sim2RealError(f"trial '{data.name}' has no /real/joint_command; use the closed mode")
    if mode == "closed" and data.reference is None:
        raise Sim2RealError(f"trial '{data.name}' has no recorded reference (/reference/joint_trajectory)")
    return mode


def arm_reference(data: TrialData, params: ParameterSet, mode: str) -> JointTrajectory:
    """The joint reference a whole arm trial is simulated with, on the trial's time axis from ``t_0``.

    In ``commands`` mode only its first point matters (the arm starts at rest there): the
    recorded joint angles at ``t_0``.
    """
    assert data.joint_position is not None
    arm = load_arm(params)
    if mode == "commands" or data.reference is None:
        q0 = data.joint_position[0]
        position = np.stack((q0, q0))
        return JointTrajectory(t=np.array([0.0, data.dt]), position=position, velocity=np.zeros((2, 6)),
                               pusher=arm.pusher_position(position))
    ref = data.reference
    return JointTrajectory(t=ref.t - data.t[0], position=ref.position, velocity=ref.velocity,
                           pusher=arm.pusher_position(ref.position))


def _arm_trial(rows: _Rows, data: TrialData, params: ParameterSet, names: tuple[str, ...],
               spec: ResidualSpec) -> None:
    """Whole arm trial: the simulated platform from rest, box residuals and joint positions at every tick."""
    mode = resolve_mode(data, spec.mode)
    reference = arm_reference(data, params, mode)
    initial_box = BoxState(data.box_position[0], data.box_quaternion[0])
    commands = data.command if mode == "commands" else None
    result = simulate_arm_trial(params, reference, initial_box, duration=data.steps * data.dt,
                                grad_names=names, commands=commands)
    weights = spec.weights
    steps = min(result.box.shape[0], data.steps + 1)
    for k in range(1, steps):
        sens = result.d_box[k] if result.d_box is not None else None
        rows.add_pose(result.box[k], sens, data, k, weights)
        if weights.joint_position > 0.0:
            assert data.joint_position is not None
            jac = weights.joint_position * result.d_joint_position[k] if result.d_joint_position is not None else None
            rows.add(weights.joint_position * (result.joint_position[k] - data.joint_position[k]), jac, 2)


def finite_difference_jacobian(data: TrialData, params: ParameterSet, grad_names: Sequence[str],
                               spec: ResidualSpec = ResidualSpec(), relative_step: float = 1e-4) -> np.ndarray:
    """CHECK/BENCHMARK ONLY: central finite differences of :func:`trial_residuals`.

    Never used by the fit. Each column costs two extra simulations of the whole trial;
    the step is ``relative_step * max(|value|, 1e-3 * (upper - lower))``, clipped to the bounds.

    Returns
    -------
    ndarray, shape (m, p)
    """
    from sim2real.params import spec as param_spec

    columns = []
    for name in grad_names:
        entry = param_spec(name)
        value = float(params[name])
        h = relative_step * max(abs(value), 1e-3 * (entry.upper - entry.lower))
        hi, lo = min(value + h, entry.upper), max(value - h, entry.lower)
        r_hi = trial_residuals(data, params.replace({name: hi}), (), spec).residuals
        r_lo = trial_residuals(data, params.replace({name: lo}), (), spec).residuals
        columns.append((r_hi - r_lo) / (hi - lo))
    return np.stack(columns, axis=1)

"""The simulated platform of the mirror: PD → servo model → FK → pusher → contact engine.

Every control period ``dt`` (10 ms, ``sim.dt``):

1. the sim's measured joint state ``(q_k, v_k)`` and the reference at ``t_k`` give the PD
   command ``u_k`` (:mod:`sim2real.control.pd`), or, in ``commands`` mirroring and replay,
   ``u_k`` is taken verbatim from a given command stream;
2. the servo model advances the joints over ``[t_k, t_k+1]`` under the delayed commands
   (:mod:`sim2real.sim.servo`);
3. forward kinematics places the pusher sphere at ``t_k+1``;
4. the contact engine steps the box with the pusher moving from its ``t_k`` to its
   ``t_k+1`` position.

With ``grad_names`` the forward-mode sensitivities of every joint and box state with
respect to those parameters are propagated alongside (engine parameters through the
engine's implicit gradients, ``arm.servo_tau``/``arm.command_delay`` through the servo
model, ``pd.kp``/``pd.kd`` through the PD law, chained by the arm's FK Jacobian).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from sim2real.control.pd import CommandLimits, PDGains, pd_command
from sim2real.control.reference import JointTrajectory, box_start_pose
from sim2real.errors import Sim2RealError
from sim2real.model import ArmModel, load_arm
from sim2real.params import ParameterSet
from sim2real.physics import SolverSettings
from sim2real.sim import BoxState, Reproduction, SolveLog, SolveSummary, Sphere
from sim2real.sim.servo import ServoParams, delay_split, servo_step

FloatArray = NDArray[np.float64]

SERVO_PARAMS = ("arm.servo_tau", "arm.command_delay")
PD_PARAMS = ("pd.kp", "pd.kd")
#: Pusher-box signed distance (m) at or below which the pusher counts as touching the box.
TOUCH_DISTANCE = 1e-4
#: Parameters the engine differentiates (its implicit gradients).
ENGINE_PARAMS = ("box.mass", "box.size_x", "box.size_y", "box.size_z", "box.com_x", "box.com_y", "box.com_z",
                 "contact.mu_table", "contact.mu_pusher")


@dataclass(frozen=True)
class ArmTrialResult:
    """Everything one simulated arm trial produced.

    Attributes
    ----------
    t : ndarray, shape (T+1,)
        Tick times (s) from the trial start.
    joint_position, joint_velocity : ndarray, shape (T+1, 6)
        Sim joint states at the ticks (rad, rad/s).
    command : ndarray, shape (T, 6)
        Joint velocity command sent at each tick (rad/s).
    reference_position, reference_velocity : ndarray, shape (T, 6)
        The reference sampled at each tick.
    pusher : ndarray, shape (T+1, 3)
        Pusher centre (m, base frame).
    box : ndarray, shape (T+1, 13)
        Box state vectors (:meth:`BoxState.as_vector`).
    touched : bool
        Whether the pusher ever came into contact with the box.
    min_pusher_distance : float
        Smallest pusher-box signed distance seen (m).
    min_table_distance : float
        Smallest box-table signed distance seen (m; negative = penetration).
    stop_reason : str
        Why the PD law stopped the arm, or ``""``.
    grad_names : tuple of str
        Parameters of the sensitivities.
    d_box : ndarray, shape (T+1, 13, p) or None
        d box state / d parameters.
    d_joint_position : ndarray, shape (T+1, 6, p) or None
        d joint positions / d parameters.
    outcomes : ndarray, shape (T,), int8
        Contact-solve outcome class of every step (:class:`~sim2real.sim.StepOutcome` codes).
    solve : SolveSummary
        Their tally and worst violations.
    hard_steps : tuple of Reproduction
        Reproduction records of the first recovered or degraded steps.
    """

    t: FloatArray
    joint_position: FloatArray
    joint_velocity: FloatArray
    command: FloatArray
    reference_position: FloatArray
    reference_velocity: FloatArray
    pusher: FloatArray
    box: FloatArray
    touched: bool
    min_pusher_distance: float
    min_table_distance: float
    stop_reason: str
    grad_names: tuple[str, ...] = ()
    d_box: FloatArray | None = None
    d_joint_position: FloatArray | None = None
    outcomes: NDArray[np.int8] = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    solve: SolveSummary = field(default_factory=SolveSummary)
    hard_steps: tuple[Reproduction, ...] = ()


def box_at_distance(distance: float, params: ParameterSet, yaw_deg: float = 0.0) -> BoxState:
    """The box at rest at its start pose (:func:`sim2real.control.reference.box_start_pose`: upright, centre
    ``distance`` m along base x, turned ``yaw_deg`` deg about base z)."""
    position, quaternion = box_start_pose(distance, params, yaw_deg)
    return BoxState(position=position, quaternion=quaternion)


def _check_grad_names(names: Sequence[str]) -> None:
    known = set(ENGINE_PARAMS) | set(SERVO_PARAMS) | set(PD_PARAMS)
    for name in names:
        if name not in known:
            raise Sim2RealError(f"no gradient available for '{name}' in an arm trial "
                                f"(available: {', '.join(sorted(known))})")


class SimPlatform:
    """The mirrored arm in the simulator, advanced one control period at a time.

    The caller supplies one joint-velocity command per tick (from the PD law, from the
    real platform's command stream, or from a bag); the platform applies the servo model
    with its command delay, moves the pusher by FK and steps the box. With ``grad_names``
    it also carries forward-mode sensitivities; the caller passes ``d_command`` (6, p),
    the sensitivity of each command (zero for commands given from outside).

    Parameters
    ----------
    params : ParameterSet
        Simulator parameters (engine, servo, ``sim.dt``).
    initial_q : ndarray, shape (6,)
        Joint angles at ``t = 0`` (rad); the arm starts at rest.
    initial_box : BoxState
        Box state at ``t = 0``.
    arm : ArmModel, optional
        Default: the URDF model with the pusher from ``params``.
    grad_names : sequence of str
        Parameters to propagate sensitivities for.
    strict : bool
        Raise ``SimulationError`` on a step that would be degraded, instead of flagging it.
    context : str
        Names the platform in hard-step records (e.g. ``"trial_02_d0.400 sim"``).

    Attributes
    ----------
    log : SolveLog
        Outcome of every contact solve so far.
    """

    def __init__(self, params: ParameterSet, initial_q: FloatArray, initial_box: BoxState,
                 arm: ArmModel | None = None, grad_names: Sequence[str] = (), strict: bool = False,
                 context: str = "", engine: str = "ours") -> None:
        from sim2real.engines import engine as engine_entry
        from sim2real.engines import make_world

        self.grad_names = tuple(grad_names)
        _check_grad_names(self.grad_names)
        if self.grad_names and not engine_entry(engine).differentiates_arm:
            raise Sim2RealError(f"the {engine} engine does not differentiate the simulated arm")
        self.arm = arm or load_arm(params)
        self.servo = ServoParams.from_params(params)
        self.world = make_world(engine, params, Sphere(float(params["pusher.radius"])),
                                SolverSettings(strict=strict))
        self.log = SolveLog(context)
        self.dt = float(params["sim.dt"])
        self._shift, self._lead = delay_split(self.servo.delay, self.dt)
        self._engine_names = tuple(n for n in self.grad_names if n in ENGINE_PARAMS)
        self._engine_cols = [self.grad_names.index(n) for n in self._engine_names]
        self._col = {name: i for i, name in enumerate(self.grad_names)}
        p = len(self.grad_names)
        self.k = 0
        self.q = np.array(initial_q, dtype=float)
        self.v = np.zeros(6)
        self.box = initial_box
        self._warm = self.world.new_warm_start()  # this trial's previous contact solution
        self.pusher = self.arm.pusher_position(self.q)
        self.touched = False
        self.min_pusher_distance = np.inf
        self.min_table_distance = np.inf
        self._commands: list[FloatArray] = []
        self._d_commands: list[FloatArray] = []
        self.s_q = np.zeros((6, p))
        self.s_v = np.zeros((6, p))
        self.s_box = np.zeros((13, p))
        self._s_pusher = np.zeros((3, p))

    @property
    def t(self) -> float:
        """Time of the current state (s)."""
        return self.k * self.dt

    def step(self, command: FloatArray, d_command: FloatArray | None = None) -> None:
        """Apply ``command`` (6,) rad/s at the current tick and advance by one period."""
        p = len(self.grad_names)
        grad = p > 0
        self._commands.append(np.asarray(command, dtype=float))
        self._d_commands.append(np.zeros((6, p)) if d_command is None else d_command)
        k, zero = self.k, np.zeros(6)
        early_index, late_index = k - self._shift - 1, k - self._shift
        u_early = self._commands[early_index] if early_index >= 0 else zero
        u_late = self._commands[late_index] if late_index >= 0 else zero
        step = servo_step(self.q, self.v, u_early, u_late, self._lead, self.dt, self.servo)
        if grad:
            zero_s = np.zeros((6, p))
            s_early = self._d_commands[early_index] if early_index >= 0 else zero_s
            s_late = self._d_commands[late_index] if late_index >= 0 else zero_s
            s_q = (step.dq_dq0[:, None] * self.s_q + step.dq_dv0[:, None] * self.s_v
                   + step.dq_du_early[:, None] * s_early + step.dq_du_late[:, None] * s_late)
            s_v = (step.dv_dv0[:, None] * self.s_v + step.dv_du_early[:, None] * s_early
                   + step.dv_du_late[:, None] * s_late)
            if "arm.servo_tau" in self._col:
                s_q[:, self._col["arm.servo_tau"]] += step.dq_dtau
                s_v[:, self._col["arm.servo_tau"]] += step.dv_dtau
            if "arm.command_delay" in self._col:
                s_q[:, self._col["arm.command_delay"]] += step.dq_dlead
                s_v[:, self._col["arm.command_delay"]] += step.dv_dlead
        q, v = step.position, step.velocity
        needs_jacobian = grad and bool(np.any(s_q))
        if needs_jacobian:
            pusher_next, pusher_jacobian = self.arm.pusher_kinematics(q)
        else:
            pusher_next = self.arm.pusher_position(q)
        result = self.world.step(self.box, self.pusher, pusher_next, grad=grad, param_names=self._engine_names,
                                 step_index=self.k, warm_start=self._warm)
        self.log.record(result, self.k)
        contact = result.contacts
        self.min_pusher_distance = min(self.min_pusher_distance, float(contact.pusher_distance))
        self.min_table_distance = min(self.min_table_distance, float(contact.table_distance))
        self.touched = self.touched or contact.pusher_distance <= TOUCH_DISTANCE
        if grad:
            # The arm does not depend on the box's or the contact's parameters: for those columns the
            # pusher's sensitivity is zero, and the arm's Jacobian is not needed at all without others.
            assert result.d_state is not None and result.d_pusher_start is not None and result.d_pusher_end is not None
            assert result.d_params is not None
            s_pusher = pusher_jacobian @ s_q if needs_jacobian else np.zeros((3, p))
            s_box = (result.d_state @ self.s_box + result.d_pusher_start @ self._s_pusher
                     + result.d_pusher_end @ s_pusher)
            if self._engine_cols:
                s_box[:, self._engine_cols] += result.d_params
            self.s_q, self.s_v, self.s_box, self._s_pusher = s_q, s_v, s_box, s_pusher
        self.q, self.v, self.box, self.pusher = q, v, result.state, pusher_next
        self.k += 1


class _TrialLog:
    """The arrays of an :class:`ArmTrialResult` (T ticks, ``p`` sensitivities), filled tick by tick.

    Empty arrays for ``n_steps`` ticks, with the platform's state at ``t = 0`` in row 0; the attributes
    are the result's array fields, by name.
    """

    def __init__(self, platform: SimPlatform, n_steps: int, p: int) -> None:
        self.t = (np.arange(n_steps + 1) * platform.dt).astype(np.float64, copy=False)
        self.joint_position = np.empty((n_steps + 1, 6))
        self.joint_velocity = np.empty((n_steps + 1, 6))
        self.command = np.zeros((n_steps, 6))
        self.reference_position = np.empty((n_steps, 6))
        self.reference_velocity = np.empty((n_steps, 6))
        self.pusher = np.empty((n_steps + 1, 3))
        self.box = np.empty((n_steps + 1, 13))
        self.d_box = np.zeros((n_steps + 1, 13, p)) if p else None
        self.d_joint_position = np.zeros((n_steps + 1, 6, p)) if p else None
        self.joint_position[0], self.joint_velocity[0] = platform.q, platform.v
        self.pusher[0], self.box[0] = platform.pusher, platform.box.as_vector()

    def result(self, platform: SimPlatform, stop_reason: str) -> ArmTrialResult:
        """The trial's result: these arrays and what ``platform`` kept (contact extremes, outcomes)."""
        return ArmTrialResult(
            t=self.t, joint_position=self.joint_position, joint_velocity=self.joint_velocity, command=self.command,
            reference_position=self.reference_position, reference_velocity=self.reference_velocity,
            pusher=self.pusher, box=self.box, d_box=self.d_box, d_joint_position=self.d_joint_position,
            touched=platform.touched, min_pusher_distance=float(platform.min_pusher_distance),
            min_table_distance=float(platform.min_table_distance), stop_reason=stop_reason,
            grad_names=platform.grad_names, outcomes=platform.log.outcomes, solve=platform.log.summary(),
            hard_steps=tuple(platform.log.hard_steps))

    def record(self, k: int, platform: SimPlatform) -> None:
        """Store the platform's state after tick ``k`` in row ``k + 1``."""
        self.joint_position[k + 1], self.joint_velocity[k + 1] = platform.q, platform.v
        self.pusher[k + 1], self.box[k + 1] = platform.pusher, platform.box.as_vector()
        if self.d_box is not None and self.d_joint_position is not None:
            self.d_box[k + 1] = platform.s_box
            self.d_joint_position[k + 1] = platform.s_q


@dataclass
class _PDDriver:
    """The PD law closing the loop on the sim platform, with its command's sensitivity (6, p).

    ``col`` maps the sensitivity parameters to their columns; ``previous`` (6,) rad/s and ``d_previous``
    (6, p) are the last command and its sensitivity; ``stop_reason`` is the first stop of the law, or ``""``.
    """

    gains: PDGains
    limits: CommandLimits
    dt: float
    col: dict[str, int]
    previous: FloatArray
    d_previous: FloatArray
    stop_reason: str = ""

    def command(self, platform: SimPlatform, t_k: float, q_ref: FloatArray, v_ref: FloatArray
                ) -> tuple[FloatArray, FloatArray | None]:
        """The command (6,) rad/s at tick time ``t_k`` s towards the reference ``(q_ref, v_ref)`` (6,) each,
        and its sensitivity (6, p) (None without sensitivities)."""
        q, v = platform.q, platform.v
        out = pd_command(q_ref, v_ref, q, v, self.gains, self.limits, self.previous, self.dt)
        if out.stopped and not self.stop_reason:
            self.stop_reason = f"t = {t_k:.2f} s: {out.reason}"
        u = out.velocity
        d_command = None
        if self.col:
            # Unclamped joints: derivative of the PD law; rate-limited joints: that of the
            # previous command (u_k = u_k-1 ± a dt); velocity-clamped or stopped: zero.
            d_law = -self.gains.kp * platform.s_q - self.gains.kd * platform.s_v
            if "pd.kp" in self.col:
                d_law[:, self.col["pd.kp"]] += q_ref - q
            if "pd.kd" in self.col:
                d_law[:, self.col["pd.kd"]] += v_ref - v
            d_command = np.where(out.active[:, None], d_law,
                                 np.where(out.rate_limited[:, None], self.d_previous, 0.0))
            self.d_previous = d_command
        self.previous = u
        return u, d_command


def simulate_arm_trial(params: ParameterSet, reference: JointTrajectory, initial_box: BoxState,
                       duration: float | None = None, grad_names: Sequence[str] = (),
                       commands: FloatArray | None = None, arm: ArmModel | None = None,
                       limits: CommandLimits | None = None, strict: bool = False,
                       context: str = "", engine: str = "ours") -> ArmTrialResult:
    """Run the sim platform for one trial under the PD law (or given commands).

    Parameters
    ----------
    params : ParameterSet
        Simulator parameters (engine, servo, PD, ``sim.dt``).
    reference : JointTrajectory
        The joint reference; the arm starts at rest at its first point.
    initial_box : BoxState
        Box state at ``t = 0``.
    duration : float, optional
        Trial length (s); default: the reference length.
    grad_names : sequence of str
        Parameters to propagate sensitivities for.
    commands : ndarray, shape (T, 6), optional
        Drive the servo with these joint-velocity commands (rad/s, one per tick) instead of
        the PD law (``commands`` mirroring, replay).
    arm : ArmModel, optional
        Default: the URDF model with the pusher from ``params``.
    limits : CommandLimits, optional
        Default: the arm's limits, no workspace box.
    strict : bool
        Raise ``SimulationError`` on a step that would be degraded (default: flag it in ``solve``).
    context : str
        Names the trial in hard-step records.
    engine : str
        ``"ours"`` (default) or ``"mujoco"`` (forward simulation only).
    """
    platform = SimPlatform(params, reference.position[0], initial_box, arm=arm, grad_names=grad_names,
                           strict=strict, context=context, engine=engine)
    arm = platform.arm
    limits = limits or CommandLimits.for_arm(arm, params)
    gains = PDGains.from_params(params)
    dt = platform.dt
    duration = float(reference.t[-1] if duration is None else duration)
    n_steps = round(duration / dt) if commands is None else len(commands)
    grad_names = platform.grad_names
    p = len(grad_names)
    log = _TrialLog(platform, n_steps, p)
    driver = _PDDriver(gains, limits, dt, {name: i for i, name in enumerate(grad_names)}, np.zeros(6), np.zeros((6, p)))
    for k in range(n_steps):
        q_ref, v_ref = reference.sample(log.t[k])
        log.reference_position[k], log.reference_velocity[k] = q_ref, v_ref
        d_command: FloatArray | None = None
        if commands is not None:
            u = np.asarray(commands[k], dtype=float)
        else:
            u, d_command = driver.command(platform, log.t[k], q_ref, v_ref)
        log.command[k] = u
        platform.step(u, d_command)
        log.record(k, platform)

    return log.result(platform, driver.stop_reason)

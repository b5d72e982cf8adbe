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
    state (box state rebuilt from consecutive poses, see :func:`sim2real.sysid.problem.data.box_states`;
    joint state as recorded) and is simulated ``N`` steps. ``N = 1`` is the one-step
    residual of Dojo's system identification (eqs. 55-57). In arm trials the pusher follows
    the recorded joint states through forward kinematics, and the joints are simulated by the
    servo model from the recorded commands, so box and servo residuals each see recorded inputs.
    The pusher of the box segments is played back from the source :attr:`ResidualSpec.pusher`
    picks (the recorded pusher pose when there is one, else FK of the recorded joint states;
    see :mod:`sim2real.sysid.problem.inputs`).
``horizon = None`` (``trial``)
    One free rollout of the whole trial from its first recorded state. Arm trials run the
    simulated platform (servo → FK → pusher → engine) driven by the recorded real commands
    (``mode="commands"``) or by the recorded reference under the PD law (``mode="closed"``);
    in ``kinematic`` and ``pusher`` modes the box is driven by the played-back pusher path.
    A mode whose inputs the trial lacks is an error naming the missing topic.

Solver outcomes
---------------
Every engine step reports whether it converged, was recovered by the escalation ladder or is
*degraded* (:class:`sim2real.sim.StepOutcome`). Residual rows that depend on a degraded
step — the box rows at and after it within the same segment or rollout — are flagged in
:attr:`TrialResiduals.dropped`; the fit leaves them out. The outcome tally and the first hard
steps (reproduction records) come with the residuals.

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
from typing import Any

import numpy as np

from sim2real.engines import engine as engine_entry
from sim2real.engines import make_world
from sim2real.errors import InputError, Sim2RealError
from sim2real.params import ParameterSet
from sim2real.physics import SolverSettings
from sim2real.sim import STATE_SIZE, BoxState, SolveLog, SolveSummary, StepOutcome, World, rollout
from sim2real.sim.servo import ServoParams, delay_split, servo_step
from sim2real.sim.trajectory import Trajectory
from sim2real.sysid.problem import (
    SIMULATED_ARM_MODES,
    ColumnMap,
    TrialData,
    box_states,
    check_pusher_shape,
    check_start_above_table,
    pusher_path,
    pusher_placement,
    pusher_primitive,
    resolve_pusher,
    trial_shape,
)
from sim2real.sysid.residuals.arm_trials import arm_solve, simulate_recorded_arm
from sim2real.sysid.residuals.types import (  # noqa: F401  (also this module's public names)
    COM_PARAMS,
    GROUPS,
    MAX_HARD_STEPS,
    ResidualSpec,
    TrialResiduals,
    Weights,
    available_gradients,
    pose_residual,
    pose_residuals,
)
from sim2real.trials.trial_object import object_values


def step_params(data: TrialData, params: ParameterSet, exact_gradients: bool = False,
                fitted: Sequence[str] = ()) -> ParameterSet:
    """The parameters a trial is simulated with, checked against its start.

    The trial's own object values (box size and mass, pusher radius, ...: ``data.object_params``)
    replace the values of ``params`` that are still at their nominal value and not ``fitted``: a
    value someone set (a parameter file, ``--set``, a fit's free parameter) is kept. ``sim.dt`` is
    set to the trial's grid step where it has its own, and with ``exact_gradients`` the gradient
    central-path value to the forward one.

    Raises
    ------
    Sim2RealError
        The box's recorded start lies inside the table (deeper than :data:`MAX_START_DEPTH`) with
        these parameters: its size or the frames are wrong; the message names the trial.
    """
    changes: dict[str, float] = object_values(data.object_params, params, fitted)
    if data.dt_override:
        changes["sim.dt"] = data.dt
    if exact_gradients:
        changes["contact.kappa_grad"] = float(params["contact.kappa_sim"])
    params = params.replace(changes) if changes else params
    check_start_above_table(data, params)
    return params


class _Rows:
    """Accumulates residual rows, their Jacobian rows and group codes."""

    def __init__(self, p: int, context: str = "") -> None:
        self.p = p
        self.r: list[np.ndarray] = []
        self.j: list[np.ndarray] = []
        self.g: list[np.ndarray] = []
        self.d: list[np.ndarray] = []
        self.log = SolveLog(context)
        self.summaries: list[SolveSummary] = []
        self.hard_steps: list[Any] = []

    def add(self, residual: np.ndarray, jacobian: np.ndarray | None, group: int, dropped: bool = False) -> None:
        self.r.append(residual)
        self.j.append(jacobian if jacobian is not None else np.zeros((residual.shape[0], self.p)))
        self.g.append(np.full(residual.shape[0], group, dtype=int))
        self.d.append(np.full(residual.shape[0], dropped, dtype=bool))

    def add_pose(self, state: np.ndarray, sens: np.ndarray | None, data: TrialData, k: int,
                 weights: Weights, dropped: bool = False) -> None:
        residual, d_residual = pose_residual(state, data.box_position[k], data.box_quaternion[k], weights)
        jac = d_residual @ sens if sens is not None else None
        if weights.position > 0.0:
            self.add(residual[:3], None if jac is None else jac[:3], 0, dropped)
        if weights.orientation > 0.0:
            self.add(residual[3:], None if jac is None else jac[3:], 1, dropped)

    def add_poses(self, states: np.ndarray, sens: np.ndarray | None, data: TrialData, first: int,
                  weights: Weights, dropped: np.ndarray) -> None:
        """:meth:`add_pose` for the states (n, 13) compared with recorded samples ``first .. first + n - 1``
        (``sens`` (n, 13, p) or None; ``dropped`` (n,) bool), in the same row order."""
        count = states.shape[0]
        if count == 0:
            return
        stop = first + count
        residual, d_residual = pose_residuals(states, data.box_position[first:stop], data.box_quaternion[first:stop],
                                              weights)
        parts = [part for part, weight in ((slice(0, 3), weights.position), (slice(3, 6), weights.orientation))
                 if weight > 0.0]
        if not parts:
            return
        columns = np.r_[tuple(parts)]
        rows = residual[:, columns].reshape(-1)
        if sens is not None:
            jac = np.matmul(d_residual[:, columns], sens).reshape(-1, self.p)
        else:
            jac = np.zeros((rows.shape[0], self.p))
        groups = np.concatenate([np.full(3, g) for g, (_, weight) in enumerate(
            ((0, weights.position), (1, weights.orientation))) if weight > 0.0])
        self.r.append(rows)
        self.j.append(jac)
        self.g.append(np.tile(groups, count).astype(int))
        self.d.append(np.repeat(np.asarray(dropped, dtype=bool), columns.size))

    def add_solve(self, summary: SolveSummary | None, hard_steps: Sequence[Any]) -> None:
        """Count the engine outcomes of a rollout run outside :attr:`log`."""
        if summary is not None:
            self.summaries.append(summary)
        self.hard_steps.extend(hard_steps)

    def solve(self) -> tuple[SolveSummary | None, tuple[Any, ...]]:
        """The outcome tally of every engine step counted, and the first hard steps."""
        own = self.log.summary()
        summary = own if own.steps else None
        for other in self.summaries:
            summary = other if summary is None else summary.merged(other)
        hard = (list(self.log.hard_steps) + self.hard_steps)[:MAX_HARD_STEPS]
        return summary, tuple(hard)

    def build(self, name: str, grad_names: tuple[str, ...], grad: bool) -> TrialResiduals:
        """The trial's :class:`TrialResiduals` (``grad_names``: one per Jacobian column)."""
        summary, hard = self.solve()
        if not self.r:
            return TrialResiduals(name, np.zeros(0), np.zeros((0, self.p)) if grad else None,
                                  np.zeros(0, dtype=int), grad_names, None, summary, hard)
        dropped = np.concatenate(self.d)
        return TrialResiduals(name, np.concatenate(self.r), np.concatenate(self.j) if grad else None,
                              np.concatenate(self.g), grad_names, dropped if dropped.any() else None, summary, hard)


def trial_residuals(data: TrialData, params: ParameterSet, grad_names: Sequence[str] = (),
                    spec: ResidualSpec = ResidualSpec(), columns: Sequence[int] | None = None) -> TrialResiduals:
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
        Horizon, weights, mode, pusher source and strictness.
    columns : sequence of int, optional
        The Jacobian column of each of ``grad_names`` (covering 0 .. p-1): names sharing a column are
        differentiated together, along the direction that moves them all at once (a tie), which the
        engine does once instead of once per name. None: one column per name.

    Returns
    -------
    TrialResiduals
        With the rows that depend on degraded engine steps flagged in ``dropped``; ``grad_names``
        holds the first name of each Jacobian column.

    Raises
    ------
    Sim2RealError
        A parameter without a gradient for this trial, a mode or pusher source whose topics
        the trial lacks, or (strict mode) a step that does not converge; the message names
        the trial.
    """
    return residuals_of(data, params, ColumnMap.of(grad_names, columns), spec)


def residuals_of(data: TrialData, params: ParameterSet, cols: ColumnMap, spec: ResidualSpec = ResidualSpec()
                 ) -> TrialResiduals:
    """:func:`trial_residuals` with the Jacobian's columns given as one :class:`ColumnMap` (a fit's, built once
    from its free set by :attr:`~sim2real.sysid.problem.objects.ObjectLayout.columns`)."""
    names = cols.names
    mode = spec.resolved_mode(data)
    available = available_gradients(data.kind, spec.horizon, mode, spec.engine)
    for name in names:
        if name not in available:
            raise InputError(f"trial '{data.name}': no simulator gradient for '{name}' with horizon "
                                f"{spec.label} (available: {', '.join(available)})")
    rows = _Rows(cols.p, data.name)
    sim_params = step_params(data, params, spec.exact_gradients and bool(names), fitted=names)
    settings = SolverSettings(strict=spec.strict)
    try:
        if spec.horizon is None:
            _whole_trial(rows, data, sim_params, cols, spec, mode, settings)
        else:
            # Groups weighted zero are not simulated at all (e.g. a servo fit on joint states only).
            weights = spec.weights
            if weights.position > 0.0 or weights.orientation > 0.0:
                source = resolve_pusher(data, spec.pusher)
                shape = trial_shape(data, spec.pusher_shape)
                check_pusher_shape(data, source, shape)
                pusher = pusher_path(data, sim_params, source)
                _box_segments(rows, data, sim_params, cols, spec.horizon, weights, pusher, shape,
                              settings, spec.engine)
            if (data.kind == "arm" and data.command is not None
                    and (weights.joint_position > 0.0 or weights.joint_velocity > 0.0)):
                _joint_segments(rows, data, sim_params, cols, spec.horizon, weights)
    except Sim2RealError as err:
        text = str(err)
        raise type(err)(text if text.startswith(f"trial '{data.name}'") else f"trial '{data.name}': {text}",
                        option=err.option) from None  # the same kind and option, named after its trial
    firsts = tuple(names[cols.column.index(c)] for c in range(cols.p))
    return rows.build(data.name, firsts, bool(names))


def _whole_trial(rows: _Rows, data: TrialData, params: ParameterSet, cols: ColumnMap, spec: ResidualSpec,
                 mode: str, settings: SolverSettings) -> None:
    """One rollout of the whole trial in the resolved ``mode``."""
    if mode == "box":
        _box_rollout(rows, data, params, cols, spec.weights, settings, spec.engine)
    elif mode in SIMULATED_ARM_MODES:
        if not engine_entry(spec.engine).differentiates_arm:
            raise InputError(f"the {spec.engine} engine does not differentiate the simulated arm (mode '{mode}'); "
                             "fit in the kinematic or pusher mode (the pusher played back), or with an engine that "
                             "does ('ours')", option="mode")
        _arm_trial(rows, data, params, cols, spec.weights, mode, settings.strict)
    else:
        source = "recorded" if mode == "pusher" else resolve_pusher(data, spec.pusher)
        check_pusher_shape(data, source, trial_shape(data, spec.pusher_shape))
        path = pusher_path(data, params, source)
        assert path is not None
        _pusher_rollout(rows, data, params, cols, spec.weights, path, trial_shape(data, spec.pusher_shape), settings,
                        spec.engine)


def _moves_start(names: Sequence[str]) -> bool:
    """Whether a free parameter moves the start state rebuilt from poses (a centre-of-mass offset)."""
    return any(name in COM_PARAMS for name in names)


def _initial_sensitivity(cols: ColumnMap, d_com: np.ndarray) -> np.ndarray:
    """d start state / d parameters (13, p): the centre-of-mass offsets move the state rebuilt from poses
    (``d_com`` (13, 3), per body-frame axis)."""
    sens = np.zeros((13, cols.p))
    for axis, com_name in enumerate(COM_PARAMS):
        column = cols.where(com_name)
        if column is not None:
            sens[:, column] += d_com[:, axis]
    return sens


def first_degraded_state(outcomes: np.ndarray | None) -> int | None:
    """Index of the first state produced by a degraded step (step ``t`` produces state ``t + 1``).

    Parameters
    ----------
    outcomes : ndarray, shape (T,) or None
        :class:`~sim2real.sim.StepOutcome` code per step.

    Returns
    -------
    int or None
        None when no step is degraded.
    """
    if outcomes is None:
        return None
    degraded = np.flatnonzero(np.asarray(outcomes) >= int(StepOutcome.DEGRADED))
    return int(degraded[0]) + 1 if degraded.size else None


def _box_segments(rows: _Rows, data: TrialData, params: ParameterSet, cols: ColumnMap, horizon: int,
                  weights: Weights, pusher: np.ndarray | None, shape: str, settings: SolverSettings,
                  engine: str = "ours") -> None:
    """Teacher-forced segments of ``horizon`` steps (box); segments start at k = 1, 1 + N, ...

    ``pusher`` (K+1, 3) holds the played-back pusher positions (None: no pusher), ``shape`` its
    shape (``"sphere"`` or ``"rod"``, :func:`~sim2real.sysid.problem.inputs.pusher_placement`).
    """
    if pusher is not None:
        pusher = pusher_placement(pusher, params, shape)
    world = make_world(engine, params, pusher_primitive(params, shape) if pusher is not None else None, settings)
    engine_names, engine_cols = cols.subset(world.differentiable)
    grad = bool(cols.names)
    com = np.array([float(params[n]) for n in COM_PARAMS])
    states, d_com = box_states(data, com)
    K = data.steps
    if grad and horizon > 1 and world.gradient_method != "implicit":
        _box_segment_rollouts(rows, data, world, cols, engine_names, engine_cols, horizon, weights, pusher, states,
                              d_com)
        return
    # One trajectory holds every segment; its warm start carries over, since consecutive segments start from
    # nearby recorded states (the last solution is close). The rows of all segments (states 2 .. K) are added
    # at once, the states from copies: the next segment's recorded start overwrites this segment's simulated
    # end. The sensitivities need none: a step writes only the row after it, never a segment's start.
    # Tied names share a column: the engine differentiates along the tie once (Trajectory's columns).
    traj = Trajectory.empty(K, pusher, engine_names, engine_cols, cols.p if grad else 0, log=rows.log)
    simulated: list[np.ndarray] = []
    degraded: list[np.ndarray] = []
    for start in range(1, K, horizon):
        stop = min(start + horizon, K)
        traj.states[start] = states[start]
        running = _initial_sensitivity(cols, d_com[start]) if grad else None
        world.advance(traj, start, stop, running)
        simulated.append(traj.states[start + 1:stop + 1].copy())
        degraded.append(np.cumsum(traj.outcomes[start:stop] >= int(StepOutcome.DEGRADED)) > 0)
    if simulated:
        rows.add_poses(np.concatenate(simulated), traj.sens[2:K + 1] if traj.sens is not None else None, data, 2,
                       weights, np.concatenate(degraded))


def _joint_segments(rows: _Rows, data: TrialData, params: ParameterSet, cols: ColumnMap, horizon: int,
                    weights: Weights) -> None:
    """Teacher-forced servo segments: joints from the recorded state under the recorded commands."""
    if weights.joint_position == 0.0 and weights.joint_velocity == 0.0:
        return
    assert data.command is not None and data.joint_position is not None and data.joint_velocity is not None
    servo = ServoParams.from_params(params)
    shift, lead = delay_split(servo.delay, data.dt)
    p = cols.p
    col_tau, col_delay = cols.where("arm.servo_tau"), cols.where("arm.command_delay")
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


def _box_segment_rollouts(rows: _Rows, data: TrialData, world: World, cols: ColumnMap,
                          engine_names: tuple[str, ...], engine_cols: list[int], horizon: int, weights: Weights,
                          pusher: np.ndarray | None, states: np.ndarray, d_com: np.ndarray) -> None:
    """:func:`_box_segments` for engines without implicit gradients: each segment is one rollout, its
    sensitivities central differences of whole segments (chained step differences compound kinks)."""
    K = data.steps
    for start in range(1, K, horizon):
        stop = min(start + horizon, K)
        path = pusher[start:stop + 1] if pusher is not None else None
        result = rollout(world, BoxState.from_vector(states[start]), path, steps=stop - start,
                         grad_names=engine_names, initial_grad=_moves_start(cols.names), context=data.name)
        rows.add_solve(result.solve, result.hard_steps)
        first_bad = first_degraded_state(result.outcomes)
        init = _initial_sensitivity(cols, d_com[start])
        for i in range(1, stop - start + 1):
            assert result.sensitivities is not None
            sens = (result.initial_sensitivities[i] @ init if result.initial_sensitivities is not None
                    else np.zeros((STATE_SIZE, cols.p)))
            if engine_cols:
                np.add.at(sens.T, engine_cols, result.sensitivities[i].T)  # tied names add up
            rows.add_pose(result.states[i], sens, data, start + i, weights, first_bad is not None and i >= first_bad)


def _box_rollout(rows: _Rows, data: TrialData, params: ParameterSet, cols: ColumnMap,
                 weights: Weights, settings: SolverSettings, engine: str = "ours") -> None:
    """Whole box-only trial: one rollout from the state rebuilt from the first two poses."""
    world = make_world(engine, params, None, settings)
    com = np.array([float(params[n]) for n in COM_PARAMS])
    states, d_com = box_states(data, com)
    grad = bool(cols.names)
    result = rollout(world, BoxState.from_vector(states[1]), steps=data.steps - 1, grad_names=cols.names,
                     initial_grad=grad and _moves_start(cols.names), context=data.name)
    rows.add_solve(result.solve, result.hard_steps)
    first_bad = first_degraded_state(result.outcomes)
    for j in range(1, result.states.shape[0]):
        sens = None
        if grad:
            assert result.sensitivities is not None
            sens = cols.placed(result.sensitivities[j])
            if result.initial_sensitivities is not None:
                sens = sens + result.initial_sensitivities[j] @ _initial_sensitivity(cols, d_com[1])
        rows.add_pose(result.states[j], sens, data, j + 1, weights, first_bad is not None and j >= first_bad)


def _pusher_rollout(rows: _Rows, data: TrialData, params: ParameterSet, cols: ColumnMap, weights: Weights,
                    path: np.ndarray, shape: str, settings: SolverSettings, engine: str = "ours") -> None:
    """Whole trial with a played-back pusher: one rollout from the resting start (:meth:`TrialData.start_box`).

    ``path`` (K+1, 3) holds the pusher positions, ``shape`` is ``"sphere"`` or ``"rod"``
    (:func:`~sim2real.sysid.problem.inputs.pusher_placement`).
    """
    world = make_world(engine, params, pusher_primitive(params, shape), settings)
    initial = BoxState(*data.start_box())
    result = rollout(world, initial, pusher_path=pusher_placement(path, params, shape), grad_names=cols.names,
                     context=data.name)
    rows.add_solve(result.solve, result.hard_steps)
    first_bad = first_degraded_state(result.outcomes)
    for k in range(1, result.states.shape[0]):
        sens = cols.placed(result.sensitivities[k]) if result.sensitivities is not None else None
        rows.add_pose(result.states[k], sens, data, k, weights, first_bad is not None and k >= first_bad)


def _arm_trial(rows: _Rows, data: TrialData, params: ParameterSet, cols: ColumnMap,
               weights: Weights, mode: str, strict: bool) -> None:
    """Whole arm trial: the simulated platform from rest, box residuals and joint positions at every tick."""
    result = simulate_recorded_arm(data, params, mode, cols.names, strict)
    summary, hard, outcomes = arm_solve(result)
    rows.add_solve(summary, hard)
    first_bad = first_degraded_state(outcomes)
    steps = min(result.box.shape[0], data.steps + 1)
    for k in range(1, steps):
        sens = cols.placed(result.d_box[k]) if result.d_box is not None else None
        rows.add_pose(result.box[k], sens, data, k, weights, first_bad is not None and k >= first_bad)
        if weights.joint_position > 0.0:
            assert data.joint_position is not None
            jac = (weights.joint_position * cols.placed(result.d_joint_position[k])
                   if result.d_joint_position is not None else None)
            # Joint rows do not depend on the box (the pusher is kinematic): never dropped.
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

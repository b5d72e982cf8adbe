"""Replay recorded trials in the simulator, offline, with the recorded timing.

:func:`replay` re-simulates one trial and returns it as a :class:`TrialRecord` whose ``sim``
platform holds the replay (same topics and schema as a recorded sim platform) next to the
recorded ``real`` platform, so it can be written with :func:`sim2real.trials.write_trial` and
compared by the report; with it come the engine's outcome tally (also in the record's
``meta["solver"]["sim"]``) and the hard steps met.

Modes (see :mod:`sim2real.sysid.problem.inputs` for what each needs; a missing input is an error
naming the trial and the topic):

``commands``
    The simulated platform (servo → FK → pusher → engine) driven by the recorded joint
    commands at their recorded ticks (the mirrored ``commands`` mode, offline).
``closed``
    The simulated platform under the PD law on the recorded reference.
``kinematic``
    The arm played back from the recorded joint states; the pusher follows the recorded
    motion: the recorded pusher pose when there is one, else FK of the joint states
    (``pusher`` chooses).
``pusher``
    The pusher driven by the recorded ``/<ns>/pusher_pose`` positions (no joint states needed).
``auto``
    ``commands`` / ``closed`` for arm trials (as recorded), ``pusher`` for trials with a pusher
    pose but no joint states, and a free rollout for box-only trials (cube tosses: from the
    state rebuilt from the first two recorded poses).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim2real.control.sim_platform import ArmTrialResult
from sim2real.engines import make_world
from sim2real.errors import InputError, Sim2RealError
from sim2real.params import ParameterSet
from sim2real.physics import SolverSettings
from sim2real.sim import BoxState, SolveSummary, rollout
from sim2real.sysid.problem import (
    MODES,
    SIMULATED_ARM_MODES,
    TrialData,
    TrialInputError,
    box_states,
    check_pusher_shape,
    describe_pusher,
    mode_pusher_source,
    prepare_trial,
    pusher_path,
    pusher_placement,
    pusher_primitive,
    recorded_platform,
    resolve_mode,
    trial_shape,
)
from sim2real.sysid.residuals import COM_PARAMS, MAX_HARD_STEPS, arm_solve, simulate_recorded_arm, step_params
from sim2real.trials import JointSeries, PlatformRecord, PoseSeries, TrialRecord

#: Replay modes (``auto`` resolves per trial).
REPLAY_MODES: tuple[str, ...] = MODES


@dataclass(frozen=True)
class ReplayResult:
    """One replayed trial.

    Attributes
    ----------
    record : TrialRecord
        Platforms ``real`` (the recording) and ``sim`` (the replay); meta with ``"mode":
        "replay"``, ``"mirror"`` (the mode used), ``"pusher"``, ``"params"`` and ``"solver"``.
    mode : str
        The mode used (``auto`` resolved): ``commands``, ``closed``, ``kinematic``, ``pusher`` or ``box``.
    pusher : str
        Where the pusher came from, in words.
    solve : SolveSummary or None
        Engine outcome tally of the replay (None when the engine reported none).
    hard_steps : tuple of HardStep
        The first (at most 20) recovered or degraded steps, for reproduction files.
    """

    record: TrialRecord
    mode: str
    pusher: str
    solve: SolveSummary | None
    hard_steps: tuple[Any, ...] = field(default=(), repr=False)


def platform_from_arm_result(result: ArmTrialResult, t0: float = 0.0) -> PlatformRecord:
    """A platform record (joint states, commands, box and pusher poses) of a simulated arm trial.

    Parameters
    ----------
    result : ArmTrialResult
        From :func:`sim2real.control.sim_platform.simulate_arm_trial`.
    t0 : float
        Time of tick 0 on the trial's time axis, s.
    """
    t = t0 + result.t
    identity = np.tile([1.0, 0.0, 0.0, 0.0], (t.shape[0], 1))
    return PlatformRecord(
        joint_states=JointSeries.from_arrays(t, result.joint_position, result.joint_velocity),
        joint_command=JointSeries.from_arrays(t[:-1], position=result.reference_position, velocity=result.command),
        box_pose=PoseSeries(t, result.box[:, 0:3], result.box[:, 3:7]),
        pusher_pose=PoseSeries(t, result.pusher, identity),
    )


def _box_platform(t: np.ndarray, states: np.ndarray, pusher: np.ndarray | None = None,
                  joints: tuple[np.ndarray, np.ndarray] | None = None) -> PlatformRecord:
    pusher_pose = None
    if pusher is not None:
        pusher_pose = PoseSeries(t, pusher, np.tile([1.0, 0.0, 0.0, 0.0], (t.shape[0], 1)))
    joint_states = JointSeries.from_arrays(t, joints[0], joints[1]) if joints is not None else None
    return PlatformRecord(joint_states=joint_states, box_pose=PoseSeries(t, states[:, 0:3], states[:, 3:7]),
                          pusher_pose=pusher_pose)


def _replay_box_only(data: TrialData, params: ParameterSet, settings: SolverSettings,
                     engine: str = "ours") -> tuple[PlatformRecord, Any]:
    world = make_world(engine, params, None, settings)
    states, _ = box_states(data, np.array([float(params[n]) for n in COM_PARAMS]))
    result = rollout(world, BoxState.from_vector(states[1]), steps=data.steps - 1, context=data.name)
    return _box_platform(data.t[1:], result.states), result


def _replay_pusher_path(data: TrialData, params: ParameterSet, pusher: np.ndarray,
                        joints: tuple[np.ndarray, np.ndarray] | None,
                        settings: SolverSettings, shape: str = "sphere",
                        engine: str = "ours") -> tuple[PlatformRecord, Any]:
    """Roll the box out under the pusher positions ``pusher`` (K+1, 3), m, of the given ``shape``."""
    world = make_world(engine, params, pusher_primitive(params, shape), settings)
    initial = BoxState(*data.start_box())
    result = rollout(world, initial, pusher_path=pusher_placement(pusher, params, shape), context=data.name)
    return _box_platform(data.t, result.states, pusher, joints), result


def simulate_data(data: TrialData, params: ParameterSet, mode: str, source: str,
                  strict: bool = False, pusher_shape: str = "sphere",
                  engine: str = "ours") -> tuple[PlatformRecord, SolveSummary | None, tuple[Any, ...]]:
    """Simulate one whole trial: the replayed platform, its outcome tally and hard steps.

    Parameters
    ----------
    data : TrialData
        The recording on its grid.
    params : ParameterSet
        Simulator parameters, already adapted to the trial (:func:`step_params`).
    mode : str
        The resolved mode: ``commands``, ``closed``, ``kinematic``, ``pusher`` or ``box``.
    source : str
        Where a played-back pusher comes from (:func:`~sim2real.sysid.problem.inputs.mode_pusher_source`).
    strict : bool
        Raise on the first engine step that does not converge.
    pusher_shape : str
        ``"sphere"`` or ``"rod"`` (a recorded pusher only; :mod:`sim2real.sysid.problem.inputs`), for a
        trial that does not carry its own.
    engine : str
        ``"ours"`` or ``"mujoco"`` (:mod:`sim2real.engines`).

    Raises
    ------
    Sim2RealError
        A rod with the arm's pusher, or a simulation failure.
    """
    pusher_shape = trial_shape(data, pusher_shape)
    check_pusher_shape(data, source, pusher_shape)
    settings = SolverSettings(strict=strict)
    if mode in SIMULATED_ARM_MODES:
        arm: ArmTrialResult = simulate_recorded_arm(data, params, mode, strict=strict, engine=engine)
        summary, hard, _ = arm_solve(arm)
        return platform_from_arm_result(arm, float(data.t[0])), summary, hard
    if mode == "box":
        platform, result = _replay_box_only(data, params, settings, engine)
    else:
        path = pusher_path(data, params, source)
        assert path is not None
        joints = None
        if mode == "kinematic":
            assert data.joint_position is not None and data.joint_velocity is not None
            joints = (data.joint_position, data.joint_velocity)
        platform, result = _replay_pusher_path(data, params, path, joints, settings, pusher_shape, engine)
    return platform, result.solve, tuple(result.hard_steps)[:MAX_HARD_STEPS]


def _replay_meta(record: TrialRecord, ns: str, params: ParameterSet, mode: str, pusher: str,
                 summary: SolveSummary | None, pusher_shape: str = "sphere", engine: str = "ours") -> dict[str, Any]:
    meta = {k: v for k, v in record.meta.items() if k not in ("outcomes", "topics", "written", "schema", "versions")}
    recorded_solver = meta.pop("solver", None)
    solver: dict[str, Any] = {}
    if ns == "real" and isinstance(recorded_solver, dict) and "real" in recorded_solver:
        solver["real"] = recorded_solver["real"]
    if summary is not None:
        solver["sim"] = summary.as_dict()
    meta.update({"mode": "replay", "mirror": mode, "pusher": pusher, "pusher_shape": pusher_shape, "engine": engine,
                 "params": params.as_dict(),
                 "replay_of": record.name, "complete": True, "solver": solver})
    return meta


def _named(name: str, err: Exception) -> str:
    text = " ".join(str(err).split())
    return text if f"'{name}'" in text else f"replay of trial '{name}': {text}"


def replay(record: TrialRecord, params: ParameterSet, mode: str = "auto", platform: str = "auto",
           pusher: str = "auto", strict: bool = False, pusher_shape: str = "sphere",
           engine: str = "ours") -> ReplayResult:
    """Re-simulate one recorded trial with ``params``.

    Parameters
    ----------
    record : TrialRecord
        The recorded trial.
    params : ParameterSet
        Simulator parameters of the replay.
    mode : str
        ``"auto"``, ``"commands"``, ``"closed"``, ``"kinematic"`` or ``"pusher"`` (module docstring).
    platform : str
        Recording that drives the replay: ``"real"``, ``"sim"`` or ``"auto"``.
    pusher : str
        Pusher source where it is played back: ``"auto"``, ``"recorded"`` or ``"arm"``.
    strict : bool
        Raise on the first engine step that does not converge.
    pusher_shape : str
        ``"sphere"`` (default) or ``"rod"``: the shape of a recorded pusher; the recorded position
        is the rod's tip (lower end-point centre), the rod ``pusher.length`` long and vertical.
    engine : str
        ``"ours"`` (default) or ``"mujoco"``.

    Returns
    -------
    ReplayResult

    Raises
    ------
    TrialInputError
        A topic the mode needs is missing (named), or the recording is unusable.
    Sim2RealError
        Unknown mode, or the simulation failed ((strict) a step that does not converge); the
        message names the trial.
    """
    if mode not in REPLAY_MODES:
        raise InputError(f"unknown replay mode '{mode}' (choose from {', '.join(REPLAY_MODES)})")
    ns = recorded_platform(record, platform)
    try:
        data = prepare_trial(record, float(params["sim.dt"]), ns)
        used = resolve_mode(data, mode, pusher)
        source = mode_pusher_source(data, used, pusher)
        pusher_shape = trial_shape(data, pusher_shape)
        check_pusher_shape(data, source, pusher_shape)
        sim_params = step_params(data, params)
    except Sim2RealError as err:
        raise TrialInputError(_named(record.name, err), option=err.option) from None
    try:
        replayed, summary, hard = simulate_data(data, sim_params, used, source, strict, pusher_shape, engine)
    except Sim2RealError as err:
        raise type(err)(_named(record.name, err), option=err.option) from None  # the same kind, its trial named
    description = describe_pusher(data, source)
    meta = _replay_meta(record, ns, sim_params, used, description, summary, pusher_shape, engine)
    out = TrialRecord(name=record.name, platforms={"real": record.platforms[ns], "sim": replayed},
                      reference=record.reference, meta=meta)
    return ReplayResult(out, used, description, summary, hard)


def replay_trial(record: TrialRecord, params: ParameterSet, mode: str = "auto", platform: str = "auto",
                 pusher: str = "auto", strict: bool = False, pusher_shape: str = "sphere",
                 engine: str = "ours") -> TrialRecord:
    """:func:`replay`, returning only the replayed :class:`TrialRecord`."""
    return replay(record, params, mode, platform, pusher, strict, pusher_shape, engine).record


@dataclass(frozen=True)
class ReplayTask:
    """Inputs of one trial's replay (picklable, for executors); ``source`` is where it was read."""

    record: TrialRecord
    source: str | None
    params: ParameterSet
    mode: str = "auto"
    platform: str = "auto"
    pusher: str = "auto"
    strict: bool = False
    pusher_shape: str = "sphere"
    engine: str = "ours"


@dataclass(frozen=True)
class ReplayFailure:
    """A replay that raised: the trial, one line, the stage (``"inputs"`` or ``"replay"``), and
    whether it must end the run (``--strict`` and a solver failure); ``option``: the error's
    :attr:`~sim2real.errors.Sim2RealError.option`."""

    name: str
    reason: str
    source: str | None
    stage: str
    fatal: bool = False
    option: str | None = None


def run_replay_task(task: ReplayTask) -> ReplayResult | ReplayFailure:
    """:func:`replay` of one task; failures are returned, not raised (one trial cannot end the others)."""
    from sim2real.sysid.problem import TrialInputError
    from sim2real.sysid.residuals import one_line

    try:
        return replay(task.record, task.params, mode=task.mode, platform=task.platform, pusher=task.pusher,
                      strict=task.strict, pusher_shape=task.pusher_shape, engine=task.engine)
    except TrialInputError as err:
        return ReplayFailure(task.record.name, one_line(err), task.source, "inputs", option=err.option)
    except Exception as err:  # one trial's failure of any kind must not end the others
        fatal = task.strict and isinstance(err, Sim2RealError)
        return ReplayFailure(task.record.name, one_line(err), task.source, "replay", fatal,
                             err.option if isinstance(err, Sim2RealError) else None)

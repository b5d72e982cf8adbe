"""Replay recorded trials in the simulator, offline, with the recorded timing.

:func:`replay_trial` re-simulates one trial and returns it as a :class:`TrialRecord` whose
``sim`` platform holds the replay (same topics and schema as a recorded sim platform) next
to the recorded ``real`` platform, so it can be written with
:func:`sim2real.trials.write_trial` and compared by the report.

Modes (arm trials):

``commands``
    The simulated platform (servo → FK → pusher → engine) driven by the recorded joint
    commands at their recorded ticks (the mirrored ``commands`` mode, offline).
``closed``
    The simulated platform under the PD law on the recorded reference.
``kinematic``
    The arm played back from the recorded joint states (no servo model); the pusher
    follows them through forward kinematics.
``pusher``
    The pusher driven by the recorded ``/real/pusher_pose`` positions.

Box-only trials (cube tosses) are a free rollout from the state rebuilt from the first two
recorded poses, whatever the mode.
"""

from __future__ import annotations

import numpy as np

from sim2real.control.sim_platform import ArmTrialResult, simulate_arm_trial
from sim2real.errors import Sim2RealError
from sim2real.model import load_arm
from sim2real.params import ParameterSet
from sim2real.physics import BoxState, BoxWorld, rollout
from sim2real.sysid.data import TrialData, box_states, prepare_trial, recorded_platform
from sim2real.sysid.residuals import COM_PARAMS, arm_reference, resolve_mode, step_params
from sim2real.trials import JointSeries, PlatformRecord, PoseSeries, TrialRecord

REPLAY_MODES: tuple[str, ...] = ("commands", "closed", "kinematic", "pusher")


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


def _replay_box_only(data: TrialData, params: ParameterSet) -> PlatformRecord:
    world = BoxWorld.from_params(params, pusher=None)
    states, _ = box_states(data, np.array([float(params[n]) for n in COM_PARAMS]))
    result = rollout(world, BoxState.from_vector(states[1]), steps=data.steps - 1)
    return _box_platform(data.t[1:], result.states)


def _replay_pusher_path(data: TrialData, params: ParameterSet, pusher: np.ndarray,
                        joints: tuple[np.ndarray, np.ndarray] | None) -> PlatformRecord:
    world = BoxWorld.from_params(params)
    initial = BoxState(data.box_position[0], data.box_quaternion[0])
    result = rollout(world, initial, pusher_path=pusher)
    return _box_platform(data.t, result.states, pusher, joints)


def replay_trial(record: TrialRecord, params: ParameterSet, mode: str = "commands",
                 platform: str = "auto") -> TrialRecord:
    """Re-simulate one recorded trial with ``params``.

    Parameters
    ----------
    record : TrialRecord
        The recorded trial.
    params : ParameterSet
        Simulator parameters of the replay.
    mode : str
        ``"commands"``, ``"closed"``, ``"kinematic"`` or ``"pusher"`` (see the module docstring).
    platform : str
        Recording that drives the replay: ``"real"``, ``"sim"`` or ``"auto"``.

    Returns
    -------
    TrialRecord
        Same name; platforms: the recorded one as ``real`` and the replay as ``sim``; meta
        from the recording with ``"mode": "replay"``, ``"mirror": mode`` and the parameters.

    Raises
    ------
    Sim2RealError
        Unknown mode, missing topics for the mode, or a simulation failure.
    """
    if mode not in REPLAY_MODES:
        raise Sim2RealError(f"unknown replay mode '{mode}' (choose from {', '.join(REPLAY_MODES)})")
    ns = recorded_platform(record, platform)
    data = prepare_trial(record, float(params["sim.dt"]), ns)
    sim_params = step_params(data, params)
    try:
        if data.kind == "box":
            replayed = _replay_box_only(data, sim_params)
        elif mode in ("commands", "closed"):
            used = resolve_mode(data, mode)
            reference = arm_reference(data, sim_params, used)
            initial_box = BoxState(data.box_position[0], data.box_quaternion[0])
            result = simulate_arm_trial(sim_params, reference, initial_box, duration=data.steps * data.dt,
                                        commands=data.command if used == "commands" else None)
            replayed = platform_from_arm_result(result, float(data.t[0]))
        elif mode == "kinematic":
            assert data.joint_position is not None and data.joint_velocity is not None
            pusher = load_arm(sim_params).pusher_position(data.joint_position)
            replayed = _replay_pusher_path(data, sim_params, pusher, (data.joint_position, data.joint_velocity))
        else:
            recorded = record.platforms[ns].pusher_pose
            if recorded is None or len(recorded) < 2:
                raise Sim2RealError(f"trial '{record.name}' has no /{ns}/pusher_pose (needed by the pusher mode)")
            pusher = np.stack([np.interp(data.t, recorded.t, recorded.position[:, j]) for j in range(3)], axis=1)
            replayed = _replay_pusher_path(data, sim_params, pusher, None)
    except Sim2RealError as err:
        raise Sim2RealError(f"replay of trial '{record.name}': {err}") from None
    meta = {k: v for k, v in record.meta.items() if k not in ("outcomes", "topics", "written", "schema", "versions")}
    meta.update({"mode": "replay", "mirror": mode, "params": params.as_dict(), "replay_of": record.name,
                 "complete": True})
    return TrialRecord(name=record.name, platforms={"real": record.platforms[ns], "sim": replayed},
                       reference=record.reference, meta=meta)

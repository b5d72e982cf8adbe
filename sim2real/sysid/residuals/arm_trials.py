"""A recorded arm trial simulated whole: the joint reference it is simulated with, the simulated platform
under the recorded commands or the recorded reference (PD law), and its solver outcomes. Used by the
residuals of whole arm trials and by replay.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sim2real.control import JointTrajectory
from sim2real.control.sim_platform import (
    ArmTrialResult,
    simulate_arm_trial,
)
from sim2real.errors import InputError
from sim2real.model import load_arm
from sim2real.params import ParameterSet
from sim2real.sim import BoxState, SolveSummary
from sim2real.sysid.problem import TrialData
from sim2real.sysid.residuals.types import MAX_HARD_STEPS


def arm_reference(data: TrialData, params: ParameterSet, mode: str) -> JointTrajectory:
    """The joint reference a whole arm trial is simulated with, on the trial's time axis from ``t_0``.

    In ``commands`` mode only its first point matters (the arm starts at rest there): the
    recorded joint angles at rest (:meth:`TrialData.start_arm`). In ``closed`` mode it is the
    recorded reference.

    Raises
    ------
    Sim2RealError
        ``closed`` mode without a recorded reference.
    """
    assert data.joint_position is not None
    arm = load_arm(params)
    if mode == "commands":
        q0 = data.start_arm()
        position = np.stack((q0, q0))
        return JointTrajectory(t=np.array([0.0, data.dt]), position=position, velocity=np.zeros((2, 6)),
                               pusher=arm.pusher_position(position))
    ref = data.reference
    if ref is None:
        raise InputError(f"trial '{data.name}' has no /reference/joint_trajectory (needed by the closed mode)")
    return JointTrajectory(t=ref.t - data.t[0], position=ref.position, velocity=ref.velocity,
                           pusher=arm.pusher_position(ref.position))


def simulate_recorded_arm(data: TrialData, params: ParameterSet, mode: str, grad_names: Sequence[str] = (),
                          strict: bool = False, engine: str = "ours") -> ArmTrialResult:
    """The simulated platform over a whole arm trial in ``commands`` or ``closed`` mode.

    Parameters
    ----------
    data : TrialData
        An arm trial (its recorded start, commands or reference).
    params : ParameterSet
    mode : str
        ``"commands"`` or ``"closed"`` (resolved; see :func:`sim2real.sysid.problem.inputs.resolve_mode`).
    grad_names : sequence of str
    strict : bool
        Raise on the first engine step that does not converge.
    engine : str
        ``"ours"`` (default) or ``"mujoco"`` (no gradients).

    Returns
    -------
    ArmTrialResult
        ``T = data.steps`` ticks from the trial's ``t_0``.
    """
    reference = arm_reference(data, params, mode)
    initial_box = BoxState(*data.start_box())
    commands = data.command if mode == "commands" else None
    return simulate_arm_trial(params, reference, initial_box, duration=data.steps * data.dt,
                              grad_names=tuple(grad_names), commands=commands, strict=strict, context=data.name,
                              engine=engine)


def arm_solve(result: ArmTrialResult) -> tuple[SolveSummary, tuple[Any, ...], np.ndarray]:
    """Outcome tally, the first hard steps and per-step outcomes (T,) of a simulated arm trial."""
    return result.solve, tuple(result.hard_steps)[:MAX_HARD_STEPS], result.outcomes

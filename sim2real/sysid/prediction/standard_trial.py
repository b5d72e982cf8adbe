"""The standard simulated trial: the published push with the box at a start distance.

Plans the push of ``config/experiment.yaml`` with the arm model, runs the sim platform
(PD → servo → FK → pusher → engine), computes the trial outcome and, on request, the
derivatives of the final outcome with respect to parameters over the whole trial. Also
turns the result into a :class:`TrialRecord` (the ``sim`` platform) for ``write_trial``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from sim2real.control import ExperimentConfig, JointTrajectory, PushConfig, load_experiment_config, plan_push
from sim2real.control.sim_platform import ArmTrialResult, box_at_distance, simulate_arm_trial
from sim2real.errors import InputError
from sim2real.model import load_arm
from sim2real.params import ParameterSet
from sim2real.spatial import yaw, yaw_gradient
from sim2real.trials.outcome import Outcome, compute_outcome
from sim2real.trials.records import JointReference, JointSeries, PlatformRecord, PoseSeries, TrialRecord
from sim2real.trials.schema import trial_name, versions

#: Start distances (m, box centre from the arm base) the standard push can reach.
DISTANCE_RANGE: tuple[float, float] = (0.15, 0.7)


@dataclass(frozen=True)
class StandardTrial:
    """One simulated standard trial.

    Attributes
    ----------
    distance : float
        Start distance of the box centre from the arm base along x (m).
    params : ParameterSet
        Parameters it ran with.
    reference : JointTrajectory
        The planned push.
    result : ArmTrialResult
        Sim platform trajectories (and sensitivities).
    outcome : Outcome
        Final pose, distance, yaw, maximum tilt, flipped, touched.
    wall_s : float
        Wall-clock time of the simulation (s).
    push : PushConfig or None
        The push the reference was planned from (None: a reference given as it is).
    """

    distance: float
    params: ParameterSet
    reference: JointTrajectory
    result: ArmTrialResult
    outcome: Outcome
    wall_s: float
    push: PushConfig | None = None

    def box_size(self) -> np.ndarray:
        """Box edge lengths (3,), m."""
        return np.array([self.params["box.size_x"], self.params["box.size_y"], self.params["box.size_z"]])

    def summary(self) -> dict[str, Any]:
        """The JSON outcome of ``sim2real simulate --distance`` (see the README)."""
        r = self.result
        final = r.box[-1]
        summary: dict[str, Any] = {
            "initial_distance_m": self.distance,
            "final_distance_m": float(final[0]),
            "final": {"box_position": final[0:3].tolist(), "box_quaternion": final[3:7].tolist(),
                      "yaw_rad": float(yaw(final[3:7]))},
            "flipped": bool(self.outcome.flipped),
            "max_tilt_deg": float(self.outcome.max_tilt_deg),
            "touched": bool(r.touched),
            "min_signed_distance_m": float(r.min_table_distance),
            "min_pusher_distance_m": float(r.min_pusher_distance),
            "steps": len(r.t) - 1,
            "dt": float(self.params["sim.dt"]),
            "wall_s": self.wall_s,
            "solver": r.solve.as_dict(),
        }
        if r.stop_reason:
            summary["stop_reason"] = r.stop_reason
        if r.grad_names and r.d_box is not None:
            s_final = r.d_box[-1]
            dyaw = yaw_gradient(final[3:7]) @ s_final[3:7]
            summary["gradients"] = {
                name: {"box_position": s_final[0:3, k].tolist(), "yaw": float(dyaw[k])}
                for k, name in enumerate(r.grad_names)
            }
        return summary

    def record(self, index: int = 0, mode: str = "sim", start_ns: int | None = None) -> TrialRecord:
        """The trial as a :class:`TrialRecord` of the ``sim`` platform, ready for ``write_trial``.

        Parameters
        ----------
        index : int
            Trial index (in the name ``trial_<index>_d<distance>``).
        mode : str
            trial.json ``mode``.
        start_ns : int, optional
            ``timing.start_ns``: the trial start, ns since the UNIX epoch (default: now, the bag
            convention for simulated trials).
        """
        start = time.time_ns() if start_ns is None else int(start_ns)
        r = self.result
        joint_states = JointSeries.from_arrays(r.t, r.joint_position, r.joint_velocity)
        command = JointSeries.from_arrays(r.t[:-1], r.reference_position, r.command)
        identity = np.tile([1.0, 0.0, 0.0, 0.0], (len(r.t), 1))
        platform = PlatformRecord(
            joint_states=joint_states, joint_command=command,
            box_pose=PoseSeries(r.t, r.box[:, 0:3], r.box[:, 3:7]),
            pusher_pose=PoseSeries(r.t, r.pusher, identity),
        )
        reference = JointReference(self.reference.t, self.reference.position, self.reference.velocity)
        meta = {
            "initial_distance_m": self.distance, "mode": mode, "mirror": None, "complete": True,
            "outcomes": {"sim": self.outcome.as_dict()}, "solver": {"sim": r.solve.as_dict()},
            "params": self.params.as_dict(),
            **({"push": {f.name: float(getattr(self.push, f.name)) for f in fields(PushConfig)}}
               if self.push is not None else {}),
            "versions": versions(), "timing": {"start_ns": start, "end_ns": start + round(r.t[-1] * 1e9),
                                               "wall_s": self.wall_s},
        }
        return TrialRecord(name=trial_name(index, self.distance), platforms={"sim": platform},
                           reference=reference, meta=meta)


def run_standard_trial(distance: float, params: ParameterSet, grad_names: Sequence[str] = (),
                       experiment: ExperimentConfig | None = None,
                       reference: JointTrajectory | None = None, strict: bool = False,
                       engine: str = "ours", push: PushConfig | None = None) -> StandardTrial:
    """Simulate the standard push with the box centre at ``distance`` m along base x.

    Parameters
    ----------
    distance : float
        Start distance of the box centre from the arm base (m).
    params : ParameterSet
        Simulator parameters.
    grad_names : sequence of str
        Parameters to differentiate the final outcome by (whole trial, forward mode).
    experiment : ExperimentConfig, optional
        Default: ``config/experiment.yaml``.
    reference : JointTrajectory, optional
        A planned push to reuse (must match ``params``' pusher); default: planned here.
    strict : bool
        Raise ``SimulationError`` on a contact step that would be degraded (default: flag it in
        ``result.solve``).
    engine : str
        ``"ours"`` (default) or ``"mujoco"`` (no gradients).
    push : PushConfig, optional
        The push to make (planned here without ``reference``; default the experiment's), or the one ``reference``
        was planned from (default: none, the box square to the push). Its ``box_yaw_deg`` turns the box at the
        start, and the record carries it.
    """
    if not DISTANCE_RANGE[0] <= distance <= DISTANCE_RANGE[1]:
        raise InputError(f"the distance {distance} m is outside the push workspace "
                         f"({DISTANCE_RANGE[0]:g} to {DISTANCE_RANGE[1]:g} m)", option="distance")
    if reference is None:
        if push is None:
            experiment = experiment or load_experiment_config()
            if experiment.trial_pushes:
                raise InputError("the experiment file gives each trial its own push (its 'trials' section); the "
                                 "standard trial takes one push: run the file with 'sim2real run', or give a file "
                                 "with one push", option="experiment")
            push = experiment.push
        reference = plan_push(load_arm(params), push, float(params["contact.table_height"]))
    initial = box_at_distance(distance, params, push.box_yaw_deg if push is not None else 0.0)
    start = time.perf_counter()
    result = simulate_arm_trial(params, reference, initial, grad_names=grad_names, strict=strict,
                                context=trial_name(0, distance), engine=engine)
    wall = time.perf_counter() - start
    size = np.array([params["box.size_x"], params["box.size_y"], params["box.size_z"]])
    outcome = compute_outcome(PoseSeries(result.t, result.box[:, 0:3], result.box[:, 3:7]), size, result.touched)
    return StandardTrial(distance=distance, params=params, reference=reference, result=result,
                         outcome=outcome, wall_s=wall, push=push)

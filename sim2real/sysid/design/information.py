"""What one candidate push would tell a fit: its simulated outcome and the information of its residuals.

A candidate (:mod:`sim2real.sysid.design.space`) is planned on the arm model, simulated as the standard trial
at the linearisation point (the fitted values, or the prior's nominal ones) and recorded as the ``sim``
platform; the fit's own residuals (the same :class:`~sim2real.sysid.ResidualSpec`: horizon, mode, weights,
engine) are formed on that recording with the implicit Jacobian ``J (m, p)`` of the free parameters. The
recording equals the simulation, so the residuals are zero and ``J`` is what a real trial of that push would
add to the fit's normal equations: the information ``H = Jᵀ J`` (weighted residual units per parameter unit
squared). Rows that depend on a degraded contact step are left out, as the fit leaves them out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from sim2real.control import JointTrajectory, Workspace
from sim2real.errors import Sim2RealError
from sim2real.execution import Executor
from sim2real.model import load_arm
from sim2real.params import ParameterSet
from sim2real.sysid.design.space import Candidate, plan_candidate
from sim2real.sysid.prediction import run_standard_trial
from sim2real.sysid.problem import ColumnMap, prepare_trial
from sim2real.sysid.residuals import ResidualSpec, residuals_of

#: Largest tilt (deg) a push may give the box when tipping is not wanted (``--no-topple``).
DEFAULT_MAX_TILT_DEG = 10.0


@dataclass(frozen=True)
class CandidateInfo:
    """One candidate evaluated at the linearisation point.

    Attributes
    ----------
    candidate : Candidate
    information : ndarray, shape (p, p) or None
        ``Jᵀ J`` of the candidate's weighted residuals in the free parameters' order (None: not feasible).
    rows : int
        Residual rows that entered ``information``.
    reason : str or None
        Why the candidate is left out (None: it is feasible).
    final_distance : float or None
        Simulated final box distance along base x (m).
    final_yaw_deg : float or None
        Simulated final box yaw (deg).
    max_tilt_deg : float or None
        Largest tilt of the box during the push (deg).
    flipped : bool or None
    touched : bool or None
        Whether the pusher touched the box.
    """

    candidate: Candidate
    information: np.ndarray | None
    rows: int = 0
    reason: str | None = None
    final_distance: float | None = None
    final_yaw_deg: float | None = None
    max_tilt_deg: float | None = None
    flipped: bool | None = None
    touched: bool | None = None

    @property
    def feasible(self) -> bool:
        """Whether the candidate can be chosen."""
        return self.reason is None and self.information is not None

    def as_dict(self) -> dict[str, object]:
        """JSON-ready: the push, its simulated outcome and why it is left out."""
        return {"push": self.candidate.as_dict(), "reason": self.reason, "rows": self.rows,
                "predicted": {"final_distance_m": self.final_distance, "final_yaw_deg": self.final_yaw_deg,
                              "max_tilt_deg": self.max_tilt_deg, "flipped": self.flipped, "touched": self.touched}}


@dataclass(frozen=True)
class EvaluationTask:
    """What :func:`evaluate_candidate` needs (picklable, for an executor's workers).

    Attributes
    ----------
    candidate : Candidate
    points : tuple of ParameterSet
        The linearisation points; the push is planned with the first (the plan depends on the arm, the pusher
        and the table, which the points share).
    columns : ColumnMap
    spec : ResidualSpec
    max_tilt_deg : float, optional
        The no-topple limit (deg), judged at every point.
    """

    candidate: Candidate
    points: tuple[ParameterSet, ...]
    columns: ColumnMap
    spec: ResidualSpec
    max_tilt_deg: float | None = None


def evaluate_candidate(task: EvaluationTask) -> tuple[CandidateInfo, ...]:
    """Plan one candidate, then simulate and differentiate it at each point (one :class:`CandidateInfo` per
    point; infeasible ones say why, and a candidate not planned is infeasible at every point)."""
    candidate = task.candidate
    reference, reason = plan_candidate(candidate, load_arm(task.points[0]), task.points[0], Workspace())
    if reference is None:
        return tuple(CandidateInfo(candidate, None, reason=reason) for _ in task.points)
    return tuple(_at_point(task, reference, params) for params in task.points)


def _at_point(task: EvaluationTask, reference: JointTrajectory, params: ParameterSet) -> CandidateInfo:
    """The planned candidate simulated and differentiated at ``params``."""
    candidate = task.candidate
    try:
        trial = run_standard_trial(candidate.distance, params, reference=reference, engine=task.spec.engine,
                                   push=candidate.push)
    except Sim2RealError as err:
        return CandidateInfo(candidate, None, reason=f"simulation failed: {err}")
    outcome = trial.outcome
    simulated = CandidateInfo(candidate, None, final_distance=float(outcome.final_distance_m),
                              final_yaw_deg=float(outcome.yaw_deg), max_tilt_deg=float(outcome.max_tilt_deg),
                              flipped=bool(outcome.flipped), touched=bool(trial.result.touched))
    if not trial.result.touched:  # feasible, and tells nothing
        p = task.columns.p
        return replace(simulated, information=np.zeros((p, p)))
    if task.max_tilt_deg is not None and (outcome.flipped or outcome.max_tilt_deg > task.max_tilt_deg):
        return replace(simulated, reason=f"tips the box: {outcome.max_tilt_deg:.1f} deg, at most "
                                         f"{task.max_tilt_deg:g}")
    try:
        data = prepare_trial(trial.record(), float(params["sim.dt"]), "sim")
        res = residuals_of(data, params, task.columns, task.spec)
    except Sim2RealError as err:
        return replace(simulated, reason=f"no residuals: {err}")
    assert res.jacobian is not None
    keep = ~res.dropped_mask
    jac = res.jacobian[keep]
    return replace(simulated, information=jac.T @ jac, rows=int(keep.sum()))


def evaluate_candidates(executor: Executor, candidates: Sequence[Candidate], points: Sequence[ParameterSet],
                        columns: ColumnMap, spec: ResidualSpec, max_tilt_deg: float | None = None,
                        progress: Callable[[str], None] | None = None) -> list[tuple[CandidateInfo, ...]]:
    """:func:`evaluate_candidate` for each candidate on ``executor`` (its ``map``), in their order: per candidate
    one :class:`CandidateInfo` per point; ``columns`` places each differentiated registry name on its unknown's
    column (tied names share one). ``progress`` hears how many are done, about every tenth of them."""
    tasks = [EvaluationTask(c, tuple(points), columns, spec, max_tilt_deg) for c in candidates]
    out: list[tuple[CandidateInfo, ...]] = []
    step = max(1, len(tasks) // 10)
    for info in executor.map(evaluate_candidate, tasks):
        out.append(info)
        if progress is not None and (len(out) % step == 0 or len(out) == len(tasks)):
            progress(f"  {len(out)}/{len(tasks)} candidates evaluated")
    return out

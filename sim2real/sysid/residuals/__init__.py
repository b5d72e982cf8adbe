"""How a trial is compared with the simulator: the residual rows and their Jacobian from the implicit gradients
(``trial``: one-step, N-step segments, whole trials; ``types``: the spec, weights and results; ``arm_trials``: whole
arm trials simulated), and per-trial work as tasks any executor runs (``tasks``). Callers elsewhere import through
this face, lazily: a module loads on the first use of one of its names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim2real.sysid.residuals.arm_trials import arm_solve, simulate_recorded_arm
    from sim2real.sysid.residuals.tasks import TaskFailure, TrialTask, evaluate_tasks, one_line
    from sim2real.sysid.residuals.trial import finite_difference_jacobian, residuals_of, step_params, trial_residuals
    from sim2real.sysid.residuals.types import (
        COM_PARAMS,
        MAX_HARD_STEPS,
        ResidualSpec,
        TrialResiduals,
        Weights,
        available_gradients,
    )

#: The face: each public name callers outside this subpackage use, and the module that defines it. A module is
#: imported on the first use of one of its names, so importing the subpackage loads nothing.
_FACE: dict[str, str] = {
    "COM_PARAMS": "types",
    "MAX_HARD_STEPS": "types",
    "ResidualSpec": "types",
    "TaskFailure": "tasks",
    "TrialResiduals": "types",
    "TrialTask": "tasks",
    "Weights": "types",
    "arm_solve": "arm_trials",
    "available_gradients": "types",
    "evaluate_tasks": "tasks",
    "finite_difference_jacobian": "trial",
    "one_line": "tasks",
    "residuals_of": "trial",
    "simulate_recorded_arm": "arm_trials",
    "step_params": "trial",
    "trial_residuals": "trial",
}
__all__ = ["COM_PARAMS", "MAX_HARD_STEPS", "ResidualSpec", "TaskFailure", "TrialResiduals", "TrialTask", "Weights",
           "arm_solve", "available_gradients", "evaluate_tasks", "finite_difference_jacobian", "one_line",
           "residuals_of", "simulate_recorded_arm", "step_params", "trial_residuals"]

if not TYPE_CHECKING:
    def __getattr__(name: str) -> Any:
        """``sim2real.sysid.residuals.NAME`` (:func:`sim2real.sysid.faces.face_attribute`)."""
        from sim2real.sysid.faces import face_attribute

        return face_attribute(__name__, _FACE, name)

"""How a fit is solved: Levenberg-Marquardt with bounds and robust losses (``optimizer``; its damped step and
stopping rules in ``damped_step``, ``stopping``), many trials as one residual vector (``evaluation``), several
starts and the grid search (``starts``, ``multistart``), :func:`~sim2real.sysid.solve.fit.fit_trials` and its
:class:`~sim2real.sysid.solve.result.FitResult` (``fit``, ``result``). Callers elsewhere import through this face,
lazily: a module loads on the first use of one of its names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim2real.sysid.solve.damped_step import at_bounds
    from sim2real.sysid.solve.evaluation import FitEvaluator
    from sim2real.sysid.solve.fit import fit_trials, prepare_trials, usable_trials
    from sim2real.sysid.solve.multistart import best_start, grid_costs, grid_jackknife, with_jackknife
    from sim2real.sysid.solve.optimizer import FitAbortedError, LMResult, LMSettings, levenberg_marquardt
    from sim2real.sysid.solve.result import FitResult, measured_refits
    from sim2real.sysid.solve.stopping import STOP_MAX_ITERATIONS

#: The face: each public name callers outside this subpackage use, and the module that defines it. A module is
#: imported on the first use of one of its names, so importing the subpackage loads nothing.
_FACE: dict[str, str] = {
    "FitAbortedError": "optimizer",
    "FitEvaluator": "evaluation",
    "FitResult": "result",
    "LMResult": "optimizer",
    "LMSettings": "optimizer",
    "STOP_MAX_ITERATIONS": "stopping",
    "at_bounds": "damped_step",
    "best_start": "multistart",
    "fit_trials": "fit",
    "grid_costs": "multistart",
    "grid_jackknife": "multistart",
    "levenberg_marquardt": "optimizer",
    "measured_refits": "result",
    "prepare_trials": "fit",
    "usable_trials": "fit",
    "with_jackknife": "multistart",
}
__all__ = [
    "STOP_MAX_ITERATIONS",
    "FitAbortedError",
    "FitEvaluator",
    "FitResult",
    "LMResult",
    "LMSettings",
    "at_bounds",
    "best_start",
    "fit_trials",
    "grid_costs",
    "grid_jackknife",
    "levenberg_marquardt",
    "measured_refits",
    "prepare_trials",
    "usable_trials",
    "with_jackknife",
]

if not TYPE_CHECKING:
    def __getattr__(name: str) -> Any:
        """``sim2real.sysid.solve.NAME`` (:func:`sim2real.sysid.faces.face_attribute`)."""
        from sim2real.sysid.faces import face_attribute

        return face_attribute(__name__, _FACE, name)

"""System identification: recorded trials in, fitted simulator parameters out, and what they predict.

By concern, each a subpackage:

* :mod:`~sim2real.sysid.problem` — what a fit is asked: trials on the simulator's grid (``data``), what drives
  the simulator (``inputs``), the unknowns (``free``, ``objects``: ties, per-object values, the Jacobian's
  column map), :class:`FitProblem` (``fit_problem``), trials read tolerantly (``runs``).
* :mod:`~sim2real.sysid.residuals` — weighted pose and joint residuals with Jacobians from the simulator's
  implicit gradients (``trial``: one-step, N-step segments, whole trials; rows that depend on degraded solver
  steps flagged), what they are asked and return (``types``), whole arm trials (``arm_trials``), per-trial
  tasks (``tasks``).
* :mod:`~sim2real.sysid.solve` — Gauss-Newton / Levenberg-Marquardt with bounds and robust losses
  (``optimizer``, ``damped_step``, ``stopping``), many trials as one residual vector (``evaluation``),
  several starts (``starts``, ``multistart``), :func:`fit_trials` → :class:`FitResult` (``fit``, ``result``).
* :mod:`~sim2real.sysid.uncertainty` — covariance, intervals, correlations, identifiability (``covariance``),
  measured jackknives (``jackknife``), converged or not and the problems a user must see (``status``).
* :mod:`~sim2real.sysid.prediction` — replays (``replay``), whole-trial prediction errors (``whole_trials``),
  parameter sets drawn from a fit (``sampling``), trials predicted as distributions (``spread``) with modes,
  model discrepancy and calibrated bands (``bands``, ``spread_calibration``), engines compared (``compare``).
* :mod:`~sim2real.sysid.files` — fit.json's typed document and reader (``fit_file``), the params YAML written
  with it (``writeback``, ``fitted_objects``), the samples directory (``sample_files``).

This package's face exports what a caller of a fit needs.
"""

from sim2real.sysid.problem import (
    FitProblem,
    FreeParameters,
    LoadedTrials,
    TrialData,
    TrialFailure,
    box_states,
    parse_bounds,
    prepare_trial,
    read_trials,
    resolve_mode,
    resolve_pusher,
)
from sim2real.sysid.residuals import (
    ResidualSpec,
    TrialResiduals,
    Weights,
    finite_difference_jacobian,
    trial_residuals,
)
from sim2real.sysid.solve import FitResult, LMResult, LMSettings, fit_trials, levenberg_marquardt, prepare_trials
from sim2real.sysid.uncertainty import Uncertainty, summarize_uncertainty

__all__ = [
    "FitProblem", "FitResult", "FreeParameters", "LMResult", "LMSettings", "LoadedTrials", "ResidualSpec", "TrialData",
    "TrialFailure", "TrialResiduals", "Uncertainty", "Weights", "box_states", "finite_difference_jacobian",
    "fit_trials", "levenberg_marquardt", "parse_bounds", "prepare_trial", "prepare_trials", "read_trials",
    "resolve_mode", "resolve_pusher", "summarize_uncertainty", "trial_residuals",
]

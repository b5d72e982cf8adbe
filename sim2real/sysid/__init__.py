"""System identification: recorded trials in, fitted simulator parameters out.

* :mod:`~sim2real.sysid.data` — recordings resampled onto the simulator's grid; box states
  rebuilt from poses for teacher forcing.
* :mod:`~sim2real.sysid.inputs` — what drives the simulator (mode, pusher source), checked
  against the topics a trial recorded.
* :mod:`~sim2real.sysid.residuals` — weighted pose and joint residuals with Jacobians from
  the simulator's implicit gradients (one-step, N-step segments, whole trials); rows that
  depend on degraded solver steps flagged; what they are asked for and return in
  :mod:`~sim2real.sysid.residual_types`; whole arm trials simulated in :mod:`~sim2real.sysid.arm_trials`.
* :mod:`~sim2real.sysid.optimizer` — Gauss-Newton / Levenberg-Marquardt with bounds and
  robust losses; its damped step (determined directions, trust radius, statistical stop) in
  :mod:`~sim2real.sysid.damped_step`.
* :mod:`~sim2real.sysid.evaluation` — many trials as one residual vector; trials failing at the
  start left out; trial steps that fail or degrade rejected; held-out cost.
* :mod:`~sim2real.sysid.uncertainty` — covariance, intervals, correlations, identifiability.
* :mod:`~sim2real.sysid.status` — converged or not, and the problems a user must see.
* :mod:`~sim2real.sysid.runs` — reading many trials tolerantly; :class:`TrialFailure`.
* :mod:`~sim2real.sysid.problem` — :class:`FitProblem`: the trials, unknowns and residual spec of a fit.
* :mod:`~sim2real.sysid.fit` — :func:`fit_trials` solves a :class:`FitProblem` → :class:`FitResult` (the
  fit.json object).
* :mod:`~sim2real.sysid.writeback` — fitted params YAML + fit.json, written together.
* :mod:`~sim2real.sysid.replay` — re-simulating recorded trials into sim records.
* :mod:`~sim2real.sysid.sampling` — parameter sets drawn from a fit's distribution (within bounds,
  ties kept) for domain randomization; imported on use (``sim2real sample``); the samples directory
  in :mod:`~sim2real.sysid.sample_files`.
* :mod:`~sim2real.sysid.spread` — trials predicted as distributions under those draws; their modes,
  model discrepancy and conformal calibration in :mod:`~sim2real.sysid.bands`; the spread's record and
  verdicts in :mod:`~sim2real.sysid.spread_calibration`.
"""

from sim2real.sysid.data import TrialData, box_states, prepare_trial
from sim2real.sysid.fit import FitResult, FreeParameters, fit_trials, parse_bounds, prepare_trials
from sim2real.sysid.inputs import resolve_mode, resolve_pusher
from sim2real.sysid.optimizer import LMResult, LMSettings, levenberg_marquardt
from sim2real.sysid.problem import FitProblem
from sim2real.sysid.residuals import (
    ResidualSpec,
    TrialResiduals,
    Weights,
    finite_difference_jacobian,
    trial_residuals,
)
from sim2real.sysid.runs import LoadedTrials, TrialFailure, read_trials
from sim2real.sysid.uncertainty import Uncertainty, summarize_uncertainty

__all__ = [
    "FitProblem", "FitResult", "FreeParameters", "LMResult", "LMSettings", "LoadedTrials", "ResidualSpec", "TrialData",
    "TrialFailure", "TrialResiduals", "Uncertainty", "Weights", "box_states", "finite_difference_jacobian",
    "fit_trials", "levenberg_marquardt", "parse_bounds", "prepare_trial", "prepare_trials", "read_trials",
    "resolve_mode", "resolve_pusher", "summarize_uncertainty", "trial_residuals",
]

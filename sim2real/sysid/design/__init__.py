"""Experiment design: which pushes to record next so that a fit pins its parameters down in few pushes.

* :mod:`~sim2real.sysid.design.space` — the push space (start distance, contact offset, height, speed, stroke),
  its candidates and what the arm can do (reach, joint and rate limits, workspace);
* :mod:`~sim2real.sysid.design.prior` — what is known before: a fit's covariance or the bounds, and the noise
  of a new trial's residual rows;
* :mod:`~sim2real.sysid.design.information` — one candidate simulated at the current values and the
  information of the fit's residuals on it (implicit Jacobians);
* :mod:`~sim2real.sysid.design.select` — the linearised forecast and the greedy-then-exchange D/A-optimal search;
* :mod:`~sim2real.sysid.design.plan` — :func:`design_pushes` → :class:`Design` (experiment file, design.json);
* :mod:`~sim2real.sysid.design.record` — design.json read back (:class:`DesignRecord`) for the report.
"""

from sim2real.sysid.design.plan import Design, Forecast, design_pushes
from sim2real.sysid.design.prior import Prior, prior_from_bounds, prior_from_fit, spec_of
from sim2real.sysid.design.record import DESIGN_FORMAT, DesignRecord, read_design_record
from sim2real.sysid.design.space import DIMENSIONS, Candidate, PushSpace, plan_candidate

__all__ = ["DESIGN_FORMAT", "DIMENSIONS", "Candidate", "Design", "DesignRecord", "Forecast", "Prior", "PushSpace",
           "design_pushes", "plan_candidate", "prior_from_bounds", "prior_from_fit", "read_design_record", "spec_of"]

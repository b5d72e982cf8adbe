"""What a fit knows of its own values, and its verdicts: covariance, intervals, correlations and identifiability
(``covariance``), the measured leave-one-out refits (``jackknife``), and converged or not with the problems a user
must see (``status``). Callers elsewhere import through this face, lazily: a module loads on the first use of one of
its names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim2real.sysid.uncertainty.covariance import (
        Uncertainty,
        effective_dof,
        measured_jackknife,
        summarize_uncertainty,
    )
    from sim2real.sysid.uncertainty.jackknife import refit_jackknife, with_refit_jackknife
    from sim2real.sysid.uncertainty.status import (
        NOT_DETERMINED,
        bound_problems,
        corner_problem,
        determination_problems,
        fit_problems,
        fit_status,
        poorly_determined,
    )

#: The face: each public name callers outside this subpackage use, and the module that defines it. A module is
#: imported on the first use of one of its names, so importing the subpackage loads nothing.
_FACE: dict[str, str] = {
    "NOT_DETERMINED": "status",
    "Uncertainty": "covariance",
    "bound_problems": "status",
    "corner_problem": "status",
    "determination_problems": "status",
    "effective_dof": "covariance",
    "fit_problems": "status",
    "fit_status": "status",
    "measured_jackknife": "covariance",
    "poorly_determined": "status",
    "refit_jackknife": "jackknife",
    "summarize_uncertainty": "covariance",
    "with_refit_jackknife": "jackknife",
}
__all__ = ["NOT_DETERMINED", "Uncertainty", "bound_problems", "corner_problem", "determination_problems",
           "effective_dof", "fit_problems", "fit_status", "measured_jackknife", "poorly_determined",
           "refit_jackknife", "summarize_uncertainty", "with_refit_jackknife"]

if not TYPE_CHECKING:
    def __getattr__(name: str) -> Any:
        """``sim2real.sysid.uncertainty.NAME`` (:func:`sim2real.sysid.faces.face_attribute`)."""
        from sim2real.sysid.faces import face_attribute

        return face_attribute(__name__, _FACE, name)

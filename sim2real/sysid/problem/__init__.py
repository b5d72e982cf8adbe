"""What a fit is asked: the recorded trials on the simulator's grid (``data``), what drives the simulator in each
(``inputs``: mode, pusher source, shape), the unknowns (``free``: free names, ties, bounds, the start; ``objects``:
per-object values and the Jacobian's :class:`~sim2real.sysid.problem.objects.ColumnMap`), the question itself
(``fit_problem``: :class:`~sim2real.sysid.problem.fit_problem.FitProblem`) and the trials read tolerantly
(``runs``). Callers elsewhere import through this face, lazily: a module loads on the first use of one of its names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim2real.sysid.problem.data import TrialData, box_states, pose_noise, prepare_trial, recorded_platform
    from sim2real.sysid.problem.fit_problem import FitProblem
    from sim2real.sysid.problem.free import FreeParameters, Unknowns, param_scale, parse_bounds, unknowns
    from sim2real.sysid.problem.inputs import (
        MODES,
        PUSHER_SHAPES,
        PUSHER_SOURCES,
        SIMULATED_ARM_MODES,
        PusherShape,
        PusherSource,
        ReplayMode,
        TrialInputError,
        check_pusher_shape,
        check_start_above_table,
        describe_pusher,
        mode_pusher_source,
        pusher_path,
        pusher_placement,
        pusher_primitive,
        resolve_mode,
        resolve_pusher,
        trial_shape,
    )
    from sim2real.sysid.problem.objects import NO_GRADIENTS, ColumnMap, Unknown, registry_names_of
    from sim2real.sysid.problem.runs import (
        LoadedTrials,
        TrialFailure,
        check_unique_names,
        hold_out,
        raise_all_failed,
        read_trials,
        split_holdout,
    )

#: The face: each public name callers outside this subpackage use, and the module that defines it. A module is
#: imported on the first use of one of its names, so importing the subpackage loads nothing.
_FACE: dict[str, str] = {
    "ColumnMap": "objects",
    "FitProblem": "fit_problem",
    "FreeParameters": "free",
    "LoadedTrials": "runs",
    "MODES": "inputs",
    "NO_GRADIENTS": "objects",
    "PUSHER_SHAPES": "inputs",
    "PUSHER_SOURCES": "inputs",
    "PusherShape": "inputs",
    "PusherSource": "inputs",
    "ReplayMode": "inputs",
    "SIMULATED_ARM_MODES": "inputs",
    "TrialData": "data",
    "TrialFailure": "runs",
    "TrialInputError": "inputs",
    "Unknown": "objects",
    "Unknowns": "free",
    "box_states": "data",
    "check_pusher_shape": "inputs",
    "check_start_above_table": "inputs",
    "check_unique_names": "runs",
    "describe_pusher": "inputs",
    "hold_out": "runs",
    "mode_pusher_source": "inputs",
    "param_scale": "free",
    "parse_bounds": "free",
    "pose_noise": "data",
    "prepare_trial": "data",
    "pusher_path": "inputs",
    "pusher_placement": "inputs",
    "pusher_primitive": "inputs",
    "raise_all_failed": "runs",
    "read_trials": "runs",
    "recorded_platform": "data",
    "registry_names_of": "objects",
    "resolve_mode": "inputs",
    "resolve_pusher": "inputs",
    "split_holdout": "runs",
    "trial_shape": "inputs",
    "unknowns": "free",
}
__all__ = [
    "MODES",
    "NO_GRADIENTS",
    "PUSHER_SHAPES",
    "PUSHER_SOURCES",
    "SIMULATED_ARM_MODES",
    "ColumnMap",
    "FitProblem",
    "FreeParameters",
    "LoadedTrials",
    "PusherShape",
    "PusherSource",
    "ReplayMode",
    "TrialData",
    "TrialFailure",
    "TrialInputError",
    "Unknown",
    "Unknowns",
    "box_states",
    "check_pusher_shape",
    "check_start_above_table",
    "check_unique_names",
    "describe_pusher",
    "hold_out",
    "mode_pusher_source",
    "param_scale",
    "parse_bounds",
    "pose_noise",
    "prepare_trial",
    "pusher_path",
    "pusher_placement",
    "pusher_primitive",
    "raise_all_failed",
    "read_trials",
    "recorded_platform",
    "registry_names_of",
    "resolve_mode",
    "resolve_pusher",
    "split_holdout",
    "trial_shape",
    "unknowns",
]

if not TYPE_CHECKING:
    def __getattr__(name: str) -> Any:
        """``sim2real.sysid.problem.NAME`` (:func:`sim2real.sysid.faces.face_attribute`)."""
        from sim2real.sysid.faces import face_attribute

        return face_attribute(__name__, _FACE, name)

"""What a fit predicts: recorded trials simulated again (``replay``), whole-trial prediction errors
(``whole_trials``), the standard push simulated (``standard_trial``) and swept over parameter sets and start
distances (``sweep``), parameter sets drawn from a fit (``sampling``), trials predicted as distributions under them
(``spread``) with their modes, model discrepancy and calibrated bands (``bands``, ``spread_calibration``), and
engines compared on held-out trials (``compare``). Callers elsewhere import through this face, lazily: a module
loads on the first use of one of its names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim2real.sysid.prediction.bands import (
        BandCalibration,
        Mode,
        find_modes,
        misses_level,
        mode_boxes,
        nearest_mode,
    )
    from sim2real.sysid.prediction.compare import EngineFit, compare_engines
    from sim2real.sysid.prediction.cross_fit import cross_fit_spreads
    from sim2real.sysid.prediction.replay import ReplayFailure, ReplayResult, ReplayTask, replay_trial, run_replay_task
    from sim2real.sysid.prediction.sampling import (
        FitDistribution,
        SampleDraw,
        describe_method,
        draw_samples,
        fit_distribution,
        undetermined_unknowns,
    )
    from sim2real.sysid.prediction.spread import (
        MEASURED,
        SPREAD_JSON,
        START_ERRORS,
        SpreadSettings,
        StartError,
        StartNoise,
        final_outcome,
        spread_of_fit,
    )
    from sim2real.sysid.prediction.spread_calibration import (
        band_verdict,
        choose_start_error,
        fit_calibration,
        records_spread,
        records_spreads,
        self_calibration,
        spread_record,
    )
    from sim2real.sysid.prediction.standard_trial import run_standard_trial
    from sim2real.sysid.prediction.sweep import (
        MAX_ROWS,
        OUTCOMES_CSV,
        PARTIAL_DIR,
        SWEEP_JSON,
        SWEEP_SCHEMA,
        TRIALS_DIR,
        DistanceSummary,
        GridAxis,
        SweepPoints,
        SweepTask,
        config_differences,
        finished_rows,
        grid_points,
        header,
        parse_distances,
        run_sweep_task,
        samples_points,
        summarize_by_distance,
        sweep_config,
        write_header_if_new,
    )
    from sim2real.sysid.prediction.whole_trials import horizon_rms, predict, prediction_block, rising_metrics

#: The face: each public name callers outside this subpackage use, and the module that defines it. A module is
#: imported on the first use of one of its names, so importing the subpackage loads nothing.
_FACE: dict[str, str] = {
    "BandCalibration": "bands",
    "DistanceSummary": "sweep",
    "EngineFit": "compare",
    "FitDistribution": "sampling",
    "GridAxis": "sweep",
    "MAX_ROWS": "sweep",
    "MEASURED": "spread",
    "Mode": "bands",
    "OUTCOMES_CSV": "sweep",
    "PARTIAL_DIR": "sweep",
    "ReplayFailure": "replay",
    "ReplayResult": "replay",
    "ReplayTask": "replay",
    "SPREAD_JSON": "spread",
    "START_ERRORS": "spread",
    "SWEEP_JSON": "sweep",
    "SWEEP_SCHEMA": "sweep",
    "SampleDraw": "sampling",
    "SpreadSettings": "spread",
    "StartError": "spread",
    "StartNoise": "spread",
    "SweepPoints": "sweep",
    "SweepTask": "sweep",
    "TRIALS_DIR": "sweep",
    "band_verdict": "spread_calibration",
    "choose_start_error": "spread_calibration",
    "compare_engines": "compare",
    "config_differences": "sweep",
    "cross_fit_spreads": "cross_fit",
    "describe_method": "sampling",
    "draw_samples": "sampling",
    "final_outcome": "spread",
    "find_modes": "bands",
    "finished_rows": "sweep",
    "fit_calibration": "spread_calibration",
    "fit_distribution": "sampling",
    "grid_points": "sweep",
    "header": "sweep",
    "horizon_rms": "whole_trials",
    "misses_level": "bands",
    "mode_boxes": "bands",
    "nearest_mode": "bands",
    "parse_distances": "sweep",
    "predict": "whole_trials",
    "prediction_block": "whole_trials",
    "records_spread": "spread_calibration",
    "records_spreads": "spread_calibration",
    "replay_trial": "replay",
    "rising_metrics": "whole_trials",
    "run_replay_task": "replay",
    "run_standard_trial": "standard_trial",
    "run_sweep_task": "sweep",
    "samples_points": "sweep",
    "self_calibration": "spread_calibration",
    "spread_of_fit": "spread",
    "spread_record": "spread_calibration",
    "summarize_by_distance": "sweep",
    "sweep_config": "sweep",
    "undetermined_unknowns": "sampling",
    "write_header_if_new": "sweep",
}
__all__ = [
    "MAX_ROWS",
    "MEASURED",
    "OUTCOMES_CSV",
    "PARTIAL_DIR",
    "SPREAD_JSON",
    "START_ERRORS",
    "SWEEP_JSON",
    "SWEEP_SCHEMA",
    "TRIALS_DIR",
    "BandCalibration",
    "DistanceSummary",
    "EngineFit",
    "FitDistribution",
    "GridAxis",
    "Mode",
    "ReplayFailure",
    "ReplayResult",
    "ReplayTask",
    "SampleDraw",
    "SpreadSettings",
    "StartError",
    "StartNoise",
    "SweepPoints",
    "SweepTask",
    "band_verdict",
    "choose_start_error",
    "compare_engines",
    "config_differences",
    "cross_fit_spreads",
    "describe_method",
    "draw_samples",
    "final_outcome",
    "find_modes",
    "finished_rows",
    "fit_calibration",
    "fit_distribution",
    "grid_points",
    "header",
    "horizon_rms",
    "misses_level",
    "mode_boxes",
    "nearest_mode",
    "parse_distances",
    "predict",
    "prediction_block",
    "records_spread",
    "records_spreads",
    "replay_trial",
    "rising_metrics",
    "run_replay_task",
    "run_standard_trial",
    "run_sweep_task",
    "samples_points",
    "self_calibration",
    "spread_of_fit",
    "spread_record",
    "summarize_by_distance",
    "sweep_config",
    "undetermined_unknowns",
    "write_header_if_new",
]

if not TYPE_CHECKING:
    def __getattr__(name: str) -> Any:
        """``sim2real.sysid.prediction.NAME`` (:func:`sim2real.sysid.faces.face_attribute`)."""
        from sim2real.sysid.faces import face_attribute

        return face_attribute(__name__, _FACE, name)

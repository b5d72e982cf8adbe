"""How well a simulator predicts whole trials, in the report's units.

Each trial is simulated from its recorded start to its end (the fit's mode resolved for whole
trials: the simulated arm under the recorded commands or PD law, the pusher played back, or a
free box from the recorded start, see :mod:`sim2real.sysid.prediction.replay`) and its final box pose is
compared with the recorded one (:func:`sim2real.trials.outcome_errors`, the numbers the report's
sim-vs-real columns show too):

* final position error, 3-D and horizontal (m, base frame);
* yaw error: the difference of the two boxes' twists about world z since the start (deg);
* path error: the RMS distance between the simulated and the recorded box centre over the trial
  (m, :func:`sim2real.trials.path_rms`, the report's path RMS);
* flip agreement: both boxes changed the face they rest on, or neither did.

A fit evaluates this at its start values and at its result, for the trials it was fitted on
and the held-out ones (:func:`prediction_summary`): the held-out figures are what the fitted
simulator predicts for trials it never saw, and any of them that is higher at the fitted values
than at the start values is a problem of the fit (:func:`rising_metrics`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim2real.execution import Executor, Shared
from sim2real.params import ParameterSet
from sim2real.sysid.problem import TrialData, mode_pusher_source, resolve_mode
from sim2real.sysid.residuals import TrialResiduals, Weights, one_line, step_params
from sim2real.trials import PoseSeries, compute_outcome, outcome_errors, path_rms

#: Held-out prediction metrics checked for a rise: key of :func:`overall`, words, unit factor, unit,
#: and the resolution below which a rise is not counted (the precision the figures are printed with).
RISING_METRICS: tuple[tuple[str, str, float, str, float], ...] = (
    ("final_position_m", "final position error", 1000.0, "mm", 1e-4),
    ("yaw_deg", "yaw error", 1.0, "deg", 0.1),
    ("path_rms_m", "path error (RMS)", 1000.0, "mm", 1e-4),
)
#: A held-out metric counts as higher after the fit when it rose by more than this fraction (and its resolution).
RISE_FRACTION = 0.01


@dataclass(frozen=True)
class Prediction:
    """One trial simulated whole against its recording.

    Attributes
    ----------
    name : str
        Trial name.
    final_position_m, final_position_xy_m : float
        Distance between the simulated and the recorded final box centre, 3-D and in the
        horizontal plane, m (NaN when the simulation failed).
    yaw_deg : float
        ``|sim twist − real twist|`` about world z since the start, wrapped to [0, 180], deg.
    path_rms_m : float
        RMS distance between the simulated and the recorded box centre over the trial, m.
    flip_agree : bool or None
        Both boxes flipped or neither (None when the simulation failed).
    error : str
        Why the simulation failed (empty when it did not).
    """

    name: str
    final_position_m: float = float("nan")
    final_position_xy_m: float = float("nan")
    yaw_deg: float = float("nan")
    flip_agree: bool | None = None
    error: str = ""
    path_rms_m: float = float("nan")

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN as None)."""
        def number(value: float) -> float | None:
            return float(value) if np.isfinite(value) else None
        return {"trial": self.name, "final_position_m": number(self.final_position_m),
                "final_position_xy_m": number(self.final_position_xy_m), "yaw_deg": number(self.yaw_deg),
                "path_rms_m": number(self.path_rms_m), "flip_agree": self.flip_agree, "error": self.error or None}


@dataclass(frozen=True)
class PredictionTask:
    """Inputs of one whole-trial prediction (picklable, for executors)."""

    data: Shared[TrialData]
    params: ParameterSet
    mode: str
    pusher: str
    pusher_shape: str = "sphere"
    engine: str = "ours"


def simulate_whole(data: TrialData, params: ParameterSet, mode: str, pusher: str, pusher_shape: str = "sphere",
                   engine: str = "ours") -> tuple[PoseSeries, ParameterSet]:
    """One trial simulated from its recorded start to its end: the simulated box poses and the parameters
    the trial was simulated with (its own object's values in, :func:`~sim2real.sysid.residuals.trial.step_params`).

    Raises
    ------
    Sim2RealError
        Missing inputs for the mode, or a simulation failure.
    """
    from sim2real.sysid.prediction.replay import simulate_data

    resolved = resolve_mode(data, mode, pusher)
    source = mode_pusher_source(data, resolved, pusher)
    trial_params = step_params(data, params)
    platform, _, _ = simulate_data(data, trial_params, resolved, source, pusher_shape=pusher_shape, engine=engine)
    assert platform.box_pose is not None
    return platform.box_pose, trial_params


def run_prediction(task: PredictionTask) -> Prediction:
    """Simulate one trial whole and compare its final box pose; failures are returned, not raised."""
    data = task.data.get()
    try:
        box_pose, params = simulate_whole(data, task.params, task.mode, task.pusher, task.pusher_shape, task.engine)
        size = [float(params[f"box.size_{axis}"]) for axis in "xyz"]
        recorded = PoseSeries(data.t, data.box_position, data.box_quaternion)
        real = compute_outcome(recorded, size)
        sim = compute_outcome(box_pose, size)
        path = path_rms(recorded, box_pose)
    except Exception as err:  # one trial's failure must not end the others
        return Prediction(data.name, error=one_line(err))
    errors = outcome_errors(real, sim)
    return Prediction(data.name, errors.final_position_m, errors.final_position_xy_m, errors.yaw_deg,
                      errors.flip_agree, path_rms_m=float("nan") if path is None else path)


def predict(executor: Executor, trials: Sequence[Shared[TrialData]], params: ParameterSet, mode: str,
            pusher: str, pusher_shape: str = "sphere", engine: str = "ours") -> list[Prediction]:
    """:func:`run_prediction` of every trial on ``executor``, in trial order; ``trials`` are the
    handles the fit already shared with the executor's workers (no second copy)."""
    tasks = [PredictionTask(t, params, mode, pusher, pusher_shape, engine) for t in trials]
    return list(executor.map(run_prediction, tasks))


def overall(predictions: Sequence[Prediction]) -> dict[str, Any]:
    """Means over the trials that simulated: final position error (m), horizontal (m), yaw (deg), flips.

    Returns
    -------
    dict
        ``trials`` (simulated), ``failed``, ``final_position_m`` (mean), ``final_position_median_m``,
        ``final_position_xy_m``, ``yaw_deg``, ``path_rms_m`` (means; the path over the trials that
        have one), ``flip_agreement`` ("k/n").
    """
    done = [p for p in predictions if not p.error]
    if not done:
        return {"trials": 0, "failed": len(predictions)}
    position = np.array([p.final_position_m for p in done])
    paths = [p.path_rms_m for p in done if np.isfinite(p.path_rms_m)]
    return {"trials": len(done), "failed": len(predictions) - len(done),
            "final_position_m": float(position.mean()), "final_position_median_m": float(np.median(position)),
            "final_position_xy_m": float(np.mean([p.final_position_xy_m for p in done])),
            "yaw_deg": float(np.mean([p.yaw_deg for p in done])),
            "path_rms_m": float(np.mean(paths)) if paths else None,
            "flip_agreement": f"{sum(bool(p.flip_agree) for p in done)}/{len(done)}"}


def horizon_rms(results: Sequence[TrialResiduals], masks: Sequence[np.ndarray], weights: Weights) -> dict[str, float]:
    """RMS box position (m) and orientation (deg) error over the fit's residual rows (its horizon).

    Parameters
    ----------
    results : sequence of TrialResiduals
        Weighted residuals per trial.
    masks : sequence of ndarray of bool
        Rows left out per trial (degraded solver steps).
    weights : Weights
        The fit's group weights (divided out).
    """
    position, orientation = [], []
    for res, mask in zip(results, masks, strict=True):
        keep = ~(mask | res.dropped_mask)
        if weights.position > 0.0:
            position.append(res.residuals[keep & (res.groups == 0)] / weights.position)
        if weights.orientation > 0.0:
            orientation.append(res.residuals[keep & (res.groups == 1)] / weights.orientation)
    out = {}
    rows = np.concatenate(position) if position else np.zeros(0)
    if rows.size:
        out["position_m"] = float(np.sqrt(np.mean(rows ** 2)))
    rows = np.concatenate(orientation) if orientation else np.zeros(0)
    if rows.size:
        out["orientation_deg"] = float(np.degrees(np.sqrt(np.mean(rows ** 2))))
    return out


def prediction_block(start: Sequence[Prediction], final: Sequence[Prediction],
                     rms_start: dict[str, float] | None = None,
                     rms_final: dict[str, float] | None = None) -> dict[str, Any]:
    """One set of trials at the start and fitted values: overall figures and per-trial rows."""
    block: dict[str, Any] = {"start": overall(start), "final": overall(final),
                             "trials": [{"trial": a.name, "start": a.as_dict(), "final": b.as_dict()}
                                        for a, b in zip(start, final, strict=True)]}
    if rms_start is not None and rms_final is not None:
        block["horizon_rms"] = {"start": rms_start, "final": rms_final}
    return block


def rising_metrics(validation: dict[str, Any]) -> str | None:
    """The held-out prediction metrics that are higher at the fitted values than at the start values.

    A metric (mean final position error, mean yaw error, mean path RMS over the held-out trials that
    simulated at both values) counts when it rose by more than :data:`RISE_FRACTION` of its start
    value and more than its printed resolution (:data:`RISING_METRICS`): a fit that makes what it
    predicts for unseen trials worse is a problem whatever the training errors did.

    Parameters
    ----------
    validation : dict
        :func:`prediction_block` of the held-out trials.

    Returns
    -------
    str or None
        One line naming each risen metric with both values (None when none rose).
    """
    rows = [t for t in validation.get("trials", []) if not t["start"].get("error") and not t["final"].get("error")]
    risen = []
    for key, words, factor, unit, resolution in RISING_METRICS:
        pairs = [(t["start"].get(key), t["final"].get(key)) for t in rows]
        pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
        if not pairs:
            continue
        before = float(np.mean([a for a, _ in pairs]))
        after = float(np.mean([b for _, b in pairs]))
        if after - before > max(RISE_FRACTION * before, resolution):
            risen.append(f"{words} {before * factor:.1f} -> {after * factor:.1f} {unit}")
    if not risen:
        return None
    count = len(rows)
    return (f"held-out prediction error rose after the fit ({count} held-out trial{'s' if count != 1 else ''}, "
            f"start -> fitted values, means): {', '.join(risen)} (the fitted values predict unseen trials worse)")

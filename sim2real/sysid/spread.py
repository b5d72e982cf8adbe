"""Predictions as distributions: each trial simulated under parameter sets drawn from a fit.

A push whose outcome is sensitive (near-central, near a toppling distance) has no honest single
prediction: the fit's uncertainty and the noise of the measured start move the outcome. Here each
trial is simulated whole (as :mod:`sim2real.sysid.prediction` does) once per parameter set drawn
from the fit (:func:`sim2real.sysid.sampling.draw_samples`), optionally with the recorded start
pose perturbed by measurement noise, and the real outcome is compared with the spread:

* the outcome is the final box centre ``x, y`` (m, base frame) and the yaw, the twist about world
  z since the start (deg);
* the *predicted band* of each coordinate is the central ``level`` (default 95 %) of the draws
  (empirical quantiles; with N draws its ends are the ``(1 - level) / 2`` quantiles);
* the real outcome lies *inside* when every coordinate lies in its band;
* with start noise (the measurement noise of the recorded poses), each draw's start is moved by
  it and its final outcome gets it too, as the recorded outcome carries it.

Draws whose simulation fails are counted and left out of the band (never hidden).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sim2real.execution import Executor, Shared
from sim2real.params import ParameterSet
from sim2real.spatial import from_axis_angle, multiply
from sim2real.sysid.data import TrialData
from sim2real.sysid.prediction import simulate_whole
from sim2real.sysid.tasks import one_line
from sim2real.trials import PoseSeries, compute_outcome

#: File of a replayed run that holds its predicted spread (``replay --spread``).
SPREAD_JSON = "spread.json"
#: The outcome coordinates of a spread, and their units.
COORDINATES: tuple[tuple[str, str], ...] = (("x", "m"), ("y", "m"), ("yaw", "deg"))


@dataclass(frozen=True)
class StartNoise:
    """Measurement noise of a recorded start pose (standard deviations; 0 turns it off).

    Attributes
    ----------
    position_m : float
        Of the box centre's ``x`` and ``y``, m.
    yaw_rad : float
        Of its heading about world z, rad.
    """

    position_m: float = 0.0
    yaw_rad: float = 0.0


@dataclass(frozen=True)
class SpreadTask:
    """One trial under one drawn parameter set (picklable, for executors)."""

    data: Shared[TrialData]
    params: ParameterSet
    mode: str
    pusher: str
    pusher_shape: str
    engine: str
    start_shift: tuple[float, float, float]  # dx (m), dy (m), dyaw (rad)


def _shifted(data: TrialData, shift: tuple[float, float, float]) -> TrialData:
    """The trial with its start pose moved by ``(dx, dy, dyaw)`` (the recording itself unchanged)."""
    if not any(shift):
        return data
    dx, dy, dyaw = shift
    turn = from_axis_angle(np.array([0.0, 0.0, 1.0]), dyaw)
    if data.start_position is not None and data.start_quaternion is not None:
        return replace(data, start_position=data.start_position + np.array([dx, dy, 0.0]),
                       start_quaternion=multiply(turn, data.start_quaternion))
    position, quaternion = data.box_position.copy(), data.box_quaternion.copy()
    position[0] += np.array([dx, dy, 0.0])
    quaternion[0] = multiply(turn, quaternion[0])
    return replace(data, box_position=position, box_quaternion=quaternion)


def final_outcome(position: np.ndarray, quaternion: np.ndarray, size: Sequence[float]) -> np.ndarray:
    """``[x (m), y (m), yaw (deg)]`` of a box pose series: its final centre and its twist since the start."""
    outcome = compute_outcome(PoseSeries(np.arange(position.shape[0], dtype=float), position, quaternion), size)
    return np.array([outcome.final_position[0], outcome.final_position[1], outcome.yaw_deg])


def run_spread_task(task: SpreadTask) -> np.ndarray | str:
    """Simulate one trial whole under one parameter set: its final ``[x, y, yaw]``, or why it failed."""
    data = _shifted(task.data.get(), task.start_shift)
    try:
        box_pose, params = simulate_whole(data, task.params, task.mode, task.pusher, task.pusher_shape, task.engine)
        size = [float(params[f"box.size_{axis}"]) for axis in "xyz"]
        return final_outcome(box_pose.position, box_pose.quaternion, size)
    except Exception as err:  # one draw's failure is counted, it does not end the others
        return one_line(err)


@dataclass(frozen=True)
class TrialSpread:
    """One trial's predicted outcomes over the draws, and its real outcome.

    Attributes
    ----------
    name : str
    real : ndarray, shape (3,)
        Recorded final ``x`` (m), ``y`` (m) and yaw since the start (deg).
    predicted : ndarray, shape (M, 3)
        The same for each draw whose simulation worked (M ≤ N).
    failures : tuple of str
        Why the other draws failed (one line each).
    """

    name: str
    real: np.ndarray
    predicted: np.ndarray
    failures: tuple[str, ...] = ()

    def band(self, level: float = 0.95) -> np.ndarray:
        """Central ``level`` band per coordinate, shape (3, 2) (NaN without working draws)."""
        if self.predicted.shape[0] == 0:
            return np.full((3, 2), np.nan)
        tail = 0.5 * (1.0 - level)
        return np.quantile(self.predicted, [tail, 1.0 - tail], axis=0).T

    def inside(self, level: float = 0.95) -> bool | None:
        """Whether every real coordinate lies in its band (None without working draws)."""
        band = self.band(level)
        if not np.all(np.isfinite(band)):
            return None
        return bool(np.all((self.real >= band[:, 0]) & (self.real <= band[:, 1])))

    def as_dict(self, level: float = 0.95) -> dict[str, Any]:
        """JSON-ready: real outcome, median, band and inside per coordinate (units in the keys)."""
        band = self.band(level)
        median = np.median(self.predicted, axis=0) if self.predicted.shape[0] else np.full(3, np.nan)
        coords = {}
        for k, (name, unit) in enumerate(COORDINATES):
            coords[f"{name}_{unit}"] = {"real": float(self.real[k]), "median": _number(median[k]),
                                        "band": [_number(band[k, 0]), _number(band[k, 1])],
                                        "inside": bool(band[k, 0] <= self.real[k] <= band[k, 1])
                                        if np.all(np.isfinite(band[k])) else None}
        return {"trial": self.name, "draws": int(self.predicted.shape[0]) + len(self.failures),
                "failed_draws": len(self.failures), "failures": list(self.failures[:3]),
                "inside": self.inside(level), "outcome": coords,
                "predicted": [[float(v) for v in row] for row in self.predicted]}


def _number(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def start_shifts(noise: StartNoise, count: int, rng: np.random.Generator) -> np.ndarray:
    """``(count, 3)`` start shifts ``dx, dy`` (m) and ``dyaw`` (rad) drawn from ``noise`` (zeros when off)."""
    scale = np.array([noise.position_m, noise.position_m, noise.yaw_rad])
    return rng.standard_normal((count, 3)) * scale


def predict_spread(executor: Executor, trials: Sequence[TrialData], parameter_sets: Sequence[ParameterSet],
                   mode: str, pusher: str, pusher_shape: str = "sphere", engine: str = "ours",
                   noise: StartNoise = StartNoise(), rng: np.random.Generator | None = None) -> list[TrialSpread]:
    """Simulate every trial under every parameter set (and start perturbation); the spread per trial.

    Parameters
    ----------
    executor : Executor
        Runs the ``len(trials) × len(parameter_sets)`` simulations.
    trials : sequence of TrialData
    parameter_sets : sequence of ParameterSet
        The draws (each complete; a trial's own object values still replace theirs).
    mode, pusher, pusher_shape, engine : str
        As for a replay (:func:`sim2real.sysid.replay.replay`).
    noise : StartNoise
        Measurement noise of the recorded poses. Each draw's start is moved by it (each trial and
        draw gets its own shift), and each draw's final outcome gets it too, as the real one does:
        ``x`` and ``y`` the position noise, the yaw since the start that of two headings (√2 ×).
    rng : numpy.random.Generator, optional
        Source of the start shifts (required when ``noise`` is not zero).

    Returns
    -------
    list of TrialSpread
        In trial order.
    """
    count = len(parameter_sets)
    shifts = np.zeros((len(trials), count, 3))
    if noise.position_m > 0 or noise.yaw_rad > 0:
        if rng is None:
            raise ValueError("start noise needs a random generator")
        shifts = np.stack([start_shifts(noise, count, rng) for _ in trials])
    shared = [executor.share(t) for t in trials]
    tasks = [SpreadTask(shared[i], params, mode, pusher, pusher_shape, engine, tuple(float(v) for v in shifts[i, j]))
             for i in range(len(trials)) for j, params in enumerate(parameter_sets)]
    results = list(executor.map(run_spread_task, tasks))
    measured = np.array([noise.position_m, noise.position_m, np.sqrt(2.0) * np.degrees(noise.yaw_rad)])
    spreads = []
    for i, data in enumerate(trials):
        mine = results[i * count:(i + 1) * count]
        finals = [r for r in mine if isinstance(r, np.ndarray)]
        if finals and np.any(measured > 0):
            finals = list(np.array(finals) + rng.standard_normal((len(finals), 3)) * measured)  # type: ignore[union-attr]
        real = final_outcome(data.box_position, data.box_quaternion,
                             [float(parameter_sets[0][f"box.size_{a}"]) for a in "xyz"])
        spreads.append(TrialSpread(data.name, real, np.array(finals).reshape(-1, 3),
                                   tuple(r for r in mine if isinstance(r, str))))
    return spreads


def spread_of_fit(executor: Executor, dist: Any, params: ParameterSet, trials: Sequence[TrialData], draws: int,
                  rng: np.random.Generator, mode: str, pusher: str, pusher_shape: str = "sphere",
                  engine: str = "ours", noise: StartNoise = StartNoise()) -> tuple[Any, list[TrialSpread]]:
    """Draw ``draws`` parameter sets from a fit's distribution and predict every trial's spread under them.

    Parameters the fit did not determine are drawn uniformly within their bounds
    (:func:`sim2real.sysid.sampling.draw_samples` with ``undetermined="uniform"``); every other
    parameter keeps its value in ``params``.

    Returns
    -------
    (SampleDraw, list of TrialSpread)
    """
    from sim2real.sysid.sampling import draw_samples

    draw = draw_samples(dist, draws, rng, undetermined="uniform")
    sets = [params.replace(dict(zip(dist.names, (float(v) for v in row), strict=True))) for row in draw.values]
    return draw, predict_spread(executor, trials, sets, mode, pusher, pusher_shape, engine, noise, rng)


def spread_record(spreads: Sequence[TrialSpread], draw: Any, draws: int, seed: int, noise_mm: float,
                  noise_deg: float, fit: str, level: float = 0.95) -> dict[str, Any]:
    """The JSON record of a predicted spread (``spread.json``, fit.json ``validation.spread``)."""
    inside = [s.inside(level) for s in spreads]
    judged = [v for v in inside if v is not None]
    summary = (f"the real outcome lies inside the predicted {100 * level:g} % spread in {sum(judged)} of "
               f"{len(judged)} trial(s)" + (f" ({len(inside) - len(judged)} without a working draw)"
                                            if len(judged) < len(inside) else ""))
    return {"format": "sim2real.spread/1", "fit": fit, "draws": draws, "seed": seed,
            "uniform": list(draw.uniform), "start_noise": {"position_mm": noise_mm, "yaw_deg": noise_deg},
            "level": level, "summary": summary, "inside": sum(judged), "judged": len(judged),
            "trials": [s.as_dict(level) for s in spreads]}

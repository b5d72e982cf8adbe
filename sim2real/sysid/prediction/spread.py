"""Predictions as distributions: each trial simulated under parameter sets drawn from a fit.

A push whose outcome is sensitive (near-central, near a toppling distance) has no honest single
prediction: the fit's uncertainty and the noise of the measured start move the outcome. Here each
trial is simulated whole (as :mod:`sim2real.sysid.prediction.whole_trials` does) once per parameter set drawn
from the fit (:func:`sim2real.sysid.prediction.sampling.draw_samples`), with the recorded start pose perturbed
by its measurement noise, and the real outcome is compared with the prediction:

* the outcome is the final box centre ``x, y`` (m, base frame) and the yaw, the twist about world
  z since the start (deg);
* the draws are grouped into modes (:func:`sim2real.sysid.prediction.bands.find_modes`: turn left or right,
  flip or not), each with its probability;
* the *band* is every mode's box, widened by the model's discrepancy and a conformal quantile
  calibrated on trials the fit never saw (:mod:`sim2real.sysid.prediction.bands`): from the fit's held-out
  trials (``fit --spread-draws``, each held-out trial judged by the calibration from the others),
  or from the fit.json that holds that calibration (``replay --spread``). Without one the band is
  the draws' central ``level`` (the *parameter-only* band), said as such: it holds what the
  parameters and the start leave open, not what the model gets wrong;
* the real outcome lies *inside* when every coordinate lies in some mode's box;
* start noise (the measurement noise of the recorded poses, :class:`StartNoise`): each draw's start
  is moved by the error of the recorded start (the noise over the square root of the poses it
  averages) and its final outcome gets the noise of one pose, as the recorded outcome carries it.
  :data:`MEASURED` takes both from each recording (:func:`sim2real.sysid.problem.data.pose_noise`).
* frame uncertainty: a trial imported with a frame calibration (``import --frames``) keeps what the
  calibration left unknown of its tracking frame's planar offset and of its tracking origin's offset
  from the box centre (trial.json ``import.frame_uncertainty``); each draw then sees the recorded box
  poses through a frame and an origin off by its own errors (:func:`frame_shifts`): simulated from the
  start as they would have it, its outcome recorded through them. A box that moves alone is not
  changed by the frame's error (the table is level); a pushed one is, as the pusher meets it
  elsewhere, and so is any box by the origin's (its centre sits elsewhere in it).

Draws whose simulation fails are counted and left out of the band (never hidden). The record of a
spread, its calibration and its verdicts are in :mod:`sim2real.sysid.prediction.spread_calibration`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, cast

import numpy as np

from sim2real.execution import Executor, Shared
from sim2real.params import ParameterSet
from sim2real.spatial import from_axis_angle, multiply, rotate
from sim2real.sysid.prediction.bands import (
    DEFAULT_LEVEL,
    Mode,
    TrialBand,
    find_modes,
)
from sim2real.sysid.prediction.whole_trials import simulate_whole
from sim2real.sysid.problem import TrialData, Unknown
from sim2real.sysid.residuals import one_line
from sim2real.trials import PoseSeries, compute_outcome
from sim2real.trials.frames_file import FrameUncertainty

#: File of a replayed run that holds its predicted spread (``replay --spread``).
SPREAD_JSON = "spread.json"
#: The outcome coordinates of a spread, and their units.
COORDINATES: tuple[tuple[str, str], ...] = (("x", "m"), ("y", "m"), ("yaw", "deg"))


@dataclass(frozen=True)
class StartNoise:
    """Measurement noise of the recorded box poses (standard deviations of one pose; 0 turns it off), and an
    error of the recorded start beyond it (calibrated on trials the fit did not see, :class:`StartError`).

    Attributes
    ----------
    position_m : float
        Of the box centre's ``x`` and ``y``, m.
    yaw_rad : float
        Of its heading about world z, rad.
    start_samples : int
        Poses averaged into the recorded start: its error is the noise over their square root.
    error_m, error_rad : float
        The start's error beyond the measurement noise: of its ``x`` and ``y`` (m) and heading (rad), one
        shift of the whole start (both first poses of a box-only trial alike: no velocity error).
    """

    position_m: float = 0.0
    yaw_rad: float = 0.0
    start_samples: int = 1
    error_m: float = 0.0
    error_rad: float = 0.0

    @property
    def active(self) -> bool:
        """Whether any noise or error is drawn."""
        return self.position_m > 0 or self.yaw_rad > 0 or self.error_m > 0 or self.error_rad > 0

    def start_std(self) -> np.ndarray:
        """Standard deviations (3,) of the recorded start's measurement noise: ``dx``, ``dy`` (m) and ``dyaw``
        (rad)."""
        return np.array([self.position_m, self.position_m, self.yaw_rad]) / np.sqrt(max(self.start_samples, 1))

    def error_std(self) -> np.ndarray:
        """Standard deviations (3,) of the start's error beyond its noise: ``dx``, ``dy`` (m), ``dyaw`` (rad)."""
        return np.array([self.error_m, self.error_m, self.error_rad])

    def with_error(self, error: StartError) -> StartNoise:
        """This noise with ``error`` as the start's error."""
        return replace(self, error_m=error.position_m, error_rad=error.yaw_rad)

    def outcome_std(self) -> np.ndarray:
        """Standard deviations (3,) of a recorded outcome against a prediction from the same recorded first
        pose: final ``x``, ``y`` (m) and the yaw since that pose (deg): one pose's noise each (the first
        pose's noise is shared by both and cancels)."""
        return np.array([self.position_m, self.position_m, np.degrees(self.yaw_rad)])


@dataclass(frozen=True)
class StartError:
    """An error of the recorded start beyond its measurement noise (standard deviations; 0: none).

    Pushes that hang on a millimetre (near-central, near toppling) amplify what the start's measurement noise
    does not cover: a frame or tracking-origin error left after calibration, a contact point off its plan.
    ``fit --spread-draws`` chooses it from :data:`START_ERRORS` by the calibration trials' log score
    (:func:`sim2real.sysid.prediction.spread_calibration.choose_start_error`).

    Attributes
    ----------
    position_m : float
        Of the start's ``x`` and ``y``, m.
    yaw_rad : float
        Of its heading, rad.
    """

    position_m: float = 0.0
    yaw_rad: float = 0.0

    def as_dict(self) -> dict[str, float]:
        """JSON-ready (units in the keys)."""
        return {"position_mm": 1000.0 * self.position_m, "yaw_deg": float(np.degrees(self.yaw_rad))}

    @classmethod
    def from_dict(cls, document: Any) -> StartError:
        """Read :meth:`as_dict` back; ``ValueError`` when it is not two finite numbers ≥ 0."""
        if not isinstance(document, dict):
            raise ValueError("a start error must be an object of position_mm and yaw_deg")
        values = [document.get("position_mm"), document.get("yaw_deg")]
        numbers = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if len(numbers) != 2 or not all(np.isfinite(v) and v >= 0 for v in numbers):
            raise ValueError("a start error's position_mm and yaw_deg must be finite numbers >= 0")
        return cls(numbers[0] / 1000.0, float(np.radians(numbers[1])))


#: No start error beyond the measurement noise.
NO_START_ERROR = StartError()
#: The start errors ``fit --start-error auto`` chooses from (m, rad): none, then 0.25, 0.5, 1, 2 and 4 mm in x
#: and y, each with as many degrees of heading.
START_ERRORS: tuple[StartError, ...] = (NO_START_ERROR, *(StartError(mm / 1000.0, float(np.radians(mm)))
                                                      for mm in (0.25, 0.5, 1.0, 2.0, 4.0)))


#: Start noise measured from each recording itself (``--start-noise auto``).
MEASURED = "measured"


def trial_noise(data: TrialData, noise: StartNoise | str) -> StartNoise:
    """The start noise of one trial: ``noise`` itself, or for :data:`MEASURED` the recording's own
    pose noise (:func:`sim2real.sysid.problem.data.pose_noise`) with the poses its start averages."""
    if isinstance(noise, StartNoise):
        return noise
    from sim2real.sysid.problem import pose_noise

    position, heading = pose_noise(data)
    return StartNoise(position, heading, max(int(data.start_samples), 1))


@dataclass(frozen=True)
class SpreadTask:
    """One trial under one drawn parameter set (picklable, for executors)."""

    data: Shared[TrialData]
    params: ParameterSet
    mode: str
    pusher: str
    pusher_shape: str
    engine: str
    start_shift: tuple[float, ...]  # (dx (m), dy (m), dyaw (rad)) of the start, then of a second pose
    #: (dx (m), dy (m), dyaw (rad), ox (m), oy (m)): the tracking frame's and origin's errors (none: empty)
    frame_shift: tuple[float, ...] = ()


def _shifted(data: TrialData, shift: tuple[float, ...]) -> TrialData:
    """The trial with its start moved by ``shift`` (the recording itself unchanged).

    ``shift`` holds ``(dx, dy, dyaw)`` (m, m, rad) twice: a resting start (the mean of the resting poses)
    moves by the first; a box-only trial, whose rollout starts from its first two poses (the second the
    pose, both the velocity), has each of them moved by its own, as measurement noise moves them.
    """
    if not any(shift):
        return data
    if data.start_position is not None and data.start_quaternion is not None:
        return replace(data, start_position=data.start_position + np.array([shift[0], shift[1], 0.0]),
                       start_quaternion=multiply(_turn(shift[2]), data.start_quaternion))
    position, quaternion = data.box_position.copy(), data.box_quaternion.copy()
    for k in range(min(2, position.shape[0])):
        dx, dy, dyaw = shift[3 * k:3 * k + 3]
        position[k] += np.array([dx, dy, 0.0])
        quaternion[k] = multiply(_turn(dyaw), quaternion[k])
    return replace(data, box_position=position, box_quaternion=quaternion)


def _turn(angle: float) -> np.ndarray:
    return from_axis_angle(np.array([0.0, 0.0, 1.0]), angle)


def framed(position: np.ndarray, quaternion: np.ndarray, frame: tuple[float, ...], pivot: np.ndarray,
           inverse: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Box poses as a tracking frame off by ``frame`` records them (``inverse``: the poses such a frame
    recorded, in the true frame).

    Parameters
    ----------
    position : ndarray, shape (..., 3)
        Box centres, m, base frame.
    quaternion : ndarray, shape (..., 4)
        Orientations, w-x-y-z.
    frame : tuple of float
        ``(dx, dy, dyaw)`` (m, m, rad): the frame turned by ``dyaw`` about ``pivot``, then shifted; optionally
        then ``ox, oy`` (m): the recorded origin off the centre by that in the box's axes.
    pivot : ndarray, shape (3,)
    """
    dx, dy, dyaw = frame[:3]
    shift = np.array([dx, dy, 0.0])
    origin = np.array([*frame[3:5], 0.0]) if len(frame) >= 5 else np.zeros(3)
    if inverse:
        turn = _turn(-dyaw)
        true_q = multiply(turn, quaternion)
        centre = pivot + rotate(turn, position - shift - pivot)
        return centre - rotate(true_q, np.broadcast_to(origin, centre.shape)), true_q
    turn = _turn(dyaw)
    moved = position + rotate(quaternion, np.broadcast_to(origin, position.shape))
    return pivot + rotate(turn, moved - pivot) + shift, multiply(turn, quaternion)


def _in_true_frame(data: TrialData, frame: tuple[float, ...]) -> TrialData:
    """The trial's box poses (its start and the recorded series) as they were, were its tracking frame
    off by ``frame`` (:func:`framed`; the pusher and the arm keep theirs)."""
    assert data.frame_uncertainty is not None
    pivot = data.frame_uncertainty.pivot
    position, quaternion = framed(data.box_position, data.box_quaternion, frame, pivot, inverse=True)
    data = replace(data, box_position=position, box_quaternion=quaternion)
    if data.start_position is not None and data.start_quaternion is not None:
        start, start_q = framed(data.start_position, data.start_quaternion, frame, pivot, inverse=True)
        data = replace(data, start_position=start, start_quaternion=start_q)
    return data


def final_outcome(position: np.ndarray, quaternion: np.ndarray, size: Sequence[float],
                  start_quaternion: np.ndarray | None = None) -> np.ndarray:
    """``[x (m), y (m), yaw (deg)]`` of a box pose series: its final centre and its twist about world z
    since ``start_quaternion`` (w-x-y-z; default the series' first orientation)."""
    if start_quaternion is not None:
        quaternion = np.concatenate([np.asarray(start_quaternion, dtype=float)[None], quaternion[1:]])
    outcome = compute_outcome(PoseSeries(np.arange(position.shape[0], dtype=float), position, quaternion), size)
    return np.array([outcome.final_position[0], outcome.final_position[1], outcome.yaw_deg])


def run_spread_task(task: SpreadTask) -> np.ndarray | str:
    """Simulate one trial whole under one parameter set: its final ``[x, y, yaw]`` (the yaw since the
    recorded first pose, as the real outcome's), or why it failed."""
    recorded = task.data.get()
    data = _shifted(recorded, task.start_shift)
    if task.frame_shift:
        data = _in_true_frame(data, task.frame_shift)
    try:
        box_pose, params = simulate_whole(data, task.params, task.mode, task.pusher, task.pusher_shape, task.engine)
        size = [float(params[f"box.size_{axis}"]) for axis in "xyz"]
        position, quaternion = box_pose.position, box_pose.quaternion
        if task.frame_shift:
            assert recorded.frame_uncertainty is not None
            position, quaternion = framed(position, quaternion, task.frame_shift, recorded.frame_uncertainty.pivot)
        return final_outcome(position, quaternion, size, recorded.box_quaternion[0])
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
    noise : StartNoise
        The measurement noise the draws were given.
    frame : FrameUncertainty or None
        The tracking frame's uncertainty the draws were given (each its own frame error), if any.
    """

    name: str
    real: np.ndarray
    predicted: np.ndarray
    failures: tuple[str, ...] = ()
    noise: StartNoise = StartNoise()
    frame: FrameUncertainty | None = None

    def band(self, level: float = DEFAULT_LEVEL) -> np.ndarray:
        """The parameter-only band: the draws' central ``level`` per coordinate, shape (3, 2) (NaN without
        working draws)."""
        if self.predicted.shape[0] == 0:
            return np.full((3, 2), np.nan)
        tail = 0.5 * (1.0 - level)
        return np.quantile(self.predicted, [tail, 1.0 - tail], axis=0).T

    def inside(self, level: float = DEFAULT_LEVEL) -> bool | None:
        """Whether every real coordinate lies in its parameter-only band (None without working draws)."""
        band = self.band(level)
        if not np.all(np.isfinite(band)):
            return None
        return bool(np.all((self.real >= band[:, 0]) & (self.real <= band[:, 1])))

    def modes(self) -> tuple[Mode, ...]:
        """The modes of the working draws (:func:`sim2real.sysid.prediction.bands.find_modes`; empty without any)."""
        return self._modes

    @cached_property
    def _modes(self) -> tuple[Mode, ...]:
        return find_modes(self.predicted)

    def as_dict(self, level: float = DEFAULT_LEVEL, band: TrialBand | None = None) -> dict[str, Any]:
        """JSON-ready: real outcome, median, band and inside per coordinate (units in the keys).

        ``band`` is the trial's calibrated band: it sets ``band`` and ``inside`` (per coordinate: the
        hull of its modes' boxes) and the modes; without it both are the parameter-only band's.
        ``parameter_band`` and ``parameter_inside`` are always the parameter-only ones.
        """
        parameter = self.band(level)
        reported = band.hull() if band is not None else parameter
        median = np.median(self.predicted, axis=0) if self.predicted.shape[0] else np.full(3, np.nan)
        coords = {}
        for k, (name, unit) in enumerate(COORDINATES):
            coords[f"{name}_{unit}"] = {"real": float(self.real[k]), "median": _number(median[k]),
                                        "band": [_number(reported[k, 0]), _number(reported[k, 1])],
                                        "inside": _within(self.real[k], reported[k]),
                                        "parameter_band": [_number(parameter[k, 0]), _number(parameter[k, 1])]}
        entry: dict[str, Any] = {
            "trial": self.name, "draws": int(self.predicted.shape[0]) + len(self.failures),
            "failed_draws": len(self.failures), "failures": list(self.failures[:3]),
            "inside": band.inside if band is not None else self.inside(level),
            "parameter_inside": self.inside(level), "calibrated": band is not None, "outcome": coords,
            "start_noise": {"position_mm": 1000.0 * self.noise.position_m,
                            "yaw_deg": float(np.degrees(self.noise.yaw_rad)),
                            "start_samples": self.noise.start_samples,
                            "error_mm": 1000.0 * self.noise.error_m,
                            "error_deg": float(np.degrees(self.noise.error_rad))},
            "frame_uncertainty": self.frame.as_dict() if self.frame is not None else None,
            "predicted": [[float(v) for v in row] for row in self.predicted]}
        modes = band.modes if band is not None else self.modes()
        entry["modes"] = [_mode_dict(m, band.boxes[j] if band is not None else None) for j, m in enumerate(modes)]
        if band is not None:
            entry.update({"nearest_mode": band.nearest, "score": band.score, "log_score": band.log_score,
                          "nearest_mode_probability": band.modes[band.nearest].probability})
        return entry


def _within(value: float, interval: np.ndarray) -> bool | None:
    return bool(interval[0] <= value <= interval[1]) if np.all(np.isfinite(interval)) else None


def _mode_dict(mode: Mode, box: np.ndarray | None) -> dict[str, Any]:
    """One mode of a trial: probability, centre, draws' scale and (calibrated) box per coordinate."""
    out: dict[str, Any] = {"probability": mode.probability}
    for k, (name, unit) in enumerate(COORDINATES):
        out[f"{name}_{unit}"] = {"centre": float(mode.centre[k]), "scale": float(mode.scale[k]),
                                 "band": None if box is None else [_number(box[k, 0]), _number(box[k, 1])]}
    return out


def _number(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def start_shifts(noise: StartNoise, count: int, rng: np.random.Generator) -> np.ndarray:
    """``(count, 6)`` start shifts drawn from ``noise``: ``dx, dy`` (m) and ``dyaw`` (rad) of the start, and
    again of a box-only trial's second pose (:func:`_shifted`): each pose its own measurement noise, both
    the same start error."""
    shifts = rng.standard_normal((count, 6)) * np.tile(noise.start_std(), 2)
    if np.any(noise.error_std() > 0):
        shifts += np.tile(rng.standard_normal((count, 3)) * noise.error_std(), 2)
    return shifts


def frame_shifts(data: TrialData, count: int, rng: np.random.Generator | None) -> np.ndarray | None:
    """``(count, 5)`` tracking-frame errors ``dx, dy`` (m), ``dyaw`` (rad) and origin errors ``ox, oy`` (m)
    drawn from the trial's frame uncertainty (independent normals); None when the trial has none (or it is
    zero)."""
    frame = data.frame_uncertainty
    if frame is None or not np.any(frame.drawn > 0):
        return None
    if rng is None:
        raise ValueError("frame uncertainty needs a random generator")
    return rng.standard_normal((count, 5)) * frame.drawn


def _frame_tuples(shifts: np.ndarray | None, count: int) -> list[tuple[float, ...]]:
    """Per draw, its frame error as :attr:`SpreadTask.frame_shift` takes it (empty without one)."""
    if shifts is None:
        return [()] * count
    return [tuple(float(v) for v in row) for row in shifts]


def predict_spread(executor: Executor, trials: Sequence[TrialData],
                   parameter_sets: Sequence[ParameterSet] | Sequence[Sequence[ParameterSet]], mode: str,
                   pusher: str, pusher_shape: str = "sphere", engine: str = "ours",
                   noise: StartNoise | str = StartNoise(), rng: np.random.Generator | None = None,
                   start_error: StartError = NO_START_ERROR) -> list[TrialSpread]:
    """Simulate every trial under every parameter set (and start perturbation); the spread per trial.

    Parameters
    ----------
    executor : Executor
        Runs the ``len(trials) × len(parameter_sets)`` simulations.
    trials : sequence of TrialData
    parameter_sets : sequence of ParameterSet, or one such sequence per trial
        The draws (each complete; a trial's own object values still replace theirs); per trial when
        the draws differ by object (a per-object fit), each trial's sequence as long.
    mode, pusher, pusher_shape, engine : str
        As for a replay (:func:`sim2real.sysid.prediction.replay.replay`).
    noise : StartNoise or :data:`MEASURED`
        Measurement noise of the recorded poses (one for every trial, or each recording's own). Each
        draw's start is moved by the start's error (each trial and draw gets its own shift), and
        each draw's final outcome gets one pose's noise, as the real one does
        (:meth:`StartNoise.outcome_std`).
    rng : numpy.random.Generator, optional
        Source of the start shifts and frame errors (required when there is noise or a trial carries a
        frame uncertainty, :func:`frame_shifts`: each draw's box poses are then those of a tracking frame
        off by its own error, :func:`framed`).
    start_error : StartError
        The start's error beyond its measurement noise, for every trial (default none).

    Returns
    -------
    list of TrialSpread
        In trial order.
    """
    per_trial = _per_trial(parameter_sets, len(trials))
    count = len(per_trial[0]) if per_trial else 0
    noises = [trial_noise(data, noise).with_error(start_error) for data in trials]
    shifts = np.zeros((len(trials), count, 6))
    if any(n.active for n in noises):
        if rng is None:
            raise ValueError("start noise needs a random generator")
        shifts = np.stack([start_shifts(n, count, rng) for n in noises])
    frames = [_frame_tuples(frame_shifts(data, count, rng), count) for data in trials]
    shared = [executor.share(t) for t in trials]
    tasks = [SpreadTask(shared[i], params, mode, pusher, pusher_shape, engine, tuple(float(v) for v in shifts[i, j]),
                        frames[i][j]) for i in range(len(trials)) for j, params in enumerate(per_trial[i])]
    results = list(executor.map(run_spread_task, tasks))
    spreads = []
    for i, data in enumerate(trials):
        mine = results[i * count:(i + 1) * count]
        finals = np.array([r for r in mine if isinstance(r, np.ndarray)]).reshape(-1, 3)
        if finals.shape[0] and noises[i].active and rng is not None:
            finals = finals + rng.standard_normal(finals.shape) * noises[i].outcome_std()
        real = final_outcome(data.box_position, data.box_quaternion,
                             [float(per_trial[i][0][f"box.size_{a}"]) for a in "xyz"])
        spreads.append(TrialSpread(data.name, real, finals, tuple(r for r in mine if isinstance(r, str)),
                                   noises[i], data.frame_uncertainty if any(frames[i]) else None))
    return spreads


def _per_trial(parameter_sets: Sequence[ParameterSet] | Sequence[Sequence[ParameterSet]],
               trials: int) -> list[Sequence[ParameterSet]]:
    """The draws of each of ``trials`` trials: the one sequence for all, or each trial's own."""
    if parameter_sets and isinstance(parameter_sets[0], ParameterSet):
        return [cast("Sequence[ParameterSet]", parameter_sets)] * trials
    return [cast("Sequence[ParameterSet]", parameter_sets[i]) for i in range(trials)]


def spread_of_fit(executor: Executor, dist: Any, params: ParameterSet, trials: Sequence[TrialData], draws: int,
                  rng: np.random.Generator, mode: str, pusher: str, pusher_shape: str = "sphere",
                  engine: str = "ours", noise: StartNoise | str = StartNoise(),
                  start_error: StartError = NO_START_ERROR) -> tuple[Any, list[TrialSpread]]:
    """Draw ``draws`` parameter sets from a fit's distribution and predict every trial's spread under them.

    Parameters the fit did not determine are drawn uniformly within their bounds
    (:func:`sim2real.sysid.prediction.sampling.draw_samples` with ``undetermined="uniform"``); every other
    parameter keeps its value in ``params``.

    Returns
    -------
    (SampleDraw, list of TrialSpread)
    """
    from sim2real.sysid.prediction.sampling import draw_samples

    draw = draw_samples(dist, draws, rng, undetermined="uniform")
    sets = [[params.replace(trial_values(dist.unknowns, row, data.object_name)) for row in draw.values]
            for data in trials]
    return draw, predict_spread(executor, trials, sets, mode, pusher, pusher_shape, engine, noise, rng, start_error)


def trial_values(unknowns: Sequence[Unknown], row: Sequence[float] | np.ndarray, obj: str | None) -> dict[str, float]:
    """One draw's values for a trial of object ``obj``: the shared unknowns' names and the names of ``obj``'s own
    (:class:`~sim2real.sysid.problem.objects.Unknown`), each under its registry name; the other objects' left out.

    Parameters
    ----------
    unknowns : sequence of Unknown
        The fit's unknowns, in order.
    row : sequence of float, shape (number of reported names,)
        One draw, a value per reported name (each unknown's names in turn, :attr:`FitDistribution.names`).
    obj : str or None
        The trial's object.
    """
    names = [(name, u.obj) for u in unknowns for name in u.names]
    return {name: float(v) for (name, owner), v in zip(names, row, strict=True) if owner in (None, obj)}


@dataclass(frozen=True)
class SpreadSettings:
    """How the trials of a spread are simulated and judged (as for a replay, :mod:`sim2real.sysid.prediction.replay`).

    Attributes
    ----------
    mode, pusher, pusher_shape, engine, platform : str
        What drives each simulation, and which recording of a trial it starts from.
    executor : str
        ``"local"`` or ``"ray"``; ``workers`` processes (1: this process).
    seed : int
        Of the draws, the start shifts and the outcome noise.
    level : float
        The band's nominal level.
    """

    mode: str = "auto"
    pusher: str = "auto"
    pusher_shape: str = "sphere"
    engine: str = "ours"
    platform: str = "auto"
    executor: str = "local"
    workers: int = 1
    seed: int = 0
    level: float = DEFAULT_LEVEL

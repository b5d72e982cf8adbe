"""Frames and clock from the recordings themselves: what ``sim2real calibrate`` estimates.

An imported trial holds the box's tracked pose mapped into the arm base frame (``--transform``,
``--box-offset``) and the pusher point from the arm's own record. When the tracking frame, the
tracking origin or the box stream's clock are off, the recording still reads as numbers: the pusher
hovers millimetres off the face it is visibly pushing, or pushes through it, and the box rests above
or in the table. The recordings hold the evidence to correct them:

* while the box moves and the pusher moves with it, the pusher touches the face it pushes;
* before the push the box rests flat on the table.

The corrections of the box stream (``θ``, :data:`PARAMETERS`, and ``dz_m``):

``dx_m``, ``dy_m``, ``dyaw_rad``
    The tracking frame's planar offset in the base frame: a turn by ``dyaw`` about the pivot (the
    mean resting box position over the trials), then a shift by (``dx``, ``dy``).
``dz_m``
    The box's height: the tracking frame's vertical offset and the tracking origin's height on the
    box act alike on a box that stays level, so the rest data give their sum; applied as a shift of
    the frame.
``ox_m``, ``oy_m``
    The tracking origin's offset from the box's geometric centre, in the box's axes (behind
    ``--box-offset``).
``delay_s``
    The box stream's delay against the pusher stream: the box pose stamped ``s`` was the box at
    ``s - delay``.
``gap_m``
    A contact gap common to every sample (the pusher's radius, a marker model): a nuisance, not applied.
``tx_m``, ``ty_m``, ``tz_m``
    The tool offset's error: the pusher point is off by this vector in the recorded pusher pose's own
    axes (the frame ``--tool-offset`` is given in, behind it). As long as the pusher keeps one
    orientation it moves every pusher point by the same vector, as a shift of the tracking frame does
    the other way: it is then confounded with (``dx``, ``dy``), which take it up. It is estimated, in a
    second solve from the first's solution, only when the pusher's recorded orientation turns by at
    least :data:`TOOL_TURN_MIN_DEG` over the contact samples, and applied only when that solve gives
    its horizontal part to :data:`TOOL_STD_MAX_M` (:attr:`FrameCalibration.tool_note` says why not
    otherwise). The component along the pusher's axis nearest the vertical (a rod's length, pointing
    down) is held: pushes on vertical faces do not see it.

Estimation. ``dz`` from each trial's resting box (its bottom face's height; mean over the trials,
uncertainty from their spread). The others by least squares on contact samples (:func:`contact_samples`):
box samples where box and pusher both move, the box no faster than the pusher, away from starts and
stops; the residual is the pusher's distance from the plane of the face it pushes (:func:`face_distances`),
the pusher interpolated to the box sample's true time (the arm's record is smooth; the noisy box
stream is never interpolated). A robust solve on the samples within :data:`CONTACT_WINDOW_M`, then
:data:`SELECTION_ROUNDS` rounds of selecting the samples within :data:`OUTLIER_M` at the solution and
solving again, from each delay of :data:`DELAY_STARTS` (:func:`_best` picks among them), with a weak
prior (:data:`PRIOR_SCALES`) that holds what no push informs. Uncertainty: a sandwich over trials
(samples of one trial are not independent) or the leave-one-trial-out jackknife, whichever is wider,
Student's t with trials − 1 degrees of freedom. A correction whose standard deviation exceeds half its
prior scale is *not determined* by these trials (e.g. the origin offset along a face no push met); it is
reported and not applied. :mod:`sim2real.trials.frames_file` writes the result as import options.

Not estimated: a tilt of the tracking frame. Frames: arm base frame, z up; m, rad, s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, stats

from sim2real.errors import InputError
from sim2real.spatial import conjugate, rotate
from sim2real.trials.contact_samples import (
    CONTACT_WINDOW_M,
    TOOL_PARAMETERS,
    CalibrationTrial,
    Contact,
    contact_samples,
    corrected_box,
    distances,
    face_distances,
)
from sim2real.trials.records import PoseSeries
from sim2real.trials.resting import resting_start

#: The corrections, in the order of θ.
PARAMETERS = ("dx_m", "dy_m", "dyaw_rad", "ox_m", "oy_m", "delay_s", "gap_m", *TOOL_PARAMETERS)
#: Prior standard deviations of the contact corrections (m, m, rad, m, m, s): far wider than what the
#: data determine in a pushed direction, so they only hold what no push informs; and of ``gap_m``, a
#: contact gap common to every sample (the pusher's radius, a marker model's error, the contact model's
#: own compliance: a few tenths of a millimetre), a nuisance whose prior widens what it is confounded with.
PRIOR_SCALES = np.array([0.02, 0.02, np.radians(5.0), 0.02, 0.02, 0.1, 0.0005, 0.02, 0.02, 0.02])
#: The corrections the first solve frees (all but the tool offset's), a mask over θ.
WITHOUT_TOOL = np.array([name not in TOOL_PARAMETERS for name in PARAMETERS])
#: The tool offset is estimated only when the pusher's recorded orientation turns by at least this over the
#: contact samples, deg (less, and a tool offset is all but a shift of the tracking frame).
TOOL_TURN_MIN_DEG = 5.0
#: The tool offset is applied only when its horizontal components' standard deviations are at most this, m.
TOOL_STD_MAX_M = 0.001
#: After the robust pass, samples further than this from contact are left out, m.
OUTLIER_M = 0.004
#: Rounds of selecting the contact samples again at the last solution (within :data:`OUTLIER_M`) and solving.
SELECTION_ROUNDS = 3
#: Delays (s) the solve starts from.
DELAY_STARTS = (0.0, 0.03, 0.06, 0.1, -0.03)
#: Of the starts' solutions, those with at least this share of the most contact samples compete on RMS.
LEAST_SHARE = 0.8
#: Scale of a contact residual, m (the robust loss's knee).
CONTACT_SCALE_M = 0.001
#: Fewest contact samples over all trials for the contact corrections to be estimated.
MIN_CONTACT_SAMPLES = 20


@dataclass(frozen=True)
class Correction:
    """One estimated correction.

    Attributes
    ----------
    name : str
    value, std : float
        Estimate and standard deviation (unit in the name).
    ci95 : tuple of float
    determined : bool
        Whether the trials determine it (its std is at most half its prior scale); an undetermined
        correction is reported, not applied (its value in :meth:`FrameCalibration.applied` is 0).
    """

    name: str
    value: float
    std: float
    ci95: tuple[float, float]
    determined: bool

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "std": self.std, "ci95": list(self.ci95), "determined": self.determined}


@dataclass(frozen=True)
class Residuals:
    """How physical the trials are under some corrections (m).

    Attributes
    ----------
    contact_median, contact_p95 : float
        Median and 95th percentile of ``|distance|`` over the contact samples.
    penetration_max : float
        Deepest penetration of the pusher into the box over the contact samples (≥ 0).
    rest_height : list of float
        Per trial, the resting box's bottom face above the table top (:func:`_resting_bottom`).
    """

    contact_median: float
    contact_p95: float
    penetration_max: float
    rest_height: list[float]

    def as_dict(self) -> dict[str, Any]:
        return {"contact_median_m": self.contact_median, "contact_p95_m": self.contact_p95,
                "penetration_max_m": self.penetration_max, "rest_height_m": self.rest_height}


@dataclass(frozen=True)
class FrameCalibration:
    """The corrections of a set of trials and what they change.

    Attributes
    ----------
    corrections : dict of str to Correction
        :data:`PARAMETERS` and ``dz_m``.
    pivot : ndarray, shape (3,)
        The point ``dyaw`` turns about (base frame, m).
    before, after : Residuals
        On the solution's contact samples: with the trials as imported, and with the applied corrections.
    contact_samples : int
        Contact samples of the solution (those within :data:`OUTLIER_M` of the pushed face there).
    trials : list of str
    pusher_turn_deg : float
        How far the pusher's recorded orientation turned over the contact samples (the largest angle from
        the first one's), deg.
    tool_note : str or None
        Why the tool offset was not estimated or not applied (None when it was applied): ``corrections``
        then holds no ``tx_m``, ``ty_m``, ``tz_m`` (and when it was applied, not the component along the
        pusher's axis nearest the vertical, which is held).
    """

    corrections: dict[str, Correction]
    pivot: np.ndarray
    before: Residuals
    after: Residuals
    contact_samples: int
    trials: list[str] = field(default_factory=list)
    pusher_turn_deg: float = 0.0
    tool_note: str | None = None

    def applied(self) -> dict[str, float]:
        """The values applied: each determined correction's estimate, 0 for the others (``gap_m``, a nuisance,
        is never applied)."""
        return _applied(self.corrections)


def _applied(corrections: dict[str, Correction]) -> dict[str, float]:
    return {name: (c.value if c.determined and name != "gap_m" else 0.0) for name, c in corrections.items()}


def _pivot(trials: Sequence[CalibrationTrial]) -> np.ndarray:
    starts = [_rest(trial)[0] for trial in trials]
    pivot = np.mean(starts, axis=0)
    pivot[2] = 0.0
    return pivot


def _rest(trial: CalibrationTrial) -> tuple[np.ndarray, np.ndarray]:
    """The resting start pose (mean of the poses before the push), or the first pose."""
    rest = resting_start(PoseSeries(trial.box.t - trial.box.t[0], trial.box.position, trial.box.quaternion), 0.0)
    if rest is not None:
        return np.asarray(rest[0], float), np.asarray(rest[1], float)
    return trial.box.position[0], trial.box.quaternion[0]


def _values(theta: np.ndarray) -> dict[str, float]:
    return dict(zip(PARAMETERS, (float(v) for v in theta), strict=True))


def _residuals(contacts: Sequence[Contact], theta: np.ndarray, pivot: np.ndarray) -> list[np.ndarray]:
    values = _values(theta)
    return [face_distances(c, values, pivot) / CONTACT_SCALE_M for c in contacts]


def _solve(contacts: Sequence[Contact], pivot: np.ndarray, theta0: np.ndarray, loss: str,
           free: np.ndarray = WITHOUT_TOOL) -> np.ndarray:
    """θ solved from ``theta0`` over the corrections ``free`` (a mask over θ; the others stay as in ``theta0``)."""
    def full(x: np.ndarray) -> np.ndarray:
        theta = theta0.copy()
        theta[free] = x
        return theta

    def fun(x: np.ndarray) -> np.ndarray:
        return np.concatenate([*_residuals(contacts, full(x), pivot), x / PRIOR_SCALES[free]])

    result = optimize.least_squares(fun, theta0[free], loss=loss, f_scale=1.0, x_scale=PRIOR_SCALES[free] * 0.05,
                                    diff_step=1e-6, max_nfev=200)
    return full(np.asarray(result.x, dtype=float))


def _jacobian(contacts: Sequence[Contact], theta: np.ndarray, pivot: np.ndarray,
              free: np.ndarray = WITHOUT_TOOL) -> list[np.ndarray]:
    """Per trial, d residuals / d θ over the ``free`` corrections (central differences), (K_g, p_free)."""
    columns: list[list[np.ndarray]] = [[] for _ in contacts]
    for j in np.flatnonzero(free):
        h = PRIOR_SCALES[j] * 1e-3
        up, down = theta.copy(), theta.copy()
        up[j] += h
        down[j] -= h
        for g, (a, b) in enumerate(zip(_residuals(contacts, up, pivot), _residuals(contacts, down, pivot),
                                       strict=True)):
            columns[g].append((a - b) / (2.0 * h))
    return [np.stack(cols, axis=1) for cols in columns]


def _sandwich(jacobians: Sequence[np.ndarray], residuals: Sequence[np.ndarray], scales: np.ndarray) -> np.ndarray:
    """Cluster-robust covariance over trials, the prior counted as one more source of information (p, p):
    ``B (Σ_g s_g s_gᵀ G/(G−1) + P) B`` with ``B = (Σ_g J_gᵀ J_g + P)⁻¹``, ``s_g = J_gᵀ r_g`` and ``P`` the prior's
    precision (``scales``: the prior standard deviations of the columns), so that a direction no sample
    informs keeps the prior's variance (not zero)."""
    groups = [g for g, r in enumerate(residuals) if r.size]
    prior = np.diag(1.0 / scales ** 2)
    bread = np.linalg.inv(sum(jacobians[g].T @ jacobians[g] for g in groups) + prior)
    scores = [jacobians[g].T @ residuals[g] for g in groups]
    meat = sum(np.outer(s, s) for s in scores) * len(groups) / max(len(groups) - 1, 1)
    return np.asarray(bread @ (meat + prior) @ bread)


def _jackknife_std(kept: Sequence[Contact], pivot: np.ndarray, theta: np.ndarray,
                   free: np.ndarray = WITHOUT_TOOL) -> np.ndarray:
    """Leave-one-trial-out standard deviations (p,): ``√((G−1)/G Σ (θ₋g − θ̄)²)`` over the G trials with contact
    samples, each refit from ``theta`` on the others' samples (the sandwich over a few trials is too
    narrow: at 8 trials it held the hidden values in 8 of 10 seeds for some corrections); zeros with fewer
    than 3 such trials (and for the corrections not ``free``)."""
    informed = [g for g, c in enumerate(kept) if c.index.size]
    if len(informed) < 3:
        return np.zeros(theta.size)
    refits = np.array([_solve([c for g, c in enumerate(kept) if g != left], pivot, theta, "linear", free)
                       for left in informed])
    spread = refits - refits.mean(axis=0)
    return np.sqrt((len(informed) - 1) / len(informed) * np.sum(spread ** 2, axis=0))


def _correction(name: str, value: float, std: float, dof: int, prior: float | None) -> Correction:
    t = float(stats.t.ppf(0.975, max(dof, 1)))
    determined = prior is None or std <= 0.5 * prior
    return Correction(name, value, std, (value - t * std, value + t * std), bool(determined))


def _resting_bottom(position: np.ndarray, quaternion: np.ndarray, size: Sequence[float]) -> float:
    """The height (m) of the face a resting box lies on: its centre's height less half its edge along the body
    axis nearest the vertical. A box at rest lies flat; the lowest corner of the recorded orientation
    (:func:`~sim2real.trials.scene_checks.box_lowest_z`) would read the tracking noise's tilt as depth
    (0.15 mm below the truth for a 10 cm plate with 5 mrad of noise)."""
    row_z = np.abs(rotate(conjugate(quaternion), np.array([0.0, 0.0, 1.0])))
    return float(position[2] - 0.5 * np.asarray(size, dtype=float)[int(np.argmax(row_z))])


def residuals(trials: Sequence[CalibrationTrial], contacts: Sequence[Contact], values: dict[str, float],
              pivot: np.ndarray) -> Residuals:
    """The contact distances and rest heights under ``values``."""
    gaps = np.concatenate([distances(c, values, pivot) for c in contacts]) if contacts else np.zeros(0)
    heights = []
    for trial in trials:
        position, quaternion = _rest(trial)
        moved, turned = corrected_box(position[None], quaternion[None], values, pivot)
        heights.append(float(_resting_bottom(moved[0], turned[0], trial.size) - trial.params["contact.table_height"]))
    if gaps.size == 0:
        return Residuals(float("nan"), float("nan"), float("nan"), heights)
    return Residuals(float(np.median(np.abs(gaps))), float(np.percentile(np.abs(gaps), 95)),
                     float(max(0.0, -gaps.min())), heights)


def _refine(trials: Sequence[CalibrationTrial], pivot: np.ndarray, theta0: np.ndarray,
            free: np.ndarray = WITHOUT_TOOL) -> tuple[np.ndarray, list[Contact]] | None:
    """From ``theta0``: a robust solve on the samples selected there, then :data:`SELECTION_ROUNDS` rounds of
    selecting again at the solution and solving (over the ``free`` corrections); None when too few samples
    are selected."""
    contacts = [contact_samples(trial, pivot, _values(theta0)) for trial in trials]
    if sum(c.index.size for c in contacts) < MIN_CONTACT_SAMPLES:
        return None
    theta = _solve(contacts, pivot, theta0, "soft_l1", free)
    for _ in range(SELECTION_ROUNDS):  # the pushing samples again, at the corrected clock and frames
        kept = [contact_samples(trial, pivot, _values(theta), OUTLIER_M) for trial in trials]
        if sum(c.index.size for c in kept) < MIN_CONTACT_SAMPLES:
            return None
        theta = _solve(kept, pivot, theta, "linear", free)
    return theta, kept


def _rms(kept: Sequence[Contact], theta: np.ndarray, pivot: np.ndarray) -> float:
    """Root mean square distance (m) of the contact samples from their pushed faces at ``theta``."""
    r = np.concatenate(_residuals(kept, theta, pivot)) * CONTACT_SCALE_M
    return float(np.sqrt(np.mean(r ** 2)))


def _best(solutions: Sequence[tuple[np.ndarray, list[Contact]]], pivot: np.ndarray
          ) -> tuple[np.ndarray, list[Contact]]:
    """The solution whose contact samples lie closest to their faces (RMS), among those with at least
    :data:`LEAST_SHARE` of the largest number of contact samples (a wrong delay can select a few samples
    that fit)."""
    most = max(sum(c.index.size for c in kept) for _, kept in solutions)
    eligible = [s for s in solutions if sum(c.index.size for c in s[1]) >= LEAST_SHARE * most]
    return min(eligible, key=lambda s: _rms(s[1], s[0], pivot))


def _std(kept: Sequence[Contact], pivot: np.ndarray, theta: np.ndarray, free: np.ndarray) -> np.ndarray:
    """Standard deviations (p,) of θ over the ``free`` corrections (0 for the others): the wider of the sandwich
    over trials and the leave-one-trial-out jackknife."""
    std = np.zeros(theta.size)
    covariance = _sandwich(_jacobian(kept, theta, pivot, free), _residuals(kept, theta, pivot), PRIOR_SCALES[free])
    std[free] = np.sqrt(np.maximum(np.diag(covariance), 0.0))
    return np.maximum(std, _jackknife_std(kept, pivot, theta, free))


def _pusher_orientations(kept: Sequence[Contact]) -> np.ndarray:
    """The pusher pose's orientation (K, 4) at each contact sample (its next recorded one)."""
    out = [c.trial.pusher_quaternion[np.clip(np.searchsorted(c.trial.pusher_t, c.trial.box.t[c.index]), 0,
                                             c.trial.pusher_t.size - 1)] for c in kept if c.index.size]
    return np.concatenate(out) if out else np.zeros((0, 4))


def _turn_deg(quaternions: np.ndarray) -> float:
    """The largest angle (deg) of the orientations (K, 4) from the first one's."""
    if quaternions.shape[0] == 0:
        return 0.0
    dots = np.abs(quaternions @ quaternions[0]) / np.linalg.norm(quaternions, axis=1) / np.linalg.norm(quaternions[0])
    return float(np.degrees(2.0 * np.arccos(np.clip(dots.min(), 0.0, 1.0))))


def _vertical_tool_axis(reference: np.ndarray) -> str:
    """The tool correction's component (of :data:`TOOL_PARAMETERS`) along the pusher's axis nearest the
    vertical at the ``reference`` orientation (4,): pushes on vertical faces do not see it (a rod's length,
    pointing down), and a solve that frees it fits it to the tracking noise's tilt."""
    vertical = rotate(np.asarray(reference, dtype=float), np.eye(3))[:, 2]  # each pusher axis's base-frame z
    return TOOL_PARAMETERS[int(np.argmax(np.abs(vertical)))]


def _horizontal_tool_std(std: np.ndarray, reference: np.ndarray) -> float:
    """The largest standard deviation (m) of the tool correction's horizontal part in the base frame, with the
    pusher at the ``reference`` orientation (4,)."""
    tool = np.array([PARAMETERS.index(name) for name in TOOL_PARAMETERS])
    axes = np.stack([rotate(reference, np.eye(3)[k]) for k in range(3)], axis=1)  # columns: the pusher's axes
    horizontal = axes[:2] * std[tool]
    return float(np.sqrt(np.max(np.linalg.eigvalsh(horizontal @ horizontal.T))))


def _tool_solution(trials: Sequence[CalibrationTrial], pivot: np.ndarray, theta: np.ndarray,
                   kept: list[Contact]) -> tuple[tuple[np.ndarray, list[Contact], np.ndarray] | None, float, str]:
    """The solve with the tool offset free too, from the first solve's ``theta`` (``kept``: its contact samples):
    ``(theta, contact samples, std)`` when it applies (module docstring), else None and why; and how far the
    pusher turned, deg."""
    orientations = _pusher_orientations(kept)
    turn = _turn_deg(orientations)
    if turn < TOOL_TURN_MIN_DEG:
        return None, turn, (f"the tool offset was not estimated: the pusher's recorded orientation turned "
                            f"{turn:.1f}° over the contact samples (at least {TOOL_TURN_MIN_DEG:g}° needed; none "
                            "when its poses have no orientation), so a tool offset acts as a shift of the "
                            "tracking frame, which dx_m and dy_m take up")
    everything = np.array([name != _vertical_tool_axis(orientations[0]) for name in PARAMETERS])
    solved = _refine(trials, pivot, theta, everything)
    if solved is None:
        return None, turn, "the tool offset was not estimated: too few contact samples with it free"
    theta_tool, kept_tool = solved
    std = _std(kept_tool, pivot, theta_tool, everything)
    horizontal = _horizontal_tool_std(std, orientations[0])
    if horizontal > TOOL_STD_MAX_M:
        return None, turn, (f"the tool offset was not applied: with the pusher turning {turn:.1f}°, these trials "
                            f"give its horizontal part to ±{1e3 * horizontal:.1f} mm only (at most "
                            f"{1e3 * TOOL_STD_MAX_M:g} mm to apply it); dx_m and dy_m take up its mean")
    return (theta_tool, kept_tool, std), turn, ""


def calibrate_frames(trials: Sequence[CalibrationTrial]) -> FrameCalibration:
    """Estimate the corrections of :data:`PARAMETERS` and ``dz_m`` from ``trials`` (module docstring).

    The contact samples depend on the box stream's delay (a late stream shows the box moving after the
    pusher), so the solve starts from each delay of :data:`DELAY_STARTS` and keeps the best solution
    (:func:`_best`); the tool offset is freed in a second solve from it, when the pusher turns
    (:func:`_tool_solution`).

    Raises
    ------
    Sim2RealError
        Fewer than 2 trials, or too few contact samples from every start (the frames are then off by
        more than :data:`CONTACT_WINDOW_M`, or nothing was pushed).
    """
    if len(trials) < 2:
        raise InputError(f"calibrate needs at least 2 trials (the uncertainty comes from their spread), got "
                         f"{len(trials)}")
    pivot = _pivot(trials)
    solutions = []
    for delay in DELAY_STARTS:
        theta0 = np.zeros(len(PARAMETERS))
        theta0[PARAMETERS.index("delay_s")] = delay
        solved = _refine(trials, pivot, theta0)
        if solved is not None:
            solutions.append(solved)
    if not solutions:
        raise InputError(f"calibrate found fewer than {MIN_CONTACT_SAMPLES} contact samples in {len(trials)} "
                         f"trial(s): no samples where box and pusher both move with the pusher within "
                         f"{1e3 * CONTACT_WINDOW_M:g} mm of the face it pushes; are the frames off by more than "
                         "that, or were the boxes not pushed?")
    theta, kept = _best(solutions, pivot)
    with_tool, turn, tool_note = _tool_solution(trials, pivot, theta, kept)
    names: tuple[str, ...] = PARAMETERS
    if with_tool is not None:
        theta, kept, std = with_tool
        names = tuple(name for name in PARAMETERS if name != _vertical_tool_axis(_pusher_orientations(kept)[0]))
    else:
        std = _std(kept, pivot, theta, WITHOUT_TOOL)
        names = tuple(name for name in PARAMETERS if name not in TOOL_PARAMETERS)
    informed = sum(1 for c in kept if c.index.size)
    corrections = {name: _correction(name, float(theta[j]), float(std[j]), informed - 1, float(PRIOR_SCALES[j]))
                   for j, name in enumerate(PARAMETERS) if name in names}
    rest = np.array(residuals(trials, [], _values(theta), pivot).rest_height)
    dz = -float(np.mean(rest))
    dz_std = float(np.std(rest, ddof=1) / np.sqrt(rest.size))
    corrections["dz_m"] = _correction("dz_m", dz, dz_std, rest.size - 1, None)
    return FrameCalibration(corrections, pivot, residuals(trials, kept, {}, pivot),
                            residuals(trials, kept, _applied(corrections), pivot), sum(c.index.size for c in kept),
                            [t.name for t in trials], turn, tool_note or None)

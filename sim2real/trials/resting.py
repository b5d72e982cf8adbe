"""When a recorded box (or arm) rests before it is pushed, and where: the mean of the leading resting samples.

Motion capture scatters each pose by millimetres; near the distance where a push stops toppling the box a
2 mm error in the start decides the outcome, so a rollout from rest starts from the mean of the poses
while the box rested (:func:`resting_start`), and an open-loop replay from the mean of the resting joint
angles (:func:`resting_joints`). The import's scene checks (:mod:`sim2real.trials.scene_checks`) judge
the same start the replay and the fit simulate. Poses are in the arm base frame (m, quaternions w, x, y, z).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sim2real.spatial import conjugate, multiply, to_rotation_vector
from sim2real.trials.records import PoseSeries

#: Resting start (:func:`resting_start`): a pose counts as at rest while each axis lies within this
#: many robust standard deviations of the scatter of the first poses ...
REST_SIGMAS = 5.0
#: ... and never less than these (m, rad): a noise-free recording still allows 3 mm and 1 degree.
REST_MIN_POSITION = 0.003
REST_MIN_ANGLE = np.radians(1.0)
#: Resting arm (:func:`resting_joints`): the joint angles may leave their start by at least this (rad),
#: whatever the scatter of a noise-free recording.
REST_MIN_JOINT = 1e-3
#: Fewest resting poses worth averaging; fewer and the first pose is the start.
REST_MIN_SAMPLES = 5
#: A resting run whose fitted drift moves its mean more than this many σ from its start is not averaged
#: (a sliding box; the first poses of a push within the tolerance add about one σ).
REST_DRIFT_SIGMAS = 2.0
#: Second pass: the tolerance in standard deviations, about the mean of the first half of the run.
REST_REFINE_SIGMAS = 4.0


def continuous_quaternions(quaternion: np.ndarray) -> np.ndarray:
    """Flip signs so consecutive quaternions (N, 4) lie in the same hemisphere."""
    out = np.array(quaternion, dtype=float)
    for k in range(1, out.shape[0]):
        if np.dot(out[k], out[k - 1]) < 0.0:
            out[k] = -out[k]
    return out


def interpolate(t_new: np.ndarray, t: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Column-wise linear interpolation of ``values`` (N, d) sampled at ``t`` (N,, increasing) at ``t_new``
    (M,), held at the ends; returns (M, d)."""
    return np.stack([np.interp(t_new, t, values[:, j]) for j in range(values.shape[1])], axis=1)


def interpolate_quaternions(t_new: np.ndarray, t: np.ndarray, quaternion: np.ndarray) -> np.ndarray:
    """Orientations (N, 4) (w, x, y, z) sampled at ``t`` at the times ``t_new`` (M,): normalised linear
    interpolation of the sign-continuous series, held at the ends; returns (M, 4) unit quaternions."""
    q = interpolate(t_new, t, continuous_quaternions(quaternion))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def resting_start(poses: PoseSeries, t_start: float) -> tuple[np.ndarray, np.ndarray, int] | None:
    """The box's pose at rest before it first moves: the mean of the leading resting poses.

    The scatter ``σ`` of the position (m) and of the rotation vector from the start (rad) is
    estimated robustly from second differences, pooled over the axes (a steady motion does not
    count as scatter). Poses rest from
    the first one until two in a row leave the median of the first ten by more than
    ``max(REST_SIGMAS σ, minimum)`` on some axis; a second pass ends the run where two in a row
    leave the mean of its first half by more than :data:`REST_REFINE_SIGMAS` σ (fewer poses of the
    first millimetres of motion in the mean). The run must hold :data:`REST_MIN_SAMPLES` poses,
    reach ``t_start``, and show no drift (a fitted line) that would put its mean farther than
    :data:`REST_DRIFT_SIGMAS` σ from its first pose.

    Parameters
    ----------
    poses : PoseSeries
        The recorded box poses (N samples).
    t_start : float
        Time (s) the rollout starts from; the box must still rest then.

    Returns
    -------
    (position (3,) m, quaternion (4,) w-x-y-z, samples averaged), or None when the recording
    does not show the box resting until ``t_start``.
    """
    if len(poses) < REST_MIN_SAMPLES:
        return None
    quaternion = continuous_quaternions(poses.quaternion)
    anchor = np.median(quaternion[:10], axis=0)
    anchor /= np.linalg.norm(anchor)
    # Offsets from the start: position (m) and rotation vector (rad, in the anchor's frame).
    offsets = (np.asarray(poses.position, dtype=float), to_rotation_vector(multiply(conjugate(anchor), quaternion)))
    minima = (REST_MIN_POSITION, REST_MIN_ANGLE)
    sigmas = [_scatter(values[:20]) for values in offsets]
    end = _first_persistent(_outside(offsets, [np.median(v[:10], axis=0) for v in offsets],
                                     [max(REST_SIGMAS * s, m) for s, m in zip(sigmas, minima, strict=True)]))
    if end >= 2 * REST_MIN_SAMPLES:
        # Second pass, against the first half of that run (motion-free) and its scatter: a tighter
        # tolerance leaves fewer poses of the first millimetres of motion in the mean.
        sigmas = [_scatter(values[:end]) for values in offsets]
        end = min(end, _first_persistent(_outside(
            offsets, [v[:end // 2].mean(axis=0) for v in offsets],
            [max(REST_REFINE_SIGMAS * s, 0.5 * m) for s, m in zip(sigmas, minima, strict=True)])))
    if end < REST_MIN_SAMPLES or float(poses.t[end - 1]) < t_start - 1e-9:
        return None
    t = np.asarray(poses.t[:end], dtype=float)
    if any(_drifting(t, values[:end], sigma) for values, sigma in zip(offsets, sigmas, strict=True)):
        return None  # drifting: the mean would lag the start by more than the poses scatter
    mean_q = quaternion[:end].mean(axis=0)
    return offsets[0][:end].mean(axis=0), mean_q / np.linalg.norm(mean_q), end


def resting_joints(position: np.ndarray, command: np.ndarray) -> tuple[np.ndarray, int] | None:
    """The arm's joint angles at rest before it first moves: the mean of the leading resting samples.

    So that the noise of one joint reading does not become an offset of a whole open-loop replay.
    The arm rests from the first sample until, persistently (two ticks in a row), either the joint
    angles leave the median of the first ten by more than ``max(REST_SIGMAS σ, REST_MIN_JOINT)``
    or the commands leave theirs by more than ``REST_SIGMAS`` times their own scatter (a PD law
    holding the arm still commands small noisy velocities, not zeros); ``σ`` is estimated robustly
    from second differences. The window must hold :data:`REST_MIN_SAMPLES` samples and show no
    drift (a fitted line moving its mean more than :data:`REST_DRIFT_SIGMAS` σ from its start).

    Parameters
    ----------
    position : ndarray, shape (K+1, 6)
        Recorded joint angles on the grid, rad.
    command : ndarray, shape (K, 6)
        Joint velocity command acting from each tick, rad/s.

    Returns
    -------
    (joint angles (6,) rad, samples averaged), or None when the recording does not show the arm
    resting at its start.
    """
    position = np.asarray(position, dtype=float)
    if position.shape[0] < REST_MIN_SAMPLES or command.shape[0] < 2:
        return None
    sigma = _scatter(position[:20])
    end = _first_persistent(_outside([position], [np.median(position[:10], axis=0)],
                                     [max(REST_SIGMAS * sigma, REST_MIN_JOINT)]))
    command = np.asarray(command, dtype=float)
    commanded = _first_persistent(_outside([command], [np.median(command[:10], axis=0)],
                                           [max(REST_SIGMAS * _scatter(command[:20]), 1e-12)]))
    end = min(end, commanded + 1)  # the sample at the tick of the first command is still at rest
    if end < REST_MIN_SAMPLES:
        return None
    window = position[:end]
    if _drifting(np.arange(end, dtype=float), window, _scatter(window)):
        return None
    return window.mean(axis=0), int(end)


def _first_persistent(flags: np.ndarray) -> int:
    """Index of the first of two ``True`` in a row in ``flags`` (N,) bool; N when there is none."""
    both = flags[:-1] & flags[1:]
    return int(np.argmax(both)) if np.any(both) else int(flags.shape[0])


def _drifting(t: np.ndarray, values: np.ndarray, sigma: float) -> bool:
    """Whether the line fitted to ``values`` (N, d) over ``t`` (N,) moves their mean more than
    :data:`REST_DRIFT_SIGMAS` ``sigma`` from the first sample on some column."""
    slope = np.polyfit(t - t.mean(), values, 1)[0]
    return bool(np.any(np.abs(slope) * 0.5 * (t[-1] - t[0]) > REST_DRIFT_SIGMAS * max(sigma, 1e-9)))


def _scatter(values: np.ndarray) -> float:
    """Robust noise standard deviation of ``values`` (N, d), pooled over the columns (isotropic
    noise), from second differences (a steady motion adds nothing to them)."""
    if values.shape[0] < 3:
        return 0.0
    return float(1.4826 * np.median(np.abs(np.diff(values, n=2, axis=0))) / np.sqrt(6.0))


def _outside(offsets: Sequence[np.ndarray], centres: Sequence[np.ndarray],
             tolerances: Sequence[float]) -> np.ndarray:
    """(N,) bool: the pose leaves its centre by more than the tolerance on some axis."""
    out = np.zeros(offsets[0].shape[0], dtype=bool)
    for values, centre, tolerance in zip(offsets, centres, tolerances, strict=True):
        out |= np.any(np.abs(values - centre) > tolerance, axis=1)
    return out

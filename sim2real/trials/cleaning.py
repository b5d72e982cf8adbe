"""Cleaning of imported pose streams: time order, repeated stamps, invalid samples and single-sample outliers
(orientation flips, position jumps), as :mod:`sim2real.trials.recording_import` applies them per trial and
stream. Times are integer ns; positions m; quaternions (w, x, y, z).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim2real.spatial import normalize
from sim2real.trials.recording import PoseSamples


def quaternion_angle(q1: np.ndarray, q2: np.ndarray) -> np.ndarray:
    """Rotation angle between orientations, rad in [0, π]; ``q`` and ``-q`` are the same orientation.

    Parameters
    ----------
    q1, q2 : numpy.ndarray, shape (..., 4)
        Unit quaternions (w, x, y, z).

    Returns
    -------
    numpy.ndarray, shape (...)
    """
    dot = np.abs(np.sum(np.asarray(q1, float) * np.asarray(q2, float), axis=-1))
    return 2.0 * np.arccos(np.clip(dot, 0.0, 1.0))


def find_outliers(position: np.ndarray, quaternion: np.ndarray, angle_rad: float,
                  jump_m: float) -> tuple[np.ndarray, np.ndarray]:
    """Single-sample outliers of a pose stream.

    A sample ``k`` (not the first or last) is an *orientation flip* when its orientation differs
    from both neighbours by more than ``angle_rad`` while the neighbours agree within
    ``angle_rad`` (a quaternion's sign is not a difference: ``q`` and ``-q`` agree); it is a
    *position jump* when it lies more than ``jump_m`` from both neighbours while they lie within
    ``jump_m`` of each other. Runs of two or more bad samples are not detected.

    Parameters
    ----------
    position : numpy.ndarray, shape (N, 3)
        m, in time order.
    quaternion : numpy.ndarray, shape (N, 4)
        Unit quaternions (w, x, y, z), in time order.
    angle_rad : float
        Orientation threshold, rad; 0 disables the test.
    jump_m : float
        Position threshold, m; 0 disables the test.

    Returns
    -------
    tuple of numpy.ndarray of bool, shape (N,) each
        Orientation flips and position jumps (a sample may be both).
    """
    n = position.shape[0]
    flips = np.zeros(n, dtype=bool)
    jumps = np.zeros(n, dtype=bool)
    if n < 3:
        return flips, jumps
    if angle_rad > 0:
        before = quaternion_angle(quaternion[1:-1], quaternion[:-2])
        after = quaternion_angle(quaternion[1:-1], quaternion[2:])
        across = quaternion_angle(quaternion[:-2], quaternion[2:])
        flips[1:-1] = (before > angle_rad) & (after > angle_rad) & (across <= angle_rad)
    if jump_m > 0:
        before = np.linalg.norm(position[1:-1] - position[:-2], axis=1)
        after = np.linalg.norm(position[1:-1] - position[2:], axis=1)
        across = np.linalg.norm(position[:-2] - position[2:], axis=1)
        jumps[1:-1] = (before > jump_m) & (after > jump_m) & (across <= jump_m)
    return flips, jumps


def unique_time_order(t_ns: np.ndarray, receive_ns: np.ndarray) -> tuple[np.ndarray, int]:
    """Indices in time order without repeated time stamps (the first received kept), and the count dropped."""
    order = np.lexsort((receive_ns, t_ns))
    keep = np.ones(order.shape[0], dtype=bool)
    keep[1:] = np.diff(t_ns[order]) != 0
    return order[keep], int(np.count_nonzero(~keep))


@dataclass(frozen=True)
class CleanPoses:
    """The kept samples of one pose stream in one trial window, in time order.

    Attributes
    ----------
    t_ns, receive_ns : numpy.ndarray of int64, shape (M,)
        Time on the chosen clock and receive time, ns.
    position : numpy.ndarray, shape (M, 3)
        Tracked body origin, recording frame, m.
    quaternion : numpy.ndarray, shape (M, 4)
        Unit quaternions (w, x, y, z), body -> recording frame.
    counts : dict of str to int
        Samples dropped per reason (:func:`clean_poses`).
    """

    t_ns: np.ndarray
    receive_ns: np.ndarray
    position: np.ndarray
    quaternion: np.ndarray
    counts: dict[str, int]


def clean_poses(samples: PoseSamples, index: np.ndarray, clock: str, angle_rad: float,
                jump_m: float) -> CleanPoses:
    """The samples ``index`` of a stream, in time order, without invalid, repeated and outlier samples.

    Returns the kept samples (quaternions normalised) and the counts of what was dropped:
    ``invalid``, ``duplicate_stamps``, ``orientation_flips``, ``position_jumps``.
    """
    t_all = samples.stamp_ns if clock == "header" else samples.receive_ns
    position, quaternion = samples.position[index], samples.quaternion[index]
    norms = np.linalg.norm(quaternion, axis=1)
    valid = np.all(np.isfinite(position), axis=1) & np.all(np.isfinite(quaternion), axis=1) & (norms > 1e-9)
    index = index[valid]
    order, duplicates = unique_time_order(t_all[index], samples.receive_ns[index])
    index = index[order]
    position = samples.position[index]
    quaternion = normalize(samples.quaternion[index])
    flips, jumps = find_outliers(position, quaternion, angle_rad, jump_m)
    keep = ~(flips | jumps)
    counts = {"orientation_flips": int(np.count_nonzero(flips)), "position_jumps": int(np.count_nonzero(jumps)),
              "invalid": int(np.count_nonzero(~valid)), "duplicate_stamps": duplicates}
    return CleanPoses(t_all[index][keep], samples.receive_ns[index][keep], position[keep], quaternion[keep], counts)

"""Is an imported scene physical? The checks an import runs on every trial before it writes any.

A recording whose frames or offsets are wrong still imports as numbers: a steel block 10 mm in the
air that the probe passes over, or an aluminium block 61 mm inside the table. Replayed, the first
never moves and the second is refused; fitted, either teaches the model nothing true. So every trial
of ``sim2real import bag`` / ``import csv`` (and every toss of ``import cube-toss``, for the first
check) is checked against its object (box size, pusher shape and radius) first:

``sunken``
    The box's lowest corner at its start lies more than the tolerance below the table top: never
    physical (every trial, box-only recordings such as tosses too).
``floating``
    It lies more than the tolerance above the table: a push starts with the box resting on the
    table (trials with a pusher: a pusher pose or the arm's joint states; a toss starts in the air).
``pusher_inside``
    The pusher starts inside the box by more than the tolerance: the median, over its first
    :data:`START_SAMPLES` samples, of the signed distance between the pusher's surface (a sphere of
    ``pusher.radius`` about the recorded centre, or a vertical rod: a capsule of that radius from the
    recorded tip up ``pusher.length``) and the box (an oriented box of the trial's size at the same
    instant); the median, so that one noisy sample does not decide.
``out_of_reach``
    The pusher never comes within the tolerance plus :data:`REACH_MARGIN_M` of the box over the whole
    trial (its smallest signed distance to the box surface, every sample against the box at that
    instant). A pusher touching the box shows a distance scattering about 0 by the tracking noise, so
    the smallest of many samples lies at or below 0; the margin allows what the noise does not
    explain: calibration of the marker models and of ``--box-offset`` / ``--tool-offset`` (a few mm),
    and a brief tap that falls between two samples (a probe at 0.3 m/s moves 3 mm between 100 Hz
    samples). Frames or offsets wrong by centimetres leave the pusher far outside it.

The box start is the one replay and fit simulate: for a push the mean of the poses while the box
rested before it (:func:`~sim2real.trials.resting.resting_start`), else the first pose; the lowest
corner is :func:`box_lowest_z`, the geometry replay's own refusal uses
(:func:`sim2real.sysid.problem.inputs.check_start_above_table`). A planar recording's box is placed at
``box.size_z / 2``, level: it passes the first two checks by construction, and keeps the others.

Frames and units: arm base frame (table top at ``contact.table_height``, z = 0 unless the trial's object
says otherwise, z up), m, quaternions (w, x, y, z) rotating box-body vectors into the base frame.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim2real.errors import InputError
from sim2real.params import spec
from sim2real.spatial import to_matrix
from sim2real.trials.meta import TrialMeta
from sim2real.trials.records import PoseSeries
from sim2real.trials.resting import interpolate, interpolate_quaternions, resting_start

DEFAULT_SCENE_TOLERANCE_M = 0.002
"""Default tolerance of the scene checks, m (``--scene-tolerance``, in mm on the command line)."""

REACH_MARGIN_M = 0.003
"""How much farther than the tolerance (m) the pusher's closest approach may stay from the box and still
count as touching it (``out_of_reach``; see the module docstring)."""

START_SAMPLES = 5
"""Leading pusher samples whose median distance decides ``pusher_inside``."""

SCENE_CHECKS_KEY = "scene_checks"
"""Key of the record in trial.json ``"import"``: tolerance, checks run, problems (when imported with --force)."""

#: Checks by name, in the order they are run and reported.
CHECKS: tuple[str, ...] = ("sunken", "floating", "pusher_inside", "out_of_reach")

#: What to look at, per check, in words (an import's quantities).
HINTS: dict[str, str] = {
    "sunken": "check the box's size, the frame transform and the box's offset in its tracked frame (sim2real "
              "calibrate estimates the box's frame)",
    "floating": "check the frame transform, the box's offset in its tracked frame and its size (sim2real calibrate "
                "estimates the box's frame)",
    "pusher_inside": "check the pusher's radius, the tool offset and the pusher's frame",
    "out_of_reach": "check the frame transform, the tool offset and the pusher's pose source",
}

#: The importers' options (argparse dests) that set what :data:`HINTS` names, per check, in its order; the CLI
#: names their flags (:attr:`~sim2real.errors.Sim2RealError.see`), then the one that imports anyway (``force``).
HINT_OPTIONS: dict[str, tuple[str, ...]] = {
    "sunken": ("box_size", "transform", "box_offset"),
    "floating": ("transform", "box_offset", "box_size"),
    "pusher_inside": ("pusher_radius", "tool_offset"),
    "out_of_reach": ("transform", "tool_offset", "pusher_pose"),
}

_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


@dataclass(frozen=True)
class SceneProblem:
    """One failed check of one trial.

    Attributes
    ----------
    check : str
        One of :data:`CHECKS`.
    value_m : float
        How far the scene is off, m, positive: the depth below or the height above the table of the
        box's lowest corner, the pusher's penetration, or its closest distance to the box.
    limit_m : float
        The largest value the check accepts, m.
    text : str
        The problem in words with its numbers (mm), e.g. ``"the box starts 10.2 mm above the table (its
        lowest corner; tolerance 2.0 mm): a push starts with the box on the table"``.
    short : str
        The same in a few words, for listing several trials.
    """

    check: str
    value_m: float
    limit_m: float
    text: str
    short: str

    def as_dict(self) -> dict[str, Any]:
        """The trial.json form: check, value_m, limit_m, text."""
        return {"check": self.check, "value_m": float(self.value_m), "limit_m": float(self.limit_m),
                "text": self.text}


@dataclass(frozen=True)
class SceneSamples:
    """What the checks read of one trial, arm base frame.

    Attributes
    ----------
    box_t : numpy.ndarray, shape (N,)
        Box pose times, s (any origin shared with ``pusher_t``), increasing.
    box_position : numpy.ndarray, shape (N, 3)
        Box geometric centre, m.
    box_quaternion : numpy.ndarray, shape (N, 4)
        Box orientation (w, x, y, z), body → base.
    pusher_t : numpy.ndarray, shape (M,) or None
        Pusher sample times, s; None without pusher samples.
    pusher_position : numpy.ndarray, shape (M, 3) or None
        Pusher point: the sphere's centre or the rod's tip, m.
    push : bool
        The box is pushed (a pusher pose or the arm's joint states): it starts on the table.
    """

    box_t: np.ndarray
    box_position: np.ndarray
    box_quaternion: np.ndarray
    pusher_t: np.ndarray | None = None
    pusher_position: np.ndarray | None = None
    push: bool = False


# -- geometry -------------------------------------------------------------------------------------
def box_lowest_z(position: np.ndarray, quaternion: np.ndarray, size: Sequence[float]) -> np.ndarray:
    """Height of a box's lowest corner, m, base frame.

    Parameters
    ----------
    position : numpy.ndarray, shape (..., 3)
        Box geometric centre, m.
    quaternion : numpy.ndarray, shape (..., 4)
        Orientation (w, x, y, z), body → base (any norm).
    size : sequence of 3 float
        Box edges along its body x, y, z, m.

    Returns
    -------
    numpy.ndarray, shape (...)
        ``z_centre - Σ_i |R_zi| size_i / 2``: the sharp corner's height (rounded edges ignored).
    """
    q = np.asarray(quaternion, dtype=float)
    row_z = to_matrix(q / np.linalg.norm(q, axis=-1, keepdims=True))[..., 2, :]  # world z of each body axis
    half = 0.5 * np.asarray(size, dtype=float)
    return np.asarray(position, dtype=float)[..., 2] - np.abs(row_z) @ half


def box_signed_distance(local: np.ndarray, size: Sequence[float]) -> np.ndarray:
    """Signed distance of points from the surface of a box centred at the origin of their frame, m.

    Parameters
    ----------
    local : numpy.ndarray, shape (..., 3)
        Points in the box body frame (origin at its centre, axes along its edges), m.
    size : sequence of 3 float
        Box edges, m.

    Returns
    -------
    numpy.ndarray, shape (...)
        Positive outside (the Euclidean distance), negative inside (minus the depth below the nearest face).
    """
    excess = np.abs(local) - 0.5 * np.asarray(size, dtype=float)
    outside = np.linalg.norm(np.maximum(excess, 0.0), axis=-1)
    return outside + np.minimum(excess.max(axis=-1), 0.0)


def pusher_box_distance(point: np.ndarray, box_position: np.ndarray, box_quaternion: np.ndarray,
                        params: Mapping[str, float], shape: str) -> np.ndarray:
    """Signed distance between the pusher's surface and the box's, m, per sample (negative: penetration).

    Parameters
    ----------
    point : numpy.ndarray, shape (M, 3)
        Pusher point, base frame, m: the sphere's centre, or the tip of a vertical rod (the centre of
        its lower end point; the rod's axis runs ``pusher.length`` up world z from it).
    box_position : numpy.ndarray, shape (M, 3)
        Box centre at the same instants, m.
    box_quaternion : numpy.ndarray, shape (M, 4)
        Box orientation (w, x, y, z) at the same instants.
    params : mapping of str to float
        The trial's object parameters (:attr:`~sim2real.trials.trial_object.TrialObject.parameters`):
        ``box.size_*``, ``pusher.radius`` (m) and, for a rod, ``pusher.length`` (m; nominal when absent,
        as a replay takes it).
    shape : str
        ``"sphere"`` or ``"rod"``.

    Returns
    -------
    numpy.ndarray, shape (M,)
    """
    size = _size(params)
    rotation = to_matrix(box_quaternion / np.linalg.norm(box_quaternion, axis=-1, keepdims=True))  # (M, 3, 3)
    local = np.einsum("mji,mj->mi", rotation, np.asarray(point, dtype=float) - box_position)
    radius = float(params["pusher.radius"])
    if shape != "rod":
        return box_signed_distance(local, size) - radius
    length = _value(params, "pusher.length")
    axis = rotation[:, 2, :]  # world z in the box frame, (M, 3)
    return _segment_distance(local, axis, length, size) - radius


def _segment_distance(start: np.ndarray, axis: np.ndarray, length: float, size: Sequence[float],
                      iterations: int = 60) -> np.ndarray:
    """Smallest signed box distance (m) along segments ``start + s axis``, ``s`` in [0, ``length``].

    The signed distance of a convex body is convex along a line, so a golden-section search finds the
    minimum (to ``length`` x 0.618^``iterations``); the end points are compared too.

    Parameters
    ----------
    start, axis : numpy.ndarray, shape (M, 3)
        Segment starts (box frame, m) and unit directions.
    length : float
        Segment length, m.
    size : sequence of 3 float
        Box edges, m.

    Returns
    -------
    numpy.ndarray, shape (M,)
        The smallest :func:`box_signed_distance` on each segment, m.
    """

    def f(s: np.ndarray) -> np.ndarray:
        return box_signed_distance(start + s[:, None] * axis, size)

    low, high = np.zeros(start.shape[0]), np.full(start.shape[0], float(length))
    for _ in range(iterations):
        a, b = high - _GOLDEN * (high - low), low + _GOLDEN * (high - low)
        left = f(a) <= f(b)
        high, low = np.where(left, b, high), np.where(left, low, a)
    ends = np.minimum(f(np.zeros_like(low)), f(np.full_like(low, float(length))))
    return np.minimum(f(0.5 * (low + high)), ends)


def _box_at(t: np.ndarray, scene: SceneSamples) -> tuple[np.ndarray, np.ndarray]:
    """The box pose at times ``t`` (K,) s: positions (K, 3) and unit quaternions (K, 4), interpolated
    (:func:`~sim2real.trials.resting.interpolate`, held at the ends)."""
    return (interpolate(t, scene.box_t, scene.box_position),
            interpolate_quaternions(t, scene.box_t, scene.box_quaternion))


def box_start(scene: SceneSamples) -> tuple[np.ndarray, np.ndarray]:
    """The box's start pose, position (3,) m and quaternion (4,): for a push the mean of its resting poses
    (:func:`~sim2real.trials.resting.resting_start`), else (or when it does not rest) the first pose."""
    if scene.push:
        rest = resting_start(PoseSeries(scene.box_t - scene.box_t[0], scene.box_position, scene.box_quaternion), 0.0)
        if rest is not None:
            return rest[0], rest[1]
    return scene.box_position[0], scene.box_quaternion[0]


def _value(params: Mapping[str, float], name: str) -> float:
    """``params[name]``, else the parameter's nominal value (what a replay of the trial takes)."""
    return float(params.get(name, spec(name).nominal))


def _size(params: Mapping[str, float]) -> list[float]:
    """Box edges (x, y, z), m."""
    return [float(params[f"box.size_{a}"]) for a in "xyz"]


# -- the checks -----------------------------------------------------------------------------------
def _mm(value_m: float) -> str:
    return f"{1000.0 * value_m:.1f} mm"


def check_table(scene: SceneSamples, params: Mapping[str, float], tolerance_m: float) -> SceneProblem | None:
    """``sunken`` (every trial) and ``floating`` (pushes): the box's lowest corner at its start against the
    table top ``contact.table_height`` (:func:`box_start`, :func:`box_lowest_z`); None when it passes."""
    position, quaternion = box_start(scene)
    gap = float(box_lowest_z(position, quaternion, _size(params))) - _value(params, "contact.table_height")
    what = f"(its lowest corner; tolerance {_mm(tolerance_m)})"
    if -gap > tolerance_m:
        return SceneProblem("sunken", -gap, tolerance_m, f"the box starts {_mm(-gap)} inside the table {what}: "
                            "a box cannot start inside the table", f"box {_mm(-gap)} inside the table")
    if scene.push and gap > tolerance_m:
        return SceneProblem("floating", gap, tolerance_m, f"the box starts {_mm(gap)} above the table {what}: "
                            "a push starts with the box on the table", f"box {_mm(gap)} above the table")
    return None


def check_pusher(scene: SceneSamples, params: Mapping[str, float], shape: str,
                 tolerance_m: float) -> list[SceneProblem]:
    """``pusher_inside`` and ``out_of_reach`` (trials with pusher samples): the pusher's surface against
    the box's (:func:`pusher_box_distance`), every sample against the box at its instant."""
    if scene.pusher_t is None or scene.pusher_position is None or not len(scene.pusher_t):
        return []
    box_position, box_quaternion = _box_at(scene.pusher_t, scene)
    distance = pusher_box_distance(scene.pusher_position, box_position, box_quaternion, params, shape)
    problems = []
    first = min(START_SAMPLES, distance.shape[0])
    depth = -float(np.median(distance[:first]))
    if depth > tolerance_m:
        problems.append(SceneProblem(
            "pusher_inside", depth, tolerance_m,
            f"the {shape} pusher starts {_mm(depth)} inside the box (median of its first {first} "
            f"samples; tolerance {_mm(tolerance_m)}): it would push the box away before the trial begins",
            f"pusher {_mm(depth)} inside the box"))
    closest, reach = float(distance.min()), tolerance_m + REACH_MARGIN_M
    if closest > reach:
        problems.append(SceneProblem(
            "out_of_reach", closest, reach,
            f"the {shape} pusher never comes within {_mm(reach)} of the box (closest {_mm(closest)}; "
            f"tolerance {_mm(tolerance_m)} + {_mm(REACH_MARGIN_M)} reach margin): it never touches the box",
            f"pusher never nearer than {_mm(closest)}"))
    return problems


def check_scene(scene: SceneSamples, params: Mapping[str, float], shape: str | None,
                tolerance_m: float) -> list[SceneProblem]:
    """Every check that applies to one trial (module docstring), in :data:`CHECKS` order.

    Parameters
    ----------
    scene : SceneSamples
        The trial's poses, base frame.
    params : mapping of str to float
        Its object's parameters: ``box.size_*`` (m), for pusher samples ``pusher.radius`` (m) and for a
        rod ``pusher.length`` (m), optionally ``contact.table_height`` (m; else nominal, 0).
    shape : str or None
        The pusher's shape, ``"sphere"`` or ``"rod"`` (a trial without pusher samples: any).
    tolerance_m : float
        The tolerance, m (positive, finite).

    Returns
    -------
    list of SceneProblem
        Empty when the scene is physical.
    """
    check_tolerance(tolerance_m)
    table = check_table(scene, params, tolerance_m)
    return ([table] if table is not None else []) + check_pusher(scene, params, shape or "sphere", tolerance_m)


def checks_run(scene: SceneSamples) -> list[str]:
    """Names of the checks :func:`check_scene` runs on ``scene``."""
    names = ["sunken"] + (["floating"] if scene.push else [])
    return names + (["pusher_inside", "out_of_reach"] if scene.pusher_t is not None and len(scene.pusher_t) else [])


def check_tolerance(tolerance_m: float) -> None:
    """Refuse a tolerance that is not a positive, finite length (one line naming ``--scene-tolerance``)."""
    if not (isinstance(tolerance_m, (int, float)) and math.isfinite(tolerance_m) and tolerance_m > 0):
        raise InputError(f"scene tolerance {tolerance_m!r} m: expected a positive, finite length")


# -- records and messages -------------------------------------------------------------------------
def scene_record(scene: SceneSamples, problems: Sequence[SceneProblem], tolerance_m: float) -> dict[str, Any]:
    """The trial.json ``import.scene_checks`` record: the tolerance and reach (m), the checks run and the
    problems a ``--force`` import kept (empty when the scene passed)."""
    return {"tolerance_m": float(tolerance_m), "reach_m": float(tolerance_m + REACH_MARGIN_M),
            "checks": checks_run(scene), "problems": [p.as_dict() for p in problems]}


def scene_problems(meta: Mapping[str, Any]) -> list[str]:
    """The scene problems a trial was imported with (``--force``), in words; empty for any other trial.

    Parameters
    ----------
    meta : mapping
        trial.json content (a replay keeps the ``"import"`` section of the trial it replays).
    """
    section = TrialMeta(meta).imported
    record = section.get(SCENE_CHECKS_KEY) if section is not None else None
    problems = record.get("problems") if isinstance(record, Mapping) else None
    if not isinstance(problems, list):
        return []
    return [str(p.get("text", p.get("check", "?"))) if isinstance(p, Mapping) else str(p) for p in problems]


def flagged_trials(records: Sequence[Any]) -> list[tuple[str, list[str]]]:
    """``(name, problems)`` of each trial record imported with ``--force`` although its scene is not physical."""
    flagged = [(record.name, scene_problems(record.meta)) for record in records]
    return [(name, problems) for name, problems in flagged if problems]


def scene_error(failed: Sequence[tuple[str, Sequence[SceneProblem]]], total: int,
                hint: str | None = None) -> str:
    """The one-line refusal of an import whose trials fail the scene checks.

    Parameters
    ----------
    failed : sequence of (trial name, its problems)
        The failing trials, in import order (each with at least one problem).
    total : int
        Trials checked.
    hint : str, optional
        What to check instead of :data:`HINTS` of the first problem (an importer with other options).

    Returns
    -------
    str
        The first trial's first problem in full, then how many trials fail and, briefly, each other
        problem; ending with what to check and ``--force``.
    """
    name, problems = failed[0]
    first = problems[0]
    line = f"trial '{name}': {first.text}"
    others = [f"'{name}' {p.short}" for p in problems[1:]] + [
        f"'{other}' {p.short}" for other, more in failed[1:] for p in more]
    if len(failed) > 1:
        shown = others[:6] + ([f"{len(others) - 6} more"] if len(others) > 6 else [])
        line += f" ({len(failed)} of {total} trials fail the scene checks; also {', '.join(shown)})"
    elif others:
        line += f" (also {', '.join(others)})"
    them = "them" if len(failed) > 1 else "it"
    return f"{line}; {hint or HINTS[first.check]}, or import {them} flagged (forced)"


def check_trials(scenes: Sequence[tuple[str, SceneSamples]], params: Mapping[str, float] | None, shape: str | None,
                 tolerance_m: float, force: bool, log: Callable[[str], None],
                 hint: str | None = None) -> dict[str, dict[str, Any]]:
    """Check every trial of an import before any is written.

    Parameters
    ----------
    scenes : sequence of (trial name, SceneSamples)
        The trials, in import order.
    params : mapping of str to float or None
        The object's parameters (see :func:`check_scene`); None (no object given) checks nothing.
    shape : str or None
        The pusher's shape.
    tolerance_m : float
        Tolerance, m.
    force : bool
        Keep trials that fail (``--force``): one warning line per such trial through ``log``.
    log : callable
        Receives the warnings.
    hint : str, optional
        See :func:`scene_error`.

    Returns
    -------
    dict of str to dict
        Per trial, its ``import.scene_checks`` record (:func:`scene_record`); empty without an object.

    Raises
    ------
    Sim2RealError
        Some trial fails and ``force`` is off: :func:`scene_error`.
    """
    check_tolerance(tolerance_m)
    if params is None:
        return {}
    results = [(name, scene, check_scene(scene, params, shape, tolerance_m)) for name, scene in scenes]
    failed = [(name, problems) for name, _, problems in results if problems]
    if failed and not force:
        see = () if hint else HINT_OPTIONS[failed[0][1][0].check]
        raise InputError(scene_error(failed, len(results), hint), see=(*see, "force"))
    for name, problems in failed:
        log(f"WARNING: trial {name} imported flagged (forced): " + "; ".join(p.text for p in problems))
    return {name: scene_record(scene, problems, tolerance_m) for name, scene, problems in results}

"""What drives the simulator in a fit or replay of a recorded trial, checked against what was recorded.

A mode needs certain topics; when a trial lacks them the mode is an error naming the trial and
the missing topic, never a silent substitute (no arm held still for lack of commands, no box
simulated alone for lack of joint states).

Modes (whole trials in ``fit --horizon trial``, every trial in ``replay``)
-------------------------------------------------------------------------
``commands``
    The arm is simulated (servo → FK → pusher) under the recorded joint commands. Needs
    ``/<ns>/joint_states`` and ``/<ns>/joint_command``.
``closed``
    The arm is simulated under the PD law on the recorded reference. Needs
    ``/<ns>/joint_states`` and ``/reference/joint_trajectory``.
``kinematic``
    The arm is played back from ``/<ns>/joint_states``; the pusher follows the recorded motion
    (its source: see below). Needs ``/<ns>/joint_states``.
``pusher``
    The pusher is played back from ``/<ns>/pusher_pose``. Needs ``/<ns>/pusher_pose``.
``box``
    No pusher at all (box-only recordings such as cube tosses): a free rollout.
``auto``
    Trials with joint states: ``commands`` when commands were recorded, else ``closed`` when a
    reference was, else an error naming both; with an explicit pusher source
    (``--pusher recorded|arm``) ``kinematic`` instead. Trials without joint states:
    ``pusher`` when a pusher pose was recorded, else ``box``.

Pusher sources (where the pusher is played back: ``kinematic``, ``pusher`` and the
teacher-forced segments of ``fit --horizon N``)
-------------------------------------------------------------------------------
``recorded``
    The recorded ``/<ns>/pusher_pose``.
``arm``
    Forward kinematics of the xArm model at the recorded ``/<ns>/joint_states``.
``auto``
    ``recorded`` when the trial has a usable pusher pose, else ``arm`` when it has joint
    states, else none.

Where the arm is simulated (``commands``, ``closed``) the pusher is the simulated arm's, and an
explicit pusher source is an error (it would be ignored).

Pusher shapes (``--pusher-shape``, for the recorded pusher pose)
----------------------------------------------------------------
``sphere``
    A sphere of radius ``pusher.radius`` centred at the recorded pusher position (default).
``rod``
    A vertical rod (a capsule whose axis is world z) of radius ``pusher.radius`` and straight
    length ``pusher.length``: the recorded pusher position is the centre of its lower end point
    (the tip), the upper end point is ``pusher.length`` above it. Only for a recorded pusher pose:
    the arm's pusher (simulated or FK of joint states) is the sphere on its flange.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np

from sim2real.errors import InputError, Sim2RealError
from sim2real.model import load_arm
from sim2real.params import ParameterSet
from sim2real.sim import Capsule, Sphere
from sim2real.sysid.problem.data import TrialData
from sim2real.trials.scene_checks import box_lowest_z
from sim2real.trials.schema import REFERENCE_TOPIC

#: How a trial is simulated in a fit (whole trials) or a replay (module docstring).
ReplayMode = Literal["auto", "commands", "closed", "kinematic", "pusher"]
#: Where a played-back pusher comes from (``--pusher``).
PusherSource = Literal["auto", "recorded", "arm"]
#: The pusher's shape (``--pusher-shape``, module docstring).
PusherShape = Literal["sphere", "rod"]
#: Modes a fit (whole trials) or replay may ask for.
MODES: tuple[ReplayMode, ...] = get_args(ReplayMode)
#: Modes in which the arm and its pusher are simulated.
SIMULATED_ARM_MODES: tuple[ReplayMode, ...] = ("commands", "closed")
#: ``--pusher`` choices.
PUSHER_SOURCES: tuple[PusherSource, ...] = get_args(PusherSource)
#: ``--pusher-shape`` choices (module docstring).
PUSHER_SHAPES: tuple[PusherShape, ...] = get_args(PusherShape)


class TrialInputError(InputError):
    """A trial lacks (or cannot provide) what a mode needs; raised by :func:`sim2real.sysid.prediction.replay.replay`
    for input problems, as distinct from simulation failures."""


def _missing(data: TrialData, topic: str, needed_by: str, hint: str = "", option: str | None = None) -> Sim2RealError:
    return Sim2RealError(f"trial '{data.name}' has no {topic} (needed by {needed_by}){hint}", option=option)


def resolve_pusher(data: TrialData, requested: str = "auto") -> str:
    """The pusher source used for a played-back pusher.

    Parameters
    ----------
    data : TrialData
    requested : str
        ``"auto"``, ``"recorded"`` or ``"arm"``.

    Returns
    -------
    str
        ``"recorded"``, ``"arm"`` or ``"none"`` (box-only trial, ``auto`` only).

    Raises
    ------
    Sim2RealError
        ``recorded`` without a usable pusher pose, ``arm`` without joint states (the message
        names the trial and the topic), or an unknown source.
    """
    if requested not in PUSHER_SOURCES:
        raise InputError(f"unknown pusher source '{requested}' (choose from {', '.join(PUSHER_SOURCES)})")
    has_joints = data.kind == "arm"
    if requested == "recorded" or (requested == "auto" and data.pusher_position is not None):
        if data.pusher_position is None:
            reason = f": {data.pusher_gap}" if data.pusher_gap else ""
            raise InputError(f"trial '{data.name}' has no usable {data.topic('pusher_pose')} "
                             f"(needed by the recorded pusher source){reason}", option="pusher")
        return "recorded"
    if requested == "arm" or has_joints:
        if not has_joints:
            raise _missing(data, data.topic("joint_states"), "the pusher source 'arm'", option="pusher")
        return "arm"
    return "none"


def resolve_mode(data: TrialData, mode: str = "auto", pusher: str = "auto") -> str:
    """The concrete mode a trial is simulated in (see the module docstring).

    Parameters
    ----------
    data : TrialData
    mode : str
        One of :data:`MODES`.
    pusher : str
        One of :data:`PUSHER_SOURCES`; anything but ``"auto"`` counts as an explicit choice.

    Returns
    -------
    str
        ``"commands"``, ``"closed"``, ``"kinematic"``, ``"pusher"`` or ``"box"``.

    Raises
    ------
    Sim2RealError
        A topic the mode needs is missing (named with the trial), or the pusher source
        contradicts the mode.
    """
    if mode not in MODES:
        raise InputError(f"unknown mode '{mode}' (choose from {', '.join(MODES)})")
    if pusher not in PUSHER_SOURCES:
        raise InputError(f"unknown pusher source '{pusher}' (choose from {', '.join(PUSHER_SOURCES)})")
    explicit = pusher != "auto"
    if mode == "auto":
        mode = _auto_mode(data, explicit)
        if mode == "box" and explicit:
            resolve_pusher(data, pusher)  # raises: the trial has neither source
        return mode
    if mode in SIMULATED_ARM_MODES and explicit:
        raise InputError(f"the pusher source '{pusher}' does not apply to the {mode} mode: it simulates the arm "
                         f"and its pusher (use the kinematic or pusher mode to play the pusher back)", option="pusher")
    if mode == "pusher" and pusher == "arm":
        raise InputError("the pusher source 'arm' contradicts the pusher mode (the recorded pusher pose); use the "
                         "kinematic mode", option="pusher")
    if mode in ("commands", "closed", "kinematic") and data.kind != "arm":
        hint = "; use the pusher mode" if data.kind == "pusher" else ""
        raise _missing(data, data.topic("joint_states"), f"the {mode} mode", hint, option="mode" if hint else None)
    if mode == "commands" and data.command is None:
        raise _missing(data, data.topic("joint_command"), "the commands mode", "; use the closed mode", option="mode")
    if mode == "closed" and data.reference is None:
        raise _missing(data, REFERENCE_TOPIC, "the closed mode")
    if mode == "pusher" and data.pusher_position is None:
        gap = f" ({data.pusher_gap})" if data.pusher_gap else ""
        raise _missing(data, data.topic("pusher_pose"), "the pusher mode", gap)
    if mode == "kinematic":
        resolve_pusher(data, pusher)
    return mode


def _auto_mode(data: TrialData, explicit_pusher: bool) -> str:
    if data.kind == "box":
        return "box"
    if data.kind == "pusher":
        return "pusher"
    if explicit_pusher:
        return "kinematic"
    if data.command is not None:
        return "commands"
    if data.reference is not None:
        return "closed"
    raise InputError(f"trial '{data.name}' has neither {data.topic('joint_command')} nor {REFERENCE_TOPIC} "
                     f"(the arm cannot be simulated over the whole trial; use the kinematic or pusher mode "
                     f"to play the recorded motion back)", option="mode")


def mode_pusher_source(data: TrialData, mode: str, pusher: str = "auto") -> str:
    """The pusher source of a resolved ``mode`` (or ``"segments"``, teacher-forced fits): ``"simulated"``,
    ``"recorded"``, ``"arm"`` or ``"none"``."""
    if mode in SIMULATED_ARM_MODES:
        return "simulated"
    if mode == "pusher":
        return "recorded"
    if mode == "box":
        return "none"
    return resolve_pusher(data, pusher)


def pusher_path(data: TrialData, params: ParameterSet, source: str) -> np.ndarray | None:
    """The played-back pusher centre on the trial's grid.

    Parameters
    ----------
    data : TrialData
    params : ParameterSet
        For the arm model's pusher tool (source ``"arm"``).
    source : str
        ``"recorded"``, ``"arm"`` or ``"none"`` (see :func:`resolve_pusher`).

    Returns
    -------
    ndarray, shape (K+1, 3) or None
        Pusher position, m, base frame (a sphere's centre, or a rod's tip: see
        :func:`pusher_placement`); None for ``"none"``.
    """
    if source == "recorded":
        if data.pusher_position is None:
            raise InputError(f"trial '{data.name}' has no usable {data.topic('pusher_pose')}")
        return data.pusher_position
    if source == "arm":
        if data.joint_position is None:
            raise _missing(data, data.topic("joint_states"), "the arm pusher source")
        return load_arm(params).pusher_position(data.joint_position)
    return None


def describe_pusher(data: TrialData, source: str) -> str:
    """Where the pusher came from, in words (console lines, fit.json, trial.json)."""
    text = {
        "simulated": "simulated arm (xArm FK of the simulated joints)",
        "recorded": f"recorded {data.topic('pusher_pose')}",
        "arm": f"xArm FK of the recorded {data.topic('joint_states')}",
        "none": "none (box only)",
    }[source]
    if source == "arm" and data.pusher_gap:
        text += f"; the recorded pusher pose is not usable: {data.pusher_gap}"
    return text


def check_pusher_shape(data: TrialData, source: str, shape: str) -> None:
    """Refuse a pusher shape that does not apply to where the pusher comes from.

    Parameters
    ----------
    data : TrialData
    source : str
        ``"simulated"``, ``"recorded"``, ``"arm"`` or ``"none"`` (:func:`mode_pusher_source`).
    shape : str
        ``"sphere"`` or ``"rod"``.

    Raises
    ------
    Sim2RealError
        Unknown shape, or ``"rod"`` with the arm's pusher (simulated or FK of the joint states),
        which is the sphere on its flange.
    """
    if shape not in PUSHER_SHAPES:
        raise InputError(f"unknown pusher shape '{shape}' (choose from {', '.join(PUSHER_SHAPES)})")
    if shape == "rod" and source in ("simulated", "arm"):
        raise InputError(f"trial '{data.name}': the rod pusher shape applies to a recorded pusher pose only; "
                         f"this trial's pusher is the arm's ({describe_pusher(data, source)}), a sphere",
                         option="pusher_shape")


def pusher_primitive(params: ParameterSet, shape: str) -> Sphere | Capsule:
    """The engine's pusher primitive for ``shape``.

    Parameters
    ----------
    params : ParameterSet
        ``pusher.radius`` (m; sphere and rod) and ``pusher.length`` (m; rod).
    shape : str
        ``"sphere"`` or ``"rod"``.

    Returns
    -------
    Sphere or Capsule
        The rod is a :class:`~sim2real.sim.shapes.Capsule` of half length ``pusher.length / 2``.
    """
    radius = float(params["pusher.radius"])
    if shape == "rod":
        return Capsule(radius, 0.5 * float(params["pusher.length"]))
    if shape == "sphere":
        return Sphere(radius)
    raise InputError(f"unknown pusher shape '{shape}' (choose from {', '.join(PUSHER_SHAPES)})")


def pusher_placement(path: np.ndarray, params: ParameterSet, shape: str) -> np.ndarray:
    """The engine's per-step pusher placement from played-back pusher positions.

    Parameters
    ----------
    path : ndarray, shape (K+1, 3)
        Pusher positions, m, base (world) frame: the sphere's centre, or the rod's tip (the
        centre of its lower end point).
    params : ParameterSet
        ``pusher.length`` (m) for the rod.
    shape : str
        ``"sphere"`` or ``"rod"``.

    Returns
    -------
    ndarray, shape (K+1, 3) or (K+1, 6)
        ``path`` itself for the sphere; for the rod its segment end points ``(tip, tip + length * z)``
        flattened per step.
    """
    if shape == "sphere":
        return path
    if shape != "rod":
        raise InputError(f"unknown pusher shape '{shape}' (choose from {', '.join(PUSHER_SHAPES)})")
    upper = np.array(path, dtype=float, copy=True)
    upper[:, 2] += float(params["pusher.length"])
    return np.concatenate([path, upper], axis=1)


MAX_START_DEPTH = 0.005
"""How far (m) a recorded box start may reach below the table top (tracking noise) before the
trial's geometry or frames are taken as wrong."""


def trial_shape(data: TrialData, requested: str) -> str:
    """The pusher shape to simulate a trial with: the one the trial carries, else ``requested``."""
    return data.pusher_shape or requested


def check_start_above_table(data: TrialData, params: ParameterSet) -> None:
    """Refuse a trial whose box starts inside the table with these parameters.

    Parameters
    ----------
    data : TrialData
        The trial; its resting start (or first pose) is checked.
    params : ParameterSet
        Box size (``box.size_*``, m) and ``contact.table_height`` (m), as the trial is simulated.

    Raises
    ------
    Sim2RealError
        The box's lowest corner at the start lies more than :data:`MAX_START_DEPTH` below the
        table top; names the trial, the depth and what to check.
    """
    position = data.start_position if data.start_position is not None else data.box_position[0]
    quaternion = data.start_quaternion if data.start_quaternion is not None else data.box_quaternion[0]
    size = tuple(float(params[f"box.size_{axis}"]) for axis in "xyz")
    lowest = float(box_lowest_z(position, quaternion, size))  # the geometry of the import's scene checks
    depth = float(params["contact.table_height"]) - lowest
    if depth > MAX_START_DEPTH:
        raise InputError(
            f"trial '{data.name}': the box starts {1000 * depth:.1f} mm inside the table (centre at "
            f"z = {1000 * float(position[2]):.1f} mm, box {1000 * size[0]:.1f} x {1000 * size[1]:.1f} x "
            f"{1000 * size[2]:.1f} mm): check its size (trial.json \"object\" or the parameter overrides) and the "
            f"frames of the import (its frame transform and box offset)")

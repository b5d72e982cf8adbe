"""Recorded trials on the simulator's time grid: what the residuals compare against.

A :class:`TrialData` holds one platform's recording (normally ``real``) of one trial resampled onto a
uniform grid ``t_k = t_0 + k dt`` (k = 0..K):

* **arm trials** (the trial has ``/real/joint_states``): the grid is the control grid of
  ``sim.dt``; ``t_0`` is the first joint command (or, without commands, the first joint
  state). Joint states and box poses are interpolated linearly (quaternions by normalised
  linear interpolation); the joint command of tick ``k`` is the last one sent before
  ``t_k + dt/2`` (zero-order hold; send times jitter a little after the tick).
* **pusher trials** (``/real/box_pose`` and ``/real/pusher_pose``, no joint states: a probe
  or another robot pushing the box): the grid is ``sim.dt`` over the time both poses cover;
  the pusher follows its recorded pose.
* **box-only trials** (cube tosses: ``/real/box_pose`` only, no arm): the recording's own
  sample interval is the step when the samples are uniform (within 5 %), so no
  interpolation happens; otherwise the poses are resampled at ``sim.dt``.

The recorded pusher pose, when there is one, is kept on the grid of arm trials too
(:attr:`TrialData.pusher_position`), so that fits and replays can take the pusher from it
rather than from forward kinematics of the joint states (see :mod:`sim2real.sysid.problem.inputs`).

Whole-trial rollouts of arm and pusher trials start the box at rest; its starting pose is the mean of
the recorded poses while it rested before the push (:func:`~sim2real.trials.resting.resting_start`), not
the first pose alone: motion capture scatters each pose by millimetres, and near the distance where a
push stops toppling the box a 2 mm error in the start decides the outcome (averaging 40-60 resting poses
halved the demo's whole-trial cost and moved its box-height fit from -7.0 to -6.5 cm, hidden -6).

Box states for teacher forcing are rebuilt from consecutive poses (:func:`box_states`),
following the engine's own update: the centre of mass moves by ``dt`` times the new
velocity, and the orientation by ``q_k = q_{k-1} ⊗ exp(dt ω_body,k)``. Because the
centre-of-mass offset enters that reconstruction, the states come with their derivative
with respect to ``box.com_x/y/z``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal

import numpy as np

from sim2real.errors import DataError, InputError
from sim2real.spatial import conjugate, multiply, skew, to_matrix, to_rotation_vector, yaw
from sim2real.trials import JointReference, PoseSeries, TrialRecord
from sim2real.trials.frames_file import FrameUncertainty
from sim2real.trials.resting import (
    continuous_quaternions,
    interpolate,
    interpolate_quaternions,
    resting_joints,
    resting_start,
)
from sim2real.trials.trial_object import trial_object

#: Relative tolerance for treating a pose recording as uniformly sampled.
_UNIFORM_TOLERANCE = 0.05
#: Fewest grid points a trial must give (one pose before, one step, one pose after).
_MIN_POINTS = 3


#: What a trial records: the arm (joint states, commands), a pusher's poses, or a box alone (a toss).
TrialKind = Literal["arm", "pusher", "box"]


@dataclass(frozen=True)
class TrialData:
    """One recorded trial on a uniform grid (the real platform only).

    Attributes
    ----------
    name : str
        Trial name.
    kind : str
        ``"arm"`` (joint states recorded: the box pushed by the arm), ``"pusher"`` (no joint
        states, a recorded pusher pose) or ``"box"`` (box only, e.g. a cube toss).
    dt : float
        Grid step, s.
    t : ndarray, shape (K+1,)
        Grid times, s since the trial start.
    box_position : ndarray, shape (K+1, 3)
        Recorded box centre, m, arm base (or surface) frame.
    box_quaternion : ndarray, shape (K+1, 4)
        Recorded box orientation (w, x, y, z), body -> base; sign-continuous.
    joint_position, joint_velocity : ndarray, shape (K+1, 6) or None
        Recorded joint states, rad and rad/s (arm trials).
    command : ndarray, shape (K, 6) or None
        Joint velocity command acting from tick k, rad/s (arm trials with commands).
    reference : JointReference or None
        The recorded reference trajectory (time axis as recorded).
    dt_override : bool
        True when ``dt`` is the recording's own interval rather than ``sim.dt``.
    platform : str
        Namespace of the recording (``"real"`` or ``"sim"``), for naming its topics.
    pusher_position : ndarray, shape (K+1, 3) or None
        Recorded pusher centre (``/<platform>/pusher_pose``), m, base frame, on the grid; None
        when the trial has no pusher pose or it does not cover the grid.
    pusher_gap : str
        Why a recorded pusher pose is not usable (empty when it is, or when there is none).
    start_position : ndarray, shape (3,) or None
        Box centre (m, base frame) at rest before the push, the mean of ``start_samples``
        recorded poses (:func:`resting_start`); None for box-only trials (they start moving).
    start_quaternion : ndarray, shape (4,) or None
        Box orientation (w, x, y, z) at rest before the push, their normalised mean.
    start_samples : int
        Recorded poses averaged into the start (1: the first pose alone).
    start_joints : ndarray, shape (6,) or None
        Joint angles (rad) at rest before the first non-zero command, the mean of
        ``start_joint_samples`` grid samples (:func:`resting_joints`); None without commands.
    start_joint_samples : int
        Grid samples of the joint angles averaged into ``start_joints``.
    object_params : dict of str to float
        Simulator parameters the trial carries for its object and pusher (trial.json ``"object"``,
        e.g. box size and mass, pusher radius); empty when it carries none.
    pusher_shape : str or None
        The pusher shape the trial carries (``"sphere"`` or ``"rod"``), None when it carries none.
    object_name : str or None
        The trial's object label (per-object fits and reports group by it).
    frame_uncertainty : FrameUncertainty or None
        What a frame calibration left unknown of the box poses' tracking frame (trial.json
        ``import.frame_uncertainty``, recorded poses of the ``real`` platform only); None without one.
    """

    name: str
    kind: TrialKind
    dt: float
    t: np.ndarray
    box_position: np.ndarray
    box_quaternion: np.ndarray
    joint_position: np.ndarray | None = None
    joint_velocity: np.ndarray | None = None
    command: np.ndarray | None = None
    reference: JointReference | None = None
    dt_override: bool = False
    platform: str = "real"
    pusher_position: np.ndarray | None = None
    pusher_gap: str = ""
    start_position: np.ndarray | None = None
    start_quaternion: np.ndarray | None = None
    start_samples: int = 1
    start_joints: np.ndarray | None = None
    start_joint_samples: int = 1
    object_params: dict[str, float] = field(default_factory=dict)
    pusher_shape: str | None = None
    object_name: str | None = None
    frame_uncertainty: FrameUncertainty | None = None

    @property
    def steps(self) -> int:
        """Number of grid steps ``K``."""
        return int(self.t.shape[0] - 1)

    def start_box(self) -> tuple[np.ndarray, np.ndarray]:
        """The box's starting pose for a rollout from rest: position (3,) m and quaternion (4,) w-x-y-z.

        The resting mean when there is one, else the pose on the first grid point.
        """
        if self.start_position is not None and self.start_quaternion is not None:
            return self.start_position, self.start_quaternion
        return self.box_position[0], self.box_quaternion[0]

    def start_arm(self) -> np.ndarray:
        """The arm's joint angles (6,) rad for a rollout from rest: the resting mean, else the first sample."""
        assert self.joint_position is not None
        return self.start_joints if self.start_joints is not None else self.joint_position[0]

    def topic(self, series: str) -> str:
        """The recorded topic of ``series`` (e.g. ``"joint_states"``): ``/<platform>/<series>``."""
        return f"/{self.platform}/{series}"

    @cached_property
    def pose_kinematics(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What :func:`box_states` takes from the recorded poses alone, computed once per trial (read-only
        arrays: every evaluation of the trial shares them).

        Returns
        -------
        rotation : ndarray, shape (K+1, 3, 3)
            Body -> base rotation of each pose.
        omega_world : ndarray, shape (K+1, 3)
            Angular velocity (rad/s, base frame) from each pose and the one before it (row 0 zero).
        d_states_d_com : ndarray, shape (K+1, 13, 3)
            Derivative of the rebuilt states with respect to the centre-of-mass offset (body frame).
        """
        q, dt = self.box_quaternion, self.dt
        n = q.shape[0]
        rotation = to_matrix(q)
        omega_body = np.zeros((n, 3))
        omega_body[1:] = to_rotation_vector(multiply(conjugate(q[:-1]), q[1:])) / dt
        omega_world = np.einsum("nij,nj->ni", rotation, omega_body)
        d_states = np.zeros((n, 13, 3))
        d_states[1:, 7:10, :] = (rotation[1:] - rotation[:-1]) / dt - skew(omega_world[1:]) @ rotation[1:]
        for array in (rotation, omega_world, d_states):
            array.flags.writeable = False
        return rotation, omega_world, d_states


def _strictly_increasing(t: np.ndarray, what: str, name: str) -> None:
    if t.shape[0] >= 2 and np.any(np.diff(t) <= 0.0):
        raise DataError(f"trial '{name}': {what} time stamps are not strictly increasing")


def _uniform_interval(t: np.ndarray) -> float | None:
    if t.shape[0] < 2:
        return None
    steps = np.diff(t)
    median = float(np.median(steps))
    if median > 0.0 and np.max(np.abs(steps - median)) <= _UNIFORM_TOLERANCE * median:
        return median
    return None


def pose_noise(data: TrialData, samples: int = 40) -> tuple[float, float]:
    """Measurement noise of a trial's recorded box poses, from the recording itself.

    Robust standard deviations from the third differences of the first ``samples`` poses on the
    grid (white noise of σ gives third differences of σ √20; a pose at rest, a steady motion or a
    constant acceleration, as in free flight, adds nothing to them).

    Parameters
    ----------
    data : TrialData
    samples : int
        Leading grid poses used (fewer when the trial is shorter).

    Returns
    -------
    (float, float)
        Position noise per axis (m, pooled over base x and y) and heading noise about world z (rad).
    """
    head = min(samples, data.box_position.shape[0])
    if head < 4:
        return 0.0, 0.0
    position = np.asarray(data.box_position[:head, :2], dtype=float)
    heading = np.unwrap(yaw(continuous_quaternions(data.box_quaternion[:head])))[:, None]
    return _third_difference_scatter(position), _third_difference_scatter(heading)


def _third_difference_scatter(values: np.ndarray) -> float:
    """Robust noise standard deviation of ``values`` (N, d) from their third differences, pooled."""
    return float(1.4826 * np.median(np.abs(np.diff(values, n=3, axis=0))) / np.sqrt(20.0))


def recorded_platform(record: TrialRecord, platform: str = "auto") -> str:
    """The platform whose recording is fitted: ``platform``, or for ``"auto"`` ``real`` if present, else ``sim``."""
    if platform != "auto":
        return platform
    if "real" in record.platforms or "sim" not in record.platforms:
        return "real"
    return "sim"


def prepare_trial(record: TrialRecord, dt: float, platform: str = "auto") -> TrialData:
    """Resample one platform's recording of ``record`` onto a uniform grid.

    Parameters
    ----------
    record : TrialRecord
        A trial read by :func:`sim2real.trials.read_trial`.
    dt : float
        The simulator's control period ``sim.dt``, s.
    platform : str
        ``"real"``, ``"sim"`` or ``"auto"`` (see :func:`recorded_platform`); the recording
        of that platform is what the simulator is compared against.

    Returns
    -------
    TrialData

    Raises
    ------
    Sim2RealError
        No ``/<platform>/box_pose``, too few samples, or non-increasing time stamps; a trial
        imported from outside recordings that carries no object (trial.json ``"object"``: box
        size and mass, pusher shape and radius), which is never simulated with a default box.
    """
    data = _prepare_recorded(record, dt, platform)
    if data.platform == "real":
        data = replace(data, frame_uncertainty=FrameUncertainty.of_trial(record.meta, record.name))
    obj = trial_object(record.meta, record.name)
    if obj is None:
        if record.info.mode == "import":
            raise InputError(
                f"trial '{record.name}' carries no object (box size and mass, pusher shape and radius), so it "
                f"cannot be simulated: import it with its object (the box's size, its mass or density, the pusher's "
                f"shape and radius), or add an \"object\" section to its trial.json")
        return data
    return replace(data, object_params=dict(obj.parameters), pusher_shape=obj.pusher_shape, object_name=obj.name)


def _prepare_recorded(record: TrialRecord, dt: float, platform: str) -> TrialData:
    """:func:`prepare_trial` without the trial's object."""

    ns = recorded_platform(record, platform)
    real = record.platform(ns)
    box_topic = f"/{ns}/box_pose"
    poses: PoseSeries | None = real.box_pose if real is not None else None
    if poses is None or len(poses) == 0:
        raise InputError(f"trial '{record.name}' has no messages on {box_topic} (needed to fit or replay)")
    _strictly_increasing(poses.t, box_topic, record.name)
    pusher = real.pusher_pose if real is not None else None
    if pusher is not None and len(pusher) < 2:
        pusher = None
    if pusher is not None:
        _strictly_increasing(pusher.t, f"/{ns}/pusher_pose", record.name)
    joints = real.joint_states if real is not None else None
    if joints is None or len(joints) == 0:
        if pusher is not None:
            return _prepare_pusher_trial(record, ns, poses, pusher, dt)
        return _prepare_box_trial(record.name, poses, dt, ns)
    _strictly_increasing(joints.t, f"/{ns}/joint_states", record.name)
    commands = real.joint_command if real is not None else None
    t0 = max(float(joints.t[0]), float(poses.t[0]))
    if commands is not None and len(commands):
        # The grid keeps to the command ticks (the simulated arm acts on them): the first tick
        # at or after the first joint state and box pose. A grid shifted from the ticks by a
        # stamp's jitter would compare the simulation with the recording at other instants.
        first = int(np.searchsorted(commands.t, t0 - 1e-9))
        if first < len(commands):
            t0 = float(commands.t[first])
    t_end = min(float(joints.t[-1]), float(poses.t[-1]))
    t = _grid(t0, t_end, dt, record.name, "joint states and box poses")
    command = None
    if commands is not None and len(commands):
        index = np.searchsorted(commands.t, t[:-1] + 0.5 * dt, side="right") - 1
        command = np.where((index >= 0)[:, None], commands.velocity[np.clip(index, 0, None)], 0.0)
    pusher_position, gap = _pusher_on_grid(t, pusher, dt, f"/{ns}/pusher_pose")
    joint_position = interpolate(t, joints.t, joints.position)
    arm_start = resting_joints(joint_position, command) if command is not None else None
    return TrialData(
        name=record.name, kind="arm", dt=dt, t=t, **_start_fields(poses, float(t[0])),
        box_position=interpolate(t, poses.t, poses.position),
        box_quaternion=continuous_quaternions(interpolate_quaternions(t, poses.t, poses.quaternion)),
        joint_position=joint_position, joint_velocity=interpolate(t, joints.t, joints.velocity),
        command=command, reference=record.reference, platform=ns,
        pusher_position=pusher_position, pusher_gap=gap,
        start_joints=arm_start[0] if arm_start else None, start_joint_samples=arm_start[1] if arm_start else 1,
    )


def _start_fields(poses: PoseSeries, t_start: float) -> dict[str, Any]:
    """:class:`TrialData`'s ``start_*`` fields from :func:`resting_start` (empty: the first pose)."""
    start = resting_start(poses, t_start)
    if start is None:
        return {}
    position, quaternion, samples = start
    return {"start_position": position, "start_quaternion": quaternion, "start_samples": samples}


def _grid(t0: float, t_end: float, dt: float, name: str, what: str) -> np.ndarray:
    """Uniform grid ``t0 + k dt`` (s) up to ``t_end``; at least :data:`_MIN_POINTS` points."""
    steps = int(np.floor((t_end - t0) / dt + 1e-6))
    if steps + 1 < _MIN_POINTS:
        raise DataError(f"trial '{name}': fewer than {_MIN_POINTS} control ticks where {what} "
                            f"overlap (truncated recording?)")
    return t0 + dt * np.arange(steps + 1)


def _pusher_on_grid(t: np.ndarray, pusher: PoseSeries | None, dt: float,
                    topic: str) -> tuple[np.ndarray | None, str]:
    """The recorded pusher centre (K+1, 3) on the grid ``t``, or None and why it is not usable.

    The recording must cover the grid to within one grid step at either end (no extrapolation).
    """
    if pusher is None:
        return None, ""
    if pusher.t[0] > t[0] + dt or pusher.t[-1] < t[-1] - dt:
        return None, (f"{topic} covers {pusher.t[0]:.3f}-{pusher.t[-1]:.3f} s, not the fitted span "
                      f"{t[0]:.3f}-{t[-1]:.3f} s")
    return interpolate(t, pusher.t, pusher.position), ""


def _prepare_pusher_trial(record: TrialRecord, ns: str, poses: PoseSeries, pusher: PoseSeries,
                          dt: float) -> TrialData:
    """A trial with box and pusher poses but no joint states, on the ``sim.dt`` grid both cover."""
    t0 = max(float(poses.t[0]), float(pusher.t[0]))
    t_end = min(float(poses.t[-1]), float(pusher.t[-1]))
    t = _grid(t0, t_end, dt, record.name, "box and pusher poses")
    return TrialData(
        name=record.name, kind="pusher", dt=dt, t=t, **_start_fields(poses, float(t[0])),
        box_position=interpolate(t, poses.t, poses.position),
        box_quaternion=continuous_quaternions(interpolate_quaternions(t, poses.t, poses.quaternion)),
        reference=record.reference, platform=ns, pusher_position=interpolate(t, pusher.t, pusher.position),
    )


def _prepare_box_trial(name: str, poses: PoseSeries, dt: float, ns: str = "real") -> TrialData:
    interval = _uniform_interval(poses.t)
    if interval is not None:
        t = poses.t - 0.0
        position, quaternion = poses.position, continuous_quaternions(poses.quaternion)
        step, override = interval, abs(interval - dt) > 1e-9
    else:
        steps = int(np.floor((poses.t[-1] - poses.t[0]) / dt + 1e-6))
        t = poses.t[0] + dt * np.arange(steps + 1)
        position = interpolate(t, poses.t, poses.position)
        quaternion = continuous_quaternions(interpolate_quaternions(t, poses.t, poses.quaternion))
        step, override = dt, False
    if t.shape[0] < _MIN_POINTS:
        raise DataError(f"trial '{name}': the box pose has fewer than {_MIN_POINTS} samples (truncated?)")
    return TrialData(name=name, kind="box", dt=float(step), t=np.asarray(t, dtype=float),
                     box_position=np.asarray(position, dtype=float), box_quaternion=quaternion,
                     dt_override=override, platform=ns)


def box_states(data: TrialData, com_body: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Box states rebuilt from consecutive recorded poses (teacher forcing, Dojo eqs. 55-57).

    For ``k >= 1``, with ``c`` the centre-of-mass offset (body) and ``R_k`` the orientation:
    the centre of mass velocity is ``(p_k + R_k c - p_{k-1} - R_{k-1} c) / dt``, the body
    angular velocity ``log(q_{k-1}* ⊗ q_k) / dt``; the state holds the geometric-centre
    velocity ``v_com - ω_world × (R_k c)`` and ``ω_world = R_k ω_body``. Row 0 has zero
    velocities (the recording gives no earlier pose).

    Parameters
    ----------
    data : TrialData
    com_body : ndarray, shape (3,)
        ``box.com_x/y/z``, m, box body frame.

    Returns
    -------
    states : ndarray, shape (K+1, 13)
        Position, quaternion (w, x, y, z), linear velocity (m/s, world), angular velocity (rad/s, world).
    d_states_d_com : ndarray, shape (K+1, 13, 3)
        Derivative of the states with respect to ``com_body``.
    """
    p, q, dt = data.box_position, data.box_quaternion, data.dt
    rotation, omega_world, d_states = data.pose_kinematics
    c = np.asarray(com_body, dtype=float)
    lever = rotation @ c
    velocity = np.zeros((p.shape[0], 3))
    velocity[1:] = (p[1:] + lever[1:] - p[:-1] - lever[:-1]) / dt - np.cross(omega_world[1:], lever[1:])
    states = np.concatenate((p, q, velocity, omega_world), axis=1)
    return states, d_states

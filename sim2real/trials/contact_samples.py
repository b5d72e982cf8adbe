"""The contact evidence of ``sim2real calibrate``: which box samples a pusher pushes, and how far from the face.

:mod:`sim2real.trials.frame_calibration` estimates corrections of the box stream (and of the tool offset)
that bring the pusher onto the face it pushes; this module reads a trial (:class:`CalibrationTrial`),
selects its contact samples (:func:`contact_samples`) and measures, under any corrections ``values`` (a
dict keyed by the corrections' names, :data:`~sim2real.trials.frame_calibration.PARAMETERS` and
``dz_m``), the pusher's distance from the pushed face (:func:`face_distances`) and from the box
(:func:`distances`). Frames: arm base frame, z up; m, rad, s.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from sim2real.errors import InputError
from sim2real.params import ParameterSet
from sim2real.spatial import conjugate, from_axis_angle, multiply, rotate
from sim2real.trials.records import PoseSeries, TrialRecord
from sim2real.trials.resting import interpolate
from sim2real.trials.scene_checks import pusher_box_distance
from sim2real.trials.trial_object import trial_object

#: The tool offset's correction (in the recorded pusher pose's axes).
TOOL_PARAMETERS = ("tx_m", "ty_m", "tz_m")
#: Both the box and the pusher move faster than this when a sample counts as contact, m/s.
MOVING_M_S = 0.02
#: A box faster than this times the pusher's speed (plus :data:`MOVING_M_S`) has left the pusher.
RUNNING_AHEAD = 1.1
#: A run of pushing samples takes the face its first this many samples push (the majority).
FACE_SAMPLES = 5
#: Half the time span over which speeds are measured, s.
SPEED_SPAN_S = 0.03
#: Samples left out at each end of a run of pushing samples (the speed's span mixes moving and resting
#: samples there).
EDGE_SAMPLES = 4
#: A contact sample's recorded pusher-box distance lies within this, m (frames off by more: say so).
CONTACT_WINDOW_M = 0.03


@dataclass(frozen=True)
class CalibrationTrial:
    """What the calibration reads of one trial (arm base frame, m, s, quaternions w first).

    Attributes
    ----------
    name : str
    box : PoseSeries
        The box centre's pose as imported (times from the trial's start).
    pusher_t : ndarray, shape (M,)
    pusher_position : ndarray, shape (M, 3)
        The pusher point (sphere centre or rod tip).
    pusher_quaternion : ndarray, shape (M, 4)
        The pusher pose's orientation (identity for pusher poses recorded without one).
    params : dict of str to float
        The trial's object parameters (box size, pusher radius and length, table height).
    shape : str
        ``"sphere"`` or ``"rod"``.
    """

    name: str
    box: PoseSeries
    pusher_t: np.ndarray
    pusher_position: np.ndarray
    pusher_quaternion: np.ndarray
    params: dict[str, float]
    shape: str

    @classmethod
    def from_record(cls, record: TrialRecord) -> CalibrationTrial:
        """The trial's real platform (box pose and pusher pose) and its stored object.

        Raises
        ------
        Sim2RealError
            The trial has no object, no box pose or no pusher pose.
        """
        obj = trial_object(record.meta, record.name)
        if obj is None or obj.pusher_shape is None:
            raise InputError(f"trial '{record.name}': no object with a pusher stored (import it with the box's size, "
                             "the pusher's shape and the pusher's radius)")
        platform = record.platforms.get("real")
        if platform is None or platform.box_pose is None or platform.pusher_pose is None:
            raise InputError(f"trial '{record.name}': calibrate needs a box pose and a pusher pose")
        nominal = ParameterSet.nominal()
        params = {name: float(obj.parameters.get(name, nominal[name]))
                  for name in ("box.size_x", "box.size_y", "box.size_z", "pusher.radius", "pusher.length",
                               "contact.table_height")}
        pusher = platform.pusher_pose
        return cls(record.name, platform.box_pose, pusher.t, pusher.position, pusher.quaternion, params,
                   obj.pusher_shape)

    @functools.cached_property
    def pusher_velocity(self) -> np.ndarray:
        """The pusher's horizontal velocity (M, 3) m/s (:func:`horizontal_velocity`)."""
        return horizontal_velocity(self.pusher_t, self.pusher_position)

    @functools.cached_property
    def box_speed(self) -> np.ndarray:
        """The box's horizontal speed (N,) m/s (:func:`horizontal_speed`)."""
        return horizontal_speed(self.box.t, self.box.position)

    @property
    def size(self) -> list[float]:
        return [self.params["box.size_x"], self.params["box.size_y"], self.params["box.size_z"]]


def corrected_box(position: np.ndarray, quaternion: np.ndarray, values: dict[str, float], pivot: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Box poses (K, 3) m and (K, 4) under the corrections ``values`` (:data:`PARAMETERS`, ``dz_m``)."""
    turn = from_axis_angle(np.array([0.0, 0.0, 1.0]), values.get("dyaw_rad", 0.0))
    offset = np.array([values.get("ox_m", 0.0), values.get("oy_m", 0.0), 0.0])
    centre = position + rotate(quaternion, np.broadcast_to(offset, position.shape))
    moved = pivot + rotate(turn, centre - pivot) + np.array(
        [values.get("dx_m", 0.0), values.get("dy_m", 0.0), values.get("dz_m", 0.0)])
    return moved, multiply(np.broadcast_to(turn, quaternion.shape), quaternion)


def horizontal_velocity(t: np.ndarray, position: np.ndarray) -> np.ndarray:
    """Horizontal velocity (m/s, (N, 3), z = 0) per sample: the displacement between the samples
    :data:`SPEED_SPAN_S` before and after it (clamped at the ends), so that tracking noise (0.3 mm at
    100 Hz is 0.02 m/s in a central difference of neighbours) does not read as motion."""
    if t.size < 3:
        return np.zeros((t.size, 3))
    before = np.clip(np.searchsorted(t, t - SPEED_SPAN_S), 0, t.size - 1)
    after = np.clip(np.searchsorted(t, t + SPEED_SPAN_S), 0, t.size - 1)
    span = np.maximum(t[after] - t[before], 1e-9)
    velocity = (position[after] - position[before]) / span[:, None]
    velocity[:, 2] = 0.0
    return velocity


def horizontal_speed(t: np.ndarray, position: np.ndarray) -> np.ndarray:
    """Horizontal speed (m/s, (N,)) per sample (:func:`horizontal_velocity`)."""
    return np.linalg.norm(horizontal_velocity(t, position), axis=1)


@dataclass(frozen=True)
class Contact:
    """One trial's contact samples: indices (K,) into its box stream, and the pushed face of each (K,): 0-3 for
    the box's -x, +x, -y, +y side (:data:`FACES`)."""

    trial: CalibrationTrial
    index: np.ndarray
    face: np.ndarray

    def subset(self, keep: np.ndarray) -> Contact:
        return Contact(self.trial, self.index[keep], self.face[keep])


#: Per face index: the body axis of its outward normal and the normal's sign.
FACES = ((0, -1.0), (0, 1.0), (1, -1.0), (1, 1.0))


def box_at(contact: Contact, values: dict[str, float], pivot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The corrected box pose (K, 3) m, (K, 4) at each contact sample: the recorded samples themselves (an
    interpolation between noisy samples would average their noise by an amount that depends on the
    delay, and the fit would choose the delay that averages most: 2-4 ms off at 0.3 mm of noise)."""
    box = contact.trial.box
    return corrected_box(box.position[contact.index], box.quaternion[contact.index], values, pivot)


def pusher_at(contact: Contact, values: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """The pusher point (K, 3) m and velocity (K, 3) m/s when each contact sample's box pose was true (its
    stamp less the box stream's delay), moved by the tool offset's correction (in the pusher pose's axes):
    the arm's record is smooth, so interpolating it adds no noise."""
    trial = contact.trial
    when = trial.box.t[contact.index] - values.get("delay_s", 0.0)
    point = interpolate(when, trial.pusher_t, trial.pusher_position)
    tool = np.array([values.get(name, 0.0) for name in TOOL_PARAMETERS])
    if np.any(tool):
        moved = rotate(trial.pusher_quaternion, np.broadcast_to(tool, trial.pusher_position.shape))
        point = point + interpolate(when, trial.pusher_t, moved)
    return point, interpolate(when, trial.pusher_t, trial.pusher_velocity)


def distances(contact: Contact, values: dict[str, float], pivot: np.ndarray) -> np.ndarray:
    """Signed distance between the pusher's surface and the box, m (negative: penetration)."""
    position, quaternion = box_at(contact, values, pivot)
    point, _ = pusher_at(contact, values)
    return pusher_box_distance(point, position, quaternion, contact.trial.params, contact.trial.shape)


def face_distances(contact: Contact, values: dict[str, float], pivot: np.ndarray) -> np.ndarray:
    """Distance of the pusher's surface from the plane of the face it pushes, m (negative: beyond it).

    Smooth in every correction however far off the frames are (the full signed distance switches to
    another face when the pusher appears deep inside the box); the box stands on its bottom face, so
    the pushed sides are vertical and the rod's tip or the sphere's centre measures the distance.
    """
    position, quaternion = box_at(contact, values, pivot)
    point, _ = pusher_at(contact, values)
    local = rotate(conjugate(quaternion), point - position)
    half = 0.5 * np.asarray(contact.trial.size, dtype=float)
    axis = np.array([FACES[f][0] for f in contact.face], dtype=int)
    sign = np.array([FACES[f][1] for f in contact.face], dtype=float)
    along = local[np.arange(axis.size), axis]
    return sign * along - half[axis] - contact.trial.params["pusher.radius"] - values.get("gap_m", 0.0)


def pushed_faces(contact: Contact, values: dict[str, float], pivot: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """Each sample's pushed face (K,): per run of consecutive pushing samples (``runs`` (K,), a run label per
    sample), the side whose outward normal meets the pusher's velocity (in the box's axes) most head-on
    over the run's first :data:`FACE_SAMPLES` samples (the majority). By velocity, since that is right
    however far off the frames are; per run, since a box that turns under the pusher lets the pusher
    slide along the face at a growing angle, and near a corner the nearest face is the wrong one whenever
    the frames are off."""
    _, quaternion = box_at(contact, values, pivot)
    _, velocity = pusher_at(contact, values)
    heading = rotate(conjugate(quaternion), velocity)
    scores = np.stack([-sign * heading[:, axis] for axis, sign in FACES], axis=1)
    each = np.argmax(scores, axis=1)
    face = np.empty_like(each)
    for run in np.unique(runs):
        members = np.flatnonzero(runs == run)
        face[members] = np.bincount(each[members[:FACE_SAMPLES]], minlength=len(FACES)).argmax()
    return face


def eroded(mask: np.ndarray, samples: int) -> np.ndarray:
    """``mask`` without the first and last ``samples`` of each run of True (and nothing beyond its ends)."""
    return np.asarray(ndimage.binary_erosion(mask, iterations=samples, border_value=0), dtype=bool)


def contact_samples(trial: CalibrationTrial, pivot: np.ndarray, values: dict[str, float] | None = None,
                     window: float = CONTACT_WINDOW_M) -> Contact:
    """Box samples where the pusher pushes: box and pusher both move, the box no faster than the pusher (a box
    that runs ahead has left it), the first and last :data:`EDGE_SAMPLES` of each such run left out (at a start
    or stop the speeds mix moving and resting samples), and the pusher within ``window`` of the pushed face's
    plane (all at the corrections ``values``)."""
    values = values or {}
    box_speed = trial.box_speed
    when = trial.box.t - values.get("delay_s", 0.0)
    pusher_speed = np.linalg.norm(interpolate(when, trial.pusher_t, trial.pusher_velocity), axis=1)
    moving = (box_speed > MOVING_M_S) & (pusher_speed > MOVING_M_S)
    moving &= box_speed <= RUNNING_AHEAD * pusher_speed + MOVING_M_S
    moving &= (when >= trial.pusher_t[0]) & (when <= trial.pusher_t[-1])
    moving = eroded(moving, EDGE_SAMPLES)
    runs = np.cumsum(np.diff(moving.astype(int), prepend=0) == 1)[moving]
    candidate = Contact(trial, np.flatnonzero(moving), np.zeros(int(moving.sum()), dtype=int))
    candidate = Contact(trial, candidate.index, pushed_faces(candidate, values, pivot, runs))
    return candidate.subset(np.abs(face_distances(candidate, values, pivot)) <= window)

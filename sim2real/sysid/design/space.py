"""The pushes an experiment design chooses from: the push space, its candidates and which of them the arm can do.

A candidate is one trial of the box-push experiment: the box placed upright with its centre ``distance`` m along
the arm base's x axis, turned ``box_yaw_deg`` about base z, pushed along +x by the pusher sphere on the path of a
:class:`~sim2real.control.PushConfig` (height above the table, the pusher's y, speed, the stroke's end). The pusher
always moves along base x; the box's yaw is the push's direction relative to the box (0: square to its near face;
otherwise that far from the face's normal, so the pusher can slide along the face). The space's ``lateral`` is
where the pusher meets the near face, its offset from the face's centre: the pusher's y follows from it and the
yaw (:func:`pusher_y`; they are the same at yaw 0).

:class:`PushSpace` holds the range of each of these; :meth:`PushSpace.candidates` spreads candidates over it
(a Latin hypercube, seeded); :func:`plan_candidate` plans one on the arm model and says why it is not
feasible: a path point out of reach (pusher IK), a joint outside its limits less a margin, a joint rate above
its limit times a margin, the pusher centre outside the PD law's workspace box, the pusher starting inside or
too near the box, a contact off the near face or too near its edges. Lengths m, speeds m/s, angles deg, base
frame, table top at ``contact.table_height``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import qmc

from sim2real.control import JointTrajectory, PushConfig, Workspace, plan_push
from sim2real.control.reference import MAX_BOX_YAW_DEG
from sim2real.errors import InputError, Sim2RealError
from sim2real.model import ArmModel
from sim2real.params import ParameterSet

#: Dimensions of the push space, in the order of :attr:`PushSpace.ranges` (units: m, m, m, m/s, m, deg).
DIMENSIONS = ("distance", "lateral", "height", "speed", "end_x", "box_yaw_deg")
UNITS = {"distance": "m", "lateral": "m", "height": "m", "speed": "m/s", "end_x": "m", "box_yaw_deg": "deg"}
#: Decimals each dimension is rounded to (mm, mm/s for the speed, a tenth of a degree for the yaw): what a lab places
#: and commands.
ROUNDING = {"distance": 3, "lateral": 3, "height": 3, "speed": 3, "end_x": 3, "box_yaw_deg": 1}
#: The default range of the box's yaw at the start (deg, either way): the push up to this far from the near face's
#: normal, beyond the friction cone of a pusher friction up to tan(30 deg) = 0.58, so that the pusher slides along
#: the face.
DEFAULT_YAW_DEG = 30.0
#: Joint angles must stay this far inside their limits (rad); the reference's joint rates within this share of
#: theirs (the published push at 0.55 m/s already runs joint 2 at 91 % of the URDF's limit).
JOINT_MARGIN_RAD, RATE_SHARE = 0.05, 1.0
#: Why a candidate is left out: the ``<kind>`` before the colon of its reason.
LEFT_OUT_KINDS = ("off the face", "starts at the box", "out of reach", "joint limit", "joint rate", "workspace",
                  "misses the box", "tips the box", "simulation failed", "no residuals")
#: Clearance between the pusher sphere and the box's near face at the start of a push (m).
START_CLEARANCE = 0.01
#: Contact-point margin from the box's side faces and top (m), and above the table for the sphere.
EDGE_MARGIN = 0.01


@dataclass(frozen=True)
class Candidate:
    """One push an experiment can make: the box's start distance and the push.

    Attributes
    ----------
    distance : float
        Box centre start distance along base x (m).
    push : PushConfig
        The pusher path (``lateral``: the pusher's y, m) and the box's yaw at the start (``box_yaw_deg``).
    """

    distance: float
    push: PushConfig

    def label(self) -> str:
        """One line, e.g. ``d 0.350 m, y +0.030 m, h 0.150 m, 0.55 m/s to x 0.400 m, yaw +12.5 deg``."""
        p = self.push
        return (f"d {self.distance:.3f} m, y {p.lateral:+.3f} m, h {p.height:.3f} m, {p.speed:.2f} m/s "
                f"to x {p.end_x:.3f} m" + (f", yaw {p.box_yaw_deg:+.1f} deg" if p.box_yaw_deg else ""))

    def as_dict(self) -> dict[str, float]:
        """The candidate as a trial records it: the start distance and the push's fields that the design sets
        (``lateral``: the pusher's y, m; its start x)."""
        return {"distance": self.distance, "lateral": self.push.lateral, "height": self.push.height,
                "speed": self.push.speed, "end_x": self.push.end_x, "box_yaw_deg": self.push.box_yaw_deg,
                "start_x": self.push.start_x}


@dataclass(frozen=True)
class PushSpace:
    """Ranges of the pushes a design may choose, around a base push (its timing and rate).

    Attributes
    ----------
    base : PushConfig
        Timing (ramp, pre and settle times), rate and default start x of every push.
    ranges : dict of str to (float, float)
        ``(low, high)`` of each of :data:`DIMENSIONS`; ``low == high`` fixes a dimension.
    """

    base: PushConfig
    ranges: dict[str, tuple[float, float]]

    def __post_init__(self) -> None:
        missing = [d for d in DIMENSIONS if d not in self.ranges]
        if missing or set(self.ranges) - set(DIMENSIONS):
            raise InputError(f"a push space has exactly the dimensions {', '.join(DIMENSIONS)}")
        for name, (low, high) in self.ranges.items():
            if not (np.isfinite(low) and np.isfinite(high) and low <= high):
                raise InputError(f"push space {name}: [{low:g}, {high:g}] {UNITS[name]} is not a range")
        low, high = self.ranges["box_yaw_deg"]
        if max(abs(low), abs(high)) > MAX_BOX_YAW_DEG:
            raise InputError(f"push space box_yaw_deg: [{low:g}, {high:g}] deg goes beyond ±{MAX_BOX_YAW_DEG:g} deg "
                             f"(further turned, the pusher meets a side face first)", option="box-yaw")

    @classmethod
    def default(cls, base: PushConfig, params: ParameterSet) -> PushSpace:
        """The space around ``base`` for the box of ``params``: distances 0.30-0.50 m (the published ones),
        contacts across the face up to :data:`EDGE_MARGIN` from its sides, heights from just above the table to
        the push's own, speeds from 40 % of the push's to it, strokes ending at its end to 0.10 m further, the box
        turned up to :data:`DEFAULT_YAW_DEG` either way."""
        radius = float(params["pusher.radius"])
        half_y = 0.5 * float(params["box.size_y"])
        lateral = max(0.0, half_y - EDGE_MARGIN)
        low_height = min(radius + EDGE_MARGIN, base.height)
        return cls(base, {"distance": (0.30, 0.50), "lateral": (-lateral, lateral),
                          "height": (low_height, base.height), "speed": (0.4 * base.speed, base.speed),
                          "end_x": (base.end_x, base.end_x + 0.10),
                          "box_yaw_deg": (-DEFAULT_YAW_DEG, DEFAULT_YAW_DEG)})

    def with_ranges(self, **ranges: tuple[float, float]) -> PushSpace:
        """The same space with some dimensions' ranges replaced."""
        unknown = sorted(set(ranges) - set(DIMENSIONS))
        if unknown:
            raise InputError(f"unknown push-space dimension {unknown[0]} (known: {', '.join(DIMENSIONS)})")
        return dataclasses.replace(self, ranges={**self.ranges, **ranges})

    def candidate(self, point: dict[str, float], params: ParameterSet) -> Candidate:
        """The candidate at ``point`` (a value per dimension; ``lateral``: the contact's offset on the near face):
        the pusher's y meets the face there (:func:`pusher_y`), and the push starts at the base's start x, or
        :data:`START_CLEARANCE` behind the box's nearest point when the box stands nearer.

        Raises
        ------
        InputError
            The push is not a valid :class:`PushConfig` (e.g. its stroke ends before it starts).
        """
        point = {d: round(float(v), ROUNDING[d]) for d, v in point.items()}
        distance = point["distance"]
        start_x = min(self.base.start_x, nearest_x(distance, point["box_yaw_deg"], params)
                      - float(params["pusher.radius"]) - START_CLEARANCE)
        try:
            lateral = pusher_y(point["lateral"], point["box_yaw_deg"], params)
            push = dataclasses.replace(self.base, lateral=round(lateral, ROUNDING["lateral"]),
                                       height=float(point["height"]),
                                       speed=float(point["speed"]), end_x=float(point["end_x"]), start_x=start_x,
                                       box_yaw_deg=float(point["box_yaw_deg"]))
        except Sim2RealError as err:
            raise InputError(f"push at {point}: {err}") from None
        return Candidate(distance, push)

    def candidates(self, count: int, params: ParameterSet, seed: int = 0) -> list[Candidate]:
        """``count`` candidates spread over the space (a scrambled Latin hypercube in the free dimensions,
        seeded), those that are not valid pushes left out.

        Returns
        -------
        list of Candidate
            At most ``count``; in the order drawn.
        """
        if count < 1:
            raise InputError(f"the number of candidates must be at least 1, got {count}")
        free = [d for d in DIMENSIONS if self.ranges[d][0] < self.ranges[d][1]]
        unit = (qmc.LatinHypercube(d=len(free), seed=seed).random(count) if free
                else np.zeros((1, 0)))
        out = []
        for row in unit:
            point = {d: self.ranges[d][0] for d in DIMENSIONS}
            for d, u in zip(free, row, strict=True):
                low, high = self.ranges[d]
                point[d] = low + float(u) * (high - low)
            try:
                out.append(self.candidate(point, params))
            except InputError:
                continue
        return out

    def as_dict(self) -> dict[str, object]:
        """JSON-ready: each dimension's range with its unit."""
        return {d: {"range": list(self.ranges[d]), "unit": UNITS[d]} for d in DIMENSIONS}


def nearest_x(distance: float, box_yaw_deg: float, params: ParameterSet) -> float:
    """The smallest base x of the box's footprint (m): its centre at ``distance`` m on base x, turned
    ``box_yaw_deg`` deg."""
    turn = math.radians(abs(box_yaw_deg))
    half_x, half_y = 0.5 * float(params["box.size_x"]), 0.5 * float(params["box.size_y"])
    return distance - (half_x * math.cos(turn) + half_y * math.sin(turn))


def face_offset(candidate: Candidate, params: ParameterSet) -> float | None:
    """Where the pusher sphere first touches the box's near face (the body's -x face): the contact's offset from the
    face's centre along the body's y axis (m), or None when the box is turned so far that its path runs along the
    face.

    The sphere (radius ``r = pusher.radius``) moves along base +x at ``y0 = push.lateral``; the box stands at
    ``(distance, 0)`` turned ``ψ = box_yaw_deg``, its near face ``a = size_x / 2`` behind its centre. The sphere
    touches the face's plane when its centre is ``r`` in front of it; the contact is the foot of the perpendicular,
    at ``tan ψ (a + r) + y0 / cos ψ``. When that is within the face, the face is what the sphere meets first (the
    box is convex and lies behind the face's plane).
    """
    turn = math.radians(candidate.push.box_yaw_deg)
    if math.cos(turn) <= 1e-9:
        return None
    reach = 0.5 * float(params["box.size_x"]) + float(params["pusher.radius"])
    return math.tan(turn) * reach + candidate.push.lateral / math.cos(turn)


def pusher_y(contact: float, box_yaw_deg: float, params: ParameterSet) -> float:
    """The pusher's y (m) whose path meets the near face of the box turned ``box_yaw_deg`` at ``contact`` m from the
    face's centre: :func:`face_offset` solved for ``y0``, ``cos ψ · contact − sin ψ (a + r)``."""
    turn = math.radians(box_yaw_deg)
    reach = 0.5 * float(params["box.size_x"]) + float(params["pusher.radius"])
    return math.cos(turn) * contact - math.sin(turn) * reach


def plan_candidate(candidate: Candidate, arm: ArmModel, params: ParameterSet,
                   workspace: Workspace | None = None) -> tuple[JointTrajectory | None, str | None]:
    """Plan ``candidate`` on the arm model and check what the arm can do.

    Parameters
    ----------
    candidate : Candidate
    arm : ArmModel
        The xArm 6 chain with the pusher of ``params``.
    params : ParameterSet
        Box size, pusher radius, table height.
    workspace : Workspace, optional
        The pusher centre's box (default: the PD law's :class:`~sim2real.control.Workspace`).

    Returns
    -------
    reference : JointTrajectory or None
        The planned push (None when it cannot be planned).
    reason : str or None
        Why the candidate is not feasible, ``"<kind>: <detail>"`` with a kind of :data:`LEFT_OUT_KINDS`
        (None: feasible).
    """
    push = candidate.push
    size_y, size_z = float(params["box.size_y"]), float(params["box.size_z"])
    radius = float(params["pusher.radius"])
    offset = face_offset(candidate, params)
    if offset is None or abs(offset) > 0.5 * size_y - EDGE_MARGIN + 1e-12:
        where = "misses the near face" if offset is None else f"meets it {offset:+.3f} m off the centre"
        return None, (f"off the face: the pusher at y {push.lateral:+.3f} m {where} of the {size_y:.3f} m face "
                      f"(box turned {push.box_yaw_deg:+.1f} deg)")
    if not radius + EDGE_MARGIN - 1e-12 <= push.height <= size_z - EDGE_MARGIN + 1e-12:
        return None, f"off the face: pusher height {push.height:.3f} m on the box's {size_z:.3f} m face"
    if push.start_x + radius > nearest_x(candidate.distance, push.box_yaw_deg, params) - START_CLEARANCE + 1e-12:
        return None, f"starts at the box: the pusher would start within {START_CLEARANCE * 1e3:.0f} mm of it"
    try:
        reference = plan_push(arm, push, float(params["contact.table_height"]))
    except InputError as err:
        return None, f"out of reach: {err}"
    if not all(arm.within_limits(q, JOINT_MARGIN_RAD) for q in reference.position):
        return None, f"joint limit: a joint comes within {JOINT_MARGIN_RAD:g} rad of its limit"
    rate = np.max(np.abs(reference.velocity) / arm.max_velocity, axis=0)
    if np.any(rate > RATE_SHARE):
        joint = int(np.argmax(rate)) + 1
        return None, f"joint rate: joint {joint} would move at {rate.max():.0%} of its rate limit"
    box = workspace or Workspace()
    if not all(box.contains(point) for point in reference.pusher):
        return None, "workspace: the pusher leaves the PD law's workspace box"
    return reference, None

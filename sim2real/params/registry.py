"""The registry of simulator parameters: name, unit, nominal value, bounds, meaning.

Names are dotted (``box.mass``); they are the ROS 2 parameter names of the sim node
and the ``--free`` names of ``sim2real fit``. All values are SI.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from sim2real.errors import InputError


@dataclass(frozen=True)
class Parameter:
    """One named simulator parameter.

    Attributes
    ----------
    name : str
        Dotted name, e.g. ``"contact.mu_table"``.
    unit : str
        SI unit (``"-"`` for dimensionless).
    nominal : float or int
        Default value.
    lower, upper : float
        Inclusive bounds of admissible values.
    description : str
        One-line meaning, including the frame where relevant.
    kind : type
        ``float`` or ``int``.
    frozen : bool
        True for numerical settings that ``sim2real fit`` refuses to free.
    """

    name: str
    unit: str
    nominal: float
    lower: float
    upper: float
    description: str
    kind: type = float
    frozen: bool = False


_P = Parameter
PARAMETERS: tuple[Parameter, ...] = (
    _P("box.mass", "kg", 0.5, 0.01, 20.0, "mass of the pushed box"),
    _P("box.size_x", "m", 0.11, 0.001, 1.0, "box edge length along its body x axis"),
    _P("box.size_y", "m", 0.13, 0.001, 1.0, "box edge length along its body y axis"),
    _P("box.size_z", "m", 0.21, 0.001, 1.0, "box edge length along its body z axis (height when upright)"),
    _P("box.com_x", "m", 0.0, -0.5, 0.5, "centre-of-mass offset from the geometric centre, box body x"),
    _P("box.com_y", "m", 0.0, -0.5, 0.5, "centre-of-mass offset from the geometric centre, box body y"),
    _P("box.com_z", "m", 0.0, -0.5, 0.5, "centre-of-mass offset from the geometric centre, box body z"),
    _P("box.edge_radius", "m", 0.0, 0.0, 0.05,
       "radius of the box's rounded edges and corners (0: sharp): the box is its inner box, each half size "
       "less this, swept by a sphere of this radius; below every half size. Mass and inertia are the box's"),
    _P("box.inertia_scale", "-", 1.0, 0.2, 5.0,
       "principal moments of inertia as a multiple of a uniform solid box's of this mass and size "
       "(1: uniform; a hollow or loosely built box is above 1)"),
    _P("contact.mu_table", "-", 0.5, 0.0, 2.0, "Coulomb friction coefficient box-table"),
    _P("contact.mu_pusher", "-", 0.3, 0.0, 2.0, "Coulomb friction coefficient pusher-box"),
    _P("contact.support_ratio", "-", 1.0, 0.05, 1.0,
       "friction moment arm of the box-table support: table friction acts at the bottom corners moved towards "
       "the vertical through the centre of mass, in the table plane, to this fraction of their distance (1: all "
       "support at the corners, the largest friction torque; 0.54: a square face under uniform pressure); turning "
       "only, not sliding"),
    _P("contact.kappa_grad", "-", 1e-4, 1e-9, 1e-1,
       "interior-point central-path value at which gradients are taken (smoothing)", frozen=True),
    _P("contact.kappa_sim", "-", 1e-8, 1e-12, 1e-3,
       "central-path value the forward simulation converges to (hard contact)", frozen=True),
    _P("contact.table_height", "m", 0.0, -0.1, 0.1, "height of the table surface above the world z = 0 plane"),
    _P("pusher.radius", "m", 0.02, 0.002, 0.1,
       "radius of the pusher: the sphere on the flange, or the rod of a recorded pusher (the rod pusher shape)"),
    _P("pusher.offset", "m", 0.06, 0.0, 0.3, "distance of the pusher centre from the flange along flange z"),
    _P("pusher.length", "m", 0.05, 0.0, 0.5,
       "straight length of a vertical-rod pusher (the rod pusher shape; the recorded pusher position is its lower "
       "end-point centre, the tip); places the rod, so it cannot be fitted (no simulator gradient)"),
    _P("arm.servo_tau", "s", 0.05, 0.001, 1.0, "time constant of the xArm joint-velocity servo (first-order lag)"),
    _P("arm.command_delay", "s", 0.015, 0.0, 0.2,
       "delay between a velocity command and the servo acting on it (derivatives kink at multiples of sim.dt)"),
    _P("arm.max_joint_acc", "rad/s^2", 20.0, 0.1, 50.0, "joint acceleration limit of the servo"),
    _P("pd.kp", "1/s", 10.0, 0.0, 100.0, "PD position gain: joint velocity command per rad of position error"),
    _P("pd.kd", "-", 0.2, 0.0, 10.0, "PD derivative gain: velocity command per rad/s of velocity error"),
    _P("mujoco.substeps", "-", 5, 1, 100,
       "MuJoCo engine: MuJoCo steps per engine sub-step (sim.dt / sim.substeps); 5 gives MuJoCo's usual 2 ms",
       kind=int, frozen=True),
    _P("mujoco.timeconst", "s", 0.02, 0.002, 0.5,
       "MuJoCo engine: contact time constant (solref[0]; the soft contact's stiffness; at least 2 MuJoCo steps)"),
    _P("mujoco.dampratio", "-", 1.0, 0.1, 10.0, "MuJoCo engine: contact damping ratio (solref[1]; 1 = critical)"),
    _P("mujoco.impedance_min", "-", 0.9, 0.0, 0.9999,
       "MuJoCo engine: constraint impedance at zero penetration (solimp[0])"),
    _P("mujoco.impedance_max", "-", 0.95, 0.0, 0.9999,
       "MuJoCo engine: constraint impedance at impedance_width penetration and beyond (solimp[1])"),
    _P("mujoco.impedance_width", "m", 0.001, 0.0, 0.1,
       "MuJoCo engine: penetration over which the impedance goes from min to max (solimp[2])"),
    _P("mujoco.condim", "-", 3, 1, 6,
       "MuJoCo engine: contact dimensionality (1 frictionless, 3 sliding friction, 4 + torsional, 6 + rolling)",
       kind=int, frozen=True),
    _P("mujoco.torsional_friction", "m", 0.005, 0.0, 0.1,
       "MuJoCo engine: torsional friction of the table contact (condim 4 and 6): resisting torque per newton "
       "of normal force"),
    _P("mujoco.rolling_friction", "m", 0.0001, 0.0, 0.1,
       "MuJoCo engine: rolling friction of the table contact (condim 6): resisting torque per newton"),
    _P("mujoco.elliptic_cone", "-", 0, 0, 1,
       "MuJoCo engine: friction cone, 0 pyramidal (MuJoCo's default) or 1 elliptic", kind=int, frozen=True),
    _P("sim.dt", "s", 0.01, 1e-4, 0.05, "simulation time step (matches the 100 Hz command loop)", frozen=True),
    _P("sim.substeps", "-", 1, 1, 50, "engine sub-steps per time step", kind=int, frozen=True),
)

_BY_NAME: dict[str, Parameter] = {p.name: p for p in PARAMETERS}


def names() -> tuple[str, ...]:
    """All registered parameter names, in registry order."""
    return tuple(_BY_NAME)


def closest_name(name: str) -> str | None:
    """The registered name closest to ``name``, or None if nothing is close."""
    matches = difflib.get_close_matches(name, list(_BY_NAME), n=1, cutoff=0.5)
    return matches[0] if matches else None


def spec(name: str) -> Parameter:
    """The registry entry of ``name``.

    Raises
    ------
    Sim2RealError
        If the name is unknown; the message suggests the closest valid name.
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        hint = closest_name(name)
        suffix = f" (did you mean '{hint}'?)" if hint else ""
        raise InputError(f"unknown parameter '{name}'{suffix}") from None


def coerce(name: str, value: object) -> float | int:
    """Check ``value`` against the registry entry of ``name`` and return it typed.

    Integers are accepted for float parameters; floats with a fractional part are not
    accepted for int parameters; booleans and strings are rejected.

    Raises
    ------
    Sim2RealError
        Unknown name, wrong type, non-finite value or out of bounds.
    """
    p = spec(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(
            f"parameter '{name}' must be a number ({p.kind.__name__}), got {type(value).__name__} {value!r}"
        )
    if not math.isfinite(value):
        raise InputError(f"parameter '{name}' must be finite, got {value!r}")
    if p.kind is int:
        if float(value) != int(value):
            raise InputError(f"parameter '{name}' must be an integer, got {value!r}")
        typed: float | int = int(value)
    else:
        typed = float(value)
    if not p.lower <= typed <= p.upper:
        raise InputError(
            f"parameter '{name}' = {typed!r} {p.unit} is out of bounds [{p.lower!r}, {p.upper!r}]"
        )
    return typed


class ParameterSet(Mapping[str, float]):
    """An immutable, complete, validated assignment of values to every registered name.

    Behaves as a read-only mapping ``name -> value``. Build variants with
    :meth:`replace`.

    Examples
    --------
    >>> p = ParameterSet.nominal().replace({"box.mass": 0.7})
    >>> p["box.mass"]
    0.7
    """

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, object] | None = None) -> None:
        merged: dict[str, float | int] = {p.name: p.nominal for p in PARAMETERS}
        for name, value in (values or {}).items():
            merged[name] = coerce(name, value)
        self._values = merged

    @classmethod
    def nominal(cls) -> ParameterSet:
        """All parameters at their nominal values."""
        return cls()

    def replace(self, values: Mapping[str, object]) -> ParameterSet:
        """A copy with ``values`` overriding the current ones (``values`` validated; the others already are)."""
        out = ParameterSet.__new__(ParameterSet)
        merged = dict(self._values)
        for name, value in values.items():
            merged[name] = coerce(name, value)
        out._values = merged
        return out

    def __getitem__(self, name: str) -> float:
        if name not in self._values:
            spec(name)  # raises with a suggestion
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ParameterSet):
            return self._values == other._values
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._values.items())))

    def __repr__(self) -> str:
        changed = {k: v for k, v in self._values.items() if v != _BY_NAME[k].nominal}
        return f"ParameterSet(changed from nominal: {changed})"

    def vector(self, selected: Iterable[str]) -> list[float]:
        """Values of ``selected`` names, in the given order."""
        return [float(self[n]) for n in selected]

    def as_dict(self) -> dict[str, float | int]:
        """A plain ``{name: value}`` copy."""
        return dict(self._values)

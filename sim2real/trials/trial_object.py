"""What a trial needs to be replayed: the pushed object and the pusher, stored in the trial.

A trial imported from another lab's recordings carries its object (box size and mass, an object
label) and its pusher (shape, radius, rod length) in ``trial.json`` under ``"object"``, so that
``replay`` and ``fit`` simulate *that* block with *that* probe, and a fit may span several objects.
The values are simulator parameters by their registry names, so any parameter the lab measured
(``box.com_x``, ``box.edge_radius``, ...) can be added to the file by hand later::

    "object": {"name": "steel", "pusher_shape": "rod",
               "parameters": {"box.size_x": 0.099, "box.size_y": 0.099, "box.size_z": 0.0095,
                              "box.mass": 0.731, "pusher.radius": 0.0031}}

A trial without a pusher (a cube toss) has ``"pusher_shape": null`` and no pusher parameters. Other
keys in the section are kept as information (the cube tosses' inertia and nominal friction).

These are the trial's measured facts; a simulation of the trial takes them in place of the
parameters' *nominal* values, while a value someone set (a parameter file, ``--set``, a fit's
free parameter) is kept (:func:`sim2real.sysid.residuals.trial.step_params`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sim2real.errors import DataError, InputError, Sim2RealError
from sim2real.params import coerce, spec
from sim2real.trials.meta import TrialMeta

PUSHER_SHAPES: tuple[str, ...] = ("sphere", "rod")
"""Pusher shapes a trial may declare: a sphere, or a vertical rod (a point probe)."""

#: Parameters a trial must carry to be replayed (and ``pusher.radius`` when it has a pusher).
REQUIRED: tuple[str, ...] = ("box.size_x", "box.size_y", "box.size_z", "box.mass")


@dataclass(frozen=True)
class TrialObject:
    """The object and pusher of one trial.

    Attributes
    ----------
    parameters : dict of str to float
        Simulator parameters measured for this trial, by registry name, SI units (at least
        :data:`REQUIRED`).
    pusher_shape : str or None
        ``"sphere"`` or ``"rod"`` (a vertical rod; the recorded pusher point is its tip); None for a
        trial without a pusher.
    name : str or None
        Object label shared by the trials of one object (e.g. ``"steel"``), for per-object
        parameters and the report's grouping.
    """

    parameters: dict[str, float] = field(default_factory=dict)
    pusher_shape: str | None = "sphere"
    name: str | None = None

    def __post_init__(self) -> None:
        if self.pusher_shape is not None and self.pusher_shape not in PUSHER_SHAPES:
            raise InputError(f"pusher shape '{self.pusher_shape}': choose from {', '.join(PUSHER_SHAPES)}")
        object.__setattr__(self, "parameters", {key: coerce(key, value) for key, value in self.parameters.items()})
        required = REQUIRED + (("pusher.radius",) if self.pusher_shape is not None else ())
        missing = [key for key in required if key not in self.parameters]
        if missing:
            raise InputError(f"the object lacks {', '.join(missing)} (a trial must carry what replays it)")

    def as_dict(self) -> dict[str, Any]:
        """The trial.json ``"object"`` section."""
        return {"name": self.name, "pusher_shape": self.pusher_shape,
                "parameters": {k: float(v) for k, v in sorted(self.parameters.items())}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], trial: str) -> TrialObject:
        """Read a trial.json ``"object"`` section; errors name the trial."""
        try:
            params = data.get("parameters") or {}
            if not isinstance(params, Mapping):
                raise DataError("'parameters' must be a mapping of parameter names to numbers")
            shape = data.get("pusher_shape")
            return cls({str(k): v for k, v in params.items()}, None if shape is None else str(shape),
                       None if data.get("name") is None else str(data["name"]))
        except Sim2RealError as err:
            raise DataError(f"trial '{trial}': trial.json \"object\": {err}") from None


def object_from_options(box_size: Sequence[float], pusher_shape: str, pusher_radius: float,
                        box_mass: float | None = None, box_density: float | None = None,
                        pusher_length: float | None = None, name: str | None = None) -> TrialObject:
    """The :class:`TrialObject` of import options.

    Parameters
    ----------
    box_size : sequence of 3 float
        Box edges along its body x, y, z, m.
    pusher_shape : str
        ``"sphere"`` or ``"rod"``.
    pusher_radius : float
        Pusher sphere or rod radius, m.
    box_mass, box_density : float, optional
        Mass (kg) or density (kg/m³, mass = density × volume); exactly one.
    pusher_length : float, optional
        Rod length above its tip, m (``rod`` only).
    name : str, optional
        Object label.

    Raises
    ------
    Sim2RealError
        Neither or both of mass and density, a length for a sphere, values out of range, an empty label.
    """
    if (box_mass is None) == (box_density is None):
        raise InputError("give the box's mass (kg) or its density (kg/m³), one of them", option="box_mass")
    if name is not None and not name.strip():
        raise InputError(f"the object label {name!r} is empty: give a name such as steel, or leave the label out",
                         option="object")
    sx, sy, sz = (float(v) for v in box_size)
    mass = float(box_mass) if box_mass is not None else float(box_density) * sx * sy * sz  # type: ignore[arg-type]
    parameters = {"box.size_x": sx, "box.size_y": sy, "box.size_z": sz, "box.mass": mass,
                  "pusher.radius": float(pusher_radius)}
    if pusher_length is not None:
        if pusher_shape != "rod":
            raise InputError("the pusher length is the length of a rod pusher (pusher shape rod)",
                             option="pusher_length")
        parameters["pusher.length"] = float(pusher_length)
    return TrialObject(parameters, pusher_shape, name)


def object_values(object_params: Mapping[str, float], params: Mapping[str, float],
                  fitted: Collection[str] = ()) -> dict[str, float]:
    """The values of a trial's object that a simulation of it takes in place of ``params``'s.

    An object value replaces the parameter's value when that is still the registry's nominal one and
    the parameter is not in ``fitted``: a value someone set (a parameter file, ``--set``, a fit's free
    parameter) is kept (:func:`sim2real.sysid.residuals.trial.step_params`, the params file a fit writes).

    Parameters
    ----------
    object_params : mapping of str to float
        The object's parameters by registry name, SI units (:attr:`TrialObject.parameters`).
    params : mapping of str to float
        The parameter values otherwise simulated (a complete set), SI units.
    fitted : collection of str
        Names whose value in ``params`` is a fit's, kept whatever it is.

    Returns
    -------
    dict of str to float
        The object values taken, by name.
    """
    return {k: float(v) for k, v in object_params.items() if k not in fitted and params[k] == spec(k).nominal}


def trial_object(meta: Mapping[str, Any], trial: str) -> TrialObject | None:
    """The object a trial's metadata carries, or None when it carries none."""
    section = TrialMeta(meta, trial).object  # a section that is not a mapping: one-line error
    if section is None:
        return None
    return TrialObject.from_dict(section, trial)

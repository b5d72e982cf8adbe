"""The unknowns of a fit: free names, tied groups, per-object values, bounds and the start.

Free parameters are registry names; names joined by ``=`` (``box.size_x=box.size_y=box.size_z``)
form one tied unknown that sets all of them (its Jacobian column is the sum of theirs); names given
with ``--per-object`` get one unknown per object label (:mod:`sim2real.sysid.problem.objects`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from sim2real.errors import InputError
from sim2real.params import ParameterSet, spec
from sim2real.sysid.problem.objects import ColumnMap, ObjectLayout, Unknown, parse_per_object, registry_names_of


@dataclass(frozen=True)
class FreeParameters:
    """The unknowns of a fit: free registry names, tied groups, and the ones fitted per object.

    Without per-object names there is one unknown per group. With them (and the fitted trials'
    object labels, :meth:`with_objects`) a per-object group has one unknown per object, labelled
    ``NAME[OBJECT]`` (:mod:`sim2real.sysid.problem.objects`); values, standard deviations, intervals and
    bounds are reported per unknown under those labels.

    Attributes
    ----------
    groups : tuple of tuple of str
        Free registry names, tied ones in one group.
    per_object : frozenset of str
        Registry names fitted with one value per object.
    objects : tuple of str
        Object labels of the fitted trials (sorted; set by :meth:`with_objects`).
    """

    groups: tuple[tuple[str, ...], ...]
    per_object: frozenset[str] = frozenset()
    objects: tuple[str, ...] = ()

    @classmethod
    def parse(cls, items: Sequence[str] | str, option: str | None = "free") -> FreeParameters:
        """From ``["contact.mu_table", "box.size_x=box.size_y"]`` or the comma-separated string (``option``: the
        argparse dest of the option that gives them, for errors: :class:`~sim2real.errors.Sim2RealError`).

        Raises
        ------
        Sim2RealError
            Empty list, unknown name (with a suggestion), frozen parameter, or a name given twice.
        """
        if isinstance(items, str):
            items = [part for part in items.split(",")]
        groups: list[tuple[str, ...]] = []
        seen: set[str] = set()
        for item in items:
            if not item.strip():
                continue
            group = tuple(name.strip() for name in item.split("="))
            for name in group:
                entry = spec(name)
                if entry.frozen:
                    raise InputError(f"parameter '{name}' is a frozen numerical setting and cannot be fitted")
                if entry.kind is not float:
                    raise InputError(f"parameter '{name}' is an integer setting and cannot be fitted")
                if name in seen:
                    raise InputError(f"parameter '{name}' is given twice in the free parameters", option=option)
                seen.add(name)
            groups.append(group)
        if not groups:
            raise InputError("the free parameters name no parameter to fit", option=option)
        return cls(tuple(groups))

    def with_objects(self, per_object: str | Sequence[str] | None,
                     trial_objects: Sequence[tuple[str, str | None]]) -> FreeParameters:
        """The same free set with ``per_object`` names fitted per object of ``trial_objects``.

        Parameters
        ----------
        per_object : str or sequence of str or None
            ``--per-object`` names (comma separated); empty: everything shared.
        trial_objects : sequence of (str, str or None)
            ``(trial name, object label)`` of every fitted trial.

        Raises
        ------
        Sim2RealError
            A per-object name that is not free, a tied group only partly per object, or a trial
            without an object label (named).
        """
        names = parse_per_object(per_object, self.groups)
        layout = ObjectLayout.build(self.groups, names, trial_objects)
        return dataclasses.replace(self, per_object=layout.per_object, objects=layout.objects)

    @property
    def layout(self) -> ObjectLayout:
        """The map of unknowns to each trial's values and Jacobian columns."""
        return ObjectLayout(self.groups, self.per_object, self.objects)

    @property
    def labels(self) -> tuple[str, ...]:
        """One label per unknown: its group's first name (``NAME[OBJECT]`` per object)."""
        return self.layout.labels

    @property
    def unknown_list(self) -> tuple[Unknown, ...]:
        """One :class:`~sim2real.sysid.problem.objects.Unknown` per unknown, in order."""
        return self.layout.unknown_list

    @property
    def unknown_groups(self) -> tuple[tuple[str, ...], ...]:
        """Per unknown, the names it stands for (``NAME[OBJECT]`` per object): the keys it is reported under."""
        return tuple(u.reported for u in self.unknown_list)

    @property
    def registry_of(self) -> dict[str, str]:
        """``{reported name: registry name}`` of every :attr:`unknown_names` entry."""
        return registry_names_of(self.unknown_list)

    @property
    def names(self) -> tuple[str, ...]:
        """Every registry name involved, in order (a trial's Jacobian has one column per name)."""
        return tuple(n for g in self.groups for n in g)

    @property
    def unknown_names(self) -> tuple[str, ...]:
        """Every reported name (:attr:`unknown_groups`, flattened)."""
        return tuple(n for g in self.unknown_groups for n in g)

    def expand(self, x: np.ndarray) -> dict[str, float]:
        """``{reported name: value}`` of the unknowns ``x`` (p,) (:attr:`unknown_names`)."""
        return {n: float(x[i]) for i, g in enumerate(self.unknown_groups) for n in g}

    def parameters(self, x: np.ndarray, obj: str | None = None) -> dict[str, float]:
        """``{registry name: value}`` a trial of object ``obj`` is simulated with, from ``x`` (p,)."""
        return self.layout.expand(x, obj)

    def shared(self, x: np.ndarray) -> dict[str, float]:
        """``{registry name: value}`` of the shared unknowns only (a params file holds these)."""
        return {n: float(x[i]) for i, (g, obj) in enumerate(self.layout.unknowns) if obj is None
                for n in self.groups[g]}

    @property
    def columns(self) -> ColumnMap:
        """A trial's Jacobian columns: each involved registry name in its group's (:attr:`ObjectLayout.columns`)."""
        return self.layout.columns

    def place_groups(self, jacobian: np.ndarray, obj: str | None = None) -> np.ndarray:
        """A trial's columns per group (m, len(groups)) → per unknown (m, p)."""
        return self.layout.place_groups(jacobian, obj)


def parse_bounds(text: str | None) -> dict[str, tuple[float, float]]:
    """Parse ``"NAME=LO:HI,..."`` into ``{name: (lo, hi)}`` (SI units).

    Raises
    ------
    Sim2RealError
        Malformed entry, unknown name, non-numeric or reversed bounds.
    """
    out: dict[str, tuple[float, float]] = {}
    for part in (p.strip() for p in (text or "").split(",")):
        if not part:
            continue
        name, sep, rest = part.partition("=")
        lo_text, colon, hi_text = rest.partition(":")
        if not sep or not colon:
            raise InputError(f"a bound expects NAME=LOWER:UPPER, got '{part}'", option="bounds")
        spec(name.strip())
        try:
            lo, hi = float(lo_text), float(hi_text)
        except ValueError:
            raise InputError(f"bounds of {name.strip()}: '{rest}' is not LOWER:UPPER numbers",
                             option="bounds") from None
        if not (np.isfinite(lo) and np.isfinite(hi)) or lo >= hi:
            raise InputError(f"bounds of {name.strip()}: need finite LOWER < UPPER, got {rest}", option="bounds")
        out[name.strip()] = (lo, hi)
    return out


def param_scale(name: str, value: float) -> float:
    """The typical magnitude of parameter ``name`` at ``value``: ``max(|value|, 1 % of its bound range)``."""
    entry = spec(name)
    return max(abs(value), 0.01 * (entry.upper - entry.lower))


def _bounds(free_set: FreeParameters, x0: np.ndarray,
            bounds: Mapping[str, tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds (p,) of the unknowns: the registry's, narrowed by ``bounds``."""
    for name in bounds:
        if name not in free_set.names:
            raise InputError(f"the bounds name '{name}', which is not a free parameter", option="bounds")
    lower, upper = np.empty(len(x0)), np.empty(len(x0))
    for i, unknown in enumerate(free_set.unknown_list):
        lo = max(spec(n).lower for n in unknown.names)
        hi = min(spec(n).upper for n in unknown.names)
        for n in unknown.names:
            if n in bounds:
                lo, hi = max(lo, bounds[n][0]), min(hi, bounds[n][1])
        if not lo <= x0[i] <= hi:
            raise InputError(f"bounds [{lo:g}, {hi:g}] of '{unknown.label}' exclude its start value {x0[i]:g}")
        lower[i], upper[i] = lo, hi
    return lower, upper


def _tie_start(free_set: FreeParameters, start: ParameterSet) -> tuple[ParameterSet, list[str]]:
    """Tied names start from the first name's value (with a warning when they differed)."""
    warnings: list[str] = []
    tie_values: dict[str, float] = {}
    for group in free_set.groups:
        first = float(start[group[0]])
        if any(float(start[n]) != first for n in group[1:]):
            warnings.append(f"tied parameters {', '.join(group)} started from different values; "
                            f"all start at {group[0]} = {first:g}")
        tie_values.update({n: first for n in group})
    return start.replace(tie_values), warnings


@dataclass(frozen=True)
class Unknowns:
    """The unknowns of a fit, as :func:`fit_trials` sets them up (one per tied group).

    Attributes
    ----------
    start : ParameterSet
        The start with tied names set to their group's first value.
    x0, lower, upper, typical : numpy.ndarray
        Start values, bounds and typical magnitudes (the optimizer's scales), shape (p,), in
        each parameter's registry unit.
    warnings : list of str
        What the set-up changed (tied names that started from different values).
    """

    start: ParameterSet
    x0: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    typical: np.ndarray
    warnings: list[str]


def unknowns(free_set: FreeParameters, start: ParameterSet,
             bounds: Mapping[str, tuple[float, float]] | None = None) -> Unknowns:
    """Start values, bounds and scales of ``free_set`` from ``start`` (registry bounds narrowed by ``bounds``).

    Raises
    ------
    Sim2RealError
        ``bounds`` names a parameter that is not free, or excludes a start value.
    """
    start, warnings = _tie_start(free_set, start)
    x0 = np.array([float(start[u.name]) for u in free_set.unknown_list])
    lower, upper = _bounds(free_set, x0, dict(bounds or {}))
    typical = np.array([param_scale(u.name, float(v)) for u, v in zip(free_set.unknown_list, x0, strict=True)])
    return Unknowns(start, x0, lower, upper, typical, warnings)



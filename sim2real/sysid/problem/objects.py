"""One fit over several objects: parameters shared by every trial, or one value per object.

Trials carry their object (``trial.json`` ``"object"``: its label, size, mass, pusher; see
:mod:`sim2real.trials.trial_object`), so a fit may span blocks of steel, aluminium and plastic. A
free parameter is *shared* (one unknown for every trial, e.g. the probe's friction) or *per object*
(``fit --per-object contact.mu_table,box.com_y``: one unknown per object label, each informed only
by that object's trials). A per-object unknown is labelled ``NAME[OBJECT]``
(``contact.mu_table[steel]``); its registry entry (unit, bounds, scale) is ``NAME``'s.

:class:`ObjectLayout` maps the unknowns ``x`` (p,) to each trial's parameter values and each trial's
Jacobian columns (per registry name) to columns per unknown; a trial's Jacobian is zero in the
columns of the other objects' unknowns.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from sim2real.errors import InputError


def object_label(name: str, obj: str) -> str:
    """The label of ``name``'s unknown for object ``obj``: ``NAME[OBJECT]``."""
    return f"{name}[{obj}]"


@dataclass(frozen=True)
class Unknown:
    """One fitted unknown: the registry names it sets (a tied group, its leader first) and its object.

    The one place a label is made: the fit reports each unknown under :attr:`label` (``contact.mu_table`` or,
    per object, ``contact.mu_table[steel]``) and its tied names under :attr:`reported`; code that needs the
    registry name or the object reads the fields, never the label (fit.json keeps them in ``unknowns``).

    Attributes
    ----------
    names : tuple of str
        Registry names, the leader first (more than one when tied).
    obj : str or None
        The object label of a per-object unknown; None for a shared one.
    """

    names: tuple[str, ...]
    obj: str | None = None

    @property
    def name(self) -> str:
        """The leader's registry name."""
        return self.names[0]

    @property
    def reported(self) -> tuple[str, ...]:
        """The key of each of :attr:`names` in the fit's values (``NAME[OBJECT]`` per object)."""
        return self.names if self.obj is None else tuple(object_label(n, self.obj) for n in self.names)

    @property
    def label(self) -> str:
        """The unknown's own key: its leader's :attr:`reported` name."""
        return self.reported[0]

    def as_dict(self) -> dict[str, Any]:
        """fit.json's form: ``{"label": ..., "names": [...], "object": ... or None}``."""
        return {"label": self.label, "names": list(self.names), "object": self.obj}


def registry_names_of(unknowns: Sequence[Unknown]) -> dict[str, str]:
    """``{reported name: registry name}`` of every name of ``unknowns``."""
    return {key: name for u in unknowns for key, name in zip(u.reported, u.names, strict=True)}


def parse_per_object(text: str | Sequence[str] | None, groups: Sequence[Sequence[str]]) -> frozenset[str]:
    """The registry names fitted per object, checked against the free groups.

    Parameters
    ----------
    text : str or sequence of str or None
        ``--per-object`` names, comma separated.
    groups : sequence of sequence of str
        The free groups (tied names together).

    Raises
    ------
    Sim2RealError
        A name that is not free, or a tied group only partly per object.
    """
    if not text:
        return frozenset()
    items = text.split(",") if isinstance(text, str) else list(text)
    names = frozenset(item.strip() for item in items if item.strip())
    free = {name for group in groups for name in group}
    unknown = sorted(names - free)
    if unknown:
        raise InputError(f"the per-object parameters name {', '.join(unknown)}, which is not free (add it to the "
                         f"free parameters)", option="per_object")
    for group in groups:
        inside = [name for name in group if name in names]
        if inside and len(inside) != len(group):
            raise InputError(f"tied parameters {'='.join(group)} must all be per object or all shared")
    return names


@dataclass(frozen=True)
class ColumnMap:
    """The Jacobian column of each differentiated registry name: ``column[i]`` holds d residuals / d ``names[i]``,
    and names sharing a column add up (the derivative along a tie, e.g. a cube's three tied sides).

    Built once per fit from its free set (:attr:`ObjectLayout.columns`: one column per group of tied names)
    and handed down to each trial's residuals, the engine's trajectory (``Trajectory.columns``) and back up
    to the Jacobian (:meth:`ObjectLayout.place_groups` puts a trial's columns on the unknowns).

    Attributes
    ----------
    names : tuple of str
        Differentiated registry names.
    column : tuple of int
        The column of each (covering 0 .. p-1).
    """

    names: tuple[str, ...]
    column: tuple[int, ...]

    @classmethod
    def of(cls, names: Sequence[str], columns: Sequence[int] | None) -> ColumnMap:
        """``columns`` (one per name, covering 0 .. p-1; None: one column per name), checked."""
        names = tuple(names)
        column = tuple(range(len(names))) if columns is None else tuple(int(c) for c in columns)
        if len(column) != len(names) or (column and set(column) != set(range(max(column) + 1))):
            raise InputError(f"gradient columns {list(column)} do not place the {len(names)} name(s) "
                                f"{', '.join(names)} on columns 0, 1, ... (one per name, none empty)")
        return cls(names, column)

    @property
    def p(self) -> int:
        """Jacobian columns."""
        return max(self.column) + 1 if self.column else 0

    def where(self, name: str) -> int | None:
        """The column of ``name`` (None when it is not differentiated)."""
        return self.column[self.names.index(name)] if name in self.names else None

    def subset(self, available: Sequence[str]) -> tuple[tuple[str, ...], list[int]]:
        """The names among ``available`` (in this order) and their columns."""
        chosen = tuple(n for n in self.names if n in available)
        return chosen, [self.column[self.names.index(n)] for n in chosen]

    @cached_property
    def _placement(self) -> np.ndarray | None:
        """``(len(names), p)`` 0/1 matrix from names to columns; None when each name has its own column
        in order (placing is then the identity)."""
        if self.column == tuple(range(len(self.names))):
            return None
        place = np.zeros((len(self.names), self.p))
        place[np.arange(len(self.names)), self.column] = 1.0
        return place

    def placed(self, per_name: np.ndarray) -> np.ndarray:
        """Derivatives per name ``(..., len(names))`` in the Jacobian's columns ``(..., p)`` (ties summed)."""
        return per_name if self._placement is None else per_name @ self._placement


#: The map of a residual evaluation without a Jacobian.
NO_GRADIENTS = ColumnMap((), ())


@dataclass(frozen=True)
class ObjectLayout:
    """Unknowns of a fit with shared and per-object parameters.

    Attributes
    ----------
    groups : tuple of tuple of str
        The free groups (registry names; tied names in one group).
    per_object : frozenset of str
        Registry names fitted per object.
    objects : tuple of str
        The object labels of the fitted trials, sorted (empty without per-object names).
    """

    groups: tuple[tuple[str, ...], ...]
    per_object: frozenset[str] = frozenset()
    objects: tuple[str, ...] = ()

    @classmethod
    def build(cls, groups: Sequence[Sequence[str]], per_object: Collection[str],
              trial_objects: Sequence[tuple[str, str | None]]) -> ObjectLayout:
        """The layout of ``groups`` over trials ``[(trial name, object label or None), ...]``.

        Raises
        ------
        Sim2RealError
            Per-object names with a trial that carries no object label (named).
        """
        groups_t = tuple(tuple(g) for g in groups)
        per = frozenset(per_object)
        if not per:
            return cls(groups_t)
        unlabelled = [name for name, obj in trial_objects if not obj]
        if unlabelled:
            raise InputError(f"per-object values need every trial's object label; {', '.join(unlabelled[:5])} "
                             f"carr{'ies' if len(unlabelled) == 1 else 'y'} none (import with an object label, or "
                             f"set \"name\" in trial.json \"object\")", option="per_object")
        return cls(groups_t, per, tuple(sorted({str(obj) for _, obj in trial_objects})))

    def _is_per_object(self, group: Sequence[str]) -> bool:
        return group[0] in self.per_object

    @property
    def unknowns(self) -> tuple[tuple[int, str | None], ...]:
        """``(group index, object or None)`` per unknown, in order: groups in order, objects sorted."""
        out: list[tuple[int, str | None]] = []
        for g, group in enumerate(self.groups):
            if self._is_per_object(group):
                out.extend((g, obj) for obj in self.objects)
            else:
                out.append((g, None))
        return tuple(out)

    @property
    def unknown_list(self) -> tuple[Unknown, ...]:
        """One :class:`Unknown` per unknown, in the order of :attr:`unknowns`."""
        return tuple(Unknown(self.groups[g], obj) for g, obj in self.unknowns)

    @property
    def labels(self) -> tuple[str, ...]:
        """One label per unknown: the group's first name, with ``[OBJECT]`` when per object."""
        return tuple(u.label for u in self.unknown_list)

    @property
    def names(self) -> tuple[str, ...]:
        """Every registry name involved, in group order (a trial's Jacobian has these columns)."""
        return tuple(n for g in self.groups for n in g)

    def _index(self, obj: str | None) -> list[int]:
        """Per group, the unknown that holds its value for a trial of object ``obj``."""
        where = {key: i for i, key in enumerate(self.unknowns)}
        out = []
        for g, group in enumerate(self.groups):
            key = (g, obj) if self._is_per_object(group) else (g, None)
            if key not in where:
                raise InputError(f"no unknown for {group[0]} of object '{obj}'")
            out.append(where[key])
        return out

    def expand(self, x: np.ndarray, obj: str | None = None) -> dict[str, float]:
        """``{registry name: value}`` for a trial of object ``obj`` from the unknowns ``x`` (p,).

        Without per-object names ``obj`` is ignored; with them every trial has an object.
        """
        index = self._index(obj if self.per_object else None)
        return {name: float(x[index[g]]) for g, group in enumerate(self.groups) for name in group}

    @property
    def columns(self) -> ColumnMap:
        """Each of :attr:`names` in its group's column: the map of every trial's Jacobian columns."""
        return ColumnMap(self.names, self.name_groups)

    @property
    def name_groups(self) -> tuple[int, ...]:
        """The group of each of :attr:`names`: a trial's Jacobian columns when tied names are
        differentiated together (one column per group)."""
        return tuple(g for g, group in enumerate(self.groups) for _ in group)

    def place_groups(self, jacobian: np.ndarray, obj: str | None = None) -> np.ndarray:
        """A trial's Jacobian columns per group ``(m, len(groups))`` → per unknown ``(m, p)``.

        A per-object group goes to the trial's object's unknown; the other objects' columns stay zero.
        """
        index = self._index(obj if self.per_object else None)
        out = np.zeros((jacobian.shape[0], len(self.unknowns)))
        out[:, index] = jacobian
        return out

    def reduce_columns(self, jacobian: np.ndarray, obj: str | None = None) -> np.ndarray:
        """A trial's Jacobian columns per registry name ``(m, len(names))`` → per unknown ``(m, p)``:
        tied names summed into their unknown (:meth:`place_groups`)."""
        edges = np.cumsum([0, *(len(group) for group in self.groups)])
        per_group = np.stack([jacobian[:, a:b].sum(axis=1) for a, b in itertools.pairwise(edges)], axis=1)
        return self.place_groups(per_group, obj)

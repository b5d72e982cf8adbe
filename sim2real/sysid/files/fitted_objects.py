"""Which object a fit's params files describe.

Trials may carry their own object (trial.json ``"object"``: box size and mass, pusher; see
:mod:`sim2real.trials.trial_object`), and a fit simulates each trial with its object's values in
place of the nominal ones (:func:`~sim2real.trials.trial_object.object_values`). The params file a
fit writes must say which box it holds, or ``simulate --params`` and the sim node would simulate
another one:

* all fitted trials carry one and the same object: the file holds that object's values (box size,
  mass, pusher) where the fit simulated them, i.e. unless the parameter was fitted or set, whose
  value is kept; its header names the object;
* the trials carry several objects (or some carry none): the file holds none of their values, and
  its header says so and where each object's are (the per-object files of ``--per-object``, each
  holding its object's values, else the trials' own trial.json);
* no trial carries an object: the file is the fitted set, as before.

fit.json records the objects (``data.trial_objects``, :func:`trial_objects`) and which file holds
which (``params_object``, :func:`params_objects`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim2real.params import ParameterSet
from sim2real.sysid.problem import TrialData
from sim2real.trials.trial_object import object_values


def trial_objects(trials: Sequence[TrialData]) -> list[dict[str, Any]]:
    """fit.json ``data.trial_objects``: the distinct objects the fitted trials carry, in trial order.

    Parameters
    ----------
    trials : sequence of TrialData
        The fitted trials.

    Returns
    -------
    list of dict
        One entry per distinct object (label, pusher shape and parameter values all equal):
        ``name`` (label or None), ``pusher_shape``, ``parameters`` (registry name → value, SI) and
        ``trials`` (names). Trials without an object form one entry with empty ``parameters``.
    """
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for trial in trials:
        values = {k: float(v) for k, v in sorted(trial.object_params.items())}
        key = (trial.object_name, trial.pusher_shape, tuple(values.items()))
        entry = groups.setdefault(key, {"name": trial.object_name, "pusher_shape": trial.pusher_shape,
                                        "parameters": values, "trials": []})
        entry["trials"].append(trial.name)
    return list(groups.values())


@dataclass(frozen=True)
class ObjectParams:
    """A params file's set with an object's values in, and what of the object it took.

    Attributes
    ----------
    params : ParameterSet
        The set to write.
    values : dict of str to float
        The object's values written (SI), by name.
    kept : dict of str to str
        The object's parameters whose value in the file is the fit's own: ``"fitted"`` (free) or
        ``"set"`` (not nominal at the start: ``--set``, ``--params``).
    """

    params: ParameterSet
    values: dict[str, float] = field(default_factory=dict)
    kept: dict[str, str] = field(default_factory=dict)


def with_object(params: ParameterSet, obj: Mapping[str, Any], fitted: Collection[str]) -> ObjectParams:
    """``params`` with the values of ``obj`` (a :func:`trial_objects` entry) that the fit simulated its
    trials with: the step's rule (:func:`~sim2real.trials.trial_object.object_values`), fitted names
    kept."""
    parameters = obj.get("parameters") or {}
    values = object_values(parameters, params, fitted)
    kept = {k: "fitted" if k in fitted else "set" for k in sorted(parameters) if k not in values}
    return ObjectParams(params.replace(values) if values else params, dict(sorted(values.items())), kept)


def _label(obj: Mapping[str, Any]) -> str:
    return f"'{obj['name']}'" if obj.get("name") is not None else "(no label)"


def _object_line(obj: Mapping[str, Any], taken: ObjectParams, trials: str) -> str:
    """The header line of a file that holds ``obj``'s values."""
    shape = f", pusher {obj['pusher_shape']}" if obj.get("pusher_shape") else ""
    line = (f"box and pusher: the trials' object {_label(obj)}, carried by {trials} (trial.json \"object\"{shape}): "
            f"{', '.join(taken.values) or 'none'} from it")
    if taken.kept:
        line += "; the fit's own value kept: " + ", ".join(f"{k} ({why})" for k, why in taken.kept.items())
    return line


@dataclass(frozen=True)
class ObjectFiles:
    """What the params files of a fit hold of the trials' objects.

    Attributes
    ----------
    shared : ObjectParams
        The params file's set (``--out``).
    header : str
        Lines for its header ("" when no trial carries an object).
    per_object : dict of str to (ObjectParams, str)
        Per object label of a per-object fit: its file's set and its header line.
    record : dict
        fit.json ``params_object``: ``object`` (the label of the object the params file holds,
        None), ``from_trials`` (it holds one), ``values`` and ``kept`` (:class:`ObjectParams`),
        ``objects`` (each :func:`trial_objects` entry with the ``params_file`` holding its values,
        None when none does).
    """

    shared: ObjectParams
    header: str
    per_object: dict[str, tuple[ObjectParams, str]]
    record: dict[str, Any]


def params_objects(out: str | Path, params: ParameterSet, objects: Sequence[Mapping[str, Any]],
                   fitted: Collection[str], per_object: Mapping[str, ParameterSet] | None = None,
                   object_path: Callable[[Path, str], Path] | None = None) -> ObjectFiles:
    """Which object values the params file ``out`` (and each per-object file) holds.

    Parameters
    ----------
    out : path
        The params file.
    params : ParameterSet
        Its fitted set (start values for everything not free).
    objects : sequence of mapping
        fit.json ``data.trial_objects`` (:func:`trial_objects`).
    fitted : collection of str
        Every free registry name (their values are the fit's).
    per_object : mapping of str to ParameterSet, optional
        A per-object fit's set per object label (shared and that object's values).
    object_path : callable, optional
        ``(out, label) -> path`` of a per-object file (with ``per_object``).

    Returns
    -------
    ObjectFiles
    """
    out = Path(out)
    if per_object and object_path is None:
        raise ValueError("params_objects: per-object sets need object_path")
    carried = [o for o in objects if o.get("parameters")]
    bare = [o for o in objects if not o.get("parameters")]
    files: dict[str, tuple[ObjectParams, str]] = {}
    entries = [{**dict(o), "params_file": None} for o in objects]
    for label, set_ in (per_object or {}).items():
        assert object_path is not None  # checked above
        mine = [k for k, o in enumerate(objects) if o.get("parameters") and o.get("name") == label]
        if len(mine) == 1:
            obj = objects[mine[0]]
            taken = with_object(set_, obj, fitted)
            files[label] = (taken, _object_line(obj, taken, f"its {len(obj['trials'])} trial(s)"))
            entries[mine[0]]["params_file"] = Path(object_path(out, label)).name
        else:  # trials of one label with different values: the file cannot hold one object's
            files[label] = (ObjectParams(set_), f"box and pusher: not the object's: its trials carry {len(mine)} "
                                                f"different sets of values (trial.json \"object\"); the start's values")
    if len(objects) == 1 and carried:
        obj = carried[0]
        shared = with_object(params, obj, fitted)
        entries[0]["params_file"] = out.name
        header = _object_line(obj, shared, f"all {len(obj['trials'])} fitted trial(s)")
        record = {"object": obj.get("name"), "from_trials": True, "values": shared.values, "kept": shared.kept}
    elif carried:
        shared = ObjectParams(params)
        names = ", ".join(f"{_label(o)} ({len(o['trials'])} trial(s))" for o in carried)
        header = (f"box and pusher: no object's: the fitted trials carry {len(carried)} object(s), {names}; this "
                  f"file holds none of their box and pusher values (its values are the start's), each trial simulates "
                  f"its own (trial.json \"object\")")
        if files:
            assert object_path is not None  # files are written only for per-object sets
            header += "; each object's values: " + ", ".join(
                Path(object_path(out, label)).name for label in files)
        if bare:
            header += f"; {len(bare[0]['trials'])} trial(s) carry no object and simulate this file's"
        record = {"object": None, "from_trials": False, "values": {}, "kept": {}}
    else:
        shared, header = ObjectParams(params), ""
        record = {"object": None, "from_trials": False, "values": {}, "kept": {}}
    return ObjectFiles(shared, header, files, {**record, "objects": entries})

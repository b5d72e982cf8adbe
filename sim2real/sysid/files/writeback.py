"""Write a fit back: the fitted ROS 2 params YAML and its fit.json, together or not at all.

``--out F.yaml`` gives the params file (complete parameter set under the ``/**`` node key,
readable by ``sim_node``, ``sim2real simulate --params`` and the launch files; when every fitted
trial carries one and the same object, with that object's box and pusher values where the fit
simulated them: :mod:`sim2real.sysid.files.fitted_objects`); the fit
report goes to the same path with the suffix ``.json`` (``fitted.yaml`` → ``fitted.json``).
Both are written whatever the fit's status (its ``status`` and ``problems`` say whether to use
it). Hard solver steps met during the fit go to a folder beside them named after the params
file, ``<stem>.hard_steps/`` (``fitted.yaml`` → ``fitted.hard_steps/``), so that fits with
different outputs in one folder never mix their steps; one reproduction file each
(``<stem>_<trial>_step_<index>.json``; re-solve one with ``sim2real resolve-step``).
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sim2real.errors import InputError, Sim2RealError
from sim2real.filemodes import staged_file
from sim2real.params import save_params
from sim2real.sim import save_hard_steps
from sim2real.sysid.files.fit_file import FitDocument
from sim2real.sysid.files.fitted_objects import ObjectFiles, params_objects
from sim2real.sysid.solve import FitResult

if TYPE_CHECKING:
    from sim2real.trials.records import TrialRecord

PARAMS_SUFFIXES: tuple[str, ...] = (".yaml", ".yml")
#: Suffix of the folder (beside the params file, named after its stem) of the hard-step reproduction files.
HARD_STEPS_SUFFIX = ".hard_steps"


def check_out_path(out: str | os.PathLike[str]) -> Path:
    """Validate ``--out`` before any work: a ``.yaml``/``.yml`` path whose directory can be made.

    Raises
    ------
    Sim2RealError
        Wrong suffix, or the path is an existing directory.
    """
    path = Path(out)
    if path.suffix not in PARAMS_SUFFIXES:
        raise InputError(f"the output must name a params YAML file (.yaml or .yml), got '{path}'", option="out")
    if path.is_dir():
        raise InputError(f"the output {path} is a directory; give a file name such as {path / 'fitted.yaml'}",
                         option="out")
    return path


def fit_json_path(out: str | os.PathLike[str]) -> Path:
    """Where fit.json goes for params file ``out``: same directory and stem, suffix ``.json``."""
    return Path(out).with_suffix(".json")


def hard_steps_dir(out: str | os.PathLike[str]) -> Path:
    """Where the hard steps of the fit writing params file ``out`` go: ``<dir>/<stem>.hard_steps``."""
    path = Path(out)
    return path.with_name(path.stem + HARD_STEPS_SUFFIX)


def fit_document(result: FitResult, out: str | os.PathLike[str] | None = None,
                 files: ObjectFiles | None = None) -> FitDocument:
    """The fit.json document of ``result``, with ``params_file``, the name of the hard-step folder
    (``hard_steps.directory``, beside the params file) and which object the params files hold (``params_object``:
    ``files``, else :func:`object_files`) when ``out`` is given."""
    document = result.document()
    if out is None:
        return document
    files = files if files is not None else object_files(out, result)
    hard_steps = {"directory": hard_steps_dir(out).name, **dict(document.others.get("hard_steps") or {})}
    return dataclasses.replace(document, params_file=str(out), params_object=files.record,
                               others={**document.others, "hard_steps": hard_steps})


def object_files(out: str | os.PathLike[str], result: FitResult) -> ObjectFiles:
    """What the params file ``out`` (and a per-object fit's ``<stem>.<OBJECT>.yaml``) hold of the objects the
    fitted trials carry (fit.json ``data.trial_objects``;
    :func:`~sim2real.sysid.files.fitted_objects.params_objects`)."""
    free = result.free
    per_object = None
    if free.per_object:
        x = np.array([result.values[label] for label in free.labels])
        per_object = {obj: result.start.replace(free.parameters(x, obj)) for obj in free.objects}
    return params_objects(Path(out), result.params, result.data.get("trial_objects") or [], set(free.names),
                          per_object, object_params_path)


def object_params_path(out: str | os.PathLike[str], obj: str) -> Path:
    """Where the params of object ``obj`` of a per-object fit writing ``out`` go: ``<dir>/<stem>.<obj>.yaml``."""
    path = Path(out)
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in obj)
    return path.with_name(f"{path.stem}.{safe}{path.suffix}")


def check_object_targets(out: str | os.PathLike[str], objects: Sequence[str]) -> None:
    """Refuse the per-object params files of ``objects`` (:func:`object_params_path`) that cannot be written:
    two objects whose names give one file (``a/b`` and ``a_b`` both ``OUT.a_b.yaml``: one object's values
    would be lost), or a file that exists and no fit wrote (nor a FIFO or other non-regular file).

    Raises
    ------
    Sim2RealError
        One line naming the objects or the file.
    """
    path = Path(out)
    owners: dict[Path, str] = {}
    for obj in sorted(set(objects)):
        target = object_params_path(path, obj)
        if target in owners:
            raise InputError(f"per-object values: the objects '{owners[target]}' and '{obj}' would both be written "
                             f"to {target}: rename one (trial.json \"object\" \"name\") so that the names differ "
                             f"in letters, digits, '-' or '_'", option="per_object")
        owners[target] = obj
        if target.is_symlink() or target.exists():
            if not target.is_file():
                raise InputError(f"{target} (the per-object values of object '{obj}') exists and is not a regular "
                                 f"file; choose another output", option="out")
            with target.open("rb") as handle:
                head = handle.read(200).decode("utf-8", "replace")
            if "Fitted by sim2real fit" not in head:
                raise InputError(f"{target} (the per-object values of object '{obj}') exists and was not written by "
                                 f"a fit; choose another output", option="out")


def check_per_object_outputs(out: str | os.PathLike[str], per_object: str | Sequence[str] | None,
                             records: Sequence[TrialRecord]) -> None:
    """Before a per-object fit starts: the per-object params files its trials' object labels name can be
    written (:func:`check_object_targets`), so that no fit runs to its end only to be refused.

    Parameters
    ----------
    out : path-like
        The fit's ``--out`` params file.
    per_object : str or sequence of str or None
        ``--per-object`` names; nothing is checked without them.
    records : sequence of TrialRecord
        The trials to fit; their object labels (trial.json ``"object"`` ``"name"``) name the files. A trial
        whose object cannot be read is left to the fit, which names it.

    Raises
    ------
    Sim2RealError
        As :func:`check_object_targets`.
    """
    if not per_object:
        return
    from sim2real.trials.trial_object import trial_object

    labels = []
    for record in records:
        try:
            obj = trial_object(record.meta, record.name)
        except Sim2RealError:
            continue
        if obj is not None and obj.name:
            labels.append(obj.name)
    check_object_targets(out, labels)


def _check_object_targets(path: Path, result: FitResult) -> None:
    """Refuse before writing anything what :func:`check_object_targets` refuses of the fit's objects."""
    if result.free.per_object:
        check_object_targets(path, result.free.objects)


def _write_object_params(path: Path, files: ObjectFiles, header: str) -> list[Path]:
    """One params file per object of a per-object fit (none otherwise): the shared values and that
    object's, with its box and pusher values from its trials (``files``: :func:`object_files`)."""
    written = []
    for obj, (taken, line) in files.per_object.items():
        target = object_params_path(path, obj)
        save_params(target, taken.params,
                    header=f"{header}\nobject: {obj} (its per-object values and the shared ones)\n{line}")
        written.append(target)
    return written


def write_fit(out: str | os.PathLike[str], result: FitResult) -> tuple[Path, Path]:
    """Write the fitted params YAML at ``out`` and fit.json next to it (atomically, both or neither);
    a per-object fit also writes ``<stem>.<OBJECT>.yaml`` per object (:func:`object_params_path`).

    Returns
    -------
    (params path, fit.json path)
    """
    path = check_out_path(out)
    json_path = fit_json_path(path)
    _check_object_targets(path, result)
    files = object_files(path, result)
    document = fit_document(result, path, files)
    header = (f"Fitted by sim2real fit: {', '.join(result.free.names)}\n"
              f"status: {result.status}; stop reason: {result.stop_reason}; uncertainty in {json_path.name}")
    if result.problems:
        header += "\nPROBLEMS (see " + json_path.name + "):\n" + "\n".join(f"- {p}" for p in result.problems)
    path.parent.mkdir(parents=True, exist_ok=True)
    with staged_file(json_path) as handle:  # fit.json appears last, when the params files are written
        json.dump(document.to_json(), handle, indent=2)
        handle.write("\n")
        save_params(path, files.shared.params, header=f"{header}\n{files.header}" if files.header else header)
        _write_object_params(path, files, header)
    write_hard_steps(path, result)
    return path, json_path


def write_hard_steps(out: str | os.PathLike[str], result: FitResult) -> list[Path]:
    """Save the fit's hard steps as ``<dir of out>/<stem>.hard_steps/<stem>_<trial>_step_<index>.json``.

    Step files an earlier fit to the same ``out`` left there (same names: ``<stem>_*_step_*.json``)
    are removed first, so the folder holds this fit's steps only; nothing else in it is touched.

    Returns
    -------
    list of pathlib.Path
        The files written (none when the fit met no hard step).
    """
    directory = hard_steps_dir(out)
    stem = Path(out).stem
    if directory.is_dir():
        for stale in directory.glob(f"{glob.escape(stem)}_*_step_*.json"):
            stale.unlink(missing_ok=True)
    written: list[Path] = []
    by_trial: dict[str, list] = {}
    for trial, hard in result.hard_steps:
        by_trial.setdefault(trial, []).append(hard)
    for trial, steps in by_trial.items():
        written += save_hard_steps(directory, steps, prefix=f"{Path(out).stem}_{trial}_")
    return written

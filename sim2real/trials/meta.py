"""A typed read view of trial.json: :class:`TrialMeta`, what every reader of trial metadata uses.

The trial.json object stays a plain dict in :attr:`sim2real.trials.records.TrialRecord.meta`: the
writers build it and :mod:`sim2real.trials.writer` writes it. Readers go through this view instead of
string keys: each property names one field, says its unit and type, and reads a field that is absent
(or, where :func:`check_trial_meta` does not check it, of another type) as its
empty value. What the fields mean: the package docstring of :mod:`sim2real.trials`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim2real.errors import DataError
from sim2real.trials.schema import TRIAL_SCHEMA


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class TrialMeta:
    """Read view of one trial.json object.

    Attributes
    ----------
    raw : mapping
        The object as read (or as a writer built it); never changed by the view.
    name : str, optional
        The trial's name for error messages (default: the object's ``trial``).
    """

    raw: Mapping[str, Any]
    name: str | None = None

    @property
    def trial(self) -> str | None:
        """The trial's name as written (``trial``)."""
        return _text(self.raw.get("trial"))

    @property
    def complete(self) -> bool:
        """False when the trial was interrupted (``complete``); True when the field is absent (bare bags)."""
        return bool(self.raw.get("complete", True))

    @property
    def note(self) -> str | None:
        """Why the trial is incomplete or flagged (``note``), if said."""
        return _text(self.raw.get("note")) or None

    @property
    def mode(self) -> str | None:
        """The producer's mode (``mode``: a run mode, ``import``, ``replay`` …)."""
        return _text(self.raw.get("mode"))

    @property
    def mirror(self) -> str | None:
        """The mirrored sim's mode (``mirror``: ``closed`` or ``commands``), for runs with one."""
        return _text(self.raw.get("mirror"))

    @property
    def params(self) -> dict[str, float]:
        """The simulator parameters the trial was recorded or simulated with (``params``; SI units)."""
        return {str(k): float(v) for k, v in _mapping(self.raw.get("params")).items()
                if _number(v) is not None}

    @property
    def outcomes(self) -> dict[str, Any]:
        """Per platform, the outcome computed when the trial was closed (``outcomes``)."""
        return _mapping(self.raw.get("outcomes"))

    @property
    def solver(self) -> dict[str, Any]:
        """Per simulating platform, its solver tally (``solver``)."""
        return _mapping(self.raw.get("solver"))

    @property
    def loop_health(self) -> dict[str, Any]:
        """Per platform, how its loop held its rate (``loop_health``)."""
        return _mapping(self.raw.get("loop_health"))

    @property
    def timing(self) -> dict[str, Any]:
        """``timing``: ``start_ns``, ``end_ns``, ``wall_s``."""
        return _mapping(self.raw.get("timing"))

    @property
    def start_ns(self) -> int | None:
        """The trial window's first stamp (``timing.start_ns``), ns."""
        value = self.timing.get("start_ns")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def initial_distance_m(self) -> float | None:
        """The standard push's start distance of the box from the arm base (``initial_distance_m``), m."""
        return _number(self.raw.get("initial_distance_m"))

    @property
    def requested_start_m(self) -> Any:
        """The box start the experiment requested (``requested_start_m``: position, m), as written."""
        return self.raw.get("requested_start_m")

    @property
    def push(self) -> dict[str, float] | None:
        """The trial's own push as the experiment ran it (``push``: ``{field: value}`` of
        :class:`sim2real.control.PushConfig`; lengths m, ``speed`` m/s, times s, ``rate_hz`` Hz), None when the
        trial.json has none (a replay, an import, a recording older than per-trial pushes: the run's ``push`` in
        run.json then applies) or it is not a mapping of numbers (:func:`check_trial_meta` refuses those)."""
        value = self.raw.get("push")
        if not isinstance(value, Mapping) or any(_number(v) is None for v in value.values()):
            return None
        return {str(k): float(v) for k, v in value.items()}

    @property
    def replay_of(self) -> str | None:
        """The trial a replay replays (``replay_of``)."""
        return _text(self.raw.get("replay_of"))

    @property
    def object(self) -> Mapping[str, Any] | None:
        """The object section (``object``: size, mass, pusher, label), None without one.

        Raises
        ------
        DataError
            The field is there but not an object.
        """
        return self._section("object")

    @property
    def imported(self) -> Mapping[str, Any] | None:
        """The import section (``import``: sources, frames, scene checks …), None for a trial not imported.

        Raises
        ------
        DataError
            The field is there but not an object.
        """
        return self._section("import")

    @property
    def camera(self) -> Mapping[str, Any] | None:
        """The camera's detection tally in this trial (``images``, ``poses``, ``rate``, ``refused``): a run's
        (``camera``, the tag detector's images in the window) or an import's (``import.camera.tally``); None
        when the box poses did not come from a camera."""
        recorded = self._section("camera")
        if recorded is not None:
            return recorded
        imported = _mapping((self.imported or {}).get("camera"))
        tally = imported.get("tally")
        return tally if isinstance(tally, Mapping) else None

    def _section(self, key: str) -> Mapping[str, Any] | None:
        value = self.raw.get(key)
        if value is None or isinstance(value, Mapping):
            return value
        name = self.name or self.trial or "?"
        raise DataError(f"trial '{name}': trial.json \"{key}\" must be a mapping, got {type(value).__name__}")


def _nonfinite(value: Any, where: str) -> str | None:
    """The key path of the first NaN or infinite number in ``value``, or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return where
    if isinstance(value, dict):
        for key, item in value.items():
            found = _nonfinite(item, f"{where}.{key}" if where else str(key))
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _nonfinite(item, f"{where}[{index}]")
            if found:
                return found
    return None


def check_trial_meta(meta: dict[str, Any], path: Path) -> None:
    """Validate a trial.json object against its schema (the keys readers rely on).

    Raises
    ------
    Sim2RealError
        One line naming the file and the key: a NaN or infinite number anywhere, a wrong schema
        tag, or a key of the wrong type.
    """
    bad = _nonfinite(meta, "")
    if bad:
        raise DataError(f"{path}: {bad} is NaN or infinite")
    schema = meta.get("schema")
    if schema is not None and schema != TRIAL_SCHEMA:
        raise DataError(f"{path}: schema {schema!r} is not {TRIAL_SCHEMA!r}")
    kinds: dict[str, tuple[type, ...]] = {"trial": (str,), "complete": (bool,), "timing": (dict,), "params": (dict,),
                                          "outcomes": (dict,), "solver": (dict,), "mode": (str,), "mirror": (str,),
                                          "object": (dict,), "import": (dict,), "note": (str,)}
    for key, types in kinds.items():
        if meta.get(key) is not None and not isinstance(meta[key], types):
            raise DataError(f"{path}: {key} must be a {types[0].__name__}, got {type(meta[key]).__name__}")
    push = meta.get("push")
    if push is not None:
        if not isinstance(push, dict):
            raise DataError(f"{path}: push must be a mapping of push keys to numbers, got {type(push).__name__}")
        for name, value in push.items():
            if _number(value) is None:
                raise DataError(f"{path}: push.{name} must be a number, got {value!r}")
    distance = meta.get("initial_distance_m")
    if distance is not None and (isinstance(distance, bool) or not isinstance(distance, (int, float))):
        raise DataError(f"{path}: initial_distance_m must be a number (m), got {distance!r}")
    start_ns = (meta.get("timing") or {}).get("start_ns")
    if start_ns is not None and (isinstance(start_ns, bool) or not isinstance(start_ns, int) or start_ns < 0):
        raise DataError(f"{path}: timing.start_ns must be a non-negative integer (ns), got {start_ns!r}")
    for name, value in (meta.get("params") or {}).items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DataError(f"{path}: params.{name} must be a number, got {value!r}")

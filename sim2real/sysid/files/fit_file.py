"""fit.json: its format tag, its typed form (:class:`FitDocument`) and the one reader and writer of it.

``sim2real fit`` writes it (:func:`sim2real.sysid.files.writeback.fit_document` builds the document from a fit,
:meth:`FitDocument.to_json` gives the JSON object); ``report``, ``sample``, ``replay --spread`` and the fit's own
spread read it through :func:`read_fit_document` or :meth:`FitDocument.from_json`, which check every field's
type once and name the field that is wrong. The document is a JSON object whose ``"format"`` is
:data:`FIT_FORMAT` (written since this tag exists; a document without it is an older fit.json of the same
layout and is read as such). Its keys are listed in the fitting documentation. Non-finite numbers are
written as ``null``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sim2real.errors import DataError
from sim2real.sysid.problem import Unknown
from sim2real.trials.jsonio import jsonable

#: fit.json's format tag (``"format"``); the number counts incompatible changes.
FIT_FORMAT = "sim2real.fit/1"
_FAMILY, _VERSION = FIT_FORMAT.split("/")

Interval = tuple[float, float]


@dataclass(frozen=True)
class Correlation:
    """The fitted unknowns' correlation matrix: ``names`` (P,) label its rows and columns; ``matrix`` (P, P) as
    written (entries None where the fit could not say)."""

    names: tuple[str, ...]
    matrix: tuple[tuple[float | None, ...], ...]


@dataclass(frozen=True)
class FitDocument:
    """A fit report (fit.json), every field typed; what an older file lacks is empty or None.

    Attributes
    ----------
    values : dict of str to float
        Fitted value of each unknown (its label; tied names each), SI unit.
    status : str or None
        ``"converged"`` or ``"not converged"`` (None in files written before statuses).
    problems : tuple of str
        What must be seen before the numbers are used.
    start_values : dict of str to float, or None
    std : dict of str to (float or None), or None
        Standard deviations (None: not determined by the data).
    ci95 : dict of str to ((float, float) or None), or None
        95 % intervals.
    correlation : Correlation or None
    unknowns : tuple of Unknown
        One per unknown, in the correlation's order: its registry names (tied ones together) and its object
        (fit.json ``unknowns``; in a file written before it, read from the correlation's labels and ``tied``).
        Empty without a correlation.
    trace : tuple of dict
        The optimizer's iterations (``iteration``, ``cost``, ...).
    stop_reason : str or None
    warnings : tuple of str
    data : dict
        What the fit was made of and how (``data.uncertainty``, ``data.trials``, ...), as written.
    validation : dict or None
        Held-out trials, prediction blocks, spread calibration, as written.
    solver : dict
        Engine outcome tallies at the start and fitted values.
    dropped_rows : int
    bounds : dict of str to (float, float)
        The bounds each name was fitted within.
    params_file : str or None
        The params file written beside it.
    params_object : dict or None
        Which object the params files hold.
    others : dict
        Every other key as written (versions, tied, undetermined, cost, failures, hard_steps, ...).
    format : str or None
        The format tag as written (None: an older untagged file).
    """

    values: dict[str, float]
    status: str | None = None
    problems: tuple[str, ...] = ()
    start_values: dict[str, float] | None = None
    std: dict[str, float | None] | None = None
    ci95: dict[str, Interval | None] | None = None
    correlation: Correlation | None = None
    unknowns: tuple[Unknown, ...] = ()
    trace: tuple[dict[str, Any], ...] = ()
    stop_reason: str | None = None
    warnings: tuple[str, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)
    validation: dict[str, Any] | None = None
    solver: dict[str, Any] = field(default_factory=dict)
    dropped_rows: int = 0
    bounds: dict[str, Interval] = field(default_factory=dict)
    params_file: str | None = None
    params_object: dict[str, Any] | None = None
    others: dict[str, Any] = field(default_factory=dict)
    format: str | None = FIT_FORMAT

    @property
    def uncertainty(self) -> dict[str, Any]:
        """``data.uncertainty`` (empty when not recorded)."""
        found = self.data.get("uncertainty")
        return found if isinstance(found, dict) else {}

    def to_json(self) -> dict[str, Any]:
        """The JSON object (``format`` first; non-finite numbers as null), in the order of the written file."""
        document: dict[str, Any] = {"format": self.format} if self.format is not None else {}
        document.update({
            "status": self.status, "problems": list(self.problems), "values": self.values,
            "start_values": self.start_values, "std": self.std,
            "ci95": None if self.ci95 is None else {k: None if v is None else list(v) for k, v in self.ci95.items()},
            "correlation": None if self.correlation is None else {
                "names": list(self.correlation.names), "matrix": [list(row) for row in self.correlation.matrix]},
            "unknowns": [u.as_dict() for u in self.unknowns],
            "trace": list(self.trace), "stop_reason": self.stop_reason, "warnings": list(self.warnings),
            "data": self.data, "validation": self.validation, "solver": self.solver,
            "dropped_rows": self.dropped_rows, "bounds": {k: list(v) for k, v in self.bounds.items()}})
        if self.params_file is not None:
            document["params_file"] = self.params_file
        if self.params_object is not None:
            document["params_object"] = self.params_object
        document.update(self.others)
        return jsonable(document)

    @classmethod
    def from_json(cls, document: object, source: str, unusable: list[str] | None = None) -> FitDocument:
        """Read a fit.json object, checking every field's type.

        Parameters
        ----------
        document : object
            The parsed JSON.
        source : str
            Names the document in errors.
        unusable : list, optional
            Read leniently (a report shows what it can): a field other than ``values`` whose type is wrong is
            taken as absent and its key appended here, instead of an error.

        Raises
        ------
        DataError
            Not a JSON object, another format, no ``values``, or a field of the wrong type (one line naming
            ``source`` and the field).
        """
        if not isinstance(document, Mapping):
            raise DataError(f"{source}: not a fit report (expected a JSON object written by 'sim2real fit')")
        check_format(document.get("format"), source)
        read = _Fields(document, source, unusable)
        values = read.numbers("values", required=True)
        assert values is not None
        correlation = read.correlation()
        return cls(
            values=values, status=read.text("status"), problems=read.texts("problems"),
            start_values=read.numbers("start_values"), std=read.optional_numbers("std"),
            ci95=read.intervals("ci95"), correlation=correlation, unknowns=read.unknowns(correlation),
            trace=read.objects("trace"),
            stop_reason=read.text("stop_reason"), warnings=read.texts("warnings"), data=read.object("data") or {},
            validation=read.object("validation"), solver=read.object("solver") or {},
            dropped_rows=read.count("dropped_rows"), bounds=read.bounds(), params_file=read.text("params_file"),
            params_object=read.object("params_object"),
            others={k: v for k, v in document.items() if k not in _FIELDS}, format=read.text("format"))


#: The keys :class:`FitDocument` reads into fields of their own (the others are kept as written).
_FIELDS = frozenset({"format", "status", "problems", "values", "start_values", "std", "ci95", "correlation",
                     "unknowns", "trace",
                     "stop_reason", "warnings", "data", "validation", "solver", "dropped_rows", "bounds",
                     "params_file", "params_object"})


class _Fields:
    """Typed reads of a fit.json object's top-level fields; each error names ``source`` and the field."""

    def __init__(self, document: Mapping[str, Any], source: str, unusable: list[str] | None = None) -> None:
        self.document, self.source, self.unusable = document, source, unusable

    def _bad(self, key: str, expected: str, default: Any) -> Any:
        """A field of the wrong type: an error, or (reading leniently) ``default``, the key noted as unusable."""
        if self.unusable is None or key == "values":
            raise DataError(f"{self.source}: fit.json '{key}' must be {expected}, got {_shown(self.document[key])}")
        self.unusable.append(key)
        return default

    def _get(self, key: str) -> Any:
        return self.document.get(key)

    def text(self, key: str) -> str | None:
        value = self._get(key)
        if value is not None and not isinstance(value, str):
            return self._bad(key, "a string", None)
        return value

    def texts(self, key: str) -> tuple[str, ...]:
        value = self._get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return self._bad(key, "a list of strings", ())
        return tuple(value)

    def count(self, key: str) -> int:
        value = self._get(key)
        if value is None:
            return 0
        if not _is_int(value) or value < 0:
            return self._bad(key, "a count (a whole number, 0 or more)", 0)
        return int(value)

    def object(self, key: str) -> dict[str, Any] | None:
        value = self._get(key)
        if value is not None and not isinstance(value, Mapping):
            return self._bad(key, "an object", None)
        return None if value is None else dict(value)

    def objects(self, key: str) -> tuple[dict[str, Any], ...]:
        value = self._get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
            return self._bad(key, "a list of objects", ())
        return tuple(dict(v) for v in value)

    def numbers(self, key: str, required: bool = False) -> dict[str, float] | None:
        value = self._get(key)
        if value is None and not required:
            return None
        if not isinstance(value, Mapping) or not all(_is_number(v) for v in value.values()):
            if value is None:
                raise DataError(f"{self.source}: fit.json has no 'values' (an object of parameter names to numbers)")
            return self._bad(key, "an object of parameter names to numbers", None)
        return {str(k): float(v) for k, v in value.items()}

    def optional_numbers(self, key: str) -> dict[str, float | None] | None:
        value = self._get(key)
        if value is None:
            return None
        if not isinstance(value, Mapping) or not all(v is None or _is_number(v) for v in value.values()):
            return self._bad(key, "an object of parameter names to numbers or null", None)
        return {str(k): None if v is None else float(v) for k, v in value.items()}

    def intervals(self, key: str) -> dict[str, Interval | None] | None:
        value = self._get(key)
        if value is None:
            return None
        if not isinstance(value, Mapping) or not all(v is None or _is_pair(v, missing=True) for v in value.values()):
            return self._bad(key, "an object of parameter names to [low, high] or null", None)
        # an interval with an end not known (a non-finite number is written as null) is no interval
        return {str(k): None if v is None or None in v else (float(v[0]), float(v[1])) for k, v in value.items()}

    def bounds(self) -> dict[str, Interval]:
        value = self._get("bounds")
        if value is None:
            return {}
        if not isinstance(value, Mapping) or not all(_is_pair(v) for v in value.values()):
            return self._bad("bounds", "an object of parameter names to [low, high]", {})
        return {str(k): (float(v[0]), float(v[1])) for k, v in value.items()}

    def correlation(self) -> Correlation | None:
        value = self._get("correlation")
        if value is None:
            return None
        expected = "an object with 'names' (a list of strings) and 'matrix' (a list of rows of numbers or null)"
        if not isinstance(value, Mapping):
            return self._bad("correlation", expected, None)
        names, matrix = value.get("names"), value.get("matrix")
        if (not isinstance(names, list) or not all(isinstance(n, str) for n in names) or not isinstance(matrix, list)
                or not all(isinstance(row, list) and all(v is None or _is_number(v) for v in row) for row in matrix)):
            return self._bad("correlation", expected, None)
        return Correlation(tuple(names), tuple(tuple(None if v is None else float(v) for v in row) for row in matrix))

    def unknowns(self, correlation: Correlation | None) -> tuple[Unknown, ...]:
        """``unknowns`` checked against the correlation's labels; from those labels in an older file."""
        value = self._get("unknowns")
        if value is None:
            return () if correlation is None else _labelled_unknowns(correlation.names, self._get("tied"))
        expected = "a list of objects with 'names' (a list of strings) and 'object' (a string or null)"
        if not isinstance(value, list) or not all(_is_unknown(v) for v in value):
            return self._bad("unknowns", expected, ())
        found = tuple(Unknown(tuple(v["names"]), v.get("object")) for v in value)
        labels = [u.label for u in found]
        if correlation is not None and labels != list(correlation.names):
            if self.unusable is not None:  # read leniently: the report shows the rest
                self.unusable.append("unknowns")
                return ()
            raise DataError(f"{self.source}: fit.json 'unknowns' ({', '.join(labels)}) do not match the "
                            f"correlation's names ({', '.join(correlation.names)})")
        return found


def _is_unknown(value: object) -> bool:
    """One entry of fit.json ``unknowns``."""
    return (isinstance(value, Mapping) and isinstance(value.get("names"), list) and bool(value["names"])
            and all(isinstance(n, str) and n for n in value["names"])
            and (value.get("object") is None or isinstance(value.get("object"), str)))


def _labelled_unknowns(labels: Sequence[str], tied: object) -> tuple[Unknown, ...]:
    """The unknowns of a fit.json written before ``unknowns``, from its correlation's labels: ``NAME`` shared,
    ``NAME[OBJECT]`` per object, ``A=B`` tied (or tied by ``tied``, lists of names led by the label's)."""
    groups = [g for g in tied if isinstance(g, list) and g] if isinstance(tied, list) else []
    by_leader = {str(g[0]): tuple(str(n) for n in g) for g in groups}
    out = []
    for label in labels:
        name, obj = label, None
        if label.endswith("]") and "[" in label:
            name, _, rest = label[:-1].partition("[")
            obj = rest
        out.append(Unknown(tuple(name.split("=")) if "=" in name else by_leader.get(name, (name,)), obj))
    return tuple(out)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_pair(value: object, missing: bool = False) -> bool:
    """Two numbers (``missing``: or nulls)."""
    return (isinstance(value, (list, tuple)) and len(value) == 2
            and all(_is_number(v) or (missing and v is None) for v in value))


def _shown(value: object) -> str:
    """A short form of a wrong value for an error line."""
    text = json.dumps(value) if isinstance(value, (str, int, float, bool, type(None))) else type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def read_fit_document(path: str | os.PathLike[str], unusable: list[str] | None = None) -> FitDocument:
    """The fit report at ``path`` (``unusable``: read leniently, see :meth:`FitDocument.from_json`).

    Raises
    ------
    Sim2RealError
        Missing or unreadable file, invalid JSON, not an object, a format other than :data:`FIT_FORMAT`, or a
        field of the wrong type (one line each, naming the field).
    """
    from sim2real.paths import read_text_file

    text = read_text_file(path, "fit report")
    try:
        document = json.loads(text)
    except ValueError as err:
        raise DataError(f"{path}: not valid JSON ({' '.join(str(err).split())})") from None
    return FitDocument.from_json(document, str(path), unusable)


def check_format(tag: Any, source: str) -> None:
    """Refuse a format tag other than :data:`FIT_FORMAT` (None, an older untagged fit.json, passes)."""
    if tag is None or tag == FIT_FORMAT:
        return
    family, _, version = str(tag).partition("/")
    if family == _FAMILY and version.isdigit() and int(version) > int(_VERSION):
        raise DataError(f"{source}: fit format {tag} is newer than this sim2real reads ({FIT_FORMAT}); "
                        "upgrade sim2real")
    raise DataError(f"{source}: not a fit report (format {tag!r}, expected {FIT_FORMAT})")

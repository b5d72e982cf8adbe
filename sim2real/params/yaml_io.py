"""Load and save simulator parameters as ROS 2 params YAML, and parse ``--set`` overrides.

File layout (what ``--ros-args --params-file`` reads)::

    /**:                      # or a node name such as sim_node
      ros__parameters:
        box:
          mass: 0.5           # nested keys form the dotted name box.mass
        contact:
          mu_table: 0.35

A file may give only some parameters; the rest keep their nominal values.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from sim2real.errors import DataError, InputError, Sim2RealError
from sim2real.filemodes import write_text_atomic
from sim2real.params.registry import PARAMETERS, ParameterSet, coerce, spec

DEFAULT_NODE_KEY = "/**"
#: The section rcl applies to every node.
WILDCARD_KEY = "/**"
#: Largest ROS 2 params file read (bytes). A complete simulator params file is about 2 KB; the
#: bound refuses, before any parsing, a file whose YAML would take minutes to load.
MAX_PARAMS_BYTES = 256 * 1024


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping of a YAML document gives the same key twice (YAML forbids it; PyYAML keeps the last).

    Attributes
    ----------
    key : object
        The key.
    line, first_line : int
        1-based lines of the repeated key and of its first occurrence.
    """

    def __init__(self, key: object, line: int, first_line: int, node: yaml.Node, key_node: yaml.Node) -> None:
        super().__init__("while constructing a mapping", node.start_mark, f"found duplicate key {key!r}",
                         key_node.start_mark)
        self.key, self.line, self.first_line = key, line, first_line


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """``yaml.safe_load``'s loader (libyaml's parser when available) that refuses duplicate keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """Refuse a key given twice in one mapping (``<<`` merge keys may be overridden), then build it."""
        if isinstance(node, yaml.MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    seen = key in first_line
                except TypeError:  # an unhashable key: the base class says so
                    continue
                if seen:
                    raise DuplicateKeyError(key, line, first_line[key], node, key_node)
                first_line[key] = line
        return super().construct_mapping(node, deep=deep)


def _leaves(tree: Mapping[Any, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted name, value)`` of every leaf of a nested mapping, lazily (in file order), so that the
    first bad name or value is refused before the rest of the tree is walked."""
    for key, value in tree.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            yield from _leaves(value, name)
        else:
            yield name, value


def _checked_value(name: str, value: object) -> float | int:
    """``value`` checked against the registry entry of ``name`` (:func:`coerce`); a list or other
    container is refused by its kind and length, never by its text (which may be huge)."""
    if isinstance(value, (list, tuple, set, frozenset)):
        spec(name)  # an unknown name is the first problem
        raise InputError(f"parameter '{name}' must be a number ({spec(name).kind.__name__}), got a list of "
                         f"{len(value)} item(s)")
    return coerce(name, value)


def parse_params_document(document: object, source: str, node: str | None = None) -> dict[str, float | int]:
    """Extract validated parameter values from a parsed params YAML document.

    Parameters
    ----------
    document : object
        The result of ``yaml.safe_load`` on a params file.
    source : str
        File name used in error messages.
    node : str, optional
        Node name. Sections ``/**``, ``<node>`` and ``/**/<node>`` apply, in file order.
        When None, every section applies.

    Returns
    -------
    dict
        ``{dotted name: value}`` of the parameters the document sets.
    """
    if not isinstance(document, Mapping) or not document:
        raise DataError(f"{source}: not a ROS 2 params file (expected 'node_name: ros__parameters: ...')")
    values: dict[str, float | int] = {}
    for node_key, section in document.items():
        if node is not None and str(node_key) not in (DEFAULT_NODE_KEY, node, f"/**/{node}", f"/{node}"):
            continue
        if not isinstance(section, Mapping) or "ros__parameters" not in section:
            raise DataError(f"{source}: section '{node_key}' has no 'ros__parameters' mapping")
        params = section["ros__parameters"]
        if not isinstance(params, Mapping):
            raise DataError(f"{source}: 'ros__parameters' of '{node_key}' is not a mapping")
        for name, value in _leaves(params):
            try:
                values[name] = _checked_value(name, value)
            except Sim2RealError as err:
                raise DataError(f"{source}: {err}") from None
    return values


def load_params(path: str | os.PathLike[str], base: ParameterSet | None = None,
                node: str | None = None) -> ParameterSet:
    """Read a ROS 2 params YAML file into a complete :class:`ParameterSet`.

    Parameters
    ----------
    path : path-like
        The params file.
    base : ParameterSet, optional
        Values for names the file does not set (default: nominal).
    node : str, optional
        Node name whose sections apply (default: all sections).

    Raises
    ------
    Sim2RealError
        Missing or unreadable file, one larger than :data:`MAX_PARAMS_BYTES`, malformed YAML, a
        duplicate key, unknown name, wrong type, out of bounds.
    """
    path = Path(path)
    document = read_yaml(path, "params file", max_bytes=MAX_PARAMS_BYTES)
    values = parse_params_document(document, str(path), node)
    return (base or ParameterSet.nominal()).replace(values)


def read_yaml(path: str | os.PathLike[str], what: str, max_bytes: int | None = None) -> object:
    """Parse a YAML file, turning every failure into a one-line :class:`Sim2RealError`.

    Every YAML input of the project is read here: a FIFO, a device, a file larger than
    ``max_bytes`` or bytes that are not UTF-8 are refused before parsing, and a key given twice
    in one mapping is refused (PyYAML would keep the last silently).

    Parameters
    ----------
    path : path-like
        The file.
    what : str
        What the file is, for messages (``"params file"``, ``"experiment file"``, ...).
    max_bytes : int, optional
        Size limit (default :data:`sim2real.paths.MAX_TEXT_BYTES`).

    Returns
    -------
    object
        The document (None for an empty file).

    Raises
    ------
    Sim2RealError
        One line naming the file (and the line, for a syntax error or a duplicate key).
    """
    from sim2real.paths import MAX_TEXT_BYTES, read_text_file

    path = Path(path)
    text = read_text_file(path, what, max_bytes=MAX_TEXT_BYTES if max_bytes is None else max_bytes)
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except DuplicateKeyError as err:
        raise DataError(f"{path}: duplicate key {err.key!r} at line {err.line} (first at line "
                        f"{err.first_line}); a key may appear once in a mapping") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = " ".join(str(getattr(err, "problem", None) or "invalid syntax").split())
        raise DataError(f"{path}: malformed YAML{where}: {problem}") from None
    except RecursionError:
        raise DataError(f"{path}: YAML nested too deeply") from None


def read_node_section(path: str | os.PathLike[str], node: str, what: str) -> Mapping[str, Any]:
    """The ``node: ros__parameters:`` mapping of a ROS 2 params file (nested, not flattened).

    Raises
    ------
    Sim2RealError
        Missing or malformed file, or no such section.
    """
    document = read_yaml(path, what, max_bytes=MAX_PARAMS_BYTES)
    try:
        section = document[node]["ros__parameters"]  # type: ignore[index]
    except (TypeError, KeyError):
        raise DataError(f"{path}: expected '{node}: ros__parameters: ...'") from None
    if not isinstance(section, Mapping):
        raise DataError(f"{path}: '{node}: ros__parameters' is not a mapping")
    return section


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = _merged(out[key], value) if isinstance(value, Mapping) and isinstance(out.get(key), Mapping) \
            else value
    return out


def node_parameters(path: str | os.PathLike[str], node: str, what: str) -> Mapping[str, Any]:
    """The parameters a ROS 2 params file gives node ``node`` (nested): its ``/**`` section, then
    its own section over it, as rcl applies them.

    Raises
    ------
    Sim2RealError
        Missing or malformed file, or neither section.
    """
    document = read_yaml(path, what, max_bytes=MAX_PARAMS_BYTES)
    sections = []
    for key in (WILDCARD_KEY, node, f"/{node}"):
        entry = document.get(key) if isinstance(document, Mapping) else None
        if entry is None:
            continue
        params = entry.get("ros__parameters") if isinstance(entry, Mapping) else None
        if not isinstance(params, Mapping):
            raise DataError(f"{path}: '{key}: ros__parameters' is not a mapping")
        sections.append(params)
    if not sections:
        raise DataError(f"{path}: expected '{WILDCARD_KEY}: ros__parameters: ...' or "
                        f"'{node}: ros__parameters: ...'")
    merged: dict[str, Any] = {}
    for params in sections:
        merged = _merged(merged, params)
    return merged


def nest_dotted(values: Mapping[str, Any]) -> dict[str, Any]:
    """``{"a.b": 1, "a.c": 2}`` → ``{"a": {"b": 1, "c": 2}}``: dotted parameter names as a params file nests them."""
    tree: dict[str, Any] = {}
    for name, value in values.items():
        node = tree
        *groups, leaf = name.split(".")
        for group in groups:
            node = node.setdefault(group, {})
        node[leaf] = value
    return tree


def params_to_document(params: Mapping[str, float], node_key: str = DEFAULT_NODE_KEY,
                       only: Iterable[str] | None = None) -> dict[str, Any]:
    """Nested ROS 2 params document of ``params`` (all names, or ``only`` these)."""
    names = only if only is not None else params.keys()
    values = {name: int(params[name]) if spec(name).kind is int else float(params[name]) for name in names}
    return {node_key: {"ros__parameters": nest_dotted(values)}}


def save_params(path: str | os.PathLike[str], params: Mapping[str, float], node_key: str = DEFAULT_NODE_KEY,
                header: str | None = None) -> Path:
    """Write ``params`` as a ROS 2 params YAML file, atomically (mode: the umask's, 0644 under 022).

    Floats are written with full precision (``repr``), so a load of the file gives back
    exactly the same values.

    Parameters
    ----------
    path : path-like
        Destination; parent directories are created.
    params : mapping
        ``{dotted name: value}``; typically a complete :class:`ParameterSet`.
    node_key : str
        Top-level node key; ``/**`` applies to every node.
    header : str, optional
        Comment lines written at the top of the file.
    """
    path = Path(path)
    document = params_to_document(params, node_key)
    body = yaml.safe_dump(document, sort_keys=False, default_flow_style=False)
    comment = "".join(f"# {line}\n" for line in header.splitlines()) if header else ""
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(path, comment + body)  # the umask's mode: nodes of other users read it too


def parse_override(text: str) -> tuple[str, float | int]:
    """Parse one ``NAME=VALUE`` override (as given to ``--set``).

    Raises
    ------
    Sim2RealError
        Missing ``=``, unknown name, non-numeric value, out of bounds.
    """
    if "=" not in text:
        raise InputError(f"a parameter override expects NAME=VALUE, got '{text}'", option="overrides")
    name, raw = (part.strip() for part in text.split("=", 1))
    spec(name)
    try:
        value: float | int = int(raw) if spec(name).kind is int else float(raw)
    except ValueError:
        raise InputError(f"parameter override {name}: '{raw}' is not a number", option="overrides") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"parameter override {name}: value must be finite, got '{raw}'", option="overrides")
    return name, coerce(name, value)


def apply_overrides(params: ParameterSet, overrides: Iterable[str]) -> ParameterSet:
    """Apply ``NAME=VALUE`` strings (later ones win) to ``params``."""
    values = dict(parse_override(text) for text in overrides)
    return params.replace(values) if values else params


def resolve_params(params_file: str | os.PathLike[str] | None, overrides: Iterable[str] = ()) -> ParameterSet:
    """The parameter set a command runs with: nominal, then the file, then ``--set`` overrides."""
    params = load_params(params_file) if params_file else ParameterSet.nominal()
    return apply_overrides(params, overrides)


def describe_registry() -> str:
    """A plain-text table of every registered parameter (used by ``--help`` texts)."""
    rows = [f"  {p.name:<22} {p.unit:<8} nominal {p.nominal!r:<8} [{p.lower!r}, {p.upper!r}]  {p.description}"
            for p in PARAMETERS]
    return "\n".join(rows)

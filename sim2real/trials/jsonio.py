"""Small JSON helpers: NumPy-aware conversion and atomic writes."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.errors import DataError, InputError


def jsonable(value: Any) -> Any:
    """``value`` with NumPy scalars/arrays, tuples and paths turned into plain JSON types.

    Non-finite floats become None (JSON has no NaN).
    """
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Path):
        return str(value)
    return value


def write_json_atomic(path: Path, content: Mapping[str, Any]) -> Path:
    """Write ``content`` as indented JSON to ``path`` through a temporary file and a rename.

    The file gets the mode the umask asks for (0644 under umask 022), not mkstemp's 0600.
    """
    from sim2real.filemodes import write_text_atomic

    return write_text_atomic(path, json.dumps(jsonable(content), indent=2) + "\n")


def read_json(path: Path, what: str) -> dict[str, Any]:
    """Read a JSON object from ``path``; one-line Sim2RealError if unreadable or not an object."""
    from sim2real.paths import read_text_file

    if not Path(path).exists():
        raise InputError(f"{what} {path} does not exist")
    text = read_text_file(path, what)
    try:
        content = json.loads(text)
    except json.JSONDecodeError as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise DataError(f"cannot read {what} {path}: {reason}") from None
    if not isinstance(content, dict):
        raise DataError(f"{what} {path} must hold a JSON object, got {type(content).__name__}")
    return content

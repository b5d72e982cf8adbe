"""The lazy faces of sysid's subpackages: a name a caller imports from ``sim2real.sysid.SUB`` is looked up in
the module of ``SUB`` that defines it (the subpackage's ``_FACE``), on first use (PEP 562 ``__getattr__``)."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


def face_attribute(package: str, face: Mapping[str, str], name: str) -> Any:
    """``package.name`` from the module ``face[name]`` of ``package``: that module's attribute as it is now (not
    kept in the package, so a test that replaces it is seen, every time).

    Raises
    ------
    AttributeError
        ``name`` is not in the face.
    """
    module = face.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{package}.{module}"), name)

"""fit.json: the one format tag and the one reader (``sim2real fit`` writes it; ``report``,
``sample`` and ``replay --spread`` read it).

The document is a JSON object whose ``"format"`` is :data:`FIT_FORMAT` (written since this tag
exists; a document without it is an older fit.json of the same layout and is read as such). Its
keys are listed in the fitting documentation (``status``, ``problems``, ``values``,
``start_values``, ``std``, ``ci95``, ``correlation``, ``trace``, ``data``, ...).
"""

from __future__ import annotations

import json
import os
from typing import Any

from sim2real.errors import Sim2RealError

#: fit.json's format tag (``"format"``); the number counts incompatible changes.
FIT_FORMAT = "sim2real.fit/1"
_FAMILY, _VERSION = FIT_FORMAT.split("/")


def read_fit_document(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON object of a fit report at ``path``.

    Raises
    ------
    Sim2RealError
        Missing or unreadable file, invalid JSON, not an object, or a format other than
        :data:`FIT_FORMAT` (one line each).
    """
    from sim2real.paths import read_text_file

    text = read_text_file(path, "fit report")
    try:
        document = json.loads(text)
    except ValueError as err:
        raise Sim2RealError(f"{path}: not valid JSON ({' '.join(str(err).split())})") from None
    if not isinstance(document, dict):
        raise Sim2RealError(f"{path}: not a fit report (expected a JSON object written by 'sim2real fit')")
    check_format(document.get("format"), str(path))
    return document


def check_format(tag: Any, source: str) -> None:
    """Refuse a format tag other than :data:`FIT_FORMAT` (None, an older untagged fit.json, passes)."""
    if tag is None or tag == FIT_FORMAT:
        return
    family, _, version = str(tag).partition("/")
    if family == _FAMILY and version.isdigit() and int(version) > int(_VERSION):
        raise Sim2RealError(f"{source}: fit format {tag} is newer than this sim2real reads ({FIT_FORMAT}); "
                            "upgrade sim2real")
    raise Sim2RealError(f"{source}: not a fit report (format {tag!r}, expected {FIT_FORMAT})")

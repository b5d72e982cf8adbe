"""Where the package's data files (config, urdf, launch) live.

Installed by colcon they are under ``share/sim2real``; in a source checkout or an
editable install they sit next to the ``sim2real`` package.
"""

from __future__ import annotations

import os
from pathlib import Path

_SOURCE_ROOT = Path(__file__).resolve().parent.parent


def share_dir() -> Path:
    """Return the directory that holds ``config/``, ``urdf/`` and ``launch/``.

    Returns
    -------
    pathlib.Path
        The source checkout root if it has ``config/``, otherwise the first
        ``share/sim2real`` found on ``AMENT_PREFIX_PATH``.
    """
    if (_SOURCE_ROOT / "config").is_dir() and (_SOURCE_ROOT / "urdf").is_dir():
        return _SOURCE_ROOT
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        candidate = Path(prefix) / "share" / "sim2real"
        if (candidate / "config").is_dir():
            return candidate
    return _SOURCE_ROOT


def config_file(name: str) -> Path:
    """Path of ``config/<name>`` in the package share directory."""
    return share_dir() / "config" / name


def urdf_file(name: str = "xarm6.urdf") -> Path:
    """Path of ``urdf/<name>`` in the package share directory."""
    return share_dir() / "urdf" / name

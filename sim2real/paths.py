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


#: Largest text input (params, world, experiment YAML; JSON sidecars) read, in bytes.
MAX_TEXT_BYTES = 16 * 1024 * 1024


def read_text_file(path: str | os.PathLike[str], what: str, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of a regular file, or a one-line :class:`~sim2real.errors.Sim2RealError`.

    A FIFO, device or directory is refused before it is opened (opening a FIFO would block
    until a writer appears), so are files larger than ``max_bytes`` and bytes that are not UTF-8.

    Parameters
    ----------
    path : path-like
        The file.
    what : str
        What it is, for messages (``"params file"``, ``"trial.json"``, ...).
    max_bytes : int
        Size limit (bytes).
    """
    import stat

    from sim2real.errors import Sim2RealError

    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise Sim2RealError(f"{what} not found: {path}") from None
    except OSError as err:
        raise Sim2RealError(f"cannot read {what} {path}: {err.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file (FIFO, device or socket)"
        raise Sim2RealError(f"{what} {path} is {kind}")
    if info.st_size > max_bytes:
        raise Sim2RealError(f"{what} {path} is {info.st_size} bytes, more than the {max_bytes} a {what} may have")
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as err:
        raise Sim2RealError(f"cannot read {what} {path}: {err.strerror}") from None
    if len(data) > max_bytes:
        raise Sim2RealError(f"{what} {path} is larger than the {max_bytes} bytes a {what} may have")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise Sim2RealError(f"{what} {path} is not UTF-8 text (byte {err.start}: {data[err.start]:#04x}); "
                            f"is it a binary file?") from None

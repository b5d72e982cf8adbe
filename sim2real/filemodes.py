"""Permissions of the files and directories sim2real writes: the user's umask, as ``open`` gives.

Outputs are written atomically (:func:`staged_file`, :func:`write_text_atomic`, :func:`staging_dir`): into a
temporary file (:func:`tempfile.mkstemp`) or a staging directory (:func:`tempfile.mkdtemp`) that is then renamed
to its final name. Those two create
mode 0600 and 0700 whatever the umask, and a rename keeps the mode, so without a correction
``trial.json``, ``run.json``, a fitted params file or a report folder could be read by nobody
but their owner (a node started as another user, a colleague, a web server). The helpers here
give such a file or directory the mode a plain ``open(path, "w")`` or ``mkdir`` would have
given it: 0666 or 0777 minus the umask (0644 / 0755 under the usual umask 022).
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process umask, read without changing it where the system allows.

    Linux reports it in ``/proc/self/status`` (kernel 4.7 and later); elsewhere it is read by
    setting and restoring it under a lock (another thread creating a file in that instant
    could see umask 0o077, never a wider one).

    Returns
    -------
    int
        The umask, e.g. ``0o022``.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o077)
        os.umask(mask)
    return mask


def file_mode() -> int:
    """Mode of a new regular file under the current umask (0o644 under umask 0o022)."""
    return 0o666 & ~current_umask()


def dir_mode() -> int:
    """Mode of a new directory under the current umask (0o755 under umask 0o022)."""
    return 0o777 & ~current_umask()


def follow_umask(target: int | str | os.PathLike[str], directory: bool = False) -> None:
    """Give an open file descriptor, a file or a directory the mode the umask asks for.

    Parameters
    ----------
    target : int or path-like
        A file descriptor (``os.fchmod``) or a path (``os.chmod``).
    directory : bool
        ``target`` is a directory (0o777 minus the umask instead of 0o666).
    """
    mode = dir_mode() if directory else file_mode()
    if isinstance(target, int):
        os.fchmod(target, mode)
    else:
        os.chmod(target, mode)


def temp_file(directory: str | os.PathLike[str], prefix: str, suffix: str = "") -> tuple[int, Path]:
    """A new, uniquely named file in ``directory``, open for writing, with the umask's mode.

    Like :func:`tempfile.mkstemp` (which always creates 0o600), for files that are renamed to their
    final name when complete.

    Returns
    -------
    (int, pathlib.Path)
        The open file descriptor (the caller closes it) and the file's path.
    """
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=directory)
    follow_umask(fd)
    return fd, Path(name)


@contextmanager
def staged_file(path: str | os.PathLike[str]) -> Iterator[TextIO]:
    """Write a text file atomically: a hidden temporary sibling of ``path`` (UTF-8, the umask's mode), open for
    the ``with`` block, renamed to ``path`` when the block ends without an error and deleted when it raises.

    Readers see the old file or the whole new one, never a part; other files written inside the block come
    before this one, so ``path`` appearing can mark a set of outputs complete.
    """
    path = Path(path)
    fd, tmp = temp_file(path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yield handle
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` atomically (see :func:`staged_file`); returns the path."""
    with staged_file(path) as handle:
        handle.write(text)
    return Path(path)


def staging_dir(directory: str | os.PathLike[str], prefix: str, suffix: str = "") -> Path:
    """A new, uniquely named staging directory in ``directory``, with the umask's mode.

    Like :func:`tempfile.mkdtemp` (which always creates 0o700), for output trees that are
    renamed to their final name when complete.

    Parameters
    ----------
    directory : path-like
        Where to create it (the final output's parent, so that the rename stays on one file system).
    prefix, suffix : str
        Name parts (use a leading ``.`` to keep it hidden while being written).

    Returns
    -------
    pathlib.Path
        The new directory.
    """
    path = Path(tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=directory))
    follow_umask(path, directory=True)
    return path

"""Where the package's data files (config, urdf, launch) live.

In a source checkout or an editable install they sit next to the ``sim2real`` package. Installed,
they are under ``<prefix>/share/sim2real``: colcon puts them into its install space (found
through ``AMENT_PREFIX_PATH`` once ``install/setup.bash`` is sourced), ``pip install`` into the
environment's prefix (``sys.prefix``, or the user base with ``--user``, or the ``--prefix`` given;
the installed distribution's file list says which). Also the one place that points Fast DDS at
the loopback profile among them (:func:`use_loopback_profile`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, MutableMapping
from pathlib import Path

PACKAGE = "sim2real"
_SOURCE_ROOT = Path(__file__).resolve().parent.parent


def _is_share(folder: Path) -> bool:
    """``folder`` holds the package's data: ``config/`` and ``urdf/``."""
    return (folder / "config").is_dir() and (folder / "urdf").is_dir()


def _distribution_shares() -> Iterator[Path]:
    """``share/sim2real`` folders named by the installed distribution's file list (pip's RECORD)."""
    from importlib import metadata

    try:
        files = metadata.distribution(PACKAGE).files or []
    except metadata.PackageNotFoundError:
        return
    marker = ("share", PACKAGE, "package.xml")
    for item in files:
        if tuple(item.parts[-3:]) == marker:
            yield Path(os.path.normpath(item.locate())).parent


def share_candidates() -> Iterator[Path]:
    """Every place the data files may be, in the order :func:`share_dir` tries them.

    The source checkout (when it has ``package.xml``), then ``share/sim2real`` under each
    ``AMENT_PREFIX_PATH`` entry (colcon), the one the installed distribution's file list names
    (any ``pip install``, also with ``--user`` or ``--prefix``), and the one under ``sys.prefix``
    (a venv or a system prefix) and under the user base (``pip install --user``).
    """
    if (_SOURCE_ROOT / "package.xml").is_file():
        yield _SOURCE_ROOT
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix:
            yield Path(prefix) / "share" / PACKAGE
    yield from _distribution_shares()
    yield Path(sys.prefix) / "share" / PACKAGE
    import site
    import sysconfig

    user_base = getattr(site, "USER_BASE", None) or sysconfig.get_config_var("userbase")
    if user_base:
        yield Path(user_base) / "share" / PACKAGE


def share_dir() -> Path:
    """Return the directory that holds ``config/``, ``urdf/`` and ``launch/``.

    Returns
    -------
    pathlib.Path
        The first of :func:`share_candidates` that has ``config/`` and ``urdf/``; the source
        root when none has (file lookups then name a path next to the package that does not exist).
    """
    for candidate in share_candidates():
        if _is_share(candidate):
            return candidate
    return _SOURCE_ROOT


def config_file(name: str) -> Path:
    """Path of ``config/<name>`` in the package share directory."""
    return share_dir() / "config" / name


def urdf_file(name: str = "xarm6.urdf") -> Path:
    """Path of ``urdf/<name>`` in the package share directory."""
    return share_dir() / "urdf" / name


#: The Fast DDS profile that binds every DDS listening port to 127.0.0.1 (``config/``).
LOOPBACK_PROFILE = "fastdds_loopback.xml"
#: Environment variables Fast DDS / rmw_fastrtps read a profiles file from (3.x name first; the
#: second is the deprecated 2.x name, still honoured by rmw_fastrtps_cpp 9.3).
PROFILE_VARIABLES: tuple[str, ...] = ("FASTDDS_DEFAULT_PROFILES_FILE", "FASTRTPS_DEFAULT_PROFILES_FILE")


def loopback_profile() -> Path:
    """Path of the loopback-only Fast DDS profile, ``config/fastdds_loopback.xml``."""
    return config_file(LOOPBACK_PROFILE)


def use_loopback_profile(env: MutableMapping[str, str] | None = None) -> Path | None:
    """Point Fast DDS at :func:`loopback_profile` for a local run, unless told otherwise.

    Sets ``FASTDDS_DEFAULT_PROFILES_FILE`` only when ``ROS_AUTOMATIC_DISCOVERY_RANGE`` is
    ``LOCALHOST`` (a user who asked for ``SUBNET`` asked to be reachable) and neither profiles
    variable is set (a profile of the user's own wins). Fast DDS reads the variable when a
    process creates its first DDS participant, so set it before that (children inherit it).

    Parameters
    ----------
    env : mutable mapping, optional
        The environment to change (default ``os.environ``).

    Returns
    -------
    pathlib.Path or None
        The profile now in effect through this call, or None when nothing was set (another
        profile chosen, a wider discovery range, or the file is missing from this install).
    """
    env = os.environ if env is None else env
    if env.get("ROS_AUTOMATIC_DISCOVERY_RANGE") != "LOCALHOST" or any(env.get(name) for name in PROFILE_VARIABLES):
        return None
    profile = loopback_profile()
    if not profile.is_file():  # Fast DDS would log an error and use its defaults
        return None
    env[PROFILE_VARIABLES[0]] = str(profile)
    return profile


#: Largest text input (params, world, experiment YAML; JSON sidecars) read, in bytes.
MAX_TEXT_BYTES = 16 * 1024 * 1024


def check_regular_file(path: str | os.PathLike[str], what: str) -> os.stat_result:
    """Refuse, before it is opened, an input that is missing or not a regular file.

    Opening a FIFO blocks until a writer appears, and a device or socket is no recording: every
    file a command reads goes through here (or :func:`read_text_file`) first.

    Parameters
    ----------
    path : path-like
        The file (symbolic links are followed).
    what : str
        What it is, for messages (``"bag"``, ``"cube-toss file"``, ...).

    Returns
    -------
    os.stat_result
        The file's status.

    Raises
    ------
    Sim2RealError
        One line: not found, unreadable, a directory, or a FIFO, device or socket.
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
    return info


def check_bag_files(directory: str | os.PathLike[str]) -> None:
    """Refuse a rosbag2 directory that holds a FIFO, device or socket (its metadata.yaml or a storage
    file, which the bag reader would block on); sub-directories and regular files pass.

    Raises
    ------
    Sim2RealError
        One line naming the entry.
    """
    import stat

    from sim2real.errors import Sim2RealError

    for entry in sorted(Path(directory).iterdir()):
        try:
            mode = entry.stat().st_mode
        except OSError:
            continue  # a dangling link: the reader names what it misses
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise Sim2RealError(f"bag {directory}: {entry.name} is not a regular file (FIFO, device or socket)")


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
    from sim2real.errors import Sim2RealError

    path = Path(path)
    info = check_regular_file(path, what)
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

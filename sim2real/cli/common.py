"""Argument helpers shared by subcommands."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TextIO

from sim2real.interrupts import is_interrupt
from sim2real.params import ParameterSet


def add_param_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--params FILE`` and repeatable ``--set NAME=VALUE``."""
    parser.add_argument("--params", metavar="FILE",
                        help="ROS 2 params YAML (.yaml or .yml) with simulator parameters (default: nominal values)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                        help="override one parameter, e.g. --set box.mass=0.62 (SI units; repeatable)")


def params_from_args(args: argparse.Namespace) -> ParameterSet:
    """The parameter set selected by ``--params`` and ``--set``."""
    from sim2real.params import resolve_params

    if args.params is not None:
        check_yaml_name(args.params, "--params")
    return resolve_params(args.params, args.overrides)


#: Name endings of the ROS 2 params YAML files the options read (``--params``, ``--experiment``, ``--world``, ...).
YAML_SUFFIXES: tuple[str, ...] = (".yaml", ".yml")


def check_yaml_name(path: str | os.PathLike[str], option: str) -> Path:
    """Refuse, before reading it, a file given where a YAML file (ROS 2 params, experiment, world) is expected
    whose name does not end in ``.yaml`` or ``.yml`` (``--params fit.txt``, ``--params fit.json``: most likely
    the wrong file).

    Raises
    ------
    Sim2RealError
        One line naming ``option`` and the file.
    """
    from sim2real.errors import Sim2RealError

    path = Path(path)
    if path.suffix.lower() not in YAML_SUFFIXES:
        raise Sim2RealError(f"{option} {path}: expected a YAML file (.yaml or .yml), as every params, experiment "
                            f"and world file is; rename it if it is one")
    return path


def parse_name_list(text: str | None, option: str = "--grad") -> list[str]:
    """Split a comma-separated list of parameter names and check each against the registry.

    None (the option not given) is no name; an empty list or an empty entry (``--grad ,,``,
    ``a,,b``) is refused, as is a name given twice.

    Raises
    ------
    Sim2RealError
        One line naming ``option``.
    """
    from sim2real.errors import Sim2RealError
    from sim2real.params import spec

    if text is None:
        return []
    names = [part.strip() for part in text.split(",")]
    if not any(names):
        raise Sim2RealError(f"{option} {text!r} names no parameter; give NAME[,NAME...] or leave {option} out")
    if not all(names):
        raise Sim2RealError(f"{option} {text!r} has an empty entry between commas")
    for name in names:
        spec(name)
        if names.count(name) > 1:
            raise Sim2RealError(f"{option}: parameter '{name}' is given twice")
    return names


#: Exit status of a command that finished and wrote its output, but some trials failed.
EXIT_TRIALS_FAILED = 1
#: Exit status of a fit that finished and wrote its files but did not converge or has problems.
EXIT_FIT_PROBLEMS = 3


def use_color(stream: TextIO) -> bool:
    """Whether to colour ``stream``: a terminal, and ``NO_COLOR`` unset (https://no-color.org)."""
    import os

    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty() and not os.environ.get("NO_COLOR"))


def red(text: str, stream: TextIO) -> str:
    """``text`` in bold red (ANSI) when ``stream`` is a colour terminal, else unchanged."""
    return f"\033[1;31m{text}\033[0m" if use_color(stream) else text


def _first_existing_ancestor(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists() or candidate.is_symlink():
            return candidate
    return Path(".")


def check_output_location(path: str | os.PathLike[str], option: str = "--out") -> Path:
    """Check, before any work, that ``path`` can be created: its nearest existing ancestor is a
    directory (not a file: ``--out afile.txt/x`` is refused) in which this process can create
    entries.

    Permission bits are not enough (root passes them everywhere, ``/proc`` and read-only mounts
    refuse anyway), so an entry is created there and removed at once: a hidden, empty directory
    ``.sim2real-probe-*``, the only trace being the directory's modification time.

    Parameters
    ----------
    path : path-like
        The file or directory the command will create.
    option : str
        The option that named it, for messages.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    Sim2RealError
        One line naming ``option``, the path and the reason.
    """
    import tempfile

    from sim2real.errors import Sim2RealError

    path = Path(path)
    if not str(path).strip():
        raise Sim2RealError(f"{option} must not be empty")
    ancestor = _first_existing_ancestor(path.parent if path.name else path)
    if not ancestor.is_dir():
        raise Sim2RealError(f"{option} {path}: {ancestor} is a file, not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise Sim2RealError(f"{option} {path}: cannot write in {ancestor} (permission denied)")
    probe = None
    try:
        probe = tempfile.mkdtemp(prefix=".sim2real-probe-", dir=ancestor)
    except OSError as err:
        raise Sim2RealError(f"{option} {path}: cannot create anything in {ancestor} "
                            f"({err.strerror or type(err).__name__})") from None
    finally:
        if probe is not None:
            os.rmdir(probe)
    return path


@contextlib.contextmanager
def removed_on_interrupt(*outputs: str | os.PathLike[str]) -> Iterator[None]:
    """Remove, when the block is interrupted (Ctrl-C, SIGTERM), the hidden staging entries that
    appeared next to ``outputs`` meanwhile: ``.<name>.*`` in each output's directory.

    Writers stage an output under such a name and rename it when complete, removing it on any
    error; but an interrupt landing between the staging entry's creation and the writer's own
    clean-up (a few instructions, or the opening of a bag) would leave it behind.

    Parameters
    ----------
    outputs : path-like
        The files or directories the block creates.
    """
    patterns = [(Path(out).parent, f".{Path(out).name}.*") for out in outputs]
    before = {entry for parent, pattern in patterns if parent.is_dir() for entry in parent.glob(pattern)}
    try:
        yield
    except BaseException as err:
        if not is_interrupt(err):
            raise
        for parent, pattern in patterns:
            for entry in set(parent.glob(pattern)) - before if parent.is_dir() else ():
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
        raise


def check_given_once(paths: Sequence[str], what: str,
                     key: Callable[[str], str] = os.path.realpath) -> None:
    """Refuse an input given twice (also as another spelling of the same path, or a link to it): a run
    compared with itself, a recording imported twice as two trials.

    Parameters
    ----------
    paths : sequence of str
        The inputs as given.
    what : str
        What each is, for messages (``"run directory"``, ``"bag"``).
    key : callable
        The identity of an input (default: its real path).

    Raises
    ------
    Sim2RealError
        Naming the input and both spellings.
    """
    from sim2real.errors import Sim2RealError

    seen: dict[str, str] = {}
    for given in paths:
        identity = key(given)
        if identity in seen:
            also = f" (as {seen[identity]} and {given})" if seen[identity] != given else ""
            raise Sim2RealError(f"{what} {given} is given twice{also}; give each {what} once")
        seen[identity] = given


def check_output_file(path: str | os.PathLike[str], force: bool, ours: Callable[[Path], bool],
                      option: str = "--out") -> Path:
    """Check an output file before any work; never replace a file this tool did not write.

    An existing ``path`` is refused unless ``force`` is set, and even then unless ``ours(path)``
    recognises it as this tool's own output (e.g. a params YAML with the sim2real header); a
    directory, FIFO or other non-regular file is always refused.

    Raises
    ------
    Sim2RealError
        One line naming ``option``, the path and the reason.
    """
    from sim2real.errors import Sim2RealError

    path = check_output_location(path, option)
    if not path.exists() and not path.is_symlink():
        return path
    if path.is_dir():
        raise Sim2RealError(f"{option} {path} is a directory; give a file name")
    if not path.is_file():
        raise Sim2RealError(f"{option} {path} exists and is not a regular file")
    if not force:
        raise Sim2RealError(f"{option} {path} exists; pass --force to replace it")
    if not ours(path):
        raise Sim2RealError(f"{option} {path} exists and was not written by sim2real; not replacing it "
                            f"(even with --force)")
    if not os.access(path, os.W_OK):
        raise Sim2RealError(f"{option} {path}: cannot replace it (permission denied)")
    return path


def is_sim2real_params_file(path: Path) -> bool:
    """Whether ``path`` opens with the comment header sim2real writes on params YAML files
    (``# sim2real simulator parameters ...`` from ``params``, ``# Fitted by sim2real fit ...``)."""
    try:
        with path.open("rb") as handle:
            first = handle.readline(4096).decode("utf-8", "replace")
    except OSError:
        return False
    return first.startswith("#") and "sim2real" in first


def is_fit_report(path: Path) -> bool:
    """Whether ``path`` is a fit report (fit.json) that ``sim2real fit`` wrote: its reader takes it, with a status
    and start values."""
    from sim2real.errors import Sim2RealError
    from sim2real.sysid.files import read_fit_document

    try:
        document = read_fit_document(path)
    except (Sim2RealError, OSError):
        return False
    return document.status is not None and document.start_values is not None


def finite_float(text: str) -> float:
    """argparse type: a finite float (NaN and inf are refused)."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def bounded_float(low: float, high: float, *, low_open: bool = False,
                  high_open: bool = False) -> Callable[[str], float]:
    """argparse type: a finite float in [low, high] (ends excluded with ``low_open`` / ``high_open``)."""

    def parse(text: str) -> float:
        value = finite_float(text)
        if value < low or value > high or (low_open and value == low) or (high_open and value == high):
            left, right = "(" if low_open else "[", ")" if high_open else "]"
            raise argparse.ArgumentTypeError(f"must be in {left}{low:g}, {high:g}{right}, got {text}")
        return value

    return parse


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """argparse type: an integer in [low, high]."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be in [{low}, {high}], got {value}")
        return value

    return parse


def executor_spec(text: str) -> str:
    """argparse type of ``--executor``: ``local``, ``ray`` or ``ray:ADDRESS`` (checked, returned as given)."""
    from sim2real.errors import Sim2RealError
    from sim2real.execution import parse_executor

    try:
        parse_executor(text)
    except Sim2RealError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--executor ")) from None
    return text


def engine_name(text: str) -> str:
    """argparse type of ``--engine``: a registered engine name (:func:`sim2real.engines.check_engine`)."""
    from sim2real.engines import check_engine
    from sim2real.errors import Sim2RealError

    try:
        return check_engine(text)
    except Sim2RealError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_engine_argument(parser: argparse.ArgumentParser) -> None:
    """``--engine ours|mujoco``."""
    from sim2real.engines import ENGINES

    choices = "; ".join(f"'{name}': {entry.description}" for name, entry in ENGINES.items())
    parser.add_argument("--engine", type=engine_name, default="ours", metavar="|".join(ENGINES),
                        help=f"simulation engine (default ours). {choices}. Parameters of the same name mean the "
                             "same in both; mujoco.* are MuJoCo's own (sim2real params)")


def add_executor_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """``--executor`` and ``--workers``: where ``what`` (per-trial work) runs."""
    parser.add_argument("--executor", type=executor_spec, default="local", metavar="local|ray[:ADDRESS]",
                        help=f"where {what} runs: 'local' (default: this process, or --workers local processes); "
                             "'ray' (a private local Ray runtime of --workers CPUs on 127.0.0.1, stopped at the end; "
                             "needs Ray installed); 'ray:ADDRESS' (join the existing Ray cluster at ADDRESS, e.g. "
                             "10.0.0.5:6379 or ray://10.0.0.5:10001, which must run the same sim2real and Ray "
                             "versions). Results are the same with any executor")
    parser.add_argument("--workers", type=bounded_int(1, 256), default=1, metavar="N",
                        help="local worker processes, or CPUs of the local Ray runtime (default 1; ignored with "
                             "ray:ADDRESS, which uses the cluster's CPUs)")

"""The ``sim2real`` command: one subcommand per module in this package.

Each subcommand module provides ``register(subparsers)``, which adds its parser and
sets ``handler`` to a function ``(argparse.Namespace) -> int`` (and ``uses_engine=True`` when the
command steps the engine: its kernels are then compiled first, with progress, if not yet cached). Modules import their
heavy dependencies inside the handler so that ``sim2real --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import re
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from sim2real import __version__
from sim2real.errors import Sim2RealError
from sim2real.interrupts import is_interrupt, redeliver_interrupts

# Subcommand modules, in the order --help lists them. Only built commands appear here.
COMMANDS: tuple[str, ...] = (
    "demo_cmd",
    "params_cmd",
    "import_cmd",
    "calibrate_cmd",
    "handeye_cmd",
    "report_cmd",
    "simulate",
    "emulate_cmd",
    "fit_cmd",
    "compare_cmd",
    "replay_cmd",
    "sample_cmd",
    "sweep_cmd",
    "design_cmd",
    "run_cmd",
    "resolve_cmd",
)


#: A negative number, or a comma-separated list of numbers that starts with one (``--transform -0.1,0,0,1,0,0,0``):
#: an option's value, not an option (argparse knows plain negative numbers only).
_NEGATIVE_VALUE = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?(,[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?)*$")


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors are one line plus exit status 2, and that takes a value that starts
    with a negative number as a value (:data:`_NEGATIVE_VALUE`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_VALUE

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every built subcommand registered."""
    parser = _Parser(
        prog="sim2real",
        description="Sim-to-real toolkit for a UFactory xArm 6 pushing a box: mirrored real/sim PD "
        "control, a differentiable contact simulator, recording, system identification and reports.",
        epilog="Run 'sim2real COMMAND --help' for the options of a command. Units are SI throughout.",
    )
    parser.add_argument("--version", action="version", version=f"sim2real {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module_name in COMMANDS:
        importlib.import_module(f"sim2real.cli.{module_name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sim2real`` console script; returns the exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments; None reads ``sys.argv`` and acts as the program: the process exits with the
        returned status next, so a Ctrl-C arriving after the command ended is ignored.

    Returns
    -------
    int
        The command's status; 2 for bad input (one line ``sim2real: error: ...`` on stderr); 130
        after Ctrl-C (SIGINT) and 143 after SIGTERM (one line ``sim2real: interrupted`` or
        ``terminated``), whenever they land: while the parser and the command's modules are
        imported too, not only during the command's work.
    """
    # First of all, before anything slow (building the parser imports every command's module):
    # SIGTERM unwinds like Ctrl-C, and an interrupt from here on ends in one line, not a traceback.
    terminated: list[int] = []
    previous = _terminate_as_interrupt(terminated)
    previous_hook = redeliver_interrupts()
    try:
        return _run(argv)
    except BaseException as err:
        if not is_interrupt(err):  # a KeyboardInterrupt, or one Python wrapped (see sim2real.interrupts)
            raise
        # every command's cleanup has run (child processes stopped, the arm stopped, partial files
        # removed); then 128 + the signal
        if argv is None:
            _ignore_interrupts()  # a second Ctrl-C while saying so is no traceback either
        _forget_escaped_interrupt()
        print("sim2real: terminated" if terminated else "sim2real: interrupted", file=sys.stderr)
        return 128 + signal.SIGTERM if terminated else 130
    finally:
        sys.unraisablehook = previous_hook
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if argv is None:
            _ignore_interrupts()  # the interpreter's shutdown (atexit, thread joins) runs next


def _run(argv: Sequence[str] | None) -> int:
    """Parse ``argv`` and run the chosen command; a :class:`Sim2RealError` becomes one line and its
    ``exit_status`` (2 for bad input; see :mod:`sim2real.errors`)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help()
        return 2
    try:
        if getattr(args, "uses_engine", False):
            from sim2real.physics.warmup import compile_with_progress

            compile_with_progress()  # says so when the kernels are not compiled yet (after an install)
        return int(args.handler(args) or 0)
    except Sim2RealError as err:
        line = _error_line(err, _chosen_parser(parser, args)) if err.option or err.see else str(err)
        print(f"sim2real: error: {line}", file=sys.stderr)
        return err.exit_status


def _error_line(err: Sim2RealError, parser: argparse.ArgumentParser) -> str:
    """A library error in the words of ``parser``'s command: the flag of its :attr:`~Sim2RealError.option` first,
    the flags of its :attr:`~Sim2RealError.see` last (those the command has)."""
    flag = _flag_of(parser, err.option) if err.option else None
    line = f"{flag}: {err}" if flag else str(err)
    see = [f for f in (_flag_of(parser, dest) for dest in err.see) if f]
    return f"{line} (see {', '.join(dict.fromkeys(see))})" if see else line


def _chosen_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The innermost parser ``args`` were parsed by: the subcommand's (``sim2real fit``), or its source's
    (``sim2real import bag``)."""
    while True:
        chosen = None
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(args, action.dest, None) or "")
                if chosen is not None:
                    break
        if chosen is None:
            return parser
        parser = chosen


def _flag_of(parser: argparse.ArgumentParser, option: str) -> str | None:
    """The flag of ``parser``'s option whose argparse dest is ``option`` (a library error's
    :attr:`~sim2real.errors.Sim2RealError.option`): its longest option string; None when the parser has no
    such option."""
    for action in parser._actions:
        if action.dest == option and action.option_strings:
            return max(action.option_strings, key=len)
    return None


def _ignore_interrupts() -> None:
    """Ignore Ctrl-C (SIGINT) from now on, in the main thread (elsewhere signals cannot be set).

    SIGTERM keeps its default: it still ends a process whose shutdown would hang, without a traceback.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _forget_escaped_interrupt() -> None:
    """Clear CPython's note that a KeyboardInterrupt escaped an ``exec`` or ``eval`` of source text.

    An interrupt landing while a library runs generated source (dataclasses building methods,
    rosbags compiling its serializers) sets that note, even when the interrupt is caught later;
    ``python -m sim2real`` then ends by killing itself with SIGINT (status -2 to a parent) instead
    of exiting with the status :func:`main` returns. Running any source text clears the note.
    """
    exec("pass")


def _terminate_as_interrupt(terminated: list[int]) -> Any:
    """Make SIGTERM raise KeyboardInterrupt in the main thread (noting it in ``terminated``);
    returns the previous handler, or None when not in the main thread or SIGTERM is not at its
    default (an embedding program's own handler is kept)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return None

    def handler(signum: int, frame: Any) -> None:
        terminated.append(signum)
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, handler)


if __name__ == "__main__":
    sys.exit(main())

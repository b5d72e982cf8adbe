"""The ``sim2real`` command: one subcommand per module in this package.

Each subcommand module provides ``register(subparsers)``, which adds its parser and
sets ``handler`` to a function ``(argparse.Namespace) -> int`` (and ``uses_engine=True`` when the
command steps the engine: its kernels are then compiled first, with progress, if not yet cached). Modules import their
heavy dependencies inside the handler so that ``sim2real --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from sim2real import __version__
from sim2real.errors import Sim2RealError

# Subcommand modules, in the order --help lists them. Only built commands appear here.
COMMANDS: tuple[str, ...] = (
    "demo_cmd",
    "params_cmd",
    "import_cmd",
    "report_cmd",
    "simulate",
    "emulate_cmd",
    "fit_cmd",
    "compare_cmd",
    "replay_cmd",
    "sample_cmd",
    "sweep_cmd",
    "run_cmd",
    "resolve_cmd",
)


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors are one line plus exit status 2."""

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
    """Entry point of the ``sim2real`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help()
        return 2
    terminated: list[int] = []
    previous = _terminate_as_interrupt(terminated)
    try:
        if getattr(args, "uses_engine", False):
            from sim2real.physics.warmup import compile_with_progress

            compile_with_progress()  # says so when the kernels are not compiled yet (after an install)
        return int(args.handler(args) or 0)
    except Sim2RealError as err:
        print(f"sim2real: error: {err}", file=sys.stderr)
        return err.exit_status
    except KeyboardInterrupt:
        # SIGTERM unwinds like Ctrl-C: every command's cleanup runs (child processes stopped, the
        # arm stopped, partial files removed), then 128 + the signal
        print("sim2real: terminated" if terminated else "sim2real: interrupted", file=sys.stderr)
        return 128 + signal.SIGTERM if terminated else 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


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

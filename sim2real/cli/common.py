"""Argument helpers shared by subcommands."""

from __future__ import annotations

import argparse
from typing import TextIO

from sim2real.params import ParameterSet


def add_param_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--params FILE`` and repeatable ``--set NAME=VALUE``."""
    parser.add_argument("--params", metavar="FILE",
                        help="ROS 2 params YAML with simulator parameters (default: nominal values)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                        help="override one parameter, e.g. --set box.mass=0.62 (SI units; repeatable)")


def params_from_args(args: argparse.Namespace) -> ParameterSet:
    """The parameter set selected by ``--params`` and ``--set``."""
    from sim2real.params import resolve_params

    return resolve_params(args.params, args.overrides)


def parse_name_list(text: str | None) -> list[str]:
    """Split a comma-separated list of parameter names and check each against the registry."""
    from sim2real.params import spec

    if not text:
        return []
    names = [part.strip() for part in text.split(",") if part.strip()]
    for name in names:
        spec(name)
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

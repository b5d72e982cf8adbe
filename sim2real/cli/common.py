"""Argument helpers shared by subcommands."""

from __future__ import annotations

import argparse

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

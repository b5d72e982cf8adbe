"""``sim2real params``: show, check and write simulator parameter files."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path

from sim2real.cli.common import add_param_arguments, params_from_args

#: Column titles of the listing, in order.
LISTING_HEADER: tuple[str, ...] = ("parameter", "value", "unit", "bounds", "meaning")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``params`` subcommand."""
    parser = subparsers.add_parser(
        "params",
        help="show, check and write simulator parameters (ROS 2 params YAML)",
        description="Resolve the simulator parameters (nominal values, then --params FILE, then --set "
        "overrides), check names, types and bounds, print them (value, unit, admissible bounds, meaning), "
        "and optionally write them as a ROS 2 params YAML that sim_node and 'sim2real simulate --params' read.",
    )
    add_param_arguments(parser)
    parser.add_argument("--out", metavar="FILE", help="write the resolved parameters to this params YAML "
                        "(an existing file is refused unless --force)")
    parser.add_argument("--force", action="store_true",
                        help="replace an existing --out, but only a params file sim2real wrote (its '# ...sim2real' "
                             "header line); any other file is never overwritten")
    parser.add_argument("--json", action="store_true", help="print {name: value} as JSON on stdout")
    parser.set_defaults(handler=run)


def format_bounds(lower: float, upper: float) -> str:
    """Inclusive bounds as ``[lower, upper]`` with up to 6 significant digits (``[0.001, 1]``)."""
    return f"[{lower:.6g}, {upper:.6g}]"


def parameter_lines(values: Mapping[str, float]) -> list[str]:
    """The listing of ``sim2real params``: a header line, then one line per registered parameter.

    Parameters
    ----------
    values : mapping of str to float
        A value for every registered name (a :class:`~sim2real.params.ParameterSet`), SI units.

    Returns
    -------
    list of str
        Fixed-width columns: name, value, unit, inclusive admissible bounds ``[lower, upper]`` in
        that unit (what ``--set``, ``--params`` files and ``fit`` accept), meaning; a value that
        differs from the nominal one is marked ``(changed)``.
    """
    from sim2real.params import PARAMETERS

    lines = [f"{LISTING_HEADER[0]:<22}   {LISTING_HEADER[1]:<12} {LISTING_HEADER[2]:<8} {LISTING_HEADER[3]:<18} "
             f"{LISTING_HEADER[4]}"]
    for p in PARAMETERS:
        marker = "" if values[p.name] == p.nominal else "  (changed)"
        lines.append(f"{p.name:<22} = {values[p.name]!r:<12} {p.unit:<8} {format_bounds(p.lower, p.upper):<18} "
                     f"{p.description}{marker}")
    return lines


def run(args: argparse.Namespace) -> int:
    """Print (and optionally save) the resolved parameter set."""
    from sim2real.cli.common import YAML_SUFFIXES, check_output_file, is_sim2real_params_file, removed_on_interrupt
    from sim2real.errors import Sim2RealError
    from sim2real.params import save_params

    if args.out is not None:
        if Path(args.out).suffix not in YAML_SUFFIXES:  # --params reads .yaml and .yml only
            raise Sim2RealError(f"--out must name a params YAML file (.yaml or .yml), got '{args.out}'")
        check_output_file(args.out, args.force, is_sim2real_params_file)
    params = params_from_args(args)
    if args.out:
        with removed_on_interrupt(args.out):
            save_params(args.out, params, header="sim2real simulator parameters (SI units)")
    if args.json:
        json.dump(params.as_dict(), sys.stdout, indent=2)
        print()
        return 0
    for line in parameter_lines(params):
        print(line)
    if args.out:
        print(f"wrote {args.out}")
    return 0

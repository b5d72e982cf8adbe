"""``sim2real params``: show, check and write simulator parameter files."""

from __future__ import annotations

import argparse
import json
import sys

from sim2real.cli.common import add_param_arguments, params_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``params`` subcommand."""
    parser = subparsers.add_parser(
        "params",
        help="show, check and write simulator parameters (ROS 2 params YAML)",
        description="Resolve the simulator parameters (nominal values, then --params FILE, then --set "
        "overrides), check names, types and bounds, print them, and optionally write them as a ROS 2 "
        "params YAML that sim_node and 'sim2real simulate --params' read.",
    )
    add_param_arguments(parser)
    parser.add_argument("--out", metavar="FILE", help="write the resolved parameters to this params YAML "
                        "(an existing file is refused unless --force)")
    parser.add_argument("--force", action="store_true",
                        help="replace an existing --out, but only a params file sim2real wrote (its '# ...sim2real' "
                             "header line); any other file is never overwritten")
    parser.add_argument("--json", action="store_true", help="print {name: value} as JSON on stdout")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print (and optionally save) the resolved parameter set."""
    from sim2real.cli.common import check_output_file, is_sim2real_params_file
    from sim2real.params import PARAMETERS, save_params

    if args.out is not None:
        check_output_file(args.out, args.force, is_sim2real_params_file)
    params = params_from_args(args)
    if args.out:
        save_params(args.out, params, header="sim2real simulator parameters (SI units)")
    if args.json:
        json.dump(params.as_dict(), sys.stdout, indent=2)
        print()
        return 0
    for p in PARAMETERS:
        marker = "" if params[p.name] == p.nominal else "  (changed)"
        print(f"{p.name:<22} = {params[p.name]!r:<12} {p.unit:<8} {p.description}{marker}")
    if args.out:
        print(f"wrote {args.out}")
    return 0

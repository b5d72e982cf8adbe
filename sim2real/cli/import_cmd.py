"""``sim2real import``: turn external recordings into trial directories (rosbag2, mcap)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``import`` subcommand and its sources (``cube-toss``)."""
    parser = subparsers.add_parser(
        "import",
        help="import external recordings as trials (cube-toss)",
        description="Convert external recordings into a run directory of trials (one rosbag2 per trial) "
        "that 'sim2real fit' and 'sim2real report' read.",
    )
    sources = parser.add_subparsers(dest="source", metavar="SOURCE")
    cube = sources.add_parser(
        "cube-toss",
        help="the real ContactNets cube tosses (NPZ) → one trial per toss",
        description="Write one trial per toss: /real/box_pose (geometry_msgs/PoseStamped, surface frame, m) at "
        "the recorded 148 Hz sample times, and trial.json with the cube's measured side and mass under "
        "'object' and the data source and licence under 'source'. Nothing is written on error.",
    )
    cube.add_argument("npz", metavar="NPZ", help="contactnets_cube_tosses.npz (see shared/data/cube_toss/README.md)")
    cube.add_argument("--out", required=True, metavar="DIR", help="run directory to create (must not exist)")
    cube.add_argument("--tosses", metavar="SPEC",
                      help="tosses to import, e.g. '0-19,100' (inclusive ranges; default: all)")
    cube.set_defaults(handler=run_cube_toss)
    parser.set_defaults(handler=_missing_source(parser))


def _missing_source(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        parser.error("choose a source to import: cube-toss")
        return 2

    return handler


def run_cube_toss(args: argparse.Namespace) -> int:
    """Import the selected cube tosses; progress on stderr; the run directory on stdout."""
    from sim2real.cli.common import check_output_location
    from sim2real.trials.cube_toss import import_cube_tosses

    check_output_location(args.out)
    interactive = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if done == total or done % 25 == 0:
            end = "\n" if done == total or not interactive else "\r"
            print(f"imported {done}/{total} tosses", end=end, file=sys.stderr, flush=True)

    trials = import_cube_tosses(args.npz, args.out, args.tosses, progress=progress)
    print(f"wrote {len(trials)} trials to {args.out}")
    return 0

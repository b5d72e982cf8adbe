"""``sim2real replay``: re-simulate recorded trials offline with the recorded commands and timing."""

from __future__ import annotations

import argparse
import sys

from sim2real.cli.common import add_param_arguments, params_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``replay`` subcommand."""
    parser = subparsers.add_parser(
        "replay", help="re-simulate recorded trials (recorded commands and timing) into sim bags",
        description="Re-simulate recorded trials and write them as a run directory: each trial keeps the "
                    "recorded platform as 'real' and holds the replay as 'sim' (same topics and schema).",
        epilog="Modes: commands (the recorded joint commands drive the simulated arm; default), closed (PD "
               "law on the recorded reference), kinematic (arm played back from recorded joint states), "
               "pusher (pusher driven by the recorded pusher pose). Box-only trials (cube tosses) are "
               "rolled out from their first recorded poses.")
    parser.add_argument("bags", nargs="+", metavar="BAG", help="trial or run directory")
    add_param_arguments(parser)
    parser.add_argument("--out", required=True, metavar="DIR", help="run directory to create (must not exist)")
    parser.add_argument("--mode", choices=("commands", "closed", "kinematic", "pusher"), default="commands")
    parser.add_argument("--platform", choices=("auto", "real", "sim"), default="auto",
                        help="recording that drives the replay (default: real if present, else sim)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``sim2real replay``: all trials are replayed first, then written (all or nothing)."""
    import os
    import shutil
    import tempfile
    from pathlib import Path

    from sim2real.cli.fit_cmd import load_records
    from sim2real.errors import Sim2RealError
    from sim2real.sysid.replay import replay_trial
    from sim2real.trials import write_run_meta, write_trial

    out = Path(args.out)
    if out.exists():
        raise Sim2RealError(f"output directory {out} already exists; choose a new one")
    params = params_from_args(args)
    records, sources = load_records(args.bags)
    names = [r.name for r in records]
    if len(set(names)) != len(names):
        raise Sim2RealError("two trials have the same name; replay them into separate output directories")
    replayed = []
    for record, source in zip(records, sources, strict=True):
        print(f"replay: {source} ({args.mode})", file=sys.stderr, flush=True)
        replayed.append(replay_trial(record, params, mode=args.mode, platform=args.platform))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        for record in replayed:
            write_trial(tmp, record)
        write_run_meta(tmp, {"mode": "replay", "mirror": args.mode, "sources": sources, "params": params.as_dict(),
                             "params_file": args.params})
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    print(f"wrote {len(replayed)} replayed trial(s) to {out}")
    return 0

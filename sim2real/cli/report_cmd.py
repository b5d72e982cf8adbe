"""``sim2real report``: sim-vs-real report (report.html, report.md, figures) from run directories."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``report`` subcommand."""
    parser = subparsers.add_parser(
        "report",
        help="sim-vs-real report (report.html, report.md, figures) from run directories",
        description="Read one or more run directories (one rosbag2 trial per sub-directory) and write "
        "report.html (self-contained) and report.md with PNG figures: the experiment table (start, real and "
        "sim final distance, gap, flips, agreement), per-trial box paths, tilt, joint tracking and command "
        "streams, and with --fit the fit's status and problems first, then the fitted parameters, 95 % "
        "intervals, correlations and fit trace. Two run directories are compared side by side (e.g. --labels "
        "before,after). Interrupted (incomplete) trials are listed but kept out of the mean gap and flip "
        "agreement; trials with degraded solver steps are named.",
    )
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directory (repeatable)")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="output directory: created; an existing non-empty one only with --force")
    parser.add_argument("--force", action="store_true",
                        help="write into an existing --out: replaces the files an earlier report wrote there "
                             "(listed in its .sim2real-report.json) and nothing else; other files are kept, and "
                             "a file of another origin with a name the report needs is an error")
    parser.add_argument("--fit", metavar="FIT_JSON", help="fit.json written by 'sim2real fit'")
    parser.add_argument("--labels", metavar="A,B", help="comma-separated label per run directory")
    parser.add_argument("--max-trial-figures", type=int, default=10, metavar="N",
                        help="per run, draw per-trial figures for the first N trials (default 10)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Build the report and print the fit status (red on a terminal when it has problems), the experiment
    table and the report paths."""
    import sys

    from sim2real.cli.common import check_output_location, red
    from sim2real.errors import Sim2RealError
    from sim2real.report import build_report

    out = check_output_location(args.out)
    if out.exists() and not out.is_dir():
        raise Sim2RealError(f"--out {out} is a file, not a directory")
    if out.is_dir() and any(out.iterdir()) and not args.force:
        raise Sim2RealError(f"--out {out} exists and is not empty; pass --force to replace the report in it")

    labels = [part.strip() for part in args.labels.split(",")] if args.labels is not None else None
    paths = build_report(args.run_dirs, args.out, fit=args.fit, labels=labels,
                         max_trial_figures=args.max_trial_figures)
    for line in paths.fit_status:
        print(line if paths.fit_ok else red(line, sys.stdout))
    print(paths.text)
    print(f"wrote {paths.html}")
    print(f"wrote {paths.markdown} ({len(paths.figures)} figures)")
    return 0

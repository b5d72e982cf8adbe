"""``sim2real report``: sim-vs-real report (report.html, report.md, figures) from run directories."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``report`` subcommand."""
    parser = subparsers.add_parser(
        "report",
        help="sim-vs-real report (report.html, report.md, figures) from run directories",
        description="Read one or more run directories (one rosbag2 trial per sub-directory) and write "
        "report.html (self-contained) and report.md with PNG figures: the experiment table (per trial, sim "
        "against real: final position error in the table plane and in 3-D (mm), yaw error (deg), RMS path "
        "error over the time both recorded the box (mm), flips and agreement; for the standard push along x "
        "also start, final distances along x and their gap (cm)), per-trial box paths and tilt, joint tracking "
        "and command streams (trials with arm data), and with --fit (repeatable: one subsection per fit, e.g. "
        "the servo and box stages) each fit's status and problems first, then its parameters with 95 % "
        "intervals and their method, with --truth the known true values and whether each interval holds them, "
        "correlations (more than one free parameter), residuals against time per trial and the fit trace. "
        "Several runs are compared as before and after only where they pair, never by their order: runs named "
        "with --before and --after; else exactly one label beginning with 'before' and one with 'after' (e.g. "
        "--labels before,after); else a run that re-simulates another run's recordings (trial.json replay_of "
        "and the same recorded box poses, as 'sim2real replay' writes) is its after, and of two re-simulations "
        "of the same recordings the one with a --fit's start values is before, the one with its fitted values "
        "after. Runs that do not pair are shown side by side without a before/after claim, and the report says "
        "why. Interrupted (incomplete) trials are listed but kept out of the means and flip agreement; trials "
        "with degraded solver steps are named.",
    )
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directory (repeatable)")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="output directory: created; an existing non-empty one only with --force")
    parser.add_argument("--force", action="store_true",
                        help="write into an existing --out: replaces the files an earlier report wrote there "
                             "(listed in its .sim2real-report.json) and nothing else; other files are kept, and "
                             "a file of another origin with a name the report needs is an error")
    parser.add_argument("--fit", metavar="FIT_JSON", action="append",
                        help="fit.json written by 'sim2real fit' (repeatable: each fit, e.g. fit/servo.json and "
                             "fit/fitted.json, gets its own subsection titled by its file stem)")
    parser.add_argument("--truth", metavar="NAME=VALUE,...", action="append",
                        help="known true parameter values (SI units, registry names; repeatable), e.g. "
                             "box.com_z=-0.06,arm.servo_tau=0.065: adds a 'truth' and a 'truth inside 95 %%?' "
                             "column to the parameter tables (needs --fit)")
    parser.add_argument("--sweep", metavar="SWEEP_DIR",
                        help="directory written by 'sim2real sweep' (e.g. over sets from 'sim2real sample'): adds "
                             "the predicted flip probability and final-distance range per start distance, with "
                             "the real standard pushes of the first run with real data beside them")
    parser.add_argument("--design", metavar="DESIGN_JSON",
                        help="the .json 'sim2real design' wrote beside its experiment file: its forecast 95 %% "
                             "intervals beside the achieved ones of the last --fit, and how many designed pushes "
                             "the runs recorded")
    parser.add_argument("--labels", metavar="A,B", help="comma-separated label per run directory")
    parser.add_argument("--before", metavar="LABEL",
                        help="label of the run to compare as before (with --after; labels from --labels or the "
                             "directory names)")
    parser.add_argument("--after", metavar="LABEL", help="label of the run to compare as after (with --before)")
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
    from sim2real.report.fit_sections import fit_status_lines

    out = check_output_location(args.out)
    if out.exists() and not out.is_dir():
        raise Sim2RealError(f"--out {out} is a file, not a directory")
    if out.is_dir() and any(out.iterdir()) and not args.force:
        raise Sim2RealError(f"--out {out} exists and is not empty; pass --force to replace the report in it")

    check_distinct_runs(args.run_dirs)
    labels = [part.strip() for part in args.labels.split(",")] if args.labels is not None else None
    truth = parse_truth(args.truth or [])
    if truth and not args.fit:
        raise Sim2RealError("--truth needs --fit: the truth is compared with a fit's intervals")
    paths = build_report(args.run_dirs, args.out, fit=args.fit, labels=labels,
                         max_trial_figures=args.max_trial_figures, truth=truth, sweep=args.sweep,
                         before=args.before, after=args.after, design=args.design)
    for fit in paths.fits:
        for line in fit_status_lines(fit):
            print(line if fit.ok else red(line, sys.stdout))
    print(paths.text)
    print(f"wrote {paths.html}")
    print(f"wrote {paths.markdown} ({len(paths.figures)} figures)")
    return 0


def check_distinct_runs(run_dirs: list[str]) -> None:
    """Refuse a run directory given twice (also as another spelling of the same path, or a link to it):
    the report would compare a run with itself.

    Raises
    ------
    Sim2RealError
        Naming the directory and both spellings.
    """
    from sim2real.cli.common import check_given_once

    check_given_once(run_dirs, "run directory")


def parse_truth(items: list[str]) -> dict[str, float]:
    """``--truth`` values: ``NAME=VALUE`` items, comma-separated, from every ``--truth`` given.

    Raises
    ------
    Sim2RealError
        An item without ``=``, an unknown parameter name (with a suggestion), a value that is not a
        finite number, or a name given twice.
    """
    import math

    from sim2real.errors import Sim2RealError
    from sim2real.params import spec

    truth: dict[str, float] = {}
    for part in (p.strip() for item in items for p in item.split(",")):
        if not part:
            continue
        name, sep, raw = (x.strip() for x in part.partition("="))
        if not sep:
            raise Sim2RealError(f"--truth expects NAME=VALUE, got '{part}'")
        spec(name)
        try:
            value = float(raw)
        except ValueError:
            raise Sim2RealError(f"--truth {name}: '{raw}' is not a number") from None
        if not math.isfinite(value):
            raise Sim2RealError(f"--truth {name}: value must be finite, got '{raw}'")
        if name in truth:
            raise Sim2RealError(f"--truth gives {name} twice")
        truth[name] = value
    return truth

"""``sim2real sweep``: many simulated standard pushes over parameter points and start distances."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim2real.cli.common import (
    EXIT_TRIALS_FAILED,
    add_executor_arguments,
    add_param_arguments,
    check_output_location,
)

if TYPE_CHECKING:
    from sim2real.sysid.prediction import SweepPoints

#: Exit status when every row was simulated but some have degraded contact steps (as ``simulate``).
EXIT_DEGRADED = 3
#: Seconds between progress lines when stderr is not a terminal.
PROGRESS_INTERVAL = 10.0

EPILOG = """\
Rows: one per (point, distance), points outer, distances inner. A point is a complete
parameter set: --params / --set alone (one point); the product of the --set-grid axes over
them (the first axis varies slowest); or the sets of --samples: a directory written by
'sim2real sample' (its sample_*.yaml are complete sets; --params is refused, --set applies
to parameters not sampled) or a CSV table whose header names parameters (an optional
'sample' column is ignored), one set per row over --params / --set. Each row is the push
'sim2real simulate --distance D --params ... --experiment ...' runs, with the same numbers.

DIR/outcomes.csv columns: point, distance (m), the varied parameters, final_x, final_y,
final_z (final box centre, m, arm base frame), final_yaw (rad), flipped (0/1), max_tilt_deg,
touched (0/1), degraded_steps (contact steps accepted as degraded), error (empty, or why the
row could not be simulated). Numbers are written at full precision.

Resuming: rows are written in order, one line at a time, each flushed. Re-running the same
command on the same DIR skips the rows already in outcomes.csv (a partial last line left by
Ctrl-C or a kill is dropped and redone). DIR/sweep.json keeps what determines the rows
(distances, the points' complete parameter values, the push, the columns, --write-trials);
a re-run whose configuration differs is refused and the differences named. --executor and
--workers may change between runs; the table is the same either way.

--write-trials also writes every row as a trial directory (rosbag2 + trial.json, readable by
'sim2real report') under DIR/trials/point_NNNN/trial_KK_dD.DDD.

With --samples, the end prints per distance the flip probability over the samples (with a
95 % Wilson interval) and the mean and standard deviation of the final distance (final_x).
The rows hold the parameters' uncertainty only. A --samples directory whose fit kept a band
calibration (samples.json band_calibration: the model's discrepancy tau, conformal scores)
passes it on: sweep.json keeps it (band_calibration, or null, and band_note saying which; a
resumed sweep keeps what it started with), and 'report --sweep' widens the predicted bands
with it. A CSV table or a grid carries none.

Exit status: 0 every row simulated, no degraded step; 1 some rows could not be simulated
(their error column says why); 3 some rows have degraded contact steps; 2 bad input or a
refused resume (one line, nothing written); 130 interrupted (the table holds the rows done).
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``sweep`` subcommand."""
    parser = subparsers.add_parser(
        "sweep", help="simulate the standard push over parameter points x start distances into a resumable table",
        description="Simulate the standard push (as 'simulate --distance') for every parameter point (one set, "
                    "a grid, or sets drawn by 'sim2real sample') at every start distance, and write the outcomes "
                    "to DIR/outcomes.csv as they come; re-running the command on DIR resumes it.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--distances", required=True, metavar="D1,D2,...",
                        help="start distances of the box centre from the arm base, m (e.g. 0.30,0.35,0.40)")
    parser.add_argument("--set-grid", dest="grid", action="append", default=[], metavar="NAME=LO:HI:N",
                        help="N evenly spaced values of a parameter from LO to HI (repeatable: their product)")
    parser.add_argument("--samples", metavar="DIR_OR_CSV",
                        help="parameter sets from 'sim2real sample' (its directory) or a CSV table")
    add_param_arguments(parser)
    parser.add_argument("--experiment", metavar="FILE",
                        help="experiment params file defining the push (default: the package's config/experiment.yaml)")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="sweep directory (new, empty, or a sweep to resume)")
    parser.add_argument("--write-trials", action="store_true",
                        help="also write every row as a trial directory under DIR/trials/")
    add_executor_arguments(parser, "the simulation of the rows")
    parser.set_defaults(handler=run, uses_engine=True)


def _log(message: str) -> None:
    print(f"sweep: {message}", file=sys.stderr, flush=True)


def build_points(args: argparse.Namespace) -> SweepPoints:
    """The parameter points the options select (checked before any work).

    Raises
    ------
    Sim2RealError
        Conflicting options (--set-grid with --samples, --params with a samples directory, a
        --set of a grid or sampled name) or bad values.
    """
    from sim2real.errors import Sim2RealError
    from sim2real.params import parse_override, resolve_params
    from sim2real.sysid.prediction import GridAxis, grid_points, samples_points

    overrides = dict(parse_override(text) for text in args.overrides)
    source: dict[str, Any] = {"params": str(Path(args.params).resolve()) if args.params else None,
                              "set": list(args.overrides)}
    if args.samples:
        if args.grid:
            raise Sim2RealError("give --set-grid or --samples, not both")
        if Path(args.samples).is_dir():
            if args.params:
                raise Sim2RealError("--params with a --samples directory: its sample files are complete parameter "
                                    "sets; give its samples.csv instead to apply the sampled columns over --params")
            points = samples_points(args.samples, None, overrides)
        else:
            points = samples_points(args.samples, resolve_params(args.params, args.overrides), overrides)
        return type(points)(points.names, points.params, {**source, **points.source})
    axes = [GridAxis.parse(text) for text in args.grid]
    clash = sorted({a.name for a in axes} & set(overrides))
    if clash:
        raise Sim2RealError(f"--set {clash[0]} and --set-grid {clash[0]} name the same parameter")
    return grid_points(resolve_params(args.params, args.overrides), axes, source)


def band_calibration(args: argparse.Namespace) -> tuple[dict[str, Any] | None, str | None]:
    """The band calibration of a ``--samples`` directory (its samples.json), JSON-ready, and what it means;
    ``(None, None)`` for a sweep not over a samples directory.

    Raises
    ------
    Sim2RealError
        An unreadable samples.json or an invalid calibration in it (one line).
    """
    from sim2real.sysid.files import band_note, read_band_calibration
    from sim2real.sysid.prediction import SWEEP_JSON

    if not args.samples or not Path(args.samples).is_dir():
        return None, None
    calibration = read_band_calibration(args.samples)
    return ((calibration.as_dict() if calibration is not None else None),
            band_note(calibration, kept_in=SWEEP_JSON, used_by="report --sweep"))


#: The sweep configuration's keys in the words of this command's options, for the refusal to resume.
_CONFIG_WORDS = {"distances": "--distances", "columns": "the table's columns (varied parameters)",
                 "points": "the number of parameter points", "points_sha256": "the parameter points' values",
                 "push": "the push (--experiment)", "write_trials": "--write-trials"}


def open_sweep_dir(out: Path, config: dict[str, Any], source: dict[str, Any],
                   band: tuple[dict[str, Any] | None, str | None] = (None, None)) -> bool:
    """Create the sweep directory with its sweep.json, or check the one there (resume).

    ``band`` is :func:`band_calibration`: a new sweep.json keeps it (``band_calibration``,
    ``band_note``) for ``report --sweep``; a resumed one keeps what it has.

    Returns
    -------
    bool
        True when resuming an existing sweep.

    Raises
    ------
    Sim2RealError
        DIR is a file, a non-empty directory without sweep.json, or a sweep whose configuration
        differs (named).
    """
    import json

    from sim2real.errors import Sim2RealError
    from sim2real.sysid.prediction import SWEEP_JSON, SWEEP_SCHEMA, config_differences
    from sim2real.trials.schema import versions

    check_output_location(out)
    meta = out / SWEEP_JSON
    if out.exists() or out.is_symlink():
        if not out.is_dir():
            raise Sim2RealError(f"--out {out} exists and is not a directory")
        if meta.is_file():
            from sim2real.paths import read_text_file

            try:
                stored = json.loads(read_text_file(meta, SWEEP_JSON))
            except ValueError:
                raise Sim2RealError(f"{meta}: not valid JSON; not resuming into {out}") from None
            if not isinstance(stored, dict) or stored.get("schema") != SWEEP_SCHEMA:
                raise Sim2RealError(f"{meta}: not a sweep description ({SWEEP_SCHEMA}); not resuming into {out}")
            differences = [_CONFIG_WORDS.get(k, k) for k in config_differences(stored.get("config") or {}, config)]
            if differences:
                raise Sim2RealError(f"--out {out} holds a sweep with a different configuration "
                                    f"({'; '.join(differences)}); resume it with the same options, or give a new "
                                    "--out")
            if (stored.get("versions") or {}).get("sim2real") != versions()["sim2real"]:
                _log(f"warning: {out} was started by sim2real {(stored.get('versions') or {}).get('sim2real')}, "
                     f"this is {versions()['sim2real']}")
            return True
        if any(out.iterdir()):
            raise Sim2RealError(f"--out {out} exists, is not empty and holds no {SWEEP_JSON}; refusing to write "
                                "into it")
    out.mkdir(parents=True, exist_ok=True)
    from sim2real.sysid.files import BAND_CALIBRATION_KEY, BAND_NOTE_KEY

    _write_json(meta, {"schema": SWEEP_SCHEMA, "config": config, "source": source, BAND_CALIBRATION_KEY: band[0],
                       BAND_NOTE_KEY: band[1], "versions": versions(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    return False


def _write_json(path: Path, document: dict[str, Any]) -> None:
    from sim2real.trials.jsonio import write_json_atomic

    write_json_atomic(path, document)


def run(args: argparse.Namespace) -> int:
    """Handler of ``sim2real sweep``; exit statuses in the epilog."""
    import shutil

    from sim2real.cli.progress import progress_bar
    from sim2real.control import load_experiment_config
    from sim2real.errors import Sim2RealError
    from sim2real.execution import open_executor
    from sim2real.sysid.prediction import (
        MAX_ROWS,
        OUTCOMES_CSV,
        PARTIAL_DIR,
        TRIALS_DIR,
        SweepTask,
        finished_rows,
        header,
        parse_distances,
        run_sweep_task,
        sweep_config,
        write_header_if_new,
    )

    out = check_output_location(args.out)
    distances = parse_distances(args.distances)
    experiment = load_experiment_config(args.experiment)
    if experiment.trial_pushes:
        raise Sim2RealError(f"--experiment {args.experiment}: it gives each trial its own push (its 'trials' "
                            "section); a sweep pushes one push at every distance: give a file with one push")
    points = build_points(args)
    band = band_calibration(args)
    total = len(points.params) * len(distances)
    if total > MAX_ROWS:
        raise Sim2RealError(f"{len(points.params)} points x {len(distances)} distances = {total} rows; "
                            f"at most {MAX_ROWS}")
    columns = header(points.names)
    config = sweep_config(distances, points, experiment.push, args.write_trials)
    source = {**points.source, "experiment": str(Path(args.experiment).resolve()) if args.experiment else None}
    trials_dir = str(out / TRIALS_DIR) if args.write_trials else None
    tasks = [SweepTask(point=i, distance_index=k, distance=d, params=p, names=points.names, push=experiment.push,
                       trials_dir=trials_dir)
             for i, p in enumerate(points.params) for k, d in enumerate(distances)]
    table = out / OUTCOMES_CSV
    # everything above only reads; from here on DIR is created or checked for resuming
    resuming = open_sweep_dir(out, config, source, band)
    done = finished_rows(table, columns, [t.key for t in tasks]) if resuming else set()
    write_header_if_new(table, columns)
    if trials_dir is not None:
        shutil.rmtree(Path(trials_dir) / PARTIAL_DIR, ignore_errors=True)
    remaining = [t for t in tasks if t.key not in done]
    _log(f"{len(points.params)} point(s) x {len(distances)} distance(s) = {total} rows"
         + (f"; resuming {out}: {len(done)} done in an earlier run, {len(remaining)} to run" if resuming else "")
         + f"; executor {args.executor}, {args.workers} worker(s)")
    if band[1] is not None and not resuming:
        _log(band[1])
    started = time.perf_counter()
    ran = 0
    with (table.open("a", encoding="utf-8", newline="") as handle,
          open_executor(args.executor, args.workers, _log) as runner,
          progress_bar(total, "sweep", "row", PROGRESS_INTERVAL, initial=len(done)) as bar):
        for row in runner.map(run_sweep_task, remaining):
            handle.write(row.line())
            handle.flush()
            ran += 1
            bar.update()
            if row.error:
                bar.write(f"sweep: row point {row.fields[0]} distance {row.fields[1]} failed: {row.error}",
                          file=sys.stderr)
    _log(f"done: {total} rows in {table} ({ran} run now, {len(done)} from an earlier run) in "
         f"{time.perf_counter() - started:.1f} s")
    return _finish(table, distances, bool(args.samples))


def _finish(table: Path, distances: tuple[float, ...], samples: bool) -> int:
    """Print the per-distance summary (with --samples) and count failed and degraded rows for the exit status."""
    import csv

    from sim2real.sysid.prediction import summarize_by_distance

    if samples:
        for summary in summarize_by_distance(table, distances):
            low, high = summary.flip_interval()
            print(f"distance {summary.distance:.3f} m: {summary.rows} samples, flip probability "
                  f"{summary.flip_probability:.3f} (95 % {low:.3f}-{high:.3f}), final distance "
                  f"{summary.final_mean:.4f} m mean, {summary.final_std:.4f} m std")
    with table.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    failed = sum(1 for r in rows if r["error"])
    degraded = sum(1 for r in rows if not r["error"] and int(r["degraded_steps"]) > 0)
    if failed:
        _log(f"{failed} row(s) could not be simulated (see their error column)")
    if degraded:
        _log(f"{degraded} row(s) have degraded contact steps (degraded_steps column)")
    if failed:
        return EXIT_TRIALS_FAILED
    return EXIT_DEGRADED if degraded else 0

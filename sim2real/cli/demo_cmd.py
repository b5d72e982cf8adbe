"""``sim2real demo``: the whole loop on the embedded default, without hardware.

1. **Experiment** — the reality stand-in (the xArm controller emulator, driven through the
   real ``xarm-python-sdk`` on loopback, plus a physics world with hidden parameters and
   motion-capture noise and latency) and the mirrored simulator with nominal parameters push
   the box from :data:`DEMO_DISTANCES` (the five published start distances, four near the distance
   where the push stops toppling the box, and a second push at 0.40 and 0.46 m) as ROS 2 nodes;
   one rosbag2 per trial. Two more
   pushes (:data:`VALIDATION_DISTANCES`) are recorded and held out: no fit stage sees them. Up to
   :data:`MAX_UNUSABLE_TRIALS` trials that are not standard pushes are left out and named; with more,
   or a fault, the experiment runs again.
2. **Fit** — Gauss-Newton on the recordings (implicit gradients), in two stages: the arm's
   servo (time constant, command delay) from the recorded commands and joint states (robust
   loss: ticks a busy machine delayed do not drag it), then the box (centre-of-mass height)
   from whole trials with the pusher played back as recorded, starting from the best point of
   a grid over the box height (5 mm steps, then 1 mm around the best). Before the box stage each
   fitted trial is re-simulated under the PD law with the servo fit; a trial whose real pusher left
   that path by more than :data:`MAX_PUSHER_PATH_GAP` (a starved loop disturbed it, and its recording
   played back does not reproduce the box) is left out of the box stage and named; more than half of
   them and the demo missed. Writes the fitted ROS 2
   params YAML plus its ``.json`` report per stage. Each stage predicts the fitted and the
   held-out trials whole, at its start and its fitted values (final position and yaw error,
   flip agreement).
3. **Re-simulate** — every recorded trial replayed in the simulator with the fitted
   parameters under the same PD law on the recorded reference. A trial whose real pusher path
   the re-simulated arm does not reproduce (:data:`MAX_PUSHER_PATH_GAP`: the real loop was
   disturbed) is named as not comparable; more than half of them and the demo missed.
4. **Report** — sim vs real before and after the fit (``report.html``, ``report.md``).

Then the demo checks itself: every fitted parameter against the stand-in's hidden value
(``config/standin.yaml``) within :data:`TOLERANCES`, and both fit stages converged. The verdict
opens the console summary and is written to ``demo_check.json`` (also when a step fails); the
exit status is 3 when the demo missed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from sim2real.cli.common import add_engine_argument, bounded_int
from sim2real.cli.run_cmd import add_live_argument
from sim2real.demo.checks import (
    BOX_FREE,
    BOX_GRID,
    BOX_MODE,
    DEMO_DISTANCES,
    MAX_PUSHER_PATH_GAP,
    MAX_UNUSABLE_TRIALS,
    SERVO_FREE,
    TOLERANCES,
    VALIDATION_DISTANCES,
    parse_grid,
    tolerance_text,
)
from sim2real.demo.pipeline import DemoOptions

if TYPE_CHECKING:
    from sim2real.sysid import FitResult


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo", help="the whole loop without hardware: stand-in experiment, fit, re-simulation, report",
        description="Run the whole sim-to-real loop on the embedded default, without hardware: the reality "
        "stand-in (xArm controller emulator through the real SDK on loopback, a physics world with hidden "
        "parameters, motion-capture noise and latency) and the mirrored simulator with nominal parameters "
        "push the box from the published start distances and six near the toppling distance (ROS 2 nodes, "
        "one rosbag2 per trial); Gauss-Newton "
        "system identification fits the simulator to the stand-in recordings; the trials are re-simulated "
        "with the fitted parameters; a report compares sim and real before and after the fit. DDS stays on "
        "loopback.",
    )
    parser.add_argument("--out", default="demo_out", metavar="DIR",
                        help="output directory (created; must be new or empty; default demo_out)")
    parser.add_argument("--distances", metavar="D1,D2,...",
                        help="start distances in m, repeats allowed (default: the five published ones, 0.30 "
                        "to 0.50, and six near the toppling distance: "
                        + ",".join(f"{d:.2f}" for d in DEMO_DISTANCES) + ")")
    parser.add_argument("--validation-distances", metavar="D1,D2,...|none",
                        default=",".join(f"{d:.2f}" for d in VALIDATION_DISTANCES),
                        help="start distances in m of held-out pushes: recorded, never fitted, predicted before and "
                        "after each fit stage (default " + ",".join(f"{d:.2f}" for d in VALIDATION_DISTANCES)
                        + "; 'none' records none)")
    parser.add_argument("--servo-free", default=",".join(SERVO_FREE), metavar="NAMES",
                        help=f"stage 1, fitted to joint states (default {','.join(SERVO_FREE)})")
    parser.add_argument("--box-free", default=",".join(BOX_FREE), metavar="NAMES",
                        help=f"stage 2, fitted to whole trials (default {','.join(BOX_FREE)})")
    parser.add_argument("--standin-host", default="127.0.0.2", metavar="127.0.0.N",
                        help="loopback address the emulated xArm binds (default 127.0.0.2)")
    parser.add_argument("--box-mode", default=BOX_MODE, choices=("kinematic", "closed"),
                        help=f"stage 2: pusher played back as recorded (kinematic) or the arm simulated under "
                        f"the PD law (closed) (default {BOX_MODE})")
    parser.add_argument("--box-grid", default=BOX_GRID, metavar="NAME=LO:HI:STEP",
                        help=f"stage 2 starts from the lowest-cost point of this grid (default {BOX_GRID}; "
                        "'none' starts from the nominal value)")
    parser.add_argument("--max-iterations", type=int, default=30, metavar="N",
                        help="Gauss-Newton iterations at most, per stage (default 30)")
    parser.add_argument("--box-pose", default="mocap", choices=("mocap", "camera"),
                        help="how the stand-in reports its box: mocap (poses, default) or camera (images of the "
                        "AprilTags on its faces, turned into poses by the tag_detector node, as in a lab without "
                        "motion capture)")
    parser.add_argument("--design", type=bounded_int(1, 10), metavar="N",
                        help="run the design loop instead: three pushes, a fit of the frictions, N pushes from "
                             "'sim2real design', N more of the standard sequence, refits, and a report of the "
                             "designed pushes' forecast and achieved intervals (OUT/design_check.json)")
    parser.add_argument("--workers", type=bounded_int(1, 64), default=2, metavar="W",
                        help="with --design: local worker processes for the design's candidates (default 2)")
    add_engine_argument(parser)
    add_live_argument(parser)
    parser.epilog = ("The demo checks its own result: every fitted parameter with a hidden value in the stand-in's "
                     f"world file must land within its tolerance ({tolerance_text()}; the command delay also "
                     "holds the loop's own latency) and both fit stages must converge; "
                     "the verdict opens the summary and is written to OUT/demo_check.json. Exit status: 0 the "
                     "check passed; 3 the demo finished but missed (the files are written); 2 bad input, or a fit "
                     "with no usable trial; 5 the experiment failed in each of its attempts (a fault, or more "
                     f"than {MAX_UNUSABLE_TRIALS} trials that are not standard pushes; fewer are left out and named; "
                     "demo_check.json records either as a miss); 130 interrupted.")
    parser.set_defaults(handler=run, uses_engine=True,
                        stage_defaults={dest: parser.get_default(dest) for dest, _ in _STAGE_OPTIONS})


def _step(number: int, text: str) -> float:
    print(f"[{number}/4] {text}", flush=True)
    return time.perf_counter()


def _detail(line: str) -> None:
    print(f"      {line}", flush=True)


def _red(text: str) -> str:
    return f"\033[31m{text}\033[0m" if sys.stdout.isatty() and not os.environ.get("NO_COLOR") else text


def _report_fit(result: FitResult, params_path: Path, fit_json: Path) -> None:
    from sim2real.cli.fit_cmd import prediction_lines

    if not result.ok:
        _detail(_red(f"  FIT {result.status.upper()}: " + "; ".join(result.problems or (result.stop_reason,))))
    method = result.data.get("uncertainty", {}).get("method")
    if method:
        _detail(f"  intervals: {method}")
    for name, value in result.values.items():
        ci = result.ci95.get(name)
        interval = f"  95 % [{ci[0]:.4g}, {ci[1]:.4g}]" if ci else "  (not determined by the data)"
        _detail(f"  {name:<20} {result.start_values[name]:.4g} -> {value:.4g}{interval}")
    for warning in result.warnings:
        _detail(f"  warning: {warning}")
    for line in prediction_lines(result.validation):
        _detail(f"  {line.strip()}")
    _detail(f"  {result.stop_reason}; wrote {params_path} and {fit_json.name}")


def _write_check(out: Path, check: dict[str, object]) -> Path:
    import json

    path = out / "demo_check.json"
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(check, indent=2) + "\n")
    return path


def _print_verdict(check: dict[str, object]) -> None:
    if check["passed"]:
        print("DEMO CHECK PASSED: the fit landed within tolerance of the stand-in's hidden values:")
    else:
        print(_red("DEMO CHECK MISSED: " + "; ".join(check["missed"])))  # type: ignore[arg-type]
    for name, entry in check["parameters"].items():  # type: ignore[attr-defined]
        print(f"  {name:<20} fitted {entry['fitted']:.4g}, hidden {entry['hidden']:.4g}, "
              f"tolerance [{entry['low']:.4g}, {entry['high']:.4g}]: {'ok' if entry['within'] else 'MISSED'}")


def run(args: argparse.Namespace) -> int:
    """Run the demo, check it against the stand-in's hidden values, print the verdict first.

    Returns
    -------
    int
        0 when the check passed, 3 when the demo finished but missed (files written).

    Raises
    ------
    Sim2RealError
        Bad input, or a step that could not finish (the experiment, a fit with no usable
        trial); ``demo_check.json`` then records the failure as a miss.
    """
    from sim2real.cli.common import check_output_location
    from sim2real.engines import engine
    from sim2real.errors import Sim2RealError
    from sim2real.hardware.standin import load_standin
    from sim2real.nodes.runner import check_loopback_ip
    from sim2real.trials.experiment import parse_distances

    out = check_output_location(args.out)
    if out.exists() and not out.is_dir():
        raise Sim2RealError(f"--out {out} is a file, not a directory")
    if out.exists() and any(out.iterdir()):
        raise Sim2RealError(f"output directory {out} is not empty; choose a new one")
    if args.max_iterations < 0:  # before the experiment, not after it
        raise Sim2RealError(f"--max-iterations must be >= 0, got {args.max_iterations}")
    if args.box_mode == "closed" and not engine(args.engine).differentiates_arm:
        raise Sim2RealError(f"--engine {args.engine} does not differentiate the simulated arm: "
                            "use --box-mode kinematic")
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    if os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] != "LOCALHOST":
        raise Sim2RealError("the demo keeps ROS 2 on loopback: set ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))
    grid = parse_grid(args.box_grid)
    if args.distances is not None:
        if not args.distances.strip():
            raise Sim2RealError("--distances is empty; give start distances in m, e.g. 0.30,0.45")
        parse_distances(args.distances)
    held_out_distances(args)
    check_loopback_ip(str(args.standin_host), "--standin-host")
    hidden = load_standin().params
    if args.design is not None:
        _refuse_stage_options(args)
        return _run_design_loop(args, out, hidden)
    try:
        return _run_steps(args, out, grid, {name: float(hidden[name]) for name in TOLERANCES})
    except Sim2RealError as err:
        path = _write_check(out, {"passed": False, "parameters": {}, "fits": [],
                                  "missed": [f"the demo stopped: {err}"], "error": str(err)})
        print(_red(f"DEMO CHECK MISSED: the demo stopped before it could check its fit ({path})"), flush=True)
        raise


#: Options of the standard demo's stages that the design loop does not take (dest, option).
_STAGE_OPTIONS = (("distances", "--distances"), ("validation_distances", "--validation-distances"),
                  ("servo_free", "--servo-free"), ("box_free", "--box-free"), ("box_mode", "--box-mode"),
                  ("box_grid", "--box-grid"), ("max_iterations", "--max-iterations"), ("live", "--live"),
                  ("box_pose", "--box-pose"))


def _refuse_stage_options(args: argparse.Namespace) -> None:
    """Refuse, with --design, an option of the standard demo's stages given a value of its own."""
    from sim2real.errors import InputError

    defaults = args.stage_defaults
    for dest, option in _STAGE_OPTIONS:
        if getattr(args, dest, None) != defaults.get(dest):
            raise InputError(f"{option} is an option of the standard demo; the design loop (--design) has its own "
                             f"pushes and fit")


def _run_design_loop(args: argparse.Namespace, out: Path, hidden: object) -> int:
    """The design loop (:mod:`sim2real.demo.design_loop`): its steps, the table, the verdict; the exit status."""
    import json

    from sim2real.demo.design_loop import LOOP_FREE, run_design_loop

    start = time.perf_counter()
    values = {name: float(hidden[name]) for name in LOOP_FREE}  # type: ignore[index]
    outcome = run_design_loop(out, args.design, values, str(args.standin_host), args.engine, args.workers,
                              lambda k, text: print(f"[{k}/5] {text}", flush=True), _detail)
    path = out / "design_check.json"
    path.write_text(json.dumps(outcome.check, indent=2) + "\n")
    print()
    if outcome.check["passed"]:
        print(f"DESIGN LOOP PASSED: the {args.design} designed push(es) determine {', '.join(LOOP_FREE)} with "
              f"intervals {outcome.check['width_ratio_standard_over_designed']:.3g}x narrower than "
              f"{args.design} more of the standard sequence, and they hold the stand-in's hidden values:")
    else:
        print(_red("DESIGN LOOP MISSED: " + "; ".join(outcome.check["missed"])))
    for line in outcome.lines:
        print(line)
    print(f"report: {outcome.report}")
    print(f"design check: {path}")
    print(f"design loop finished in {time.perf_counter() - start:.0f} s")
    return 0 if outcome.check["passed"] else 3


def held_out_distances(args: argparse.Namespace) -> tuple[float, ...]:
    """The validation start distances of ``args`` (empty for ``none``).

    Raises
    ------
    Sim2RealError
        Unparsable, or a distance that is also fitted.
    """
    from sim2real.errors import Sim2RealError
    from sim2real.trials.experiment import parse_distances

    text = args.validation_distances.strip()
    if text.lower() == "none":
        return ()
    values = parse_distances(text)
    fitted = parse_distances(args.distances) if args.distances is not None else DEMO_DISTANCES
    both = [v for v in values if any(abs(v - f) < 1e-9 for f in fitted)]
    if both:
        raise Sim2RealError(f"--validation-distances {','.join(f'{v:g}' for v in both)} m also in the fitted "
                            "distances: a held-out push must be one the fit never sees")
    return values


class _Console:
    """The demo's progress on the console (:class:`sim2real.demo.pipeline.DemoProgress`)."""

    def step(self, number: int, text: str) -> float:
        return _step(number, text)

    def detail(self, line: str, alarm: bool = False) -> None:
        _detail(_red(line) if alarm else line)

    def fit(self, result: FitResult, params_path: Path, fit_json: Path) -> None:
        _report_fit(result, params_path, fit_json)


def _options(args: argparse.Namespace, grid: tuple[str, list[float]] | None) -> DemoOptions:
    from sim2real.trials.experiment import parse_distances

    return DemoOptions(distances=parse_distances(args.distances) if args.distances is not None else None,
                       validation_distances=held_out_distances(args), servo_free=args.servo_free,
                       box_free=args.box_free, box_mode=args.box_mode, grid=grid, max_iterations=args.max_iterations,
                       standin_host=args.standin_host, engine=args.engine, live=args.live,
                       box_pose=args.box_pose)


def _run_steps(args: argparse.Namespace, out: Path, grid: tuple[str, list[float]] | None,
               hidden: dict[str, float]) -> int:
    """Steps 1-4 and the check (see the module docstring); the verdict first, then the summary; the exit status."""
    from sim2real.demo.pipeline import run_demo

    start = time.perf_counter()
    outcome = run_demo(_options(args, grid), out, hidden, _Console())
    check, report, failed_attempts, disturbed = outcome.check, outcome.report, outcome.failed_attempts, \
        outcome.disturbed
    check_path = _write_check(out, check)
    print()
    _print_verdict(check)
    if failed_attempts:
        print(f"  (the experiment ran {len(failed_attempts) + 1} times: "
              + "; ".join(f"attempt {i + 1} failed: {reason}" for i, reason in enumerate(failed_attempts)) + ")")
    left_out = check.get("experiment", {}).get("left_out") or []
    if left_out:
        print(_red(f"  {len(left_out)} recorded trial(s) left out, not standard pushes: "
                   + "; ".join(entry["reason"] for entry in left_out)))
    starved = check.get("experiment", {}).get("starved") or []
    if starved:
        print(_red(f"  {len(starved)} trial(s) with a starved real control loop (a busy machine; fitted, and "
                   "screened before the box stage): "
                   + "; ".join(f"{entry['trial']} ({entry['loop']})" for entry in starved)))
    if disturbed:
        print(_red(f"  {len(disturbed)} trial(s) not comparable: the real arm's pusher left the fitted arm's path "
                   f"by more than {MAX_PUSHER_PATH_GAP * 100:g} cm (its commands reached it late: a busy machine), "
                   "so sim and real pushed differently: "
                   + ", ".join(f"{d['trial']} ({d['pusher_path_gap_m'] * 100:.1f} cm)" for d in disturbed)))  # type: ignore[operator]
    print()
    print(report.text)
    print()
    if "mean_gap_m" in check:
        gaps = check["mean_gap_m"]
        print(f"mean sim-vs-real final-distance gap: {gaps['before'] * 100:.2f} cm before the fit, "
              f"{gaps['after'] * 100:.2f} cm after")
    print(f"report: {report.html}")
    print(f"demo check: {check_path}")
    print(f"demo finished in {time.perf_counter() - start:.0f} s")
    sys.stdout.flush()
    return 0 if check["passed"] else 3

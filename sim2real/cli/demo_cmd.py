"""``sim2real demo``: the whole loop on the embedded default, without hardware.

1. **Experiment** — the reality stand-in (the xArm controller emulator, driven through the
   real ``xarm-python-sdk`` on loopback, plus a physics world with hidden parameters and
   motion-capture noise and latency) and the mirrored simulator with nominal parameters push
   the box from :data:`DEMO_DISTANCES` (the five published start distances plus four near the
   distance where the push stops toppling the box) as ROS 2 nodes; one rosbag2 per trial. Two more
   pushes (:data:`VALIDATION_DISTANCES`) are recorded and held out: no fit stage sees them.
2. **Fit** — Gauss-Newton on the recordings (implicit gradients), in two stages: the arm's
   servo (time constant, command delay) from the recorded commands and joint states (robust
   loss: ticks a busy machine delayed do not drag it), then the box (centre-of-mass height)
   from whole trials with the pusher played back as recorded, starting from the best point of
   a grid over the box height (5 mm steps, then 1 mm around the best). Writes the fitted ROS 2
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

from sim2real.cli.common import add_engine_argument
from sim2real.cli.run_cmd import add_live_argument

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sim2real.sysid import FitResult
    from sim2real.trials import TrialRecord

#: Start distances of the demo's pushes (m): the five published ones (Dojo, Table IV; 0.30 to 0.50) and
#: four near the distance where the standard push stops toppling the stand-in's box (between 0.44
#: and 0.45 m for its hidden centre of mass). The published five alone leave the box height
#: nearly undetermined: the whole-trial cost was flat within 20 % from -7.5 to -5.5 cm (hidden -6) on
#: most of 8 recorded runs, and the grid start and the fit wandered within that range (-7.4 cm in a
#: CI run, -7.1 in 2 of 10 demos). Pushes just inside and outside the toppling distance each bound the
#: height from one side (a box tips over or rocks back depending on it), which sharpened the minimum to
#: within 0.75 cm of the hidden value in 4 of 4 recorded runs.
DEMO_DISTANCES = (0.30, 0.35, 0.40, 0.42, 0.43, 0.44, 0.45, 0.46, 0.50)
#: Start distances of held-out pushes (m): recorded in the same experiment, never fitted, and predicted
#: by both fit stages at the start and the fitted values (one push that topples the box, one that does not).
VALIDATION_DISTANCES = (0.38, 0.48)
#: Stage 1: the servo, from commands and joint states (joint residuals, 20-step segments).
SERVO_FREE = ("arm.servo_tau", "arm.command_delay")
#: Stage 1 loss: Huber's, from 1 mrad of joint error (the weighted residual unit). A loaded machine
#: delays some control ticks (their command reaches the arm late); least squares then bends the lag
#: to fit them (servo_tau +18 % in a run beside a CPU hog), the robust loss keeps them from dragging it.
SERVO_LOSS = "huber"
#: Stage 1 stops when an accepted step lowers the cost by less than this fraction. The robust
#: loss is minimised by reweighting, which converges linearly (each step about a third shorter
#: than the last): at 1e-6 of the cost the values move by well under 1 % of their 95 % interval,
#: where the default 1e-8 would spend the iteration limit on those crumbs.
SERVO_FTOL = 1e-6
#: Stage 2: the box, from whole trials. The toppling pushes barely load friction (the box tips
#: before it slides), so the friction coefficients are left to sliding data such as cube tosses.
BOX_FREE = ("box.com_z",)
#: Stage 2 plays the pusher back as recorded (``kinematic``: the real pusher pose): the box fit
#: then does not inherit the servo fit's errors, and each whole-trial evaluation costs a
#: fraction of a closed-loop one (no arm to simulate). Re-simulation (step 3) is closed-loop.
BOX_MODE = "kinematic"
#: Stage 2 starts from the best point of this grid (m, the box's height is 0.21 m): the
#: whole-trial cost jumps where a push stops toppling the box, and the basin around the truth is
#: only about 2 cm wide (between the heights at which the 40 cm push stops toppling the box and
#: the 45 cm push starts to), so the grid step must be well below that.
BOX_GRID = "box.com_z=-0.10:0.10:0.005"
#: Around the coarse grid's best point, a fine grid (m: half-width, step) gives the start and the trial
#: jackknife of the minimum. On the coarse grid's 5 mm steps every leave-one-out minimum fell on the
#: same point in a demo beside a test run, so the jackknife could not widen a ±0.2 mm sandwich interval
#: (the spread between runs is several mm); at 1 mm the same recordings gave ±2.7 and ±5.7 mm.
BOX_FINE = (0.010, 0.001)
#: Stage 2 stops when an accepted step lowers the cost by less than this fraction: a whole-trial cost
#: under hard contact is rough at the 0.1 % level (contact events shift by a tick), where Gauss-Newton
#: steps stop paying and the default 1e-8 would spend every iteration rejecting steps.
BOX_FTOL = 1e-3
#: Attempts at the experiment (step 1). On a loaded machine the real platform's safety checks can
#: stop a trial (a command round trip above 100 ms is a link stall; the driver latches the fault
#: and never resumes by itself), or its loop can lose its pace and the arm its reference (see
#: :data:`MAX_TRACKING_ERROR`); the demo then says so, keeps that run for inspection
#: (``standin_nominal.failed<N>/``) and runs the experiment again, as an operator would.
EXPERIMENT_ATTEMPTS = 3
#: A real trial whose arm left the reference by more than this (rad, any joint) is not a standard
#: push. On this push the real arm lags its reference by at most about 0.25 rad (the ideal sim
#: platform's 0.18); on a busy machine the 100 Hz loop skips ticks, the PD loop overshoots by 0.4 to
#: 0.6 rad and the pusher hits the box from above (it was thrown 0.9 m in one such trial).
MAX_TRACKING_ERROR = 0.35
#: A real box moving faster than this (m/s, over 50 ms) was thrown, not pushed: the pusher moves
#: at 0.55 m/s and a toppling box's centre at about 1 m/s (at most 1.2 m/s in 40 runs here); the
#: trials a pusher jump in the stand-in threw reached 2.9 to 6.7 m/s.
MAX_BOX_SPEED = 2.0
#: After the fit, a trial whose real pusher path lies farther than this (m, at any time) from the
#: re-simulated arm's path under the same PD law was not the push the model describes: its
#: commands reached the real arm late (a busy machine delays the loop by 30-50 ms for a few ticks,
#: and the arm, lagging a reference near its speed limit, overshoots). Measured here: 7-23 mm on
#: undisturbed trials, 61 mm on one whose pusher then hit a box it should have missed. Such a trial's
#: flip and distance are not compared with the simulator's; the demo names it.
MAX_PUSHER_PATH_GAP = 0.035
#: How close the demo's fit must land to the stand-in's hidden values (config/standin.yaml):
#: (lower offset, upper offset) from the hidden value, in the parameter's unit. The fitted command
#: delay also holds the loop's own latency (the command is stamped with the joint-state read it
#: answers and reaches the arm after the PD tick and one SDK round trip: 1.5-5 ms here), hence
#: its one-sided margin.
TOLERANCES: dict[str, tuple[float, float]] = {
    "arm.servo_tau": (-0.0065, 0.0065),      # s, ±10 %
    "arm.command_delay": (-0.002, 0.015),    # s
    "box.com_z": (-0.010, 0.010),            # m, ±1 cm (5 % of the box height)
}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo", help="the whole loop without hardware: stand-in experiment, fit, re-simulation, report",
        description="Run the whole sim-to-real loop on the embedded default, without hardware: the reality "
        "stand-in (xArm controller emulator through the real SDK on loopback, a physics world with hidden "
        "parameters, motion-capture noise and latency) and the mirrored simulator with nominal parameters "
        "push the box from the published start distances and four near the toppling distance (ROS 2 nodes, "
        "one rosbag2 per trial); Gauss-Newton "
        "system identification fits the simulator to the stand-in recordings; the trials are re-simulated "
        "with the fitted parameters; a report compares sim and real before and after the fit. DDS stays on "
        "loopback.",
    )
    parser.add_argument("--out", default="demo_out", metavar="DIR",
                        help="output directory (created; must be new or empty; default demo_out)")
    parser.add_argument("--distances", metavar="D1,D2,...",
                        help="start distances in m (default: the five published ones, 0.30 to 0.50, and four near the "
                        "toppling distance: " + ",".join(f"{d:.2f}" for d in DEMO_DISTANCES) + ")")
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
    add_engine_argument(parser)
    add_live_argument(parser)
    parser.epilog = ("The demo checks its own result: every fitted parameter with a hidden value in the stand-in's "
                     f"world file must land within its tolerance ({_tolerance_text()}; the command delay also "
                     "holds the loop's own latency) and both fit stages must converge; "
                     "the verdict opens the summary and is written to OUT/demo_check.json. Exit status: 0 the "
                     "check passed; 3 the demo finished but missed (the files are written); 2 bad input, or a step "
                     "could not finish (demo_check.json records it as a miss).")
    parser.set_defaults(handler=run, uses_engine=True)


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


def _parse_grid(text: str) -> tuple[str, list[float]] | None:
    """``NAME=LO:HI:STEP`` as (name, values), or None for ``none``."""
    import numpy as np

    from sim2real.errors import Sim2RealError

    if text.strip().lower() == "none":
        return None
    try:
        name, spec_text = text.split("=", 1)
        low, high, step = (float(v) for v in spec_text.split(":"))
    except ValueError:
        raise Sim2RealError(f"--box-grid must be NAME=LO:HI:STEP or none, got '{text}'") from None
    if not (step > 0 and high >= low):
        raise Sim2RealError(f"--box-grid needs LO <= HI and STEP > 0, got '{text}'")
    return name.strip(), [float(v) for v in np.arange(low, high + 0.5 * step, step)]


def fine_grid(name: str, centre: float, half_width: float, step: float) -> list[float]:
    """Equally spaced values of ``name`` (its unit) ``step`` apart within ``half_width`` of ``centre``,
    shifted to stay inside the parameter's bounds."""
    import numpy as np

    from sim2real.params import spec

    entry = spec(name)
    count = round(half_width / step)
    low = min(max(centre - count * step, entry.lower), entry.upper - 2 * count * step)
    return [float(v) for v in low + step * np.arange(2 * count + 1)]


def check_against_hidden(fits: list[FitResult], hidden: dict[str, float]) -> dict[str, object]:
    """The demo's verdict: each fitted parameter with a hidden value and a tolerance, and each stage's status.

    Returns
    -------
    dict
        ``passed`` (bool), ``parameters`` {name: {fitted, hidden, low, high, within}}, ``fits``
        [{status, problems}], ``missed`` [one-line reasons].
    """
    parameters: dict[str, dict[str, object]] = {}
    missed: list[str] = []
    for result in fits:
        if result.status != "converged":
            missed.append(f"a fit stage did not converge ({result.stop_reason})")
        for name, value in result.values.items():
            if name not in hidden or name not in TOLERANCES:
                continue
            low, high = hidden[name] + TOLERANCES[name][0], hidden[name] + TOLERANCES[name][1]
            within = low <= value <= high
            parameters[name] = {"fitted": value, "hidden": hidden[name], "low": low, "high": high, "within": within}
            if not within:
                missed.append(f"{name} = {value:.4g}, hidden {hidden[name]:.4g}, outside [{low:.4g}, {high:.4g}]")
    return {"passed": not missed, "parameters": parameters, "missed": missed,
            "fits": [{"status": r.status, "problems": list(r.problems)} for r in fits]}


def recording_problems(records: Sequence[TrialRecord]) -> list[str]:
    """Why a stand-in run is not a set of standard pushes (empty when it is).

    A trial must be complete, its real arm must have followed the recorded reference within
    :data:`MAX_TRACKING_ERROR` (rad) on every joint while the reference ran, and its real box
    must not have moved faster than :data:`MAX_BOX_SPEED` (m/s, displacement over 50 ms).

    Parameters
    ----------
    records : sequence of TrialRecord
        The run's trials, with ``real`` joint states and the reference.

    Returns
    -------
    list of str
        One line per problem, naming the trial.
    """
    import numpy as np

    problems = []
    for record in records:
        if not record.complete:
            problems.append(f"trial {record.name} is incomplete")
            continue
        real, reference = record.platforms.get("real"), record.reference
        if real is None or reference is None or len(real.joint_states) == 0:
            problems.append(f"trial {record.name} has no real joint states or no reference")
            continue
        states = real.joint_states
        inside = states.t <= reference.t[-1]
        wanted = np.column_stack([np.interp(states.t[inside], reference.t, reference.position[:, j])
                                  for j in range(reference.position.shape[1])])
        error = float(np.max(np.abs(states.position[inside] - wanted), initial=0.0))
        if error > MAX_TRACKING_ERROR:
            problems.append(f"in trial {record.name} the real arm left its reference by {error:.2f} rad "
                            f"(limit {MAX_TRACKING_ERROR:g}: the control loop lost its pace)")
        box = real.box_pose
        span = 5  # samples, 50 ms at 100 Hz
        if len(box) > span:
            speed = float(np.max(np.linalg.norm(box.position[span:] - box.position[:-span], axis=1)
                                 / np.maximum(box.t[span:] - box.t[:-span], 1e-9)))
            if speed > MAX_BOX_SPEED:
                problems.append(f"in trial {record.name} the real box moved at {speed:.1f} m/s (limit "
                                f"{MAX_BOX_SPEED:g}: thrown, not pushed)")
    return problems


def disturbed_gap(record: TrialRecord) -> float | None:
    """The pusher-path gap (m) of a re-simulated trial when it exceeds :data:`MAX_PUSHER_PATH_GAP`.

    Parameters
    ----------
    record : TrialRecord
        A trial with the ``real`` platform as recorded and the ``sim`` platform re-simulated, each
        with a pusher pose.

    Returns
    -------
    float or None
        The largest distance between the real and the simulated pusher path (m) when the real arm
        was disturbed, None when it was not (or a path is missing).
    """
    from sim2real.trials import path_gap

    real, sim = record.platforms.get("real"), record.platforms.get("sim")
    if real is None or sim is None or real.pusher_pose is None or sim.pusher_pose is None:
        return None
    gap = path_gap(real.pusher_pose, sim.pusher_pose)
    return gap if gap is not None and gap > MAX_PUSHER_PATH_GAP else None


def _tolerance_text() -> str:
    """The tolerances in words, for ``--help``."""
    parts = []
    for name, (low, high) in TOLERANCES.items():
        scale, unit = (100.0, "cm") if name.startswith("box.") else (1000.0, "ms")
        if low == -high:
            parts.append(f"{name} ±{high * scale:g} {unit}")
        else:
            parts.append(f"{name} {low * scale:+g}/{high * scale:+g} {unit}")
    return ", ".join(parts)


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
    grid = _parse_grid(args.box_grid)
    if args.distances is not None:
        if not args.distances.strip():
            raise Sim2RealError("--distances is empty; give start distances in m, e.g. 0.30,0.45")
        parse_distances(args.distances)
    held_out_distances(args)
    check_loopback_ip(str(args.standin_host), "--standin-host")
    hidden = load_standin().params
    try:
        return _run_steps(args, out, grid, {name: float(hidden[name]) for name in TOLERANCES})
    except Sim2RealError as err:
        path = _write_check(out, {"passed": False, "parameters": {}, "fits": [],
                                  "missed": [f"the demo stopped: {err}"], "error": str(err)})
        print(_red(f"DEMO CHECK MISSED: the demo stopped before it could check its fit ({path})"), flush=True)
        raise


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


def is_held_out(record: TrialRecord, distances: Sequence[float]) -> bool:
    """Whether a recorded trial was pushed from one of the held-out start ``distances`` (m)."""
    requested = record.meta.get("requested_start_m")
    if not isinstance(requested, (list, tuple)) or not requested:
        return False
    return any(abs(float(requested[0]) - d) < 1e-6 for d in distances)


def _run_steps(args: argparse.Namespace, out: Path, grid: tuple[str, list[float]] | None,
               hidden: dict[str, float]) -> int:
    """Steps 1-4 and the check (see the module docstring); the exit status."""
    from dataclasses import replace

    from sim2real.errors import Sim2RealError
    from sim2real.nodes.runner import run_experiment
    from sim2real.params import ParameterSet
    from sim2real.report import build_report
    from sim2real.sysid import LMSettings, Weights, fit_trials
    from sim2real.sysid.multistart import GridPoint, best_start, grid_costs, grid_jackknife, with_jackknife
    from sim2real.sysid.replay import replay_trial
    from sim2real.sysid.residuals import ResidualSpec
    from sim2real.sysid.writeback import write_fit
    from sim2real.trials import read_run, read_run_meta, trial_dirs, write_run_meta, write_trial
    from sim2real.trials.experiment import parse_distances

    nominal = ParameterSet.nominal()
    validation_distances = held_out_distances(args)
    before_dir, fit_dir, after_dir = out / "standin_nominal", out / "fit", out / "resim_fitted"
    start = time.perf_counter()

    t0 = _step(1, "experiment: reality stand-in (emulated xArm via the SDK) + mirrored sim, nominal parameters")
    failed_attempts: list[str] = []
    while True:
        try:
            distances = parse_distances(args.distances) if args.distances is not None else DEMO_DISTANCES
            run_experiment("standin", (*distances, *validation_distances), nominal, before_dir,
                           standin_host=args.standin_host, progress=_detail, engine=args.engine, live=args.live)
            problems = recording_problems(read_run(before_dir))
            if not problems:
                break
            reason = "; ".join(problems)
        except Sim2RealError as err:
            reason = str(err)
        failed_attempts.append(reason)
        kept = before_dir.with_name(f"{before_dir.name}.failed{len(failed_attempts)}")
        if before_dir.exists():
            before_dir.rename(kept)
        if len(failed_attempts) >= EXPERIMENT_ATTEMPTS:
            raise Sim2RealError(f"the experiment failed in each of {EXPERIMENT_ATTEMPTS} attempts (runs kept in "
                                f"{before_dir.name}.failed<N>); the last: {reason}")
        _detail(_red(f"experiment attempt {len(failed_attempts)} failed: {reason}; its trials are kept in "
                     f"{kept}; running it again"))
    recorded = read_run(before_dir)
    paths = [str(path) for path in trial_dirs(before_dir)]
    _detail(f"{len(recorded)} trials recorded in {before_dir} ({time.perf_counter() - t0:.0f} s)")
    records, sources, held, held_sources = [], [], [], []
    for record, path in zip(recorded, paths, strict=True):
        trials, where = (held, held_sources) if is_held_out(record, validation_distances) else (records, sources)
        trials.append(record)
        where.append(path)

    t0 = _step(2, "fit: Gauss-Newton on implicit gradients")
    if held:
        _detail(f"{len(records)} trials to fit; {len(held)} held out for validation: "
                + ", ".join(r.name for r in held))
    settings = replace(LMSettings(), max_iterations=args.max_iterations)
    _detail(f"stage 1, servo from commands and joint states ({SERVO_LOSS} loss): {args.servo_free}")
    servo = fit_trials(records, nominal, args.servo_free, horizon=20, platform="real", sources=sources,
                       weights=Weights(position=0.0, orientation=0.0),
                       settings=replace(settings, loss=SERVO_LOSS, ftol=SERVO_FTOL),
                       validation=held, validation_sources=held_sources, engine=args.engine)
    _report_fit(servo, *write_fit(fit_dir / "servo.yaml", servo))
    how = "the pusher played back as recorded" if args.box_mode == "kinematic" else "the arm under the PD law"
    _detail(f"stage 2, box from whole trials with {how}: {args.box_free}")
    box_start = servo.params
    points: list[GridPoint] = []
    if grid is not None:
        name, values = grid
        box_spec = ResidualSpec(horizon=None, mode=args.box_mode, engine=args.engine)
        coarse = grid_costs(records, servo.params, name, values, box_spec, platform="real")
        best = best_start(coarse)
        _detail(f"  best of {len(coarse)} grid points of {name}: {best.value:.4g} (cost {best.cost:.4g}; at the "
                f"nominal {servo.params[name]:.4g}: "
                f"{min(coarse, key=lambda p: abs(p.value - float(servo.params[name]))).cost:.4g})")
        points = grid_costs(records, servo.params, name, fine_grid(name, best.value, *BOX_FINE), box_spec,
                            platform="real")
        best = best_start([*points, best])
        box_start = servo.params.replace({name: best.value})
        _detail(f"  start from the best of {len(points)} points {BOX_FINE[1] * 1000:g} mm apart around it: "
                f"{best.value:.4g} (cost {best.cost:.4g})")
    result = fit_trials(records, box_start, args.box_free, horizon=None, mode=args.box_mode, platform="real",
                        sources=sources, settings=replace(settings, ftol=BOX_FTOL), validation=held,
                        validation_sources=held_sources, engine=args.engine)
    grid_name = grid[0] if grid is not None else None
    jackknife = grid_jackknife(points) if grid_name in result.values else None
    if grid_name is not None and jackknife is not None:
        result = with_jackknife(result, grid_name, jackknife)
    params_path, fit_json = write_fit(fit_dir / "fitted.yaml", result)
    _report_fit(result, params_path, fit_json)
    _detail(f"fit done ({time.perf_counter() - t0:.0f} s)")

    t0 = _step(3, "re-simulate the recorded trials with the fitted parameters under the PD law")
    run_meta = read_run_meta(before_dir)
    replayed = 0
    disturbed: list[dict[str, object]] = []
    for record in recorded:
        try:
            resim = replay_trial(record, result.params, mode="closed", platform="real", engine=args.engine)
        except Sim2RealError as err:  # keep the others; the check below says the demo missed
            _detail(_red(f"re-simulation of {record.name} failed: {err}"))
            continue
        write_trial(after_dir, resim)
        replayed += 1
        gap = disturbed_gap(resim)
        if gap is not None:
            disturbed.append({"trial": record.name, "pusher_path_gap_m": gap})
    write_run_meta(after_dir, {**run_meta, "mode": "replay", "params_file": str(params_path)})
    _detail(f"{replayed} of {len(recorded)} trials in {after_dir} ({time.perf_counter() - t0:.0f} s)")
    check = check_against_hidden([servo, result], hidden)
    check["experiment"] = {"attempts": len(failed_attempts) + 1, "failed": failed_attempts}
    check["disturbed"] = disturbed
    if 2 * len(disturbed) > len(recorded):
        check["passed"] = False
        check["missed"] = [*check["missed"], f"the real loop was disturbed in {len(disturbed)} of {len(recorded)} "
                           "trials: too few undisturbed pushes to compare (run the demo on a quieter machine)"]
    if replayed != len(recorded):
        check["passed"] = False
        check["missed"] = [*check["missed"], f"{len(recorded) - replayed} trial(s) could not be re-simulated"]
    check["validation"] = {"trials": [r.name for r in held],
                           "servo": (servo.validation or {}).get("prediction"),
                           "box": (result.validation or {}).get("prediction")}

    _step(4, "report: sim vs real before and after the fit")
    report = build_report([before_dir, after_dir], out / "report", fit=[fit_dir / "servo.json", fit_json],
                          labels=["before fit (nominal)", "after fit"], truth=hidden)
    if len(report.tables) == 2 and report.tables[0].mean_gap_m is not None \
            and report.tables[1].mean_gap_m is not None:
        check["mean_gap_m"] = {"before": report.tables[0].mean_gap_m, "after": report.tables[1].mean_gap_m}
    check_path = _write_check(out, check)
    print()
    _print_verdict(check)
    if failed_attempts:
        print(f"  (the experiment ran {len(failed_attempts) + 1} times: "
              + "; ".join(f"attempt {i + 1} failed: {reason}" for i, reason in enumerate(failed_attempts)) + ")")
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
        print(f"mean sim-vs-real final-distance gap: {gaps['before'] * 100:.2f} cm before the fit, "  # type: ignore[index]
              f"{gaps['after'] * 100:.2f} cm after")  # type: ignore[index]
    print(f"report: {report.html}")
    print(f"demo check: {check_path}")
    print(f"demo finished in {time.perf_counter() - start:.0f} s")
    sys.stdout.flush()
    return 0 if check["passed"] else 3

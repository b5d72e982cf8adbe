"""``sim2real fit``: Gauss-Newton fit of simulator parameters to recorded trials."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from sim2real.cli.common import (
    EXIT_FIT_PROBLEMS,
    EXIT_TRIALS_FAILED,
    add_engine_argument,
    add_executor_arguments,
    add_param_arguments,
    bounded_float,
    bounded_int,
    params_from_args,
    red,
)

if TYPE_CHECKING:
    from pathlib import Path

    from sim2real.sysid import FitResult

EPILOG = """\
BAG is a trial directory (rosbag2 + trial.json) or a run directory (all trials in it).
Writes OUT (a complete ROS 2 params YAML under '/**') and, next to it, the fit report with
the same stem and suffix .json (fitted.yaml -> fitted.json): status, problems, values,
start_values, std, ci95, correlation, trace, stop_reason, warnings, data (with data.starts),
failures, solver, dropped_rows, validation, versions, bounds, hard_steps. --json prints that object.

Status: the summary opens with it (in red on a terminal), and so do fit.json ("status":
"converged" or "not converged", "problems": one line each) and the report. A fit is not
converged when it stopped at --max-iterations. Problems, most important first:
  - an undetermined parameter, named with the reason: a 95 % interval covering 90 % or more
    of its bounds, (--jackknife) leave-one-out refits outside its 95 % interval, or no
    standard deviation at all (a direction the data do not fix);
  - an optimum that depends on the start (see Starts); alternative starts none of which could
    be evaluated (the optimum's independence of the start is unchecked; only some failing is a
    warning);
  - not converged; a stop on a corner of the bounds (every parameter at a bound) after at
    most 2 iterations; a parameter at a bound;
  - a held-out cost that rose, or a held-out prediction error (final position, yaw, path)
    higher after the fit than before (--validate, --holdout);
  - (--spread-draws) a prediction band that cannot be calibrated at its level (too few held-out or,
    with --cross-fit, cross-fitted trials), or that holds fewer of those outcomes than its level,
    each judged by the calibration from the others (binomial p < 0.05);
  - residual rows left out because they depend on degraded solver steps; trials left out;
  - fitted or held-out trials imported with --force although their scene is not physical.
Standard deviations, intervals and warnings (e.g. "poorly determined": std above half the
parameter's scale) quote the same figures: those of the reported intervals, after any jackknife.

Exit status:
  0  converged, no problem;
  1  some trials were left out (unreadable, missing inputs, failing at the start values):
     each is named on stderr and in fit.json "failures"; the fit ran on the others;
  2  bad input, or no trial could be fitted (one line, nothing written);
  3  the fit finished but did not converge or has problems (the files are still written).

Validation: --validate BAG (trials never fitted) and/or --holdout F (a seeded share of the BAG
trials, whole trials) are held out. Their cost is tracked along the fit, and at the start and
the fitted values every training and held-out trial is simulated whole and compared with its
recording: mean final position error (m), yaw error (deg), path error (RMS distance of the box
centres over the trial, m), flip agreement, and the RMS position error over the fit's horizon
(e.g. 40-step predictions). fit.json "validation" holds the figures per trial; a held-out final
position, yaw or path error that is higher at the fitted values than at the start values (by
more than 1 % and than the printed precision, 0.1 mm or 0.1 deg) is a problem.

Bands: --spread-draws N predicts trials the fit did not see as spreads (N parameter sets drawn from
its uncertainty, the start moved by its measured noise and by the start error --start-error
chooses) and calibrates a prediction band on them
(model discrepancy and a conformal quantile, fit.json validation.spread; 'replay --spread' uses
it). They are the held-out trials (--validate, --holdout) and, with --cross-fit K, the fitted
trials too: dealt into K folds (with --seed), each fold predicted by the fit repeated without it,
started at the fitted values (K more fits). A 90 % band needs 9 such trials, 95 % needs 19: a
small set reaches them only by cross-fitting.

Starts: the fit runs from the given start and, with --starts N, from N - 1 others: Halton points
in the box of two parameter scales (max(|value|, 1 % of the bound range)) around the start,
inside the bounds. Default: N = 3 for p <= 4 unknowns when the fitted trials hold at most 6000
simulated steps in all (cheap: about a minute of recordings at 100 Hz), else 1 (the rule counts
steps, not seconds: the same command always tries the same starts); --starts 1 runs the given
start only. A start that reaches an optimum already found is stopped there. An optimum clearly
lower than the given start's (by more than 1 % of its cost, or the 95 % likelihood-ratio
threshold) is taken, with a warning naming its start; a start that ends as low (within that
tolerance) at values outside the reported 95 % intervals is a problem: the optimum depends on
the start. fit.json data.starts lists every start, where it ended, its cost.

--free takes comma-separated names; names joined by '=' are tied into one unknown, e.g.
  --free contact.mu_table,box.size_x=box.size_y=box.size_z

Several objects: each trial simulates its own object (trial.json "object": size, mass, pusher;
'sim2real import ... --object NAME' labels it). --per-object NAMES fits those free names once per
object label (reported as NAME[OBJECT], e.g. contact.mu_table[steel]); the other free names are
shared by every trial. The params YAML holds the shared values; each object's values go to
<OUT stem>.<OBJECT>.yaml beside it. Held-out trials of an object with no values are left out.
--horizon 1 (teacher-forced one-step), N (segments of N steps) or trial (whole trials).
--weights position=1000,orientation=100,joint_position=1000,joint_velocity=100 (1/m, 1/rad, ...).

Inputs: every mode needs topics, and a trial without them is left out and named, never
simulated with a stand-in (the arm held still, the box alone):
  --mode commands  joint states + /<ns>/joint_command (the arm simulated under them)
  --mode closed    joint states + /reference/joint_trajectory (the arm simulated under PD)
  --mode kinematic joint states (played back; the pusher from --pusher)
  --mode pusher    /<ns>/pusher_pose (the pusher played back)
  --mode auto      commands, else closed, for trials with joint states; pusher for trials
                   with only a pusher pose; a free box for box-only trials (cube tosses)
--mode applies to whole trials; --horizon N segments always play the pusher back.
--pusher recorded|arm: where a played-back pusher comes from: the recorded /<ns>/pusher_pose,
or xArm forward kinematics of the recorded joint states. Default: the recorded pose when the
trial has one, else FK. The choice is printed per trial and kept in fit.json (data.trials).
--pusher-shape sphere|rod: the shape of a recorded pusher (a point probe is a vertical rod):
sphere (default) centred at the recorded position, or rod: a vertical capsule of radius
pusher.radius and straight length pusher.length, the recorded position being its tip (the
centre of its lower end point), its upper end point pusher.length above. The arm's pusher is
a sphere: a trial driven by the arm (simulated or FK) is left out with rod. pusher.radius can
be fitted with either shape; pusher.length places the rod and cannot (no simulator gradient).
Kept in fit.json (data.pusher_shape).

Solver: steps that do not converge are recovered (more iterations, sub-steps, continuation)
or, as a last resort, degraded. Residual rows that depend on a degraded step at the start
values are left out (counted in "dropped_rows"); a trial step of the optimizer whose
evaluation fails, or degrades a step whose rows are in the fit, is rejected and noted in the
trace. Hard steps are saved beside OUT in a folder named after it, <OUT stem>.hard_steps/
(fitted.yaml -> fitted.hard_steps/; at most 20 per trial; re-solve one with 'sim2real
resolve-step'). --strict raises at the first step that does not converge instead (exit 2,
naming trial and step).

Gradients: the Jacobian is taken at the forward solution (contact.kappa_grad set to
contact.kappa_sim), i.e. it is the derivative of the residuals being minimised. The smoothed
gradients at the default kappa_grad (1e-4) are biased for sticking and resting contacts.

Horizon and noise: the segments of --horizon N start from box states rebuilt from
consecutive recorded poses, so their velocities carry the pose noise divided by the sample
interval. With clean or dense poses --horizon 1 is fine; with motion-capture noise of
millimetres use segments of tens of steps (cube tosses at 148 Hz: --horizon 40) or whole
trials. Whole arm trials (--horizon trial) use the recorded start only and are noise-robust,
but their cost is rougher: allow more iterations (30-40).
"""


def per_object_names(text: str | None) -> tuple[str, ...]:
    """``--per-object`` as names (comma-separated; empty entries skipped); () without the option."""
    return tuple(name.strip() for name in (text or "").split(",") if name.strip())


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``fit`` subcommand."""
    parser = subparsers.add_parser(
        "fit", help="fit simulator parameters to recorded trials (Gauss-Newton on implicit gradients)",
        description="Fit simulator parameters to recorded trials by Gauss-Newton / Levenberg-Marquardt "
                    "with Jacobians from the simulator's implicit gradients; write them back as a params YAML.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bags", nargs="+", metavar="BAG", help="trial or run directory")
    add_param_arguments(parser)
    parser.add_argument("--free", required=True, metavar="NAMES", help="parameters to fit (comma-separated)")
    parser.add_argument("--per-object", metavar="NAMES",
                        help="free parameters fitted once per object label (comma-separated; see below)")
    parser.add_argument("--out", required=True, metavar="F",
                        help="fitted params YAML to write (.yaml); it and its .json report must not exist "
                             "unless --force")
    parser.add_argument("--force", action="store_true",
                        help="replace an existing --out and its .json, but only files an earlier fit wrote "
                             "(never a recorded trial.json or any other file)")
    parser.add_argument("--horizon", default="1", metavar="1|N|trial",
                        help="residual horizon: 1 (default), N steps, or trial")
    parser.add_argument("--weights", metavar="GROUP=W,...", help="residual group weights")
    parser.add_argument("--mode", choices=("auto", "commands", "closed", "kinematic", "pusher"), default="auto",
                        help="whole trials: how the arm/pusher is driven (default auto; see below)")
    parser.add_argument("--pusher", choices=("auto", "recorded", "arm"), default="auto",
                        help="played-back pusher: recorded pusher pose or FK of the joint states "
                             "(default: recorded when present, else arm)")
    parser.add_argument("--pusher-shape", choices=("sphere", "rod"), default="sphere",
                        help="shape of a recorded pusher, for trials that carry none (trial.json \"object\" wins): "
                             "a sphere (default) of radius pusher.radius centred at "
                             "the recorded position, or a vertical rod of radius pusher.radius and length "
                             "pusher.length whose tip (lower end-point centre) is the recorded position")
    parser.add_argument("--bounds", metavar="NAME=LO:HI,...", help="narrow the bounds of free parameters")
    parser.add_argument("--loss", choices=("linear", "huber", "soft_l1"), default="linear",
                        help="robust loss (default linear least squares)")
    parser.add_argument("--loss-scale", type=bounded_float(0.0, 1e12, low_open=True), default=1.0, metavar="S",
                        help="weighted residual size where the robust loss starts (default 1)")
    parser.add_argument("--max-iterations", type=bounded_int(0, 100_000), default=20, metavar="N", help="default 20")
    parser.add_argument("--starts", type=bounded_int(1, 64), default=None, metavar="N",
                        help="optimizer runs from N starts: the given one and N - 1 deterministic others inside "
                             "the bounds (default: 3 for up to 4 unknowns on at most 6000 simulated steps, "
                             "else 1; 1 disables; see Starts below)")
    parser.add_argument("--platform", choices=("auto", "real", "sim"), default="auto",
                        help="recording to fit against (default: real if present, else sim)")
    parser.add_argument("--validate", action="append", default=[], metavar="BAG",
                        help="held-out trial or run directory (repeatable): its cost is tracked along the fit "
                             "and its prediction errors are reported before and after")
    parser.add_argument("--holdout", type=bounded_float(0.0, 1.0, low_open=True, high_open=True), metavar="F",
                        help="hold out this fraction of the BAG trials (whole trials, chosen with --seed) and "
                             "validate on them; may be combined with --validate")
    parser.add_argument("--seed", type=bounded_int(0, 2**32 - 1), default=0, metavar="S",
                        help="seed of the --holdout choice and of the spread's draws (default 0)")
    parser.add_argument("--spread-draws", type=bounded_int(0, 10_000), default=0, metavar="N",
                        help="with held-out trials: also predict each one's spread under N parameter sets drawn "
                             "from the fit's uncertainty (as 'replay --spread' does), calibrate the prediction "
                             "band on them (model discrepancy and a conformal quantile; each held-out trial "
                             "judged by the calibration from the others) and say whether each real outcome lies "
                             "inside (fit.json validation.spread, which 'replay --spread' then uses; default 0: off)")
    parser.add_argument("--cross-fit", type=bounded_int(2, 100_000), default=None, metavar="K",
                        help="with --spread-draws: also calibrate the band on the fitted trials themselves, each "
                             "predicted by a fit without it: the fitted trials are dealt into K folds (with "
                             "--seed), the fit is repeated without each fold (from the fitted values) and the "
                             "fold's trials are predicted by that fit; pooled with any held-out trials (K fits "
                             "more; K = the number of fitted trials leaves one out; with --per-object the folds "
                             "are dealt per object, each needing 2 trials; see Bands below)")
    parser.add_argument("--start-noise", default="auto", metavar="auto|MM,DEG",
                        help="with --spread-draws: measurement noise of one recorded pose (standard deviations "
                             "of the box centre's x and y, mm, and heading, deg), or auto (default): measured in "
                             "each recording")
    parser.add_argument("--start-error", default="auto", metavar="auto|MM,DEG",
                        help="with --spread-draws: an error of each recorded start beyond its noise (standard "
                             "deviations of the start's x and y, mm, and heading, deg), which pushes that hang on "
                             "a millimetre turn into two outcomes; auto (default): chosen among 0, 0.25, 0.5, 1, 2 "
                             "and 4 (mm and deg alike) by the calibration trials' mean log score (each candidate "
                             "draws their spreads again; 'replay --spread' then draws with the chosen one)")
    parser.add_argument("--level", type=bounded_float(0.0, 1.0, low_open=True, high_open=True), default=0.9,
                        metavar="P", help="with --spread-draws: level of the prediction band (default 0.9)")
    parser.add_argument("--robust-unstable", action="store_true",
                        help="after the fit, predict each fitted trial as a spread (--spread-draws N draws, 20 if "
                             "not given) and fit again without the trials whose predicted outcome has several modes "
                             "(turns either way, flips or not): their point residuals would pull the fit to one side "
                             "of a coin toss; says which and how many (fit.json data.unstable)")
    parser.add_argument("--jackknife", action="store_true",
                        help="also refit without each trial (one more fit per trial) and widen each 95 %% interval "
                             "to the trial jackknife's where that is wider: for costs with kinks (whole trials that "
                             "tip a box or not), where the local curvature understates the spread")
    parser.add_argument("--strict", action="store_true",
                        help="raise at the first solver step that does not converge (no degraded steps)")
    add_engine_argument(parser)
    add_executor_arguments(parser, "the per-trial residual, Jacobian and prediction work")
    parser.add_argument("--json", action="store_true", help="print the fit.json object on stdout")
    parser.set_defaults(handler=run, uses_engine=True)


def parse_horizon(text: str) -> int | None:
    """``"trial"`` → None, ``"N"`` → N (≥ 1)."""
    from sim2real.errors import Sim2RealError

    if text == "trial":
        return None
    try:
        value = int(text)
    except ValueError:
        raise Sim2RealError(f"--horizon must be 1, a number of steps or 'trial', got '{text}'") from None
    if value < 1:
        raise Sim2RealError(f"--horizon must be at least 1, got {value}")
    return value


def _log(message: str, alarm: bool = False) -> None:
    print(f"fit: {red(message, sys.stderr) if alarm else message}", file=sys.stderr, flush=True)


def print_summary(result: FitResult, params_path: Path, json_path: Path) -> None:
    """The console summary on stderr: status and problems first (red on a terminal), then the rest."""
    if result.ok:
        _log(f"status: {result.status}, no problems")
    else:
        status = result.status if result.status == "converged" else result.status.upper()
        _log(f"status: {status}, {len(result.problems)} problem(s)", alarm=True)
        for problem in result.problems:
            _log(f"  problem: {problem}", alarm=True)
    for warning in result.warnings:
        _log(f"warning: {warning}")
    iterations = result.trace[-1]["iteration"] if result.trace else 0
    _log(f"stopped: {result.stop_reason} after {iterations} iteration(s); cost {result.cost_start:.6g} -> "
         f"{result.cost_final:.6g}")
    from sim2real.report.cells import describe_tally

    for when in ("start", "final"):
        summary = result.solver.get(when)
        if summary:
            _log(f"solver at the {when} values: {describe_tally(summary)}")
    if result.dropped_rows:
        _log(f"{result.dropped_rows} residual row(s) left out (degraded solver steps)")
    method = result.data.get("uncertainty", {}).get("method")
    if method:
        _log(f"standard deviations and 95 % intervals: {method}")
    for name, value in result.values.items():
        std, ci = result.std[name], result.ci95.get(name)
        std_text = f"± {std:.3g}" if std is not None else "(not determined)"
        ci_text = f", 95 % [{ci[0]:.6g}, {ci[1]:.6g}]" if ci else ""
        _log(f"  {name} = {value:.6g} {std_text}{ci_text}  (start {result.start_values[name]:.6g})")
    for line in prediction_lines(result.validation):
        _log(line)
    if result.hard_steps:
        from sim2real.sysid.files import hard_steps_dir

        _log(f"{len(result.hard_steps)} hard solver step(s) saved under {hard_steps_dir(params_path)}/")
    _log(f"wrote {params_path} and {json_path}")


def prediction_lines(validation: dict | None) -> list[str]:
    """Training and held-out prediction errors before -> after the fit, one line per set of trials."""
    prediction = (validation or {}).get("prediction")
    if not prediction:
        return []
    lines = ["prediction errors, start -> fitted values (whole trials; mean final position error, "
             "mean yaw error, mean path error, flip agreement; RMS over the fit's horizon):"]
    for label in ("training", "validation"):
        block = prediction.get(label) or {}
        before, after = block.get("start") or {}, block.get("final") or {}
        if not before.get("trials") and not after.get("trials"):
            lines.append(f"  {label}: no trial could be simulated")
            continue
        text = (f"  {label} ({after.get('trials', 0)} trials): final position "
                f"{_mm(before.get('final_position_m'))} -> {_mm(after.get('final_position_m'))} mm, yaw "
                f"{_deg(before.get('yaw_deg'))} -> {_deg(after.get('yaw_deg'))} deg, path "
                f"{_mm(before.get('path_rms_m'))} -> {_mm(after.get('path_rms_m'))} mm, flips "
                f"{before.get('flip_agreement', '?')} -> {after.get('flip_agreement', '?')}")
        rms = block.get("horizon_rms") or {}
        if rms.get("start", {}).get("position_m") is not None and rms.get("final", {}).get("position_m") is not None:
            text += f"; RMS position {_mm(rms['start']['position_m'])} -> {_mm(rms['final']['position_m'])} mm"
        failed = after.get("failed") or 0
        if failed:
            text += f" ({failed} could not be simulated)"
        lines.append(text)
    return lines


def _mm(value: object) -> str:
    return f"{float(value) * 1000:.1f}" if isinstance(value, (int, float)) else "?"


def _deg(value: object) -> str:
    return f"{float(value):.1f}" if isinstance(value, (int, float)) else "?"


def _log_scene_flags(records: Any) -> None:
    """One line per trial imported with ``--force`` although its scene is not physical, before the fit."""
    from sim2real.trials.scene_checks import flagged_trials

    for name, problems in flagged_trials(records):
        _log(f"WARNING {name}: imported with --force although its scene is not physical: {'; '.join(problems)}")


def _with_scene_verdict(result: FitResult, fitted: Any, held: Any) -> FitResult:
    """A problem (exit 3) when fitted or held-out trials were imported with ``--force`` although their scene is
    not physical: the fitted values, or the validation, rest on a scene that cannot be real."""
    from sim2real.trials.scene_checks import flagged_trials

    names = [*(name for name, _ in flagged_trials(fitted)), *(f"{name} (held out)" for name, _ in flagged_trials(held))]
    if not names:
        return result
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    problem = (f"{len(names)} trial(s) imported with --force although their scene is not physical ({shown}): the "
               "fit rests on scenes that cannot be real; correct the frames (sim2real calibrate, import --frames) "
               "and import them again")
    from dataclasses import replace

    return replace(result, problems=(*result.problems, problem))


def run(args: argparse.Namespace) -> int:
    """Handler of ``sim2real fit``; the exit status is documented in the epilog."""
    import json
    from dataclasses import replace

    from sim2real.cli.common import check_output_file, is_fit_report, is_sim2real_params_file, removed_on_interrupt
    from sim2real.cli.fit_spread import spread_options, trial_objects, with_validation_spread, without_unstable
    from sim2real.errors import InputError
    from sim2real.sysid import FitProblem, FreeParameters, LMSettings, ResidualSpec, Weights, fit_trials, parse_bounds
    from sim2real.sysid.files import check_out_path, fit_document, fit_json_path, write_fit
    from sim2real.sysid.problem import hold_out, read_trials

    out = check_out_path(args.out)
    check_output_file(out, args.force, is_sim2real_params_file)
    check_output_file(fit_json_path(out), args.force, is_fit_report, option="--out (its .json report)")
    free = FreeParameters.parse(args.free)
    noise = spread_options(args)
    horizon = parse_horizon(args.horizon)
    weights = Weights.parse(args.weights)
    bounds = parse_bounds(args.bounds)
    settings = LMSettings(max_iterations=args.max_iterations, loss=args.loss, loss_scale=args.loss_scale)
    start = params_from_args(args)
    loaded = read_trials(args.bags)
    loaded, held, split = hold_out(loaded, read_trials(args.validate) if args.validate else None, args.holdout,
                                   args.seed)
    from sim2real.sysid.files import check_per_object_outputs  # before the fit: its outputs can be written

    check_per_object_outputs(out, args.per_object, loaded.records)
    if args.cross_fit is not None and args.per_object:  # before the fit: a fold must leave each object a trial
        counts: dict[str | None, int] = {}
        for label in trial_objects(loaded.records).values():
            counts[label] = counts.get(label, 0) + 1
        alone = sorted(str(label) for label, count in counts.items() if count < 2)
        if alone:
            raise InputError(f"--cross-fit with --per-object needs at least 2 trials to fit of each object: "
                             f"{', '.join(alone)} has one (the fit without its fold would not see it)")
    if args.cross_fit is not None and args.cross_fit > len(loaded.records):
        raise InputError(f"--cross-fit {args.cross_fit}: there are {len(loaded.records)} trial(s) to fit, and a "
                         "fold needs one (give at most that many folds)")
    if split is not None:
        _log(f"--holdout {args.holdout:g} (seed {args.seed}): {len(split.records)} of "
             f"{len(split.records) + len(loaded.records)} trials held out: "
             + ", ".join(record.name for record in split.records))
    failures = list(loaded.failures)
    if held is not None:
        failures += [replace(f, stage="validation") for f in held.failures]

    _log_scene_flags([*loaded.records, *(held.records if held is not None else ())])
    spec = ResidualSpec(horizon=horizon, weights=weights, mode=args.mode, pusher=args.pusher, strict=args.strict,
                        pusher_shape=args.pusher_shape, engine=args.engine)
    problem = FitProblem(loaded.records, start, free, spec=spec, bounds=bounds, platform=args.platform,
                         sources=loaded.sources, validation=held.records if held is not None else (),
                         validation_sources=held.sources if held is not None else None, failures=failures,
                         per_object=per_object_names(args.per_object))
    result = fit_trials(problem, settings, executor=args.executor, workers=args.workers, starts=args.starts,
                        jackknife=args.jackknife, log=_log)
    if args.robust_unstable:
        result = without_unstable(problem, result, args, noise, settings, _log)
    if args.spread_draws:
        result = with_validation_spread(result, problem, held.records if held is not None else [], args, noise,
                                        settings, _log)
    result = _with_scene_verdict(result, loaded.records, held.records if held is not None else ())
    with removed_on_interrupt(out, fit_json_path(out)):
        params_path, json_path = write_fit(out, result)
    print_summary(result, params_path, json_path)
    if args.json:
        print(json.dumps(fit_document(result, params_path).to_json(), indent=2))
    if result.failures:
        return EXIT_TRIALS_FAILED
    return 0 if result.ok else EXIT_FIT_PROBLEMS

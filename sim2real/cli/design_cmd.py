"""``sim2real design``: the next pushes to record, chosen so that a fit pins its parameters down (experiment design)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sim2real.cli.common import (
    add_executor_arguments,
    bounded_float,
    bounded_int,
    check_output_file,
    check_yaml_name,
    parse_name_list,
)

if TYPE_CHECKING:
    from sim2real.control import PushConfig
    from sim2real.sysid.design import Design, Forecast, Prior, PushSpace

#: The largest tilt (deg) --no-topple allows unless --max-tilt says.
DEFAULT_MAX_TILT_DEG = 10.0
#: Most pushes and candidates one design takes.
MAX_PUSHES, MAX_CANDIDATES = 50, 5000
#: The push-space options: option, dimension, what it is.
SPACE_OPTIONS = (("--distance", "distance", "box start distance along base x, m"),
                 ("--lateral", "lateral", "where the pusher meets the box's near face: offset from the face's "
                                          "centre, m (the pusher's y when the box is square to the push)"),
                 ("--height", "height", "pusher centre height above the table, m"),
                 ("--speed", "speed", "push cruise speed, m/s"),
                 ("--end-x", "end_x", "pusher x at the end of the stroke, m"),
                 ("--box-yaw", "box_yaw_deg", "the box's yaw at the start about base z, deg: the push's angle to "
                                              "its near face's normal"))

EPILOG = """\
What it does. Spreads --candidates pushes over the push space (a Latin hypercube over the
ranges below), plans each on the xArm 6 model and leaves out what the arm cannot do (a path
point out of reach, a joint within 0.05 rad of its limit, a joint rate above its limit, the
pusher outside the PD law's workspace box, a contact off the box's near face or within
1 cm of its edges) and, with
--no-topple, what tips the box more than --max-tilt at the current values. Each feasible push
is simulated at the current values and the fit's own residuals are formed on it with the
implicit Jacobians of the free parameters: its information. Then N pushes are chosen, greedy
then by exchange, to minimise the forecast uncertainty of the --target parameters
(--criterion W: their 95 % intervals as the refit will report them, Student's t with the
number of trials that inform each, so that information spread over several pushes beats one
push that alone determines a parameter; D: the volume of their joint region; A: their mean
variance),
averaged over --points linearisation points: the current values and draws from the prior (a
parameter the fit did not determine has no meaningful current value: it is drawn within its
bounds). A push that tips the box at any point is left out with --no-topple.

The forecast is linearised: covariance after = (R + H0 + sum H / sigma^2)^-1 at the current
values, H0 the fit's trials' information (the inverse of its covariance where it determined
the parameters, nothing elsewhere), R a weak prior uniform over the bounds; 95 % intervals with
the refit's Student's t, clipped to the bounds. sigma^2 is the noise of one residual row as the
fit measured it, scaled so that its own trials give its reported uncertainty. Without a fit
(--free), there is no H0 and the rows are independent with --row-noise: optimistic. Pushes
near a threshold (tipping, the turn's direction) are far from linear: record, refit, and
compare (report --design DESIGN.json shows the forecast beside the refit's intervals).

Push space (each option LOW:HIGH, or one number to fix it; defaults around the experiment
file's push): --distance 0.30:0.50; --lateral across the face up to 1 cm from its sides;
--height from 1 cm above the table's contact to the push's own; --speed 40-100 % of the
push's; --end-x from the push's end to 10 cm further; --box-yaw -30:30 (deg, at most 45 either
way). The pusher moves along base x; the box's yaw at the start (the experiment places it so)
sets the push's direction relative to the box: 0 meets the near face square on, 30 deg lets a
pusher with friction below tan 30 deg = 0.58 slide along the face. The pusher's y is chosen so
that it meets the face at --lateral from the face's centre, whatever the yaw.

Writes --out FILE (an experiment file: `sim2real run --experiment FILE`, or the launch file's
experiment_file:=FILE, runs the designed pushes in order) and FILE's .json beside it (the
design: prior, space, candidates left out and why, the pushes with their simulated outcomes,
each forecast, and the standard sequence's forecast for as many pushes).

Exit status: 0 designed, every target determined in the forecast; 3 designed, but a target
stays undetermined in the forecast (named; more pushes or a wider space may help); 2 bad
input (one line, nothing written).
"""


def _range(text: str) -> tuple[float, float]:
    """``LOW:HIGH`` or one number (a fixed dimension)."""
    import math

    parts = text.split(":")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LOW:HIGH or a number, got '{text}'") from None
    if len(values) not in (1, 2) or not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"expected LOW:HIGH or a number, got '{text}'")
    low, high = values[0], values[-1]
    if low > high:
        raise argparse.ArgumentTypeError(f"'{text}': LOW is above HIGH")
    return low, high


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``design`` subcommand."""
    parser = subparsers.add_parser(
        "design", help="choose the next pushes to record so that a fit determines its parameters (experiment design)",
        description="Choose the next N pushes (start distance, contact offset, height, speed, stroke, the box's "
                    "yaw) that most "
                    "reduce the forecast uncertainty of the fit's parameters, from a fit (--fit) or before any push "
                    "(--free), and write them as an experiment file that 'sim2real run --experiment' runs.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--fit", metavar="FIT.json", help="design from this fit (its values, covariance, residuals)")
    source.add_argument("--free", metavar="NAMES",
                        help="design before any fit: these parameters, uniform over their bounds")
    parser.add_argument("--out", required=True, metavar="FILE.yaml",
                        help="experiment file to write (the design's .json goes beside it)")
    parser.add_argument("-n", "--pushes", dest="count", type=bounded_int(1, MAX_PUSHES), default=6, metavar="N",
                        help="pushes to design (default 6)")
    parser.add_argument("--target", metavar="NAMES",
                        help="parameters whose uncertainty counts (comma-separated; default: every free one)")
    parser.add_argument("--criterion", choices=("W", "D", "A"), default="W",
                        help="W (default): narrowest 95 %% intervals of the targets as the refit will report them "
                             "(geometric mean, with their degrees of freedom); D: smallest joint 95 %% region; A: "
                             "smallest mean variance")
    parser.add_argument("--candidates", type=bounded_int(1, MAX_CANDIDATES), default=120, metavar="M",
                        help="candidate pushes spread over the space (default 120; 2-4 s each per core)")
    for option, dimension, what in SPACE_OPTIONS:
        parser.add_argument(option, dest=dimension, type=_range, metavar="LOW:HIGH", help=what)
    parser.add_argument("--no-topple", action="store_true",
                        help="leave out pushes that tip the box more than --max-tilt at the current values")
    parser.add_argument("--max-tilt", type=bounded_float(0.0, 90.0, low_open=True), metavar="DEG",
                        help=f"with --no-topple: the largest tilt allowed, deg (default {DEFAULT_MAX_TILT_DEG:g})")
    parser.add_argument("--allow-unconverged", action="store_true",
                        help="design from a fit that stopped at its iteration limit (linearised where it stopped)")
    parser.add_argument("--experiment", metavar="FILE",
                        help="the experiment whose push timing, start tolerance and standard sequence the design "
                             "keeps (default config/experiment.yaml)")
    parser.add_argument("--params", metavar="FILE",
                        help="values of the parameters not fitted (default: the fit's params YAML; with --free: "
                             "nominal)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                        help="with --free: override one parameter of the linearisation point (repeatable)")
    parser.add_argument("--mode", choices=("kinematic", "closed", "commands"),
                        help="with --free: the whole-trial residuals the later fit will use (default kinematic)")
    parser.add_argument("--row-noise", type=bounded_float(0.0, 1e6, low_open=True), metavar="S",
                        help="with --free: standard deviation of one weighted residual row (default 1: 1 mm or "
                             "0.01 rad with the default weights)")
    parser.add_argument("--points", type=bounded_int(1, 20), default=4, metavar="K",
                        help="linearisation points the criterion is averaged over: the current values and K-1 draws "
                             "from the prior (default 4; 1: the current values only, K times faster)")
    parser.add_argument("--seed", type=bounded_int(0, 2**32 - 1), default=0, metavar="S",
                        help="seed of the candidates and the points (default 0)")
    parser.add_argument("--force", action="store_true", help="replace --out (and its .json) if sim2real wrote them")
    parser.add_argument("--json", action="store_true", help="print the design as one JSON object on stdout")
    add_executor_arguments(parser, "the candidates' simulation")
    parser.set_defaults(handler=run)


def _log(message: str) -> None:
    print(f"design: {message}", file=sys.stderr, flush=True)


def _is_design_output(path: Path) -> bool:
    try:
        head = path.read_text(errors="replace")[:4096]
    except OSError:
        return False
    return "sim2real design" in head or '"sim2real.design/' in head


def _prior(args: argparse.Namespace) -> Prior:
    """The prior the arguments name (checked before any simulation)."""
    from sim2real.errors import InputError
    from sim2real.params import resolve_params
    from sim2real.sysid.design import prior_from_bounds, prior_from_fit
    from sim2real.sysid.files import read_fit_document
    from sim2real.sysid.problem import FreeParameters
    from sim2real.sysid.residuals import ResidualSpec

    if args.fit is not None:
        given = [option for option, value in (("--set", args.overrides), ("--mode", args.mode),
                                              ("--row-noise", args.row_noise)) if value]
        if given:
            raise InputError(f"{given[0]} is for --free: a fit brings its own")
        from sim2real.cli.sample_cmd import base_params
        from sim2real.sysid.prediction import fit_distribution

        document = read_fit_document(args.fit)
        dist = fit_distribution(document, args.fit, allow_unconverged=args.allow_unconverged,
                                allow_undetermined=True)
        params, _ = base_params(args, dist)
        return prior_from_fit(document, args.fit, params, allow_unconverged=args.allow_unconverged)
    if args.params is not None:
        check_yaml_name(args.params, "--params")
    params = resolve_params(args.params, args.overrides)
    free = FreeParameters.parse(args.free)
    return prior_from_bounds(free, params, ResidualSpec(horizon=None, mode=args.mode or "kinematic"),
                             1.0 if args.row_noise is None else args.row_noise)


def _space(args: argparse.Namespace, prior: Prior, base_push: PushConfig) -> PushSpace:
    from sim2real.sysid.design import PushSpace

    space = PushSpace.default(base_push, prior.params)
    given = {dim: getattr(args, dim) for _, dim, _ in SPACE_OPTIONS if getattr(args, dim) is not None}
    return space.with_ranges(**given)


def run(args: argparse.Namespace) -> int:
    """Design the pushes; print the forecast; write the experiment file and its design.json."""
    from sim2real.control import load_experiment_config, save_experiment_config
    from sim2real.errors import InputError
    from sim2real.execution import open_executor
    from sim2real.filemodes import write_text_atomic
    from sim2real.sysid.design import design_pushes

    out = check_yaml_name(args.out, "--out")
    out = check_output_file(out, args.force, _is_design_output)
    record_path = check_output_file(out.with_suffix(".json"), args.force, _is_design_output, option="--out's .json")
    targets = parse_name_list(args.target, "--target") if args.target is not None else None
    experiment = load_experiment_config(check_yaml_name(args.experiment, "--experiment") if args.experiment else None)
    prior = _prior(args)
    prior.target_index(targets)
    space = _space(args, prior, experiment.push)
    if args.max_tilt is not None and not args.no_topple:
        raise InputError("--max-tilt applies with --no-topple only")
    max_tilt = (DEFAULT_MAX_TILT_DEG if args.max_tilt is None else args.max_tilt) if args.no_topple else None
    with open_executor(args.executor, args.workers, say=_log) as executor:
        design = design_pushes(prior, space, args.count, executor, targets=targets, criterion=args.criterion,
                               candidates=args.candidates, seed=args.seed, max_tilt_deg=max_tilt,
                               standard=experiment, points=args.points, progress=_log)
    header = (f"sim2real design: {args.count} pushes for {', '.join(design.prior.labels[k] for k in design.targets)} "
              f"from {prior.source}\n(forecast and candidates in {record_path.name}; run: sim2real run --experiment "
              f"{out.name} ...)")
    save_experiment_config(out, design.experiment(experiment), header=header)
    write_text_atomic(record_path, json.dumps(design.as_dict(), indent=1) + "\n")
    undetermined = [prior.labels[k] for k in design.targets if design.after[-1].undetermined[k]]
    if undetermined:  # said first, before the table
        _log(f"PROBLEM: after the {args.count} designed pushes the forecast still leaves {', '.join(undetermined)} "
             f"undetermined (more pushes, a wider push space or other targets may help)")
    unknown_point = [label for label, u in zip(prior.labels, prior.undetermined, strict=True) if u]
    if unknown_point:
        _log(f"WARNING: the forecast is linearised at values that are not determined ({', '.join(unknown_point)}; "
             f"from {prior.source}): the refit's intervals can come out an order of magnitude wider (or "
             "narrower) than forecast; read it as a ranking of the pushes, and compare with report --design")
    if args.json:
        print(json.dumps(design.as_dict()))
    else:
        print(forecast_table(design))
    _log(f"wrote {out} and {record_path}")
    return 3 if undetermined else 0


def forecast_table(design: Design) -> str:
    """The design in words: the forecast per parameter, then the pushes with their simulated outcomes."""
    prior = design.prior
    count = len(design.pushes)
    lines = [f"Forecast (linearised at {prior.source}'s values; {prior.noise_note}):",
             f"  {'parameter':28s} {'value':>10s} {'now ±':>12s} {f'{count} designed ±':>16s} "
             f"{f'{count} standard ±':>16s} {f'{count} random ±':>16s}"]

    def half(forecast: Forecast | None, k: int) -> str:
        if forecast is None:
            return "-"
        return f"{float(forecast.width[k]) / 2.0:.3g}" + (" (undet.)" if forecast.undetermined[k] else "")

    random = design.random.median if design.random is not None else None
    for k, label in enumerate(prior.labels):
        mark = "*" if k in design.targets else " "
        lines.append(f"{mark} {label:28s} {prior.values[k]:10.4g} {half(design.before, k):>12s} "
                     f"{half(design.after[-1], k):>16s} {half(design.standard, k):>16s} {half(random, k):>16s}")
    lines.append("  (* target; ± is half the 95 % interval as the refit would report it after the pushes, clipped to "
                 "the bounds; undet.: it covers most of the bounds; random: the median over sets drawn from the "
                 "feasible candidates)")
    if design.random is not None:
        ratio, sets = design.random.ratio_summary(), len(design.random.width_ratio)
        lines.append(f"Pushes drawn at random from the same space are forecast to give intervals "
                     f"{ratio['median']:.2g}x as wide as the designed ones (median over the targets and {sets} "
                     f"sets of {count}; 10-90 % of sets: {ratio['p10']:.2g}-{ratio['p90']:.2g}x; 1x: the design "
                     "buys nothing over pushing anywhere the arm can). This forecast is linearised at the current "
                     "values and counts the noise, not the model's error, and it overstates the gain: on known "
                     "truth the refits gained less than forecast, with and without model error, by far on pushes "
                     "that turn the box (docs/fitting.md, 'Designed pushes on known truth').")
    lines.append(f"Designed pushes ({design.selection.criterion}-optimal, greedy then {design.selection.exchanges} "
                 f"exchange(s); {len(design.feasible)} of {len(design.evaluated)} candidates feasible), simulated "
                 f"at the current values:")
    for n, info in enumerate(design.pushes, start=1):
        lines.append(f"  {n:2d}  {info.candidate.label()}  ->  final x {info.final_distance:.3f} m, yaw "
                     f"{info.final_yaw_deg:+.1f} deg, tilt {info.max_tilt_deg:.1f} deg")
    return "\n".join(lines)

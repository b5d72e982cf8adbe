"""``sim2real fit``: Gauss-Newton fit of simulator parameters to recorded trials."""

from __future__ import annotations

import argparse
import sys

from sim2real.cli.common import add_param_arguments, params_from_args

EPILOG = """\
BAG is a trial directory (rosbag2 + trial.json) or a run directory (all trials in it).
Writes OUT (a complete ROS 2 params YAML under '/**') and, next to it, the fit report with
the same stem and suffix .json (fitted.yaml -> fitted.json): values, start_values, std, ci95,
correlation, trace, stop_reason, warnings, data, versions. --json prints that object.

--free takes comma-separated names; names joined by '=' are tied into one unknown, e.g.
  --free contact.mu_table,box.size_x=box.size_y=box.size_z
--horizon 1 (teacher-forced one-step), N (segments of N steps) or trial (whole trials).
--weights position=1000,orientation=100,joint_position=1000,joint_velocity=100 (1/m, 1/rad, ...).

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
    parser.add_argument("--out", required=True, metavar="F", help="fitted params YAML to write (.yaml)")
    parser.add_argument("--horizon", default="1", metavar="1|N|trial",
                        help="residual horizon: 1 (default), N steps, or trial")
    parser.add_argument("--weights", metavar="GROUP=W,...", help="residual group weights")
    parser.add_argument("--mode", choices=("auto", "commands", "closed"), default="auto",
                        help="whole arm trials: drive the sim by recorded commands or by the PD law (default auto)")
    parser.add_argument("--bounds", metavar="NAME=LO:HI,...", help="narrow the bounds of free parameters")
    parser.add_argument("--loss", choices=("linear", "huber", "soft_l1"), default="linear",
                        help="robust loss (default linear least squares)")
    parser.add_argument("--loss-scale", type=float, default=1.0, metavar="S",
                        help="weighted residual size where the robust loss starts (default 1)")
    parser.add_argument("--max-iterations", type=int, default=20, metavar="N", help="default 20")
    parser.add_argument("--platform", choices=("auto", "real", "sim"), default="auto",
                        help="recording to fit against (default: real if present, else sim)")
    parser.add_argument("--workers", type=int, default=1, metavar="N", help="processes evaluating trials")
    parser.add_argument("--json", action="store_true", help="print the fit.json object on stdout")
    parser.set_defaults(handler=run)


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


def load_records(paths: list[str]) -> tuple[list, list[str]]:
    """Read every BAG (trial or run directory); returns the records and their source paths."""
    from pathlib import Path

    from sim2real.errors import Sim2RealError
    from sim2real.trials import read_trial, trial_dirs

    records, sources = [], []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise Sim2RealError(f"bag {path} does not exist")
        if path.is_dir() and not (path / "metadata.yaml").exists():
            dirs = trial_dirs(path)
            if not dirs:
                raise Sim2RealError(f"{path} is neither a trial (no metadata.yaml) nor a run directory with trials")
        else:
            dirs = [path]
        for trial in dirs:
            records.append(read_trial(trial))
            sources.append(str(trial))
    return records, sources


def run(args: argparse.Namespace) -> int:
    """Handler of ``sim2real fit``."""
    import json

    from sim2real.sysid import FreeParameters, LMSettings, Weights, fit_trials, parse_bounds
    from sim2real.sysid.writeback import check_out_path, fit_document, write_fit

    out = check_out_path(args.out)
    free = FreeParameters.parse(args.free)
    horizon = parse_horizon(args.horizon)
    weights = Weights.parse(args.weights)
    bounds = parse_bounds(args.bounds)
    settings = LMSettings(max_iterations=args.max_iterations, loss=args.loss, loss_scale=args.loss_scale)
    start = params_from_args(args)
    records, sources = load_records(args.bags)

    def log(message: str) -> None:
        print(f"fit: {message}", file=sys.stderr, flush=True)

    result = fit_trials(records, start, free, horizon=horizon, weights=weights, mode=args.mode, bounds=bounds,
                        settings=settings, workers=args.workers, platform=args.platform, sources=sources, log=log)
    params_path, json_path = write_fit(out, result)
    for warning in result.warnings:
        log(f"warning: {warning}")
    log(f"stopped: {result.stop_reason}; cost {result.cost_start:.6g} -> {result.cost_final:.6g}")
    for name, value in result.values.items():
        std = result.std[name]
        std_text = f"± {std:.3g}" if std is not None else "(not determined)"
        log(f"  {name} = {value:.6g} {std_text}  (start {result.start_values[name]:.6g})")
    log(f"wrote {params_path} and {json_path}")
    if args.json:
        print(json.dumps(fit_document(result, params_path), indent=2))
    return 0

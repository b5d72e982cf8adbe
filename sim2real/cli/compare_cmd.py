"""``sim2real compare-engines``: fit our engine and MuJoCo on the same trials, compare them on held-out trials."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sim2real.cli.common import EXIT_FIT_PROBLEMS, bounded_float, bounded_int
from sim2real.cli.fit_cmd import _deg, _mm

if TYPE_CHECKING:
    from sim2real.sysid.prediction import EngineFit

DEFAULT_FREE = "contact.mu_table,contact.mu_pusher"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``compare-engines`` subcommand."""
    parser = subparsers.add_parser(
        "compare-engines",
        help="fit each engine on the same training trials and compare their predictions of held-out trials",
        description="Fit our engine (hard contact, implicit gradients) and MuJoCo (soft contact, finite-difference "
                    "Jacobians) on the same training trials, each from its own start parameters, and compare "
                    "them on the same held-out trials: mean final position error (mm), mean yaw error (deg), "
                    "flip agreement, RMS position error over the fit's horizon (with --horizon trial: the "
                    "trajectory error), at the start and the fitted values, and each fit's wall time.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("bags", nargs="+", metavar="RUN", help="trial or run directory")
    parser.add_argument("--params-ours", metavar="FILE",
                        help="start parameters of our engine (params YAML; default nominal values)")
    parser.add_argument("--params-mujoco", metavar="FILE",
                        help="start parameters of the MuJoCo engine (params YAML; default nominal values)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                        help="override one parameter for both engines, after their files (e.g. the box size; "
                             "repeatable)")
    parser.add_argument("--free-ours", default=DEFAULT_FREE, metavar="NAMES",
                        help=f"parameters our engine fits (default {DEFAULT_FREE})")
    parser.add_argument("--free-mujoco", default=DEFAULT_FREE, metavar="NAMES",
                        help=f"parameters MuJoCo fits (default {DEFAULT_FREE})")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="directory to create (it may exist only empty): both fits, comparison.md/.json/.png")
    parser.add_argument("--validate", action="append", default=[], metavar="RUN",
                        help="held-out trial or run directory (repeatable)")
    parser.add_argument("--holdout", type=bounded_float(0.0, 1.0, low_open=True, high_open=True), metavar="F",
                        help="hold out this fraction of the RUN trials (whole trials, chosen with --seed)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the --holdout choice (default 0)")
    parser.add_argument("--horizon", default="trial", metavar="1|N|trial",
                        help="residual horizon of both fits (default trial: whole trials)")
    parser.add_argument("--mode", choices=("auto", "kinematic", "pusher"), default="auto",
                        help="how whole trials are driven (default auto; the simulated arm is not differentiated "
                             "through MuJoCo)")
    parser.add_argument("--pusher-shape", choices=("sphere", "rod"), default="sphere",
                        help="shape of a recorded pusher (as in fit)")
    parser.add_argument("--weights", metavar="GROUP=W,...", help="residual group weights (as in fit)")
    parser.add_argument("--max-iterations", type=bounded_int(0, 10000), default=40, metavar="N",
                        help="per fit (default 40)")
    parser.epilog = ("Exit status: 0 both fits converged without problems; 3 the comparison was written but a fit "
                     "has problems (named at the top of comparison.md); 2 bad input (nothing written).")
    parser.set_defaults(handler=run, uses_engine=True)


def _log(message: str) -> None:
    print(f"compare-engines: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Handler of ``sim2real compare-engines``."""
    import json
    from pathlib import Path

    from sim2real.cli.common import check_output_location
    from sim2real.cli.fit_cmd import parse_horizon
    from sim2real.errors import Sim2RealError
    from sim2real.params import resolve_params
    from sim2real.report.figures import engine_comparison_figure
    from sim2real.sysid import FreeParameters, LMSettings, ResidualSpec, Weights
    from sim2real.sysid.files import write_fit
    from sim2real.sysid.prediction import compare_engines
    from sim2real.sysid.problem import hold_out, read_trials

    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise Sim2RealError(f"--out {out} exists and is not an empty directory; refusing to write into it")
    check_output_location(out)
    horizon = parse_horizon(args.horizon)
    starts = {engine: resolve_params(path, args.overrides)
              for engine, path in (("ours", args.params_ours), ("mujoco", args.params_mujoco))}
    free = {"ours": FreeParameters.parse(args.free_ours, "free_ours"),
            "mujoco": FreeParameters.parse(args.free_mujoco, "free_mujoco")}
    loaded = read_trials(args.bags)
    loaded, held, _ = hold_out(loaded, read_trials(args.validate) if args.validate else None, args.holdout,
                               args.seed)
    if held is None or not held.records:
        raise Sim2RealError("no held-out trials: give --validate RUN or --holdout F (the comparison is on trials "
                            "no engine was fitted to)")
    _log(f"{len(loaded.records)} training and {len(held.records)} held-out trial(s); engines: ours, mujoco")
    spec = ResidualSpec(horizon=horizon, mode=args.mode, pusher_shape=args.pusher_shape,
                        weights=Weights.parse(args.weights))
    fits = compare_engines(loaded.records, held.records, starts, free, spec,
                           LMSettings(max_iterations=args.max_iterations), log=_log)
    out.mkdir(parents=True, exist_ok=True)
    for fit in fits:
        write_fit(out / f"fit_{fit.engine}.yaml", fit.result)
    rows = [fit.row() for fit in fits]
    problems = [f"{fit.engine}: {problem}" for fit in fits for problem in fit.result.problems]
    table = comparison_table(fits)
    header = "# Engines compared on held-out trials\n\n"
    if problems:
        header += "**Fits with problems:**\n\n" + "".join(f"- {p}\n" for p in problems) + "\n"
    header += (f"Training trials: {', '.join(r.name for r in loaded.records)}. Held-out trials: "
               f"{', '.join(r.name for r in held.records)}. Horizon: {args.horizon}.\n\n")
    (out / "comparison.md").write_text(header + table)
    (out / "comparison.json").write_text(json.dumps(
        {"training": [r.name for r in loaded.records], "held_out": [r.name for r in held.records],
         "horizon": args.horizon, "engines": rows, "problems": problems}, indent=2, default=float))
    (out / "comparison.png").write_bytes(engine_comparison_figure(rows))
    print(table, end="")
    _log(f"wrote {out}/comparison.md, comparison.json, comparison.png and the fits fit_<engine>.yaml/.json")
    return EXIT_FIT_PROBLEMS if problems else 0


def comparison_table(fits: Sequence[EngineFit]) -> str:
    """The comparison as a Markdown table: held-out errors at the start and fitted values, wall time, values."""
    lines = ["| engine | status | held-out final position, mm (start → fitted) | yaw, deg | flips | "
             "trajectory RMS, mm | fit wall, s | fitted values |",
             "|---|---|---|---|---|---|---|---|"]
    for fit in fits:
        before, after = fit.held_out("start"), fit.held_out("final")
        values = ", ".join(f"{name} {value:.4g}" for name, value in fit.result.values.items())
        lines.append(
            f"| {fit.engine} | {fit.result.status} | {_mm(before.get('final_position_m'))} → "
            f"{_mm(after.get('final_position_m'))} | {_deg(before.get('yaw_deg'))} → {_deg(after.get('yaw_deg'))} | "
            f"{before.get('flip_agreement', '-')} → {after.get('flip_agreement', '-')} | "
            f"{_mm(before.get('trajectory_rms_m'))} → {_mm(after.get('trajectory_rms_m'))} | {fit.wall_s:.1f} | "
            f"{values} |")
    return "\n".join(lines) + "\n"

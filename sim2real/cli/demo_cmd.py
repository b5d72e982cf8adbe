"""``sim2real demo``: the whole loop on the embedded default, without hardware.

1. **Experiment** — the reality stand-in (the xArm controller emulator, driven through the
   real ``xarm-python-sdk`` on loopback, plus a physics world with hidden parameters and
   motion-capture noise and latency) and the mirrored simulator with nominal parameters run
   the published start distances as ROS 2 nodes; one rosbag2 per trial.
2. **Fit** — Gauss-Newton on the recordings (implicit gradients), in two stages: the arm's
   servo (time constant, command delay) from the recorded commands and joint states, then the
   box (centre-of-mass height) from whole trials under the PD law. Writes the fitted ROS 2
   params YAML plus its ``.json`` report per stage.
3. **Re-simulate** — every recorded trial replayed in the simulator with the fitted
   parameters under the same PD law on the recorded reference.
4. **Report** — sim vs real before and after the fit (``report.html``, ``report.md``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sim2real.sysid import FitResult

#: Stage 1: the servo, from commands and joint states (joint residuals, 20-step segments).
SERVO_FREE = ("arm.servo_tau", "arm.command_delay")
#: Stage 2: the box, from whole trials. The toppling pushes barely load friction (the box tips
#: before it slides), so the friction coefficients are left to sliding data such as cube tosses.
BOX_FREE = ("box.com_z",)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo", help="the whole loop without hardware: stand-in experiment, fit, re-simulation, report",
        description="Run the whole sim-to-real loop on the embedded default, without hardware: the reality "
        "stand-in (xArm controller emulator through the real SDK on loopback, a physics world with hidden "
        "parameters, motion-capture noise and latency) and the mirrored simulator with nominal parameters "
        "push the box from the published start distances (ROS 2 nodes, one rosbag2 per trial); Gauss-Newton "
        "system identification fits the simulator to the stand-in recordings; the trials are re-simulated "
        "with the fitted parameters; a report compares sim and real before and after the fit. DDS stays on "
        "loopback.",
    )
    parser.add_argument("--out", default="demo_out", metavar="DIR",
                        help="output directory (created; must be new or empty; default demo_out)")
    parser.add_argument("--distances", metavar="D1,D2,...",
                        help="start distances in m (default: the five published ones, 0.30 to 0.50)")
    parser.add_argument("--servo-free", default=",".join(SERVO_FREE), metavar="NAMES",
                        help=f"stage 1, fitted to joint states (default {','.join(SERVO_FREE)})")
    parser.add_argument("--box-free", default=",".join(BOX_FREE), metavar="NAMES",
                        help=f"stage 2, fitted to whole trials (default {','.join(BOX_FREE)})")
    parser.add_argument("--standin-host", default="127.0.0.2", metavar="127.0.0.N",
                        help="loopback address the emulated xArm binds (default 127.0.0.2)")
    parser.add_argument("--max-iterations", type=int, default=20, metavar="N",
                        help="Gauss-Newton iterations at most (default 20)")
    parser.set_defaults(handler=run)


def _step(number: int, text: str) -> float:
    print(f"[{number}/4] {text}", flush=True)
    return time.perf_counter()


def _detail(line: str) -> None:
    print(f"      {line}", flush=True)


def _report_fit(result: FitResult, params_path: Path, fit_json: Path) -> None:
    for name, value in result.values.items():
        ci = result.ci95.get(name)
        interval = f"  95 % [{ci[0]:.4g}, {ci[1]:.4g}]" if ci else "  (not determined by the data)"
        _detail(f"  {name:<20} {result.start_values[name]:.4g} -> {value:.4g}{interval}")
    for warning in result.warnings:
        _detail(f"  warning: {warning}")
    _detail(f"  {result.stop_reason}; wrote {params_path} and {fit_json.name}")


def run(args: argparse.Namespace) -> int:
    """Run the demo and print the before/after table and the report path."""
    from dataclasses import replace

    from sim2real.errors import Sim2RealError
    from sim2real.nodes.runner import run_experiment
    from sim2real.params import ParameterSet
    from sim2real.report import build_report
    from sim2real.sysid import LMSettings, Weights, fit_trials
    from sim2real.sysid.replay import replay_trial
    from sim2real.sysid.writeback import write_fit
    from sim2real.trials import read_run, read_run_meta, trial_dirs, write_run_meta, write_trial

    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        raise Sim2RealError(f"output directory {out} is not empty; choose a new one")
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    if os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] != "LOCALHOST":
        raise Sim2RealError("the demo keeps ROS 2 on loopback: set ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))
    nominal = ParameterSet.nominal()
    before_dir, fit_dir, after_dir = out / "standin_nominal", out / "fit", out / "resim_fitted"
    start = time.perf_counter()

    t0 = _step(1, "experiment: reality stand-in (emulated xArm via the SDK) + mirrored sim, nominal parameters")
    run_experiment("standin", args.distances, nominal, before_dir, standin_host=args.standin_host, progress=_detail)
    records = read_run(before_dir)
    _detail(f"{len(records)} trials recorded in {before_dir} ({time.perf_counter() - t0:.0f} s)")

    t0 = _step(2, "fit: Gauss-Newton on implicit gradients")
    sources = [str(path) for path in trial_dirs(before_dir)]
    settings = replace(LMSettings(), max_iterations=args.max_iterations)
    _detail(f"stage 1, servo from commands and joint states: {args.servo_free}")
    servo = fit_trials(records, nominal, args.servo_free, horizon=20, platform="real", sources=sources,
                       weights=Weights(position=0.0, orientation=0.0), settings=settings)
    _report_fit(servo, *write_fit(fit_dir / "servo.yaml", servo))
    _detail(f"stage 2, box from whole trials under the PD law: {args.box_free}")
    result = fit_trials(records, servo.params, args.box_free, horizon=None, mode="closed", platform="real",
                        sources=sources, settings=settings)
    params_path, fit_json = write_fit(fit_dir / "fitted.yaml", result)
    _report_fit(result, params_path, fit_json)
    _detail(f"fit done ({time.perf_counter() - t0:.0f} s)")

    t0 = _step(3, "re-simulate the recorded trials with the fitted parameters")
    run_meta = read_run_meta(before_dir)
    for record in records:
        write_trial(after_dir, replay_trial(record, result.params, mode="closed", platform="real"))
    write_run_meta(after_dir, {**run_meta, "mode": "replay", "params_file": str(params_path)})
    _detail(f"{len(records)} trials in {after_dir} ({time.perf_counter() - t0:.0f} s)")

    _step(4, "report: sim vs real before and after the fit")
    report = build_report([before_dir, after_dir], out / "report", fit=fit_json,
                          labels=["before fit (nominal)", "after fit"])
    print()
    print(report.text)
    print()
    if len(report.tables) == 2:
        before, after = report.tables
        print(f"mean sim-vs-real final-distance gap: {before.mean_gap_m * 100:.2f} cm before the fit, "
              f"{after.mean_gap_m * 100:.2f} cm after")
    print(f"report: {report.html}")
    print(f"demo finished in {time.perf_counter() - start:.0f} s")
    sys.stdout.flush()
    return 0

"""``sim2real replay``: re-simulate recorded trials offline with the recorded commands and timing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim2real.cli.common import (
    EXIT_TRIALS_FAILED,
    add_engine_argument,
    add_executor_arguments,
    add_param_arguments,
    params_from_args,
    red,
)

if TYPE_CHECKING:
    from sim2real.sysid.replay import ReplayResult
    from sim2real.sysid.runs import TrialFailure

EPILOG = """\
Modes (each needs topics; a trial without them is not replayed but named, with the missing
topic, never simulated with a stand-in such as the box alone):
  commands   the recorded joint commands drive the simulated arm (joint states + joint_command)
  closed     the PD law on the recorded reference drives it (joint states + reference)
  kinematic  the arm played back from the recorded joint states; the pusher from --pusher
  pusher     the pusher played back from the recorded /<ns>/pusher_pose
  auto       (default) commands, else closed, for trials with joint states; pusher for
             trials with only a pusher pose; box-only trials (cube tosses) are rolled out
             from their first recorded poses
--pusher recorded|arm: where a played-back pusher comes from (kinematic mode): the recorded
pusher pose, or xArm forward kinematics of the recorded joint states; default: the recorded
pose when the trial has one. Each trial's mode and pusher are printed and kept in its
trial.json ("mirror", "pusher").
--pusher-shape sphere|rod: the shape of a recorded pusher (a point probe is a vertical rod):
sphere (default) centred at the recorded position, or rod: a vertical capsule of radius
pusher.radius and straight length pusher.length, the recorded position being its tip (the
centre of its lower end point), its upper end point pusher.length above. The arm's pusher is
a sphere: a trial driven by the arm (simulated or FK) is not replayed with rod. Kept in
trial.json and run.json ("pusher_shape").

Solver: every trial.json holds the step outcome tally ("solver": {"sim": {steps, converged,
recovered, degraded, worst_residual, worst_complementarity, ...}}); hard steps (at most 20
per trial) are saved as OUT/<trial>/hard_steps/sim_step_<k>.json. --strict raises at the first step that
does not converge instead (exit 2, naming trial and step; nothing written).

Exit status: 0 every trial replayed; 1 some trials could not be replayed: each is named on
stderr and in OUT/run.json "failed", the others are written; 2 bad input or no trial could
be replayed (nothing written).
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``replay`` subcommand."""
    parser = subparsers.add_parser(
        "replay", help="re-simulate recorded trials (recorded commands and timing) into sim bags",
        description="Re-simulate recorded trials and write them as a run directory: each trial keeps the "
                    "recorded platform as 'real' and holds the replay as 'sim' (same topics and schema).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bags", nargs="+", metavar="BAG", help="trial or run directory")
    add_param_arguments(parser)
    parser.add_argument("--out", required=True, metavar="DIR", help="run directory to create (must not exist)")
    parser.add_argument("--mode", choices=("auto", "commands", "closed", "kinematic", "pusher"), default="auto",
                        help="what drives the replay (default auto; see below)")
    parser.add_argument("--pusher", choices=("auto", "recorded", "arm"), default="auto",
                        help="played-back pusher: recorded pusher pose or FK of the joint states "
                             "(default: recorded when present, else arm)")
    parser.add_argument("--pusher-shape", choices=("sphere", "rod"), default="sphere",
                        help="shape of a recorded pusher: a sphere (default) of radius pusher.radius centred at "
                             "the recorded position, or a vertical rod of radius pusher.radius and length "
                             "pusher.length whose tip (lower end-point centre) is the recorded position")
    parser.add_argument("--platform", choices=("auto", "real", "sim"), default="auto",
                        help="recording that drives the replay (default: real if present, else sim)")
    parser.add_argument("--strict", action="store_true",
                        help="raise at the first solver step that does not converge (no degraded steps)")
    add_engine_argument(parser)
    add_executor_arguments(parser, "the replay of the trials")
    parser.set_defaults(handler=run)


def _log(message: str, alarm: bool = False) -> None:
    print(f"replay: {red(message, sys.stderr) if alarm else message}", file=sys.stderr, flush=True)


def _replay_all(records: Any, sources: Any, args: argparse.Namespace,
                params: Any) -> tuple[list[ReplayResult], list[TrialFailure]]:
    """Replay every record on ``--executor``; failures are collected (strict mode: the first solver failure raises)."""
    from sim2real.errors import Sim2RealError
    from sim2real.execution import open_executor
    from sim2real.sysid.replay import ReplayFailure, ReplayTask, run_replay_task
    from sim2real.sysid.runs import TrialFailure

    tasks = [ReplayTask(record, source, params, args.mode, args.platform, args.pusher, args.strict, args.pusher_shape,
                        args.engine)
             for record, source in zip(records, sources, strict=True)]
    done: list[ReplayResult] = []
    failed: list[TrialFailure] = []
    with open_executor(args.executor, args.workers) as executor:
        if executor.label != "this process":
            _log(f"replaying {len(tasks)} trial(s) on {executor.label}")
        for result in executor.map(run_replay_task, tasks):
            if isinstance(result, ReplayFailure):
                if result.fatal:
                    raise Sim2RealError(result.reason)
                failed.append(TrialFailure(result.name, result.reason, result.source, result.stage))
                continue
            solve = result.solve.describe() if result.solve is not None else "no solver tally"
            degraded = result.solve is not None and result.solve.degraded > 0
            _log(f"{result.record.name} ({result.mode}; pusher: {result.pusher}): {solve}", alarm=degraded)
            done.append(result)
    return done, failed


def _write(out: Path, done: list[ReplayResult], run_meta: dict[str, Any]) -> int:
    """Write the replayed trials, their hard steps and run.json into ``out`` (all at once)."""
    import os
    import shutil

    from sim2real.filemodes import staging_dir
    from sim2real.physics import save_hard_steps
    from sim2real.trials import write_run_meta, write_trial

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = staging_dir(out.parent, prefix=f".{out.name}.", suffix=".partial")  # the umask's mode, not 0700
    hard_count = 0
    try:
        for result in done:
            trial_dir = write_trial(tmp, result.record)
            if result.hard_steps:
                hard_count += len(save_hard_steps(trial_dir / "hard_steps", result.hard_steps, prefix="sim_"))
        write_run_meta(tmp, run_meta)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return hard_count


def run(args: argparse.Namespace) -> int:
    """Handler of ``sim2real replay``: replay every trial, write the ones that worked, name the others."""
    from sim2real.cli.common import check_output_location
    from sim2real.errors import Sim2RealError
    from sim2real.sysid.runs import check_unique_names, raise_all_failed, read_trials

    out = check_output_location(args.out)
    if out.exists():
        raise Sim2RealError(f"output directory {out} already exists; choose a new one")
    params = params_from_args(args)
    loaded = read_trials(args.bags)
    check_unique_names(loaded.records)
    done, failed = _replay_all(loaded.records, loaded.sources, args, params)
    failures = list(loaded.failures) + failed
    if not done:
        raise_all_failed(failures, "no trial could be replayed")
    for failure in failures:
        _log(f"FAILED {failure.line()}", alarm=True)
    hard_count = _write(out, done, {
        "mode": "replay", "mirror": args.mode, "pusher": args.pusher,
        "pusher_shape": args.pusher_shape, "engine": args.engine, "strict": args.strict,
        "sources": list(loaded.sources),
        "params": params.as_dict(), "params_file": args.params, "failed": [f.as_dict() for f in failures]})
    degraded = sum(r.solve.degraded for r in done if r.solve is not None)
    print(f"wrote {len(done)} replayed trial(s) to {out}")
    if degraded:
        print(red(f"{degraded} degraded solver step(s) in the replay; {hard_count} hard step(s) saved under "
                  f"{out}/<trial>/hard_steps/", sys.stdout))
    if failures:
        print(red(f"{len(failures)} trial(s) not replayed:", sys.stdout))
        for failure in failures:
            print(red(f"  {failure.line()}", sys.stdout))
        return EXIT_TRIALS_FAILED
    return 0

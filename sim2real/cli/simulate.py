"""``sim2real simulate``: one simulated trial.

Modes: ``SCENARIO.yaml`` (a free box and an optional kinematic pusher path, see
:mod:`sim2real.physics.scenario`), or ``--distance D``: the standard arm trial of
``config/experiment.yaml`` with the box at D m from the arm base (see
:mod:`sim2real.sysid.prediction.standard_trial`). Modes plug into :data:`MODES`.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sim2real.cli.common import (
    add_engine_argument,
    add_param_arguments,
    check_output_location,
    check_yaml_name,
    finite_float,
    params_from_args,
    parse_name_list,
    removed_on_interrupt,
)
from sim2real.errors import Sim2RealError

if TYPE_CHECKING:
    from sim2real.physics.scenario import Scenario


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``simulate`` subcommand."""
    parser = subparsers.add_parser(
        "simulate",
        help="simulate one trial (a scenario file, or the standard arm push with --distance) and print its outcome",
        description="Simulate one trial with the differentiable contact engine: either a box on the table with "
        "an optional kinematic pusher as described by SCENARIO.yaml (duration, initial box state, pusher "
        "waypoints), or, with --distance D, the standard push of config/experiment.yaml by the mirrored xArm 6 "
        "(PD law, servo model, forward kinematics) with the box centre D m from the arm base. Prints the "
        "outcome; --json prints one JSON object; --grad adds the derivatives of the final box position and "
        "yaw with respect to parameters (for the arm trial over the whole trial, including arm.servo_tau, "
        "arm.command_delay, pd.kp and pd.kd).",
    )
    parser.add_argument("scenario", nargs="?", metavar="SCENARIO.yaml", help="scenario file")
    parser.add_argument("--distance", type=finite_float, metavar="D",
                        help="run the standard arm trial with the box centre D m from the arm base along x "
                        "(box.size_* from the parameters, standing upright)")
    parser.add_argument("--experiment", metavar="FILE",
                        help="with --distance: experiment params file defining the push "
                        "(default: the package's config/experiment.yaml)")
    add_param_arguments(parser)
    parser.add_argument("--grad", metavar="NAMES",
                        help="comma-separated parameters to differentiate the final pose by, e.g. "
                        "contact.mu_table,box.mass (each once; an empty list or entry is refused)")
    parser.add_argument("--out", metavar="BAG",
                        help="write the trajectory as a rosbag2 (mcap) directory with /sim/box_pose")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--strict", action="store_true",
                        help="fail (exit 2, naming the step) instead of returning a degraded contact step")
    add_engine_argument(parser)
    parser.add_argument("--save-hard-steps", metavar="DIR",
                        help="write every recovered or degraded contact step as a re-solvable JSON file into "
                        "DIR (with --out they also go to BAG/hard_steps/)")
    parser.epilog = ("Exit status: 0 every contact step converged or was recovered; 3 the trial finished but "
                     "some steps are degraded (accepted at a relaxed kappa or as the solver's best iterate; the "
                     "summary's 'solver' entry counts them and names the worst); 2 bad input.")
    parser.set_defaults(handler=run, uses_engine=True)


#: Longest scenario ``simulate`` runs (s).
MAX_SCENARIO_SECONDS = 600.0


def _scenario_mode(args: argparse.Namespace) -> dict[str, Any]:
    from sim2real.engines import differentiable, make_world
    from sim2real.physics.scenario import run_scenario

    params = params_from_args(args)
    names = parse_name_list(args.grad)
    available = differentiable(args.engine)
    for name in names:
        if name not in available:
            raise Sim2RealError(f"--grad: parameter '{name}' is not differentiable by the engine "
                                f"(choose from {', '.join(available)})")
    out = Path(args.out) if args.out else None
    if out is not None and out.exists():
        raise Sim2RealError(f"--out {out} already exists; refusing to overwrite it")
    if out is not None:
        check_output_location(out)
    scenario = _load_scenario(args.scenario)
    if scenario.duration > MAX_SCENARIO_SECONDS:  # steps and recording grow with it (1e7 s: 24 GB)
        raise Sim2RealError(f"{args.scenario}: duration {scenario.duration:g} s is longer than the "
                            f"{MAX_SCENARIO_SECONDS:g} s a scenario may last")
    result = run_scenario(scenario, params, names, strict=args.strict,
                          world_factory=functools.partial(make_world, args.engine))
    if out is not None:
        _write_bag(out, result)
        result.summary["bag"] = str(out)
    _save_hard_steps(args, out, result.rollout.hard_steps, result.summary)
    return result.summary


def _load_scenario(path: str) -> Scenario:
    """Read and validate a scenario file through the project's YAML reader.

    :func:`sim2real.params.read_yaml` refuses, in one line, what a plain read would turn into a
    traceback or a hang: bytes that are not UTF-8, a FIFO or device, an oversized file, a
    duplicate key; :func:`sim2real.physics.scenario.parse_scenario` then checks the content.

    Raises
    ------
    Sim2RealError
        One line naming the file.
    """
    from sim2real.params.yaml_io import read_yaml
    from sim2real.physics.scenario import parse_scenario

    if not Path(path).exists():
        raise Sim2RealError(f"cannot read scenario {path}: No such file or directory")
    return parse_scenario(read_yaml(path, "scenario"), f"scenario {path}")


def _save_hard_steps(args: argparse.Namespace, out: Path | None, hard_steps: Any, summary: dict[str, Any]) -> None:
    """Write the run's hard steps into ``out/hard_steps`` and ``--save-hard-steps``; list them in the summary."""
    from sim2real.sim import save_hard_steps

    if not hard_steps:
        return
    written = []
    for directory in (out / "hard_steps" if out is not None else None,
                      Path(args.save_hard_steps) if args.save_hard_steps else None):
        if directory is not None:
            written += [str(p) for p in save_hard_steps(directory, hard_steps, prefix="sim_")]
    if written:
        summary["hard_step_files"] = written


def _write_bag(out: Path, result: Any) -> None:
    """Write the scenario's trajectory as a trial bag: box (and pusher) poses of platform ``sim``,
    stamped from the wall-clock time of the run (the bag convention: ns since the UNIX epoch),
    with ``/tf`` and markers for 3D viewers."""
    import time

    from sim2real.sim.shapes import placement_pose
    from sim2real.trials import SceneSpec
    from sim2real.trials.writer import TrialBagWriter

    dt_ns = round(float(result.params["sim.dt"]) * 1e9)
    states = result.rollout.states
    start_ns = time.time_ns()
    path = result.pusher_path
    length = float(np.linalg.norm(path[0][3:6] - path[0][0:3])) if path is not None and path.shape[1] == 6 else 0.0
    with TrialBagWriter(out.parent if str(out.parent) else ".", out.name, start_ns=start_ns) as writer:
        writer.write_scene(SceneSpec.from_params(["sim"], params=result.params, pusher_length=length))
        for k, state in enumerate(states):
            t_ns = start_ns + k * dt_ns
            writer.write_box_pose("sim", t_ns, state[0:3], state[3:7])
            if path is not None:
                writer.write_pusher_pose("sim", t_ns, *placement_pose(path[k]))
        writer.close({"mode": "scenario", "params": result.params.as_dict(),
                      "solver": {"sim": result.rollout.solve.as_dict()}})


def _distance_mode(args: argparse.Namespace) -> dict[str, Any]:
    from dataclasses import replace

    from sim2real.control import load_experiment_config
    from sim2real.control.sim_platform import ENGINE_PARAMS, PD_PARAMS, SERVO_PARAMS
    from sim2real.engines import engine
    from sim2real.sysid.prediction import run_standard_trial
    from sim2real.trials import write_trial
    from sim2real.trials.schema import check_trial_name

    params = params_from_args(args)
    names = parse_name_list(args.grad)
    available = (*ENGINE_PARAMS, *SERVO_PARAMS, *PD_PARAMS) if engine(args.engine).differentiates_arm else ()
    for name in names:
        if name not in available:
            raise Sim2RealError(f"--grad: no whole-trial gradient for '{name}' (choose from {', '.join(available)})")
    out = Path(args.out) if args.out else None
    if out is not None:
        if out.exists():
            raise Sim2RealError(f"--out {out} already exists; refusing to overwrite it")
        check_output_location(out)
        check_trial_name(out.name)
    if args.experiment is not None:
        check_yaml_name(args.experiment, "--experiment")
    experiment = load_experiment_config(args.experiment)
    trial = run_standard_trial(args.distance, params, names, experiment=experiment, strict=args.strict,
                               engine=args.engine)
    summary = trial.summary()
    if out is not None:
        record = trial.record()
        write_trial(out.parent if str(out.parent) else ".", replace(record, name=out.name))
        summary["bag"] = str(out)
    _save_hard_steps(args, out, trial.result.hard_steps, summary)
    return summary


MODES: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "scenario": _scenario_mode,
    "distance": _distance_mode,
}


def _select_mode(args: argparse.Namespace) -> str:
    if args.scenario and args.distance is not None:
        raise Sim2RealError("give either a SCENARIO.yaml or --distance, not both")
    if args.scenario:
        return "scenario"
    if args.distance is not None:
        return "distance"
    raise Sim2RealError("simulate needs a SCENARIO.yaml or --distance D")


def run(args: argparse.Namespace) -> int:
    """Simulate and print the outcome."""
    from sim2real.sim import SolveSummary

    if args.save_hard_steps:
        check_output_location(args.save_hard_steps, "--save-hard-steps")
    with removed_on_interrupt(*([args.out] if args.out else [])):
        summary = MODES[_select_mode(args)](args)
    solve = SolveSummary.from_dict(summary["solver"])
    status = 0 if solve.ok else 3
    if not solve.ok:
        print(f"sim2real: warning: DEGRADED contact steps: {solve.describe()}; re-solve them with "
              f"'sim2real resolve-step FILE --trace' (files: --save-hard-steps DIR or --out)", file=sys.stderr)
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        print()
        return status
    final = summary["final"]
    pos = ", ".join(f"{v:.4f}" for v in final["box_position"])
    if "initial_distance_m" in summary:
        print(f"box distance        {summary['initial_distance_m']:.3f} m -> {summary['final_distance_m']:.3f} m"
              f" (pusher {'touched' if summary['touched'] else 'did not touch'} the box)")
        if "stop_reason" in summary:
            print(f"arm stopped         {summary['stop_reason']}")
    print(f"final box position  [{pos}] m, yaw {final['yaw_rad']:.4f} rad")
    print(f"flipped             {summary['flipped']} (max tilt {summary['max_tilt_deg']:.2f} deg)")
    print(f"min table distance  {summary['min_signed_distance_m']:.3g} m")
    print(f"steps               {summary['steps']} x {summary['dt']} s in {summary['wall_s']:.2f} s wall")
    print(f"contact solves      {solve.describe()}")
    for name, g in summary.get("gradients", {}).items():
        gp = ", ".join(f"{v:.4g}" for v in g["box_position"])
        print(f"d final / d {name:<20} position [{gp}], yaw {g['yaw']:.4g}")
    if "bag" in summary:
        print(f"wrote {summary['bag']}")
    for path in summary.get("hard_step_files", []):
        print(f"hard step           {path}")
    return status

"""``sim2real simulate``: one simulated trial.

Modes: ``SCENARIO.yaml`` (a free box and an optional kinematic pusher path, see
:mod:`sim2real.physics.scenario`). Further modes (the standard arm trial) plug into
:data:`MODES` with their own options.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sim2real.cli.common import add_param_arguments, params_from_args, parse_name_list
from sim2real.errors import Sim2RealError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``simulate`` subcommand."""
    parser = subparsers.add_parser(
        "simulate",
        help="simulate one trial (a scenario file) and print its outcome",
        description="Simulate a box on the table with an optional kinematic pusher, as described by "
        "SCENARIO.yaml (duration, initial box state, pusher waypoints), with the differentiable contact "
        "engine. Prints the outcome; --json prints one JSON object; --grad adds the derivatives of the final "
        "box position and yaw with respect to parameters.",
    )
    parser.add_argument("scenario", nargs="?", metavar="SCENARIO.yaml", help="scenario file")
    add_param_arguments(parser)
    parser.add_argument("--grad", metavar="NAMES",
                        help="comma-separated parameters to differentiate the final pose by, e.g. "
                        "contact.mu_table,box.mass")
    parser.add_argument("--out", metavar="BAG",
                        help="write the trajectory as a rosbag2 (mcap) directory with /sim/box_pose")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.set_defaults(handler=run)


def _scenario_mode(args: argparse.Namespace) -> dict[str, Any]:
    from sim2real.physics import DIFFERENTIABLE_PARAMS
    from sim2real.physics.scenario import load_scenario, run_scenario

    params = params_from_args(args)
    names = parse_name_list(args.grad)
    for name in names:
        if name not in DIFFERENTIABLE_PARAMS:
            raise Sim2RealError(f"--grad: parameter '{name}' is not differentiable by the engine "
                                f"(choose from {', '.join(DIFFERENTIABLE_PARAMS)})")
    out = Path(args.out) if args.out else None
    if out is not None and out.exists():
        raise Sim2RealError(f"--out {out} already exists; refusing to overwrite it")
    scenario = load_scenario(args.scenario)
    result = run_scenario(scenario, params, names)
    if out is not None:
        _write_bag(out, result)
        result.summary["bag"] = str(out)
    return result.summary


def _write_bag(out: Path, result: Any) -> None:
    from sim2real.trials.writer import TrialBagWriter

    dt_ns = round(float(result.params["sim.dt"]) * 1e9)
    states = result.rollout.states
    with TrialBagWriter(out.parent if str(out.parent) else ".", out.name, start_ns=0) as writer:
        for k, state in enumerate(states):
            writer.write_box_pose("sim", k * dt_ns, state[0:3], state[3:7])
            if result.pusher_path is not None:
                writer.write_pusher_pose("sim", k * dt_ns, result.pusher_path[k])
        writer.close({"mode": "scenario", "params": result.params.as_dict()})


MODES: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {"scenario": _scenario_mode}


def _select_mode(args: argparse.Namespace) -> str:
    if args.scenario:
        return "scenario"
    raise Sim2RealError("simulate needs a SCENARIO.yaml")


def run(args: argparse.Namespace) -> int:
    """Simulate and print the outcome."""
    summary = MODES[_select_mode(args)](args)
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        print()
        return 0
    final = summary["final"]
    pos = ", ".join(f"{v:.4f}" for v in final["box_position"])
    print(f"final box position  [{pos}] m, yaw {final['yaw_rad']:.4f} rad")
    print(f"flipped             {summary['flipped']} (max tilt {summary['max_tilt_deg']:.2f} deg)")
    print(f"min table distance  {summary['min_signed_distance_m']:.3g} m")
    print(f"steps               {summary['steps']} x {summary['dt']} s in {summary['wall_s']:.2f} s wall")
    for name, g in summary.get("gradients", {}).items():
        gp = ", ".join(f"{v:.4g}" for v in g["box_position"])
        print(f"d final / d {name:<20} position [{gp}], yaw {g['yaw']:.4g}")
    if "bag" in summary:
        print(f"wrote {summary['bag']}")
    return 0

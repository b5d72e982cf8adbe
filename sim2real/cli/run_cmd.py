"""``sim2real run``: one experiment as ROS 2 nodes in one process (what box_push.launch.py starts)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from sim2real.cli.common import add_engine_argument, add_param_arguments, bounded_float, params_from_args
from sim2real.nodes.routes import DEFAULT_CONTROLLER, ROUTES

if TYPE_CHECKING:
    from sim2real.trials.meta import TrialMeta

MODES = ("mirror", "sim", "real", "standin")
#: Default address of ``--live`` (Foxglove's own default port), loopback.
DEFAULT_LIVE_ADDRESS = "127.0.0.1:8765"


def add_live_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--live [HOST:PORT]`` (``run`` and ``demo``)."""
    parser.add_argument("--live", nargs="?", const=DEFAULT_LIVE_ADDRESS, default=None, metavar="HOST:PORT",
                        help="serve the run live to Foxglove (WebSocket, foxglove.websocket.v1) at HOST:PORT "
                        f"(default {DEFAULT_LIVE_ADDRESS}): both arms, boxes, pushers and joint states; needs "
                        "pip install 'sim2real[live]'")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``run`` subcommand."""
    parser = subparsers.add_parser(
        "run", help="run the box-push experiment as ROS 2 nodes in one process",
        description="Run the box-push experiment: per start distance the arm (real, emulated stand-in or "
        "simulated) pushes the box under the shared PD law while every topic is recorded into one rosbag2 "
        "(mcap) per trial. Modes: sim (simulator only), real (the xArm only), mirror (real arm "
        "plus mirrored sim), standin (emulated xArm + reality stand-in world + mirrored sim). The real arm is "
        "reached --via sdk (the vendor SDK at --robot-ip) or --via ros2_control (a lab's running ros2_control "
        "stack: joint velocities on /<controller>/commands, /joint_states back). During the run, "
        "robot_description (latched) and live/joint_states show both arms to a 3D viewer. DDS stays "
        "on loopback (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST is set if unset); in sim and standin mode "
        "every DDS port is bound to 127.0.0.1 by the Fast DDS profile config/fastdds_loopback.xml "
        "(FASTDDS_DEFAULT_PROFILES_FILE is set to it unless a profile is set; real and mirror mode leave "
        "Fast DDS as you configure it).",
        epilog="Each trial.json carries 'solver': per simulating platform (the stand-in world as 'real', the "
        "simulator as 'sim'), how many contact steps converged, were recovered or were degraded; recovered "
        "and degraded steps are saved in <trial>/hard_steps/ (re-solve with 'sim2real resolve-step'). A trial is "
        "written complete only when every stream covered its whole window ('coverage' in trial.json); each trial "
        "records its platforms' control-loop health ('loop_health': achieved command rate, late ticks, gaps over "
        "the driver's watchdog). Exit status: 0 every trial recorded complete, loops healthy; 3 recorded, but "
        "a trial is incomplete, a loop was starved or a simulated step degraded (listed at the end); 2 bad input "
        "(nothing started, nothing written); 4 the real arm or its link faulted (the arm was stopped; recordings "
        "kept); 5 the run failed otherwise (a node died, --timeout); 130 interrupted (Ctrl-C), 143 SIGTERM.")
    parser.add_argument("--mode", required=True, choices=MODES, help="which platforms run")
    parser.add_argument("--mirror", default="closed", choices=("closed", "commands"),
                        help="closed: each platform runs the PD law on its own states (default); commands: the "
                        "sim receives the real platform's PD commands verbatim")
    parser.add_argument("--distances", metavar="D1,D2,...",
                        help="start distances of the box in m, comma-separated, no empty entry (default: the "
                        "experiment file's; refused for a file whose trials have pushes of their own, its "
                        "'trials' section)")
    parser.add_argument("--experiment", metavar="FILE", help="experiment params file (default config/experiment.yaml)")
    parser.add_argument("--robot-ip", default=None, metavar="IPV4",
                        help="xArm controller address, required for --mode real and mirror (no default: sim2real "
                        "never connects to an address it was not given)")
    parser.add_argument("--via", default="sdk", choices=tuple(ROUTES),
                        help="how the real platform reaches the arm: " + "; ".join(
                            f"{r.name}: {r.summary}" for r in ROUTES.values()) + " (default sdk). In --mode standin "
                        "the route's stand-in plays the lab's hardware")
    parser.add_argument("--controller", default=None, metavar="NAME",
                        help="--via ros2_control: the lab's forward velocity controller (default "
                        f"{DEFAULT_CONTROLLER}; commands go to /NAME/commands as std_msgs/Float64MultiArray): a ROS 2 "
                        "name of letters, digits and underscores, '/' between parts, none starting with a digit")
    parser.add_argument("--controller-joints", default=None, metavar="J1,...,J6",
                        help="--via ros2_control: the controller's joints in its command order (default "
                        "joint1,...,joint6; /joint_states is read by name)")
    parser.add_argument("--world", metavar="FILE",
                        help="reality stand-in world file, YAML (default config/standin.yaml; read before anything "
                        "starts, as the stand-in will)")
    parser.add_argument("--standin-host", default="127.0.0.2", help="loopback address of the emulated xArm")
    parser.add_argument("--standin-port", type=int, default=0, metavar="PORT",
                        help="command port of the emulated xArm (default 0: a free port)")
    parser.add_argument("--mocap", metavar="FILE",
                        help="mocap_bridge params file: mocap topic and base-from-mocap transform (real, mirror; "
                        "default config/mocap.yaml)")
    parser.add_argument("--box-pose", default="mocap", choices=("mocap", "camera"),
                        help="where the real box pose comes from: mocap (the mocap bridge; in --mode standin the "
                        "stand-in's mocap) or camera (AprilTags on the box seen by a camera, the tag_detector node; "
                        "in --mode standin the stand-in renders the images). Default mocap")
    parser.add_argument("--camera", metavar="FILE",
                        help="--box-pose camera: tag_detector params file (image and CameraInfo topics, the tags, "
                        "the camera's pose in the base frame; default config/camera.yaml, in --mode standin the "
                        "stand-in camera's own)")
    add_live_argument(parser)
    parser.add_argument("--namespace", default="", metavar="NS",
                        help="ROS 2 namespace of every node of the run (e.g. to sit beside a lab's stack); the "
                        "lab's /joint_states and /<controller>/commands stay absolute")
    parser.add_argument("--timeout", type=bounded_float(0.0, 1e6, low_open=True), default=None, metavar="S",
                        help="give up after S seconds (0 < S <= 1e6)")
    parser.add_argument("--out", required=True, metavar="DIR", help="run directory to create (must be new or empty)")
    add_param_arguments(parser)
    add_engine_argument(parser)
    parser.set_defaults(handler=run, uses_engine=True)


def run(args: argparse.Namespace) -> int:
    """Handler of ``sim2real run``."""
    import re

    from sim2real.cli.common import check_output_location, check_yaml_name
    from sim2real.errors import Sim2RealError
    from sim2real.hardware.address import require_robot_address
    from sim2real.nodes.routes import check_controller_name, parse_joints, route
    from sim2real.nodes.runner import check_loopback_ip, run_experiment
    from sim2real.paths import check_regular_file
    from sim2real.trials.experiment import parse_distances

    # Every argument and file first: nothing may fail after the experiment ran.
    out = check_output_location(args.out)
    if out.exists() and not out.is_dir():
        raise Sim2RealError(f"--out {out} is a file, not a directory")
    if out.is_dir() and any(out.iterdir()):
        raise Sim2RealError(f"--out {out} is not empty; choose a new run directory")
    if args.distances is not None:
        if not args.distances.strip():
            raise Sim2RealError("--distances is empty; give start distances in m, e.g. 0.30,0.45")
        parse_distances(args.distances)
    if args.mode == "standin":
        check_loopback_ip(args.standin_host, "--standin-host")
    real_route = route(args.via)
    if args.mode in ("real", "mirror") and real_route.needs_robot_address:
        require_robot_address(args.robot_ip, f"--robot-ip (--mode {args.mode} drives a real xArm)")
    elif args.robot_ip is not None:
        reason = (f"--mode {args.mode} connects to no robot" if args.mode not in ("real", "mirror")
                  else f"--via {args.via} reaches the arm through the lab's stack, not an address")
        raise Sim2RealError(f"--robot-ip applies to --mode real and mirror with --via sdk only ({reason})")
    if args.via != "sdk" and args.mode == "sim":
        raise Sim2RealError(f"--via {args.via} applies to a real platform; --mode sim has none")
    if (args.controller is not None or args.controller_joints is not None) and args.via != "ros2_control":
        raise Sim2RealError("--controller and --controller-joints apply to --via ros2_control only")
    if args.controller is not None:
        check_controller_name(args.controller)
    joints = parse_joints(args.controller_joints)
    if args.live is not None:
        check_live(args.live)
    namespace = args.namespace.strip().strip("/")
    if namespace and not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*(/[A-Za-z][A-Za-z0-9_]*)*", namespace):
        raise Sim2RealError(f"--namespace must be a ROS 2 name (letters, digits, _ and /), got {args.namespace!r}")
    if args.experiment is not None or args.distances is not None:
        from sim2real.control import load_experiment_config

        config = load_experiment_config(None if args.experiment is None
                                        else check_yaml_name(args.experiment, "--experiment"))
        if args.distances is not None:
            try:  # a file whose trials have pushes of their own keeps its distances
                config.with_distances(parse_distances(args.distances))
            except Sim2RealError as err:
                raise Sim2RealError(f"--distances {args.distances}: {err}") from None
    if args.world is not None:
        check_world(args.world, args.mode)
    if args.mocap is not None:
        if args.mode not in ("real", "mirror"):
            raise Sim2RealError("--mocap applies to --mode real and mirror only")
        check_regular_file(check_yaml_name(args.mocap, "--mocap"), "mocap file")
    if args.camera is not None:
        if args.box_pose != "camera":
            raise Sim2RealError("--camera applies to --box-pose camera only")
        from sim2real.vision.setup import load_camera_setup

        check_regular_file(check_yaml_name(args.camera, "--camera"), "camera file")
        load_camera_setup(args.camera)
    if args.box_pose == "camera" and args.mocap is not None:
        raise Sim2RealError("--mocap and --box-pose camera exclude each other (the box pose comes from one source)")
    if not 0 <= args.standin_port <= 65535:
        raise Sim2RealError(f"--standin-port must be in 0..65535, got {args.standin_port}")
    params = params_from_args(args)

    if not os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE"):
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
        print("sim2real: warning: ROS_AUTOMATIC_DISCOVERY_RANGE was unset; using LOCALHOST", file=sys.stderr)
    paths = run_experiment(args.mode, args.distances, params, args.out, mirror=args.mirror, engine=args.engine,
                           experiment_file=args.experiment, robot_ip=args.robot_ip, world_file=args.world,
                           standin_host=args.standin_host, standin_port=args.standin_port,
                           mocap_file=args.mocap, via=args.via, controller=args.controller,
                           controller_joints=joints, namespace=namespace, live=args.live, timeout=args.timeout,
                           progress=lambda line: print(line, flush=True), box_pose=args.box_pose,
                           camera_file=args.camera)
    print(f"{len(paths)} trial(s) recorded in {args.out}")
    return max(report_recordings(paths), report_solver(paths))


def check_world(path: str, mode: str) -> None:
    """Read the ``--world`` file as the stand-in will, before any process starts: a bad value (a negative
    time constant, an unknown key) is one line and exit 2, not a child that dies at start (exit 5)."""
    from sim2real.cli.common import check_yaml_name
    from sim2real.errors import Sim2RealError
    from sim2real.hardware.standin import load_standin

    if mode != "standin":
        raise Sim2RealError("--world applies to --mode standin only")
    if not path.strip():
        raise Sim2RealError("--world must name a stand-in world file")
    load_standin(check_yaml_name(path, "--world"))


def check_live(address: str) -> None:
    """Refuse a bad ``--live`` address, or a missing foxglove-sdk, before anything starts (one line)."""
    import importlib.util

    from sim2real.errors import Sim2RealError
    from sim2real.nodes.foxglove_live import parse_live_address

    parse_live_address(address)
    if importlib.util.find_spec("foxglove") is None:
        raise Sim2RealError("--live needs the foxglove-sdk package: pip install 'sim2real[live]'")


def _trial_metas(paths: list[Any]) -> list[tuple[Any, TrialMeta]]:
    """``(trial directory, its trial.json)`` of each recorded trial that has one."""
    from pathlib import Path

    from sim2real.trials.jsonio import read_json
    from sim2real.trials.meta import TrialMeta

    return [(path, TrialMeta(read_json(Path(path) / "trial.json", "trial file"))) for path in paths
            if (Path(path) / "trial.json").is_file()]


def report_recordings(paths: list[Any]) -> int:
    """Print each trial recorded incomplete or with a starved control loop; 3 if any, else 0."""
    from pathlib import Path

    from sim2real.trials.coverage import starved_platforms

    status = 0
    for path, meta in _trial_metas(paths):
        if not meta.complete:
            status = 3
            print(f"INCOMPLETE {Path(path).name}: {meta.note or 'recorded incomplete'}")
        for ns, description in starved_platforms(meta.raw).items():
            status = 3
            print(f"STARVED {Path(path).name} {ns}: control loop at {description}")
    return status


def report_solver(paths: list[Any]) -> int:
    """Print each trial's contact-solve tally when any step needed the ladder; 3 if any is degraded, else 0."""
    from pathlib import Path

    from sim2real.sim import SolveSummary

    status = 0
    for path, meta in _trial_metas(paths):
        for ns, data in sorted(meta.solver.items()):
            summary = SolveSummary.from_dict(data)
            if summary.degraded:
                status = 3
                print(f"DEGRADED {Path(path).name} {ns}: {summary.describe()} (hard steps in {path}/hard_steps)")
            elif summary.recovered:
                print(f"recovered {Path(path).name} {ns}: {summary.describe()}")
    return status

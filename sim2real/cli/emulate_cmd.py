"""``sim2real emulate-xarm``: run the xArm controller emulator on a loopback address."""

from __future__ import annotations

import argparse

from sim2real.cli.common import bounded_float, bounded_int, check_yaml_name


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``emulate-xarm`` subcommand."""
    parser = subparsers.add_parser(
        "emulate-xarm",
        help="xArm 6 controller emulator speaking the SDK's wire protocol (loopback only)",
        description="Serve an emulated xArm 6 controller on 127.0.0.N: the command port plus the report "
        "ports 30001-30003, so the unmodified xarm-python-sdk connects to it. Joints follow the servo model "
        "with the true parameters of --world. Runs until Ctrl-C. Fault times are seconds after the first "
        "motion command.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=bounded_int(1, 65535), default=502,
                        help="command port (default 502, which needs root; the SDK can be pointed at another one)")
    parser.add_argument("--world", metavar="F", help="YAML with arm.servo_tau, arm.command_delay, "
                        "arm.max_joint_acc, arm.initial_joints (default: nominal parameters, zero joints)")
    parser.add_argument("--version-string", default=None, metavar="AXIS,TYPE,ROBOT_SN,BOX_SN,vX.Y.Z",
                        help="answer to the firmware-version query, in the controller's format (default "
                        "6,6,XI1303000000,AC1303000000,v2.6.107); another axis count or an old version tests a "
                        "driver's refusal, text in another format is refused here")
    parser.add_argument("--latency", type=bounded_float(0.0, 10.0), default=0.0, metavar="S",
                        help="added reply latency (s)")
    parser.add_argument("--stall-at", type=bounded_float(0.0, 1e6), metavar="T",
                        help="stall the command channel once at T s")
    parser.add_argument("--stall-duration", type=bounded_float(0.0, 10.0), default=0.19, metavar="S",
                        help="stall length (s)")
    parser.add_argument("--drop-at", type=bounded_float(0.0, 1e6), metavar="T", help="drop every connection at T s")
    parser.add_argument("--error-at", type=bounded_float(0.0, 1e6), metavar="T", help="raise a controller error at T s")
    parser.add_argument("--error-code", type=bounded_int(1, 255), default=31, metavar="C",
                        help="error code for --error-at (C31)")
    parser.add_argument("--duration", type=bounded_float(0.0, 1e7, low_open=True), metavar="S",
                        help="exit after S seconds instead of at Ctrl-C")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Start the emulator and serve until interrupted."""
    import threading

    from sim2real.errors import Sim2RealError
    from sim2real.hardware.emulator import XArmEmulator
    from sim2real.hardware.emulator_config import DEFAULT_VERSION, EmulatorConfig, FaultConfig
    from sim2real.hardware.protocol import parse_version
    from sim2real.hardware.world_file import EmulatedArm, load_world_file
    from sim2real.params import ParameterSet
    from sim2real.sim.servo import ServoParams

    if args.version_string is not None and parse_version(args.version_string.encode("utf-8")) is None:
        raise Sim2RealError(f"--version-string {args.version_string!r} is not an xArm version string: give "
                            f"AXIS,TYPE,ROBOT_SN,BOX_SN,vMAJOR.MINOR.PATCH, e.g. {DEFAULT_VERSION}")
    if args.world is not None:
        check_yaml_name(args.world, "--world")
    arm = (load_world_file(args.world) if args.world is not None
           else EmulatedArm(ServoParams.from_params(ParameterSet.nominal()), (0.0,) * 6))
    faults = FaultConfig(latency=args.latency, stall_at=args.stall_at, stall_duration=args.stall_duration,
                         drop_at=args.drop_at, error_at=args.error_at, error_code=args.error_code)
    config = EmulatorConfig(host=args.host, command_port=args.port, servo=arm.servo,
                            initial_joints=arm.initial_joints,
                            version=DEFAULT_VERSION if args.version_string is None else args.version_string,
                            faults=faults)
    with XArmEmulator(config) as emulator:
        ports = ", ".join(str(p) for p in config.report_ports)
        print(f"xArm emulator listening on {emulator.address} (reports on {config.host}: {ports}); "
              f"servo tau {arm.servo.tau:g} s, delay {arm.servo.delay:g} s; Ctrl-C to stop", flush=True)
        threading.Event().wait(args.duration)
    return 0

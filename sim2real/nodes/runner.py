"""The whole experiment graph in one process (``sim2real run``, ``sim2real demo``).

Builds the nodes that ``launch/box_push.launch.py`` starts as separate processes and spins
them on one :class:`~rclpy.executors.MultiThreadedExecutor` in a private rclpy context,
until the experiment node has finished every trial (or Ctrl-C, or a timeout).

=========  ===============================================================================
mode       nodes
=========  ===============================================================================
sim        sim_node, sim pd_controller, experiment, recorder
real       xarm_node (``robot_ip``), real pd_controller, experiment, recorder
mirror     real + sim nodes
standin    standin_world (emulated xArm on loopback + box world + mocap), xarm_node
           connected to it through the SDK, sim nodes, experiment, recorder
=========  ===============================================================================
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from sim2real.control import PushConfig, load_experiment_config
from sim2real.errors import Sim2RealError
from sim2real.nodes.common import ensure_localhost, params_overrides, spin_until_finished
from sim2real.params import ParameterSet
from sim2real.trials.experiment import check_mirror, parse_distances, platforms_of

#: Default loopback address and command port of the stand-in's emulated controller.
STANDIN_HOST = "127.0.0.2"
STANDIN_PORT = 5020


def _parameters(values: dict[str, Any]) -> list[Any]:
    from rclpy.parameter import Parameter

    return [Parameter(name, value=value) for name, value in values.items()]


def run_experiment(mode: str, distances: Sequence[float] | str | None, params: ParameterSet, out_dir: str | Path,
                   mirror: str = "closed", experiment_file: str | Path | None = None,
                   robot_ip: str = "192.168.1.185", robot_port: int = 502, world_file: str | Path | None = None,
                   standin_host: str = STANDIN_HOST, standin_port: int = STANDIN_PORT,
                   progress: Callable[[str], None] = print, timeout: float | None = None,
                   node_hook: Callable[[dict[str, Any]], None] | None = None) -> list[Path]:
    """Run one experiment as ROS 2 nodes in this process and return the recorded trial directories.

    Parameters
    ----------
    mode : {"mirror", "sim", "real", "standin"}
    distances : sequence of float or str, optional
        Start distances (m); default: the experiment file's.
    params : ParameterSet
        Simulator parameters of the sim node and of both PD controllers (same gains).
    out_dir : path
        Run directory (run.json + one trial directory per distance).
    mirror : {"closed", "commands"}
    experiment_file : path, optional
        ``experiment`` params file (default ``config/experiment.yaml``).
    robot_ip, robot_port : str, int
        Controller address in ``real``/``mirror`` mode.
    world_file : path, optional
        Stand-in world (default ``config/standin.yaml``).
    standin_host, standin_port : str, int
        Loopback address and command port of the emulated controller in ``standin`` mode.
    progress : callable
        Receives one line per finished trial (and operator prompts).
    timeout : float, optional
        Give up after this many seconds (Sim2RealError).
    node_hook : callable, optional
        Called with ``{name: node}`` once the graph is built (benchmarks, tests).

    Raises
    ------
    Sim2RealError
        Bad arguments, a node that cannot start (e.g. no controller), a failed trial, timeout.
    KeyboardInterrupt
        After Ctrl-C; the open trial was closed as incomplete.
    """
    import rclpy
    from rclpy.context import Context

    platforms = platforms_of(mode)
    check_mirror(mirror, mode)
    config = load_experiment_config(experiment_file)
    chosen = parse_distances(distances) if distances else config.distances
    if not chosen:
        raise Sim2RealError("no start distances: give --distances or set them in the experiment file")
    out = Path(out_dir)
    existing = [p.name for p in out.iterdir()] if out.is_dir() else []
    if existing:
        raise Sim2RealError(f"output directory {out} is not empty; choose a new one")
    ensure_localhost()
    if "ROS_DOMAIN_ID" not in os.environ:
        progress("note: ROS_DOMAIN_ID is unset; using domain 0")

    # Many threads share the GIL here (executor, SDK, emulator, physics); a short switch
    # interval keeps the SDK round trips and the control ticks from waiting 5 ms per hand-off.
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    context = Context()
    rclpy.init(context=context)
    nodes: dict[str, Any] = {}
    standin: subprocess.Popen[bytes] | None = None
    sim_values = params_overrides(params)
    try:
        from sim2real.nodes.experiment import ExperimentNode
        from sim2real.nodes.pd_controller import PDControllerNode
        from sim2real.nodes.recorder import RecorderNode
        from sim2real.nodes.sim_node import SimNode

        common = {"context": context}
        if mode == "standin":
            world = {"host": standin_host, "command_port": standin_port,
                     "initial_joints": [float(x) for x in _start_joints(params, config.push)]}
            if world_file:
                world["world_file"] = str(world_file)
            standin = _start_standin(world)
            robot_ip, robot_port = standin_host, standin_port
        if "real" in platforms:
            from sim2real.nodes.xarm_node import XArmNode

            nodes["xarm_node"] = XArmNode(parameter_overrides=_parameters(
                {"robot_ip": robot_ip, "command_port": int(robot_port), **sim_values}), **common)
            nodes["real_pd_controller"] = PDControllerNode(
                "real_pd_controller", parameter_overrides=_parameters(
                    {"platform": "real", "mirror": mirror, **sim_values}), **common)
        if "sim" in platforms:
            nodes["sim_node"] = SimNode(parameter_overrides=_parameters({"mirror": mirror, **sim_values}), **common)
            nodes["sim_pd_controller"] = PDControllerNode(
                "sim_pd_controller", parameter_overrides=_parameters(
                    {"platform": "sim", "mirror": mirror, **sim_values}), **common)
        nodes["recorder"] = RecorderNode(parameter_overrides=_parameters(
            {"out_dir": str(out), **sim_values}), **common)
        experiment_values: dict[str, Any] = {
            "mode": mode, "mirror": mirror, "distances": [float(d) for d in chosen],
            "start_tolerance": float(config.start_tolerance), **sim_values,
            **{f"push.{f.name}": float(getattr(config.push, f.name)) for f in fields(PushConfig)}}
        experiment = ExperimentNode(progress=progress, parameter_overrides=_parameters(experiment_values), **common)
        nodes["experiment"] = experiment
        if node_hook is not None:
            node_hook(nodes)
        status = spin_until_finished(list(nodes.values()), experiment.finished, num_threads=8,
                                     timeout=timeout, context=context)
        if status == 130:
            raise KeyboardInterrupt
        if status == 124:
            raise Sim2RealError(f"experiment did not finish within {timeout:g} s")
        if experiment.error:
            raise Sim2RealError(experiment.error)
        return list(experiment.results)
    finally:
        for node in reversed(list(nodes.values())):
            close = getattr(node, "close", None)
            if close is not None:
                close()
            node.destroy_node()
        rclpy.try_shutdown(context=context)
        sys.setswitchinterval(switch_interval)
        if standin is not None:
            _stop_process(standin)


def _start_joints(params: ParameterSet, push: PushConfig) -> Any:
    from sim2real.model import load_arm
    from sim2real.trials.experiment import start_joints

    return start_joints(load_arm(params), push, float(params["contact.table_height"]))


def _start_standin(values: dict[str, Any], wait: float = 20.0) -> subprocess.Popen[bytes]:
    """Start the ``standin_world`` node in its own process (its emulator and box physics get
    their own interpreter, away from the control loop) and wait until the emulator listens."""
    command = [sys.executable, "-m", "sim2real.nodes.standin_world", "--ros-args"]
    for name, value in values.items():
        text = "[" + ", ".join(repr(float(v)) for v in value) + "]" if isinstance(value, list) else str(value)
        command += ["-p", f"{name}:={text}"]
    process = subprocess.Popen(command, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise Sim2RealError(f"the reality stand-in exited at start (status {process.returncode})")
        try:
            with socket.create_connection((values["host"], int(values["command_port"])), timeout=0.5):
                return process
        except OSError:
            time.sleep(0.1)
    _stop_process(process)
    raise Sim2RealError(f"the reality stand-in did not listen on {values['host']}:{values['command_port']} "
                        f"within {wait:g} s")


def _stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGINT, then SIGKILL after 5 s, of a child this module started."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5.0)

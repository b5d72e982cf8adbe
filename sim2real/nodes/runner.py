"""The experiment graph from one command (``sim2real run``, ``sim2real demo``).

Builds the nodes that ``launch/box_push.launch.py`` starts as separate processes. The
experiment, the recorder and live_view spin in this process, in a private rclpy context, each node on
its own single-threaded executor (the streams they read come through one
:class:`~sim2real.nodes.streams.StreamHub`), until the experiment node has finished every trial (or
Ctrl-C, or a timeout). Platforms with a real-time duty get their own interpreter
(:mod:`sim2real.nodes.group`, started with a generated params file and stopped by pid, see
:mod:`sim2real.nodes.run_children`), so that no physics step or bag write holds the GIL their
control loop needs:

=========  ================================  ==================================================
mode       this process                      child processes
=========  ================================  ==================================================
sim        experiment, recorder, live_view,  none
           sim_node, sim pd_controller
real       experiment, recorder, live_view   the route's real node (runs the real PD law) +
                                             mocap_bridge
mirror     experiment, recorder, live_view   the route's real node + mocap_bridge;
                                             sim_node + sim pd_controller (niced)
standin    experiment, recorder, live_view   the route's stand-in (emulated xArm on loopback +
                                             box world + mocap); the route's real node;
                                             sim_node + sim pd_controller (niced)
=========  ================================  ==================================================

The real node and its stand-in come from the route (:mod:`sim2real.nodes.routes`, ``via``):
``xarm_node`` and ``standin_world`` for the vendor SDK, ``ros2_control_arm`` and
``ros2_control_standin`` (the stand-in world behind a stand-in ros2_control stack) for a lab's
running ros2_control stack.

Measured on 2 cores (stand-in, engine at about 0.1 ms per step): with every node in one
process on a MultiThreadedExecutor the process saturated one core and the real loop ran at
45-80 Hz until the driver latched a latency or stall fault; with this layout it holds 100 Hz
(see ``benchmarks/loop.py``).
"""

from __future__ import annotations

import gc
import os
import socket
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from sim2real.control import TRIAL_PUSH_KEYS, ExperimentConfig, PushConfig, load_experiment_config
from sim2real.errors import HardwareFaultError, InputError, RunFailedError, Sim2RealError
from sim2real.hardware.address import require_robot_address
from sim2real.nodes.common import ensure_localhost, params_overrides
from sim2real.nodes.priority import raise_run_priority, unchanged_priority
from sim2real.nodes.process import close_nodes, freeze_heap, spin_until_finished
from sim2real.nodes.routes import STANDIN_LINK as STANDIN_LINK  # re-exported: the launch file and tests use it
from sim2real.nodes.routes import Route, RouteOptions, parse_joints, route
from sim2real.nodes.run_children import SIM_NICENESS as SIM_NICENESS  # re-exported: part of this module's interface
from sim2real.nodes.run_children import _Child, _ChildWatcher
from sim2real.params import ParameterSet
from sim2real.params.yaml_io import nest_dotted
from sim2real.paths import config_file, use_loopback_profile
from sim2real.trials.experiment import check_mirror, parse_distances, platforms_of


def check_loopback_ip(host: str, what: str) -> None:
    """Refuse anything but a literal 127.x.x.x address (never a name that DNS would resolve).

    Raises
    ------
    Sim2RealError
        ``host`` is not a dotted IPv4 loopback address.
    """
    import ipaddress

    try:
        ok = ipaddress.IPv4Address(host).is_loopback
    except ValueError:
        ok = False
    if not ok:
        raise Sim2RealError(f"{what} must be a loopback IPv4 address (127.x.x.x), got {host!r}")


#: Modes whose whole DDS graph is on this machine: they bind DDS to 127.0.0.1 with the Fast DDS
#: profile ``config/fastdds_loopback.xml`` (:func:`sim2real.paths.use_loopback_profile`: only under
#: ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` and when no profile is set). ``real`` and ``mirror``
#: leave Fast DDS as configured: a lab may run the mocap driver or a viewer on another machine.
LOOPBACK_PROFILE_MODES = ("sim", "standin")
#: Default loopback address of the stand-in's emulated controller; port 0 = a free port.
STANDIN_HOST = "127.0.0.2"
STANDIN_PORT = 0


def _parameters(values: dict[str, Any]) -> list[Any]:
    from rclpy.parameter import Parameter

    return [Parameter(name, value=value) for name, value in values.items()]


def run_experiment(mode: str, distances: Sequence[float] | str | None, params: ParameterSet, out_dir: str | Path,
                   mirror: str = "closed", experiment_file: str | Path | None = None,
                   robot_ip: str | None = None, robot_port: int = 502, world_file: str | Path | None = None,
                   standin_host: str = STANDIN_HOST, standin_port: int = STANDIN_PORT,
                   progress: Callable[[str], None] = print, timeout: float | None = None,
                   mocap_file: str | Path | None = None, replay_trial: str | Path | None = None,
                   node_hook: Callable[[dict[str, Any]], None] | None = None, engine: str = "ours",
                   via: str = "sdk", controller: str | None = None,
                   controller_joints: Sequence[str] | None = None, namespace: str = "",
                   live: str | None = None, box_pose: str = "mocap",
                   camera_file: str | Path | None = None) -> list[Path]:
    """Run one experiment as ROS 2 nodes and return the recorded trial directories.

    In ``sim`` and ``real`` mode every node runs in this process. With both platforms (``mirror``,
    ``standin``) the sim platform (``sim_node`` + ``sim_pd_controller``) and the reality stand-in run in
    child processes (:mod:`sim2real.nodes.group`, parameters through a params file), so that their physics
    does not hold the GIL the real arm's control loop needs; they are stopped (SIGINT, then SIGKILL) at the end.

    DDS stays on loopback: ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` is set if unset, and in ``sim`` and
    ``standin`` mode ``FASTDDS_DEFAULT_PROFILES_FILE`` names the loopback profile unless one is set
    (:data:`LOOPBACK_PROFILE_MODES`; read once per process: one that ran DDS before keeps its transports).

    Parameters
    ----------
    mode : {"mirror", "sim", "real", "standin"}
    distances : sequence of float or str, optional
        Start distances (m); default: the experiment file's. Refused when the file gives each trial its own
        push (its ``trials`` section) and these differ from its distances.
    params : ParameterSet
        Simulator parameters of the sim node and of both PD controllers (same gains).
    out_dir : path
        Run directory (run.json + one trial directory per distance).
    mirror : {"closed", "commands"}
    experiment_file : path, optional
        ``experiment`` params file (default ``config/experiment.yaml``).
    robot_ip, robot_port : str, int
        Controller address in ``real``/``mirror`` mode: a dotted IPv4 address, required there
        (there is no default address).
    world_file : path, optional
        Stand-in world (default ``config/standin.yaml``).
    standin_host, standin_port : str, int
        Loopback address and command port of the emulated controller in ``standin`` mode
        (port 0: a free one).
    progress : callable
        Receives one line per finished trial (and operator prompts).
    timeout : float, optional
        Give up after this many seconds (Sim2RealError).
    mocap_file : path, optional
        ``mocap_bridge`` params file for ``real``/``mirror`` mode: the mocap topic and the
        base-from-mocap transform (default ``config/mocap.yaml``).
    replay_trial : path, optional
        ``sim`` mode: instead of the distances, one trial that plays this recorded trial's
        reference from its recorded start (what ``launch/replay.launch.py`` runs).
    node_hook : callable, optional
        Called with ``{name: node}`` of the nodes in this process once the graph is built
        (benchmarks, tests).
    engine : str
        Engine of the sim platform's box (``sim_node`` parameter ``engine``): ``"ours"`` or ``"mujoco"``.
    via : str
        How the real platform reaches the arm (:mod:`sim2real.nodes.routes`): ``"sdk"`` (``xarm_node``,
        the vendor SDK on ``robot_ip``) or ``"ros2_control"`` (``ros2_control_arm``, the lab's running
        ros2_control stack; no robot address). In ``standin`` mode the route's stand-in plays the
        lab's hardware.
    controller, controller_joints : str, sequence of str, optional
        ``ros2_control``: the forward velocity controller and its joints in command order
        (default: :data:`sim2real.nodes.routes.DEFAULT_CONTROLLER`, ``joint1`` .. ``joint6``).
    namespace : str
        Namespace of every node of the graph (``""``: none); the lab's ``/joint_states`` and
        ``/<controller>/commands`` stay absolute.
    live : str, optional
        ``HOST:PORT``: serve the run to Foxglove over its WebSocket protocol from ``live_view``
        (:mod:`sim2real.nodes.foxglove_live`; needs ``foxglove-sdk``).
    box_pose, camera_file : {"mocap", "camera"}, path, optional
        The real box pose from mocap (``mocap_bridge``, the stand-in's mocap) or from camera images of its
        AprilTags (``tag_detector``; the stand-in renders them), whose set-up is ``camera_file``
        (:func:`_camera_file`).

    Raises
    ------
    Sim2RealError
        Bad arguments, a node that cannot start (e.g. no controller).
    HardwareFaultError
        The real arm's driver reported a fault (the arm was stopped; the open trial is kept
        as incomplete).
    RunFailedError
        A child process died, a trial failed otherwise, or the timeout passed.
    KeyboardInterrupt
        After Ctrl-C; the open trial was closed as incomplete.
    """
    import rclpy  # noqa: F401 (ROS 2 first: without it a run fails before any check)

    config, chosen, out = _check_arguments(mode, distances, mirror, experiment_file, out_dir, standin_host, progress)
    sim_values, real_route, sections = _node_sections(
        mode, params, config, via=via, live=live, mirror=mirror, engine=engine, robot_ip=robot_ip,
        robot_port=robot_port, controller=controller, controller_joints=controller_joints,
        standin_host=standin_host, standin_port=standin_port, world_file=world_file)
    local, remote = _placement(mode, real_route, _check_box_pose(box_pose, mode, real_route, sections))
    plan = _RunPlan(mode, mirror, engine, config, chosen, out, sim_values, sections, real_route.standin, local,
                    remote, namespace, mocap_file, replay_trial, live, progress, camera_file, world_file)
    return _run_graph(plan, node_hook, timeout)


@dataclass(frozen=True)
class _RunPlan:
    """One run of :func:`run_experiment` as settled before its graph starts (its arguments checked)."""

    mode: str
    mirror: str
    engine: str
    config: ExperimentConfig
    #: Start distances (m), one trial each.
    distances: Sequence[float]
    #: The run directory (new or empty).
    out: Path
    #: Simulator parameters every node gets (the params file's ``/**`` section).
    sim_values: dict[str, Any]
    #: Node name (or ``/**``) → its parameters, before namespacing.
    sections: dict[str, dict[str, Any]]
    #: Node name of the route's stand-in.
    standin: str
    #: Platform nodes in this process, and the node groups of the child processes (:func:`_placement`).
    local: list[str]
    remote: list[list[str]]
    namespace: str
    mocap_file: str | Path | None
    replay_trial: str | Path | None
    live: str | None
    progress: Callable[[str], None]
    camera_file: str | Path | None = None
    world_file: str | Path | None = None


def _check_arguments(mode: str, distances: Sequence[float] | str | None, mirror: str,
                     experiment_file: str | Path | None, out_dir: str | Path, standin_host: str,
                     progress: Callable[[str], None]) -> tuple[ExperimentConfig, Sequence[float], Path]:
    """Check :func:`run_experiment`'s arguments and set DDS up for loopback (before any node or child starts).

    Returns
    -------
    config : ExperimentConfig
        The experiment file's settings at the chosen distances.
    chosen : sequence of float
        Start distances (m): ``distances`` parsed, else the experiment file's.
    out : Path
        The run directory (absent or empty).

    Raises
    ------
    Sim2RealError
        A bad mirror mode, distance or stand-in host; no distances; ``distances`` for an experiment file whose
        trials have pushes of their own (its ``trials`` section); an output path that is a file or a directory
        that is not empty.
    """
    check_mirror(mirror, platforms_of(mode)[0] and mode)
    config = load_experiment_config(experiment_file)
    chosen = parse_distances(distances) if distances else config.distances
    if not chosen:
        raise Sim2RealError("no start distances: give --distances or set them in the experiment file")
    config = config.with_distances(chosen)  # refused when the file gives each trial its own push
    if mode == "standin":
        check_loopback_ip(str(standin_host), "--standin-host")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise Sim2RealError(f"output directory {out} is a file, not a directory; choose a new directory")
    existing = [p.name for p in out.iterdir()] if out.is_dir() else []
    if existing:
        raise Sim2RealError(f"output directory {out} is not empty; choose a new one")
    ensure_localhost()
    if mode in LOOPBACK_PROFILE_MODES:  # before rclpy.init and the children: both read it at start
        use_loopback_profile()
    if "ROS_DOMAIN_ID" not in os.environ:
        progress("note: ROS_DOMAIN_ID is unset; using domain 0")
    return config, chosen, out


def _node_sections(mode: str, params: ParameterSet, config: ExperimentConfig, *, via: str, live: str | None,
                   mirror: str, engine: str, robot_ip: str | None, robot_port: int, controller: str | None,
                   controller_joints: Sequence[str] | None, standin_host: str, standin_port: int,
                   world_file: str | Path | None) -> tuple[dict[str, Any], Route, dict[str, dict[str, Any]]]:
    """The parameters of every node of the graph (arguments as :func:`run_experiment`'s).

    Returns
    -------
    sim_values : dict
        Simulator parameters every node gets (``/**``).
    real_route : Route
        How the real platform reaches the arm (``via``).
    sections : dict
        Node name (or ``/**``) → ``{parameter name: value}``; in ``standin`` mode with the emulated
        controller's port (a free one for port 0) and the stand-in's world and start joints (rad).

    Raises
    ------
    Sim2RealError
        An unknown route, a bad ``live`` address, controller name or controller joints, a bad stand-in
        world file (``standin`` mode), or no robot address where a real arm is driven over the SDK.
    """
    sim_values = params_overrides(params)
    real_route = route(via)
    if live:
        from sim2real.nodes.foxglove_live import parse_live_address

        parse_live_address(live)
    options = RouteOptions(robot_ip=robot_ip, robot_port=int(robot_port), controller=controller,
                           joints=parse_joints(controller_joints))
    if mode == "standin":
        standin_port = int(standin_port) or free_port(standin_host)
    elif "real" in platforms_of(mode) and real_route.needs_robot_address:
        options = RouteOptions(require_robot_address(robot_ip, f"robot address (mode {mode} drives a real xArm)"),
                               int(robot_port), controller, options.joints)
    sections: dict[str, dict[str, Any]] = {
        "/**": sim_values,
        "sim_node": {"mirror": mirror, "engine": engine},
        "sim_pd_controller": {"platform": "sim", "mirror": mirror},
    }
    if "real" in platforms_of(mode):
        sections.update(real_route.parameters(options, standin_host if mode == "standin" else None, standin_port))
    if mode == "standin":
        from sim2real.hardware.standin import load_standin

        load_standin(world_file or None)  # as the stand-in will read it: a bad file stops the run before it starts
        sections[real_route.standin] = {
            **sections.get(real_route.standin, {}), "world_file": str(world_file or ""),
            "initial_joints": [float(x) for x in _start_joints(params, config.push_of(0))]}  # the first trial's
    return sim_values, real_route, sections


def _run_graph(plan: _RunPlan, node_hook: Callable[[dict[str, Any]], None] | None,
               timeout: float | None) -> list[Path]:
    """Start the child processes, then this process's nodes; spin until the experiment has finished;
    always close the nodes, shut the context down and stop the children (SIGINT, then SIGKILL).

    Returns the recorded trial directories; raises as :func:`run_experiment` does.
    """
    import rclpy
    from rclpy.context import Context

    # Threads of this process share the GIL (executor, SDK, recorder); a short switch interval
    # keeps the SDK round trips and the control ticks from waiting 5 ms per hand-off.
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    context = Context()
    nodes: dict[str, Any] = {}
    children: list[_Child] = []
    workdir = tempfile.TemporaryDirectory(prefix="sim2real-run-", ignore_cleanup_errors=True)
    # Before any thread or child of the run starts (they inherit it); a sim-only run steps lock-step
    # and has no real-time duty.
    priority = raise_run_priority() if "real" in platforms_of(plan.mode) else unchanged_priority()
    try:
        if priority.message:
            plan.progress(priority.message)
        _start_children(plan, children, Path(workdir.name))
        rclpy.init(context=context)
        experiment = _start_nodes(plan, nodes, context)
        if node_hook is not None:
            node_hook(nodes)
        watcher = _ChildWatcher(children, experiment)
        freeze_heap()
        status = spin_until_finished(list(nodes.values()), experiment.finished, timeout=timeout,
                                     context=context)
        watcher.stop()
        _raise_if_failed(status, experiment, watcher, timeout)
        return list(experiment.results)
    finally:
        try:
            close_nodes(list(nodes.values()))
            rclpy.try_shutdown(context=context)
        finally:  # the children stop even when closing a node failed
            gc.unfreeze()  # the run's nodes may be collected now
            sys.setswitchinterval(switch_interval)
            for child in reversed(children):  # the stand-in last: the driver stops the arm through it
                child.stop()
            workdir.cleanup()
            priority.restore()


def _start_children(plan: _RunPlan, children: list[_Child], workdir: Path) -> None:
    """Write the params file(s) into ``workdir`` and start the child processes of ``plan.remote``, the
    stand-in first and alone; append each to ``children`` as it starts (so that a failure still stops
    those started) and wait until every one is ready.

    Raises
    ------
    RunFailedError
        A child exited at start or did not get ready in time.
    """
    namespace = plan.namespace
    # A bare node-name key matches only a node outside any namespace: key the sections by full name.
    keyed = {(key if key == "/**" or not namespace else f"/{namespace}/{key}"): values
             for key, values in plan.sections.items()}
    params_file = write_params_file(workdir / "params.yaml", keyed)
    extra_files = {"mocap_bridge": Path(plan.mocap_file) if plan.mocap_file else config_file("mocap.yaml"),
                   "tag_detector": _camera_file(plan, workdir)}
    if namespace:
        extra_files = {name: _namespaced(path, namespace, workdir / f"{name}.yaml")
                       for name, path in extra_files.items()}
    for group in plan.remote:  # the stand-in first and alone: xarm_node connects to it
        files = [params_file, *(extra_files[name] for name in group if name in extra_files)]
        children.append(_Child.start(group, files, workdir, namespace))
        if group == [plan.standin]:
            children[-1].wait_ready()
    for child in children:
        child.wait_ready()


def _start_nodes(plan: _RunPlan, nodes: dict[str, Any], context: Any) -> Any:
    """Construct this process's nodes in ``context`` (the rclpy context, initialised): the local platform
    nodes, the recorder, live_view and the experiment node, each put into ``nodes`` as it is built (so
    that a failure still closes those built); returns the experiment node."""
    namespace, sim_values, sections = plan.namespace, plan.sim_values, plan.sections
    where = {"namespace": namespace} if namespace else {}
    from sim2real.nodes.experiment import ExperimentNode
    from sim2real.nodes.live_view import LiveViewNode
    from sim2real.nodes.recorder import RecorderNode
    from sim2real.nodes.streams import StreamHub

    def overrides(name: str) -> list[Any]:
        return _parameters({**sim_values, **sections.get(name, {})})

    for name in plan.local:
        nodes[name] = _local_factory(name)(parameter_overrides=overrides(name), context=context, **where)
    # The recorder, live_view and the experiment read the same streams: one subscription each, for all three.
    streams = nodes["stream_hub"] = StreamHub(context=context, **where)
    nodes["recorder"] = RecorderNode(streams=streams, parameter_overrides=_parameters(
        {"out_dir": str(plan.out), **sim_values}), context=context, **where)
    nodes["live_view"] = LiveViewNode(streams=streams, parameter_overrides=_parameters(
        {"platforms": list(platforms_of(plan.mode)), "foxglove": plan.live or "", **sim_values}), context=context,
        **where)
    config = plan.config
    experiment_values: dict[str, Any] = {
        "mode": plan.mode, "mirror": plan.mirror, "engine": plan.engine,
        "distances": [float(d) for d in plan.distances],
        "start_tolerance": float(config.start_tolerance), **sim_values,
        # The engine was compiled before the graph started (the CLI's first step): a graph that is not
        # up in 2 minutes is stuck, not compiling.
        "startup_timeout": 120.0,
        **{f"push.{f.name}": float(getattr(config.push, f.name)) for f in fields(PushConfig)},
        # each trial's own push, as the file's trials section gives it to the launched node
        **{f"trials.{key}": [float(getattr(p, key)) for p in config.trial_pushes]
           for key in TRIAL_PUSH_KEYS if config.trial_pushes}}
    if plan.replay_trial:
        experiment_values["replay_trial"] = str(plan.replay_trial)
    experiment = ExperimentNode(progress=plan.progress, streams=streams,
                                parameter_overrides=_parameters(experiment_values),
                                context=context, **where)
    nodes["experiment"] = experiment
    return experiment


def _raise_if_failed(status: int, experiment: Any, watcher: _ChildWatcher, timeout: float | None) -> None:
    """Raise for a run that did not finish cleanly: by the spin's ``status`` (130: Ctrl-C, 124: timeout),
    the experiment node's error (a hardware fault first) or a child that died (``watcher``).

    Raises
    ------
    KeyboardInterrupt
        After Ctrl-C.
    HardwareFaultError
        The real arm's driver reported a fault.
    RunFailedError
        A child process died, the timeout passed, or a trial failed otherwise.
    """
    if status == 130:
        raise KeyboardInterrupt
    if experiment.error and experiment.hardware_fault:
        raise HardwareFaultError(experiment.error)
    if watcher.failure:
        raise RunFailedError(watcher.failure)
    if status == 124:
        raise RunFailedError(f"experiment did not finish within {timeout:g} s")
    if experiment.error:
        raise RunFailedError(experiment.error)


def _placement(mode: str, real_route: Route, box_pose: str = "mocap") -> tuple[list[str], list[list[str]]]:
    """Platform nodes of ``mode`` in this process, and the node groups of the child processes.

    A real platform (the route's node) gets a process of its own (its control loop then shares the
    GIL only with the SDK's threads); so does the sim platform when it mirrors one, the stand-in
    (the route's), and the camera's tag detector (its image work off the control loop's GIL).
    """
    platforms = platforms_of(mode)
    real = [real_route.node] if "real" in platforms else []  # its read loop runs the real PD law
    if real and mode != "standin" and box_pose == "mocap":  # the stand-in publishes real/box_pose itself
        real.append("mocap_bridge")
    sim = ["sim_node", "sim_pd_controller"] if "sim" in platforms else []
    if not real:
        return sim, []
    remote = [[real_route.standin]] if mode == "standin" else []
    camera = [["tag_detector"]] if box_pose == "camera" else []
    return [], [*remote, real, *camera, *([sim] if sim else [])]


def _check_box_pose(box_pose: str, mode: str, real_route: Route, sections: dict[str, dict[str, Any]]) -> str:
    """Refuse a box-pose source the run cannot have; tell a stand-in seen by a camera to render images.
    Returns ``box_pose``."""
    if box_pose not in ("mocap", "camera"):
        raise InputError(f"box poses come from mocap or camera, not {box_pose!r}")
    if box_pose == "camera":
        if "real" not in platforms_of(mode):
            raise InputError("camera box poses need a real platform (mode real, mirror or standin)")
        if mode == "standin" and real_route.standin != "standin_world":
            raise InputError("camera box poses in standin mode need the SDK route (--via sdk)")
        if mode == "standin":
            sections[real_route.standin]["box_pose"] = "camera"
    return box_pose


def _camera_file(plan: _RunPlan, workdir: Path) -> Path:
    """The tag detector's params file: the user's, the stand-in camera's own set-up, or config/camera.yaml."""
    if plan.camera_file:
        return Path(plan.camera_file)
    if plan.mode != "standin":
        return config_file("camera.yaml")
    from sim2real.hardware.standin import load_standin
    from sim2real.vision.setup import dump_camera_setup

    path = workdir / "standin_camera.yaml"
    path.write_text(dump_camera_setup(load_standin(plan.world_file or None).camera.setup()), encoding="utf-8")
    return path


def _local_factory(name: str) -> Callable[..., Any]:
    from sim2real.nodes.group import node_factory

    return node_factory(name)


def free_port(host: str) -> int:
    """A TCP port on ``host`` that is free now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def write_params_file(path: Path, sections: dict[str, dict[str, Any]]) -> Path:
    """Write a ROS 2 params file: ``{node: {ros__parameters: {...}}}``, dotted names nested.

    Parameters
    ----------
    path : Path
        File to write.
    sections : dict
        Node name (or ``/**``) → ``{parameter name: value}``; names with dots become nested maps.
    """
    document = {node: {"ros__parameters": nest_dotted(values)} for node, values in sections.items()}
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def _namespaced(path: Path, namespace: str, out: Path) -> Path:
    """A copy of params file ``path`` at ``out`` whose bare node-name keys (``mocap_bridge:``, which
    match a node outside any namespace only) name the node in ``namespace``; ``/**`` keys are kept."""
    document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    keyed = {(key if str(key).startswith("/") else f"/{namespace}/{key}"): value for key, value in document.items()}
    out.write_text(yaml.safe_dump(keyed, sort_keys=False), encoding="utf-8")
    return out


def _start_joints(params: ParameterSet, push: PushConfig) -> Any:
    from sim2real.model import load_arm
    from sim2real.trials.experiment import start_joints

    return start_joints(load_arm(params), push, float(params["contact.table_height"]))

"""Shared pieces of the rclpy nodes: environment, QoS, parameters, message conversion, main().

Topic contract (DESIGN.md): ``<ns>/joint_states`` and ``<ns>/joint_command``
(sensor_msgs/JointState, joints ``joint1``..``joint6``; effort always filled, zeros if
unknown), ``<ns>/box_pose`` and ``<ns>/pusher_pose`` (geometry_msgs/PoseStamped, frame
``link_base``), ``reference/joint_trajectory`` (trajectory_msgs/JointTrajectory). Internal
coordination topics of the experiment are listed in :mod:`sim2real.nodes`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import textwrap
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import PoseStamped
from numpy.typing import NDArray
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg
from trajectory_msgs.msg import JointTrajectoryPoint

from sim2real.control.reference import JointTrajectory
from sim2real.errors import Sim2RealError
from sim2real.params import ParameterSet, names, spec
from sim2real.paths import read_text_file
from sim2real.process_deadline import end_after
from sim2real.trials.schema import BASE_FRAME

FloatArray = NDArray[np.float64]
JOINT_NAMES = ("joint1", "joint2", "joint3", "joint4", "joint5", "joint6")
NS_PER_S = 1_000_000_000

#: Data streams: reliable, deep enough that a slow subscriber loses nothing in a trial.
STREAM_QOS = QoSProfile(depth=500, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.VOLATILE)
#: Events and the reference: reliable and latched for late joiners.
LATCHED_QOS = QoSProfile(depth=50, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)

# Coordination topics of the experiment (std_msgs/String with JSON, PoseStamped).
TRIAL_EVENT_TOPIC = "experiment/trial_event"
TRIAL_WRITTEN_TOPIC = "recorder/trial_written"
BOX_REQUEST_TOPIC = "experiment/box_request"
SIM_RESET_TOPIC = "sim/reset"
#: Each data-consuming node's matched publishers, twice a second (std_msgs/String, JSON
#: ``{"role": ..., "matched": {topic: count}}``): the experiment starts a trial only when the
#: whole graph is connected (discovery between processes can take seconds).
GRAPH_STATUS_TOPIC = "experiment/graph_status"
#: The real platform's latched driver fault (std_msgs/String, the fault message; latched QoS).
REAL_FAULT_TOPIC = "real/fault"
REFERENCE_TOPIC = "reference/joint_trajectory"
#: Per simulating platform (``real`` for the stand-in, ``sim``): the contact-solve tally of the current
#: trial (std_msgs/String, JSON of ``SolveSummary.as_dict()``), sent on reset, on every recovered or
#: degraded step and every :data:`SOLVER_STATUS_EVERY` steps; the recorder puts the last one in trial.json.
SOLVER_STATUS_TOPIC = "{ns}/solver_status"
#: Per simulating platform: one recovered or degraded step (std_msgs/String, JSON of ``HardStep.as_dict()``),
#: written by the recorder into ``<trial>/hard_steps/``.
HARD_STEP_TOPIC = "{ns}/hard_step"
SOLVER_STATUS_EVERY = 25


def ensure_localhost(env: dict[str, str] | None = None, warn: bool = True) -> None:
    """Keep DDS discovery on loopback: set ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` if unset.

    ``ROS_LOCALHOST_ONLY`` is ignored by this ROS release, so it does not count.
    """
    env = os.environ if env is None else env
    if not env.get("ROS_AUTOMATIC_DISCOVERY_RANGE"):
        env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
        if warn:
            warnings.warn("ROS_AUTOMATIC_DISCOVERY_RANGE was unset; using LOCALHOST (DDS stays on loopback)",
                          stacklevel=2)


def ns_of(stamp: Time) -> int:
    """builtin_interfaces/Time → integer ns."""
    return int(stamp.sec) * NS_PER_S + int(stamp.nanosec)


def time_msg(t_ns: int) -> Time:
    """Integer ns → builtin_interfaces/Time."""
    sec, nanosec = divmod(int(t_ns), NS_PER_S)
    return Time(sec=sec, nanosec=nanosec)


def joint_state_msg(stamp_ns: int, position: Any, velocity: Any, effort: Any | None = None) -> JointState:
    """A JointState of joint1..joint6 (rad, rad/s, N·m); effort zeros when unknown (never empty)."""
    msg = JointState()
    msg.header.stamp = time_msg(stamp_ns)
    msg.name = list(JOINT_NAMES)
    msg.position = [float(x) for x in np.asarray(position, dtype=float).reshape(6)]
    msg.velocity = [float(x) for x in np.asarray(velocity, dtype=float).reshape(6)]
    msg.effort = [float(x) for x in (np.zeros(6) if effort is None else np.asarray(effort, float).reshape(6))]
    return msg


def joint_arrays(msg: JointState) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Position, velocity, effort (6,) of a JointState in joint1..joint6 order (missing → zeros)."""
    names_ = list(msg.name)
    order = [names_.index(j) for j in JOINT_NAMES] if names_ and names_ != list(JOINT_NAMES) else list(range(6))
    out = []
    for field in (msg.position, msg.velocity, msg.effort):
        values = np.asarray(field, dtype=float)
        out.append(values[order] if len(values) >= 6 else np.zeros(6))
    return out[0], out[1], out[2]


def pose_msg(stamp_ns: int, position: Any, quaternion_wxyz: Any, frame_id: str = BASE_FRAME) -> PoseStamped:
    """A PoseStamped: position (3,) m and orientation (w, x, y, z) in ``frame_id``."""
    msg = PoseStamped()
    msg.header.stamp = time_msg(stamp_ns)
    msg.header.frame_id = frame_id
    p, q = np.asarray(position, float).reshape(3), np.asarray(quaternion_wxyz, float).reshape(4)
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v) for v in p)
    msg.pose.orientation.w, msg.pose.orientation.x, msg.pose.orientation.y, msg.pose.orientation.z = (
        float(v) for v in q)
    return msg


def pose_arrays(msg: PoseStamped) -> tuple[FloatArray, FloatArray]:
    """Position (3,) and quaternion (w, x, y, z) of a PoseStamped."""
    p, o = msg.pose.position, msg.pose.orientation
    return np.array([p.x, p.y, p.z]), np.array([o.w, o.x, o.y, o.z])


def trajectory_msg(start_ns: int, trajectory: JointTrajectory) -> JointTrajectoryMsg:
    """The whole reference as one JointTrajectory stamped at its first point (``start_ns``)."""
    msg = JointTrajectoryMsg()
    msg.header.stamp = time_msg(start_ns)
    msg.header.frame_id = BASE_FRAME
    msg.joint_names = list(JOINT_NAMES)
    t0 = float(trajectory.t[0])
    for t, q, v in zip(trajectory.t, trajectory.position, trajectory.velocity, strict=True):
        point = JointTrajectoryPoint()
        point.positions = [float(x) for x in q]
        point.velocities = [float(x) for x in v]
        offset = round((float(t) - t0) * NS_PER_S)
        point.time_from_start = Duration(sec=offset // NS_PER_S, nanosec=offset % NS_PER_S)
        msg.points.append(point)
    return msg


def trajectory_from_msg(msg: JointTrajectoryMsg) -> tuple[int, JointTrajectory]:
    """``(start_ns, JointTrajectory)`` of a reference message; ``t`` in s from its first point."""
    names_ = list(msg.joint_names)
    order = [names_.index(j) for j in JOINT_NAMES]
    t = np.array([(int(p.time_from_start.sec) * NS_PER_S + int(p.time_from_start.nanosec)) / NS_PER_S
                  for p in msg.points])
    position = np.array([np.asarray(p.positions, float)[order] for p in msg.points]).reshape(-1, 6)
    velocity = np.array([np.asarray(p.velocities, float)[order] if len(p.velocities) else np.zeros(6)
                         for p in msg.points]).reshape(-1, 6)
    return ns_of(msg.header.stamp), JointTrajectory(t=t, position=position, velocity=velocity,
                                                   pusher=np.full((len(t), 3), np.nan))


def declare_sim_params(node: Node, base: ParameterSet | None = None) -> ParameterSet:
    """Declare every simulator parameter (dotted registry names) and return their values.

    Defaults are ``base`` (default: the registry's nominal values); a params file given with
    ``--params-file`` (node key ``/**`` or the node's name) overrides them.
    """
    base = base or ParameterSet.nominal()
    values: dict[str, float | int] = {}
    for name in names():
        kind = spec(name).kind
        default = int(base[name]) if kind is int else float(base[name])
        values[name] = node.declare_parameter(name, default).value
    return base.replace(values)


def params_overrides(params: ParameterSet) -> dict[str, float | int]:
    """``{name: value}`` for ``Node(parameter_overrides=...)`` in the one-process runner."""
    return {name: (int(params[name]) if spec(name).kind is int else float(params[name])) for name in names()}


def report_matches(node: Node, role: str, period: float = 0.5) -> None:
    """Publish ``node``'s matched publisher count per subscribed topic on
    :data:`GRAPH_STATUS_TOPIC` every ``period`` s, as ``role`` (e.g. ``recorder``, ``sim``).

    Topic names are reported as seen from the node's namespace (``/ns/sim/reset`` in namespace
    ``/ns`` is ``/sim/reset``), so that a graph started in a namespace reads as the same graph."""
    import json

    from std_msgs.msg import String

    publisher = node.create_publisher(String, GRAPH_STATUS_TOPIC, 10)
    namespace = node.get_namespace().rstrip("/")

    def relative(topic: str) -> str:
        return topic[len(namespace):] if namespace and topic.startswith(namespace + "/") else topic

    def report() -> None:
        matched = {relative(sub.topic_name): sub.get_publisher_count() for sub in node.subscriptions}
        publisher.publish(String(data=json.dumps({"role": role, "matched": matched})))
    node.create_timer(period, report)


def now_ns(node: Node) -> int:
    """The node clock now, ns."""
    return int(node.get_clock().now().nanoseconds)


#: The end of every node script's ``--help``: how its parameters are given.
PARAMETERS_HELP = """\
Giving parameters (ROS 2 arguments, after --ros-args):
  --params-file FILE   a ROS 2 params YAML; its key is the node name ({name}:) or /** (every
                       node), then ros__parameters:, then the values; nested maps give dotted
                       names (pd: {{kp: 40.0}} is pd.kp). A node-name key beats -p.
  -p NAME:=VALUE       one parameter, e.g. -p {example}
  -r __node:=NAME      run under another node name (the params file key changes with it)
Types are strict: a float parameter needs 50.0, not 50.
{sim_params}
Example:
  {name} --ros-args --params-file config/params.yaml -p {example}

Exit status: 0 when done or stopped with Ctrl-C (SIGINT) or SIGTERM; 1 when the node's work
failed; 2 for a bad argument or configuration (one line on stderr).
"""
SIM_PARAMETERS_HELP = (
    "The simulator parameters (dotted names such as box.mass, pd.kp, sim.dt; SI units) are read\n"
    "from the same params file: `sim2real params` lists each one with its unit, bounds and meaning,\n"
    "and config/params.yaml holds the nominal values (`sim2real fit` writes files of that form).\n")
#: Errors that mean the node cannot start as configured (bad parameter, missing file, no
#: controller): one line on stderr and exit status 2, not a traceback.
CONFIG_ERRORS: tuple[type[BaseException], ...] = (Sim2RealError, ValueError, OSError)


class _OneLineParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line plus exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def split_ros_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(own, ros)``: a node script's own arguments and its ROS 2 arguments (``argv[0]`` excluded).

    ROS arguments run from each ``--ros-args`` to the next ``--`` or the end, as rcl reads them.
    """
    own: list[str] = []
    ros: list[str] = []
    inside = False
    for arg in list(argv)[1:]:
        if arg == "--ros-args":
            inside = True
        elif inside and arg == "--":
            inside = False
        elif inside:
            ros.append(arg)
        else:
            own.append(arg)
    return own, ros


def _one_line(text: str) -> str:
    """``text`` on one line, without rcl's source locations (``, at /src/rcl/arguments.c:356``)."""
    text = re.sub(r",? at /\S+\.(?:c|cpp|h|hpp):\d+", "", str(text))
    return " ".join(text.split())


def check_ros_args(argv: Sequence[str]) -> None:
    """Refuse unusable ROS 2 arguments before ROS starts, in one line.

    Every ``--params-file`` must be a readable UTF-8 file (rcl would otherwise fail with a
    multi-line parser error), and rcl must accept the arguments.

    Raises
    ------
    Sim2RealError
        A params file that is missing or unreadable, or arguments rcl rejects.
    """
    from rclpy.utilities import remove_ros_args

    _, ros = split_ros_args(argv)
    for index, flag in enumerate(ros):
        if flag == "--params-file":
            if index + 1 == len(ros):
                raise Sim2RealError("--params-file needs a file name")
            read_text_file(ros[index + 1], "params file")
    try:
        remove_ros_args(list(argv))
    except RuntimeError as err:  # RCLError, UnknownROSArgsError
        raise Sim2RealError(f"bad ROS arguments: {_one_line(str(err))}") from None


def node_usage(name: str, doc: str, example: str, sim_params: bool) -> argparse.ArgumentParser:
    """The argument parser of node script ``name``: ``--help`` shows ``doc`` (the node module's
    docstring) and how to give parameters; it accepts no other argument of its own."""
    description = textwrap.dedent(doc or "").strip()
    description = re.sub(r":\w+:`~(?:[\w.]+\.)?(\w+)`", r"\1", description)  # Sphinx roles, as rendered
    description = re.sub(r":\w+:`([\w.]+)`", r"\1", description)
    description = re.sub(r"::$", ":", description.replace("``", "`"), flags=re.MULTILINE)
    epilog = PARAMETERS_HELP.format(name=name, example=example or "name:=value",
                                    sim_params=SIM_PARAMETERS_HELP if sim_params else "")
    return _OneLineParser(prog=name, description=description, epilog=epilog,
                          usage="%(prog)s [-h] [--ros-args [--params-file FILE] [-p NAME:=VALUE] ...]",
                          formatter_class=argparse.RawDescriptionHelpFormatter)


class LeanNode(Node):
    """A node whose publishers and subscriptions carry no QoS event handlers unless given.

    rclpy gives every publisher and subscription a handler for its QoS events (the default one logs
    an incompatible QoS), and a single-threaded executor adds each handler to its wait set, asks it
    whether it is ready and enters its context on every wake, i.e. for every message. In a node with
    16 subscriptions and 3 publishers (the recorder has about that many) that doubled the CPU per
    message: 0.80-0.86 ms with the handlers, 0.41-0.60 ms without (a 1 kHz JointState stream,
    2026-11-29, a busy machine). The nodes of a run among themselves (about 1200 messages/s in the
    run's own process) go without: a stream whose QoS does not match still shows, since the experiment
    waits for every stream it needs to be matched and names those that are not
    (:func:`~sim2real.trials.experiment.missing_matches`). The nodes that meet other labs' stacks
    (``ros2_control_arm``, ``mocap_bridge``) keep rclpy's handlers and their warnings.
    """

    def create_subscription(self, *args: Any, **kwargs: Any) -> Any:
        from rclpy.event_handler import SubscriptionEventCallbacks

        kwargs.setdefault("event_callbacks", SubscriptionEventCallbacks(use_default_callbacks=False))
        return super().create_subscription(*args, **kwargs)

    def create_publisher(self, *args: Any, **kwargs: Any) -> Any:
        from rclpy.event_handler import PublisherEventCallbacks

        kwargs.setdefault("event_callbacks", PublisherEventCallbacks(use_default_callbacks=False))
        return super().create_publisher(*args, **kwargs)


def run_node(factory: Callable[[], Node], args: Sequence[str] | None = None, *, name: str, doc: str | None,
             example: str = "", sim_params: bool = False) -> int:
    """Console-script main of one node: arguments, start, spin, and a clean stop.

    * ``--help`` prints ``doc`` and how to give parameters, and exits 0 without starting ROS;
      any argument of the script's own (outside ``--ros-args``) is a one-line error, status 2;
    * a missing or unreadable params file, arguments rcl rejects, or a node that cannot be built
      as configured (:data:`CONFIG_ERRORS`, rclpy's parameter errors): one line
      ``<name>: error: ...`` on stderr, status 2;
    * Ctrl-C (SIGINT) or SIGTERM: the node is closed (``close()``, e.g. the arm stopped, the open
      trial closed) while ROS is still up, then ROS shuts down; status 0, no traceback (a node
      stopped before its ``finished`` event and declaring ``stopped_status``: that status);
    * otherwise the node spins until its ``finished`` event (if it has one) is set; the status is
      then its ``exit_status`` (0 when absent).

    Parameters
    ----------
    factory : callable
        Builds the node (after ``rclpy.init``).
    args : sequence of str, optional
        The whole command line, program name first (default ``sys.argv``).
    name : str
        The script's name (``--help``, error messages).
    doc : str
        What the node does and its parameters with units (the node module's docstring).
    example : str
        A ``name:=value`` for the help's example.
    sim_params : bool
        The node reads the simulator parameters (the help says where they are listed).
    """
    argv = list(sys.argv if args is None else args)
    own, _ = split_ros_args(argv)
    node_usage(name, doc or "", example, sim_params).parse_args(own)  # --help: exit 0; unknown: exit 2
    try:
        check_ros_args(argv)
    except Sim2RealError as err:
        return config_error(name, err)
    return run_nodes([factory], argv, name)


def config_error(name: str, err: BaseException) -> int:
    """Print ``<name>: error: <err>`` (one line) on stderr; return exit status 2."""
    print(f"{name}: error: {_one_line(str(err)) or type(err).__name__}", file=sys.stderr, flush=True)
    return 2


#: Closing the nodes (their threads, the arm's stop, the recorder's last trial) and the interpreter's
#: shutdown after that take well under a second; a process still alive this long after its stop
#: (s) is stuck and ends itself (stacks on stderr): a killed parent must not leave a node running.
CLOSE_DEADLINE_S = 10.0
#: Exit status of a process ended by :data:`CLOSE_DEADLINE_S`.
CLOSE_DEADLINE_STATUS = 124


class _CloseDeadline:
    """:data:`CLOSE_DEADLINE_S` for one node process, started once (:meth:`arm`) at the earliest sign
    of its stop: the spinning ended (a signal, the work finished) or the start failed."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._armed = False

    def arm(self) -> None:
        if self._armed:
            return
        self._armed = True
        end_after(CLOSE_DEADLINE_S, CLOSE_DEADLINE_STATUS, f"{self._name}: the nodes are still closing "
                  f"{CLOSE_DEADLINE_S:g} s after the stop; ending the process now", name="close-deadline")


def _stop_signals_raise() -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt in the main thread (also when SIGINT was
    inherited as ignored, as rclpy's own handler did): the nodes are then closed in order."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.default_int_handler)


def _stop_signals_exit(name: str) -> None:
    """While closing: a second SIGINT or SIGTERM ends the process at once (one line, 128 + signal)."""
    def exit_now(signum: int, frame: object) -> None:
        os.write(2, f"{name}: stopped again while closing; exiting now\n".encode())
        os._exit(128 + signum)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, exit_now)
        signal.signal(signal.SIGTERM, exit_now)


def run_nodes(factories: Sequence[Callable[[], Node]], argv: Sequence[str], name: str,
              ready: Callable[[], None] | None = None) -> int:
    """Init ROS (rclpy's signal handlers off), build the nodes, spin them, close them on a stop.

    rclpy's own SIGINT handler would shut the context down at once, under threads that still
    publish (the experiment's sequence, the driver's read loop): they then failed with
    ``publisher's context is invalid``. Here a stop signal raises KeyboardInterrupt in the main
    thread, the executors stop, each node's ``close()`` ends its threads while ROS is still up,
    and only then are the nodes destroyed and ROS shut down. It is the body of a node process:
    from the stop on (a signal, the parent's death, the work finished) the process ends within
    :data:`CLOSE_DEADLINE_S`, whatever hangs in it (then with status :data:`CLOSE_DEADLINE_STATUS`
    and every thread's stack on stderr).

    Parameters
    ----------
    factories : sequence of callables
        Each builds one node.
    argv : sequence of str
        Command line for ``rclpy.init`` (program name first).
    name : str
        For error messages.
    ready : callable, optional
        Called once every node is built.

    Returns
    -------
    int
        0 when stopped by a signal or finished; a single node's ``exit_status`` when it set
        ``finished``; 2 when a node could not start as configured (one line on stderr).
    """
    import rclpy
    from rclpy.exceptions import ParameterException
    from rclpy.signals import SignalHandlerOptions

    deadline = _CloseDeadline(name)
    defaulted_range = not os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE")
    ensure_localhost(warn=False)  # said once the nodes run: an error stays one line
    _stop_signals_raise()
    nodes: list[Node] = []
    status = 0
    try:
        try:
            rclpy.init(args=list(argv), signal_handler_options=SignalHandlerOptions.NO)
            for factory in factories:
                nodes.append(factory())
        except (*CONFIG_ERRORS, ParameterException, RuntimeError) as err:
            return config_error(name, err)
        if defaulted_range:
            nodes[0].get_logger().info("ROS_AUTOMATIC_DISCOVERY_RANGE was unset; using LOCALHOST "
                                       "(DDS stays on loopback)")
        freeze_heap()
        if ready is not None:
            ready()
        finished = getattr(nodes[0], "finished", None) if len(nodes) == 1 else None
        status = spin_until_finished(nodes, finished, on_stop=deadline.arm)
        status = _stopped_status(nodes, finished) if status == 130 else status
        if status == 0 and finished is not None and finished.is_set():
            status = int(getattr(nodes[0], "exit_status", 0))
    except KeyboardInterrupt:
        status = _stopped_status(nodes, getattr(nodes[0], "finished", None) if len(nodes) == 1 else None)
    finally:
        _stop_signals_exit(name)
        deadline.arm()
        close_nodes(nodes)
        rclpy.try_shutdown()
    return status


def _stopped_status(nodes: Sequence[Node], finished: threading.Event | None) -> int:
    """Status of a stop by signal: 0 (a stop is not a failure), except for a node with work to finish
    (``finished``) that was stopped before it finished and declares ``stopped_status`` (the
    experiment: its launch must not report success for trials that were never recorded)."""
    if finished is None or finished.is_set() or len(nodes) != 1:
        return 0
    return int(getattr(nodes[0], "stopped_status", 0))


def close_nodes(nodes: Sequence[Node]) -> None:
    """Call each node's ``close()`` (if it has one: stop hardware, close bags) and destroy it,
    last started first."""
    for node in reversed(list(nodes)):
        close = getattr(node, "close", None)
        if close is not None:
            close()
        node.destroy_node()


def freeze_heap() -> None:
    """Collect once and move every object alive now out of the garbage collector's reach.

    Call it once the nodes are built. A full (generation 2) collection scans every tracked object
    and holds the GIL meanwhile: with rclpy, the SDK, NumPy and the URDF model loaded it took
    50-80 ms in ``xarm_node`` and ``standin_world`` (measured with ``gc.callbacks``), during which
    the real arm's control loop sent nothing and the driver's watchdog stopped the arm. Frozen
    objects (the long-lived modules, nodes and models) are never scanned again, so a collection
    only walks what the loop allocated since.
    """
    import gc

    gc.collect()
    gc.freeze()


def spin_until_finished(nodes: Sequence[Node], finished: threading.Event | None, timeout: float | None = None,
                        context: Any = None, on_stop: Callable[[], None] | None = None) -> int:
    """Spin each of ``nodes`` on its own :class:`~rclpy.executors.SingleThreadedExecutor` in a
    background thread until ``finished`` is set, the context shuts down (SIGINT) or
    ``timeout`` s pass.

    One single-threaded executor per node, not one multi-threaded executor: rclpy's
    MultiThreadedExecutor costs several times more CPU per message (measured here: about
    0.8 ms against 0.16 ms per JointState) and falls behind at the experiment's ~1000
    messages/s; separate executors still let one node's blocking call (an SDK round trip, a
    physics step) run while another node's callbacks are served. rclpy's C++ ``EventsExecutor``
    (``rclpy.experimental``) would cost less per message, but in the pinned Kilted wheels, spun in a
    background thread, it delivered no message in 8 s and kept a core busy, and spun in the main thread
    its timer never ran and it did not stop on SIGTERM (2026-11-28), so it is not used. On a slow day
    the single-threaded executor took 0.45 ms of CPU per JointState at 600 messages/s, four fifths
    of it in the executor's Python (the transport, UDP on loopback or shared memory, made no
    difference).

    ``on_stop`` is called first when the spinning ends, for whatever reason (before the executors
    are shut down).

    Returns
    -------
    int
        0 when ``finished`` was set, 130 after a shutdown (Ctrl-C), 124 on timeout.
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

    executors = []
    threads = []
    stopping = threading.Event()

    def spin(executor: SingleThreadedExecutor) -> None:
        # A failing callback must not silently stop the node: log it and keep spinning.
        while rclpy.ok(context=context):
            try:
                executor.spin()
                return
            except ExternalShutdownException:
                return
            except Exception:
                if stopping.is_set() or not rclpy.ok(context=context):
                    # Shutting down: the executor's guard condition or an entity went away under
                    # a callback that was still running (rclpy raises InvalidHandle then).
                    return
                traceback.print_exc()

    for node in nodes:
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        executors.append(executor)
        thread = threading.Thread(target=spin, args=(executor,), name=f"spin-{node.get_name()}", daemon=True)
        thread.start()
        threads.append(thread)
    deadline = None if timeout is None else time.monotonic() + timeout
    status = 0
    try:
        while True:
            if finished is not None and finished.wait(0.05):
                break
            if finished is None:
                time.sleep(0.05)
            if not rclpy.ok(context=context):
                status = 130
                break
            if deadline is not None and time.monotonic() > deadline:
                status = 124
                break
    except KeyboardInterrupt:
        status = 130
    finally:
        if on_stop is not None:
            on_stop()
        stopping.set()
        for executor in executors:
            executor.shutdown(timeout_sec=2.0)
        for thread in threads:
            thread.join(timeout=2.0)
    return status


class SolveReporter:
    """Publishes a platform's :class:`~sim2real.physics.SolveLog` on :data:`SOLVER_STATUS_TOPIC` and
    :data:`HARD_STEP_TOPIC` (see there for when).

    Parameters
    ----------
    node : rclpy.node.Node
    ns : str
        Platform namespace (``real`` or ``sim``).
    """

    def __init__(self, node: Node, ns: str) -> None:
        self._status = node.create_publisher(String, SOLVER_STATUS_TOPIC.format(ns=ns), LATCHED_QOS)
        self._hard = node.create_publisher(String, HARD_STEP_TOPIC.format(ns=ns), STREAM_QOS)
        self._log: Any = None
        self._sent_hard = 0
        self._sent_steps = -1
        self._sent_flagged = -1

    def report(self, log: Any, force: bool = False) -> None:
        """Publish what changed in ``log`` (a new log object starts a new trial's count)."""
        if log is not self._log:
            self._log, self._sent_hard, force = log, 0, True
        summary = log.summary()
        flagged = summary.recovered + summary.degraded
        for hard in log.hard_steps[self._sent_hard:]:
            self._hard.publish(String(data=json.dumps(hard.as_dict())))
        self._sent_hard = len(log.hard_steps)
        if force or flagged != self._sent_flagged or summary.steps - self._sent_steps >= SOLVER_STATUS_EVERY:
            self._status.publish(String(data=json.dumps(summary.as_dict())))
            self._sent_steps, self._sent_flagged = summary.steps, flagged

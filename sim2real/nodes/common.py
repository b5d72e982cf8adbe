"""Shared pieces of the rclpy nodes: environment, QoS, topics, parameters, message conversion, the node base.

Topic contract (DESIGN.md): ``<ns>/joint_states`` and ``<ns>/joint_command``
(sensor_msgs/JointState, joints ``joint1``..``joint6``; effort always filled, zeros if
unknown), ``<ns>/box_pose`` and ``<ns>/pusher_pose`` (geometry_msgs/PoseStamped, frame
``link_base``), ``reference/joint_trajectory`` (trajectory_msgs/JointTrajectory). Internal
coordination topics of the experiment are listed in :mod:`sim2real.nodes`.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import MutableMapping
from typing import Any

import numpy as np
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import PoseStamped
from numpy.typing import NDArray
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg
from trajectory_msgs.msg import JointTrajectoryPoint

from sim2real.control.reference import JointTrajectory
from sim2real.params import ParameterSet, names, spec
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
#: The camera's tag detector, per image (std_msgs/String, JSON ``{"stamp_ns": int, "refused": str}``, the
#: refusal reason or "" when the image gave a pose): the recorder counts those stamped inside each trial.
CAMERA_RESULT_TOPIC = "real/camera/detections"
#: Per simulating platform: one recovered or degraded step (std_msgs/String, JSON of ``HardStep.as_dict()``),
#: written by the recorder into ``<trial>/hard_steps/``.
HARD_STEP_TOPIC = "{ns}/hard_step"
SOLVER_STATUS_EVERY = 25


def ensure_localhost(env: MutableMapping[str, str] | None = None, warn: bool = True) -> None:
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


def report_matches(node: Node, role: str, period: float = 0.5, also: Node | None = None) -> None:
    """Publish ``node``'s matched publisher count per subscribed topic on
    :data:`GRAPH_STATUS_TOPIC` every ``period`` s, as ``role`` (e.g. ``recorder``, ``sim``); with
    ``also`` (the :class:`~sim2real.nodes.streams.StreamHub` that subscribes for ``node``, in its
    namespace) that node's subscriptions count as ``node``'s.

    Topic names are reported as seen from the node's namespace (``/ns/sim/reset`` in namespace
    ``/ns`` is ``/sim/reset``), so that a graph started in a namespace reads as the same graph."""
    import json

    from std_msgs.msg import String

    publisher = node.create_publisher(String, GRAPH_STATUS_TOPIC, 10)
    namespace = node.get_namespace().rstrip("/")

    def relative(topic: str) -> str:
        return topic[len(namespace):] if namespace and topic.startswith(namespace + "/") else topic

    def report() -> None:
        subscriptions = [*node.subscriptions, *(also.subscriptions if also is not None else ())]
        matched = {relative(sub.topic_name): sub.get_publisher_count() for sub in subscriptions}
        publisher.publish(String(data=json.dumps({"role": role, "matched": matched})))
    node.create_timer(period, report)


def now_ns(node: Node) -> int:
    """The node clock now, ns."""
    return int(node.get_clock().now().nanoseconds)


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
        kwargs.setdefault("event_callbacks", SubscriptionEventCallbacks(use_default_callbacks=False))
        return super().create_subscription(*args, **kwargs)

    def create_publisher(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("event_callbacks", PublisherEventCallbacks(use_default_callbacks=False))
        return super().create_publisher(*args, **kwargs)


class SolveReporter:
    """Publishes a platform's :class:`~sim2real.sim.SolveLog` on :data:`SOLVER_STATUS_TOPIC` and
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

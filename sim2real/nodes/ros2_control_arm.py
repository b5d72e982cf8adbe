"""``ros2_control_arm``: the real platform through a lab's running ros2_control stack.

The second implementation of the real platform (the first is ``xarm_node``, the vendor SDK;
:mod:`sim2real.nodes.routes`): same topics, same PD law, same safety, but the arm belongs to the
lab's controller_manager. With xarm_ros2 that is ``UFRobotSystemHardware`` with
``velocity_control: true`` (joint velocity mode; every update cycle it sends the velocity command
interfaces to the controller with a 1 s auto-stop) and a forward velocity controller
(``velocity_controllers/JointGroupVelocityController``, a forward_command_controller: it writes
the last ``std_msgs/Float64MultiArray`` received on ``/<controller>/commands`` to the velocity
interfaces, one value per joint in its ``joints`` order, and holds it until the next one).

Every ``1 / rate_hz`` s the newest ``/joint_states`` message that names all six joints
(``sensor_msgs/JointState``, reordered by name: a lab's broadcaster may list them in any order and
with other joints) is taken as the arm's state, once: a tick with no newer state than the last one
sends nothing (a command from a state already acted on would push the arm on, open loop, while the
state stream is late; the watchdog then zeroes the command). The state is published on
``real/joint_states`` (stamped with the tick time, ROS clock) with the pusher position on
``real/pusher_pose``, and the shared PD law (:class:`sim2real.control.ReferenceTracker`, the gains
of ``pd_controller``) gives the joint velocity command, published on ``/<controller>/commands`` in
the controller's joint order and on ``real/joint_command`` (joint1..joint6, the tick's stamp) for
the recorder and for ``--mirror commands``: the mirrored sim receives the identical stream. No
reference, no command.

Safety (documented for labs in docs/ros2_control.md):

* **watchdog**: a separate thread publishes zero velocity ``watchdog_timeout`` after the last
  non-zero command when the loop sent no fresh one (the loop stalled);
* **faults** latch: ``/joint_states`` missing for ``connect_wait`` s at start or older than
  ``state_timeout`` (receive time) later, a state that is not finite or outside the joint limits,
  the controller not subscribing (or no longer subscribing) to its command topic, a failure of
  the loop. The node then logs the fault once, publishes it on ``real/fault`` (latched, so the
  experiment ends the trial as incomplete) and stops the arm through the stack: zero commands at
  ``rate_hz`` for ``stop_duration`` s, then silence; it never resumes by itself;
* **Ctrl-C / SIGTERM** (``close()``): the same zero stream, then silence;
* the **second line** is the lab's stack: the forward controller holds the last command, which is
  zero after any stop above; if the controller_manager's update loop itself stops writing, the
  hardware interface's 1 s auto-stop (``vc_set_joint_velocity`` duration) halts the arm.

Commands are clamped to ``max_velocity`` (xarm_ros2's velocity command interfaces accept ±3.14 rad/s).
Nothing here opens a socket: the node speaks DDS only, to the graph it was started in.

Parameters (type, default: meaning, unit)::

    controller          string, xarm6_velo_controller: the forward velocity controller's name
    joints              string[], [joint1 ... joint6]: the controller's joints in its command
                        order (names as in /joint_states)
    prefix              string, "": joint-name prefix of the lab's description (xarm_ros2's
                        ``prefix``); a name minus the prefix must be joint1 ... joint6
    command_topic       string, "": default /<controller>/commands
    joint_states_topic  string, /joint_states
    rate_hz             double, 100.0: read -> PD -> command loop rate, Hz
    state_timeout       double, 0.1: /joint_states older than this is a fault, s
    connect_wait        double, 10.0: wait for the first /joint_states and the controller, s
    watchdog_timeout    double, 0.045: zero velocity without a fresh command after, s
    stop_duration       double, 0.5: zero commands at rate_hz after a fault or a stop, s
    max_velocity        double, 3.14: command clamp, rad/s
    pd.kp, pd.kd, sim.dt, arm.* ...  the simulator parameters (the PD gains and limits,
                        shared with pd_controller)
"""

from __future__ import annotations

import threading
import time

import numpy as np
from geometry_msgs.msg import PoseStamped
from rclpy._rclpy_pybind11 import RCLError
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg

from sim2real.control import CommandLimits, PDGains, ReferenceTracker, Workspace
from sim2real.fixed_rate import FixedRate
from sim2real.hardware.limits import XARM6_JOINT_LIMITS
from sim2real.model import load_arm
from sim2real.nodes.common import (
    JOINT_NAMES,
    LATCHED_QOS,
    REAL_FAULT_TOPIC,
    REFERENCE_TOPIC,
    STREAM_QOS,
    FloatArray,
    declare_sim_params,
    joint_state_msg,
    now_ns,
    pose_msg,
    report_matches,
    trajectory_from_msg,
)
from sim2real.nodes.process import run_node
from sim2real.nodes.routes import DEFAULT_CONTROLLER, XARM6_JOINTS, parse_joints

#: QoS of the controller's command topic: what forward_command_controller subscribes with
#: (rclcpp::SystemDefaultsQoS: reliable, keep last 10).
COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
#: QoS of /joint_states: joint_state_broadcaster publishes reliable; a best-effort subscription
#: matches any publisher.
JOINT_STATES_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
#: Tolerance on the joint limits of a measured state (rad): beyond it the state is a fault.
LIMIT_TOLERANCE = 0.02


def command_order(joints: tuple[str, ...], prefix: str) -> np.ndarray:
    """Index (6,) of each controller joint in joint1..joint6 order.

    ``command[i] = velocity[order[i]]`` gives the controller's command from a velocity in
    joint1..joint6 order.

    Raises
    ------
    ValueError
        A name that is not ``prefix`` + ``joint1`` .. ``joint6``.
    """
    bare = [name[len(prefix):] if prefix and name.startswith(prefix) else name for name in joints]
    if sorted(bare) != sorted(JOINT_NAMES) or any(prefix and not name.startswith(prefix) for name in joints):
        raise ValueError(f"joints must be {prefix or ''}joint1 .. {prefix or ''}joint6 in the controller's order, "
                         f"got {list(joints)}")
    return np.array([JOINT_NAMES.index(name) for name in bare])


class Ros2ControlArmNode(Node):
    """The real platform over ros2_control (see the module docstring).

    Attributes
    ----------
    commands_sent : int
        PD commands published on the controller topic.
    published : int
        Every message published on the controller topic (PD commands, watchdog and stop zeros).
    stop_index : int or None
        :attr:`published` when the stop began (the 0-based index of its first zero among them).
    fault : str or None
        The latched fault's message.
    stopped : threading.Event
        Set once the zero stream after a fault or a stop has ended (silence from then on).
    """

    def __init__(self, name: str = "ros2_control_arm", **kwargs: object) -> None:
        super().__init__(name, **kwargs)  # type: ignore[arg-type]
        self.controller = str(self.declare_parameter("controller", DEFAULT_CONTROLLER).value)
        joints = parse_joints(list(self.declare_parameter("joints", list(XARM6_JOINTS)).value))
        prefix = str(self.declare_parameter("prefix", "").value)
        self.order = command_order(joints, prefix)
        self.state_names = [prefix + j for j in JOINT_NAMES]  # joint1..joint6 as the lab names them
        topic = str(self.declare_parameter("command_topic", "").value) or f"/{self.controller}/commands"
        states_topic = str(self.declare_parameter("joint_states_topic", "/joint_states").value)
        self.rate = float(self.declare_parameter("rate_hz", 100.0).value)
        self.state_timeout = float(self.declare_parameter("state_timeout", 0.1).value)
        self.connect_wait = float(self.declare_parameter("connect_wait", 10.0).value)
        self.watchdog_timeout = float(self.declare_parameter("watchdog_timeout", 0.045).value)
        self.stop_duration = float(self.declare_parameter("stop_duration", 0.5).value)
        self.max_velocity = float(self.declare_parameter("max_velocity", 3.14).value)
        for what, value in (("rate_hz", self.rate), ("state_timeout", self.state_timeout),
                            ("watchdog_timeout", self.watchdog_timeout), ("max_velocity", self.max_velocity)):
            if not value > 0.0:
                raise ValueError(f"parameter {what} must be > 0, got {value}")
        if self.stop_duration < 0.0 or self.connect_wait < 0.0:
            raise ValueError("parameters stop_duration and connect_wait must be >= 0")
        self.params = declare_sim_params(self)
        self.arm = load_arm(self.params)
        self.tracker = ReferenceTracker(PDGains.from_params(self.params),
                                        CommandLimits.for_arm(self.arm, self.params, Workspace()),
                                        float(self.params["sim.dt"]))
        self._lower = np.array([lo for lo, _ in XARM6_JOINT_LIMITS]) - LIMIT_TOLERANCE
        self._upper = np.array([hi for _, hi in XARM6_JOINT_LIMITS]) + LIMIT_TOLERANCE
        self._lock = threading.Lock()  # the latest state, the tracker
        self._publish_lock = threading.Lock()  # orders the loop's, the watchdog's and the stop's commands
        self._state: tuple[float, FloatArray, FloatArray, FloatArray] | None = None  # (monotonic s, q, v, effort)
        self._used_state_at: float | None = None  # arrival time of the state the last tick acted on
        self.states_received = 0
        self._last_reason = ""
        self._last_sent_at = time.monotonic()
        self._last_nonzero = False
        self._ever_sent = False
        self._silent = False
        self._stop_until = 0.0
        self._controller_seen = False
        self.commands_sent = 0
        self.published = 0
        self.stop_index: int | None = None
        self.watchdog_trips = 0
        self.fault: str | None = None
        self.stopped = threading.Event()
        self._pub_controller = self.create_publisher(Float64MultiArray, topic, COMMAND_QOS)
        self._pub_state = self.create_publisher(JointState, "real/joint_states", STREAM_QOS)
        self._pub_pusher = self.create_publisher(PoseStamped, "real/pusher_pose", STREAM_QOS)
        self._pub_command = self.create_publisher(JointState, "real/joint_command", STREAM_QOS)
        self._pub_fault = self.create_publisher(String, REAL_FAULT_TOPIC, LATCHED_QOS)
        self.create_subscription(JointState, states_topic, self._on_joint_states, JOINT_STATES_QOS)
        self.create_subscription(JointTrajectoryMsg, REFERENCE_TOPIC, self._on_reference, LATCHED_QOS)
        report_matches(self, "real")
        self.command_topic = self._pub_controller.topic_name
        self.get_logger().info(f"real platform through ros2_control: commands on {self.command_topic} "
                               f"(joints {', '.join(joints)}), states from {states_topic}")
        self._started_at = time.monotonic()
        self._stop_loop = threading.Event()
        self._loop = threading.Thread(target=self._run_loop, name="ros2-control-loop", daemon=True)
        self._loop.start()
        self._watchdog = threading.Thread(target=self._run_watchdog, name="ros2-control-watchdog", daemon=True)
        self._watchdog.start()

    # --- inputs ---------------------------------------------------------------------------
    def _on_joint_states(self, msg: JointState) -> None:
        names = list(msg.name)
        try:
            index = [names.index(j) for j in self.state_names]
        except ValueError:
            return  # another publisher's joints (a gripper, say): not this arm's state
        position = np.asarray(msg.position, dtype=float)
        velocity = np.asarray(msg.velocity, dtype=float)
        effort = np.asarray(msg.effort, dtype=float)
        q = position[index] if len(position) == len(names) else np.full(6, np.nan)
        v = velocity[index] if len(velocity) == len(names) else np.zeros(6)
        e = effort[index] if len(effort) == len(names) else np.zeros(6)
        with self._lock:
            self._state = (time.monotonic(), q, v, e)
            self.states_received += 1

    def _on_reference(self, msg: JointTrajectoryMsg) -> None:
        start_ns, reference = trajectory_from_msg(msg)
        with self._lock:
            self.tracker.set_reference(start_ns, reference)

    # --- the loop -------------------------------------------------------------------------
    def _run_loop(self) -> None:
        ticks = FixedRate(1.0 / self.rate, self._stop_loop)
        while ticks.next():
            if not self.context.ok():
                break
            try:
                if self.fault is not None:
                    if not self._stream_zero_tick():
                        break
                    continue
                self._tick()
            except RCLError:
                if self.context.ok():
                    raise
                break
            except Exception as err:  # a failure the checks did not name: stop the arm, loudly
                if self._stop_loop.is_set() or not self.context.ok():
                    break
                self._latch(f"control loop failed: {type(err).__name__}: {' '.join(str(err).split())}")

    def _tick(self) -> None:
        now = time.monotonic()
        with self._lock:
            state = self._state
        subscribed = self._pub_controller.get_subscription_count() > 0
        self._controller_seen = self._controller_seen or subscribed
        if self._controller_seen and not subscribed:
            self._latch(f"the controller stopped listening on {self.command_topic} (unloaded or deactivated?)")
            return
        if now - self._started_at > self.connect_wait:
            if not subscribed:
                self._latch(f"no controller subscribes to {self.command_topic} after {self.connect_wait:g} s "
                            f"(is {self.controller} loaded and active in the lab's controller_manager?)")
                return
            if state is None:
                self._latch(f"no /joint_states with {', '.join(self.state_names)} after {self.connect_wait:g} s")
                return
        if state is None:
            return
        received, q, v, effort = state
        age = now - received
        if age > self.state_timeout:
            self._latch(f"/joint_states stale: the last one arrived {age * 1000:.0f} ms ago "
                        f"(limit {self.state_timeout * 1000:.0f} ms)")
            return
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
            self._latch(f"/joint_states not finite: position {np.round(q, 4).tolist()}")
            return
        outside = (q < self._lower) | (q > self._upper)
        if np.any(outside):
            joints = ", ".join(JOINT_NAMES[k] for k in np.flatnonzero(outside))
            self._latch(f"/joint_states outside the joint limits ({joints}): {np.round(q, 4).tolist()}")
            return
        if received == self._used_state_at:
            return  # no newer state: nothing is computed or sent, and the watchdog zeroes a moving arm
        self._used_state_at = received
        stamp = now_ns(self)
        with self._lock:
            tick = self.tracker.command(stamp, q, v)
        self._pub_state.publish(joint_state_msg(stamp, q, v, effort))
        self._pub_pusher.publish(pose_msg(stamp, self.arm.pusher_position(q), (1.0, 0.0, 0.0, 0.0)))
        if tick is None:
            return
        q_ref, out = tick
        if out.stopped and out.reason != self._last_reason:
            self.get_logger().warning(f"real: {out.reason}")
        self._last_reason = out.reason
        velocity = np.clip(out.velocity, -self.max_velocity, self.max_velocity)
        with self._publish_lock:
            if self.fault is not None or self._silent:
                return
            self._send(velocity)
            self._pub_command.publish(joint_state_msg(stamp, q_ref, velocity))
            self.commands_sent += 1

    # --- commands -------------------------------------------------------------------------
    def _send(self, velocity: FloatArray) -> None:
        """Publish ``velocity`` (6,) rad/s, joint1..joint6 order, in the controller's order
        (call with ``_publish_lock`` held)."""
        command = np.asarray(velocity, dtype=float)[self.order]
        self._pub_controller.publish(Float64MultiArray(data=[float(x) for x in command]))
        self.published += 1
        self._last_sent_at = time.monotonic()
        self._last_nonzero = bool(np.any(command != 0.0))
        self._ever_sent = True

    def _run_watchdog(self) -> None:
        check = self.watchdog_timeout / 3.0
        while not self._stop_loop.wait(check):
            with self._publish_lock:
                if self._silent or self.fault is not None or not self._last_nonzero:
                    continue
                if time.monotonic() - self._last_sent_at < self.watchdog_timeout:
                    continue
                if not self.context.ok():
                    return
                self._send(np.zeros(6))
                self.watchdog_trips += 1
            self.get_logger().warning(f"watchdog: no fresh command for {self.watchdog_timeout * 1000:.0f} ms; "
                                      "sent zero velocity")

    def _latch(self, text: str) -> None:
        """Latch a fault: log it, publish it on ``real/fault``, start the zero stream."""
        with self._publish_lock:
            if self.fault is not None:
                return
            self.fault = text
            self._stop_until = time.monotonic() + self.stop_duration
            if not self._silent:
                self.stop_index = self.published
                self._send(np.zeros(6))  # the first zero now, the stream at the loop's rate
        self.get_logger().error(f"xArm stopped: {text}")
        self._pub_fault.publish(String(data=text))

    def _stream_zero_tick(self) -> bool:
        """One zero command of the stop stream; False (and silence) once it has lasted ``stop_duration``."""
        with self._publish_lock:
            if self._silent:
                return False
            if time.monotonic() >= self._stop_until:
                self._silent = True
                self.stopped.set()
                return False
            self._send(np.zeros(6))
            return True

    def close(self) -> None:
        """Stop the arm through the stack (zero commands at ``rate_hz`` for ``stop_duration`` s,
        then silence) and end the threads; idempotent. Called on Ctrl-C / SIGTERM while ROS is up."""
        self._stop_loop.set()
        for thread in (self._loop, self._watchdog):
            if thread.is_alive() and thread is not threading.current_thread():
                thread.join(timeout=1.0)
        with self._publish_lock:
            if self._silent:
                return
            if self.fault is None:
                self._stop_until = time.monotonic() + self.stop_duration
                self.stop_index = self.published
            streaming = self._ever_sent
        period = 1.0 / self.rate
        while streaming and self.context.ok():
            with self._publish_lock:
                if time.monotonic() >= self._stop_until:
                    break
                try:
                    self._send(np.zeros(6))
                except RCLError:
                    break
            time.sleep(period)
        with self._publish_lock:
            self._silent = True
        self.stopped.set()


def main(args: list[str] | None = None) -> int:
    """Console script ``ros2_control_arm``."""
    return run_node(Ros2ControlArmNode, args, name="ros2_control_arm", doc=__doc__, sim_params=True,
                    example="controller:=xarm6_velo_controller")


if __name__ == "__main__":
    import sys

    sys.exit(main())

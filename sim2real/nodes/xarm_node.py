"""``xarm_node``: the xArm 6 driver (:class:`sim2real.hardware.XArmDriver`) on ``real/*`` topics.

Every ``1 / rate_hz`` s the joint states are read from the controller and published on
``real/joint_states`` (stamped with the read time, ROS clock) together with the pusher
position from forward kinematics on ``real/pusher_pose``.

The PD law (:class:`sim2real.control.ReferenceTracker`: the same law and gains as the sim
platform's ``pd_controller``) runs in that same loop on the state just read: read → PD →
joint-velocity command, in one thread, with no ROS 2 hop inside the arm's feedback loop (as a
ros2_control controller runs between its hardware interface's read and write). Its reference is
``reference/joint_trajectory``; no reference, no command. Each command is published on
``real/joint_command`` with the state's stamp, for the recorder and for ``--mirror commands``.
(With the PD law in its own node the real loop's latency doubled on a busy 2-core machine and
the arm overshot by up to 0.5 rad.) The driver's safety behaviour applies
unchanged: clamping, the 45 ms watchdog (zero velocity without fresh commands), and a
latched stop after any fault (the node then logs the fault once, publishes its message on
``real/fault`` (std_msgs/String, latched) so that the experiment ends the trial as
incomplete, and stops commanding; it never resumes by itself). A planned stop (SIGINT or
SIGTERM, or the node being closed) is no fault: it is logged once at info level
(``xArm stopped as planned: ...``) and nothing is published on ``real/fault``.

Parameters (type, default: meaning, unit)::

    robot_ip              string, required: the controller's IPv4 address (no default: the
                          node never connects anywhere it was not told to)
    command_port          int, 502: the controller's command port
    rate_hz               double, 100.0: read → PD → command loop rate, Hz
    mode                  int, 4: xArm motion mode (4 joint velocity, 1 servo)
    report_type           string, real: SDK report stream (real, rich, normal)
    connect_wait          double, 10.0: how long to retry connecting while the controller
                          does not answer yet, s
    link.max_round_trip   double, 0.035: stall budget of one exchange, s
    link.latency_budget   double, 0.010: latency budget of the link, s
    link.command_timeout  double, 1.0: SDK reply timeout of every exchange, s
    link.watchdog_timeout double, 0.045: zero velocity without a fresh command after, s
    link.command_duration double, 0.1: the controller's auto-stop of each velocity command, s
    pd.kp, pd.kd, sim.dt, arm.* ...  the simulator parameters (the PD gains and limits,
                          shared with pd_controller)
"""

from __future__ import annotations

import threading
import time

import numpy as np
from geometry_msgs.msg import PoseStamped
from rclpy._rclpy_pybind11 import RCLError
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg

from sim2real.control import CommandLimits, PDGains, ReferenceTracker, Workspace
from sim2real.errors import Sim2RealError
from sim2real.fixed_rate import FixedRate
from sim2real.hardware import DriverConfig, Preflight, XArmDriver, require_robot_address
from sim2real.model import load_arm
from sim2real.nodes.common import (
    LATCHED_QOS,
    NS_PER_S,
    REAL_FAULT_TOPIC,
    REFERENCE_TOPIC,
    STREAM_QOS,
    LeanNode,
    declare_sim_params,
    joint_state_msg,
    now_ns,
    pose_msg,
    report_matches,
    trajectory_from_msg,
)
from sim2real.nodes.process import run_node


class XArmNode(LeanNode):
    """The real platform (see the module docstring)."""

    def __init__(self, name: str = "xarm_node", **kwargs: object) -> None:
        super().__init__(name, **kwargs)  # type: ignore[arg-type]
        # No default address: a driver never connects anywhere it was not told to.
        ip = require_robot_address(str(self.declare_parameter("robot_ip", "").value), "parameter robot_ip")
        port = int(self.declare_parameter("command_port", 502).value)
        rate = float(self.declare_parameter("rate_hz", 100.0).value)
        mode = int(self.declare_parameter("mode", 4).value)
        report_type = str(self.declare_parameter("report_type", "real").value)
        self.params = declare_sim_params(self)
        self.arm = load_arm(self.params)
        connect_wait = float(self.declare_parameter("connect_wait", 10.0).value)
        # Link budgets of the driver (s; see DriverConfig): a slow stand-in process may get wider ones.
        defaults = DriverConfig(ip="127.0.0.1")

        def link(name: str) -> float:
            return float(self.declare_parameter(f"link.{name}", getattr(defaults, name)).value)

        self.driver = XArmDriver(DriverConfig(
            ip=ip, command_port=port, mode=mode, report_type=report_type, max_round_trip=link("max_round_trip"),
            latency_budget=link("latency_budget"), command_timeout=link("command_timeout"),
            watchdog_timeout=link("watchdog_timeout"), command_duration=link("command_duration")))
        preflight = self._connect(connect_wait)
        self.get_logger().info(preflight.summary())
        self.driver.start()
        self._fault_logged = False
        self.commands_sent = 0
        self.tick_times_ns: list[int] = []
        self._pub_state = self.create_publisher(JointState, "real/joint_states", STREAM_QOS)
        self._pub_pusher = self.create_publisher(PoseStamped, "real/pusher_pose", STREAM_QOS)
        self._pub_fault = self.create_publisher(String, REAL_FAULT_TOPIC, LATCHED_QOS)
        self.tracker = ReferenceTracker(PDGains.from_params(self.params),
                                        CommandLimits.for_arm(self.arm, self.params, Workspace()),
                                        float(self.params["sim.dt"]))
        self._tracker_lock = threading.Lock()
        self._last_reason = ""
        self._pub_command = self.create_publisher(JointState, "real/joint_command", STREAM_QOS)
        self.create_subscription(JointTrajectoryMsg, REFERENCE_TOPIC, self._on_reference, LATCHED_QOS)
        report_matches(self, "real")
        # The read-and-publish loop runs on its own thread against absolute deadlines: an
        # executor timer wakes late whenever another callback holds the executor.
        self._period = 1.0 / rate
        self._stop_loop = threading.Event()
        self._loop = threading.Thread(target=self._run_loop, name="xarm-node-loop", daemon=True)
        self._loop.start()

    def _connect(self, wait: float) -> Preflight:
        """Connect, retrying for up to ``wait`` s (a controller or stand-in started at the same
        time may not listen yet); the last error is raised after that."""
        deadline = time.monotonic() + wait
        while True:
            try:
                return self.driver.connect()
            except Sim2RealError as err:
                if time.monotonic() >= deadline:
                    raise
                self.get_logger().info(f"{err}; retrying", once=True)
                time.sleep(0.5)

    def _run_loop(self) -> None:
        ticks = FixedRate(self._period, self._stop_loop)  # a tick more than a period late skips, never bursts
        while ticks.next():
            if not self.context.ok():  # shutting down (e.g. Ctrl-C): publishers are gone
                break
            try:
                self._on_timer()
            except RCLError:
                if self.context.ok():
                    raise
                break
            except Exception as err:  # the driver or the SDK failed in a way it did not report as a fault
                if self._stop_loop.is_set() or not self.context.ok():
                    break  # shutting down: the link may already be gone (e.g. the stand-in stopped first)
                text = f"control loop failed: {type(err).__name__}: {' '.join(str(err).split())}"
                try:
                    self.driver.stop()  # the arm stops before anything is reported
                except Exception as stop_err:  # reported with the failure
                    text += f"; stopping the arm failed too: {type(stop_err).__name__}: {stop_err}"
                self._log_fault(text)
                break

    def _on_timer(self) -> None:
        if self.driver.fault is not None:
            self._log_fault()
            return
        try:
            q, v, effort, sampled_at = self.driver.read_joint_states()
        except Sim2RealError as err:
            self._log_fault(str(err))
            return
        # Stamped when the read's request left (the driver's sample time), not now: this process may have
        # waited for a CPU since, and a late stamp would record the arm late (a kinematic replay then pushes
        # the box late, and the fits take the lag for the model's).
        stamp = now_ns(self) - round((time.monotonic() - sampled_at) * NS_PER_S)
        command = self._control(stamp, q, v)
        self.tick_times_ns.append(stamp)
        self._pub_state.publish(joint_state_msg(stamp, q, v, effort))
        self._pub_pusher.publish(pose_msg(stamp, self.arm.pusher_position(q), (1.0, 0.0, 0.0, 0.0)))
        if command is not None:
            self._pub_command.publish(command)

    def _on_reference(self, msg: JointTrajectoryMsg) -> None:
        start_ns, reference = trajectory_from_msg(msg)
        with self._tracker_lock:
            self.tracker.set_reference(start_ns, reference)

    def _control(self, stamp: int, q: np.ndarray, v: np.ndarray) -> JointState | None:
        """The PD tick on the state read at ``stamp`` (ns): send its command, return its message."""
        with self._tracker_lock:
            tick = self.tracker.command(stamp, q, v)
        if tick is None:
            return None
        q_ref, out = tick
        if out.stopped and out.reason != self._last_reason:
            self.get_logger().warning(f"real: {out.reason}")
        self._last_reason = out.reason
        try:
            self.driver.send_velocity(out.velocity, stamp=stamp / NS_PER_S)
        except Sim2RealError as err:
            self._log_fault(str(err))
            return None
        self.commands_sent += 1
        return joint_state_msg(stamp, q_ref, out.velocity)

    def _log_fault(self, message: str | None = None) -> None:
        """Say once why the arm stopped: a fault at error level (and on ``real/fault``), a planned
        stop (a signal, the node closing) at info level only."""
        if self._fault_logged:
            return
        self._fault_logged = True
        fault = self.driver.fault
        if fault is not None and fault.planned:
            self.get_logger().info(f"xArm stopped as planned: {fault.message}")
            return
        if fault is None and self._stop_loop.is_set():  # closing: the driver is being stopped
            self.get_logger().info("xArm stopped as planned: the node is closing")
            return
        text = fault.message if fault else str(message)
        self.get_logger().error(f"xArm stopped: {text}")
        self._pub_fault.publish(String(data=text))

    def close(self) -> None:
        """Stop the loop, stop the arm and disconnect (idempotent); says once why the arm stopped."""
        self._stop_loop.set()
        if self._loop.is_alive() and self._loop is not threading.current_thread():
            self._loop.join(timeout=1.0)
        self.driver.stop()
        self._log_fault()


def main(args: list[str] | None = None) -> int:
    """Console script ``xarm_node``."""
    return run_node(XArmNode, args, name="xarm_node", doc=__doc__, sim_params=True,
                    example="robot_ip:=192.168.1.10")


if __name__ == "__main__":
    import sys

    sys.exit(main())

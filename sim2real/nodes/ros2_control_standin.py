"""``ros2_control_standin``: a lab's running ros2_control stack, for runs without one.

The reality stand-in of ``standin_world`` (an emulated xArm on loopback whose true joints drive
the stand-in box world, seen by mocap on ``real/box_pose``), faced the way xarm_ros2 faces a
real xArm with ``velocity_control: true`` and a forward velocity controller:

* **hardware interface** (``UFRobotSystemHardware``): on start, motors on, joint velocity mode
  (4), state 0; then every ``1 / update_rate`` s ``read()`` takes the controller's joint
  positions and velocities and ``write()`` sends the velocity command interfaces with a
  ``auto_stop`` s auto-stop (``vc_set_joint_velocity(cmd, true, 1 s)`` in xarm_ros2). The
  emulator is driven in process (no SDK), with the same servo model;
* **joint_state_broadcaster**: ``/joint_states`` every cycle, the joints in ``joints`` order
  followed by ``extra_joints`` (zeros; a gripper, say), stamped with the cycle's time;
* **forward command controller** ``<controller>``: ``/<controller>/commands``
  (``std_msgs/Float64MultiArray``, one velocity per joint in ``joints`` order) sets the
  command interfaces and is held until the next message, without timeout; a message of the
  wrong length is refused (logged), as forward_command_controller does.

For tests: :attr:`Ros2ControlStandinNode.received` lists every command that reached the
controller (joint order of ``joints``, rad/s); :meth:`pause_joint_states` stops the broadcaster
(a stall); :meth:`corrupt_joint_states` makes it publish NaN positions (a failed reading).

Parameters (type, default: meaning, unit), beside those of ``standin_world``::

    controller     string, xarm6_velo_controller: the forward velocity controller's name
    joints         string[], [joint1 ... joint6]: its joints, command order
    extra_joints   string[], []: more joints the broadcaster lists (position 0)
    update_rate    double, 150.0: controller_manager update rate (xarm_ros2's), Hz
    auto_stop      double, 1.0: the hardware interface's velocity auto-stop, s
"""

from __future__ import annotations

import threading

import numpy as np
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from sim2real.fixed_rate import FixedRate
from sim2real.nodes.common import JOINT_NAMES, FloatArray, now_ns, time_msg
from sim2real.nodes.process import run_node
from sim2real.nodes.routes import DEFAULT_CONTROLLER, XARM6_JOINTS, parse_joints
from sim2real.nodes.standin_world import StandinWorldNode


class Ros2ControlStandinNode(StandinWorldNode):
    """The stand-in world behind a stand-in ros2_control stack (see the module docstring).

    Attributes
    ----------
    received : list of ndarray, shape (6,)
        Every accepted command, in arrival order (the controller's joint order, rad/s).
    refused : int
        Commands of the wrong length.
    """

    def __init__(self, name: str = "ros2_control_standin", **kwargs: object) -> None:
        super().__init__(name, **kwargs)
        controller = str(self.declare_parameter("controller", DEFAULT_CONTROLLER).value)
        self.joints = parse_joints(list(self.declare_parameter("joints", list(XARM6_JOINTS)).value))
        declared: list[str] = self.declare_parameter("extra_joints", [""]).value
        extra = [str(j) for j in declared if str(j)]
        self.update_rate = float(self.declare_parameter("update_rate", 150.0).value)
        self.auto_stop = float(self.declare_parameter("auto_stop", 1.0).value)
        if not self.update_rate > 0.0:
            raise ValueError(f"parameter update_rate must be > 0, got {self.update_rate}")
        bare = [j.rsplit("/", 1)[-1] for j in self.joints]
        if sorted(bare) != sorted(JOINT_NAMES):
            raise ValueError(f"joints must name joint1 .. joint6, got {list(self.joints)}")
        # command[i] belongs to joint order[i] (0-based in joint1..joint6)
        self._order = np.array([JOINT_NAMES.index(j) for j in bare])
        self._names = [*self.joints, *extra]
        self._extra = len(extra)
        self.received: list[FloatArray] = []
        self.refused = 0
        self._held = np.zeros(6)  # joint1..joint6, rad/s
        self._lock = threading.Lock()
        self._paused = False
        self._corrupt = False
        self._pub_states = self.create_publisher(JointState, "/joint_states", 10)
        self.create_subscription(Float64MultiArray, f"/{controller}/commands", self._on_command,
                                 QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        if not self.emulator.activate_velocity_mode():
            raise RuntimeError("the emulated xArm refused joint velocity mode")
        self._stop_cycle = threading.Event()
        self._cycle = threading.Thread(target=self._run_cycle, name="ros2-control-standin", daemon=True)
        self._cycle.start()
        self.get_logger().info(f"ros2_control stand-in: /{controller}/commands, /joint_states at "
                               f"{self.update_rate:g} Hz")

    # --- controller ---------------------------------------------------------------------------
    def _on_command(self, msg: Float64MultiArray) -> None:
        data = np.asarray(msg.data, dtype=float)
        if data.shape != (6,):
            self.refused += 1
            self.get_logger().error(f"command size ({len(data)}) does not match number of interfaces (6)")
            return
        held = np.zeros(6)
        held[self._order] = data
        with self._lock:
            self.received.append(data.copy())
            self._held = held

    # --- controller_manager update cycle -------------------------------------------------------
    def _run_cycle(self) -> None:
        ticks = FixedRate(1.0 / self.update_rate, self._stop_cycle)
        while ticks.next():
            if not self.context.ok():
                return
            state = self.emulator.snapshot()  # read()
            with self._lock:
                command, paused, corrupt = self._held.copy(), self._paused, self._corrupt
            if not paused:
                position = np.full(6, np.nan) if corrupt else state.q
                msg = JointState()
                msg.header.stamp = time_msg(now_ns(self))
                msg.name = list(self._names)
                msg.position = [*(float(x) for x in position[self._order]), *([0.0] * self._extra)]
                msg.velocity = [*(float(x) for x in state.v[self._order]), *([0.0] * self._extra)]
                msg.effort = [0.0] * len(self._names)
                try:
                    self._pub_states.publish(msg)
                except Exception:
                    if self.context.ok():
                        raise
                    return
            self.emulator.set_joint_velocity(command, self.auto_stop)  # write()

    # --- fault injection (tests) ---------------------------------------------------------------
    def pause_joint_states(self, paused: bool = True) -> None:
        """Stop (or resume) publishing ``/joint_states``; the hardware keeps writing the held command."""
        with self._lock:
            self._paused = paused

    def corrupt_joint_states(self, corrupt: bool = True) -> None:
        """Publish NaN positions from now on (a failed reading)."""
        with self._lock:
            self._corrupt = corrupt

    def commands(self) -> list[FloatArray]:
        """A copy of :attr:`received`."""
        with self._lock:
            return list(self.received)

    def close(self) -> None:
        """Stop the update cycle, then the world and the emulator."""
        self._stop_cycle.set()
        if self._cycle.is_alive():
            self._cycle.join(timeout=2.0)
        super().close()


def main(args: list[str] | None = None) -> int:
    """Console script ``ros2_control_standin``."""
    return run_node(Ros2ControlStandinNode, args, name="ros2_control_standin", doc=__doc__,
                    example="controller:=xarm6_velo_controller")


if __name__ == "__main__":
    import sys

    sys.exit(main())

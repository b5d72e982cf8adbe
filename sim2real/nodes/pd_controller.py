"""``pd_controller``: the shared PD law on one platform's topics.

It runs for the sim platform. The real platform's PD law (the same
:class:`sim2real.control.ReferenceTracker`, the same gains) runs inside ``xarm_node``'s read
loop, so that no ROS 2 hop delays the real arm's feedback; ``platform: real`` is refused.

Parameters (type, default: meaning, unit)::

    platform  string, sim: the platform whose topics it uses (only sim; real is refused)
    mirror    string, closed: closed (track the reference) or commands (forward the real
              platform's commands)
    pd.kp, pd.kd, arm.max_joint_acc, sim.dt ...  the simulator parameters: gains (pd.kp
              1/s, pd.kd dimensionless), limits (rad/s, rad/s²) and control period (s), from
              the same params file as xarm_node's

``closed``: on every ``<platform>/joint_states`` message, the reference of
``reference/joint_trajectory`` is sampled at the state's stamp and
:func:`sim2real.control.pd_command` gives the command, published on
``<platform>/joint_command`` with the state's stamp (the control tick) and the reference
position of the tick in ``position``. No reference yet: no command.

``commands``: ``real/joint_command`` is forwarded verbatim to
``sim/joint_command``, so both platforms receive literally the same commands.
"""

from __future__ import annotations

from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg

from sim2real.control import CommandLimits, PDGains, ReferenceTracker, Workspace
from sim2real.model import load_arm
from sim2real.nodes.common import (
    LATCHED_QOS,
    REFERENCE_TOPIC,
    STREAM_QOS,
    LeanNode,
    declare_sim_params,
    joint_arrays,
    joint_state_msg,
    ns_of,
    report_matches,
    trajectory_from_msg,
)
from sim2real.nodes.process import run_node
from sim2real.params import ParameterSet


class PDControllerNode(LeanNode):
    """PD controller of one platform (see the module docstring)."""

    def __init__(self, name: str = "pd_controller", **kwargs: object) -> None:
        super().__init__(name, **kwargs)  # type: ignore[arg-type]
        self.platform = str(self.declare_parameter("platform", "sim").value)
        self.mirror = str(self.declare_parameter("mirror", "closed").value)
        if self.platform == "real":
            raise ValueError("platform real: the real platform's PD law runs inside xarm_node's read loop; "
                             "start pd_controller for the sim platform only")
        if self.platform != "sim":
            raise ValueError(f"platform must be sim, got {self.platform!r}")
        if self.mirror not in ("closed", "commands"):
            raise ValueError(f"mirror must be closed or commands, got {self.mirror!r}")
        self.params: ParameterSet = declare_sim_params(self)
        arm = load_arm(self.params)
        self.gains = PDGains.from_params(self.params)
        self.tracker = ReferenceTracker(self.gains, CommandLimits.for_arm(arm, self.params, Workspace()),
                                        float(self.params["sim.dt"]))
        self._last_reason = ""
        self.commands_sent = 0
        self._pub = self.create_publisher(JointState, f"{self.platform}/joint_command", STREAM_QOS)
        if self.mirror == "commands" and self.platform == "sim":
            self.create_subscription(JointState, "real/joint_command", self._forward, STREAM_QOS)
        else:
            self.create_subscription(JointTrajectoryMsg, REFERENCE_TOPIC, self._on_reference, LATCHED_QOS)
            self.create_subscription(JointState, f"{self.platform}/joint_states", self._on_state, STREAM_QOS)
        report_matches(self, f"{self.platform}_pd_controller")
        self.get_logger().info(f"{self.platform} PD controller, mirror {self.mirror}, "
                               f"kp {self.gains.kp} kd {self.gains.kd}")

    def _on_reference(self, msg: JointTrajectoryMsg) -> None:
        self.tracker.set_reference(*trajectory_from_msg(msg))

    def _on_state(self, msg: JointState) -> None:
        stamp = ns_of(msg.header.stamp)
        q, v, _ = joint_arrays(msg)
        tick = self.tracker.command(stamp, q, v)
        if tick is None:
            return
        q_ref, out = tick
        if out.stopped and out.reason != self._last_reason:
            self.get_logger().warning(f"{self.platform}: {out.reason}")
        self._last_reason = out.reason
        self._pub.publish(joint_state_msg(stamp, q_ref, out.velocity))
        self.commands_sent += 1

    def _forward(self, msg: JointState) -> None:
        self._pub.publish(msg)
        self.commands_sent += 1


def main(args: list[str] | None = None) -> int:
    """Console script ``pd_controller``."""
    return run_node(PDControllerNode, args, name="pd_controller", doc=__doc__, sim_params=True,
                    example="mirror:=commands")


if __name__ == "__main__":
    import sys

    sys.exit(main())

"""``live_view``: what a 3D viewer needs from a running experiment, live.

* ``robot_description`` (std_msgs/String; reliable, transient-local, depth 1: latched, so a viewer
  that joins later still gets it): one URDF with an xArm 6 per platform, links and joints prefixed
  ``real/`` and ``sim/`` (the same description the trial bags carry, :mod:`sim2real.trials.scene`),
  sized by the simulator parameters;
* ``live/joint_states`` (sensor_msgs/JointState): the ``<ns>/joint_states`` messages again (at most
  ``rate_hz`` per platform), their joints named as in that description (``real/joint1`` … ``sim/joint6``), so that
  ``robot_state_publisher`` fed with both draws the two arms.

The names are relative: under a namespace (``namespace:=`` of the launch file) they do not meet
the lab's own ``/robot_description`` and ``/joint_states``. ``/tf`` is not published live: its
message type (tf2_msgs/TFMessage) has no Python wheel for this ROS 2 release; the trial bags carry
``/tf`` (written with rosbags), and ``robot_state_publisher`` makes it live from the two topics above.

With ``foxglove`` set (``sim2real run --live``) the node also serves the run to Foxglove over its
WebSocket protocol (:mod:`sim2real.nodes.foxglove_live`: both arms' link transforms, both boxes,
joint states, the pushers), from the ``<ns>/joint_states``, ``<ns>/box_pose`` and
``<ns>/pusher_pose`` topics.

Parameters (type, default: meaning, unit)::

    platforms  string[], [real, sim]: the platforms whose arms are shown
    rate_hz    double, 30.0: at most this many live messages per platform and stream, Hz (by
               header stamp; a viewer needs no more, and the run's recorder shares the process)
    foxglove   string, "": HOST:PORT of a Foxglove WebSocket server to start ("" none)
    box.*, pusher.*, contact.table_height ...  the simulator parameters (sizes in the description)
"""

from __future__ import annotations

import functools

from geometry_msgs.msg import PoseStamped
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from sim2real.nodes.common import (
    JOINT_NAMES,
    STREAM_QOS,
    LeanNode,
    declare_sim_params,
    joint_arrays,
    now_ns,
    ns_of,
    pose_arrays,
)
from sim2real.nodes.process import run_node
from sim2real.nodes.streams import StreamHub, subscribe_stream
from sim2real.trials.scene import SceneSpec, frame, robot_description

#: Latched like robot_state_publisher's ``robot_description``: a late subscriber gets the last one.
DESCRIPTION_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
DESCRIPTION_TOPIC = "robot_description"
LIVE_JOINT_STATES_TOPIC = "live/joint_states"


class LiveViewNode(LeanNode):
    """Robot description and prefixed joint states (see the module docstring).

    Attributes
    ----------
    description : str
        The URDF published on ``robot_description``.
    live : FoxgloveLive or None
        The Foxglove server, when ``foxglove`` is set.
    """

    def __init__(self, name: str = "live_view", streams: StreamHub | None = None, **kwargs: object) -> None:
        super().__init__(name, **kwargs)  # type: ignore[arg-type]
        declared: list[str] = self.declare_parameter("platforms", ["real", "sim"]).value
        platforms = [str(p) for p in declared]
        unknown = sorted(set(platforms) - {"real", "sim"})
        if unknown or not platforms:
            raise ValueError(f"parameter platforms must list real and/or sim, got {platforms}")
        address = str(self.declare_parameter("foxglove", "").value)
        rate = float(self.declare_parameter("rate_hz", 30.0).value)
        if not rate > 0.0:
            raise ValueError(f"parameter rate_hz must be > 0, got {rate}")
        self._period_ns = round(1e9 / rate)
        self._last: dict[tuple[str, str], int] = {}
        params = declare_sim_params(self)
        spec = SceneSpec.from_params(platforms, platforms, params)
        self.description = robot_description(spec)
        self._pub_description = self.create_publisher(String, DESCRIPTION_TOPIC, DESCRIPTION_QOS)
        self._pub_description.publish(String(data=self.description))
        self._pub_joints = self.create_publisher(JointState, LIVE_JOINT_STATES_TOPIC, STREAM_QOS)
        self.live = None
        if address:
            from sim2real.nodes.foxglove_live import FoxgloveLive, parse_live_address

            self.live = FoxgloveLive(*parse_live_address(address), spec)
            self.get_logger().info(f"Foxglove: ws://{address.rpartition(':')[0]}:{self.live.port} "
                                   "(foxglove.websocket.v1)")
            self.create_timer(1.0, lambda: self.live.scene(now_ns(self)) if self.live else None)
            self.live.scene(now_ns(self))
        for ns in platforms:
            subscribe_stream(self, streams, JointState, f"{ns}/joint_states", functools.partial(self._on_joints, ns))
            if self.live is not None:
                subscribe_stream(self, streams, PoseStamped, f"{ns}/box_pose", functools.partial(self._on_box, ns))
                subscribe_stream(self, streams, PoseStamped, f"{ns}/pusher_pose",
                                 functools.partial(self._on_pusher, ns))

    def _due(self, ns: str, stream: str, stamp_ns: int) -> bool:
        """Whether a message of ``stream`` stamped ``stamp_ns`` is due (``rate_hz``); a stamp that went
        back (a reset) is always due."""
        last = self._last.get((ns, stream))
        if last is not None and 0 <= stamp_ns - last < self._period_ns:
            return False
        self._last[(ns, stream)] = stamp_ns
        return True

    def _on_joints(self, ns: str, msg: JointState) -> None:
        if not self._due(ns, "joint_states", ns_of(msg.header.stamp)):
            return
        if self.live is not None:
            position, velocity, effort = joint_arrays(msg)
            self.live.joint_state(ns, ns_of(msg.header.stamp), JOINT_NAMES, position, velocity, effort)
        renamed = JointState(header=msg.header, name=[frame(ns, str(name)) for name in msg.name],
                             position=msg.position, velocity=msg.velocity, effort=msg.effort)
        self._pub_joints.publish(renamed)  # a copy: other nodes read the received message too

    def _on_box(self, ns: str, msg: PoseStamped) -> None:
        if self.live is not None and self._due(ns, "box_pose", ns_of(msg.header.stamp)):
            self.live.box_pose(ns, ns_of(msg.header.stamp), *pose_arrays(msg))

    def _on_pusher(self, ns: str, msg: PoseStamped) -> None:
        if self.live is not None and self._due(ns, "pusher_pose", ns_of(msg.header.stamp)):
            self.live.pusher_pose(ns, ns_of(msg.header.stamp), pose_arrays(msg)[0])

    def close(self) -> None:
        """Stop the Foxglove server, if any."""
        live, self.live = self.live, None
        if live is not None:
            live.close()


def main(args: list[str] | None = None) -> int:
    """Console script ``live_view``."""
    return run_node(LiveViewNode, args, name="live_view", doc=__doc__, sim_params=True,
                    example="platforms:=[real,sim]")


if __name__ == "__main__":
    import sys

    sys.exit(main())

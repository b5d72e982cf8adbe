"""``sim_node``: the mirrored sim platform on ``sim/*`` topics.

The platform is :class:`sim2real.control.sim_platform.SimPlatform` built from the node's
simulator parameters (any params file, e.g. one written by ``sim2real fit``). Its clock is
ideal: state ``k`` is stamped ``epoch + k · sim.dt`` and published on ``sim/joint_states``,
``sim/box_pose`` and ``sim/pusher_pose``.

Stepping (one period per step, paced by a ``sim.dt`` timer, never ahead of wall time):

* ``closed``: lock-step with the PD controller: the command stamped like state ``k`` is
  applied to go from ``k`` to ``k+1``; if the sim lags behind wall time it steps as soon as
  the command arrives. Once the controller has answered a state since the last reset, the
  sim waits for the answer to every state (a starved controller delays the sim, it does not
  change what the sim did: every recorded command is the one applied), for up to
  ``lockstep_wait`` s; after that it steps on with zero velocity and says so (warning), as
  the commands recorded from then on were not all applied;
* ``commands``: the forwarded real commands are applied in arrival order, one per period;
* without any command for ``watchdog`` s the platform steps with zero velocity (the
  behaviour of the real driver's watchdog), so time and the box keep going: in
  ``commands`` mode at any time, in ``closed`` mode only before the controller's first
  answer after a reset (no reference yet).

``sim/reset`` (std_msgs/String, JSON ``{"q": [6], "box_position": [3], "box_quaternion": [4]}``)
restarts the platform at rest in that state and re-anchors the epoch at the current time.

Parameters (type, default: meaning, unit)::

    mirror            string, closed: closed (own PD controller) or commands (the real
                      platform's commands)
    watchdog          double, 0.05: step with zero velocity after this long without a
                      command (closed: only before the first command after a reset), s
    lockstep_wait     double, 1.0: closed: longest wait for the controller's answer to a
                      state before stepping on without it, s
    engine            string, ours: simulation engine of the box (ours or mujoco,
                      sim2real.engines)
    initial_distance  double, 0.40: box start distance before the first reset, m
    initial_joints    double[6]: arm start joints before the first reset, rad (default:
                      the standard push's start)
    box.*, contact.*, arm.*, pd.*, sim.dt ...  the simulator parameters of the platform
"""

from __future__ import annotations

import collections
import json
import math
import threading

import numpy as np
from geometry_msgs.msg import PoseStamped
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from sim2real.control import load_experiment_config
from sim2real.control.sim_platform import SimPlatform
from sim2real.engines import check_engine
from sim2real.engines import engine as engine_entry
from sim2real.model import load_arm
from sim2real.nodes.common import (
    NS_PER_S,
    SIM_RESET_TOPIC,
    STREAM_QOS,
    LeanNode,
    SolveReporter,
    declare_sim_params,
    joint_arrays,
    joint_state_msg,
    now_ns,
    ns_of,
    pose_msg,
    report_matches,
)
from sim2real.nodes.process import run_node
from sim2real.physics.warmup import compile_with_progress
from sim2real.sim import BoxState
from sim2real.trials.experiment import requested_box_pose, start_joints


class SimNode(LeanNode):
    """The sim platform (see the module docstring)."""

    def __init__(self, name: str = "sim_node", **kwargs: object) -> None:
        super().__init__(name, **kwargs)  # type: ignore[arg-type]
        self.mirror = str(self.declare_parameter("mirror", "closed").value)
        if self.mirror not in ("closed", "commands"):
            raise ValueError(f"mirror must be closed or commands, got {self.mirror!r}")
        self.watchdog = float(self.declare_parameter("watchdog", 0.05).value)
        self.lockstep_wait = float(self.declare_parameter("lockstep_wait", 1.0).value)
        self.engine = str(self.declare_parameter("engine", "ours").value)
        check_engine(self.engine)
        initial_distance = float(self.declare_parameter("initial_distance", 0.40).value)
        initial: list[float] = list(self.declare_parameter("initial_joints", [0.0]).value)
        self.params = declare_sim_params(self)
        self.arm = load_arm(self.params)
        self.dt = float(self.params["sim.dt"])
        self.dt_ns = round(self.dt * NS_PER_S)
        if len(initial) != 6:
            initial = list(start_joints(self.arm, load_experiment_config().push,
                                        float(self.params["contact.table_height"])))
        box = BoxState.at_rest(*requested_box_pose(initial_distance, self.params))
        self.steps = 0
        self.idle_steps = 0
        self._pending: dict[int, np.ndarray] = {}
        self._queue: collections.deque[np.ndarray] = collections.deque(maxlen=1000)
        self._last_command_ns = 0
        self._answered = False  # closed: the controller answered a state since the last reset
        self._lock = threading.RLock()
        self._pub_state = self.create_publisher(JointState, "sim/joint_states", STREAM_QOS)
        self._pub_box = self.create_publisher(PoseStamped, "sim/box_pose", STREAM_QOS)
        self._pub_pusher = self.create_publisher(PoseStamped, "sim/pusher_pose", STREAM_QOS)
        prepare = engine_entry(self.engine).warm_up
        if prepare is not None:
            def say(line: str) -> None:  # the logger's info() returns a bool; say() returns nothing
                self.get_logger().info(line)

            # A first start after an install compiles the engine (minutes on a busy machine): say so, with
            # progress, rather than stay silent while the experiment waits for this platform.
            compile_with_progress(say=say)
            prepare(self.params)
        self._solver = SolveReporter(self, "sim")
        self._reset(np.asarray(initial, float), box)
        # Commands get their own callback group: a lagging (always ready) timer must not starve them.
        inputs = MutuallyExclusiveCallbackGroup()
        self.create_subscription(JointState, "sim/joint_command", self._on_command, STREAM_QOS,
                                 callback_group=inputs)
        self.create_subscription(String, SIM_RESET_TOPIC, self._on_reset, STREAM_QOS, callback_group=inputs)
        report_matches(self, "sim")
        self.create_timer(self.dt, self._on_timer, callback_group=MutuallyExclusiveCallbackGroup())
        self.get_logger().info(f"sim platform running: mirror {self.mirror}, engine {self.engine}, dt {self.dt:g} s")

    # --- state ----------------------------------------------------------------------------
    def _reset(self, q: np.ndarray, box: BoxState) -> None:
        self.platform = SimPlatform(self.params, q, box, arm=self.arm, context="sim_node", engine=self.engine)
        self.epoch_ns = now_ns(self)
        self._pending.clear()
        self._queue.clear()
        self._last_command_ns = self.epoch_ns
        self._answered = False
        self._said_unanswered = False
        self._publish()
        self._solver.report(self.platform.log, force=True)

    def stamp_ns(self, k: int | None = None) -> int:
        """Stamp (ns) of state ``k`` (default: the current one)."""
        return self.epoch_ns + (self.platform.k if k is None else k) * self.dt_ns

    def _publish(self) -> None:
        stamp = self.stamp_ns()
        p = self.platform
        self._pub_state.publish(joint_state_msg(stamp, p.q, p.v))
        self._pub_box.publish(pose_msg(stamp, p.box.position, p.box.quaternion))
        self._pub_pusher.publish(pose_msg(stamp, p.pusher, (1.0, 0.0, 0.0, 0.0)))

    def _step(self, command: np.ndarray) -> None:
        self.platform.step(command)
        self.steps += 1
        self._publish()
        self._solver.report(self.platform.log)

    # --- callbacks ------------------------------------------------------------------------
    def _on_reset(self, msg: String) -> None:
        data = json.loads(msg.data)
        box = BoxState.at_rest(np.asarray(data["box_position"], float), np.asarray(data["box_quaternion"], float))
        with self._lock:
            self._reset(np.asarray(data["q"], float), box)

    def _on_command(self, msg: JointState) -> None:
        _, velocity, _ = joint_arrays(msg)
        if not np.all(np.isfinite(velocity)):
            velocity = np.zeros(6)
        with self._lock:
            self._last_command_ns = now_ns(self)
            if self.mirror == "commands":
                self._queue.append(velocity)
                return
            stamp = ns_of(msg.header.stamp)
            if stamp < self.stamp_ns() or (stamp - self.epoch_ns) % self.dt_ns:
                return  # answer to a state before the last step, or to one of the epoch before the last reset
            self._pending[stamp] = velocity
            self._answered = True
            if now_ns(self) >= self.stamp_ns(self.platform.k + 1) + self.dt_ns:
                self._advance()  # lagging behind wall time: catch up at once

    def _on_timer(self) -> None:
        with self._lock:
            if now_ns(self) < self.stamp_ns(self.platform.k + 1) - self.dt_ns // 2:
                return
            self._advance()

    def _advance(self) -> None:
        now = now_ns(self)
        if self.mirror == "commands":
            if self._queue:
                self._step(self._queue.popleft())
                return
        else:
            command = self._pending.pop(self.stamp_ns(), None)
            if command is not None:
                self._pending = {s: u for s, u in self._pending.items() if s > self.stamp_ns()}
                self._step(command)
                return
        if self.mirror == "closed" and self._answered:
            if now - self._last_command_ns < math.floor(self.lockstep_wait * NS_PER_S):
                return  # lock-step: wait for the controller's answer to this state
            if not self._said_unanswered:
                self._said_unanswered = True
                self.get_logger().warning(
                    f"sim: no answer from its PD controller for {self.lockstep_wait:g} s; stepping on with zero "
                    "velocity until one comes (commands recorded for the steps taken meanwhile were not applied)")
        if now - self._last_command_ns >= math.floor(self.watchdog * NS_PER_S):
            self.idle_steps += 1
            self._step(np.zeros(6))


def main(args: list[str] | None = None) -> int:
    """Console script ``sim_node``."""
    return run_node(SimNode, args, name="sim_node", doc=__doc__, sim_params=True, example="mirror:=commands")


if __name__ == "__main__":
    import sys

    sys.exit(main())

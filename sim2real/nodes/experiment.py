"""``experiment``: runs the trials of the box-push experiment (sequence in :mod:`sim2real.trials.experiment`).

For each start distance: home the real arm to the push start, have the box placed (the
stand-in places it on ``experiment/box_request``; in ``real``/``mirror`` mode the operator
places it and confirms with the ``experiment/box_placed`` service, std_srvs/Trigger), wait
until the measured box pose is within ``start_tolerance`` of the requested start (and within
:data:`START_YAW_TOLERANCE_DEG` of its yaw, the push's ``box_yaw_deg``), reset the
sim to the measured state (``sim`` mode: once its PD controller holds the start pose),
publish the push reference stamped ``lead_time`` ahead, wait until every platform reported
past its end, and close the trial (events for the ``recorder`` on
``experiment/trial_event``; it answers on ``recorder/trial_written``).

The node exits when every trial is recorded (status 0), the run failed (status 1, one
logged line) or a signal stopped it before its trials were done (status 130), so a launch can
end with it and carry its status (:func:`sim2real.nodes.launch_status.experiment_exited`).

Parameters (type, default: meaning, unit); config/experiment.yaml holds the standard values::

    mode               string, sim: mirror, sim, real or standin
    mirror             string, closed: closed or commands
    distances          double[], [0.30]: box start distances, m
    start_tolerance    double, 0.01: largest box start error, m
    push.height, push.lateral, push.start_x, push.end_x  the push path, m
    push.speed         cruise speed, m/s
    push.ramp_time, push.pre_time, push.settle_time  s
    push.rate_hz       reference sample rate, Hz
    push.box_yaw_deg   the box's yaw at the start about base z, deg (0: square to the push)
    trials.height, trials.lateral, trials.start_x, trials.end_x (m), trials.speed (m/s),
    trials.box_yaw_deg (deg)
                       double[], unset: the experiment file's trials section, each trial's own
                       push (one entry per distance; a key not given is push's); unset: every
                       trial pushes push
    lead_time          double, 0.3: the reference starts this long after it is sent, s
    confirm_placement  bool, true in real and mirror mode: wait for the operator's
                       experiment/box_placed call
    placement_timeout  double, 30.0: s
    home_speed         double, 0.5: joint speed of the move to the start pose, rad/s
    joint_tolerance    double, 0.01: start pose reached within, rad
    replay_trial       string, "": a recorded trial directory; in sim mode, one trial that
                       plays its recorded reference from its recorded start
    startup_timeout    double, 600.0: wait for every platform and the whole graph, s (the
                       first start after an install compiles the engine: 1-5 minutes, more on
                       a busy machine; the simulating nodes log its progress)
    box.*, contact.*, arm.*, pd.*, sim.dt ...  the simulator parameters (the push plan)
"""

from __future__ import annotations

import collections
import functools
import json
import threading
import time
from dataclasses import fields
from pathlib import Path
from typing import Any, cast

import numpy as np
from geometry_msgs.msg import PoseStamped
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg

from sim2real.control import (
    TRIAL_PUSH_KEYS,
    ExperimentConfig,
    JointTrajectory,
    PushConfig,
    build_trial_pushes,
    plan_push,
)
from sim2real.errors import Sim2RealError
from sim2real.model import ArmModel, load_arm
from sim2real.nodes.common import (
    BOX_REQUEST_TOPIC,
    GRAPH_STATUS_TOPIC,
    LATCHED_QOS,
    NS_PER_S,
    REAL_FAULT_TOPIC,
    REFERENCE_TOPIC,
    SIM_RESET_TOPIC,
    STREAM_QOS,
    TRIAL_EVENT_TOPIC,
    TRIAL_WRITTEN_TOPIC,
    LeanNode,
    declare_sim_params,
    joint_arrays,
    now_ns,
    ns_of,
    pose_arrays,
    pose_msg,
    trajectory_msg,
)
from sim2real.nodes.process import run_node
from sim2real.nodes.streams import StreamHub, subscribe_stream
from sim2real.trials import read_trial
from sim2real.trials.experiment import (
    ReplayStart,
    TrialWindow,
    arm_settled,
    box_within,
    box_yaw_off_deg,
    check_mirror,
    mean_heading,
    missing_matches,
    parse_distances,
    platforms_of,
    progress_line,
    recorded_outcomes,
    replay_start,
    requested_box_pose,
    required_matches,
    resting_pose,
    return_trajectory,
    yaw_deg,
)

#: The measured box yaw must be within this of the requested start (deg; the push's ``box_yaw_deg``).
START_YAW_TOLERANCE_DEG = 3.0


class ExperimentNode(LeanNode):
    """The trial sequencer (see the module docstring). ``finished`` is set when all trials ended."""

    #: Exit status of the console script when a signal stops it before every trial was recorded.
    stopped_status = 130

    def __init__(self, name: str = "experiment", progress: Any = None, streams: StreamHub | None = None,
                 **kwargs: object) -> None:
        super().__init__(name, **kwargs)  # type: ignore[arg-type]
        self.mode = str(self.declare_parameter("mode", "sim").value)
        self.platforms = platforms_of(self.mode)
        self.mirror = check_mirror(str(self.declare_parameter("mirror", "closed").value), self.mode)
        self.engine = str(self.declare_parameter("engine", "ours").value)  # the sim platform's, for the records
        self.distances = parse_distances(list(self.declare_parameter("distances", [0.30]).value))
        self.tolerance = float(self.declare_parameter("start_tolerance", 0.01).value)
        # every PushConfig field has a plain float default (none is MISSING or a factory)
        push_values = {f.name: float(self.declare_parameter(f"push.{f.name}", float(cast(float, f.default))).value)
                       for f in fields(PushConfig)}
        self.push = PushConfig(**push_values)
        # trials.<key>: typed, no default (a value not given reads back as None); the rule is the file's
        trials: dict[str, list[float]] = {}
        for key in TRIAL_PUSH_KEYS:
            value: Any = self.declare_parameter(f"trials.{key}", Parameter.Type.DOUBLE_ARRAY).value
            if value is not None:
                trials[key] = [float(v) for v in value]
        self.config = ExperimentConfig(
            self.distances, self.push, self.tolerance,
            build_trial_pushes(trials or None, self.push, self.distances, "experiment parameters"))
        self.lead_time = float(self.declare_parameter("lead_time", 0.3).value)
        self.confirm = bool(self.declare_parameter("confirm_placement", self.mode in ("real", "mirror")).value)
        self.placement_timeout = float(self.declare_parameter("placement_timeout", 30.0).value)
        self.home_speed = float(self.declare_parameter("home_speed", 0.5).value)
        self.joint_tolerance = float(self.declare_parameter("joint_tolerance", 0.01).value)
        self.startup_timeout = float(self.declare_parameter("startup_timeout", 600.0).value)
        self.params = declare_sim_params(self)
        self.progress = progress or (lambda line: self.get_logger().info(line))
        self.replay: ReplayStart | None = None
        replay_trial = str(self.declare_parameter("replay_trial", "").value)
        if replay_trial:
            if self.platforms != ("sim",):
                raise ValueError("parameter replay_trial needs mode sim")
            self.replay = replay_start(read_trial(replay_trial))
            self.distances = (self.replay.distance,)
            #: Each trial's reference (``t`` from 0 s), one per start distance.
            self.references: tuple[JointTrajectory, ...] = (self.replay.reference,)
        else:
            self.references = plan_trials(load_arm(self.params), self.config,
                                          float(self.params["contact.table_height"]))
        self.box_size = np.array([float(self.params[f"box.size_{a}"]) for a in "xyz"])
        self._lock = threading.Lock()
        self._joints: dict[str, tuple[int, np.ndarray, np.ndarray]] = {}
        self._boxes: dict[str, collections.deque[tuple[int, np.ndarray, np.ndarray]]] = {
            ns: collections.deque(maxlen=2000) for ns in self.platforms}
        self._written: dict[str, tuple[Path, list[str]]] = {}  # trial -> (directory, recording problems)
        self.incomplete: list[str] = []  # trials the recorder wrote complete: false (streams cut short)
        self._placed = threading.Event()
        self.finished = threading.Event()
        self.exit_status = 0
        self.results: list[Path] = []
        self.error: str | None = None
        self._stop = threading.Event()
        self._closing = threading.Event()  # close(): Ctrl-C or the end of the process
        self._abort_reason: str | None = None
        self.hardware_fault = False  # the run stopped on a fault the real arm's driver reported
        group = ReentrantCallbackGroup()
        for ns in self.platforms:
            subscribe_stream(self, streams, JointState, f"{ns}/joint_states", functools.partial(self._on_joints, ns),
                             callback_group=group)
            subscribe_stream(self, streams, PoseStamped, f"{ns}/box_pose", functools.partial(self._on_box, ns),
                             callback_group=group)
        self._sim_command: np.ndarray | None = None  # reference position of the latest sim command (_hold_sim)
        if "real" not in self.platforms:
            subscribe_stream(self, streams, JointState, "sim/joint_command", self._on_sim_command, callback_group=group)
        self.create_subscription(String, TRIAL_WRITTEN_TOPIC, self._on_written, LATCHED_QOS, callback_group=group)
        self._graph: dict[str, dict[str, int]] = {}
        self.required = required_matches(self.platforms, self.mirror)
        self.create_subscription(String, GRAPH_STATUS_TOPIC, self._on_graph_status, 50, callback_group=group)
        if "real" in self.platforms:
            self.create_subscription(String, REAL_FAULT_TOPIC, self._on_fault, LATCHED_QOS, callback_group=group)
        self.create_service(Trigger, "experiment/box_placed", self._on_placed, callback_group=group)
        self._pub_reference = self.create_publisher(JointTrajectoryMsg, REFERENCE_TOPIC, LATCHED_QOS)
        self._pub_event = self.create_publisher(String, TRIAL_EVENT_TOPIC, LATCHED_QOS)
        self._pub_request = self.create_publisher(PoseStamped, BOX_REQUEST_TOPIC, STREAM_QOS)
        self._pub_reset = self.create_publisher(String, SIM_RESET_TOPIC, STREAM_QOS)
        self._worker = threading.Thread(target=self._run, name="experiment", daemon=True)
        self._worker.start()

    # --- observations ---------------------------------------------------------------------
    def _on_joints(self, ns: str, msg: JointState) -> None:
        q, v, _ = joint_arrays(msg)
        with self._lock:
            self._joints[ns] = (ns_of(msg.header.stamp), q, v)

    def _on_sim_command(self, msg: JointState) -> None:
        q_ref, _, _ = joint_arrays(msg)
        with self._lock:
            self._sim_command = q_ref

    def _on_box(self, ns: str, msg: PoseStamped) -> None:
        position, quaternion = pose_arrays(msg)
        with self._lock:
            self._boxes[ns].append((ns_of(msg.header.stamp), position, quaternion))

    def _on_written(self, msg: String) -> None:
        data = json.loads(msg.data)
        with self._lock:
            self._written[data["trial"]] = (Path(data["path"]), [str(p) for p in data.get("problems") or ()])

    def _on_placed(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self._placed.set()
        response.success, response.message = True, "placement confirmed"
        return response

    def _on_graph_status(self, msg: String) -> None:
        data = json.loads(msg.data)
        with self._lock:
            self._graph[str(data["role"])] = {str(k): int(v) for k, v in data["matched"].items()}

    def _wait_connected(self, timeout: float = 30.0) -> None:
        """Wait until every node reports a matched publisher on each topic it needs (DDS
        discovery between processes can take seconds; a trial must not start half-connected)."""
        def missing() -> list[str]:
            with self._lock:
                return missing_matches(self.required, self._graph)
        try:
            self._wait(lambda: not missing(), timeout, "the graph to connect")
        except Sim2RealError as err:
            if self._stop.is_set():
                raise
            raise Sim2RealError(f"{err}; still missing: {', '.join(missing())}") from None

    def _on_fault(self, msg: String) -> None:
        self.hardware_fault = self.hardware_fault or self._abort_reason is None
        self.abort(f"the xArm stopped: {msg.data}")

    def abort(self, reason: str) -> None:
        """Stop the sequence with ``reason`` (the open trial is recorded as incomplete)."""
        if self._abort_reason is None:
            self._abort_reason = reason
        self._stop.set()

    def _wait(self, condition: Any, timeout: float, what: str, retry: Any = None, retry_every: float = 1.0) -> None:
        """Poll ``condition`` every 10 ms; call ``retry`` every ``retry_every`` s while it is false
        (re-sends a request a late subscriber may have missed)."""
        deadline = time.monotonic() + timeout
        next_retry = time.monotonic() + retry_every
        while not condition():
            if self._stop.is_set():
                raise Sim2RealError(self._abort_reason or "experiment stopped")
            now = time.monotonic()
            if now > deadline:
                raise Sim2RealError(f"timed out after {timeout:g} s waiting for {what}")
            if retry is not None and now >= next_retry:
                retry()
                next_retry = now + retry_every
            time.sleep(0.01)

    def _latest_joints(self, ns: str) -> tuple[int, np.ndarray, np.ndarray] | None:
        with self._lock:
            return self._joints.get(ns)

    def _recent_boxes(self, ns: str, count: int) -> list[tuple[int, np.ndarray, np.ndarray]]:
        with self._lock:
            return list(self._boxes[ns])[-count:]

    def _event(self, **data: Any) -> None:
        self._pub_event.publish(String(data=json.dumps(data)))

    def _stopping(self) -> bool:
        """The node is being closed, or ROS is gone (publishing would fail): end quietly."""
        return self._closing.is_set() or not self.context.ok()

    # --- sequence -------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._wait(lambda: all(self._latest_joints(ns) for ns in self.platforms), self.startup_timeout,
                       "joint states of every platform")
            self._wait_connected(self.startup_timeout)
            self._event(event="run", mode=self.mode, mirror=self.mirror, engine=self.engine,
                        distances_m=list(self.distances),
                        platforms=list(self.platforms), push=push_dict(self.push))
            for index, distance in enumerate(self.distances):
                self.results.append(self._trial(index, distance))
        except Exception as err:
            if self._stopping():  # Ctrl-C: the open trial was closed as incomplete (above or by the recorder)
                self.error = "interrupted"
            elif isinstance(err, Sim2RealError):
                self.error = str(err)
                self.exit_status = 1
                self.get_logger().error(f"experiment failed: {err}")
            else:
                raise
        finally:
            try:
                if not self._stopping():
                    self._event(event="done")
            finally:
                self.finished.set()

    def _home(self, reference: JointTrajectory) -> None:
        """Move the real arm to the first sample of ``reference`` (its trial's start pose); wait until it is still."""
        start = reference.position[0]
        _, q, _ = self._latest_joints("real")  # type: ignore[misc]
        move = return_trajectory(q, start, self.home_speed, self.push.rate_hz)
        self._pub_reference.publish(trajectory_msg(now_ns(self), move))

        def settled() -> bool:
            _, q_now, v_now = self._latest_joints("real")  # type: ignore[misc]
            return arm_settled(q_now, v_now, start, self.joint_tolerance)
        self._wait(settled, float(move.t[-1]) + 10.0, "the real arm to reach the start pose")

    def _place_real(self, requested: np.ndarray, turned: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Have the box placed at ``requested`` (3,) m turned to ``turned`` (4,) (w, x, y, z); its measured pose."""
        self._placed.clear()
        request = pose_msg(now_ns(self), requested, turned)
        self._pub_request.publish(request)
        requested_yaw = yaw_deg(turned)
        if self.confirm:
            turn = f", turned {requested_yaw:+.1f} deg about z" if abs(requested_yaw) > 1e-9 else ""
            self.progress(f"place the box at x = {requested[0]:.3f} m, y = {requested[1]:.3f} m{turn}, then call "
                          f"the service experiment/box_placed (std_srvs/Trigger)")
        asked_ns = now_ns(self)

        def at_start(sample: tuple[int, np.ndarray, np.ndarray]) -> bool:
            return (box_within(sample[1], requested, self.tolerance)
                    and box_yaw_off_deg(sample[2], turned) <= START_YAW_TOLERANCE_DEG)

        def placed() -> bool:
            if self.confirm and not self._placed.is_set():
                return False
            samples = [s for s in self._recent_boxes("real", 10) if s[0] > asked_ns]
            return len(samples) >= 5 and all(at_start(s) for s in samples[-5:])
        def ask_again() -> None:  # the request was lost or the box is off: place it again
            if not self.confirm and not placed():
                self._pub_request.publish(request)
        self._wait(placed, self.placement_timeout,
                   f"the box within {self.tolerance} m and {START_YAW_TOLERANCE_DEG:g} deg of its start",
                   retry=ask_again, retry_every=2.0)
        samples = self._recent_boxes("real", 5)
        position = np.mean([s[1] for s in samples], axis=0)
        return resting_pose(position, mean_heading(np.array([s[2] for s in samples])), self.params)

    def _hold_sim(self, q: np.ndarray) -> None:
        """Sim only: have the sim's PD controller hold ``q`` (6,) rad before the sim is reset there.

        Until it gets a new reference the controller tracks the last one, whose end is the last
        push's end: between the reset and the trial's reference it would drive the arm from the
        start into the newly placed box (a starved experiment thread let it push the second
        trial's box 3.8 mm before the trial's first sample). The hold is known to have arrived
        when a command carries ``q`` as its reference position.
        """
        with self._lock:
            self._sim_command = None
        hold = trajectory_msg(now_ns(self), return_trajectory(q, q, rate_hz=self.push.rate_hz))  # q to q: a hold
        self._pub_reference.publish(hold)

        def holding() -> bool:
            with self._lock:
                return self._sim_command is not None and bool(np.allclose(self._sim_command, q, rtol=0, atol=1e-9))
        self._wait(holding, 10.0, "the sim's PD controller to hold the start pose",
                   retry=lambda: self._pub_reference.publish(hold))

    def _reset_sim(self, q: np.ndarray, position: np.ndarray, quaternion: np.ndarray) -> None:
        asked_ns = now_ns(self)
        reset = String(data=json.dumps({
            "q": q.tolist(), "box_position": position.tolist(), "box_quaternion": quaternion.tolist()}))
        self._pub_reset.publish(reset)

        def ready() -> bool:
            boxes = [s for s in self._recent_boxes("sim", 3) if s[0] >= asked_ns]
            return bool(boxes) and box_within(boxes[-1][1], position, 1e-3)
        self._wait(ready, 10.0, "the sim to reset", retry=lambda: self._pub_reset.publish(reset))

    def _trial(self, index: int, distance: float) -> Path:
        self._wait_connected()
        requested, turned = requested_box_pose(distance, self.params, self.config.push_of(index).box_yaw_deg)
        reference = self.references[index]
        q_start = reference.position[0] if self.replay is None else self.replay.joints
        if "real" in self.platforms:
            self._home(reference)
            position, quaternion = self._place_real(requested, turned)
            q_start = self._latest_joints("real")[1]  # type: ignore[index]
        else:
            start = (requested, turned) if self.replay is None else self.replay.box_pose
            position, quaternion = resting_pose(*start, self.params)
        if "sim" in self.platforms:
            if "real" not in self.platforms:
                self._hold_sim(q_start)
            self._reset_sim(q_start, position, quaternion)
        window = TrialWindow.plan(index, distance, now_ns(self), reference, self.lead_time)
        meta = {"initial_distance_m": distance, "mode": self.mode, "mirror": self.mirror, "engine": self.engine,
                "requested_start_m": requested.tolist()}
        # The trial's own push goes into its trial.json (the recorder keeps it from the start event); a replay
        # plays a recorded reference, no push.
        push = None if self.replay is not None else push_dict(self.config.push_of(index))
        self._event(event="start", **window.as_dict(), push=push)
        try:
            self._pub_reference.publish(trajectory_msg(window.start_ns, reference))

            def past_end() -> bool:
                for ns in self.platforms:
                    joints = self._latest_joints(ns)
                    boxes = self._recent_boxes(ns, 1)
                    if joints is None or joints[0] < window.end_ns or not boxes or boxes[-1][0] < window.end_ns:
                        return False
                return True
            duration = (window.end_ns - now_ns(self)) / NS_PER_S
            self._wait(past_end, duration + 30.0, f"the end of trial {window.name}")
            time.sleep(0.2)  # let the last in-window messages reach the recorder
            if self._stop.is_set():  # e.g. a driver fault reported during the last 0.2 s
                raise Sim2RealError(self._abort_reason or "experiment stopped")
        except Sim2RealError as err:
            # Close the trial as incomplete: what was recorded stays readable, marked with the reason.
            self._event(event="end", trial=window.name, complete=False, meta={**meta, "note": str(err)})
            deadline = time.monotonic() + 5.0
            while window.name not in self._written and time.monotonic() < deadline and not self._stopping():
                time.sleep(0.01)
            raise
        self._event(event="end", trial=window.name, complete=True, meta=meta)
        self._wait(lambda: window.name in self._written, 30.0, f"the recorder to write {window.name}")
        path, problems = self._written[window.name]
        push_made = PushConfig() if self.replay is not None else self.config.push_of(index)
        self.progress(progress_line(window, len(self.distances), recorded_outcomes(path, self.platforms),
                                    lateral=push_made.lateral, box_yaw_deg=push_made.box_yaw_deg))
        if problems:
            self.progress(f"  {window.name} is recorded incomplete: {'; '.join(problems)}")
            self.incomplete.append(window.name)
        return path

    def close(self) -> None:
        """Stop the sequence and wait for the worker to end (at its next wait, within 10 ms), so
        that nothing publishes once the node is destroyed."""
        self._closing.set()
        if self._abort_reason is None:
            self._abort_reason = "interrupted: the experiment node was stopped"
        self._stop.set()
        if self._worker.is_alive() and self._worker is not threading.current_thread():
            self._worker.join(timeout=5.0)


def push_dict(push: PushConfig) -> dict[str, float]:
    """``push`` as the run event and trial.json carry it: ``{field: value}`` (m, m/s, s, Hz)."""
    return {f.name: float(getattr(push, f.name)) for f in fields(PushConfig)}


def plan_trials(arm: ArmModel, config: ExperimentConfig, table_height: float) -> tuple[JointTrajectory, ...]:
    """The reference of each trial of ``config`` (its own push, :meth:`ExperimentConfig.push_of`), equal pushes
    planned once.

    Parameters
    ----------
    arm : ArmModel
    config : ExperimentConfig
    table_height : float
        Table top height in the base frame (m).

    Returns
    -------
    tuple of JointTrajectory
        One per start distance, ``t`` from 0 s.
    """
    planned: dict[PushConfig, JointTrajectory] = {}
    for index in range(len(config.distances)):
        push = config.push_of(index)
        if push not in planned:
            planned[push] = plan_push(arm, push, table_height)
    return tuple(planned[config.push_of(index)] for index in range(len(config.distances)))


def main(args: list[str] | None = None) -> int:
    """Console script ``experiment``: exits when all trials are recorded (1 on failure)."""
    return run_node(lambda: ExperimentNode(progress=print), args, name="experiment", doc=__doc__,
                    sim_params=True, example="distances:=[0.30,0.45]")


if __name__ == "__main__":
    import sys

    sys.exit(main())

"""``ros2_control_arm`` against a stand-in ros2_control stack (``ros2_control_standin``) on loopback.

The stand-in is the emulated xArm (servo model, in process) behind a forward velocity controller on
``/<controller>/commands`` and a joint_state_broadcaster on ``/joint_states``; both list the joints in
a permuted order, and ``/joint_states`` carries one more joint. Checked: the PD commands reach the
controller in its joint order and equal the ``real/joint_command`` stream the mirrored sim gets; a
stall of ``/joint_states``, a non-finite state, a stalled loop and SIGINT each end with a zero command
at the controller, and nothing non-zero follows it (then silence). Orderings and message contents
only: no wall-clock timing is asserted.
"""

from __future__ import annotations

import gc
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from children import console_script, default_sigint
from loopback import REPORT_PORTS, free_host

from sim2real.nodes.common import JOINT_NAMES, LATCHED_QOS, REAL_FAULT_TOPIC, REFERENCE_TOPIC, STREAM_QOS
from sim2real.nodes.routes import DEFAULT_CONTROLLER

ROOT = Path(__file__).resolve().parents[2]
#: The controller's (and the broadcaster's) joint order: not joint1..joint6.
JOINTS = ["joint3", "joint1", "joint2", "joint6", "joint4", "joint5"]
ORDER = [JOINT_NAMES.index(j) for j in JOINTS]
COMMAND_PORT = 5077
#: ``state_timeout`` of the node under test (s): the stand-in shares this process (and its GIL) with the
#: node, the probe and pytest, and on a busy machine its /joint_states come 100+ ms apart now and then.
STATE_TIMEOUT = 0.5
#: A move of 0.1-0.15 rad on four joints from the start joints.
STEP = np.array([0.15, -0.1, 0.1, 0.0, 0.1, 0.0])
#: The stand-in arm's start joints (rad), the pusher 0.33 m above the table, every joint 0.6 rad or more from
#: its limits. The experiment's push start has joint 3 0.15 rad below its upper limit: when the node still
#: commanded from late states, a loaded machine carried the moves 0.2 rad past it, and every later test of
#: the module met an arm outside its limits (the node rightly refused it).
HOME = [0.0, -0.8013, -0.5, 0.0, 1.3, 0.0]


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


class Graph:
    """A private rclpy context with the stand-in stack and a probe node, each spun on its own thread."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.parameter import Parameter
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String
        from trajectory_msgs.msg import JointTrajectory

        from sim2real.nodes.ros2_control_standin import Ros2ControlStandinNode

        self.context = Context()
        rclpy.init(context=self.context)
        self.executors: list = []
        host = free_host((COMMAND_PORT, *REPORT_PORTS))
        self.standin = Ros2ControlStandinNode(context=self.context, parameter_overrides=[
            Parameter("host", value=host), Parameter("command_port", value=COMMAND_PORT),
            Parameter("joints", value=JOINTS), Parameter("extra_joints", value=["drive_joint"]),
            Parameter("initial_joints", value=HOME)])
        self.probe = rclpy.create_node("probe", context=self.context)
        self.reference = self.probe.create_publisher(JointTrajectory, REFERENCE_TOPIC, LATCHED_QOS)
        self.real_commands: list[np.ndarray] = []
        self.faults: list[str] = []
        self.probe.create_subscription(JointState, "real/joint_command",
                                       lambda m: self.real_commands.append(np.array(m.velocity)), STREAM_QOS)
        self.probe.create_subscription(String, REAL_FAULT_TOPIC, lambda m: self.faults.append(m.data), LATCHED_QOS)
        for node in (self.standin, self.probe):
            self.spin(node)
        self.home = self.standin.emulator.joint_positions()

    def spin(self, node) -> None:
        from rclpy.executors import SingleThreadedExecutor

        executor = SingleThreadedExecutor(context=self.context)
        executor.add_node(node)
        threading.Thread(target=executor.spin, daemon=True).start()
        self.executors.append(executor)

    def bridge(self, **parameters):
        from rclpy.parameter import Parameter

        from sim2real.nodes.ros2_control_arm import Ros2ControlArmNode

        parameters = {"state_timeout": STATE_TIMEOUT, **parameters}
        node = Ros2ControlArmNode(context=self.context, parameter_overrides=[
            Parameter("joints", value=JOINTS), *(Parameter(k, value=v) for k, v in parameters.items())])
        self.spin(node)
        return node

    def move(self, hold: float = 0.3) -> tuple[np.ndarray, float]:
        """Publish a smooth move from the arm's joints now to the start joints plus :data:`STEP`, or
        back to the start joints when it is there already (the moves stay within the joint limits);
        return the target and the move's duration (s)."""
        from sim2real.nodes.common import now_ns, trajectory_msg
        from sim2real.trials.experiment import return_trajectory

        q0 = self.standin.emulator.joint_positions()
        target = self.home + STEP if np.max(np.abs(q0 - self.home - STEP)) > 0.05 else self.home
        reference = return_trajectory(q0, target, 0.5, 100.0, hold=hold)
        self.reference.publish(trajectory_msg(now_ns(self.probe) + 100_000_000, reference))
        return target, float(reference.t[-1]) + 0.1

    def close(self) -> None:
        import rclpy

        for executor in self.executors:
            executor.shutdown(timeout_sec=2.0)
        self.standin.close()
        rclpy.try_shutdown(context=self.context)


@pytest.fixture(scope="module")
def graph(ros_env) -> Iterator[Graph]:
    """The stack at the scheduling priority a run gives it (``sim2real run`` raises it for a real platform;
    threads and child processes started from here inherit it). At normal priority beside 4 CPU-bound
    processes the stand-in's ``/joint_states`` stopped for 1.1 s and the bridge rightly stopped the arm
    (make test, 2026-11-28). The heap pytest built before this module is frozen, as a node process freezes
    its own (:func:`~sim2real.nodes.process.freeze_heap`): the stack shares this process and its GIL with
    pytest, and a full collection of that heap took 131 ms after only two other node modules had run
    (2026-11-29), more later in the suite: a plausible cause of a gap seen once on an idle machine (no
    ``/joint_states`` for 0.5 s, and the bridge stopped on stale states)."""
    from sim2real.nodes.priority import raise_run_priority
    from sim2real.nodes.process import freeze_heap

    priority = raise_run_priority()
    freeze_heap()
    try:
        graph = Graph()
        try:
            yield graph
        finally:
            graph.close()
    finally:
        gc.unfreeze()
        priority.restore()


def nonzero(command: np.ndarray) -> bool:
    return bool(np.any(np.asarray(command) != 0.0))


def check_stopped(commands: list[np.ndarray], stop_index: int | None) -> None:
    """The stop's first command (``commands[stop_index]``) is zero, and so is every one after it.
    (A zero before it may be the watchdog's, followed by fresh commands: that is allowed.)"""
    assert stop_index is not None and stop_index < len(commands), "the stop never reached the controller"
    assert not any(nonzero(c) for c in commands[stop_index:]), "a non-zero command followed the stop"


def check_final_stop(commands: list[np.ndarray], rate_hz: float = 100.0, stop_duration: float = 0.5) -> None:
    """Seen from outside the node: the stream ends with the zero stream of the stop (more than a
    lone watchdog zero), so nothing non-zero came after it."""
    tail = 0
    while tail < len(commands) and not nonzero(commands[-1 - tail]):
        tail += 1
    assert tail >= 5, f"the commands end with {tail} zeros, not a stop stream (~{rate_hz * stop_duration:.0f})"


def check_silence(graph: Graph, bridge, first: int) -> None:
    """After the zero stream the node publishes nothing more, and the controller (whose commands from
    index ``first`` on are this node's) receives what it published and nothing else. Counted, not timed:
    on a busy machine the stream's last messages reached the controller more than 0.3 s after it ended."""
    assert bridge.stopped.is_set()
    published = bridge.published
    wait_for(lambda: len(graph.standin.commands()) - first >= published, 10.0, "the stop stream")
    time.sleep(0.3)
    assert bridge.published == published
    assert len(graph.standin.commands()) - first == published


def quiet(graph: Graph) -> int:
    """Wait until nothing more reaches the controller (the last node's stop has arrived); the count."""
    count = -1
    while count != len(graph.standin.commands()):
        count = len(graph.standin.commands())
        time.sleep(0.2)
    return count


#: Starts of a moving bridge before a test gives up: a start whose ``/joint_states`` went stale before the test
#: injected anything (this process, which spins the stand-in, the probe and the bridge, got no CPU for
#: half a second: seen once beside 4 CPU-bound processes, a 1.1 s gap) is a correct stop of the bridge
#: that leaves nothing to test; the test then starts a new bridge. Any other fault fails at once.
START_ATTEMPTS = 3


def starved_start(fault: str | None) -> bool:
    """Whether a fault is the test graph's starvation (stale states before the injected fault took
    effect), not a finding."""
    return fault is not None and fault.startswith("/joint_states stale")


def moving_bridge(graph: Graph, **parameters) -> tuple[object, int]:
    """A new bridge whose non-zero commands reach the controller, without a fault; and the index of its first
    command at the controller. Starts again (at most :data:`START_ATTEMPTS` in all) after a start that a
    starved test graph stopped (:func:`starved_start`); the stops of those starts are checked like any other."""
    spoiled: list[str] = []
    for _ in range(START_ATTEMPTS):
        first = quiet(graph)
        bridge = graph.bridge(**parameters)
        graph.move(hold=5.0)
        wait_for(lambda first=first, bridge=bridge: any(nonzero(c) for c in graph.standin.commands()[first:])
                 or bridge.fault is not None, 20.0, "moving commands")
        if bridge.fault is None:
            return bridge, first
        fault = bridge.fault
        bridge.close()
        assert starved_start(fault), fault
        quiet(graph)
        check_stopped(graph.standin.commands()[first:], bridge.stop_index)
        spoiled.append(fault)
    pytest.fail(f"every one of {START_ATTEMPTS} starts was stopped by a starved test graph: {spoiled}")


def test_commands_reach_the_controller_in_its_order_and_equal_the_mirrored_stream(graph):
    """The arm reaches the reference (the joints were matched by name both ways), and what the
    controller received is, command for command, ``real/joint_command`` (the stream ``--mirror
    commands`` forwards to the sim) in the controller's joint order; beside it only zeros (the
    watchdog's, if the loop was ever late, and the stop's)."""
    first = quiet(graph)
    mirrored_first = len(graph.real_commands)
    bridge = graph.bridge()
    try:
        wait_for(lambda: bridge._pub_controller.get_subscription_count() > 0, 20.0, "the controller to match")
        target, duration = graph.move()
        wait_for(lambda: float(np.max(np.abs(graph.standin.emulator.joint_positions() - target))) < 2e-3,
                 duration + 30.0, "the arm to reach the target")
        assert bridge.fault is None and graph.standin.refused == 0
    finally:
        bridge.close()
    quiet(graph)
    received = graph.standin.commands()[first:]
    assert len(received) == bridge.published
    wait_for(lambda: len(graph.real_commands) - mirrored_first >= bridge.commands_sent, 10.0, "real/joint_command")
    mirrored = [c[ORDER] for c in graph.real_commands[mirrored_first:]]
    assert len(mirrored) == bridge.commands_sent
    moving = [c for c in received if nonzero(c)]
    # How many commands the move took depends on how often the loop ran (fewer ticks on a busy machine:
    # 20 beside 4 CPU-bound processes, fresh clone fc72); what is checked is that each one arrived as sent.
    assert len(moving) >= 2
    assert len(moving) == len([c for c in mirrored if nonzero(c)])
    for at_controller, on_topic in zip(moving, [c for c in mirrored if nonzero(c)], strict=True):
        np.testing.assert_array_equal(at_controller, on_topic)
    check_stopped(received, bridge.stop_index)


def test_a_stall_of_joint_states_stops_the_arm(graph):
    bridge, first = moving_bridge(graph)
    try:
        states, commands = bridge.states_received, bridge.commands_sent
        graph.standin.pause_joint_states()
        wait_for(bridge.stopped.is_set, 10.0, "the stop")
        assert "stale" in bridge.fault
        # No state, no command: the loop did not go on commanding from the last state (open loop). One
        # more than the states since the pause: the newest state before it may not have been acted on yet.
        assert bridge.commands_sent - commands <= bridge.states_received - states + 1
        wait_for(lambda: any("stale" in f for f in graph.faults), 5.0, "real/fault")
        check_stopped(graph.standin.commands()[first:], bridge.stop_index)
        check_silence(graph, bridge, first)
    finally:
        graph.standin.pause_joint_states(False)
        bridge.close()


def test_a_failed_reading_is_a_fault_that_stops_the_arm(graph):
    """A non-finite joint state stops the arm as a fault of its own. A stop on stale states instead is
    the starved test graph's (:func:`starved_start`; seen once on an idle machine: this process sent no
    state for 0.5 s just after the bridge started moving): it is checked like any stop and the case is
    run again; a bridge that dropped bad readings without a fault would go stale every time and fail."""
    faults = []
    for _ in range(START_ATTEMPTS):
        bridge, first = moving_bridge(graph)
        try:
            graph.standin.corrupt_joint_states()
            wait_for(bridge.stopped.is_set, 10.0, "the stop")
            check_stopped(graph.standin.commands()[first:], bridge.stop_index)
            check_silence(graph, bridge, first)
        finally:
            graph.standin.corrupt_joint_states(False)
            bridge.close()
        faults.append(bridge.fault)
        if not starved_start(bridge.fault):
            break
    assert "not finite" in faults[-1], faults


def test_a_stalled_loop_gets_zeros_from_the_watchdog(graph):
    bridge, first = moving_bridge(graph)
    try:
        # Counted before the stall: on a busy machine the watchdog can trip between any two lines here. It
        # trips once per moving stream (after a non-zero command); a trip just before the stall, with no
        # fresh command since, has already zeroed the stream, and no second trip follows.
        stalled, trips = bridge.published, bridge.watchdog_trips
        bridge._tick = lambda: time.sleep(0.05)  # the loop runs on, but computes no command any more
        wait_for(lambda: bridge.watchdog_trips > trips or not bridge._last_nonzero, 10.0, "the watchdog")
        assert bridge.fault is None and bridge.watchdog_trips >= 1
        wait_for(lambda: len(graph.standin.commands()) >= first + bridge.published, 5.0, "the watchdog's zero")
        received = graph.standin.commands()[first:first + bridge.published]
        assert received and not nonzero(received[-1])  # the arm's last command: zero
        assert not any(nonzero(c) for c in received[stalled + 1:])  # nothing moved it after the stall began
    finally:
        bridge.close()


def _bridge_process(ros_env: dict[str, str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([*console_script("ros2_control_arm"), "--ros-args", "-p", f"joints:={JOINTS}",
                             "-p", f"state_timeout:={STATE_TIMEOUT}"],
                            env={**ros_env, "PYTHONPATH": str(ROOT)}, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, preexec_fn=default_sigint)


def _interrupt(process: subprocess.Popen) -> None:
    """Ctrl-C to ``process``; it must exit 0 (its output's tail is the message otherwise)."""
    try:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
        assert process.returncode == 0, output[-3000:]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_sigint_stops_the_arm_through_the_stack(graph, ros_env, tmp_path):
    """The node in its own process, stopped with Ctrl-C while the arm moves: zeros reach the
    controller, nothing non-zero after them, and the process exits 0. A start that the starved test graph
    stopped (:func:`starved_start`, seen on ``real/fault``) is interrupted the same way and started again."""
    for attempt in range(START_ATTEMPTS):
        first, faults = quiet(graph), len(graph.faults)
        process = _bridge_process(ros_env, tmp_path)
        try:
            graph.move(hold=20.0)
            wait_for(lambda first=first, faults=faults: sum(nonzero(c) for c in graph.standin.commands()[first:])
                     >= 10 or len(graph.faults) > faults, 60.0, "moving commands")
            moving = len(graph.standin.commands())
        except BaseException:
            process.kill()
            process.wait()
            raise
        _interrupt(process)
        if len(graph.faults) == faults:
            break
        assert all(starved_start(fault) for fault in graph.faults[faults:]), graph.faults[faults:]
        assert attempt + 1 < START_ATTEMPTS, f"every start was stopped by a starved test graph: {graph.faults}"
    wait_for(lambda: len(graph.standin.commands()) > moving, 5.0, "the stop stream")
    time.sleep(0.2)  # the last messages in flight
    check_final_stop(graph.standin.commands()[first:])


def test_the_default_controller_is_the_one_the_lab_config_declares():
    """config/ros2_control_xarm6.yaml (for the lab's controller_manager) declares the route's default
    controller as a JointGroupVelocityController on joint1..joint6."""
    import yaml

    config = yaml.safe_load((ROOT / "config" / "ros2_control_xarm6.yaml").read_text())
    manager = config["controller_manager"]["ros__parameters"]
    assert manager[DEFAULT_CONTROLLER]["type"] == "velocity_controllers/JointGroupVelocityController"
    assert config[DEFAULT_CONTROLLER]["ros__parameters"]["joints"] == list(JOINT_NAMES)

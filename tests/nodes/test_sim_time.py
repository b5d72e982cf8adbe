"""The sim platform on sim time: a recorded trial played into ``sim_node`` as ``ros2 bag play --clock`` does.

A simulated standard trial is written as a bag; its ``/sim/joint_command`` messages are published
as recorded (the serialized bytes, in log-time order), each after a ``/clock`` message with the
play time, into a ``sim_node`` with ``use_sim_time`` and ``mirror: commands``, reset to the recorded
start. The player advances ``/clock`` one control period at a time and waits for the sim's step
before the next (``ros2 bag play --rate`` slowed down to the sim's pace). The sim's trial then ends
where the offline replay (``sim2real replay``'s commands mode) ends. Orderings and contents only.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from rosbags.rosbag2 import Reader

from sim2real.params import ParameterSet
from sim2real.sysid.prediction.replay import replay
from sim2real.sysid.prediction.standard_trial import run_standard_trial
from sim2real.trials import PoseSeries, compute_outcome, read_trial, write_trial

NS_PER_S = 1_000_000_000


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.002)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A simulated standard trial as a bag, and the nominal parameters it was made with."""
    params = ParameterSet.nominal()
    trial = run_standard_trial(0.30, params)
    path = write_trial(tmp_path_factory.mktemp("recorded"), trial.record())
    return read_trial(path), path, params


@pytest.fixture(scope="module")
def played(ros_env, recorded) -> Iterator[dict]:
    """Play the trial's commands with /clock into a sim_node on sim time; what the sim published."""
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String

    from sim2real.nodes.common import SIM_RESET_TOPIC, STREAM_QOS, ns_of, pose_arrays, time_msg
    from sim2real.nodes.sim_node import SimNode

    record, path, params = recorded
    with Reader(path) as reader:
        connections = [c for c in reader.connections if c.topic == "/sim/joint_command"]
        commands = [(t, bytes(raw)) for _, t, raw in reader.messages(connections=connections)]
    context = Context()
    rclpy.init(context=context)
    sim = SimNode(context=context, parameter_overrides=[
        Parameter("use_sim_time", value=True), Parameter("mirror", value="commands"),
        *(Parameter(name, value=value) for name, value in params.as_dict().items())])
    player = rclpy.create_node("player", context=context)
    clock = player.create_publisher(Clock, "/clock", 10)
    command_pub = player.create_publisher(JointState, "sim/joint_command", STREAM_QOS)
    reset_pub = player.create_publisher(String, SIM_RESET_TOPIC, STREAM_QOS)
    boxes: list[tuple[int, np.ndarray, np.ndarray]] = []
    player.create_subscription(PoseStamped, "sim/box_pose",
                               lambda m: boxes.append((ns_of(m.header.stamp), *pose_arrays(m))), STREAM_QOS)
    executors = []
    for node in (sim, player):
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        threading.Thread(target=executor.spin, daemon=True).start()
        executors.append(executor)
    try:
        wait_for(lambda: command_pub.get_subscription_count() > 0 and reset_pub.get_subscription_count() > 0
                 and clock.get_subscription_count() > 0, 20.0, "the sim to subscribe")
        dt_ns = round(float(params["sim.dt"]) * NS_PER_S)
        now = commands[0][0]  # the play time: the first command's log time
        clock.publish(Clock(clock=time_msg(now)))
        wait_for(lambda: sim.get_clock().now().nanoseconds == now, 10.0, "the sim to follow /clock")
        joints = record.platforms["sim"].joint_states
        box = record.platforms["sim"].box_pose
        reset = {"q": joints.position[0].tolist(), "box_position": box.position[0].tolist(),
                 "box_quaternion": box.quaternion[0].tolist()}
        reset_pub.publish(String(data=json.dumps(reset)))
        wait_for(lambda: sim.epoch_ns == now and sim.platform.k == 0 and boxes and boxes[-1][0] == now, 10.0,
                 "the reset")
        base, idle = sim.steps, sim.idle_steps  # the clock's first jump may have stepped the sim before the reset
        for k, (_, raw) in enumerate(commands):
            command_pub.publish(raw)  # the recorded bytes, as the player sends them
            wait_for(lambda: len(sim._queue) > 0, 10.0, f"command {k}")
            now += dt_ns
            clock.publish(Clock(clock=time_msg(now)))
            wait_for(lambda k=k: sim.steps == base + k + 1, 10.0, f"step {k + 1}")
        wait_for(lambda: boxes[-1][0] == now, 10.0, "the last box pose")
        yield {"boxes": list(boxes), "steps": sim.steps - base, "idle_steps": sim.idle_steps - idle,
               "epoch": sim.epoch_ns, "commands": len(commands), "dt_ns": dt_ns}
    finally:
        for executor in executors:
            executor.shutdown(timeout_sec=2.0)
        sim.destroy_node()
        player.destroy_node()
        rclpy.try_shutdown(context=context)


def test_the_sim_steps_on_the_played_clock(played):
    """One step per played command, none on its own (no wall-clock watchdog steps), each box pose
    stamped on the played clock."""
    assert played["steps"] == played["commands"] and played["idle_steps"] == 0
    stamps = [b[0] for b in played["boxes"] if b[0] >= played["epoch"]]
    assert stamps == [played["epoch"] + k * played["dt_ns"] for k in range(played["steps"] + 1)]


def test_the_sim_time_replay_ends_as_the_offline_replay(played, recorded):
    record, _, params = recorded
    offline = replay(record, params, mode="commands", platform="sim").record.platforms["sim"].box_pose
    live = [b for b in played["boxes"] if b[0] >= played["epoch"]]
    n = min(len(live), len(offline.t))
    live_position = np.array([b[1] for b in live[:n]])
    live_quaternion = np.array([b[2] for b in live[:n]])
    np.testing.assert_allclose(live_position, offline.position[:n], rtol=0, atol=1e-6)
    np.testing.assert_allclose(np.abs(np.sum(live_quaternion * offline.quaternion[:n], axis=1)), 1.0, atol=1e-9)
    size = np.array([params[f"box.size_{a}"] for a in "xyz"])
    t = np.arange(n) * float(params["sim.dt"])
    ours = compute_outcome(PoseSeries(t, live_position, live_quaternion), size)
    theirs = compute_outcome(PoseSeries(t, offline.position[:n], offline.quaternion[:n]), size)
    assert ours.flipped == theirs.flipped
    assert abs(ours.final_distance_m - theirs.final_distance_m) < 1e-6

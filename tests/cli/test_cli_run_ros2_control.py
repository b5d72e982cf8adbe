"""``sim2real run --via ros2_control``: the real platform through a lab's ros2_control stack.

End to end with ``--mode standin`` (the stand-in world behind a stand-in ros2_control stack, its
emulated xArm on loopback), ``--mirror commands`` and ``--namespace lab`` (the run's nodes under
``/lab``, the lab's ``/joint_states`` and ``/<controller>/commands`` absolute): a probe in this
process listens on the controller's topic, the mirrored sim's ``/lab/sim/joint_command``,
``/lab/robot_description`` and ``/lab/live/joint_states`` while the run records a trial; every TCP
or UDP peer of the run's processes is read from ``/proc`` meanwhile, and a WebSocket client speaking
the Foxglove WebSocket protocol (``foxglove.websocket.v1``; foxglove-sdk negotiates it under the name
``foxglove.sdk.v1``) subscribes to every channel of the run's ``--live`` server and decodes the
messages with the schemas the server advertises. Bad input is one line and status 2.
"""

from __future__ import annotations

import base64
import contextlib
import ipaddress
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import standin_runs
from children import default_sigint
from loopback import free_host

from sim2real.nodes.routes import DEFAULT_CONTROLLER
from sim2real.trials import read_run

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENT = """\
experiment:
  ros__parameters:
    distances: [0.30]
    start_tolerance: 0.01
    push: {height: 0.15, lateral: 0.0, start_x: 0.20, end_x: 0.42, speed: 0.2, ramp_time: 0.2,
           pre_time: 0.1, settle_time: 0.3, rate_hz: 100.0}
"""
TABLES = ("tcp", "tcp6", "udp", "udp6")
NAMESPACE = "lab"

#: Fewest messages of each recorded stream of the trial (see the test that uses it).
MIN_MESSAGES = 20


def sim2real(*args: str, env: dict, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "sim2real", *args], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint, **kwargs)


@pytest.mark.parametrize("args, message", [
    (["--mode", "real", "--via", "ros2_control", "--robot-ip", "192.0.2.10"], "--via sdk only"),
    (["--mode", "sim", "--via", "ros2_control"], "--mode sim has none"),
    (["--mode", "standin", "--controller", "fwd"], "--via ros2_control only"),
    (["--mode", "standin", "--via", "ros2_control", "--controller-joints", "joint1,joint2"], "six distinct"),
    (["--mode", "standin", "--namespace", "1lab"], "--namespace must be a ROS 2 name"),
    (["--mode", "standin", "--live", "localhost:8765"], "--live must be HOST:PORT"),
])
def test_bad_route_input_is_one_line_and_status_2(tmp_path, args, message):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = sim2real("run", *args, "--out", str(tmp_path / "run"), env=env)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2, err
    assert err.strip().count("\n") == 0 and message in err and err.startswith("sim2real: error:")


def _peer(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The address of ``0100007F:1B58`` (or the IPv6 form) as /proc/net prints it."""
    raw = bytes.fromhex(text.split(":")[0])
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(raw)
    return getattr(address, "ipv4_mapped", None) or address


def remote_addresses(pid: int) -> set[str]:
    """Remote addresses of every TCP/UDP socket of process ``pid`` (unconnected ones show 0.0.0.0 / ::)."""
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[len("socket:["):-1])
    found = set()
    for table in TABLES:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                fields = line.split()
                if fields[9] in inodes:
                    found.add(str(_peer(fields[2])))
    return found


def process_tree(pid: int) -> list[int]:
    tree, queue = [], [pid]
    while queue:
        current = queue.pop()
        tree.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            with contextlib.suppress(OSError):
                queue += [int(child) for child in (task / "children").read_text().split()]
    return tree


class Probe:
    """Subscriptions of this process to the run's graph, spun on a thread."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray, String

        from sim2real.nodes.common import STREAM_QOS

        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node("probe", context=self.context)
        self.controller: list[np.ndarray] = []
        self.sim: list[np.ndarray] = []
        self.descriptions: list[str] = []
        self.live_names: set[str] = set()
        self.node.create_subscription(Float64MultiArray, f"/{DEFAULT_CONTROLLER}/commands",
                                      lambda m: self.controller.append(np.array(m.data)), 1000)
        self.node.create_subscription(JointState, f"/{NAMESPACE}/sim/joint_command",
                                      lambda m: self.sim.append(np.array(m.velocity)), STREAM_QOS)
        self.node.create_subscription(JointState, f"/{NAMESPACE}/live/joint_states",
                                      lambda m: self.live_names.update(m.name), STREAM_QOS)
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.node.create_subscription(String, f"/{NAMESPACE}/robot_description",
                                      lambda m: self.descriptions.append(m.data), latched)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        threading.Thread(target=self.executor.spin, daemon=True).start()

    def close(self) -> None:
        import rclpy

        self.executor.shutdown(timeout_sec=2.0)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


#: The WebSocket subprotocols the client offers: the Foxglove WebSocket protocol under its first name
#: and under the name foxglove-sdk servers negotiate (the same serverInfo / advertise / subscribe
#: operations and binary message-data frames).
SUBPROTOCOLS = ["foxglove.websocket.v1", "foxglove.sdk.v1"]


class FoxgloveClient:
    """A Foxglove WebSocket protocol client on a thread: connects (retrying until the server is up),
    subscribes to every advertised channel and decodes each message with its channel's protobuf schema."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.channels: dict[int, dict] = {}
        self.messages: dict[str, list] = {}
        self.error: str | None = None
        self.subprotocol: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _decoder(self, channel: dict):
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

        assert channel["encoding"] == "protobuf" and channel["schemaEncoding"] == "protobuf"
        files = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(channel["schema"]))
        pool = descriptor_pool.DescriptorPool()
        for file in files.file:
            pool.Add(file)
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(channel["schemaName"]))

    def _run(self) -> None:
        from websockets.exceptions import ConnectionClosed
        from websockets.sync.client import connect

        while not self._stop.is_set():
            try:
                websocket = connect(self.uri, subprotocols=SUBPROTOCOLS, open_timeout=2)
            except OSError:
                time.sleep(0.2)
                continue
            break
        else:
            return
        decoders, subscriptions = {}, {}
        self.subprotocol = websocket.subprotocol
        try:
            with websocket:
                while not self._stop.is_set():
                    try:
                        frame = websocket.recv(timeout=0.5)
                    except TimeoutError:
                        continue
                    if isinstance(frame, str):
                        message = json.loads(frame)
                        if message["op"] == "advertise":
                            new = []
                            for channel in message["channels"]:
                                self.channels[channel["id"]] = channel
                                decoders[channel["id"]] = self._decoder(channel)
                                subscriptions[len(subscriptions) + 1] = channel["id"]
                                new.append({"id": len(subscriptions), "channelId": channel["id"]})
                            websocket.send(json.dumps({"op": "subscribe", "subscriptions": new}))
                        continue
                    if frame[0] != 0x01:  # message data: u8 opcode, u32 subscription, u64 time, payload
                        continue
                    subscription = struct.unpack_from("<I", frame, 1)[0]
                    channel = subscriptions[subscription]
                    decoded = decoders[channel].FromString(frame[13:])
                    self.messages.setdefault(self.channels[channel]["topic"], []).append(decoded)
        except ConnectionClosed:
            pass
        except Exception as err:  # reported by the test
            self.error = f"{type(err).__name__}: {err}"

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def free_address() -> tuple[str, int]:
    host = free_host()
    with socket.socket() as probe:
        probe.bind((host, 0))
        return host, probe.getsockname()[1]


def _run_once(out: Path, experiment: Path, env: dict) -> tuple[subprocess.Popen, str, str, Probe, set[str],
                                                                  FoxgloveClient]:
    """One ``sim2real run`` with the probe and the Foxglove client listening and the peers read meanwhile."""
    probe = Probe()
    host, port = free_address()
    foxglove = FoxgloveClient(f"ws://{host}:{port}")
    peers: set[str] = set()
    process = sim2real("run", "--mode", "standin", "--via", "ros2_control", "--mirror", "commands",
                       "--namespace", NAMESPACE, "--experiment", str(experiment), "--standin-host", free_host(),
                       "--live", f"{host}:{port}", "--timeout", "200", "--out", str(out), env=env)
    try:
        while process.poll() is None:
            for pid in process_tree(process.pid):
                peers |= remote_addresses(pid)
            time.sleep(0.2)
        stdout, stderr = process.communicate(timeout=30)
        time.sleep(0.5)  # the last messages in flight to the probe
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=20)
            if process.poll() is None:
                process.kill()
                process.wait()
        probe.close()
        foxglove.close()
    return process, stdout, stderr, probe, peers, foxglove


@pytest.fixture(scope="module")
def ros2_control_run(ros_env, tmp_path_factory):
    """The run's output directory and stdout, what the probe saw, and the peers of the run's processes.

    Exit 0, or 3 when a busy machine starved a control loop (run names each such trial: STARVED); a run
    whose starved loop also cut a stream (INCOMPLETE) is made again (:mod:`standin_runs`)."""
    tmp = tmp_path_factory.mktemp("ros2_control")
    experiment = tmp / "experiment.yaml"
    experiment.write_text(EXPERIMENT)
    env = {**ros_env, "PYTHONPATH": str(ROOT)}
    out, (process, stdout, stderr, probe, peers, foxglove) = standin_runs.until_recorded(
        lambda number: (tmp / f"run{number}", _run_once(tmp / f"run{number}", experiment, env)),
        lambda run: (run[1][0].returncode, run[1][1], run[1][2]))
    assert standin_runs.recorded(process.returncode, stdout), (process.returncode, stdout[-2000:], stderr[-3000:])
    return out, stdout, probe, peers, foxglove


def nonzero(command: np.ndarray) -> bool:
    return bool(np.any(command != 0.0))


def test_the_trial_is_recorded_with_both_platforms(ros2_control_run):
    out, stdout, *_ = ros2_control_run
    (record,) = read_run(out)
    assert record.complete and record.meta["mirror"] == "commands" and "1 trial(s) recorded" in stdout
    for platform in ("real", "sim"):
        data = record.platforms[platform]
        # Complete means every stream covered the window without a hole over 0.25 s; how many messages
        # came is the machine's load (42 stand-in mocap poses once, in a fresh clone's suite), so the
        # floor only keeps the recording from being vacuous (a 12 Hz stream over the 1.7 s trial).
        assert min(len(data.joint_states), len(data.joint_command), len(data.box_pose)) >= MIN_MESSAGES, platform


def in_order_matches(heard: list[bytes], sent: list[bytes]) -> list[tuple[int, int]]:
    """A longest common subsequence of ``heard`` and ``sent``: its index pairs (into ``heard``, into
    ``sent``), ascending."""
    n, m = len(heard), len(sent)
    length = np.zeros((n + 1, m + 1), dtype=np.int32)
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            length[i, j] = (length[i + 1, j + 1] + 1 if heard[i] == sent[j]
                            else max(length[i + 1, j], length[i, j + 1]))
    matched, i, j = [], 0, 0
    while i < n and j < m:
        if heard[i] == sent[j]:
            matched.append((i, j))
            i, j = i + 1, j + 1
        elif length[i + 1, j] >= length[i, j + 1]:
            i += 1
        else:
            j += 1
    return matched


def test_in_order_matches_skips_what_the_other_stream_lacks():
    assert in_order_matches([b"a", b"x", b"b", b"c"], [b"a", b"b", b"b", b"c"]) == [(0, 0), (2, 1), (3, 3)]
    # A late command equal to an earlier one (an arm at rest) is not taken for the stream's continuation.
    assert in_order_matches([b"h", b"a", b"b", b"h"], [b"h", b"a", b"b"]) == [(0, 0), (1, 1), (2, 2)]


def test_the_controller_topic_carries_the_mirrored_sims_command_stream(ros2_control_run):
    """Command for command, what the lab's controller received is what the mirrored sim received
    (``--mirror commands``), in the same order, over the whole stretch the probe heard both.

    Each subscription is matched to its publisher by discovery on its own schedule (seconds apart
    on a busy machine), and the sim process is stopped first at the end, so the comparison covers
    the commands between the first and the last one heard on both topics (a longest in-order match:
    a command of an arm at rest can repeat an earlier one exactly, and must not stretch the overlap).
    The controller's topic has the lab's QoS (reliable, keep last 10, what forward_command_controller
    subscribes with): a reader that falls more than 10 commands behind loses the oldest, so the probe
    may miss some of them on a busy machine; each one it did hear inside the overlap must be the
    sim's, in the sim's order."""
    probe = ros2_control_run[2]
    controller = [c.tobytes() for c in probe.controller if nonzero(c)]
    sim = [c.tobytes() for c in probe.sim if nonzero(c)]
    assert len(sim) > 100 and len(controller) > 100
    matches = in_order_matches(controller, sim)
    assert matches, "no command of the sim's stream is on the controller's topic"
    matched = [k for k, _ in matches]
    overlap = range(matched[0], matched[-1] + 1)
    missing = sorted(set(overlap) - set(matched))
    assert not missing, (f"{len(missing)} of the {len(overlap)} commands on the controller's topic between the first "
                         f"and the last the sim also got were never sent to the sim in that order (first: "
                         f"{missing[0]})")
    span = matches[-1][1] - matches[0][1] + 1
    assert len(matched) > 100 and len(matched) >= span // 2, f"the probe heard {len(matched)} of {span} commands"


def test_the_run_ends_with_the_arm_stopped_through_the_stack(ros2_control_run):
    commands = ros2_control_run[2].controller
    last_moving = max(k for k, c in enumerate(commands) if nonzero(c))
    assert last_moving < len(commands) - 1 and not nonzero(commands[-1])


def test_a_viewer_gets_the_latched_description_and_live_joint_states(ros2_control_run):
    probe = ros2_control_run[2]
    assert probe.descriptions, "no robot_description received"
    links = {link.get("name") for link in ET.fromstring(probe.descriptions[-1].split("?>", 1)[1]).iter("link")}
    assert {"real/link1", "sim/link6", "link_base"} <= links
    assert {f"{ns}/joint{k}" for ns in ("real", "sim") for k in range(1, 7)} <= probe.live_names


def test_nothing_connects_beyond_loopback(ros2_control_run):
    peers = ros2_control_run[3]
    assert peers, "no socket of the run was read"
    assert all(ipaddress.ip_address(p).is_loopback or ipaddress.ip_address(p).is_unspecified for p in peers), peers


def test_foxglove_sees_both_platforms_live(ros2_control_run):
    client = ros2_control_run[4]
    assert client.error is None, client.error
    assert client.subprotocol in SUBPROTOCOLS
    topics = {c["topic"]: c["schemaName"] for c in client.channels.values()}
    assert topics["/tf"] == "foxglove.FrameTransforms" and topics["/scene"] == "foxglove.SceneUpdate"
    for ns in ("real", "sim"):
        assert topics[f"/{ns}/joint_states"] == "foxglove.JointStates"
        assert topics[f"/{ns}/box_pose"] == topics[f"/{ns}/pusher_pose"] == "foxglove.PoseInFrame"
        joints = client.messages[f"/{ns}/joint_states"]
        assert len(joints) > 50 and [j.name for j in joints[-1].joints] == [f"joint{k}" for k in range(1, 7)]
        boxes = client.messages[f"/{ns}/box_pose"]
        assert len(boxes) > 50 and boxes[-1].frame_id == "link_base"
        assert 0.2 < boxes[-1].pose.position.x < 0.8  # the box, in the arm base frame (m)
        assert client.messages[f"/{ns}/pusher_pose"]
    children = {t.child_frame_id for m in client.messages["/tf"] for t in m.transforms}
    assert {f"{ns}/{link}" for ns in ("real", "sim") for link in ("link1", "link6", "pusher", "box")} <= children
    entities = {e.id for m in client.messages["/scene"] for e in m.entities}
    assert entities == {"real/box", "real/pusher", "sim/box", "sim/pusher"}

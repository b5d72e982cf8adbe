"""``standin_world``: reality for runs without hardware (emulated xArm + box world + mocap).

Starts an :class:`~sim2real.hardware.XArmEmulator` on ``host:command_port`` (loopback only;
``xarm_node`` reaches it through the real SDK) whose servo uses the stand-in's
``arm.servo_tau`` and ``arm.command_delay``, and a
:class:`~sim2real.hardware.standin.StandinWorld` with the stand-in's hidden parameters,
driven by the emulator's true joint angles. A worker thread steps the world behind the
emulator's ticks; each stepped pose goes through the :class:`MocapModel` (noise, latency,
rate) and is published on ``real/box_pose`` as a mocap system would send it: stamped with the
time the pose was acquired (the world state's time, on the ROS clock) and published no earlier
than ``mocap.latency`` after that. A recorder logs it when it arrives (rosbag2: log time =
receive time, header stamp = acquisition time), so a bag's log time minus header stamp is the
modelled latency plus the transport.

With ``box_pose:=camera`` the stand-in publishes no pose: a
:class:`~sim2real.hardware.standin_camera.StandinCamera` renders the box with its AprilTags at the world
file's camera rate, and each image goes out on ``real/camera/image_raw`` (mono8, stamped with its exposure
time, published its latency later) with ``real/camera/camera_info``, for the ``tag_detector`` node.

``experiment/box_request`` (PoseStamped): the stand-in "operator" places the box there
(with the placement error of the world file).

Parameters (type, default: meaning, unit)::

    world_file        string, "": the stand-in world, its hidden parameters, mocap and
                      placement error (default: the installed config/standin.yaml)
    host              string, 127.0.0.2: loopback address of the emulated controller
    command_port      int, 502: its command port
    initial_joints    double[6]: arm start joints, rad (default: the standard push's start)
    initial_distance  double, 0.40: box start distance, m
    box_pose          string, mocap: how reality reports the box (mocap: poses; camera: images)
"""

from __future__ import annotations

import threading
import time

import numpy as np
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import CameraInfo, Image

from sim2real.control import load_experiment_config
from sim2real.errors import Sim2RealError
from sim2real.hardware import EmulatorConfig, XArmEmulator
from sim2real.hardware.standin import MocapModel, MocapReport, StandinWorld, load_standin
from sim2real.hardware.standin_camera import CameraFrame, StandinCamera
from sim2real.nodes.camera_msgs import IMAGE_QOS, camera_info_msg, image_msg
from sim2real.nodes.common import BOX_REQUEST_TOPIC, STREAM_QOS, LeanNode, SolveReporter, now_ns, pose_arrays, pose_msg
from sim2real.nodes.process import run_node
from sim2real.physics.warmup import compile_with_progress, warm_up
from sim2real.sim import BoxState
from sim2real.sim.servo import ServoParams
from sim2real.trials.experiment import requested_box_pose, resting_pose, start_joints


class StandinWorldNode(LeanNode):
    """The reality stand-in (see the module docstring)."""

    def __init__(self, name: str = "standin_world", **kwargs: object) -> None:
        super().__init__(name, **kwargs)  # type: ignore[arg-type]
        world_file = str(self.declare_parameter("world_file", "").value)
        host = str(self.declare_parameter("host", "127.0.0.2").value)
        port = int(self.declare_parameter("command_port", 502).value)
        initial: list[float] = list(self.declare_parameter("initial_joints", [0.0]).value)
        initial_distance = float(self.declare_parameter("initial_distance", 0.40).value)
        box_pose = str(self.declare_parameter("box_pose", "mocap").value)
        if box_pose not in ("mocap", "camera"):
            raise ValueError(f"parameter box_pose is mocap or camera, not {box_pose!r}")
        self.config = load_standin(world_file or None)
        truth = self.config.params
        box = BoxState.at_rest(*requested_box_pose(initial_distance, truth))
        self.world = StandinWorld(self.config, box)
        if len(initial) != 6:
            initial = list(start_joints(self.world.arm, load_experiment_config().push,
                                        float(truth["contact.table_height"])))
        self.mocap = MocapModel(self.config.mocap)
        self.camera = StandinCamera(self.config.camera, truth) if box_pose == "camera" else None

        def say(line: str) -> None:  # the logger's info() returns a bool; say() returns nothing
            self.get_logger().info(line)

        compile_with_progress(say=say)  # a first start: say so
        warm_up(self.world.world, float(truth["pusher.radius"]))
        # Map the emulator's monotonic clock onto ROS time once (both advance at the same rate:
        # NTP slews CLOCK_MONOTONIC as it slews the system clock).
        self._clock_offset_ns = now_ns(self) - time.monotonic_ns()
        if self.camera is None:
            self._pub_box = self.create_publisher(PoseStamped, "real/box_pose", STREAM_QOS)
        else:
            self._pub_image = self.create_publisher(Image, "real/camera/image_raw", IMAGE_QOS)
            self._pub_info = self.create_publisher(CameraInfo, "real/camera/camera_info", IMAGE_QOS)
        self._solver = SolveReporter(self, "real")
        self.create_subscription(PoseStamped, BOX_REQUEST_TOPIC, self._on_request, STREAM_QOS)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self.emulator = XArmEmulator(
            EmulatorConfig(host=host, command_port=port, servo=ServoParams.from_params(truth),
                           initial_joints=tuple(float(x) for x in initial)),
            on_tick=self._on_tick)
        self.emulator.start()
        self._worker = threading.Thread(target=self._run_world, name="standin-world", daemon=True)
        self._worker.start()
        self.get_logger().info(f"reality stand-in: emulated xArm at {self.emulator.address}, "
                               f"world {self.config.source}")

    def _on_tick(self, t: float, q: np.ndarray, v: np.ndarray) -> None:
        self.world.add_joint_sample(t, q)
        self._wake.set()

    def _run_world(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(0.1)
            self._wake.clear()
            try:
                states = self.world.advance()
                if states:
                    self._solver.report(self.world.log)
            except Sim2RealError as err:  # bad input (the engine itself always returns): stop, loudly
                self.get_logger().error(f"stand-in world stopped: {err}")
                return
            for t, position, quaternion in states:
                if self.camera is not None:
                    frame = self.camera.observe(t, position, quaternion)
                    if frame is not None and not self._deliver_frame(frame):
                        return
                    continue
                report = self.mocap.observe(t, position, quaternion)
                if report is not None and not self._deliver(report):
                    return

    def _deliver(self, report: MocapReport) -> bool:
        """Publish ``report`` once its arrival time has come, stamped with its acquisition time.

        Returns False when the node is stopping (nothing more to publish).
        """
        wait = report.arrival - time.monotonic()
        if wait > 0.0 and self._stop.wait(wait):
            return False
        stamp = round(report.acquired * 1e9) + self._clock_offset_ns  # acquisition time, ROS clock
        try:
            self._pub_box.publish(pose_msg(stamp, report.position, report.quaternion))
        except Exception:
            if self.context.ok():
                raise
            return False  # shutting down (Ctrl-C): nobody listens any more
        return True

    def _deliver_frame(self, frame: CameraFrame) -> bool:
        """Publish a camera frame and its CameraInfo once its arrival time has come (False: stopping)."""
        assert self.camera is not None
        wait = frame.arrival - time.monotonic()
        if wait > 0.0 and self._stop.wait(wait):
            return False
        stamp = round(frame.acquired * 1e9) + self._clock_offset_ns  # exposure time, ROS clock
        try:
            self._pub_info.publish(camera_info_msg(stamp, self.camera.camera))
            self._pub_image.publish(image_msg(stamp, frame.image))
        except Exception:
            if self.context.ok():
                raise
            return False  # shutting down (Ctrl-C): nobody listens any more
        return True

    def _on_request(self, msg: PoseStamped) -> None:
        position, quaternion = resting_pose(*pose_arrays(msg), self.config.params)
        yaw = 2.0 * np.arctan2(quaternion[3], quaternion[0])
        self.world.place_box(position, float(yaw))

    def close(self) -> None:
        """Stop the world thread and the emulator."""
        self._stop.set()
        self._worker.join(timeout=2.0)
        self.emulator.stop()


def main(args: list[str] | None = None) -> int:
    """Console script ``standin_world``."""
    return run_node(StandinWorldNode, args, name="standin_world", doc=__doc__, example="command_port:=5020")


if __name__ == "__main__":
    import sys

    sys.exit(main())

"""The box-push experiment as separate ROS 2 nodes (the same graph as `sim2real run`).

    ros2 launch sim2real box_push.launch.py mode:=standin distances:="[0.30, 0.45]" out_dir:=/tmp/run

Arguments: mode (mirror | sim | real | standin), mirror (closed | commands), engine (ours |
mujoco: the sim platform's box engine), robot_ip,
params_file (simulator parameters for the sim node and both PD controllers, e.g. a file
written by `sim2real fit`; a file that does not exist stops the launch with one message before
any node starts), distances, out_dir. In real and mirror mode the box pose comes from the
motion-capture topic configured in config/mocap.yaml (mocap_bridge). Keep DDS on loopback with
ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST.

Every node is required: when the experiment node exits (all trials recorded, or the run
failed) or any other node dies, the whole launch shuts down.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from sim2real.nodes.runner import STANDIN_LINK
from sim2real.paths import read_text_file

PACKAGE = "sim2real"
PLATFORMS = {"mirror": ("real", "sim"), "standin": ("real", "sim"), "real": ("real",), "sim": ("sim",)}
STANDIN_HOST = "127.0.0.2"
STANDIN_PORT = 5020


def _nodes(context):
    share = get_package_share_directory(PACKAGE)
    config = os.path.join(share, "config")
    mode = LaunchConfiguration("mode").perform(context)
    mirror = LaunchConfiguration("mirror").perform(context)
    engine = LaunchConfiguration("engine").perform(context)
    params_file = LaunchConfiguration("params_file").perform(context)
    read_text_file(params_file, "params_file")  # missing or unreadable: one line, nothing started
    distances = [float(d) for d in LaunchConfiguration("distances").perform(context).strip("[]").split(",")]
    if mode not in PLATFORMS:
        raise RuntimeError(f"mode must be one of {sorted(PLATFORMS)}, got {mode!r}")
    platforms = PLATFORMS[mode]
    sim_params = [params_file]
    nodes = []
    robot_ip, robot_port = LaunchConfiguration("robot_ip").perform(context), 502
    if mode in ("real", "mirror") and not robot_ip.strip():
        raise RuntimeError(f"mode:={mode} drives a real xArm: give its address, robot_ip:=<IPv4> (there is no "
                           "default; sim2real never connects to an address it was not given)")
    if mode == "standin":
        robot_ip, robot_port = STANDIN_HOST, STANDIN_PORT
        nodes.append(Node(package=PACKAGE, executable="standin_world", name="standin_world", output="screen",
                          on_exit=Shutdown(reason="standin_world exited"),
                          parameters=[{"world_file": os.path.join(config, "standin.yaml"),
                                       "host": STANDIN_HOST, "command_port": STANDIN_PORT}]))
    if "real" in platforms:
        # connect_wait: the stand-in (or the controller) may still be starting. xarm_node runs the
        # real platform's PD law in its read loop (run_pd), with the gains of params_file.
        nodes.append(Node(package=PACKAGE, executable="xarm_node", name="xarm_node", output="screen",
                          on_exit=Shutdown(reason="xarm_node exited"),
                          parameters=[*sim_params, {"robot_ip": robot_ip, "command_port": robot_port,
                                                    "connect_wait": 60.0,
                                                    **(STANDIN_LINK if mode == "standin" else {})}]))
        if mode != "standin":  # the box pose of the lab's motion capture, in the arm base frame
            nodes.append(Node(package=PACKAGE, executable="mocap_bridge", name="mocap_bridge", output="screen",
                              on_exit=Shutdown(reason="mocap_bridge exited"),
                              parameters=[os.path.join(config, "mocap.yaml")]))
    if "sim" in platforms:
        nodes.append(Node(package=PACKAGE, executable="sim_node", name="sim_node", output="screen",
                          on_exit=Shutdown(reason="sim_node exited"),
                          parameters=[*sim_params, {"mirror": mirror, "engine": engine}]))
        nodes.append(Node(package=PACKAGE, executable="pd_controller", name="sim_pd_controller", output="screen",
                          on_exit=Shutdown(reason="sim_pd_controller exited"),
                          parameters=[*sim_params, {"platform": "sim", "mirror": mirror}]))
    nodes.append(Node(package=PACKAGE, executable="recorder", name="recorder", output="screen",
                      on_exit=Shutdown(reason="recorder exited"),
                      parameters=[*sim_params, {"out_dir": LaunchConfiguration("out_dir").perform(context)}]))
    # The experiment exits when every trial is recorded (0) or the run failed (1): the launch ends with it.
    nodes.append(Node(package=PACKAGE, executable="experiment", name="experiment", output="screen",
                      on_exit=Shutdown(reason="the experiment node exited (trials done or the run failed)"),
                      parameters=[*sim_params, os.path.join(config, "experiment.yaml"),
                                  {"mode": mode, "mirror": mirror, "engine": engine, "distances": distances}]))
    return nodes


def generate_launch_description():
    share = get_package_share_directory(PACKAGE)
    return LaunchDescription([
        DeclareLaunchArgument("mode", default_value="standin", description="mirror | sim | real | standin"),
        DeclareLaunchArgument("mirror", default_value="closed", description="closed | commands"),
        DeclareLaunchArgument("engine", default_value="ours", description="ours | mujoco (the sim platform's box)"),
        DeclareLaunchArgument("robot_ip", default_value="",
                              description="xArm controller IPv4 address; required for mode real and mirror"),
        DeclareLaunchArgument("params_file", default_value=os.path.join(share, "config", "params.yaml"),
                              description="simulator parameters (ROS 2 params file; must exist)"),
        DeclareLaunchArgument("distances", default_value="[0.30, 0.35, 0.40, 0.45, 0.50]",
                              description="box start distances, m"),
        DeclareLaunchArgument("out_dir", default_value="box_push_run", description="run directory to write"),
        OpaqueFunction(function=_nodes),
    ])

"""Play a recorded trial's reference into the sim platform (sim_node + its PD controller + recorder).

    ros2 launch sim2real replay.launch.py bag:=/data/run/trial_00_d0.300 params_file:=fitted.yaml \
        out_dir:=/tmp/replay

The experiment node (mode sim, ``replay_trial``) reads the recorded trial directory (its
rosbag2 and trial.json), resets the sim to the recorded start (first joint state, first box
pose laid on the table) and publishes the recorded reference; the sim tracks it with the PD law
and the recorder writes one bag. Offline replay with the recorded *commands* and timing is
`sim2real replay` (no ROS needed).

A ``params_file`` that does not exist, or a ``bag`` that is not a directory, stops the launch
with one message before any node starts. Every node is required: when the experiment node
exits (the replay recorded, or failed) or any other node dies, the whole launch shuts down;
`ros2 launch` exits 0 only when the replay was recorded.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from sim2real.errors import Sim2RealError
from sim2real.nodes.launch_status import experiment_exited
from sim2real.paths import read_text_file

PACKAGE = "sim2real"


def _nodes(context):
    config = os.path.join(get_package_share_directory(PACKAGE), "config")
    params_file = LaunchConfiguration("params_file").perform(context)
    read_text_file(params_file, "params_file")  # missing or unreadable: one line, nothing started
    bag = LaunchConfiguration("bag").perform(context)
    if not os.path.isdir(bag):
        raise Sim2RealError(f"bag:={bag} is not a recorded trial directory (it holds the .mcap and trial.json)")
    return [
        Node(package=PACKAGE, executable="sim_node", name="sim_node", output="screen",
             on_exit=Shutdown(reason="sim_node exited"),
             parameters=[params_file, {"mirror": "closed"}]),
        Node(package=PACKAGE, executable="pd_controller", name="sim_pd_controller", output="screen",
             on_exit=Shutdown(reason="sim_pd_controller exited"),
             parameters=[params_file, {"platform": "sim", "mirror": "closed"}]),
        Node(package=PACKAGE, executable="recorder", name="recorder", output="screen",
             on_exit=Shutdown(reason="recorder exited"),
             parameters=[params_file, {"out_dir": LaunchConfiguration("out_dir").perform(context)}]),
        # The experiment exits once the replayed trial is recorded (0) or failed (1, 130): the launch ends with it
        # and exits non-zero unless the experiment exited 0 (sim2real.nodes.launch_status).
        Node(package=PACKAGE, executable="experiment", name="experiment", output="screen",
             on_exit=experiment_exited,
             parameters=[params_file, os.path.join(config, "experiment.yaml"),
                         {"mode": "sim", "replay_trial": bag}]),
    ]


def generate_launch_description():
    share = get_package_share_directory(PACKAGE)
    return LaunchDescription([
        DeclareLaunchArgument("bag", description="recorded trial directory (holds the .mcap and trial.json)"),
        DeclareLaunchArgument("params_file", default_value=os.path.join(share, "config", "params.yaml"),
                              description="simulator parameters (e.g. written by sim2real fit; must exist)"),
        DeclareLaunchArgument("out_dir", default_value="replay_run", description="run directory to write"),
        OpaqueFunction(function=_nodes),
    ])

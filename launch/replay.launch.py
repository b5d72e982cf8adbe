"""Play a recorded trial's reference into the sim platform (sim_node + its PD controller + recorder).

    ros2 launch sim2real replay.launch.py bag:=/data/run/trial_00_d0.300 params_file:=fitted.yaml \
        out_dir:=/tmp/replay

The experiment node (mode sim, ``replay_trial``) reads the recorded trial directory (its
rosbag2 and trial.json), resets the sim to the recorded start (first joint state, first box
pose laid on the table) and publishes the recorded reference; the sim tracks it with the PD law
and the recorder writes one bag. Offline replay with the recorded *commands* and timing is
`sim2real replay` (no ROS needed).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

PACKAGE = "sim2real"


def generate_launch_description():
    share = get_package_share_directory(PACKAGE)
    config = os.path.join(share, "config")
    params_file = LaunchConfiguration("params_file")
    return LaunchDescription([
        DeclareLaunchArgument("bag", description="recorded trial directory (holds the .mcap and trial.json)"),
        DeclareLaunchArgument("params_file", default_value=os.path.join(config, "params.yaml"),
                              description="simulator parameters (e.g. written by sim2real fit)"),
        DeclareLaunchArgument("out_dir", default_value="replay_run", description="run directory to write"),
        Node(package=PACKAGE, executable="sim_node", name="sim_node", output="screen",
             parameters=[params_file, {"mirror": "closed"}]),
        Node(package=PACKAGE, executable="pd_controller", name="sim_pd_controller", output="screen",
             parameters=[params_file, {"platform": "sim", "mirror": "closed"}]),
        Node(package=PACKAGE, executable="recorder", name="recorder", output="screen",
             parameters=[params_file, {"out_dir": LaunchConfiguration("out_dir")}]),
        Node(package=PACKAGE, executable="experiment", name="experiment", output="screen",
             parameters=[params_file, os.path.join(config, "experiment.yaml"),
                         {"mode": "sim", "replay_trial": LaunchConfiguration("bag")}]),
    ])

"""Play a recorded trial's reference into the sim platform (sim_node + its PD controller + recorder).

    ros2 launch sim2real replay.launch.py distances:="[0.30]" params_file:=fitted.yaml out_dir:=/tmp/replay

The experiment node in `sim` mode publishes the push reference and resets the sim box at each
start distance; the sim platform tracks it with the PD law and the recorder writes one bag per
trial. Offline replay with the recorded commands and timing is `sim2real replay` (no ROS needed).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription

PACKAGE = "sim2real"


def generate_launch_description():
    share = get_package_share_directory(PACKAGE)
    config = os.path.join(share, "config")
    params_file = LaunchConfiguration("params_file")
    return LaunchDescription([
        DeclareLaunchArgument("params_file", default_value=os.path.join(config, "params.yaml"),
                              description="simulator parameters (e.g. written by sim2real fit)"),
        DeclareLaunchArgument("distances", default_value="[0.30, 0.35, 0.40, 0.45, 0.50]",
                              description="box start distances, m"),
        DeclareLaunchArgument("out_dir", default_value="replay_run", description="run directory to write"),
        Node(package=PACKAGE, executable="sim_node", name="sim_node", output="screen",
             parameters=[params_file, {"mirror": "closed"}]),
        Node(package=PACKAGE, executable="pd_controller", name="sim_pd_controller", output="screen",
             parameters=[params_file, {"platform": "sim", "mirror": "closed"}]),
        Node(package=PACKAGE, executable="recorder", name="recorder", output="screen",
             parameters=[params_file, {"out_dir": LaunchConfiguration("out_dir")}]),
        Node(package=PACKAGE, executable="experiment", name="experiment", output="screen",
             parameters=[params_file, os.path.join(config, "experiment.yaml"),
                         {"mode": "sim", "distances": LaunchConfiguration("distances")}]),
    ])

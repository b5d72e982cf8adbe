"""ament_python build of the sim2real ROS 2 package (also pip-installable)."""

import os
from glob import glob

from setuptools import find_packages, setup

PACKAGE = "sim2real"

# Console scripts: the `sim2real` CLI plus one per ROS 2 node (added as the nodes exist).
CONSOLE_SCRIPTS = [
    "sim2real = sim2real.__main__:main",
    "xarm_node = sim2real.nodes.xarm_node:main",
    "sim_node = sim2real.nodes.sim_node:main",
    "pd_controller = sim2real.nodes.pd_controller:main",
    "experiment = sim2real.nodes.experiment:main",
    "recorder = sim2real.nodes.recorder:main",
    "standin_world = sim2real.nodes.standin_world:main",
    "mocap_bridge = sim2real.nodes.mocap_bridge:main",
    "tag_detector = sim2real.nodes.tag_detector:main",
    "ros2_control_arm = sim2real.nodes.ros2_control_arm:main",
    "ros2_control_standin = sim2real.nodes.ros2_control_standin:main",
    "live_view = sim2real.nodes.live_view:main",
]


# Runtime dependencies, for `pip install .` (colcon installs none: rosdep and package.xml do that
# for a ROS 2 workspace). Ranges, not pins: the tested set is pinned in requirements.txt
# (`pip install -r requirements.txt .` reproduces it exactly), and tests/test_install.py checks
# that every pin there lies in these ranges and that both lists name the same distributions.
# - ROS 2 wheels (PyPI `ros-*`): within the Kilted release series of the pins (rclpy 9.1.x,
#   messages 5.5.x, Fast DDS RMW 9.3.x); the Jazzy wheels (rclpy 7.1, messages 5.3) must never
#   mix in. ros-rmw-fastrtps-cpp is needed explicitly: ros-rclpy depends on no RMW.
# - libraries with a stable API (numpy, scipy, PyYAML, matplotlib, OpenCV): the tested minor version up
#   to the next major one;
# - 0.x libraries whose minor releases change their API (rosbags, numba, urdf-parser-py) and the
#   xArm SDK, whose wire protocol the emulator mirrors: the tested minor series.
# Test, build and benchmark tools (pytest, ruff, colcon, MuJoCo) stay out: requirements-dev.txt.
# Optional: Ray and its client (grpcio, for ray:// addresses), for `--executor ray[:ADDRESS]`
# (`pip install 'sim2real[ray]'`); Ray is pinned with the test tools in requirements-dev.txt,
# since the tests run it (a local runtime; the client is not tested). Optional too: foxglove-sdk for
# `run --live` / `demo --live` (`pip install 'sim2real[live]'`), pinned in requirements-dev.txt.
INSTALL_REQUIRES = [
    "ros-rclpy>=9.1.2,<9.2",
    "ros-rmw-fastrtps-cpp>=9.3.3,<9.4",
    "ros-std-msgs>=5.5.1,<5.6",
    "ros-geometry-msgs>=5.5.1,<5.6",
    "ros-sensor-msgs>=5.5.1,<5.6",
    "ros-trajectory-msgs>=5.5.1,<5.6",
    "ros-std-srvs>=5.5.1,<5.6",
    "ros-rosgraph-msgs>=2.3.0,<2.4",
    "numpy>=2.4,<3",
    "scipy>=1.17,<2",
    "pyyaml>=6.0,<7",
    "rosbags>=0.11.9,<0.12",
    "urdf-parser-py>=0.0.4,<0.1",
    "xarm-python-sdk>=1.18.4,<1.19",
    "matplotlib>=3.11,<4",
    "numba>=0.68.1,<0.69",
    "tqdm>=4.70,<5",
    "opencv-python-headless>=5.1,<5.2",
]


def _share(folder: str, pattern: str) -> tuple[str, list[str]]:
    return (os.path.join("share", PACKAGE, folder), sorted(glob(os.path.join(folder, pattern))))


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(include=[PACKAGE, PACKAGE + ".*"]),
    package_data={PACKAGE: ["py.typed"], PACKAGE + ".data": ["cube_toss/*.npz", "cube_toss/*.txt", "cube_toss/*.md"]},
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
        _share("launch", "*.launch.py"),
        _share("config", "*.yaml"),
        _share("config", "*.xml"),  # the loopback Fast DDS profile
        _share("config", "*.json"),  # the Foxglove layout for trial bags
        _share("config/scenarios", "*.yaml"),  # example scenarios of `sim2real simulate`
        _share("urdf", "*.urdf"),
    ],
    install_requires=INSTALL_REQUIRES,
    zip_safe=False,
    maintainer="sim2real developers",
    maintainer_email="sim2real@example.org",
    description="Sim-to-real toolkit for the UFactory xArm 6 box-push experiment",
    license="BSD-3-Clause",
    extras_require={"test": ["pytest"], "ray": ["ray[client]>=2.60,<2.61"], "mujoco": ["mujoco>=4.0,<4.1"],
                    "live": ["foxglove-sdk>=0.30.3,<0.31"]},
    entry_points={"console_scripts": CONSOLE_SCRIPTS},
    python_requires=">=3.10",
)

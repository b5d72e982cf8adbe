"""ament_python build of the sim2real ROS 2 package (also pip-installable)."""

import os
from glob import glob

from setuptools import find_packages, setup

PACKAGE = "sim2real"

# Console scripts: the `sim2real` CLI plus one per ROS 2 node (added as the nodes exist).
CONSOLE_SCRIPTS = [
    "sim2real = sim2real.cli:main",
    "xarm_node = sim2real.nodes.xarm_node:main",
    "sim_node = sim2real.nodes.sim_node:main",
    "pd_controller = sim2real.nodes.pd_controller:main",
    "experiment = sim2real.nodes.experiment:main",
    "recorder = sim2real.nodes.recorder:main",
    "standin_world = sim2real.nodes.standin_world:main",
    "mocap_bridge = sim2real.nodes.mocap_bridge:main",
]


def _share(folder: str, pattern: str) -> tuple[str, list[str]]:
    return (os.path.join("share", PACKAGE, folder), sorted(glob(os.path.join(folder, pattern))))


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(include=[PACKAGE, PACKAGE + ".*"]),
    package_data={PACKAGE: ["py.typed"]},
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
        _share("launch", "*.launch.py"),
        _share("config", "*.yaml"),
        _share("config", "*.xml"),  # the loopback Fast DDS profile
        _share("urdf", "*.urdf"),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="sim2real developers",
    maintainer_email="sim2real@example.org",
    description="Sim-to-real toolkit for the UFactory xArm 6 box-push experiment",
    license="BSD-3-Clause",
    extras_require={"test": ["pytest"]},
    entry_points={"console_scripts": CONSOLE_SCRIPTS},
    python_requires=">=3.10",
)

"""``launch/box_push.launch.py`` with ``via``, ``namespace`` and ``use_sim_time``: the nodes it starts.

launch and launch_ros have no wheel here: the launch file runs against stand-ins that keep each
action's arguments, and the nodes its OpaqueFunction returns are checked (executables against
setup.py's console scripts, parameters, namespace).
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from children import console_scripts

from sim2real.nodes.routes import DEFAULT_CONTROLLER, ROUTES

ROOT = Path(__file__).resolve().parents[2]


class _Entity:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs


class _LaunchConfiguration(_Entity):
    def perform(self, context: dict[str, str]) -> str:
        return context[self.args[0]]


def launch(monkeypatch: pytest.MonkeyPatch, **arguments: str) -> list[Any]:
    """The nodes ``ros2 launch sim2real box_push.launch.py name:=value ...`` would start."""
    def module(name: str, **attributes: Any) -> types.ModuleType:
        stub = types.ModuleType(name)
        stub.__dict__.update(attributes)
        return stub

    actions = {name: type(name, (_Entity,), {}) for name in ("DeclareLaunchArgument", "OpaqueFunction", "Shutdown")}
    stubs = {
        "launch": module("launch", LaunchDescription=lambda entities: list(entities)),
        "launch.actions": module("launch.actions", **actions),
        "launch.substitutions": module("launch.substitutions", LaunchConfiguration=_LaunchConfiguration),
        "launch_ros": module("launch_ros"),
        "launch_ros.actions": module("launch_ros.actions", Node=type("Node", (_Entity,), {})),
        "ament_index_python": module("ament_index_python"),
        "ament_index_python.packages": module("ament_index_python.packages",
                                              get_package_share_directory=lambda package: str(ROOT)),
    }
    for name, stub in stubs.items():
        monkeypatch.setitem(sys.modules, name, stub)
    spec = importlib.util.spec_from_file_location("box_push_launch", ROOT / "launch" / "box_push.launch.py")
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    description = loaded.generate_launch_description()
    context = {e.args[0]: e.kwargs["default_value"] for e in description
               if type(e).__name__ == "DeclareLaunchArgument" and "default_value" in e.kwargs}
    context.update(arguments)
    (opaque,) = [e for e in description if type(e).__name__ == "OpaqueFunction"]
    return list(opaque.kwargs["function"](context))


def merged(node: Any) -> dict[str, Any]:
    """The dict parameters of a launched node, merged in order."""
    out: dict[str, Any] = {}
    for entry in node.kwargs["parameters"]:
        if isinstance(entry, dict):
            out.update(entry)
    return out


def test_the_new_arguments_are_declared(monkeypatch):
    import ast

    tree = ast.parse((ROOT / "launch" / "box_push.launch.py").read_text())
    declared = {ast.literal_eval(c.args[0]) for c in ast.walk(tree) if isinstance(c, ast.Call)
                and getattr(c.func, "id", "") == "DeclareLaunchArgument"}
    assert {"via", "controller", "controller_joints", "namespace", "use_sim_time"} <= declared
    nodes = launch(monkeypatch, mode="sim")
    assert nodes and all(n.kwargs["executable"] in console_scripts() for n in nodes)


@pytest.mark.parametrize("mode", ["standin", "real", "mirror"])
def test_via_ros2_control_starts_the_routes_node_without_a_robot_address(monkeypatch, mode):
    nodes = {n.kwargs["name"]: n for n in launch(monkeypatch, mode=mode, via="ros2_control")}
    route = ROUTES["ros2_control"]
    assert route.node in nodes and "xarm_node" not in nodes and "live_view" in nodes
    assert all(n.kwargs["executable"] in console_scripts() for n in nodes.values())
    assert type(nodes[route.node].kwargs["on_exit"]).__name__ == "Shutdown"
    assert merged(nodes[route.node])["controller"] == DEFAULT_CONTROLLER
    assert (route.standin in nodes) == (mode == "standin")
    if mode == "standin":
        assert merged(nodes[route.standin])["controller"] == DEFAULT_CONTROLLER


def test_controller_and_its_joints_are_passed_on(monkeypatch):
    nodes = {n.kwargs["name"]: n for n in launch(monkeypatch, mode="real", via="ros2_control", controller="fwd",
                                                  controller_joints="joint2,joint1,joint3,joint4,joint5,joint6")}
    assert merged(nodes["ros2_control_arm"])["controller"] == "fwd"
    assert merged(nodes["ros2_control_arm"])["joints"][:2] == ["joint2", "joint1"]


def test_via_sdk_still_needs_the_robot_address(monkeypatch):
    with pytest.raises(RuntimeError, match="robot_ip"):
        launch(monkeypatch, mode="real")
    nodes = {n.kwargs["name"]: n for n in launch(monkeypatch, mode="real", robot_ip="192.0.2.10")}
    assert merged(nodes["xarm_node"])["robot_ip"] == "192.0.2.10"


def test_namespace_and_sim_time_reach_every_node(monkeypatch):
    nodes = launch(monkeypatch, mode="sim", namespace="lab", use_sim_time="true")
    assert {n.kwargs["namespace"] for n in nodes} == {"lab"}
    assert all(merged(n)["use_sim_time"] is True for n in nodes)
    assert all(merged(n)["use_sim_time"] is False for n in launch(monkeypatch, mode="sim"))


def test_sim_time_is_refused_with_a_real_arm(monkeypatch):
    with pytest.raises(RuntimeError, match="use_sim_time"):
        launch(monkeypatch, mode="mirror", via="ros2_control", use_sim_time="true")


def test_mocap_bridge_gets_its_file_section_in_a_namespace(monkeypatch):
    """config/mocap.yaml is keyed ``mocap_bridge:``, which a namespaced node would not match: its
    section is passed as values."""
    nodes = {n.kwargs["name"]: n for n in launch(monkeypatch, mode="mirror", via="ros2_control", namespace="lab")}
    assert merged(nodes["mocap_bridge"])["topic"] == "/mocap/box/pose"

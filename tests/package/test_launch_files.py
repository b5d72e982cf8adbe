"""Every launch file parses, and every executable, config file and argument it names exists."""

import ast
import contextlib
import importlib.util
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAUNCH_FILES = sorted((ROOT / "launch").glob("*.launch.py"))


def _console_scripts() -> set[str]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "CONSOLE_SCRIPTS":
            return {entry.split("=")[0].strip() for entry in ast.literal_eval(node.value)}
    raise AssertionError("setup.py has no CONSOLE_SCRIPTS")


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)
            and getattr(n.func, "id", getattr(n.func, "attr", None)) == name]


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _value(node: ast.expr, constants: dict[str, object]) -> object:
    if isinstance(node, ast.Name):
        return constants[node.id]
    return ast.literal_eval(node)


def _constants(tree: ast.Module) -> dict[str, object]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            with contextlib.suppress(ValueError):
                out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


def test_there_are_launch_files():
    assert {p.name for p in LAUNCH_FILES} == {"box_push.launch.py", "replay.launch.py"}


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_names_only_existing_things(path):
    source = path.read_text()
    tree = ast.parse(source)
    assert any(isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description" for n in tree.body)
    scripts = _console_scripts()
    nodes = _calls(tree, "Node")
    assert nodes, "no launch_ros Node"
    constants = _constants(tree)
    for call in nodes:
        assert _value(_keyword(call, "package"), constants) == "sim2real"
        executable = _keyword(call, "executable")
        if isinstance(executable, ast.Attribute) and isinstance(executable.value, ast.Name) \
                and executable.value.id == "route":
            continue  # the arm route's node and stand-in: tests/nodes/test_launch_routes.py runs them
        assert _value(executable, constants) in scripts
    # Config files are joined onto the installed share directory and must exist in config/.
    for name in re.findall(r'"([\w.]+\.yaml)"', source):
        assert (ROOT / "config" / name).is_file(), name
    assert "get_package_share_directory" in source
    # Every LaunchConfiguration used is declared.
    declared = {ast.literal_eval(c.args[0]) for c in _calls(tree, "DeclareLaunchArgument")}
    used = {ast.literal_eval(c.args[0]) for c in _calls(tree, "LaunchConfiguration")}
    assert used <= declared, used - declared


def test_box_push_declares_the_issue_arguments():
    tree = ast.parse((ROOT / "launch" / "box_push.launch.py").read_text())
    declared = {ast.literal_eval(c.args[0]) for c in _calls(tree, "DeclareLaunchArgument")}
    assert declared == {"mode", "mirror", "engine", "robot_ip", "params_file", "experiment_file", "distances",
                        "out_dir", "via", "controller", "controller_joints", "namespace", "use_sim_time", "box_pose",
                        "camera_file"}


def test_replay_plays_a_recorded_bag(monkeypatch, tmp_path: Path) -> None:
    tree = ast.parse((ROOT / "launch" / "replay.launch.py").read_text())
    declared = {ast.literal_eval(c.args[0]) for c in _calls(tree, "DeclareLaunchArgument")}
    assert declared == {"bag", "params_file", "out_dir"}
    nodes = _launch(monkeypatch, "replay.launch.py", bag=str(tmp_path))
    assert [n.kwargs["name"] for n in nodes] == ["sim_node", "sim_pd_controller", "recorder", "experiment"]
    assert {"mode": "sim", "replay_trial": str(tmp_path)} in nodes[-1].kwargs["parameters"]


# --- The launch files run with stand-ins for launch, launch_ros and ament_index_python (they are not
# installable here): what each OpaqueFunction returns or raises for given launch arguments.

class _Entity:
    """A launch action or substitution of the stubs: keeps its arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs


class _LaunchConfiguration(_Entity):
    def perform(self, context: dict[str, str]) -> str:
        return context[self.args[0]]


def _stub_modules() -> dict[str, types.ModuleType]:
    def module(name: str, **attributes: Any) -> types.ModuleType:
        stub = types.ModuleType(name)
        stub.__dict__.update(attributes)
        return stub

    actions = {name: type(name, (_Entity,), {}) for name in
               ("DeclareLaunchArgument", "OpaqueFunction", "Shutdown", "RegisterEventHandler", "LogInfo")}
    return {
        "launch": module("launch", LaunchDescription=lambda entities: list(entities)),
        "launch.actions": module("launch.actions", **actions),
        "launch.substitutions": module("launch.substitutions", LaunchConfiguration=_LaunchConfiguration),
        "launch_ros": module("launch_ros"),
        "launch_ros.actions": module("launch_ros.actions", Node=type("Node", (_Entity,), {})),
        "ament_index_python": module("ament_index_python"),
        "ament_index_python.packages": module("ament_index_python.packages",
                                              get_package_share_directory=lambda package: str(ROOT)),
    }


def _launch(monkeypatch: pytest.MonkeyPatch, file_name: str, **arguments: str) -> list[Any]:
    """The actions ``ros2 launch sim2real <file_name> name:=value ...`` would start (the nodes the
    launch file's OpaqueFunction returns); raises what it raises."""
    for name, stub in _stub_modules().items():
        monkeypatch.setitem(sys.modules, name, stub)
    spec = importlib.util.spec_from_file_location(f"launch_file_{file_name.split('.')[0]}",
                                                  ROOT / "launch" / file_name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    description = module.generate_launch_description()
    context = {e.args[0]: e.kwargs["default_value"] for e in description
               if type(e).__name__ == "DeclareLaunchArgument" and "default_value" in e.kwargs}
    context.update(arguments)
    (opaque,) = [e for e in description if type(e).__name__ == "OpaqueFunction"]
    return list(opaque.kwargs["function"](context))


LAUNCHES = [("box_push.launch.py", {"mode": "standin"}), ("box_push.launch.py", {"mode": "sim"}),
            ("box_push.launch.py", {"mode": "mirror", "robot_ip": "192.0.2.10"}),
            ("box_push.launch.py", {"mode": "real", "robot_ip": "192.0.2.10"}),
            ("replay.launch.py", {"bag": str(ROOT / "config")})]


@pytest.mark.parametrize(("file_name", "arguments"), LAUNCHES,
                         ids=["standin", "sim", "mirror", "real", "replay"])
def test_the_launch_ends_when_the_experiment_node_exits(monkeypatch, file_name: str, arguments: dict) -> None:
    """Every node is required: its exit (the experiment's when the trials are done or the run failed)
    shuts the whole launch down (``on_exit=Shutdown()``, launch's required-process idiom)."""
    nodes = _launch(monkeypatch, file_name, **arguments)
    by_name = {n.kwargs["name"]: n for n in nodes}
    assert "experiment" in by_name and len(by_name) == len(nodes)
    for name, node in by_name.items():
        if name != "experiment":
            assert type(node.kwargs.get("on_exit")).__name__ == "Shutdown", name
    # The experiment's exit shuts the launch down, and its status is the launch's: 0 only when it
    # recorded every trial; a failed or stopped experiment raises in the handler, which launch logs
    # and turns into a non-zero status of ros2 launch.
    from sim2real.nodes.launch_status import ExperimentFailedError

    handler = by_name["experiment"].kwargs["on_exit"]
    (action,) = handler(types.SimpleNamespace(returncode=0), None)
    assert type(action).__name__ == "Shutdown"
    for status in (1, 130, -9):
        with pytest.raises(ExperimentFailedError, match=f"status {status}"):
            handler(types.SimpleNamespace(returncode=status), None)


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_every_node_has_a_shutdown_on_exit_statically(path: Path) -> None:
    """The same from the source: each ``Node(...)`` has ``on_exit=Shutdown(...)``, the experiment's
    the handler that carries its status."""
    tree = ast.parse(path.read_text())
    for call in _calls(tree, "Node"):
        on_exit = _keyword(call, "on_exit")
        executable = _keyword(call, "executable")
        if isinstance(executable, ast.Constant) and executable.value == "experiment":
            assert isinstance(on_exit, ast.Name) and on_exit.id == "experiment_exited", ast.unparse(call)
            continue
        assert isinstance(on_exit, ast.Call) and getattr(on_exit.func, "id", "") == "Shutdown", ast.unparse(call)
    imports = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "launch.actions"]
    assert any(alias.name == "Shutdown" for n in imports for alias in n.names)


@pytest.mark.parametrize(("file_name", "arguments"), [LAUNCHES[0], LAUNCHES[-1]], ids=["box_push", "replay"])
def test_a_missing_params_file_stops_the_launch_before_any_node(monkeypatch, tmp_path: Path, file_name: str,
                                                               arguments: dict) -> None:
    from sim2real.errors import Sim2RealError

    missing = tmp_path / "fitted.yaml"
    with pytest.raises(Sim2RealError, match=f"^params_file not found: {re.escape(str(missing))}$"):
        _launch(monkeypatch, file_name, **arguments, params_file=str(missing))
    with pytest.raises(Sim2RealError, match=rf"^params_file {re.escape(str(tmp_path))} is a directory$"):
        _launch(monkeypatch, file_name, **arguments, params_file=str(tmp_path))
    given = tmp_path / "given.yaml"
    given.write_text("/**:\n  ros__parameters:\n    pd: {kp: 12.0}\n")
    nodes = _launch(monkeypatch, file_name, **arguments, params_file=str(given))
    assert all(str(given) in n.kwargs["parameters"] for n in nodes if n.kwargs["executable"] != "standin_world")


def test_replay_refuses_a_bag_that_is_not_a_directory(monkeypatch, tmp_path: Path) -> None:
    from sim2real.errors import Sim2RealError

    with pytest.raises(Sim2RealError, match="is not a recorded trial directory"):
        _launch(monkeypatch, "replay.launch.py", bag=str(tmp_path / "nothing"))


def _experiment_distances(tmp_path: Path, *params_files: Path) -> list[float]:
    """``distances`` of a node named ``experiment`` given these params files in this order (plain rclpy)."""
    import os

    import rclpy
    from rclpy.node import Node

    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_LOG_DIR", str(tmp_path / "ros_log"))
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=98)
    try:
        args = ["--ros-args", *[a for f in params_files for a in ("--params-file", str(f))]]
        node = Node("experiment", context=context, cli_args=args, use_global_arguments=False,
                    automatically_declare_parameters_from_overrides=True)
        try:
            return list(node.get_parameter("distances").value)
        finally:
            node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


def test_a_launch_override_beats_the_experiment_file(tmp_path: Path) -> None:
    """box_push.launch.py gives the experiment node params.yaml, experiment.yaml and its launch arguments,
    which launch_ros writes as a ``/**`` params file, in that order. rcl keeps one entry per node key in
    the order the keys first appear and rclpy applies the entries in that order: params.yaml creates
    ``/**`` first, so a node-specific ``experiment:`` key (what the package's file used to have) beat the
    override whatever the file order. With the package's file under ``/**`` the override wins."""
    override = tmp_path / "launch_override.yaml"
    override.write_text("/**:\n  ros__parameters:\n    distances: [0.3, 0.45]\n")
    params, experiment = ROOT / "config" / "params.yaml", ROOT / "config" / "experiment.yaml"
    assert _experiment_distances(tmp_path, params, experiment) == [0.30, 0.35, 0.40, 0.45, 0.50]
    assert _experiment_distances(tmp_path, params, experiment, override) == [0.3, 0.45]
    node_specific = tmp_path / "node_specific.yaml"
    node_specific.write_text("experiment:\n  ros__parameters:\n    distances: [0.3, 0.35, 0.4, 0.45, 0.5]\n")
    assert _experiment_distances(tmp_path, params, node_specific, override) == [0.3, 0.35, 0.4, 0.45, 0.5]
    launch_source = (ROOT / "launch" / "box_push.launch.py").read_text()
    assert "parameters=[*sim_params, experiment_file," in launch_source


def test_the_experiment_file_reads_as_the_node_gets_it(tmp_path: Path) -> None:
    from sim2real.control.reference import load_experiment_config

    assert load_experiment_config(ROOT / "config" / "experiment.yaml").distances == (0.30, 0.35, 0.40, 0.45, 0.50)
    both = tmp_path / "both.yaml"
    both.write_text("/**:\n  ros__parameters:\n    distances: [0.3]\n    push: {speed: 0.4}\n"
                    "experiment:\n  ros__parameters:\n    distances: [0.35, 0.4]\n")
    config = load_experiment_config(both)
    assert config.distances == (0.35, 0.40) and config.push.speed == 0.4


DESIGNED = ("/**:\n  ros__parameters:\n    distances: [0.30, 0.45]\n    push: {end_x: 0.40}\n"
            "    trials:\n      lateral: [0.0, 0.03]\n")


def _experiment_parameters(node: Any) -> list[Any]:
    """The experiment node's parameters after the simulator parameters: the experiment file, then the overrides."""
    return node.kwargs["parameters"][1:]


def test_the_experiment_file_is_given_to_the_experiment_node_as_it_is(monkeypatch, tmp_path: Path) -> None:
    """``experiment_file:=`` (default the package's) reaches the node as a params file, its trials section and
    distances with it: without ``distances:=`` the launch overrides nothing of it."""
    designed = tmp_path / "designed.yaml"
    designed.write_text(DESIGNED)
    nodes = _launch(monkeypatch, "box_push.launch.py", mode="sim", experiment_file=str(designed))
    experiment = {n.kwargs["name"]: n for n in nodes}["experiment"]
    assert _experiment_parameters(experiment) == [str(designed), {"mode": "sim", "mirror": "closed",
                                                                 "engine": "ours"}, {"use_sim_time": False}]
    nodes = _launch(monkeypatch, "box_push.launch.py", mode="sim", distances="[0.30, 0.45]")
    experiment = {n.kwargs["name"]: n for n in nodes}["experiment"]
    assert _experiment_parameters(experiment)[0] == str(ROOT / "config" / "experiment.yaml")
    assert _experiment_parameters(experiment)[1]["distances"] == [0.30, 0.45]


def test_other_distances_for_trials_with_their_own_pushes_stop_the_launch_before_any_node(monkeypatch,
                                                                                         tmp_path: Path) -> None:
    from sim2real.errors import Sim2RealError

    designed = tmp_path / "designed.yaml"
    designed.write_text(DESIGNED)
    with pytest.raises(Sim2RealError, match=r"its start distances cannot be replaced; edit the file instead$"):
        _launch(monkeypatch, "box_push.launch.py", mode="sim", experiment_file=str(designed), distances="[0.3]")
    nodes = _launch(monkeypatch, "box_push.launch.py", mode="sim", experiment_file=str(designed),
                    distances="[0.30, 0.45]")  # the file's own distances: nothing replaced
    assert {n.kwargs["name"]: n for n in nodes}["experiment"].kwargs["parameters"][2]["distances"] == [0.30, 0.45]
    bad = tmp_path / "bad.yaml"
    bad.write_text(DESIGNED.replace("lateral: [0.0, 0.03]", "lateral: [0.0]"))
    with pytest.raises(Sim2RealError, match=r"trials\.lateral has 1 entries but distances has 2"):
        _launch(monkeypatch, "box_push.launch.py", mode="sim", experiment_file=str(bad))
    with pytest.raises(Sim2RealError, match=r"^experiment_file not found: "):
        _launch(monkeypatch, "box_push.launch.py", mode="sim", experiment_file=str(tmp_path / "missing.yaml"))


def test_box_pose_camera_starts_the_tag_detector_with_its_set_up_instead_of_the_mocap_bridge(monkeypatch,
                                                                                            tmp_path: Path) -> None:
    nodes = {n.kwargs["name"]: n for n in _launch(monkeypatch, "box_push.launch.py", mode="mirror",
                                                  robot_ip="192.0.2.10", box_pose="camera")}
    assert "mocap_bridge" not in nodes and "tag_detector" in nodes
    params = nodes["tag_detector"].kwargs["parameters"]
    assert params[-1]["image_topic"] == "/camera/color/image_raw" and "base_from_camera" in params[-1]
    standin = {n.kwargs["name"]: n for n in _launch(monkeypatch, "box_push.launch.py", mode="standin",
                                                    box_pose="camera")}
    assert standin["standin_world"].kwargs["parameters"][0]["box_pose"] == "camera"
    assert standin["tag_detector"].kwargs["parameters"][-1]["image_topic"] == "real/camera/image_raw"
    bad = tmp_path / "camera.yaml"
    bad.write_text("tag_detector:\n  ros__parameters:\n    tags: {size: 7}\n")
    from sim2real.errors import Sim2RealError

    with pytest.raises(Sim2RealError, match=r"tags\.size"):
        _launch(monkeypatch, "box_push.launch.py", mode="mirror", robot_ip="192.0.2.10", box_pose="camera",
                camera_file=str(bad))
    with pytest.raises(RuntimeError, match="box_pose:=camera needs a real platform"):
        _launch(monkeypatch, "box_push.launch.py", mode="sim", box_pose="camera")

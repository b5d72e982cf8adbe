"""Every launch file parses, and every executable, config file and argument it names exists."""

import ast
import contextlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
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
        assert _value(_keyword(call, "executable"), constants) in scripts
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
    assert declared == {"mode", "mirror", "robot_ip", "params_file", "distances", "out_dir"}


def test_replay_plays_a_recorded_bag():
    source = (ROOT / "launch" / "replay.launch.py").read_text()
    tree = ast.parse(source)
    declared = {ast.literal_eval(c.args[0]) for c in _calls(tree, "DeclareLaunchArgument")}
    assert declared == {"bag", "params_file", "out_dir"}
    assert '"replay_trial": LaunchConfiguration("bag")' in source


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
    assert 'parameters=[*sim_params, os.path.join(config, "experiment.yaml"),' in launch_source


def test_the_experiment_file_reads_as_the_node_gets_it(tmp_path: Path) -> None:
    from sim2real.control.reference import load_experiment_config

    assert load_experiment_config(ROOT / "config" / "experiment.yaml").distances == (0.30, 0.35, 0.40, 0.45, 0.50)
    both = tmp_path / "both.yaml"
    both.write_text("/**:\n  ros__parameters:\n    distances: [0.3]\n    push: {speed: 0.4}\n"
                    "experiment:\n  ros__parameters:\n    distances: [0.35, 0.4]\n")
    config = load_experiment_config(both)
    assert config.distances == (0.35, 0.40) and config.push.speed == 0.4

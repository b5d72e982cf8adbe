"""The experiment node's per-trial pushes as rcl gives it a designed experiment file (its ``trials`` section):
the same trials as :func:`sim2real.control.load_experiment_config` reads, each trial's own reference, and a
``distances`` override that does not fit the trials refused at start in one line."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import rclpy

from sim2real.control import ExperimentConfig, PushConfig, load_experiment_config, save_experiment_config
from sim2real.errors import Sim2RealError
from sim2real.model import load_arm
from sim2real.paths import config_file

#: Every test here builds the experiment node in this process: the module's ROS 2 domain and log directory.
pytestmark = pytest.mark.usefixtures("ros_env")

PUSH = PushConfig(height=0.15, lateral=0.0, start_x=0.20, end_x=0.40, speed=0.3, ramp_time=0.2, pre_time=0.1,
                  settle_time=0.5)


def _node(*params_files: Path):
    """An experiment node (mode sim) given these params files in this order, as the launch file gives them."""
    from sim2real.nodes.experiment import ExperimentNode

    context = rclpy.Context()
    rclpy.init(context=context)
    args = ["--ros-args", *[a for f in (config_file("params.yaml"), *params_files) for a in ("--params-file", str(f))]]
    try:
        node = ExperimentNode(progress=lambda line: None, context=context, cli_args=args, use_global_arguments=False)
    except BaseException:
        rclpy.try_shutdown(context=context)
        raise
    return node, context


def _close(node, context) -> None:
    node.close()
    node.destroy_node()
    rclpy.try_shutdown(context=context)


def _designed(tmp_path: Path, lateral: tuple[float, ...], distances=(0.30, 0.45)) -> Path:
    trials = tuple(replace(PUSH, lateral=y, end_x=0.40 - 0.04 * k) for k, y in enumerate(lateral))
    return save_experiment_config(tmp_path / "designed.yaml", ExperimentConfig(distances, PUSH, 0.01, trials))


def test_the_node_runs_each_trial_s_own_push_as_the_file_gives_it(tmp_path: Path) -> None:
    path = _designed(tmp_path, (0.0, 0.03))
    node, context = _node(path)
    try:
        assert node.config == load_experiment_config(path)  # one rule: the file's reading and the node's agree
        assert node.push == PUSH and node.distances == (0.30, 0.45)
        first, second = node.references
        table = float(node.params["contact.table_height"])
        np.testing.assert_allclose(first.pusher[0], [0.20, 0.0, table + 0.15], atol=1e-6)
        np.testing.assert_allclose(second.pusher[0], [0.20, 0.03, table + 0.15], atol=1e-6)
        np.testing.assert_allclose(second.pusher[-1], [0.36, 0.03, table + 0.15], atol=1e-6)
        np.testing.assert_allclose(second.pusher[:, 1], 0.03, atol=1e-6)
        assert first.t[-1] > second.t[-1]  # the shorter push of trial 2 is a shorter trial
    finally:
        _close(node, context)


def test_equal_pushes_are_planned_once() -> None:
    from sim2real.nodes.experiment import plan_trials

    trials = (PUSH, replace(PUSH, lateral=0.03), PUSH)
    references = plan_trials(load_arm(), ExperimentConfig((0.30, 0.40, 0.45), PUSH, 0.01, trials), 0.0)
    assert references[0] is references[2] and references[1] is not references[0]
    np.testing.assert_allclose(references[1].pusher[:, 1], 0.03, atol=1e-6)
    plain = plan_trials(load_arm(), ExperimentConfig((0.30, 0.45), PUSH), 0.0)
    assert plain[0] is plain[1]


def test_a_distances_override_that_does_not_fit_the_trials_stops_the_node_at_start(tmp_path: Path) -> None:
    """What ``ros2 launch ... experiment_file:=designed.yaml distances:=[0.3]`` gives the node (launch_ros
    writes the override as a ``/**`` params file after the experiment file)."""
    override = tmp_path / "launch_override.yaml"
    override.write_text("/**:\n  ros__parameters:\n    distances: [0.3]\n")
    with pytest.raises(Sim2RealError) as caught:
        _node(_designed(tmp_path, (0.0, 0.03)), override)
    message = str(caught.value)
    assert message == ("experiment parameters: trials.lateral has 2 entries but distances has 1; give one entry "
                       "per start distance")

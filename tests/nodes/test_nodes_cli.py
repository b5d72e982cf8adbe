"""The node scripts as a user (or ``ros2 launch``) runs them: ``--help``, bad arguments, bad
configuration and Ctrl-C, through subprocesses of the console scripts.

* ``--help`` prints what the node does, its parameters and how to give them, exit 0, and ROS
  never starts (no ROS log file is written);
* an argument of the script's own that it does not know: one line, exit 2;
* a bad configuration (no ``out_dir``, a missing params file, a wrong parameter type, ROS
  arguments rcl rejects): one line on stderr, exit 2, no traceback;
* SIGINT: exit 0 and no traceback, for an idle node, a node that publishes continuously, and
  the experiment node in the middle of a trial (the graph of ``box_push.launch.py mode:=sim``).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest
from children import LineReader, console_script, console_scripts, default_sigint

from sim2real.paths import config_file
from sim2real.trials import read_run

#: Every test here may start ROS 2 (in a child): its own domain and log directory.
pytestmark = pytest.mark.usefixtures("ros_env")

NODE_SCRIPTS = sorted(name for name in console_scripts() if name != "sim2real")
PARAMS = str(config_file("params.yaml"))
#: A slow push (about 5 s of motion): the test interrupts the experiment in the middle of it.
SLOW_EXPERIMENT = """\
experiment:
  ros__parameters:
    distances: [0.30]
    start_tolerance: 0.01
    push: {height: 0.15, lateral: 0.0, start_x: 0.20, end_x: 0.42, speed: 0.05, ramp_time: 0.2,
           pre_time: 0.1, settle_time: 0.3, rate_hz: 100.0}
"""


def _env(tmp_path: Path) -> dict[str, str]:
    """The child's environment, with a log directory of the test's own (rclpy.init writes one)."""
    return {**os.environ, "ROS_LOG_DIR": str(tmp_path / "roslog")}


def _run(tmp_path: Path, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*console_script(name), *args], env=_env(tmp_path), cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def _ros_started(tmp_path: Path) -> bool:
    """rclpy.init writes a log file into ROS_LOG_DIR."""
    log_dir = tmp_path / "roslog"
    return log_dir.exists() and any(log_dir.iterdir())


def _main(name: str) -> Callable[[list[str]], int]:
    module, func = console_scripts()[name].split(":")
    return getattr(importlib.import_module(module), func)


def _call(name: str, *args: str) -> int:
    """The script's ``main`` in this process (its own arguments are parsed before ROS would start)."""
    try:
        return _main(name)([name, *args])
    except SystemExit as stop:
        return int(stop.code or 0)


@pytest.mark.parametrize("name", NODE_SCRIPTS)
def test_help_and_unknown_arguments(name: str, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import rclpy

    def no_ros(*args: object, **kwargs: object) -> None:
        raise AssertionError("ROS started")

    monkeypatch.setattr(rclpy, "init", no_ros)
    assert _call(name, "--help") == 0
    result = capsys.readouterr()
    assert result.err == ""
    text = result.out
    assert text.startswith(f"usage: {name} [-h] [--ros-args")
    assert "Parameters (type, default: meaning, unit)" in text
    for how in ("--ros-args", "--params-file FILE", "-p NAME:=VALUE", "Exit status"):
        assert how in text, how
    assert f"{name} --ros-args --params-file config/params.yaml -p " in text

    assert _call(name, "--bogus", "--ros-args", "--params-file", PARAMS) == 2
    result = capsys.readouterr()
    assert result.err == f"{name}: error: unrecognized arguments: --bogus (see {name} --help)\n"
    assert result.out == ""


def test_help_through_the_console_script_starts_no_ros(tmp_path: Path) -> None:
    result = _run(tmp_path, "xarm_node", "--help")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert result.stdout.startswith("usage: xarm_node [-h] [--ros-args")
    assert not _ros_started(tmp_path)
    result = _run(tmp_path, "sim_node", "--bogus")
    assert result.returncode == 2 and result.stderr.startswith("sim_node: error: unrecognized arguments: --bogus")


def test_help_states_units(capsys: pytest.CaptureFixture[str]) -> None:
    _call("xarm_node", "--help")
    text = capsys.readouterr().out
    assert "rate_hz               double, 100.0: read → PD → command loop rate, Hz" in text
    assert "connect_wait" in text and "sim2real params" in text
    _call("experiment", "--help")
    text = capsys.readouterr().out
    assert "distances          double[], [0.30]: box start distances, m" in text


@pytest.mark.parametrize(("name", "args", "message"), [
    ("recorder", [], "recorder: error: parameter out_dir is required"),
    ("recorder", ["--ros-args", "--params-file", "missing.yaml"],
     "recorder: error: params file not found: missing.yaml"),
    ("sim_node", ["--ros-args", "--params-file", "."], "sim_node: error: params file . is a directory"),
    ("recorder", ["--ros-args", "-p", "out_dir:=run", "-p", "pd.kp:=5"],
     "recorder: error: Trying to set parameter 'pd.kp' to '5' of type 'INTEGER', expecting type 'DOUBLE'"),
    ("mocap_bridge", ["--ros-args", "-p", "topic"], "mocap_bridge: error: bad ROS arguments: "),
    ("experiment", ["--ros-args", "-p", "mode:=moon"], "experiment: error: "),
], ids=["no-out_dir", "missing-params-file", "params-file-is-a-directory", "int-for-double", "bad-ros-args",
        "bad-mode"])
def test_a_bad_configuration_is_one_line(tmp_path: Path, name: str, args: list[str], message: str) -> None:
    result = _run(tmp_path, name, *args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(message), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def _start(tmp_path: Path, name: str, *ros_args: str, stdout: IO[str] | int = subprocess.PIPE
           ) -> subprocess.Popen[str]:
    """Start a node script with SIGINT at its default (a background job inherits it ignored)."""
    return subprocess.Popen([*console_script(name), "--ros-args", *ros_args], env=_env(tmp_path), cwd=tmp_path,
                            stdout=stdout, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
                            preexec_fn=default_sigint)


def _stop(process: subprocess.Popen[str]) -> int:
    """SIGINT, then the exit status; SIGKILL (and a failure) if it does not stop."""
    process.send_signal(signal.SIGINT)
    try:
        return process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError("the node did not stop within 30 s of SIGINT") from None


@pytest.mark.ros
@pytest.mark.parametrize(("name", "args", "ready"), [
    ("mocap_bridge", [], "mocap /mocap/box/pose -> real/box_pose"),  # idle: waits for mocap poses
    ("sim_node", ["--params-file", PARAMS], "sim platform running"),  # busy: steps and publishes at 100 Hz
], ids=["idle-mocap_bridge", "busy-sim_node"])
def test_sigint_exits_0_without_traceback(tmp_path: Path, name: str, args: list[str], ready: str) -> None:
    process = _start(tmp_path, name, *args)
    lines = LineReader(process.stdout)
    seen: list[str] = []
    try:
        while not seen or ready not in seen[-1]:
            line = lines.next(timeout=120)
            assert line is not None, "".join(seen)
            seen.append(line)
        time.sleep(0.5)  # at work for a while (sim_node: about 50 steps published)
        status = _stop(process)
        while (line := lines.next(timeout=10)) is not None:
            seen.append(line)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert status == 0, "".join(seen)
    assert "Traceback" not in "".join(seen)


@pytest.mark.ros
@pytest.mark.slow
def test_sigint_mid_trial_stops_the_experiment_cleanly(tmp_path: Path) -> None:
    """The sim-mode graph of ``box_push.launch.py``; Ctrl-C reaches the experiment while it runs a
    trial (it published the reference, the recorder has the trial open): no traceback anywhere; the
    interrupted trial is kept, marked incomplete; every node exits 0 except the experiment, which
    exits 130 because its trials were not all recorded (what makes the launch exit non-zero)."""
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(SLOW_EXPERIMENT)
    out = tmp_path / "run"
    commands = {
        "sim_node": ("sim_node", "--params-file", PARAMS, "-p", "mirror:=closed"),
        "sim_pd_controller": ("pd_controller", "-r", "__node:=sim_pd_controller", "--params-file", PARAMS,
                              "-p", "platform:=sim", "-p", "mirror:=closed"),
        "recorder": ("recorder", "--params-file", PARAMS, "-p", f"out_dir:={out}"),
        "experiment": ("experiment", "--params-file", PARAMS, "--params-file", str(experiment), "-p", "mode:=sim",
                       "-p", "mirror:=closed"),
    }
    processes: dict[str, subprocess.Popen[str]] = {}
    with contextlib.ExitStack() as logs_open:
        for name, (script, *args) in commands.items():
            log = logs_open.enter_context(open(tmp_path / f"{name}.log", "w"))
            processes[name] = _start(tmp_path, script, *args, stdout=log)
        _interrupt_mid_trial(processes, out, tmp_path)
        status = {name: process.returncode for name, process in processes.items()}
    logs = {name: (tmp_path / f"{name}.log").read_text() for name in commands}
    for name, code in status.items():
        assert code == (130 if name == "experiment" else 0), (name, code, logs[name][-2000:])
    assert "Traceback" not in "".join(logs.values()), logs
    assert "experiment failed" not in logs["experiment"]
    (record,) = read_run(out)
    assert not record.complete


def _interrupt_mid_trial(processes: dict[str, subprocess.Popen[str]], out: Path, tmp_path: Path) -> None:
    """Wait until the recorder has a trial open, SIGINT the experiment a second later, then the others."""
    try:
        deadline = time.monotonic() + 240
        while not (out.is_dir() and any(p.name.endswith(".partial") for p in out.iterdir())):
            assert processes["experiment"].poll() is None, (tmp_path / "experiment.log").read_text()
            assert time.monotonic() < deadline, "no trial started within 240 s"
            time.sleep(0.05)
        time.sleep(1.0)  # in the middle of the push
        assert processes["experiment"].poll() is None, "the trial ended before the interrupt"
        _stop(processes["experiment"])
        for name in ("recorder", "sim_pd_controller", "sim_node"):
            _stop(processes[name])
    finally:
        for process in processes.values():  # clean up by pid whatever happened
            if process.poll() is None:
                process.kill()
                process.wait()

"""The experiment graph as separate processes, the way ``launch/box_push.launch.py mode:=standin``
starts it: each node its own console script with ``--ros-args --params-file``; they find each
other over DDS on loopback and complete a trial."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from children import console_script
from standin_runs import ATTEMPTS, STARVATION_FAULTS
from test_standin import MIN_TICKS, STARVED_MIN_TICKS, check_platform_pd_law

from sim2real.nodes.runner import STANDIN_LINK
from sim2real.paths import config_file
from sim2real.trials import read_run
from sim2real.trials.coverage import starved_platforms

ROOT = Path(__file__).resolve().parents[2]
#: Ticks the separate processes must record of the trial's ~170 when the trial does not record the loop as
#: starved: seven node processes share the cores, and a loaded machine skips late ticks (106 recorded with
#: two CPU hogs beside them on 2 cores). A starved loop needs only :data:`STARVED_MIN_TICKS` (53 real joint
#: states once, beside make test's computing part).
MIN_TICKS_PROCESSES = MIN_TICKS // 2
EXPERIMENT = """\
experiment:
  ros__parameters:
    distances: [0.30]
    start_tolerance: 0.01
    push: {height: 0.15, lateral: 0.0, start_x: 0.20, end_x: 0.42, speed: 0.2, ramp_time: 0.2,
           pre_time: 0.1, settle_time: 0.3, rate_hz: 100.0}
"""


def _run_graph(tmp: Path, env: dict[str, str], port: int) -> tuple[Path, int, dict[str, int | None], dict[str, str]]:
    """Start the seven node processes, wait for the experiment to end, SIGINT the rest. Returns the
    run directory, the experiment's exit code, each other node's exit code after SIGINT (None: still
    running 15 s later) and each node's log."""
    experiment = tmp / "experiment.yaml"
    experiment.write_text(EXPERIMENT)
    params = str(config_file("params.yaml"))
    host = f"127.0.0.{30 + os.getpid() % 10}"
    out = tmp / "run"
    commands = {
        "standin_world": ["--params-file", params, "-p", f"host:={host}", "-p", f"command_port:={port}"],
        # connect_wait: the stand-in may need tens of seconds after an engine change (compilation).
        # xarm_node runs the real platform's PD law in its read loop, with the stand-in's link budgets
        # as the launch file gives them (its emulator shares a process with the contact engine).
        "xarm_node": ["--params-file", params, "-p", f"robot_ip:={host}", "-p", f"command_port:={port}",
                      "-p", "connect_wait:=120.0", *(arg for name, value in STANDIN_LINK.items()
                                                     for arg in ("-p", f"{name}:={value}"))],
        "sim_node": ["--params-file", params, "-p", "mirror:=closed"],
        "sim_pd_controller": ["-r", "__node:=sim_pd_controller", "--params-file", params,
                              "-p", "platform:=sim", "-p", "mirror:=closed"],
        "recorder": ["--params-file", params, "-p", f"out_dir:={out}"],
        "experiment": ["--params-file", params, "--params-file", str(experiment), "-p", "mode:=standin",
                       "-p", "mirror:=closed"],
    }
    processes: dict[str, subprocess.Popen] = {}
    logs = {}
    try:
        for name, args in commands.items():
            script = "pd_controller" if name.endswith("pd_controller") else name
            logs[name] = open(tmp / f"{name}.log", "w")  # noqa: SIM115 - closed below
            processes[name] = subprocess.Popen(
                [*console_script(script), "--ros-args", *args], env=env, cwd=tmp, stdout=logs[name],
                stderr=subprocess.STDOUT, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        status = processes["experiment"].wait(timeout=240)
        others: dict[str, int | None] = {}
        for process in processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 15
        for name, process in processes.items():
            if name == "experiment":
                continue
            try:
                others[name] = process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:  # named by the test below, not an error of the fixture
                others[name] = None
    finally:
        for process in processes.values():  # clean up by pid whatever happened
            if process.poll() is None:
                process.kill()
                process.wait()
        for log in logs.values():
            log.close()
    texts = {name: (tmp / f"{name}.log").read_text() for name in commands}
    return out, status, others, texts


def _starved(status: int, texts: dict[str, str]) -> bool:
    """The experiment failed, and the driver's fault was one of :data:`STARVATION_FAULTS`; or the recorder,
    kept from a CPU, got the trial's streams too late and wrote it incomplete (seen beside a full test
    suite: the streams' last messages arrived more than its drain wait, then 5 s, after the trial's end)."""
    return ((status != 0 and any(fault in texts["experiment"] for fault in STARVATION_FAULTS))
            or "recorded incomplete" in texts["recorder"])


@pytest.fixture(scope="module")
def graph(ros_env, tmp_path_factory):
    """The graph's run, again (fresh directory and port, at most ``ATTEMPTS`` runs) while a starved
    process stopped the arm; the last run is the one the tests judge."""
    env = {**ros_env, "PYTHONPATH": str(ROOT)}
    for attempt in range(1, ATTEMPTS + 1):
        tmp = tmp_path_factory.mktemp(f"graph{attempt}")
        out, status, others, texts = _run_graph(tmp, env, port=5300 + os.getpid() % 500 + 500 * (attempt - 1))
        if attempt == ATTEMPTS or not _starved(status, texts):
            return out, status, others, texts
        print(f"attempt {attempt}: a starved process stopped the arm or cut the recording; again:\n"
              f"{texts['experiment'][-500:]}{texts['recorder'][-500:]}")
    raise AssertionError("unreachable: ATTEMPTS is at least 1")


def test_separate_processes_complete_a_trial(graph):
    out, status, _, texts = graph
    assert status == 0, texts["experiment"][-2000:] + texts["xarm_node"][-1000:]
    (record,) = read_run(out)
    assert record.name == "trial_00_d0.300" and record.complete
    assert record.meta["mode"] == "standin" and record.meta["mirror"] == "closed"
    for platform in ("real", "sim"):
        data = record.platforms[platform]
        ticks = STARVED_MIN_TICKS if platform in starved_platforms(record.meta) else MIN_TICKS_PROCESSES
        assert len(data.joint_states) >= ticks and len(data.box_pose) >= ticks - 10, (platform, record.meta.get(
            "loop_health"))
        assert check_platform_pd_law(record, platform) >= ticks - 10
    assert record.meta["outcomes"]["real"]["final_distance_m"] > 0.32


def test_every_node_stops_on_sigint(graph):
    _, _, others, texts = graph
    for name, code in others.items():
        # A stop on request is not a failure; None: still running 15 s after SIGINT.
        assert code == 0, (name, code, texts[name][-1500:])
    assert "Traceback" not in "".join(texts.values())

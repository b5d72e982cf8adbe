"""``sim2real run`` end to end as a subprocess: bad input, and Ctrl-C in the middle of a trial."""

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from sim2real.trials import read_trial

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENT = """\
experiment:
  ros__parameters:
    distances: [0.30]
    start_tolerance: 0.01
    push: {height: 0.15, lateral: 0.0, start_x: 0.20, end_x: 0.42, speed: 0.2, ramp_time: 0.2,
           pre_time: 0.1, settle_time: 1.5, rate_hz: 100.0}
"""


@pytest.fixture()
def env(ros_env, tmp_path):
    return {**ros_env, "ROS_LOG_DIR": str(tmp_path / "roslog"), "PYTHONPATH": str(ROOT)}


def _wait_for_trial(process: subprocess.Popen, out: Path, seconds: float) -> None:
    """Wait until the run has a trial open (its ``.partial`` directory), failing if the run ends first."""
    deadline = time.monotonic() + seconds
    while not (out.is_dir() and any(p.name.endswith(".partial") for p in out.iterdir())):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the trial never started"
        time.sleep(0.05)


def sim2real(*args, env, **kwargs):
    return subprocess.Popen([sys.executable, "-m", "sim2real", *args], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kwargs)


@pytest.mark.parametrize("args, message", [
    (["--mode", "sim", "--mirror", "commands"], "needs a real and a sim platform"),
    (["--mode", "sim", "--distances", "0.3,abc"], "comma-separated numbers"),
    (["--mode", "sim", "--distances", "2.0"], "outside"),
])
def test_bad_input_is_one_line_and_status_2(tmp_path, env, args, message):
    process = sim2real("run", *args, "--out", str(tmp_path / "run"), env=env)
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 2
    assert err.strip().count("\n") == 0 and message in err and err.startswith("sim2real: error:")


def test_non_empty_output_directory_is_refused(tmp_path, env):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "keep.txt").write_text("x")
    process = sim2real("run", "--mode", "sim", "--out", str(tmp_path / "run"), env=env)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2 and "not empty" in err


def test_the_sim_platform_runs_on_mujoco_and_the_records_say_so(tmp_path, env):
    pytest.importorskip("mujoco")
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(EXPERIMENT)
    out = tmp_path / "run"
    process = sim2real("run", "--mode", "sim", "--engine", "mujoco", "--experiment", str(experiment),
                       "--out", str(out), env=env)
    stdout, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "engine mujoco" in err and "1 trial(s) recorded" in stdout
    import json

    assert json.loads((out / "run.json").read_text())["engine"] == "mujoco"
    trial = read_trial(out / "trial_00_d0.300")
    assert trial.meta["engine"] == "mujoco"
    box = trial.platforms["sim"].box_pose
    assert box is not None and box.position[-1, 0] > box.position[0, 0] + 0.05  # pushed


#: Two trials with pushes of their own (the ``trials`` section, as ``sim2real design`` writes it): the second
#: pushes 3 cm off the box's centre line and stops 4 cm short of the first.
TRIALS_EXPERIMENT = """\
/**:
  ros__parameters:
    distances: [0.30, 0.33]
    start_tolerance: 0.01
    push: {height: 0.15, lateral: 0.0, start_x: 0.20, end_x: 0.40, speed: 0.3, ramp_time: 0.2,
           pre_time: 0.1, settle_time: 0.5, rate_hz: 100.0}
    trials:
      lateral: [0.0, 0.03]
      end_x: [0.40, 0.36]
"""


def test_each_trial_pushes_its_own_push_and_records_it(tmp_path, env):
    """``run --experiment`` with a trials section: each trial's pusher follows its own path (y at its lateral
    offset throughout, ending at its end_x) and its trial.json holds that push; run.json keeps the file's push."""
    import json

    from sim2real.trials.meta import TrialMeta

    experiment = tmp_path / "designed.yaml"
    experiment.write_text(TRIALS_EXPERIMENT)
    out = tmp_path / "run"
    process = sim2real("run", "--mode", "sim", "--experiment", str(experiment), "--out", str(out), env=env)
    stdout, err = process.communicate(timeout=180)
    assert process.returncode == 0, err[-2000:]
    assert "2 trial(s) recorded" in stdout and "d=0.330 m lateral=+0.030 m:" in stdout, stdout
    assert json.loads((out / "run.json").read_text())["push"]["lateral"] == 0.0
    for name, lateral, end_x in (("trial_00_d0.300", 0.0, 0.40), ("trial_01_d0.330", 0.03, 0.36)):
        record = read_trial(out / name)
        assert record.complete, record.meta.get("note")
        pusher = record.platforms["sim"].pusher_pose.position
        # the PD-tracked pusher stays within 2 mm of its own lateral line and ends within 2 mm of its end_x
        assert np.max(np.abs(pusher[:, 1] - lateral)) < 2e-3, (name, pusher[:, 1].min(), pusher[:, 1].max())
        assert abs(pusher[-1, 0] - end_x) < 2e-3, (name, pusher[-1])
        push = TrialMeta(record.meta).push
        assert push is not None and (push["lateral"], push["end_x"]) == (lateral, end_x)
        assert (push["start_x"], push["speed"], push["settle_time"]) == (0.20, 0.3, 0.5)  # the file's push


def test_ctrl_c_mid_trial_keeps_a_readable_incomplete_trial(tmp_path, env):
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(EXPERIMENT)
    out = tmp_path / "run"
    process = sim2real("run", "--mode", "sim", "--experiment", str(experiment), "--out", str(out), env=env)
    try:
        _wait_for_trial(process, out, 60)
        time.sleep(1.0)  # well inside the 3 s trial
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    record = read_trial(out / "trial_00_d0.300")
    assert not record.complete
    # Interrupted before the end of the 3 s trial (300 ticks). How far the sim got in the second before the
    # interrupt is the scheduler's business (none to 3 ticks beside CPU-bound work, ~100 idle: a sim that
    # had not recorded a tick is absent from the record), so only what was recorded is checked: kept,
    # readable, every stamp inside the trial and in order.
    assert record.reference is not None
    sim = record.platforms.get("sim")
    for series in (sim.joint_states, sim.joint_command) if sim is not None else ():
        assert series is None or len(series) < 290
        if series is not None and len(series):
            assert np.all(np.diff(series.t) > 0) and series.t[-1] < 3.0
    assert not any(p.name.endswith(".partial") for p in out.iterdir())


def _alive(pids: list[int]) -> list[int]:
    """The processes of ``pids`` still running (not gone, not zombies)."""
    alive = []
    for pid in pids:
        try:
            if "zombie" not in Path(f"/proc/{pid}/status").read_text():
                alive.append(pid)
        except OSError:
            pass
    return alive


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_a_signal_mid_standin_trial_stops_every_child(tmp_path, env, signum):
    """Ctrl-C unwinds the run (every child stopped, the trial kept, exit 130; SIGTERM takes the same
    path, see the sweep test); after SIGKILL of the run the children end on their own (regression:
    a killed run left the stand-in world running as an orphan)."""
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(EXPERIMENT)
    out = tmp_path / "run"
    process = sim2real("run", "--mode", "standin", "--experiment", str(experiment), "--standin-host",
                       f"127.0.0.{80 + os.getpid() % 10}", "--out", str(out), env=env)
    children: list[int] = []
    try:
        _wait_for_trial(process, out, 120)
        children = _children(process.pid)
        # Inside the push: the trial lasts about 2.9 s. At 1.0 s, with a CPU-bound process beside
        # the run, one platform had not recorded a joint state yet (the sim platform runs niced).
        time.sleep(1.8)
        process.send_signal(signum)
        if signum == signal.SIGKILL:  # the children hold the run's stderr: no communicate() while they live
            process.wait(timeout=30)
            err = ""
        else:
            _, err = process.communicate(timeout=30)
        deadline = time.monotonic() + 20
        while _alive(children) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        left = _alive(children)
        for pid in left:  # never leave a node behind, whatever failed
            os.kill(pid, signal.SIGKILL)
    assert len(children) == 3  # stand-in, real platform, sim platform
    assert not left, f"children still running after {signum.name} of the run"
    if signum == signal.SIGKILL:
        assert process.returncode == -signal.SIGKILL
        os.set_blocking(process.stderr.fileno(), False)  # whatever the ended children wrote; never wait
        err = os.read(process.stderr.fileno(), 1 << 20).decode(errors="replace") if select.select(
            [process.stderr], [], [], 0)[0] else ""
        if "still closing" in err:  # ended by the close deadline: no orphan, but say where it hung
            warnings.warn(f"a node process hung while closing:\n{err[-6000:]}", stacklevel=1)
        return
    assert process.returncode == 130 and "interrupted" in err, err[-2000:]
    # The interrupted trial is kept, readable and marked incomplete with what each stream covered. How
    # much each platform recorded before the signal depends on the machine's load (once, beside other
    # work, the real platform had not recorded a joint state yet): only "less than a whole trial" holds.
    record = read_trial(out / "trial_00_d0.300")
    assert not record.complete and "interrupted" in record.meta["note"]
    assert set(record.meta["coverage"]["streams"]) <= {f"{ns}/{s}" for ns in ("real", "sim")
                                                       for s in ("joint_states", "joint_command", "box_pose",
                                                                 "pusher_pose")}
    for platform in ("real", "sim"):
        data = record.platforms.get(platform)
        assert data is None or data.joint_states is None or len(data.joint_states) < 290
    assert not any(p.name.endswith(".partial") for p in out.iterdir())


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _threads(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def _spin() -> None:
    x = 0
    while True:
        x = (x * 1103515245 + 12345) % 2147483648


def _stop_for(pid: int, run_pid: int, seconds: float) -> None:
    """SIGSTOP the real platform's process for ``seconds``."""
    os.kill(pid, signal.SIGSTOP)
    time.sleep(seconds)
    os.kill(pid, signal.SIGCONT)


def _pinned_neighbours(pid: int, run_pid: int, seconds: float) -> None:
    """Pin every thread of the run and its children to one CPU, 4 busy loops pinned beside them, for ``seconds``."""
    import multiprocessing

    cpu = min(os.sched_getaffinity(0))
    tree = [run_pid, *_children(run_pid)]
    saved = {}
    for process in tree:
        for tid in _threads(process):
            with contextlib.suppress(OSError):  # a thread that just ended
                saved[tid] = os.sched_getaffinity(tid)
                os.sched_setaffinity(tid, {cpu})
    context = multiprocessing.get_context("fork")
    spinners = [context.Process(target=_spin, daemon=True) for _ in range(4)]
    for spinner in spinners:
        spinner.start()
        os.sched_setaffinity(spinner.pid, {cpu})
    try:
        time.sleep(seconds)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.join()
        for tid, cpus in saved.items():
            with contextlib.suppress(OSError):  # a thread that ended meanwhile
                os.sched_setaffinity(tid, cpus)


@pytest.mark.parametrize("starve, exits", [(_stop_for, (3, 4)), (_pinned_neighbours, (0, 3, 4))],
                         ids=["sigstop", "pinned_neighbours"])
def test_a_starved_real_platform_is_never_recorded_as_a_complete_healthy_trial(tmp_path, env, starve, exits):
    """The real platform starved mid-push: SIGSTOP of its process for 0.4 s, or the whole run pinned to one CPU
    beside 4 busy loops pinned there for 1 s (what a busy machine does to it). The trial is either written
    incomplete with the reason and no outcome from a cut stream, or complete with every stream covering the
    window, and a starved loop flagged; the run says which and exits 3 (recorded, degraded) or 4 (the driver
    faulted and stopped the arm); exit 0 (pinned only: the loops kept up) means complete, covered and not starved."""
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(EXPERIMENT)
    out = tmp_path / "run"
    process = sim2real("run", "--mode", "standin", "--experiment", str(experiment), "--standin-host",
                       f"127.0.0.{90 + os.getpid() % 10}", "--out", str(out), env=env)
    try:
        _wait_for_trial(process, out, 120)
        (real,) = [pid for pid in _children(process.pid) if "xarm_node" in _cmdline(pid)]
        time.sleep(0.8)  # the reference starts 0.3 s after the trial's start event, then holds 0.1 s
        starve(real, process.pid, 0.4 if starve is _stop_for else 1.0)
        stdout, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    if process.returncode not in exits:  # the whole of both streams, untruncated, in the failure's report
        print(f"exit {process.returncode}\n--- stdout\n{stdout}\n--- stderr\n{err}")
    assert process.returncode in exits, (process.returncode, stdout[-2000:], err[-2000:])
    record = read_trial(out / "trial_00_d0.300")
    streams, duration = record.meta["coverage"]["streams"], record.meta["coverage"]["duration_s"]
    print(f"exit {process.returncode}, complete {record.complete}, real loop {record.meta.get('loop_health', {})}")
    if record.complete:
        health = record.meta["loop_health"]["real"]
        if process.returncode == 0:
            assert not health["starved"], health
        else:
            assert process.returncode == 3 and f"STARVED {record.name} real" in stdout, stdout
            assert health["starved"], health
        if starve is _stop_for:  # one 0.4 s freeze: a watchdog gap (the pinned loop may only run slow)
            assert health["worst_gap_s"] >= 0.3 and health["watchdog_gaps"] >= 1, health
        for series in ("joint_states", "joint_command", "box_pose"):
            for ns in ("real", "sim"):
                entry = streams[f"{ns}/{series}"]
                assert entry["first_s"] <= 0.05 and entry["last_s"] >= duration - 0.05, (ns, series, entry)
    else:
        assert process.returncode != 0 and record.meta["note"], record.meta
        for ns in ("real", "sim"):
            entry = streams.get(f"{ns}/box_pose")
            if entry is None or entry["last_s"] is None or entry["last_s"] < duration - 0.05:
                assert "error" in record.meta["outcomes"][ns], record.meta["outcomes"]
        if process.returncode == 3:
            assert f"INCOMPLETE {record.name}" in stdout, stdout
        else:
            last = err.strip().splitlines()[-1]
            assert last.startswith("sim2real: error:") and "xArm" in last, err[-2000:]


#: Moments (s after the run's first child process appeared) of a terminal's Ctrl-C, which reaches every process
#: of the foreground group: while the children import and build their nodes (a traceback per child, before).
START_UP_INTERRUPTS = (0.2, 1.0, 2.5)


@pytest.mark.parametrize("after", START_UP_INTERRUPTS)
def test_ctrl_c_to_the_whole_group_during_start_up_is_one_line_and_exit_130(tmp_path, env, after):
    """Ctrl-C in a terminal signals the run and each of its children at once; during their start-up the
    output is the run's one line ``sim2real: interrupted`` with exit 130, and no child prints a traceback."""
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(EXPERIMENT)
    process = subprocess.Popen([sys.executable, "-m", "sim2real", "run", "--mode", "standin", "--experiment",
                                str(experiment), "--standin-host", f"127.0.0.{90 + os.getpid() % 10}", "--out",
                                str(tmp_path / "run")], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True,
                               preexec_fn=lambda: (signal.signal(signal.SIGINT, signal.SIG_DFL), os.setpgrp()))
    try:
        deadline = time.monotonic() + 120
        while not _children(process.pid):
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.02)
        time.sleep(after)
        os.killpg(process.pid, signal.SIGINT)
        out, _ = process.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert "Traceback" not in out and "Exception ignored" not in out, out[-4000:]
    assert process.returncode == 130, out[-2000:]
    assert out.rstrip().splitlines()[-1] == "sim2real: interrupted", out[-2000:]

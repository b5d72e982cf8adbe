"""``sim2real run --mode standin``: emulated xArm (real SDK on loopback) + stand-in world + mirrored sim.

Two complete trials; each platform's commands are the PD law of its own recorded states on
the one recorded reference; outcomes match the recorded poses; ``--mirror commands`` gives
identical command streams; the stand-in's hidden parameters are 20-40 % off nominal; the bags
carry what a 3D viewer needs and the stand-in's mocap poses follow rosbag2's time convention.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import standin_runs
from fixtures.foxglove import layout_frames, layout_topics, load_layout
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore

from sim2real.control import CommandLimits, PDGains, Workspace, pd_command
from sim2real.control.reference import JointTrajectory
from sim2real.control.tracker import MAX_TICK_GAP
from sim2real.hardware.standin import MocapConfig, MocapModel, load_standin
from sim2real.model import load_arm
from sim2real.params import ParameterSet, load_params
from sim2real.paths import config_file
from sim2real.trials import compute_outcome, read_run, read_run_meta
from sim2real.trials.coverage import starved_platforms

ROOT = Path(__file__).resolve().parents[2]
SHORT_EXPERIMENT = """\
experiment:
  ros__parameters:
    distances: [0.30, 0.45]
    start_tolerance: 0.01
    push: {height: 0.15, lateral: 0.0, start_x: 0.20, end_x: 0.42, speed: 0.2, ramp_time: 0.2,
           pre_time: 0.1, settle_time: 0.3, rate_hz: 100.0}
"""
#: Ticks of the short trial: (0.1 + 0.22 / 0.2 + 0.2 + 0.3) s at 100 Hz is about 170; a loaded
#: machine skips ticks that come more than a period late, so the tests ask for fewer.
MIN_TICKS = 110
#: Fewest ticks of a platform whose loop the trial records as starved (``run`` names it STARVED and exits
#: 3): how many ticks a starved loop makes is the machine's load, not a property of the run (seen: 104
#: commands beside a benchmark's four busy processes, 53 joint states beside make test's computing part),
#: so the floor only keeps the comparisons below from being vacuous: 20 ticks (a 12 Hz loop over the
#: 1.7 s trial) leave at least 10 commands to check against the PD law.
STARVED_MIN_TICKS = 20
#: The standard push's reference moves the joints at up to this speed (rad/s).
REFERENCE_SPEED = 1.3


def min_ticks(record, platform: str) -> int:
    """:data:`MIN_TICKS`, or :data:`STARVED_MIN_TICKS` when ``platform``'s loop was starved in ``record``."""
    return STARVED_MIN_TICKS if platform in starved_platforms(record.meta) else MIN_TICKS


@pytest.fixture(scope="module")
def env(ros_env):
    return {**ros_env, "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="module")
def experiment_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cfg") / "experiment.yaml"
    path.write_text(SHORT_EXPERIMENT)
    return path


def run_cli(out: Path, env: dict, experiment_file: Path, *extra: str) -> subprocess.CompletedProcess:
    host = f"127.0.0.{20 + os.getpid() % 10}"
    return subprocess.run([sys.executable, "-m", "sim2real", "run", "--mode", "standin", "--experiment",
                           str(experiment_file), "--standin-host", host, "--timeout", "150", "--out", str(out),
                           *extra], env=env, cwd=ROOT, capture_output=True, text=True, timeout=200,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def recorded_run(out: Path, env: dict, experiment_file: Path, *extra: str
                 ) -> tuple[subprocess.CompletedProcess, Path]:
    """:func:`run_cli` until its recording is complete: exit 0, or 3 when the only remark is a starved control
    loop (a busy machine delayed the real loop past the driver's watchdog; run says so per trial, and that is
    load, not a fault of the run). A run whose starved loop also cut a stream, or that a starvation fault stopped,
    is made again (:mod:`standin_runs`, at most :data:`standin_runs.ATTEMPTS` runs). Returns the last run and its
    directory."""
    def attempt(number: int) -> tuple[subprocess.CompletedProcess, Path]:
        target = out if number == 1 else out.with_name(f"{out.name}.{number}")
        return run_cli(target, env, experiment_file, *extra), target

    result, target = standin_runs.until_recorded(
        attempt, lambda run: (run[0].returncode, run[0].stdout, run[0].stderr))
    assert standin_runs.recorded(result.returncode, result.stdout), (
        result.returncode, standin_runs.remarks(result.stdout), result.stderr[-3000:])
    return result, target


@pytest.fixture(scope="module")
def closed_run(tmp_path_factory, env, experiment_file):
    out = tmp_path_factory.mktemp("runs") / "closed"
    result, out = recorded_run(out, env, experiment_file, "--distances", "0.30,0.45")
    return out, result.stdout


@pytest.fixture(scope="module")
def commands_run(tmp_path_factory, env, experiment_file):
    out = tmp_path_factory.mktemp("runs") / "commands"
    _, out = recorded_run(out, env, experiment_file, "--distances", "0.30", "--mirror", "commands")
    return out


def reference_of(record) -> JointTrajectory:
    ref = record.reference
    return JointTrajectory(ref.t, ref.position, ref.velocity, np.zeros((len(ref.t), 3)))


def check_platform_pd_law(record, platform: str) -> int:
    """Every command of ``platform`` (after its first) is the PD law on that platform's recorded
    state of the same tick (stamp), the recorded reference and the previous command, its
    acceleration limit over the time since that command (the sim's ticks are exactly ``sim.dt``
    apart; the real loop's are as late as the machine made them). A command whose state the recorder
    did not get is skipped (seen beside a loaded machine: 129 of 167 real joint states, every command,
    the stream's worst gap 65 ms); returns how many were checked, for the caller to bound."""
    params = ParameterSet.nominal().replace(record.meta["params"])
    gains = PDGains.from_params(params)
    limits = CommandLimits.for_arm(load_arm(params), params, Workspace())
    reference = reference_of(record)
    states, commands = record.platforms[platform].joint_states, record.platforms[platform].joint_command
    by_stamp = {round(t * 1e9): k for k, t in enumerate(states.t)}
    checked = 0
    for k in range(1, len(commands.t)):
        j = by_stamp.get(round(commands.t[k] * 1e9))
        if j is None:
            continue
        q_ref, v_ref = reference.sample(commands.t[k])
        np.testing.assert_allclose(commands.position[k], q_ref, rtol=0, atol=1e-12)
        step = min(max(commands.t[k] - commands.t[k - 1], 0.0), MAX_TICK_GAP)
        out = pd_command(q_ref, v_ref, states.position[j], states.velocity[j], gains, limits,
                         commands.velocity[k - 1], step)
        np.testing.assert_allclose(commands.velocity[k], out.velocity, rtol=0, atol=1e-9)
        checked += 1
    return checked


def test_two_complete_trials_with_both_platforms(closed_run):
    out, stdout = closed_run
    records = read_run(out)
    assert [r.name for r in records] == ["trial_00_d0.300", "trial_01_d0.450"]
    assert read_run_meta(out)["mode"] == "standin"
    assert stdout.count("trial ") == 2 and "2 trial(s) recorded" in stdout
    for record in records:
        assert record.complete and record.meta["mirror"] == "closed"
        # Complete means every stream covered the window; each platform's loop health is recorded.
        streams = record.meta["coverage"]["streams"]
        for platform in ("real", "sim"):
            for series in ("joint_states", "joint_command", "box_pose"):
                entry = streams[f"{platform}/{series}"]
                assert entry["first_s"] <= 0.05 and entry["last_s"] >= record.meta["coverage"]["duration_s"] - 0.05
            health = record.meta["loop_health"][platform]
            assert health["nominal_rate_hz"] == pytest.approx(100.0) and health["command_rate_hz"] > 0
            data = record.platforms[platform]
            ticks = min_ticks(record, platform)
            assert len(data.joint_states) >= ticks and len(data.joint_command) >= ticks - 5
            assert len(data.box_pose) >= ticks - 10


def test_real_loop_is_paced_by_its_100_hz_clock(closed_run):
    """The real loop ticks on a 100 Hz clock: never more ticks than the clock gives over the trial,
    each tick's state stamped after the last, one PD command per tick at most. (How close to 100 Hz
    it runs and its jitter are timing figures: ``python -m benchmarks.loop``.)"""
    for record in read_run(closed_run[0]):
        stamps = record.platforms["real"].joint_states.t
        commands = record.platforms["real"].joint_command.t
        assert np.all(np.diff(stamps) > 0.0)
        # Absolute deadlines: tick n fires no earlier than n - 1 periods after the first (one more
        # for the stamp, taken after the state read, whose duration varies).
        assert len(stamps) - 1 <= (stamps[-1] - stamps[0]) / 0.01 + 2
        assert len(commands) <= len(stamps) and set(np.round(commands * 1e9)) <= set(np.round(stamps * 1e9))


def test_both_platforms_tracked_the_identical_reference(closed_run):
    for record in read_run(closed_run[0]):
        reference = reference_of(record)
        for platform in ("real", "sim"):
            states = record.platforms[platform].joint_states
            inside = states.t <= reference.t[-1]
            q_ref = np.array([reference.sample(t)[0] for t in states.t[inside]])
            error = np.abs(states.position[inside] - q_ref)
            # The servo lags the reference (up to 1.3 rad/s) by a few periods: 0.05-0.07 rad at
            # most; it never loses it and ends on it. The short trial settles for 0.3 s (3 time
            # constants of kp = 10/s); the real loop's latency varies with the machine's load
            # (measured end errors up to 0.010 rad on the real platform), hence the bound. A loop
            # that missed ticks let the reference run ahead at up to 1.3 rad/s for its worst gap
            # (0.127 rad on a sim loop whose worst gap was 33 ms, beside make test's computing part).
            health = record.meta.get("loop_health", {}).get(platform, {})
            late = max(0.0, float(health.get("worst_gap_s", 0.01)) - 0.01)
            assert error.max() < 0.12 + REFERENCE_SPEED * late, (platform, error.max(), health)
            assert error[-1].max() < 0.025, (platform, error[-1])


def test_every_command_is_the_pd_law_of_its_platforms_state(closed_run):
    for record in read_run(closed_run[0]):
        for platform in ("real", "sim"):
            assert check_platform_pd_law(record, platform) >= min_ticks(record, platform) - 10


def test_outcomes_match_the_recorded_poses(closed_run):
    for record, distance in zip(read_run(closed_run[0]), (0.30, 0.45), strict=True):
        params = record.meta["params"]
        size = [params["box.size_x"], params["box.size_y"], params["box.size_z"]]
        for platform in ("real", "sim"):
            outcome = compute_outcome(record.platforms[platform].box_pose, size)
            stored = record.meta["outcomes"][platform]
            assert stored["final_distance_m"] == pytest.approx(outcome.final_distance_m, abs=1e-12)
            assert stored["initial_distance_m"] == pytest.approx(outcome.initial_distance_m, abs=1e-12)
            assert stored["flipped"] == outcome.flipped
            # Placed within the start tolerance, then pushed forward.
            assert abs(outcome.initial_distance_m - distance) < 0.01
            assert outcome.final_distance_m > distance + 0.02


def test_commands_mirroring_gives_identical_command_streams(commands_run):
    (record,) = read_run(commands_run)
    assert record.complete and record.meta["mirror"] == "commands"
    real, sim = record.platforms["real"].joint_command, record.platforms["sim"].joint_command
    assert len(real) >= min_ticks(record, "real") - 5
    np.testing.assert_array_equal(sim.t, real.t)
    np.testing.assert_array_equal(sim.velocity, real.velocity)
    np.testing.assert_array_equal(sim.position, real.position)
    # The real stream is still the PD law of the real arm's states.
    assert check_platform_pd_law(record, "real") >= min_ticks(record, "real") - 10


def test_hidden_parameters_are_20_to_40_percent_off_nominal():
    hidden = load_standin().params
    nominal = load_params(config_file("params.yaml"))
    for name in ("contact.mu_table", "contact.mu_pusher", "arm.servo_tau", "arm.command_delay"):
        gap = abs(hidden[name] / nominal[name] - 1.0)
        assert 0.2 <= gap <= 0.4, (name, hidden[name], nominal[name])
    assert nominal["box.com_z"] == 0.0 and hidden["box.com_z"] == pytest.approx(-0.06)


def test_bags_carry_the_3d_scene_and_mocap_log_time_is_receive_time(closed_run):
    """Each recorded stand-in trial holds /tf, /tf_static, /robot_description and /markers (decoded
    with the Kilted typestore) and whatever config/foxglove_layout.json shows, and every mocap pose
    (/real/box_pose) is stamped with its acquisition time and logged when it arrived: log time -
    header stamp is the stand-in's mocap latency (plus the transport), never less."""
    typestore = get_typestore(Stores.ROS2_KILTED)
    layout = load_layout()
    latency_ns = round(load_standin().mocap.latency * 1e9)
    assert latency_ns > 0
    for record in read_run(closed_run[0]):
        messages: dict[str, list[tuple[int, object]]] = {}
        with Reader(closed_run[0] / record.name) as reader:
            for connection, log_ns, raw in reader.messages():
                messages.setdefault(connection.topic, []).append(
                    (log_ns, typestore.deserialize_cdr(raw, connection.msgtype)))
        assert {"/tf", "/tf_static", "/robot_description", "/markers"} <= set(messages), sorted(messages)
        ((_, description),) = messages["/robot_description"]
        assert "real/link1" in description.data and "sim/link6" in description.data
        ((_, static),) = messages["/tf_static"]
        assert ("real/link6", "real/pusher") in {(t.header.frame_id, t.child_frame_id) for t in static.transforms}
        ((_, markers),) = messages["/markers"]
        assert {"real/box", "sim/box"} <= {m.header.frame_id for m in markers.markers}
        children = {t.child_frame_id for _, tf in messages["/tf"] for t in tf.transforms}
        assert {"real/box", "sim/box", "real/link6", "sim/link6"} <= children
        assert layout_topics(layout) <= set(messages)
        assert layout_frames(layout) <= children | {"link_base"}

        poses = messages["/real/box_pose"]
        assert len(poses) >= STARVED_MIN_TICKS  # enough to judge their ages; how many came is the machine's load
        stamps = np.array([m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for _, m in poses])
        age_ns = np.array([log for log, _ in poses]) - stamps
        assert age_ns.min() >= latency_ns, age_ns.min()
        # How far behind the recorder runs depends on the machine's load (0.46 s median once on an idle
        # machine): only a different clock base (ages of hours or negative) would be wrong here.
        assert np.median(age_ns) < 60e9, np.median(age_ns)
        # Acquisition stamps are the world's 10 ms steps (the mocap reports every one at 100 Hz; a
        # starved recorder may lose some from its queue, never shift them off the steps).
        steps = np.diff(stamps) / 1e7
        assert np.all(steps > 0.5) and np.allclose(steps, np.round(steps), atol=1e-4), steps


def test_mocap_reports_are_stamped_when_acquired_and_arrive_after_the_latency():
    mocap = MocapModel(MocapConfig(position_noise=0.0, angle_noise_deg=0.0, latency=0.007, rate_hz=50.0))
    quaternion = np.array([1.0, 0.0, 0.0, 0.0])
    report = mocap.observe(2.0, np.array([0.4, 0.0, 0.105]), quaternion)
    assert report is not None and report.acquired == 2.0 and report.arrival == pytest.approx(2.007)
    np.testing.assert_allclose(report.position, [0.4, 0.0, 0.105])
    assert mocap.observe(2.01, np.zeros(3), quaternion) is None  # 50 Hz: the next report is due at 2.02
    assert mocap.observe(2.02, np.zeros(3), quaternion).acquired == 2.02

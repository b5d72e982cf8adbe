"""XArmDriver (through the real xarm-python-sdk) against the loopback controller emulator.

No test here asserts how fast anything happens (rates, latencies, "within N ms"): they check
behaviour — what the controller received, what the arm did with it, that a fault fires when
one is injected and never resumes — and pass on a busy machine. The timing figures (command
rate, round trips, watchdog reaction) are measured by ``python -m benchmarks.xarm``.

Streams send a fixed number of commands (the commanded values depend on the command index,
not on the clock), so a slow machine only stretches a stream in time. The driver judges the
link on the kernel's clock, so its own scheduling delays never count; but the emulator shares
this process, and a loaded machine delays its replies. Tests that are not about the driver's
link-quality checks therefore give it :data:`LENIENT_LINK` limits, so that a late emulator
cannot latch a stall or latency fault they do not test (in mode 4 the commands' 0.1 s auto-stop
still caps the stall budget: a reply that late means the controller has stopped by itself).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from loopback import start_emulator

from sim2real.errors import Sim2RealError
from sim2real.hardware import (
    ControllerError,
    DriverConfig,
    EmulatorConfig,
    FaultConfig,
    HardwareError,
    XArmDriver,
    XArmEmulator,
    emulator,
)
from sim2real.hardware import protocol as wire
from sim2real.sim.servo import CommandHistory, ServoParams, advance_servo

PORT = 5021  # unprivileged command port; report ports stay 30001-30003 on each 127.0.0.N
TRUE_SERVO = ServoParams(tau=0.04, delay=0.012)
#: Link limits (s) no scheduling delay reaches; for tests that do not test the stall/latency checks.
LENIENT_LINK: dict[str, Any] = {"max_round_trip": 5.0, "latency_budget": 5.0}
#: Generous bound (s) on waits for the arm to come to rest; a guard against hanging, not a timing check.
STILL_WITHIN = 10.0


def _emulator(**kwargs: Any) -> contextlib.AbstractContextManager[XArmEmulator]:
    """A started emulator (true servo :data:`TRUE_SERVO` unless given) on a loopback address of its own."""
    return start_emulator(command_port=PORT, servo=kwargs.pop("servo", TRUE_SERVO), **kwargs)


def _driver(emu: XArmEmulator, **kwargs: Any) -> XArmDriver:
    return XArmDriver(DriverConfig(ip=emu.config.host, command_port=PORT, **kwargs))


@dataclass(frozen=True)
class Read:
    """One joint-state read: called at ``asked_at``, returned at ``answered_at``, stamped by the driver with
    ``stamp`` (when its request left this host; monotonic s)."""

    asked_at: float
    position: np.ndarray
    stamp: float
    answered_at: float


def _stream(driver: XArmDriver, velocity: Callable[[int], np.ndarray] | np.ndarray, commands: int,
            period: float = 0.01, read: bool = True) -> list[Read]:
    """Send ``commands`` velocity commands ``period`` s apart (at least), reading the joints after
    each unless ``read`` is False.

    ``velocity`` is constant or a function of the command index. Returns the reads.
    """
    reads = []
    for tick in range(commands):
        qdot = velocity(tick) if callable(velocity) else velocity
        driver.send_velocity(qdot, stamp=time.time())
        if not read:
            time.sleep(period)
            continue
        asked_at = time.monotonic()
        position, _, _, stamp = driver.read_joint_states()
        reads.append(Read(asked_at, position, stamp, time.monotonic()))
        time.sleep(period)
    return reads


def _stream_until_fault(driver: XArmDriver, velocity: np.ndarray, commands: int = 2000) -> HardwareError:
    """Stream commands only (no reads: an injected stall then always delays a command, the
    round trip the driver checks) until the driver raises; fails if it never does."""
    with pytest.raises(HardwareError) as info:
        _stream(driver, velocity, commands, read=False)
    return info.value


def _wait_still(emu: XArmEmulator, within: float = STILL_WITHIN, speed: float = 1e-3, settle: float = 0.1,
                target: np.ndarray | None = None, atol: float = 1e-3) -> float:
    """``time.monotonic()`` when every true joint speed had stayed below ``speed`` for ``settle`` s
    (and, with ``target``, the joints were within ``atol`` of it); fails after ``within`` s.

    A speed below ``speed`` at one instant is not rest: an arm that overshoots a servo target
    passes through zero speed at its turning point.
    """
    deadline = time.monotonic() + within
    resting_since: float | None = None
    while (now := time.monotonic()) < deadline:
        at_rest = np.max(np.abs(emu.joint_velocities())) < speed
        if target is not None:
            at_rest = at_rest and bool(np.allclose(emu.joint_positions(), target, rtol=0.0, atol=atol))
        resting_since = (resting_since if resting_since is not None else now) if at_rest else None
        if resting_since is not None and now - resting_since >= settle:
            return resting_since
        time.sleep(0.005)
    raise AssertionError(f"arm not at rest after {within} s: q {emu.joint_positions()}, v {emu.joint_velocities()}")


def _expected_positions(q0: np.ndarray, executed: list[tuple[float, np.ndarray]], times: list[float]) -> np.ndarray:
    """Integrate the commands as the controller executed them through the servo model at ``times``.

    ``executed`` holds the controller's ``(t, command)`` changes of the commanded joint velocity (its
    command hook: monotonic s, rad/s (6,)), each taken when the controller handled it, and its auto-stops.
    The times the driver sent them are not used: on a busy machine a command can wait in the emulator's
    queue, and the arm moves by the command from when the controller has it. Returns (len(times), 6) rad.
    """
    history = CommandHistory(6, TRUE_SERVO.delay)
    for t, command in executed:
        history.push(t, command)
    q, v, t = q0.copy(), np.zeros(6), executed[0][0] - 1.0
    out = []
    for t_next in times:
        q, v = advance_servo(q, v, history, t, t_next, TRUE_SERVO)
        t = t_next
        out.append(q.copy())
    return np.array(out)


def test_mode4_stream_matches_servo_model() -> None:
    """200 joint-velocity commands: the controller executes what was sent, in order, and every read lies on
    the servo model's response to the commands as the controller executed them."""
    q0 = (0.1, -0.3, -0.5, 0.2, 0.4, -0.1)
    executed: list[tuple[float, np.ndarray]] = []
    with _emulator(initial_joints=q0) as emu, _driver(emu, **LENIENT_LINK) as driver:
        assert driver.preflight is not None and driver.preflight.firmware.axis == 6
        emu.on_command = lambda t, command: executed.append((t, command))
        driver.start()
        amplitude = np.array([0.4, 0.3, -0.3, 0.5, -0.4, 0.6])
        reads = _stream(driver, lambda k: amplitude * np.sin(2.0 * np.pi * 0.7 * 0.01 * k), 200)
        records = driver.sent_commands()  # the caller's and any watchdog zero: the controller got both
        driver.stop()
        snap = emu.snapshot()
    assert len([r for r in records if r.source == "caller"]) == 200
    assert all(r.code == 0 for r in records)
    # What the controller executed is what the driver sent, in order: each change of its commanded velocity
    # is the next sent command (the first, zero, is no change; to float32 on the wire) or an auto-stop to zero.
    sent = iter(r.sent for r in records)
    changes = [command for _, command in executed]
    for command in changes:
        assert any(np.allclose(command, s, rtol=0.0, atol=1e-6) for s in sent) or not np.any(command), command
    assert sum(bool(np.any(c)) for c in changes) >= 199
    # A read answers with the state at the moment the controller handled it: after the request left, before
    # the answer came back (on a busy machine that can be long after the driver's stamp, when the request left).
    inside = 5
    times = [float(t) for read in reads for t in np.linspace(read.asked_at, read.answered_at, inside)]
    expected = _expected_positions(np.array(q0), executed, times).reshape(len(reads), inside, 6)
    lower = expected.min(axis=1) - 3e-3
    upper = expected.max(axis=1) + 3e-3
    positions = np.array([read.position for read in reads])
    outside = np.max(np.maximum(lower - positions, positions - upper))
    assert outside <= 0.0, f"reads leave the servo model's response by {outside:.2e} rad"
    assert np.ptp(positions, axis=0).min() > 0.05  # every joint really moved
    assert snap.mode == 0 and snap.state == 4  # stop() leaves it in a safe mode


def test_mode1_servo_streaming_tracks_targets() -> None:
    """Mode 1: each servo_j target is the last one plus the command times its (capped) interval;
    the arm ends on the last target."""
    qdot = np.array([0.3, -0.2, 0.1, 0.4, -0.3, 0.2])
    # The watchdog (tested below) would split intervals with its zero commands on a stalled machine.
    with _emulator() as emu, _driver(emu, mode=1, watchdog_timeout=5.0, **LENIENT_LINK) as driver:
        driver.start()
        q_start = emu.joint_positions()
        _stream(driver, qdot, 100)
        records = driver.sent_commands()
        cap = driver.config.servo_max_step_time
        assert records[0].target is not None
        first_step = records[0].target - q_start
        assert np.all(first_step * np.sign(qdot) >= -1e-12)
        assert np.all(np.abs(first_step) <= np.abs(qdot) * cap + 1e-12)
        for previous, record in itertools.pairwise(records):
            assert record.target is not None and previous.target is not None
            step = min(record.sent_at - previous.sent_at, cap)
            np.testing.assert_allclose(record.target, previous.target + record.sent * step, rtol=0, atol=1e-12)
        target = records[-1].target
        # At least 10 ms between commands, at most the cap: the target moved that far.
        moved = (target - q_start) / qdot
        assert np.all(moved >= 0.01 * 99) and np.all(moved <= cap * 100 + 1e-9)
        _wait_still(emu, target=target)  # ends on the last target (after any overshoot)
        driver.stop()


def test_watchdog_zeroes_velocity_when_commands_stop() -> None:
    """Commands stop arriving: the watchdog, not the command's own auto-stop, stops the arm.

    The commands carry a 10 s auto-stop, so only the watchdog can bring the arm to rest before
    that; it sends zero velocity no earlier than its timeout after the last fresh command.
    """
    duration = 10.0
    with _emulator(servo=ServoParams(tau=0.02, delay=0.005)) as emu, \
            _driver(emu, command_duration=duration, **LENIENT_LINK) as driver:
        driver.start()
        _stream(driver, np.array([0.5, 0.0, 0.0, 0.0, 0.0, 0.0]), 30)
        last = driver.sent_commands()[-1]
        still_at = _wait_still(emu, within=0.8 * duration)
        history = driver.sent_commands()
        status = driver.status()
        snap = emu.snapshot()
        driver.stop()
    assert still_at < last.sent_at + duration  # the command alone would still be moving the arm
    watchdog = [r for r in history if r.source == "watchdog"]
    assert watchdog and watchdog[-1] is history[-1] and watchdog[-1].sent_at >= last.sent_at
    for record in watchdog:  # never before its timeout after the last fresh command left, always zero
        fresh = max(r.sent_at for r in history if r.source == "caller" and r.sent_at < record.sent_at)
        assert record.sent_at - fresh >= driver.config.watchdog_timeout
        assert not np.any(record.sent)
    assert status.watchdog_trips == len(watchdog) and status.fault is None
    assert snap.error_code == 0


@dataclass(frozen=True)
class FaultCase:
    """An injected emulator fault, the driver's limits for it and the fault kinds it may report."""

    faults: FaultConfig
    driver: dict[str, Any]
    kinds: frozenset[str]


FAULT_CASES = {
    # Every reply 50 ms late: far above the 10 ms latency budget, below the commands' 0.1 s
    # auto-stop (which caps the stall budget); the single-request stall limit and the SDK reply
    # timeout are raised so that only the latency check can fire.
    "latency": FaultCase(FaultConfig(latency=0.05), {"max_round_trip": 5.0, "command_timeout": 2.0},
                         frozenset({"latency"})),
    # One 0.5 s stall: above the 0.1 s stall limit, below the (raised) SDK reply timeout.
    "stall": FaultCase(FaultConfig(stall_at=0.3, stall_duration=0.5),
                       {"latency_budget": 5.0, "command_timeout": 2.0}, frozenset({"stall"})),
    "disconnected": FaultCase(FaultConfig(drop_at=0.3), LENIENT_LINK, frozenset({"disconnected", "timeout"})),
    "controller_error": FaultCase(FaultConfig(error_at=0.3, error_code=31), LENIENT_LINK,
                                  frozenset({"controller_error"})),
}


@pytest.mark.parametrize("case", list(FAULT_CASES.values()), ids=list(FAULT_CASES))
def test_faults_stop_and_report(case: FaultCase) -> None:
    with _emulator(faults=case.faults) as emu, _driver(emu, **case.driver) as driver:
        driver.start()
        error = _stream_until_fault(driver, np.array([0.4, 0.4, -0.4, 0.4, 0.4, 0.4]))
        assert driver.fault is not None and driver.fault.kind in case.kinds
        assert str(error) == driver.fault.message and "\n" not in str(error)
        _wait_still(emu)  # stopped by the driver, the controller, or the command auto-stop
        with pytest.raises(HardwareError):  # never resumes by itself
            driver.send_velocity(np.zeros(6), stamp=0.0)
        driver.stop()
    if "controller_error" in case.kinds:
        assert isinstance(error, ControllerError) and error.code == 31
        assert "C31" in str(error) and "Collision" in str(error)


def test_joint_limit_violation_reports_c23() -> None:
    limits = ((-0.15, 0.15), *EmulatorConfig().joint_limits[1:])
    with _emulator(joint_limits=limits) as emu, _driver(emu, **LENIENT_LINK) as driver:
        driver.start()
        error = _stream_until_fault(driver, np.array([0.8, 0, 0, 0, 0, 0]))
        snap = emu.snapshot()
        driver.stop()
    assert isinstance(error, ControllerError) and error.code == 23
    assert "C23" in str(error) and "Limit" in str(error)
    assert snap.error_code == 23 and snap.state == 4


def test_commands_are_clamped_and_nan_refused() -> None:
    with _emulator() as emu, _driver(emu, max_velocity=1.0, **LENIENT_LINK) as driver:
        driver.start()
        record = driver.send_velocity(np.array([5.0, -5.0, 0.5, 0, 0, 0]), stamp=12.5)
        assert record.clamped and record.stamp == 12.5
        assert np.allclose(record.sent, [1.0, -1.0, 0.5, 0, 0, 0])
        with pytest.raises(Sim2RealError, match="NaN"):
            driver.send_velocity(np.array([np.nan, 0, 0, 0, 0, 0]), stamp=0.0)
        with pytest.raises(Sim2RealError, match="shape"):
            driver.send_velocity(np.zeros(5), stamp=0.0)
        assert driver.fault is None
        driver.stop()
        assert emu.snapshot().error_code == 0


def test_a_planned_stop_logs_no_fault_or_error(caplog: pytest.LogCaptureFixture) -> None:
    """Streaming, then ``stop()``: said once at info level as a planned stop; nothing at warning
    level or above, and no fault."""
    caplog.set_level(logging.INFO, logger="sim2real.hardware.driver")
    with _emulator() as emu, _driver(emu, watchdog_timeout=5.0, **LENIENT_LINK) as driver:
        driver.start()
        _stream(driver, np.array([0.2, 0.0, 0.0, 0.0, 0.0, 0.0]), 20)
        driver.stop()
        snap = emu.snapshot()
    # The driver's own records: the emulator (the test's stand-in controller, in this process) may log
    # that a starved test process made its replies late, which says nothing about the driver.
    records = [r for r in caplog.records if r.name.startswith("sim2real") and r.name != emulator.LOG.name]
    assert driver.fault is None and snap.mode == 0 and snap.state == 4
    assert not [r.getMessage() for r in records if r.levelno >= logging.WARNING or "fault" in r.getMessage()]
    assert [r.levelno for r in records if "stopped as planned" in r.getMessage()] == [logging.INFO]
    with pytest.raises(Sim2RealError, match="not running"):  # stopped: nothing moves it any more
        driver.send_velocity(np.full(6, 0.1), stamp=0.0)


def test_joint_states_are_stamped_when_the_request_left_not_when_the_reply_was_read() -> None:
    """A read answered 60 ms after its request arrived (link latency) carries the time its request left:
    the joints are the controller's at that moment, not at the reply. A clock read after the call
    would stamp them at least 60 ms late (and a starved caller later still)."""
    latency = 0.06
    with _emulator(faults=FaultConfig(latency=latency)) as emu, \
            _driver(emu, **{**LENIENT_LINK, "command_timeout": 5.0}) as driver:
        before = time.monotonic()
        _, _, _, sampled_at = driver.read_joint_states()
        after = time.monotonic()
    # The write began before the request arrived, and the reply left the emulator `latency` after its
    # arrival: causal, whatever the load (1 ms for the emulator's kernel stamp, on the system clock,
    # mapped onto the monotonic one). A stamp taken after the write, or after the reply, could not hold it.
    assert before <= sampled_at <= after - latency + 1e-3


def test_only_a_new_connect_clears_the_latch() -> None:
    """After a fault every call raises and ``start()`` refuses; ``stop()`` then ``connect()`` (the
    explicit restart) opens the driver again."""
    with _emulator() as emu:
        driver = _driver(emu, **LENIENT_LINK)
        driver.connect()
        driver.start()
        _stream(driver, np.zeros(6), 5)
        emu.inject_error(31)
        with pytest.raises(ControllerError):
            _stream(driver, np.zeros(6), 50)
        for call in (lambda: driver.send_velocity(np.zeros(6), stamp=0.0), driver.read_joint_states, driver.start):
            with pytest.raises(HardwareError):
                call()
        driver.stop()
        with socket.create_connection((emu.config.host, PORT), timeout=5.0) as sock:  # clear C31 as an operator would
            sock.sendall(wire.encode_request(1, wire.PROTOCOL_PRIVATE, wire.Register.CLEAN_ERROR))
            sock.recv(64)
        driver.connect()
        assert driver.fault is None
        driver.start()
        _stream(driver, np.full(6, 0.1), 5)
        driver.stop()
    assert driver.fault is None


def test_after_the_latch_only_stops_and_reads_may_leave() -> None:
    """What the latch lets through to the socket: reads, stops, mode 0, zero velocity, a motor
    disable; never a motion command, a start (state 0), another mode or an unknown register."""
    def frame(register: int, params: bytes = b"") -> wire.Frame:
        (parsed,) = wire.request_frames(wire.encode_request(7, wire.PROTOCOL_PRIVATE_HEARTBEAT, register, params))
        return parsed

    def velocity(speed: float) -> bytes:
        return wire.pack_floats([speed, 0, 0, 0, 0, 0, 0]) + bytes([1]) + wire.pack_floats([0.1])

    passes = [frame(wire.Register.GET_JOINT_STATES, bytes([3])), frame(wire.Register.GET_ERROR),
              frame(wire.Register.SET_STATE, bytes([4])), frame(wire.Register.SET_MODE, bytes([0])),
              frame(wire.Register.VC_SET_JOINTV, velocity(0.0)), frame(wire.Register.MOTION_ENABLE, bytes([8, 0]))]
    refused = [frame(wire.Register.VC_SET_JOINTV, velocity(0.4)), frame(wire.Register.VC_SET_JOINTV, velocity(np.nan)),
               frame(wire.Register.MOVE_SERVOJ, wire.pack_floats([0.1] * 10)),
               frame(wire.Register.SET_STATE, bytes([0])), frame(wire.Register.SET_MODE, bytes([4])),
               frame(wire.Register.MOTION_ENABLE, bytes([8, 1])), frame(wire.Register.CLEAN_ERROR), frame(200)]
    assert all(wire.cannot_move(f) for f in passes)
    assert not any(wire.cannot_move(f) for f in refused)


def test_preflight_refuses_arm_with_error() -> None:
    with _emulator() as emu:
        emu.inject_error(22)
        driver = _driver(emu)
        with pytest.raises(Sim2RealError, match=r"not ready: controller error C22"):
            driver.connect()
        assert not driver.connected


def test_run_queue_delay_counts_the_wait_for_a_cpu() -> None:
    """The driver reports how starved its own threads were (``DriverStatus.cpu_wait``, beside a
    link judged on the kernel's clock) by the scheduler's run-queue delay: a thread sharing its
    CPU with a busy process waits runnable for it, and that wait is what the reading grows by. A
    guard that the reading works here (the figures are ``python -m benchmarks.faults --json``,
    loaded column)."""
    import os
    import subprocess
    import sys
    import threading

    from sim2real.hardware.link_timing import RunQueueDelay

    tid = threading.get_native_id()
    if not os.path.exists(f"/proc/self/task/{tid}/schedstat"):
        pytest.skip("no per-thread scheduler statistics on this system")
    clock = RunQueueDelay()
    saved = os.sched_getaffinity(0)
    cpu = min(saved)
    # The busy process says when it runs on that CPU (its start-up may take long on a loaded machine).
    hog = subprocess.Popen([sys.executable, "-c", f"import os, time\nos.sched_setaffinity(0, {{{cpu}}})\n"
                            "print('busy', flush=True)\nend = time.monotonic() + 3.0\n"
                            "while time.monotonic() < end: pass"], stdout=subprocess.PIPE, text=True)
    try:
        assert hog.stdout is not None and hog.stdout.readline().strip() == "busy"
        os.sched_setaffinity(0, {cpu})  # this thread only, onto the busy process's CPU
        before = clock.of((tid,))
        # Compute for 0.2 s of wall time: two runnable tasks share the CPU, so this thread waits
        # for it about half of that (a thread that mostly sleeps is let in at once on wake-up).
        busy_until = time.monotonic() + 0.2
        while time.monotonic() < busy_until:
            pass
        after = clock.of((tid,))
    finally:
        os.sched_setaffinity(0, saved)
        hog.kill()
        hog.wait()
        clock.close()
    assert before is not None and after is not None
    assert after - before > 0.02, after - before  # about 0.1 s expected; ~0 on an idle CPU

"""XArmDriver (through the real xarm-python-sdk) against the loopback controller emulator."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest

from sim2real.errors import Sim2RealError
from sim2real.hardware import (
    ControllerError,
    DriverConfig,
    EmulatorConfig,
    FaultConfig,
    HardwareError,
    XArmDriver,
    XArmEmulator,
)
from sim2real.physics.servo import CommandHistory, ServoParams, advance_servo

PORT = 5021  # unprivileged command port; report ports stay 30001-30003 on each 127.0.0.N
_HOSTS = (f"127.0.0.{n}" for n in itertools.count(20))
TRUE_SERVO = ServoParams(tau=0.04, delay=0.012)


def _emulator(**kwargs: object) -> XArmEmulator:
    config = EmulatorConfig(host=next(_HOSTS), command_port=PORT, servo=kwargs.pop("servo", TRUE_SERVO),
                            **kwargs)  # type: ignore[arg-type]
    return XArmEmulator(config)


def _driver(emu: XArmEmulator, **kwargs: object) -> XArmDriver:
    return XArmDriver(DriverConfig(ip=emu.config.host, command_port=PORT, **kwargs))  # type: ignore[arg-type]


def _stream(driver: XArmDriver, velocity: np.ndarray, seconds: float, rate: float = 100.0) -> list:
    """Send ``velocity`` (constant or a callable of elapsed time) at ``rate`` for ``seconds``; return reads."""
    reads = []
    t0 = time.monotonic()
    for tick in itertools.count():
        elapsed = time.monotonic() - t0
        if elapsed >= seconds:
            break
        qdot = velocity(elapsed) if callable(velocity) else velocity
        driver.send_velocity(qdot, stamp=time.time())
        reads.append(driver.read_joint_states())
        time.sleep(max(0.0, t0 + (tick + 1) / rate - time.monotonic()))
    return reads


def _stream_until_fault(driver: XArmDriver, velocity: np.ndarray, seconds: float) -> HardwareError:
    with pytest.raises(HardwareError) as info:
        _stream(driver, velocity, seconds)
    return info.value


def _wait_still(emu: XArmEmulator, within: float, speed: float = 1e-3) -> float:
    """Seconds until every true joint speed is below ``speed``; fails after ``within``."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < within:
        if np.max(np.abs(emu.joint_velocities())) < speed:
            return time.monotonic() - t0
        time.sleep(0.005)
    raise AssertionError(f"arm still moving after {within} s: {emu.joint_velocities()}")


def _expected_positions(q0: np.ndarray, records: list, duration: float, times: list[float]) -> np.ndarray:
    """Integrate the recorded commands through the servo model at ``times`` (monotonic s)."""
    history = CommandHistory(6, TRUE_SERVO.delay)
    events: list[tuple[float, np.ndarray]] = []
    for i, record in enumerate(records):
        events.append((record.sent_at, record.sent))
        next_at = records[i + 1].sent_at if i + 1 < len(records) else math.inf
        if record.sent_at + duration < next_at:  # the command's auto-stop
            events.append((record.sent_at + duration, np.zeros(6)))
    for t, command in events:
        history.push(t, command)
    q, v, t = q0.copy(), np.zeros(6), records[0].sent_at - 1.0
    out = []
    for t_next in times:
        q, v = advance_servo(q, v, history, t, t_next, TRUE_SERVO)
        t = t_next
        out.append(q.copy())
    return np.array(out)


def test_mode4_stream_matches_servo_model() -> None:
    """2 s of 100 Hz joint velocities: read positions follow the commands through the servo model."""
    q0 = (0.1, -0.3, -0.5, 0.2, 0.4, -0.1)
    with _emulator(initial_joints=q0) as emu, _driver(emu) as driver:
        assert driver.preflight is not None and driver.preflight.firmware.axis == 6
        driver.start()
        amplitude = np.array([0.4, 0.3, -0.3, 0.5, -0.4, 0.6])
        reads = _stream(driver, lambda t: amplitude * np.sin(2.0 * np.pi * 0.7 * t), 2.0)
        records = [r for r in driver.sent_commands() if r.source == "caller"]
        driver.stop()
        snap = emu.snapshot()
    assert len(records) >= 180  # ~100 Hz sustained
    positions = np.array([read[0] for read in reads])
    expected = _expected_positions(np.array(q0), records, driver.config.command_duration,
                                   [read[3] for read in reads])
    assert np.max(np.abs(positions - expected)) < 3e-3
    assert np.ptp(positions, axis=0).min() > 0.05  # every joint really moved
    assert snap.mode == 0 and snap.state == 4  # stop() leaves it in a safe mode


def test_mode1_servo_streaming_tracks_targets() -> None:
    with _emulator() as emu, _driver(emu, mode=1) as driver:
        driver.start()
        qdot = np.array([0.3, -0.2, 0.1, 0.4, -0.3, 0.2])
        _stream(driver, qdot, 1.0)
        target = driver.sent_commands()[-1].target
        assert target is not None
        assert np.allclose(target, qdot * 1.0, atol=0.05)  # integrated velocities
        _wait_still(emu, 1.0)
        assert np.allclose(emu.joint_positions(), target, atol=1e-3)
        driver.stop()


def test_watchdog_zeroes_velocity_within_100ms() -> None:
    with _emulator(servo=ServoParams(tau=0.02, delay=0.005)) as emu, _driver(emu) as driver:
        driver.start()
        _stream(driver, np.full(6, 0.5), 0.3)
        last = driver.sent_commands()[-1]
        time.sleep(0.2)
        watchdog = [r for r in driver.sent_commands() if r.source == "watchdog"]
        speed_after = np.max(np.abs(emu.joint_velocities()))
        status = driver.status()
        driver.stop()
    assert len(watchdog) == 1 and not np.any(watchdog[0].sent)
    assert watchdog[0].sent_at - last.replied_at < 0.1
    assert status.watchdog_trips == 1 and status.fault is None
    assert speed_after < 0.01


@pytest.mark.parametrize(("faults", "kind"), [
    (FaultConfig(latency=0.04), "latency"),
    (FaultConfig(stall_at=0.3, stall_duration=0.19), "stall"),
    (FaultConfig(drop_at=0.3), "disconnected"),
    (FaultConfig(error_at=0.3, error_code=31), "controller_error"),
])
def test_faults_stop_and_report(faults: FaultConfig, kind: str) -> None:
    with _emulator(faults=faults) as emu, _driver(emu) as driver:
        driver.start()
        error = _stream_until_fault(driver, np.array([0.4, 0.4, -0.4, 0.4, 0.4, 0.4]), 3.0)
        assert driver.fault is not None
        assert driver.fault.kind in ({kind, "timeout"} if kind == "disconnected" else {kind})
        assert str(error) == driver.fault.message and "\n" not in str(error)
        _wait_still(emu, 1.0)  # stopped by the driver, the controller, or the command auto-stop
        with pytest.raises(HardwareError):  # never resumes by itself
            driver.send_velocity(np.zeros(6), stamp=0.0)
        driver.stop()
    if kind == "controller_error":
        assert isinstance(error, ControllerError) and error.code == 31
        assert "C31" in str(error) and "Collision" in str(error)


def test_joint_limit_violation_reports_c23() -> None:
    limits = ((-0.15, 0.15), *EmulatorConfig().joint_limits[1:])
    with _emulator(joint_limits=limits) as emu, _driver(emu) as driver:
        driver.start()
        error = _stream_until_fault(driver, np.array([0.8, 0, 0, 0, 0, 0]), 2.0)
        snap = emu.snapshot()
        driver.stop()
    assert isinstance(error, ControllerError) and error.code == 23
    assert "C23" in str(error) and "Limit" in str(error)
    assert snap.error_code == 23 and snap.state == 4


def test_commands_are_clamped_and_nan_refused() -> None:
    with _emulator() as emu, _driver(emu, max_velocity=1.0) as driver:
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


def test_preflight_refuses_arm_with_error() -> None:
    with _emulator() as emu:
        emu.inject_error(22)
        driver = _driver(emu)
        with pytest.raises(Sim2RealError, match=r"not ready: controller error C22"):
            driver.connect()
        assert not driver.connected

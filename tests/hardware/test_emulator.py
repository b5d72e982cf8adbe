"""The unmodified xarm-python-sdk (XArmAPI) against the controller emulator."""

from __future__ import annotations

import itertools
import socket
import struct
import time
from collections.abc import Iterator

import numpy as np
import pytest
from loopback import start_emulator

from sim2real.hardware import EmulatorConfig, FaultConfig, XArmEmulator
from sim2real.hardware import protocol as wire
from sim2real.sim.servo import ServoParams

PORT = 5025
_HOSTS = (f"127.0.0.{n}" for n in itertools.count(80))


@pytest.fixture
def sdk_port(monkeypatch: pytest.MonkeyPatch) -> int:
    from xarm.core.config.x_config import XCONF

    monkeypatch.setattr(XCONF.SocketConf, "TCP_CONTROL_PORT", PORT)
    return PORT


@pytest.fixture
def arm_and_emulator(sdk_port: int) -> Iterator[tuple[object, XArmEmulator]]:
    from xarm.wrapper import XArmAPI

    with XArmEmulator(EmulatorConfig(host=next(_HOSTS), command_port=sdk_port,
                                     servo=ServoParams(tau=0.03, delay=0.01))) as emu:
        arm = XArmAPI(emu.config.host, is_radian=True, forbid_uds=True, report_type="rich")
        try:
            yield arm, emu
        finally:
            arm.disconnect()


def test_sdk_connects_and_follows_the_state_machine(arm_and_emulator: tuple) -> None:
    arm, emu = arm_and_emulator
    assert arm.connected and arm.version_number == (2, 6, 107) and arm.axis == 6
    assert arm.vc_set_joint_velocity([0.2] * 6, duration=0.2) == 9  # not enabled: not ready
    assert arm.motion_enable(True) == 0 and arm.state == 5
    assert arm.set_mode(4) == 0 and arm.set_state(0) == 0 and arm.state == 2
    assert arm.set_servo_angle_j([0.1] * 6) == 10  # wrong mode: invalid, ignored
    assert arm.vc_set_joint_velocity([0.4, 0, 0, 0, 0, 0], duration=0.2) == 0
    time.sleep(0.1)
    assert arm.get_state() == (0, 1)
    time.sleep(0.4)  # the command's 0.2 s duration has run out
    code, (q, v, _effort) = arm.get_joint_states(num=3)
    assert code == 0 and abs(v[0]) < 1e-3 and 0.06 < q[0] < 0.09
    assert np.allclose(q[:6], emu.joint_positions(), atol=1e-6)
    time.sleep(0.25)  # a 5 Hz rich report has arrived
    assert arm.mode == 4 and abs(arm.angles[0] - q[0]) < 1e-4 and arm.error_code == 0


def test_overspeed_raises_c24_and_clean_error_recovers(arm_and_emulator: tuple) -> None:
    arm, emu = arm_and_emulator
    arm.motion_enable(True)
    arm.set_mode(4)
    arm.set_state(0)
    assert arm.vc_set_joint_velocity([4.0, 0, 0, 0, 0, 0], duration=0.2) == 1  # error present
    assert arm.get_err_warn_code() == (0, [24, 0]) and arm.get_state() == (0, 4)
    assert arm.set_state(0) == 0 and arm.state == 4  # strict: an error keeps it stopped
    assert arm.clean_error() == 0 and arm.set_mode(4) == 0 and arm.set_state(0) == 0
    assert arm.state == 2 and emu.snapshot().error_code == 0


def test_tcp_pose_at_zero_matches_the_datasheet(arm_and_emulator: tuple) -> None:
    arm, _ = arm_and_emulator
    # Until the first report arrives the SDK answers with its own placeholder pose (201.5, 0, 140.5 mm;
    # read so once beside 4 busy processes): wait for the controller's.
    deadline = time.monotonic() + 10.0
    code, pose = arm.get_position()
    while np.allclose(pose[:3], [201.5, 0.0, 140.5]) and time.monotonic() < deadline:
        time.sleep(0.02)
        code, pose = arm.get_position()
    assert code == 0
    assert np.allclose(pose[:3], [207.0, 0.0, 112.0], atol=0.5)
    assert np.allclose(np.abs(pose[3]), np.pi, atol=1e-3) and np.allclose(pose[4:], 0.0, atol=1e-3)


def test_two_emulators_run_side_by_side(sdk_port: int) -> None:
    from xarm.wrapper import XArmAPI

    hosts = [next(_HOSTS), next(_HOSTS)]
    emus = [XArmEmulator(EmulatorConfig(host=h, command_port=sdk_port, initial_joints=(i * 0.1,) * 6)).start()
            for i, h in enumerate(hosts)]
    try:
        arms = [XArmAPI(h, is_radian=True, forbid_uds=True) for h in hosts]
        readings = [arm.get_servo_angle()[1][0] for arm in arms]
        for arm in arms:
            arm.disconnect()
    finally:
        for emu in emus:
            emu.stop()
    assert readings == pytest.approx([0.0, 0.1], abs=1e-6)


def _raw_exchange(sock: socket.socket, frames: list[bytes], replies: int) -> list[float]:
    """Send ``frames`` in one write; the arrival time (monotonic s) of each of ``replies`` replies."""
    sock.sendall(b"".join(frames))
    buffer, times = bytearray(), []
    while len(times) < replies:
        chunk = sock.recv(4096)
        assert chunk, "the emulator closed the connection"
        buffer.extend(chunk)
        times.extend(time.monotonic() for _ in wire.split_frames(buffer))
    return times


def _ready_for_velocity(sock: socket.socket) -> None:
    request = lambda register, params=b"": wire.encode_request(1, wire.PROTOCOL_PRIVATE, register, params)  # noqa: E731
    _raw_exchange(sock, [request(wire.Register.MOTION_ENABLE, bytes([8, 1])),
                         request(wire.Register.SET_MODE, bytes([4])),
                         request(wire.Register.SET_STATE, bytes([0]))], 3)


def _velocity(speed: float, duration: float) -> bytes:
    params = wire.pack_floats([speed] * 6 + [0.0]) + bytes([1]) + struct.pack("<f", duration)
    return wire.encode_request(1, wire.PROTOCOL_PRIVATE, wire.Register.VC_SET_JOINTV, params)


def test_a_stalled_channel_does_not_stall_the_auto_stop() -> None:
    """The motion loop is not the command channel: while a velocity command is stalled on the
    link, the one executing still stops after its duration, before the stall ends (the stale
    command then executes when released, as a controller would)."""
    commands: list[tuple[float, float]] = []
    faults = FaultConfig(stall_at=0.0, stall_duration=0.6, stall_register=wire.Register.VC_SET_JOINTV)
    with start_emulator(command_port=PORT + 4, faults=faults) as emu:
        emu.on_command = lambda t, command: commands.append((t, float(np.max(np.abs(command)))))
        with socket.create_connection((emu.config.host, PORT + 4), timeout=5.0) as sock:
            _ready_for_velocity(sock)
            _raw_exchange(sock, [_velocity(0.3, 0.1)], 1)
            _raw_exchange(sock, [_velocity(0.3, 0.1)], 1)  # stalled for 0.6 s
        released = emu.fault_onsets["stall"] + faults.stall_duration
    moving = [t for t, speed in commands if speed > 0.0]
    stopped = [t for t, speed in commands if speed == 0.0]
    assert len(moving) == 2 and moving[1] >= released, commands
    assert any(moving[0] < t < released for t in stopped), commands  # the auto-stop, during the stall


def test_link_latency_delays_each_request_not_the_queue() -> None:
    """Added latency is the link's: requests sent back to back are each answered ``latency`` after
    they arrived, not one after the other (a stop sent behind a request on a slow link is not
    held up by that request's delay). Timing is the point here: serialised, the last of three
    replies would come after 1.5 s; pipelined after ~0.5 s."""
    get_state = wire.encode_request(1, wire.PROTOCOL_PRIVATE, wire.Register.GET_STATE)
    with start_emulator(command_port=PORT + 4, faults=FaultConfig(latency=0.5)) as emu, \
            socket.create_connection((emu.config.host, PORT + 4), timeout=5.0) as sock:
        sent = time.monotonic()
        replies = _raw_exchange(sock, [get_state] * 3, 3)
    assert replies[0] - sent >= 0.5
    assert replies[-1] - sent < 1.2, [round(t - sent, 3) for t in replies]


def test_a_reply_held_up_in_this_process_counts_as_late(caplog: pytest.LogCaptureFixture) -> None:
    """A reply is timed from its request's kernel arrival stamp to leaving the emulator: work in this
    process that holds it up (here a request hook taking 80 ms, as a starved process would) makes it
    late by at least that much, and the emulator says so."""
    get_state = wire.encode_request(1, wire.PROTOCOL_PRIVATE, wire.Register.GET_STATE)
    with caplog.at_level("WARNING", logger="sim2real.hardware.emulator"), \
            start_emulator(command_port=PORT + 4, on_request=lambda *_: time.sleep(0.08)) as emu, \
            socket.create_connection((emu.config.host, PORT + 4), timeout=5.0) as sock:
        _raw_exchange(sock, [get_state], 1)
        slowest = emu.slowest_reply_s
    assert slowest >= 0.08
    assert any("waited for a CPU" in record.getMessage() for record in caplog.records)

"""The unmodified xarm-python-sdk (XArmAPI) against the controller emulator."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator

import numpy as np
import pytest

from sim2real.hardware import EmulatorConfig, XArmEmulator
from sim2real.physics.servo import ServoParams

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

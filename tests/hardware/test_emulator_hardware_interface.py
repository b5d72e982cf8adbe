"""The emulator's in-process hardware interface (what a ros2_control stand-in drives): velocity mode,
``vc_set_joint_velocity`` with its auto-stop, refusal after an error."""

from __future__ import annotations

import time

import numpy as np
from loopback import start_emulator


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def test_velocity_mode_moves_and_the_auto_stop_halts_the_joints():
    with start_emulator(command_port=5079) as emulator:
        q0 = emulator.joint_positions()
        assert not emulator.set_joint_velocity(np.full(6, 0.1), 1.0)  # not enabled yet: refused
        assert emulator.activate_velocity_mode()
        state = emulator.snapshot()
        assert state.mode == 4 and state.enabled and state.error_code == 0
        assert emulator.set_joint_velocity(np.array([0.2, 0.0, 0.0, 0.0, 0.0, 0.0]), 0.05)
        wait_for(lambda: emulator.joint_velocities()[0] > 0.01, 5.0, "the joint to move")
        wait_for(lambda: abs(emulator.joint_velocities()[0]) < 1e-6, 5.0, "the auto-stop")
        assert emulator.joint_positions()[0] > q0[0]


def test_an_error_refuses_commands_until_activated_again():
    with start_emulator(command_port=5079) as emulator:
        assert emulator.activate_velocity_mode()
        emulator.inject_error(31)
        assert not emulator.set_joint_velocity(np.full(6, 0.1), 1.0)
        assert not emulator.activate_velocity_mode()  # the error is still present
        assert emulator.snapshot().error_code == 31


def test_a_speed_beyond_the_limit_raises_c24():
    with start_emulator(command_port=5079) as emulator:
        assert emulator.activate_velocity_mode()
        assert not emulator.set_joint_velocity(np.full(6, 4.0), 1.0)
        assert emulator.snapshot().error_code == 24

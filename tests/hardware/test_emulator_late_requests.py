"""Requests the emulated controller executes late act as of when they reached it.

A real controller answers a joint-state read within a servo cycle and starts a velocity command one
command delay after it arrived. The emulator runs on the same busy machine as everything else: its
tick thread may advance the joints past a request's arrival before the request's executor gets a CPU.
Executed at its arrival time, the read reports the joints of that instant and the command acts when it
would have on the real controller, so the arm's motion and the driver's record of it (stamped with the
time the read left) do not depend on this process's schedule. Compared here with an emulator that
executed every request on time (no wall clock: the controller's core, stepped by hand).
"""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.hardware import EmulatorConfig
from sim2real.hardware import protocol as wire
from sim2real.hardware.emulator_arm import TRAIL_S, ArmCore
from sim2real.sim.servo import ServoParams

DELAY = 0.02
SPEED = np.array([0.4, -0.3, 0.2, 0.0, 0.1, 0.0])


def _core() -> ArmCore:
    """An enabled arm in joint velocity mode at t = 0, at rest."""
    core = ArmCore(EmulatorConfig(servo=ServoParams(tau=0.065, delay=DELAY)), 0.0)
    core.enabled, core.mode, core.state = True, 4, 2
    return core


def _read(core: ArmCore, at: float) -> np.ndarray:
    """The joint positions a GET_JOINT_STATES request executed as of ``at`` reports (rad, (6,))."""
    frame = wire.Frame(transaction=1, protocol=2, register=wire.Register.GET_JOINT_STATES, params=bytes([1]))
    _, data = core.handle(frame, at, lambda q: np.zeros(6))
    return np.array(wire.unpack_floats(data, 6))


def _ticks(core: ArmCore, until: float, period: float = 0.004) -> None:
    """The tick thread's advances (250 Hz), the last at ``until`` (s)."""
    for now in np.arange(core.t + period, until, period):
        core.advance(float(now))
    core.advance(until)


def test_a_read_executed_late_reports_the_joints_of_its_arrival() -> None:
    on_time, late = _core(), _core()
    for core in (on_time, late):
        assert core._velocity(SPEED, -1.0, 0.0) == 0
    _ticks(on_time, 0.300)
    expected = _read(on_time, 0.300)
    _ticks(late, 0.327)  # the tick thread ran on for 27 ms before the read's executor got a CPU
    np.testing.assert_allclose(_read(late, 0.300), expected, atol=1e-6)  # float32 on the wire
    assert late.t == pytest.approx(0.327)  # the joints themselves are not moved back
    assert np.max(np.abs(_read(late, 0.327) - expected)) > 5e-3  # the arm did move in those 27 ms


@pytest.mark.parametrize("lateness", [0.0, 0.008, 0.019])
def test_a_command_executed_late_acts_a_command_delay_after_its_arrival(lateness: float) -> None:
    on_time, late = _core(), _core()
    for core in (on_time, late):
        _ticks(core, 0.100)
    assert on_time._velocity(SPEED, -1.0, 0.100) == 0
    _ticks(late, 0.100 + lateness)
    assert late._velocity(SPEED, -1.0, 0.100) == 0  # executed as of its arrival
    for core in (on_time, late):
        _ticks(core, 0.500)
    np.testing.assert_allclose(late.q, on_time.q, atol=1e-12)
    np.testing.assert_allclose(late.v, on_time.v, atol=1e-12)


def test_a_command_later_than_the_delay_acts_at_once_and_the_past_is_not_rewritten() -> None:
    core = _core()
    _ticks(core, 0.200)
    before = core.q.copy()
    assert core._velocity(SPEED, -1.0, 0.150) == 0  # 50 ms late: its delayed start (0.170) has passed
    np.testing.assert_array_equal(_read(core, 0.190), np.float32(before))  # still at rest before 0.200
    _ticks(core, 0.260)
    reference = _core()
    _ticks(reference, 0.200)
    assert reference._velocity(SPEED, -1.0, 0.200 - DELAY) == 0  # what "acts at once" means
    _ticks(reference, 0.260)
    np.testing.assert_allclose(core.q, reference.q, atol=1e-12)


def test_a_read_older_than_the_trail_reports_the_oldest_state_kept() -> None:
    core = _core()
    assert core._velocity(SPEED, -1.0, 0.0) == 0
    _ticks(core, 3.0)
    oldest_t, oldest_q, _ = core._trail[0]
    assert 3.0 - TRAIL_S - 0.005 <= oldest_t <= 3.0 - TRAIL_S + 0.005
    np.testing.assert_allclose(_read(core, 0.5), oldest_q, atol=1e-6)

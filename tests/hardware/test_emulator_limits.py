"""The emulated controller's joint-limit error (C23) where the joints cross the limit, however late it looks.

The real controller checks its limits every servo cycle. The emulator advances its joints in closed form
whenever it is asked (its tick thread, a query, a command), so on a starved process one advance can
span a long interval. Ending that interval wherever the commanded motion leads and only then raising
C23 would carry the arm far past a limit at which the real controller stops it. The error and the stop
begin at the crossing.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.hardware import EmulatorConfig
from sim2real.hardware.emulator_arm import ArmCore
from sim2real.sim.servo import ServoParams

LIMIT = 0.15
SPEED = 0.8


def _moving_core(auto_stop: float) -> ArmCore:
    """An enabled arm in joint velocity mode at t = 0, commanded at :data:`SPEED` on joint 1 towards its limit."""
    limits = ((-LIMIT, LIMIT), *EmulatorConfig().joint_limits[1:])
    core = ArmCore(EmulatorConfig(joint_limits=limits, servo=ServoParams(tau=0.065, delay=0.02)), 0.0)
    core.enabled, core.mode, core.state = True, 4, 2
    assert core._velocity(np.array([SPEED, 0.0, 0.0, 0.0, 0.0, 0.0]), auto_stop, 0.0) == 0
    return core


@pytest.mark.parametrize("auto_stop", [0.0, 1.0])
def test_one_long_advance_stops_where_servo_cycles_stop(auto_stop: float) -> None:
    starved = _moving_core(auto_stop)
    starved.advance(2.0)  # one advance over 2 s: a process that did not run for that long
    cycles = _moving_core(auto_stop)
    for now in np.arange(1, 2001) * 1e-3:  # the controller's own 1 ms cycle
        cycles.advance(float(now))
    assert starved.error_code == cycles.error_code == 23
    assert starved.state == 4 and not np.any(starved.command)
    # Past the limit only by the servo's stopping distance, as with 1 ms cycles (which see it up to 1 ms late).
    assert LIMIT < starved.q[0] < LIMIT + 0.15
    assert starved.q[0] == pytest.approx(cycles.q[0], abs=SPEED * 1e-3)
    assert np.allclose(starved.v, 0.0, atol=1e-9)


def test_an_arm_within_its_limits_is_unchanged_by_the_check() -> None:
    one = _moving_core(0.1)  # its auto-stop at 0.1 s leaves it at 0.08 rad, 0.07 short of the limit
    one.advance(2.0)
    split = _moving_core(0.1)
    for now in (0.05, 0.1, 0.7, 2.0):
        split.advance(now)
    assert one.error_code == split.error_code == 0
    assert abs(one.q[0]) < LIMIT
    np.testing.assert_allclose(one.q, split.q, atol=1e-12)

"""The PD law on a timed reference: one control tick from a platform's measured joint state.

Both platforms run this, each on its own joint states: the sim platform in the ``pd_controller``
node, the real platform inside ``xarm_node``'s read loop (read → PD → command in one thread, as
a ros2_control controller runs between a hardware interface's read and write), so that no
ROS 2 hop sits inside the real arm's feedback loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sim2real.control.pd import CommandLimits, PDCommand, PDGains, pd_command
from sim2real.control.reference import JointTrajectory

NS_PER_S = 1_000_000_000
#: Longest time between ticks (s) the acceleration limit credits: after a longer gap the command
#: changes by at most this much time's worth of acceleration.
MAX_TICK_GAP = 0.05


@dataclass
class ReferenceTracker:
    """PD commands that track the current reference trajectory.

    Parameters
    ----------
    gains : PDGains
        ``pd.kp`` (1/s), ``pd.kd``.
    limits : CommandLimits
        Velocity, acceleration, joint and workspace limits.
    dt : float
        Nominal control period (s): the acceleration limit's time step of the first tick. Later
        ticks use the time since the previous tick (at most :data:`MAX_TICK_GAP`), so that a loop
        that falls behind (ticks 20 ms apart instead of 10) may still change the command as fast
        as the joints may accelerate (with a fixed step it would halve the deceleration: measured
        on the stand-in, the arm then overshot its reference by 0.3 rad).

    Attributes
    ----------
    reference : JointTrajectory or None
        The reference; None until :meth:`set_reference` (no command then).
    start_ns : int
        Time of the reference's first point (ns, ROS time).
    """

    gains: PDGains
    limits: CommandLimits
    dt: float
    reference: JointTrajectory | None = None
    start_ns: int = 0
    _previous: np.ndarray = field(default_factory=lambda: np.zeros(6))
    _previous_ns: int | None = None

    def set_reference(self, start_ns: int, reference: JointTrajectory) -> None:
        """Track ``reference`` from ``start_ns`` (ns) on."""
        self.start_ns, self.reference = int(start_ns), reference

    def command(self, stamp_ns: int, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, PDCommand] | None:
        """The command of the control tick at ``stamp_ns`` (ns) for joint state ``q``, ``v`` (6,).

        Returns
        -------
        (q_ref (6,), PDCommand) or None
            The reference position sampled at the tick (rad) and the limited command (rad/s);
            None while there is no reference.
        """
        if self.reference is None:
            return None
        q_ref, v_ref = self.reference.sample((stamp_ns - self.start_ns) / NS_PER_S)
        step = self.dt
        if self._previous_ns is not None:
            step = min(max((stamp_ns - self._previous_ns) / NS_PER_S, 0.0), MAX_TICK_GAP)
        out = pd_command(q_ref, v_ref, q, v, self.gains, self.limits, self._previous, step)
        self._previous, self._previous_ns = out.velocity, int(stamp_ns)
        return q_ref, out

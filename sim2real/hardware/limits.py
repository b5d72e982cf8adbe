"""Joint limits of the xArm 6 controller (firmware-side checks), in rad and rad/s.

These are the limits the controller enforces (errors C23 and C24): the table the
vendor SDK uses for an xArm 6 whose serial number digits are below 1305, which equals
the URDF defaults. The driver's own (possibly tighter) limits are part of its config.
"""

from __future__ import annotations

import math

#: (lower, upper) position limit per joint (rad), joints 1..6.
XARM6_JOINT_LIMITS: tuple[tuple[float, float], ...] = (
    (-2.0 * math.pi, 2.0 * math.pi),
    (-2.059488, 2.094395),
    (-3.92699, 0.191986),
    (-2.0 * math.pi, 2.0 * math.pi),
    (-1.692969, math.pi),
    (-2.0 * math.pi, 2.0 * math.pi),
)

#: Joint speed limit of every joint (rad/s): 180 °/s.
XARM6_MAX_JOINT_VELOCITY: float = math.pi

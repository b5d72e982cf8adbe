"""The ``--world`` file of ``sim2real emulate-xarm``: the emulated arm's true parameters.

A YAML mapping (optionally wrapped in a ROS 2 ``<node>: ros__parameters:`` section)
with an ``arm`` group; other groups (box, contact, …) are ignored here::

    arm:
      servo_tau: 0.05          # s, first-order lag of the joint servo
      command_delay: 0.01      # s
      max_joint_acc: 20.0      # rad/s^2
      initial_joints: [0.0, -0.3, -0.5, 0.0, 0.8, 0.0]   # rad
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sim2real.errors import Sim2RealError
from sim2real.hardware.limits import XARM6_JOINT_LIMITS
from sim2real.params import ParameterSet, coerce
from sim2real.params.yaml_io import read_yaml
from sim2real.sim.servo import ServoParams


@dataclass(frozen=True)
class EmulatedArm:
    """True servo parameters and start pose of an emulated arm."""

    servo: ServoParams
    initial_joints: tuple[float, ...]


def load_world_file(path: str | os.PathLike[str]) -> EmulatedArm:
    """Read the ``arm`` group of a world YAML (see the module docstring).

    Raises
    ------
    Sim2RealError
        Missing or malformed file, out-of-bounds values, wrong number of joints.
    """
    path = Path(path)
    document = read_yaml(path, "world file")
    if not isinstance(document, Mapping):
        raise Sim2RealError(f"{path}: expected a YAML mapping with an 'arm' group")
    if "arm" not in document:  # ROS 2 params layout: <node>: ros__parameters: arm: ...
        sections = [s["ros__parameters"] for s in document.values()
                    if isinstance(s, Mapping) and isinstance(s.get("ros__parameters"), Mapping)]
        document = next((s for s in sections if "arm" in s), {})
    arm = document.get("arm", {})
    if not isinstance(arm, Mapping):
        raise Sim2RealError(f"{path}: 'arm' must be a mapping")
    nominal = ParameterSet.nominal()
    try:
        values = {name: coerce(f"arm.{name}", arm.get(name, nominal[f"arm.{name}"]))
                  for name in ("servo_tau", "command_delay", "max_joint_acc")}
    except Sim2RealError as err:
        raise Sim2RealError(f"{path}: {err}") from None
    joints = arm.get("initial_joints", [0.0] * 6)
    if (not isinstance(joints, list) or len(joints) != 6
            or not all(isinstance(q, (int, float)) and not isinstance(q, bool) and math.isfinite(q) for q in joints)):
        raise Sim2RealError(f"{path}: arm.initial_joints must be a list of 6 finite angles (rad)")
    for k, (q, (low, high)) in enumerate(zip(joints, XARM6_JOINT_LIMITS, strict=True)):
        if not low <= q <= high:
            raise Sim2RealError(f"{path}: arm.initial_joints[{k}] = {q} rad is outside joint {k + 1}'s limits "
                                f"[{low:.4g}, {high:.4g}] rad")
    servo = ServoParams(tau=float(values["servo_tau"]), delay=float(values["command_delay"]),
                        max_acceleration=float(values["max_joint_acc"]))
    return EmulatedArm(servo=servo, initial_joints=tuple(float(q) for q in joints))

"""The scene model: xArm 6 chain from ``urdf/xarm6.urdf`` (FK, Jacobians, IK) with the pusher tool."""

from sim2real.model.arm import (
    FLANGE_LINK,
    JOINT_NAMES,
    PUSHER_LINK,
    ArmModel,
    RevoluteJoint,
    load_arm,
    origin_transform,
)
from sim2real.model.ik import PUSH_SEED, TOOL_DOWN, IKResult, UnreachableError, solve_pusher_ik

__all__ = [
    "FLANGE_LINK", "JOINT_NAMES", "PUSHER_LINK", "PUSH_SEED", "TOOL_DOWN", "ArmModel", "IKResult",
    "RevoluteJoint", "UnreachableError", "load_arm", "origin_transform", "solve_pusher_ik",
]

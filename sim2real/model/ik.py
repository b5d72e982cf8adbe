"""Numerical inverse kinematics for the pusher: position, with the tool pointing down.

The push experiment keeps the flange pointing straight down (flange z = −base z) with a
fixed heading, so the IK solves the full 6-D pose of the pusher frame: the requested
position plus that orientation. Damped least squares (Levenberg-Marquardt) on the
geometric Jacobian, with joint angles kept inside their limits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from sim2real.errors import InputError
from sim2real.model.arm import PUSHER_LINK, ArmModel
from sim2real.spatial import matrix_to_rotation_vector, rpy_to_matrix

FloatArray = NDArray[np.float64]

#: Pusher orientation of the push experiment: flange z pointing down, flange x along −base x
#: (the orientation of the arm at zero joint angles, roll = π).
TOOL_DOWN: FloatArray = rpy_to_matrix(np.array([np.pi, 0.0, 0.0]))

#: A comfortable seed for pushes in front of the arm: elbow up, wrist down (rad).
PUSH_SEED: FloatArray = np.array([0.0, -0.2, -1.0, 0.0, 1.2, 0.0])


class UnreachableError(InputError):
    """The requested pusher pose cannot be reached within the joint limits."""


@dataclass(frozen=True)
class IKResult:
    """Solution of :func:`solve_pusher_ik`.

    Attributes
    ----------
    q : ndarray, shape (6,)
        Joint angles (rad).
    position_error : float
        Remaining pusher position error (m).
    orientation_error : float
        Remaining orientation error (rad).
    iterations : int
        Iterations used.
    """

    q: FloatArray
    position_error: float
    orientation_error: float
    iterations: int


def _pose_error(arm: ArmModel, q: FloatArray, target_position: FloatArray,
                target_rotation: FloatArray) -> FloatArray:
    pose = arm.forward(q, PUSHER_LINK)
    error = np.empty(6)
    error[:3] = target_position - pose[:3, 3]
    error[3:] = matrix_to_rotation_vector(target_rotation @ pose[:3, :3].T)
    return error


def solve_pusher_ik(arm: ArmModel, target_position: FloatArray, seed: FloatArray | None = None,
                    target_rotation: FloatArray = TOOL_DOWN, tolerance: float = 1e-9,
                    max_iterations: int = 200, limit_margin: float = 1e-3) -> IKResult:
    """Joint angles that put the pusher at ``target_position`` with ``target_rotation``.

    Parameters
    ----------
    arm : ArmModel
        The chain.
    target_position : ndarray, shape (3,)
        Pusher centre in the base frame (m).
    seed : ndarray, shape (6,), optional
        Starting joint angles (rad); default :data:`PUSH_SEED`. Trajectories pass the
        previous solution for continuity.
    target_rotation : ndarray, shape (3, 3)
        Orientation of the pusher frame in the base frame (default: tool pointing down).
    tolerance : float
        Convergence threshold on the position error (m) and orientation error (rad).
    max_iterations : int
        Iteration cap.
    limit_margin : float
        Solutions stay this far (rad) inside the joint limits.

    Raises
    ------
    UnreachableError
        If no solution within the limits reaches ``1e-6`` m and ``1e-6`` rad.
    """
    target_position = np.asarray(target_position, dtype=float)
    if target_position.shape != (3,) or not np.all(np.isfinite(target_position)):
        raise InputError(f"IK target must be a finite 3-vector in metres, got {target_position!r}")
    lower, upper = arm.lower + limit_margin, arm.upper - limit_margin
    q = np.clip(np.array(PUSH_SEED if seed is None else seed, dtype=float), lower, upper)
    damping = 1e-3
    error = _pose_error(arm, q, target_position, target_rotation)
    cost = float(error @ error)
    iteration = 0
    while iteration < max_iterations:
        if np.linalg.norm(error[:3]) < tolerance and np.linalg.norm(error[3:]) < tolerance:
            break
        iteration += 1
        jac = arm.jacobian(q, PUSHER_LINK)
        step = np.linalg.solve(jac.T @ jac + damping * np.eye(6), jac.T @ error)
        candidate = np.clip(q + step, lower, upper)
        candidate_error = _pose_error(arm, candidate, target_position, target_rotation)
        candidate_cost = float(candidate_error @ candidate_error)
        if candidate_cost < cost:
            q, error, cost = candidate, candidate_error, candidate_cost
            damping = max(damping * 0.3, 1e-9)
        else:
            damping *= 10.0
            if damping > 1e6:
                break
    position_error = float(np.linalg.norm(error[:3]))
    orientation_error = float(np.linalg.norm(error[3:]))
    if position_error > 1e-6 or orientation_error > 1e-6:
        raise UnreachableError(
            f"pusher position {np.round(target_position, 4).tolist()} m is not reachable with the tool "
            f"pointing down within the joint limits (closest: {position_error * 1000:.1f} mm away)"
        )
    return IKResult(q=q, position_error=position_error, orientation_error=orientation_error,
                    iterations=iteration)

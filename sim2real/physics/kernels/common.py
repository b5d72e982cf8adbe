"""Shared pieces of the compiled kernels: the settings, info and trace layouts, status codes, work-space sizes,
small dense helpers.

Part of :mod:`sim2real.physics.kernels` (see there for the layouts of θ, the iterate and the residual).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sim2real.physics.constants import CONTACT_BAND as _CONTACT_BAND
from sim2real.physics.layout import PARAMS_OFFSET, PUSHER_END_SLICE, PUSHER_START_SLICE, THETA_PARAMS, THETA_SIZE

#: Indices into the settings vector handed to :func:`step_kernel` (see :func:`settings_vector`).
S_RESIDUAL_TOL, S_KAPPA_RTOL, S_MAX_ITERATIONS, S_TAU_MIN, S_TAU_SOC_MAX = 0, 1, 2, 3, 4
S_BACKTRACK, S_MAX_BACKTRACKS, S_CONT_KAPPA, S_CONT_RESIDUAL_TOL, S_CONT_KAPPA_RTOL = 5, 6, 7, 8, 9
S_REST_ENABLED, S_REST_SPEED_TOL, S_REST_GAP_TOL, S_REST_PUSHER_MARGIN, S_REST_KAPPA_MAX = 10, 11, 12, 13, 14
S_GAP_FACTOR, S_GAP_PATIENCE, S_ACCEPT_BEST, S_CONT_FACTOR, S_SKIP_BAND, S_GRAD_KAPPA_RTOL = 15, 16, 17, 18, 19, 20
SETTINGS_SIZE = 21

#: Indices into the info vector filled by :func:`step_kernel`.
I_ACTIVE, I_PUSHER_IMPULSE, I_TABLE_DISTANCE, I_PUSHER_DISTANCE, I_RESIDUAL_VIO, I_KAPPA_VIO = 0, 1, 2, 3, 4, 5
I_ITERATIONS, I_FAILED_KAPPA, I_PATH_ERROR, I_RESTING, I_BEST_USED, I_SOLVED = 6, 7, 8, 9, 10, 11
INFO_SIZE = 12

#: Columns of a solver trace row (see :func:`interior_point`): sub-step, target κ, current central-path
#: target (continuation), iteration, residual violation, complementarity, central-path error, step length.
TRACE_COLUMNS = ("substep", "kappa", "target", "iteration", "residual", "complementarity", "path_error", "alpha")
NO_TRACE = np.empty((0, len(TRACE_COLUMNS)))
"""Trace buffer of a call that records no trace."""

#: Status codes returned by :func:`step_kernel`: converged; iteration budget spent; numerical breakdown
#: (a singular Newton block or a non-finite iterate; never raised as a Python exception); finished, but
#: at least one solve ended on its best iterate instead of converging (only with ``S_ACCEPT_BEST``).
STATUS_OK, STATUS_NOT_CONVERGED, STATUS_BREAKDOWN, STATUS_BEST_ITERATE = 0, 1, 2, 3

#: Layout of a warm-start buffer (see :func:`step_kernel`): the number of contacts ``n`` in the stored solution's
#: solve (0: none stored), the central-path value κ it was solved at, which contacts those were (bit ``c`` set
#: for contact ``c`` of the step: corners 0-7, pusher 8), then the iterate ``w`` (6 + 8n numbers; room for
#: n = 9). :data:`NO_WARM` is the buffer of a call that neither uses nor keeps a warm start.
W_CONTACTS, W_KAPPA, W_MASK, W_ITERATE = 0, 1, 2, 3
WARM_SIZE = W_ITERATE + 6 + 8 * 9
NO_WARM = np.empty(0)
"""Warm-start buffer of a call that starts cold and keeps nothing."""
#: Iterations a warm-started solve may take before the step falls back to the cold start.
WARM_MAX_ITERATIONS = 30
#: Smallest shift (scaled units) that moves a stored solution's cone variables into their cones' interiors.
WARM_SHIFT = 1e-4

#: Work space (numbers) that the compiled maps need; :data:`SCRATCH_SIZE` covers every function here.
PROBLEM_SCRATCH = 53
SCRATCH_SIZE = 128

#: Normal impulse (in units of m g dt) above which a contact counts as active.
ACTIVE_IMPULSE = 1e-3
#: Relative central-difference step of the partials ∂r/∂θ, ∂x⁺/∂θ and ∂x⁺/∂a.
THETA_STEP = 1e-7

_T = THETA_SIZE
#: The ``wanted`` columns of a step whose whole Jacobian is asked for (see :func:`~.step.step_kernel`).
ALL_COLUMNS = np.ones(THETA_SIZE, dtype=np.bool_)

_PS = PUSHER_START_SLICE.start  # pusher placement (a, b) at the start of the step in θ
_PE = PUSHER_END_SLICE.start  # ... and at its end
#: Width of a capsule's near-minimum band, m (``geometry.CONTACT_BAND``).
CONTACT_BAND = _CONTACT_BAND
_MASS_COLUMN = PARAMS_OFFSET + THETA_PARAMS.index("box.mass")
_SMALL_ANGLE = 1e-8


# --- small dense helpers ----------------------------------------------------------------------
@njit(cache=True)
def _rotation(q0: float, q1: float, q2: float, q3: float, out: np.ndarray) -> None:
    """Rotation matrix (3, 3) of the quaternion (w, x, y, z) after normalising it, into ``out``."""
    norm = np.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
    w, x, y, z = q0 / norm, q1 / norm, q2 / norm, q3 / norm
    xx, yy, zz, xy, xz, yz = x * x, y * y, z * z, x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    out[0, 0] = 1.0 - 2.0 * (yy + zz)
    out[0, 1] = 2.0 * (xy - wz)
    out[0, 2] = 2.0 * (xz + wy)
    out[1, 0] = 2.0 * (xy + wz)
    out[1, 1] = 1.0 - 2.0 * (xx + zz)
    out[1, 2] = 2.0 * (yz - wx)
    out[2, 0] = 2.0 * (xz - wy)
    out[2, 1] = 2.0 * (yz + wx)
    out[2, 2] = 1.0 - 2.0 * (xx + yy)


@njit(cache=True, inline="always")
def _invert3(a: np.ndarray, a_at: int, out: np.ndarray, out_at: int) -> bool:
    """Inverse of the 3 × 3 matrix stored row by row in ``a[a_at:a_at + 9]`` (destroyed) into
    ``out[out_at:out_at + 9]``, by Gauss-Jordan elimination with partial pivoting. Returns False (``out`` unusable)
    if a pivot is zero or not finite."""
    return _gauss_jordan(a, a_at, out, out_at, 3)


@njit(cache=True, inline="always")
def _invert6(a: np.ndarray, a_at: int, out: np.ndarray, out_at: int) -> bool:
    """:func:`_invert3` of a 6 × 6 matrix (36 numbers)."""
    return _gauss_jordan(a, a_at, out, out_at, 6)


@njit(cache=True, inline="always")
def _gauss_jordan(a: np.ndarray, a_at: int, out: np.ndarray, out_at: int, size: int) -> bool:
    """The elimination of :func:`_invert3` and :func:`_invert6` on flat row-major storage (no views: each would cost
    reference counts). Inlined into them, so that the compiler knows the size and unrolls the loops."""
    for i in range(size):
        for j in range(size):
            out[out_at + size * i + j] = 1.0 if i == j else 0.0
    for col in range(size):
        pivot = col
        for row in range(col + 1, size):
            if abs(a[a_at + size * row + col]) > abs(a[a_at + size * pivot + col]):
                pivot = row
        if pivot != col:
            for j in range(size):
                p_at, c_at = size * pivot + j, size * col + j
                a[a_at + c_at], a[a_at + p_at] = a[a_at + p_at], a[a_at + c_at]
                out[out_at + c_at], out[out_at + p_at] = out[out_at + p_at], out[out_at + c_at]
        diagonal = a[a_at + size * col + col]
        if not (abs(diagonal) > 0.0 and abs(diagonal) < np.inf):
            return False
        inv = 1.0 / diagonal
        for j in range(size):
            a[a_at + size * col + j] *= inv
            out[out_at + size * col + j] *= inv
        for row in range(size):
            if row != col:
                factor = a[a_at + size * row + col]
                if factor != 0.0:
                    for j in range(size):
                        a[a_at + size * row + j] -= factor * a[a_at + size * col + j]
                        out[out_at + size * row + j] -= factor * out[out_at + size * col + j]
    return True

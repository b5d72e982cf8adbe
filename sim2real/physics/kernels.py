"""Compiled per-step core of the engine (numba ``@njit(cache=True)`` on flat float64 arrays).

This module is the step that :class:`~sim2real.physics.world.BoxWorld` runs. It computes the same
maps as the vectorised NumPy oracle of the tests (``tests/oracle``: ``geometry``, ``dynamics``,
``solver``), which stays the readable specification and the cross-check, but without per-call
NumPy overhead: contact
geometry, residual, the block-eliminated Newton system, Nesterov-Todd scaling, the cone line
search, the predictor-corrector loop and the implicit-function-theorem back-substitution all run
in one compiled call per time step.

Layouts (``n`` contacts: 8 table corners, then the pusher if present):

* problem vector ``θ`` (:data:`~sim2real.physics.layout.THETA_SIZE`): state 13, pusher placement
  at the start and at the end of the step (6 + 6, m world: sphere centre and 3 unused numbers, or
  the capsule's two segment end points), parameters in the order of
  :data:`~sim2real.physics.layout.THETA_PARAMS`; read only through the named slots of
  :mod:`sim2real.physics.layout`;
* iterate ``w`` (6 + 8n): ``a`` (6), ``γ`` (n), ``s`` (n), ``ξ`` (n × 3 row-major), ``η`` (n × 3);
* residual ``r`` (6 + 8n): dynamics (6), normal (n), cone head (n), slip (n × 2), complementarity
  of the normal pair (n), of the cone pair (n × 3). Sensitivity right-hand sides are columns of
  a (6 + 8n, k) matrix in the same row layout.

The first call of each function compiles it (a few seconds per function, then cached in
``__pycache__``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sim2real.physics import layout
from sim2real.physics.constants import CONTACT_BAND as _CONTACT_BAND
from sim2real.physics.constants import GRAVITY, MIN_FRICTION, PUSHER_CONTACT_FREQUENCY
from sim2real.physics.layout import PARAMS_OFFSET, PUSHER_END_SLICE, PUSHER_START_SLICE, THETA_PARAMS, THETA_SIZE

#: Indices into the settings vector handed to :func:`step_kernel` (see :func:`settings_vector`).
S_RESIDUAL_TOL, S_KAPPA_RTOL, S_MAX_ITERATIONS, S_TAU_MIN, S_TAU_SOC_MAX = 0, 1, 2, 3, 4
S_BACKTRACK, S_MAX_BACKTRACKS, S_CONT_KAPPA, S_CONT_RESIDUAL_TOL, S_CONT_KAPPA_RTOL = 5, 6, 7, 8, 9
S_REST_ENABLED, S_REST_SPEED_TOL, S_REST_GAP_TOL, S_REST_PUSHER_MARGIN, S_REST_KAPPA_MAX = 10, 11, 12, 13, 14
S_GAP_FACTOR, S_GAP_PATIENCE, S_ACCEPT_BEST, S_CONT_FACTOR = 15, 16, 17, 18
SETTINGS_SIZE = 19

#: Indices into the info vector filled by :func:`step_kernel`.
I_ACTIVE, I_PUSHER_IMPULSE, I_TABLE_DISTANCE, I_PUSHER_DISTANCE, I_RESIDUAL_VIO, I_KAPPA_VIO = 0, 1, 2, 3, 4, 5
I_ITERATIONS, I_FAILED_KAPPA, I_PATH_ERROR, I_RESTING, I_BEST_USED = 6, 7, 8, 9, 10
INFO_SIZE = 11

#: Columns of a solver trace row (see :func:`interior_point`): sub-step, target κ, current central-path
#: target (continuation), iteration, residual violation, complementarity, central-path error, step length.
TRACE_COLUMNS = ("substep", "kappa", "target", "iteration", "residual", "complementarity", "path_error", "alpha")
NO_TRACE = np.empty((0, len(TRACE_COLUMNS)))
"""Trace buffer of a call that records no trace."""

#: Status codes returned by :func:`step_kernel`: converged; iteration budget spent; numerical breakdown
#: (a singular Newton block or a non-finite iterate; never raised as a Python exception); finished, but
#: at least one solve ended on its best iterate instead of converging (only with ``S_ACCEPT_BEST``).
STATUS_OK, STATUS_NOT_CONVERGED, STATUS_BREAKDOWN, STATUS_BEST_ITERATE = 0, 1, 2, 3

#: Work space (numbers) that the compiled maps need; :data:`SCRATCH_SIZE` covers every function here.
PROBLEM_SCRATCH = 53
SCRATCH_SIZE = 128

#: Normal impulse (in units of m g dt) above which a contact counts as active.
ACTIVE_IMPULSE = 1e-3
#: Relative central-difference step of the partials ∂r/∂θ, ∂x⁺/∂θ and ∂x⁺/∂a.
THETA_STEP = 1e-7

_T = THETA_SIZE

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


@njit(cache=True)
def _invert(m: np.ndarray, out: np.ndarray) -> bool:
    """Inverse of a small square matrix by Gauss-Jordan elimination with partial pivoting (``m`` is destroyed).

    Returns False (``out`` unusable) if a pivot is zero or not finite.
    """
    size = m.shape[0]
    a = m
    for i in range(size):
        for j in range(size):
            out[i, j] = 1.0 if i == j else 0.0
    for col in range(size):
        pivot = col
        for row in range(col + 1, size):
            if abs(a[row, col]) > abs(a[pivot, col]):
                pivot = row
        if pivot != col:
            for j in range(size):
                a[col, j], a[pivot, j] = a[pivot, j], a[col, j]
                out[col, j], out[pivot, j] = out[pivot, j], out[col, j]
        if not (abs(a[col, col]) > 0.0 and abs(a[col, col]) < np.inf):
            return False
        inv = 1.0 / a[col, col]
        for j in range(size):
            a[col, j] *= inv
            out[col, j] *= inv
        for row in range(size):
            if row != col:
                factor = a[row, col]
                if factor != 0.0:
                    for j in range(size):
                        a[row, j] -= factor * a[col, j]
                        out[row, j] -= factor * out[col, j]
    return True


# --- geometry and problem data ----------------------------------------------------------------
@njit(cache=True)
def sphere_box_distance(centre: np.ndarray, half: np.ndarray, radius: float,
                        normal: np.ndarray, point: np.ndarray) -> float:
    """Signed sphere-box distance in the box's body frame (compiled twin of the NumPy function).

    Parameters
    ----------
    centre : ndarray (3,)
        Sphere centre relative to the box's geometric centre, m, body frame.
    half : ndarray (3,)
        Half edge lengths, m.
    radius : float
        m.
    normal, point : ndarray (3,)
        Outputs: outward unit box normal towards the sphere, closest box surface point (m), body.

    Returns
    -------
    float
        Signed distance, m (negative = overlap).
    """
    outside_sq = 0.0
    for i in range(3):
        clamped = min(max(centre[i], -half[i]), half[i])
        point[i] = clamped
        normal[i] = centre[i] - clamped
        outside_sq += normal[i] * normal[i]
    outside = np.sqrt(outside_sq)
    if outside > 1e-12:
        for i in range(3):
            normal[i] /= outside
        return outside - radius
    axis = 0
    depth = half[0] - abs(centre[0])
    for i in range(1, 3):
        d = half[i] - abs(centre[i])
        if d < depth:
            depth, axis = d, i
    sign = 1.0 if centre[axis] >= 0.0 else -1.0
    for i in range(3):
        normal[i] = 0.0
        point[i] = centre[i]
    normal[axis] = sign
    point[axis] = sign * half[axis]
    return -depth - radius


@njit(cache=True)
def _piece(start: np.ndarray, end: np.ndarray, half: np.ndarray, t0: float, t1: float) -> tuple[float, float, float]:
    """Squared segment-box distance on the knot interval [t0, t1] as ``quad t² + 2 lin t + const``."""
    mid = 0.5 * (t0 + t1)
    quad = 0.0
    lin = 0.0
    const = 0.0
    for i in range(3):
        di = end[i] - start[i]
        c = start[i] + mid * di
        if c > half[i] or c < -half[i]:
            offset = start[i] - half[i] if c > half[i] else start[i] + half[i]
            quad += di * di
            lin += di * offset
            const += offset * offset
    return quad, lin, const


@njit(cache=True)
def _gap_sq(start: np.ndarray, end: np.ndarray, half: np.ndarray, t: float) -> float:
    """Squared distance of the segment point ``c(t)`` to the box, m²."""
    gap_sq = 0.0
    for i in range(3):
        excess = abs(start[i] + t * (end[i] - start[i])) - half[i]
        if excess > 0.0:
            gap_sq += excess * excess
    return gap_sq


@njit(cache=True)
def segment_box_parameters(start: np.ndarray, end: np.ndarray, half: np.ndarray, knots: np.ndarray
                           ) -> tuple[float, float]:
    """(t_min, t_contact) of a segment against the box (twin of the oracle's ``geometry.segment_box_parameters``).

    ``start``, ``end`` (3,): segment end points relative to the box's geometric centre, m, body frame;
    ``half`` (3,): half edge lengths, m; ``knots``: work space of at least 8 numbers. Same cases,
    candidates, band (:data:`CONTACT_BAND`) and tie-breaking as the NumPy function.
    """
    # Outside: knots where a coordinate crosses a face plane (clipped to [0, 1]), sorted.
    knots[0] = 0.0
    knots[7] = 1.0
    for i in range(3):
        di = end[i] - start[i]
        for k in range(2):
            value = 0.0
            if di != 0.0:
                value = ((half[i] if k == 0 else -half[i]) - start[i]) / di
            knots[1 + 2 * i + k] = min(max(value, 0.0), 1.0)
    for i in range(1, 8):
        value = knots[i]
        j = i - 1
        while j >= 0 and knots[j] > value:
            knots[j + 1] = knots[j]
            j -= 1
        knots[j + 1] = value
    t_min = 0.0
    g_min = np.inf
    for k in range(7):
        t0, t1 = knots[k], knots[k + 1]
        quad, lin, _ = _piece(start, end, half, t0, t1)
        t = t0
        if quad > 0.0:
            t = min(max(-lin / quad, t0), t1)
        gap_sq = _gap_sq(start, end, half, t)
        if gap_sq < g_min:
            g_min, t_min = gap_sq, t
    if g_min > 0.0:
        # The near-minimum interval: ends at 0 / 1 or at a root of a piece's quadratic = level.
        level = (np.sqrt(g_min) + CONTACT_BAND) ** 2
        t_lo = 0.0 if _gap_sq(start, end, half, 0.0) <= level else np.inf
        t_hi = 1.0 if _gap_sq(start, end, half, 1.0) <= level else -np.inf
        for k in range(7):
            t0, t1 = knots[k], knots[k + 1]
            quad, lin, const = _piece(start, end, half, t0, t1)
            disc = lin * lin - quad * (const - level)
            if quad > 0.0 and disc >= 0.0:
                root = np.sqrt(max(disc, 0.0))
                low = (-lin - root) / quad
                high = (-lin + root) / quad
                if t0 <= low <= t1 and t_lo != 0.0:
                    t_lo = min(t_lo, low)
                if t0 <= high <= t1 and t_hi != 1.0:
                    t_hi = max(t_hi, high)
        t_lo = min(t_lo if np.isfinite(t_lo) else t_min, t_min)
        t_hi = max(t_hi if np.isfinite(t_hi) else t_min, t_min)
        return t_min, 0.5 * (t_lo + t_hi)
    # Touching or inside: the deepest of the candidates (ends, zero crossings, equal face depths).
    best_t = 0.0
    best_depth = -np.inf
    for m in range(17):
        t = 0.0
        if m == 1:
            t = 1.0
        elif 2 <= m < 5:
            i = m - 2
            di = end[i] - start[i]
            if di != 0.0:
                t = -start[i] / di
        elif m >= 5:
            pair = (m - 5) // 4
            i = 0 if pair < 2 else 1
            j = 1 if pair == 0 else 2
            si = 1.0 if (m - 5) % 4 < 2 else -1.0
            sj = 1.0 if (m - 5) % 2 == 0 else -1.0
            den = si * (end[i] - start[i]) - sj * (end[j] - start[j])
            if den != 0.0:
                t = (half[i] - half[j] - si * start[i] + sj * start[j]) / den
        t = min(max(t, 0.0), 1.0)
        depth = np.inf
        for i in range(3):
            depth = min(depth, half[i] - abs(start[i] + t * (end[i] - start[i])))
        if depth > best_depth:
            best_depth, best_t = depth, t
    return best_t, best_t


@njit(cache=True)
def pusher_box_distance(theta: np.ndarray, origin: np.ndarray, rot: np.ndarray, half: np.ndarray, capsule: bool,
                        end_of_step: bool, normal: np.ndarray, point: np.ndarray,
                        scratch: np.ndarray) -> tuple[float, float]:
    """Signed pusher-box distance of the pusher placement in ``θ``, in the box's body frame.

    ``half`` (3,): the *inner* half sizes of the box (:func:`inner_half`; its edges are rounded with
    ``box.edge_radius``, which adds to the pusher radius here and moves ``point`` onto the rounded
    surface). ``origin`` (3,): the box's geometric centre, m world; ``rot`` (3, 3): body -> world;
    ``end_of_step``: use the placement at the end of the step instead of the start. Outputs ``normal``,
    ``point`` (3,) as in :func:`sphere_box_distance` (for a capsule: distance and normal at the nearest
    segment point, ``point`` the box point nearest to the contact point ``c(t)``); ``scratch``: at least
    17 numbers. Returns (distance m, contact segment parameter ``t``; 0 for a sphere).
    """
    base = _PE if end_of_step else _PS
    edge = theta[layout.EDGE_RADIUS]
    radius = theta[layout.PUSHER_RADIUS] + edge
    centre = scratch[0:3]
    other = scratch[3:6]
    for i in range(3):
        centre[i] = (rot[0, i] * (theta[base] - origin[0]) + rot[1, i] * (theta[base + 1] - origin[1])
                     + rot[2, i] * (theta[base + 2] - origin[2]))
    t = 0.0
    if capsule:
        for i in range(3):
            other[i] = (rot[0, i] * (theta[base + 3] - origin[0]) + rot[1, i] * (theta[base + 4] - origin[1])
                        + rot[2, i] * (theta[base + 5] - origin[2]))
        t_min, t = segment_box_parameters(centre, other, half, scratch[6:14])
        nearest = scratch[14:17]
        for i in range(3):
            nearest[i] = centre[i] + t_min * (other[i] - centre[i])
            centre[i] = centre[i] + t * (other[i] - centre[i])
        distance = sphere_box_distance(nearest, half, radius, normal, point)
        # The contact point: the box point nearest to the segment's contact point c(t).
        sphere_box_distance(centre, half, radius, other, point)
        for i in range(3):
            point[i] += edge * other[i]
        return distance, t
    distance = sphere_box_distance(centre, half, radius, normal, point)
    for i in range(3):
        point[i] += edge * normal[i]
    return distance, t


@njit(cache=True)
def inner_half(theta: np.ndarray, out: np.ndarray) -> None:
    """Half sizes of the box's inner box, m (3,): ``box.size / 2 - box.edge_radius``."""
    for i in range(3):
        out[i] = 0.5 * theta[layout.SIZE_SLOTS[i]] - theta[layout.EDGE_RADIUS]


@njit(cache=True)
def problem_data(theta: np.ndarray, dt: float, n: int, capsule: bool, jn: np.ndarray, jt: np.ndarray,
                 bn: np.ndarray, bt: np.ndarray, mu: np.ndarray, v0: np.ndarray, md: np.ndarray, scales: np.ndarray,
                 scratch: np.ndarray) -> None:
    """Linearised contact data of a step from ``θ`` (compiled twin of ``dynamics.problem_data``).

    Outputs: ``jn`` (n, 6), ``jt`` (n, 2, 6), ``bn`` (n) m/s, ``bt`` (n, 2) m/s, ``mu`` (n),
    ``v0`` (6) starting velocity (v_com m/s world, ω rad/s body), ``md`` (6) mass and principal
    moments (kg, kg m²), ``scales`` (4): impulse unit m g dt (N s), velocity unit g dt (m/s),
    half diagonal (m), compliance of the pusher contact ``1 / (m ω² dt²)`` (m/s per N s; 0 without
    pusher, see ``constants.PUSHER_CONTACT_FREQUENCY``). ``n`` is 8 (table corners) or 9 (plus the pusher,
    last); ``capsule``: the pusher is a capsule placed by its segment end points (else a sphere by
    its centre). ``scratch``: work space of at least :data:`PROBLEM_SCRATCH` numbers.
    """
    mass = theta[layout.MASS]
    sx, sy, sz = theta[layout.SIZE_X], theta[layout.SIZE_Y], theta[layout.SIZE_Z]
    cx, cy, cz = theta[layout.COM_X], theta[layout.COM_Y], theta[layout.COM_Z]
    half = scratch[36:39]  # the inner box (rounded edges: box.edge_radius)
    inner_half(theta, half)
    edge = theta[layout.EDGE_RADIUS]
    rot = scratch[0:9].reshape((3, 3))
    _rotation(theta[layout.QUAT], theta[layout.QUAT + 1], theta[layout.QUAT + 2], theta[layout.QUAT + 3], rot)
    lever = scratch[9:12]  # R com, world
    for i in range(3):
        lever[i] = rot[i, 0] * cx + rot[i, 1] * cy + rot[i, 2] * cz
    wx, wy, wz = theta[layout.OMEGA], theta[layout.OMEGA + 1], theta[layout.OMEGA + 2]
    v0[0] = theta[layout.VEL] + wy * lever[2] - wz * lever[1]
    v0[1] = theta[layout.VEL + 1] + wz * lever[0] - wx * lever[2]
    v0[2] = theta[layout.VEL + 2] + wx * lever[1] - wy * lever[0]
    for i in range(3):
        v0[3 + i] = rot[0, i] * wx + rot[1, i] * wy + rot[2, i] * wz
    md[0] = md[1] = md[2] = mass
    scale = theta[layout.INERTIA_SCALE]  # box.inertia_scale
    md[3] = scale * mass / 12.0 * (sy * sy + sz * sz)
    md[4] = scale * mass / 12.0 * (sx * sx + sz * sz)
    md[5] = scale * mass / 12.0 * (sx * sx + sy * sy)
    com_z = theta[layout.POS + 2] + lever[2]
    mu_table = max(theta[layout.MU_TABLE], MIN_FRICTION)
    table_height = theta[layout.TABLE_HEIGHT]
    shrink = 1.0 - theta[layout.SUPPORT_RATIO]  # 1 - contact.support_ratio
    # Table corners: normal +z, tangents +x, +y (world); the rotational part of a row is d × (Rᵀ n). The
    # normal acts at the contact point d (an inner corner, less edge radius × Rᵀ z); friction at that
    # point moved towards the vertical through the centre of mass within the table plane
    # (geometry.table_contacts): (hwx, hwy) is the horizontal world part of the corner's offset from it.
    for k in range(8):
        ex = (2.0 * (k // 4) - 1.0) * half[0]
        ey = (2.0 * ((k // 2) % 2) - 1.0) * half[1]
        ez = (2.0 * (k % 2) - 1.0) * half[2]
        hwx = rot[0, 0] * (ex - cx) + rot[0, 1] * (ey - cy) + rot[0, 2] * (ez - cz)
        hwy = rot[1, 0] * (ex - cx) + rot[1, 1] * (ey - cy) + rot[1, 2] * (ez - cz)
        dx, dy, dz = ex - cx - edge * rot[2, 0], ey - cy - edge * rot[2, 1], ez - cz - edge * rot[2, 2]
        gap = com_z + rot[2, 0] * dx + rot[2, 1] * dy + rot[2, 2] * dz - table_height
        for row in range(3):  # row 0: normal (world z), 1-2: tangents (world x, y)
            axis = 2 if row == 0 else row - 1
            ux, uy, uz = rot[axis, 0], rot[axis, 1], rot[axis, 2]
            target = jn[k] if row == 0 else jt[k, row - 1]
            for i in range(3):
                target[i] = 1.0 if i == axis else 0.0
            if row == 0:
                lx, ly, lz = dx, dy, dz
            else:
                lx = dx - shrink * (rot[0, 0] * hwx + rot[1, 0] * hwy)
                ly = dy - shrink * (rot[0, 1] * hwx + rot[1, 1] * hwy)
                lz = dz - shrink * (rot[0, 2] * hwx + rot[1, 2] * hwy)
            target[3] = ly * uz - lz * uy
            target[4] = lz * ux - lx * uz
            target[5] = lx * uy - ly * ux
        bn[k] = gap / dt
        bt[k, 0] = 0.0
        bt[k, 1] = 0.0
        mu[k] = mu_table
    if n == 9:
        origin = scratch[12:15]
        for i in range(3):
            origin[i] = theta[layout.POS + i]
        normal_body = scratch[18:21]
        point_body = scratch[21:24]
        distance, t = pusher_box_distance(theta, origin, rot, half, capsule, False, normal_body, point_body,
                                          scratch[39:53])
        frame = scratch[24:33].reshape((3, 3))  # rows: normal, tangent 1, tangent 2 (world)
        for i in range(3):
            frame[0, i] = -(rot[i, 0] * normal_body[0] + rot[i, 1] * normal_body[1] + rot[i, 2] * normal_body[2])
        nx, ny, nz = frame[0, 0], frame[0, 1], frame[0, 2]
        if nz < -0.9999999:
            frame[1, 0], frame[1, 1], frame[1, 2] = 0.0, -1.0, 0.0
            frame[2, 0], frame[2, 1], frame[2, 2] = -1.0, 0.0, 0.0
        else:
            a = 1.0 / (1.0 + nz)
            b = -nx * ny * a
            frame[1, 0], frame[1, 1], frame[1, 2] = 1.0 - nx * nx * a, b, -nx
            frame[2, 0], frame[2, 1], frame[2, 2] = b, 1.0 - ny * ny * a, -ny
        dx, dy, dz = point_body[0] - cx, point_body[1] - cy, point_body[2] - cz
        other = scratch[33:36]  # velocity of the pusher point (segment point of the capsule), world
        for i in range(3):
            if capsule:
                start = theta[_PS + i] + t * (theta[_PS + 3 + i] - theta[_PS + i])
                end = theta[_PE + i] + t * (theta[_PE + 3 + i] - theta[_PE + i])
                other[i] = (end - start) / dt
            else:
                other[i] = (theta[_PE + i] - theta[_PS + i]) / dt
        for row in range(3):
            target = jn[8] if row == 0 else jt[8, row - 1]
            ux = rot[0, 0] * frame[row, 0] + rot[1, 0] * frame[row, 1] + rot[2, 0] * frame[row, 2]
            uy = rot[0, 1] * frame[row, 0] + rot[1, 1] * frame[row, 1] + rot[2, 1] * frame[row, 2]
            uz = rot[0, 2] * frame[row, 0] + rot[1, 2] * frame[row, 1] + rot[2, 2] * frame[row, 2]
            for i in range(3):
                target[i] = frame[row, i]
            target[3] = dy * uz - dz * uy
            target[4] = dz * ux - dx * uz
            target[5] = dx * uy - dy * ux
            along = frame[row, 0] * other[0] + frame[row, 1] * other[1] + frame[row, 2] * other[2]
            if row == 0:
                bn[8] = distance / dt - along
            else:
                bt[8, row - 1] = -along
        mu[8] = max(theta[layout.MU_PUSHER], MIN_FRICTION)
    scales[0] = mass * GRAVITY * dt
    scales[1] = GRAVITY * dt
    scales[2] = 0.5 * np.sqrt(sx * sx + sy * sy + sz * sz)
    scales[3] = 1.0 / (mass * (PUSHER_CONTACT_FREQUENCY * dt) ** 2) if n == 9 else 0.0


@njit(cache=True)
def next_state(theta: np.ndarray, a: np.ndarray, dt: float, out: np.ndarray, scratch: np.ndarray) -> None:
    """Geometric-centre state (13) at the end of the step from the solved velocities ``a`` (6).

    Compiled twin of ``dynamics.next_state``: backward Euler on the centre of mass, orientation
    ``q ⊗ exp(dt ω_body)`` on the unit-quaternion manifold. ``scratch``: at least 18 numbers.
    """
    cx, cy, cz = theta[layout.COM_X], theta[layout.COM_Y], theta[layout.COM_Z]
    rot = scratch[0:9].reshape((3, 3))
    _rotation(theta[layout.QUAT], theta[layout.QUAT + 1], theta[layout.QUAT + 2], theta[layout.QUAT + 3], rot)
    norm = np.sqrt(theta[layout.QUAT] ** 2 + theta[layout.QUAT + 1] ** 2 + theta[layout.QUAT + 2] ** 2
                   + theta[layout.QUAT + 3] ** 2)
    w1, x1, y1, z1 = (theta[layout.QUAT] / norm, theta[layout.QUAT + 1] / norm, theta[layout.QUAT + 2] / norm,
                      theta[layout.QUAT + 3] / norm)
    rx, ry, rz = dt * a[3], dt * a[4], dt * a[5]
    angle = np.sqrt(rx * rx + ry * ry + rz * rz)
    scale = 0.5 - angle * angle / 48.0 if angle < _SMALL_ANGLE else np.sin(0.5 * angle) / angle
    w2, x2, y2, z2 = np.cos(0.5 * angle), scale * rx, scale * ry, scale * rz
    qw = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
    qx = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2
    qy = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
    qz = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
    rot_next = scratch[9:18].reshape((3, 3))
    _rotation(qw, qx, qy, qz, rot_next)
    for i in range(3):
        lever_start = rot[i, 0] * cx + rot[i, 1] * cy + rot[i, 2] * cz
        lever_next = rot_next[i, 0] * cx + rot_next[i, 1] * cy + rot_next[i, 2] * cz
        out[layout.POS + i] = theta[layout.POS + i] + lever_start + dt * a[i] - lever_next
        out[layout.OMEGA + i] = rot_next[i, 0] * a[3] + rot_next[i, 1] * a[4] + rot_next[i, 2] * a[5]
    out[layout.QUAT], out[layout.QUAT + 1], out[layout.QUAT + 2], out[layout.QUAT + 3] = qw, qx, qy, qz
    lx = rot_next[0, 0] * cx + rot_next[0, 1] * cy + rot_next[0, 2] * cz
    ly = rot_next[1, 0] * cx + rot_next[1, 1] * cy + rot_next[1, 2] * cz
    lz = rot_next[2, 0] * cx + rot_next[2, 1] * cy + rot_next[2, 2] * cz
    wx, wy, wz = out[layout.OMEGA], out[layout.OMEGA + 1], out[layout.OMEGA + 2]
    out[layout.VEL] = a[0] - (wy * lz - wz * ly)
    out[layout.VEL + 1] = a[1] - (wz * lx - wx * lz)
    out[layout.VEL + 2] = a[2] - (wx * ly - wy * lx)


# --- residual ---------------------------------------------------------------------------------
@njit(cache=True)
def equality_residual(w: np.ndarray, n: int, dt: float, jn: np.ndarray, jt: np.ndarray, bn: np.ndarray,
                      bt: np.ndarray, mu: np.ndarray, v0: np.ndarray, md: np.ndarray, scales: np.ndarray,
                      out: np.ndarray) -> None:
    """Dynamics, normal-slack, cone-head and slip rows at ``w`` into ``out[:6 + 4n]``.

    The normal row of the pusher contact (index 8) carries its compliance ``scales[3] γ``.
    """
    xi0 = 6 + 2 * n
    eta0 = 6 + 5 * n
    for k in range(6):
        out[k] = md[k] * (w[k] - v0[k])
    out[2] += scales[0]  # minus the gravity impulse -m g dt
    ox, oy, oz = w[3], w[4], w[5]
    ix, iy, iz = md[3] * ox, md[4] * oy, md[5] * oz
    out[3] += dt * (oy * iz - oz * iy)
    out[4] += dt * (oz * ix - ox * iz)
    out[5] += dt * (ox * iy - oy * ix)
    for c in range(n):
        gamma = w[6 + c]
        f1 = w[xi0 + 3 * c + 1]
        f2 = w[xi0 + 3 * c + 2]
        normal_velocity = bn[c]
        t1 = bt[c, 0]
        t2 = bt[c, 1]
        for k in range(6):
            out[k] -= jn[c, k] * gamma + jt[c, 0, k] * f1 + jt[c, 1, k] * f2
            normal_velocity += jn[c, k] * w[k]
            t1 += jt[c, 0, k] * w[k]
            t2 += jt[c, 1, k] * w[k]
        if c == 8:  # compliant pusher contact: s = Jn a + bn + ε γ
            normal_velocity += scales[3] * gamma
        out[6 + c] = w[6 + n + c] - normal_velocity
        out[6 + n + c] = w[xi0 + 3 * c] - mu[c] * gamma
        out[6 + 2 * n + 2 * c] = w[eta0 + 3 * c + 1] - t1
        out[6 + 2 * n + 2 * c + 1] = w[eta0 + 3 * c + 2] - t2


@njit(cache=True)
def residual(w: np.ndarray, n: int, dt: float, kappa: float, jn: np.ndarray, jt: np.ndarray, bn: np.ndarray,
             bt: np.ndarray, mu: np.ndarray, v0: np.ndarray, md: np.ndarray, scales: np.ndarray,
             out: np.ndarray) -> None:
    """Full residual (6 + 8n) at the central-path value ``kappa`` (dimensionless)."""
    equality_residual(w, n, dt, jn, jt, bn, bt, mu, v0, md, scales, out)
    target = kappa * scales[0] * scales[1]
    xi0 = 6 + 2 * n
    eta0 = 6 + 5 * n
    for c in range(n):
        out[6 + 4 * n + c] = w[6 + c] * w[6 + n + c] - target
        x0, x1, x2 = w[xi0 + 3 * c], w[xi0 + 3 * c + 1], w[xi0 + 3 * c + 2]
        e0, e1, e2 = w[eta0 + 3 * c], w[eta0 + 3 * c + 1], w[eta0 + 3 * c + 2]
        base = 6 + 5 * n + 3 * c
        out[base] = x0 * e0 + x1 * e1 + x2 * e2 - target
        out[base + 1] = x0 * e1 + e0 * x1
        out[base + 2] = x0 * e2 + e0 * x2


@njit(cache=True)
def violations(r: np.ndarray, w: np.ndarray, n: int, kappa: float, scales: np.ndarray) -> tuple[float, float, float]:
    """Scaled (residual violation, complementarity, central-path error) of the residual ``r`` at ``w``.

    As ``solver.violations``: the impulse rows are measured in ``max(m g dt, max γ)``.
    """
    p, v, length = scales[0], scales[1], scales[2]
    p_rows = p
    for c in range(n):
        p_rows = max(p_rows, w[6 + c])
    eq = 0.0
    for k in range(3):
        eq = max(eq, abs(r[k]) / p_rows)
    for k in range(3, 6):
        eq = max(eq, abs(r[k]) / (p_rows * length))
    for c in range(n):
        eq = max(eq, abs(r[6 + c]) / v, abs(r[6 + n + c]) / p_rows,
                 abs(r[6 + 2 * n + 2 * c]) / v, abs(r[6 + 2 * n + 2 * c + 1]) / v)
    unit = p * v
    deviation = 0.0
    products = -np.inf
    for c in range(n):
        cn = r[6 + 4 * n + c]
        h0, h1, h2 = r[6 + 5 * n + 3 * c], r[6 + 5 * n + 3 * c + 1], r[6 + 5 * n + 3 * c + 2]
        deviation = max(deviation, abs(cn), abs(h0), abs(h1), abs(h2))
        products = max(products, cn, abs(h1), abs(h2), h0)
    return eq, products / unit + kappa, deviation / unit / kappa


# --- Newton system ----------------------------------------------------------------------------
@njit(cache=True)
def nt_scaling(w: np.ndarray, n: int, scale: np.ndarray, scale_inverse: np.ndarray, lam: np.ndarray,
               scratch: np.ndarray) -> None:
    """Nesterov-Todd scaling of every cone pair of ``w`` (see ``solver.nt_scaling``).

    Outputs ``scale`` W (n, 3, 3), ``scale_inverse`` W⁻¹ (n, 3, 3), ``lam`` λ = W η (n, 3);
    ``scratch``: at least 9 numbers.
    """
    xi0 = 6 + 2 * n
    eta0 = 6 + 5 * n
    xb = scratch[0:3]
    eb = scratch[3:6]
    v = scratch[6:9]
    for c in range(n):
        x0, x1, x2 = w[xi0 + 3 * c], w[xi0 + 3 * c + 1], w[xi0 + 3 * c + 2]
        e0, e1, e2 = w[eta0 + 3 * c], w[eta0 + 3 * c + 1], w[eta0 + 3 * c + 2]
        det_xi = max(x0 * x0 - x1 * x1 - x2 * x2, 1e-300)
        det_eta = max(e0 * e0 - e1 * e1 - e2 * e2, 1e-300)
        sx = np.sqrt(det_xi)
        se = np.sqrt(det_eta)
        xb[0], xb[1], xb[2] = x0 / sx, x1 / sx, x2 / sx
        eb[0], eb[1], eb[2] = e0 / se, e1 / se, e2 / se
        norm = np.sqrt(2.0 * (1.0 + xb[0] * eb[0] + xb[1] * eb[1] + xb[2] * eb[2]))
        wb0 = (xb[0] + eb[0]) / norm
        root = np.sqrt(2.0 * (wb0 + 1.0))
        v[0] = wb0 / root + 1.0 / root
        v[1] = (xb[1] - eb[1]) / norm / root
        v[2] = (xb[2] - eb[2]) / norm / root
        beta = (det_xi / det_eta) ** 0.25
        for i in range(3):
            for j in range(3):
                flip_i = 1.0 if i == 0 else -1.0
                flip_j = 1.0 if j == 0 else -1.0
                jd = flip_i if i == j else 0.0
                scale[c, i, j] = beta * (2.0 * v[i] * v[j] - jd)
                scale_inverse[c, i, j] = (2.0 * flip_i * v[i] * flip_j * v[j] - jd) / beta
        for i in range(3):
            lam[c, i] = scale[c, i, 0] * e0 + scale[c, i, 1] * e1 + scale[c, i, 2] * e2


@njit(cache=True)
def _arrow_times(x: np.ndarray, m: np.ndarray, out: np.ndarray) -> None:
    """``Arw(x) @ m`` for a cone point ``x`` (3) and a 3 × 3 matrix ``m``."""
    for j in range(3):
        out[0, j] = x[0] * m[0, j] + x[1] * m[1, j] + x[2] * m[2, j]
        out[1, j] = x[1] * m[0, j] + x[0] * m[1, j]
        out[2, j] = x[2] * m[0, j] + x[0] * m[2, j]


@njit(cache=True)
def factorize(w: np.ndarray, n: int, dt: float, scaled: bool, jn: np.ndarray, jt: np.ndarray, mu: np.ndarray,
              md: np.ndarray, scale: np.ndarray, scale_inverse: np.ndarray, lam: np.ndarray,
              ratio: np.ndarray, cone_a0: np.ndarray, cone_bt: np.ndarray, q_inverse: np.ndarray,
              q_inv_c: np.ndarray, h_inverse: np.ndarray, scratch: np.ndarray, compliance: float) -> bool:
    """Block-eliminate the Newton matrix at ``w`` down to 6 × 6 (see ``solver.factorize``).

    ``scaled``: cone rows ``Arw(λ)(W⁻¹Δξ + WΔη)`` (iterations; needs ``nt_scaling`` outputs);
    otherwise the exact Jacobian ``Arw(η)Δξ + Arw(ξ)Δη`` (implicit gradients). Outputs: ``ratio``
    γ/(s + εγ) (n; ``ε = compliance`` for the pusher contact, 0 for the table), ``cone_a0`` (n, 3),
    ``cone_bt`` (n, 3, 2), ``q_inverse`` (n, 3, 3), ``q_inv_c`` (n, 3, 6), ``h_inverse`` (6, 6).
    ``scratch``: at least 81 numbers.

    Returns
    -------
    bool
        False if a block was numerically singular (then the outputs are unusable).
    """
    xi0 = 6 + 2 * n
    eta0 = 6 + 5 * n
    cone_a = scratch[0:9].reshape((3, 3))
    cone_b = scratch[9:18].reshape((3, 3))
    q = scratch[18:27].reshape((3, 3))
    c_mat = scratch[27:45].reshape((3, 6))
    h = scratch[45:81].reshape((6, 6))
    for j in range(6):
        for k in range(6):
            h[j, k] = md[k] if j == k else 0.0
    ox, oy, oz = w[3], w[4], w[5]
    ix, iy, iz = md[3] * ox, md[4] * oy, md[5] * oz
    # d(ω × Iω)/dω = [ω]× I - [Iω]×
    h[3, 4] += dt * (-oz * md[4] + iz)
    h[3, 5] += dt * (oy * md[5] - iy)
    h[4, 3] += dt * (oz * md[3] - iz)
    h[4, 5] += dt * (-ox * md[5] + ix)
    h[5, 3] += dt * (-oy * md[3] + iy)
    h[5, 4] += dt * (ox * md[4] - ix)
    for c in range(n):
        eps = compliance if c == 8 else 0.0
        ratio[c] = w[6 + c] / (w[6 + n + c] + eps * w[6 + c])
        if scaled:
            _arrow_times(lam[c], scale_inverse[c], cone_a)
            _arrow_times(lam[c], scale[c], cone_b)
        else:
            x0, x1, x2 = w[xi0 + 3 * c], w[xi0 + 3 * c + 1], w[xi0 + 3 * c + 2]
            e0, e1, e2 = w[eta0 + 3 * c], w[eta0 + 3 * c + 1], w[eta0 + 3 * c + 2]
            cone_a[0, 0], cone_a[0, 1], cone_a[0, 2] = e0, e1, e2
            cone_a[1, 0], cone_a[1, 1], cone_a[1, 2] = e1, e0, 0.0
            cone_a[2, 0], cone_a[2, 1], cone_a[2, 2] = e2, 0.0, e0
            cone_b[0, 0], cone_b[0, 1], cone_b[0, 2] = x0, x1, x2
            cone_b[1, 0], cone_b[1, 1], cone_b[1, 2] = x1, x0, 0.0
            cone_b[2, 0], cone_b[2, 1], cone_b[2, 2] = x2, 0.0, x0
        for i in range(3):
            q[i, 0] = cone_a[i, 1]
            q[i, 1] = cone_a[i, 2]
            q[i, 2] = cone_b[i, 0]
            cone_a0[c, i] = cone_a[i, 0]
            cone_bt[c, i, 0] = cone_b[i, 1]
            cone_bt[c, i, 1] = cone_b[i, 2]
        if not _invert(q, q_inverse[c]):
            return False
        mr = mu[c] * ratio[c]
        for i in range(3):
            for k in range(6):
                c_mat[i, k] = (cone_a0[c, i] * mr * jn[c, k]
                               - cone_bt[c, i, 0] * jt[c, 0, k] - cone_bt[c, i, 1] * jt[c, 1, k])
        for i in range(3):
            for k in range(6):
                q_inv_c[c, i, k] = (q_inverse[c, i, 0] * c_mat[0, k] + q_inverse[c, i, 1] * c_mat[1, k]
                                    + q_inverse[c, i, 2] * c_mat[2, k])
        for j in range(6):
            rj = ratio[c] * jn[c, j]
            for k in range(6):
                h[j, k] += rj * jn[c, k] - jt[c, 0, j] * q_inv_c[c, 0, k] - jt[c, 1, j] * q_inv_c[c, 1, k]
    return _invert(h, h_inverse)


@njit(cache=True)
def solve(w: np.ndarray, n: int, r: np.ndarray, jn: np.ndarray, jt: np.ndarray, mu: np.ndarray,
          ratio: np.ndarray, cone_a0: np.ndarray, cone_bt: np.ndarray, q_inverse: np.ndarray,
          q_inv_c: np.ndarray, h_inverse: np.ndarray, out: np.ndarray, scratch: np.ndarray, compliance: float,
          velocity_only: bool = False) -> None:
    """Newton directions ``Δ`` (6 + 8n, k) with ``R Δ = -r`` for residual columns ``r`` (6 + 8n, k).

    ``velocity_only``: fill only the ``Δa`` rows (0-5) of ``out`` (all the implicit gradients
    need). ``compliance``: ε of the pusher contact (index 8). ``scratch``: at least 4n + 18 numbers.
    """
    xi0 = 6 + 2 * n
    eta0 = 6 + 5 * n
    c_normal = 6 + 4 * n
    c_cone = 6 + 5 * n
    g_gamma = scratch[0:n]
    z0 = scratch[n:4 * n].reshape((n, 3))
    c0 = scratch[4 * n:4 * n + 3]
    rhs = scratch[4 * n + 3:4 * n + 9]
    da = scratch[4 * n + 9:4 * n + 15]
    z = scratch[4 * n + 15:4 * n + 18]
    for col in range(r.shape[1]):
        for k in range(6):
            rhs[k] = -r[k, col]
        for c in range(n):
            gamma, s = w[6 + c], w[6 + n + c]
            # Δs = Jn Δa + ε Δγ - r_s (ε: compliance of the pusher contact), so the γ row gives
            # Δγ = g - γ/(s + εγ) Jn Δa.
            eps = compliance if c == 8 else 0.0
            g = (-r[c_normal + c, col] + gamma * r[6 + c, col]) / (s + eps * gamma)
            g_gamma[c] = g
            base = mu[c] * g - r[6 + n + c, col]
            rs1, rs2 = r[6 + 2 * n + 2 * c, col], r[6 + 2 * n + 2 * c + 1, col]
            for i in range(3):
                c0[i] = (-r[c_cone + 3 * c + i, col] - cone_a0[c, i] * base
                         + cone_bt[c, i, 0] * rs1 + cone_bt[c, i, 1] * rs2)
            for i in range(3):
                z0[c, i] = q_inverse[c, i, 0] * c0[0] + q_inverse[c, i, 1] * c0[1] + q_inverse[c, i, 2] * c0[2]
            for k in range(6):
                rhs[k] += jn[c, k] * g + jt[c, 0, k] * z0[c, 0] + jt[c, 1, k] * z0[c, 1]
        for j in range(6):
            acc = 0.0
            for k in range(6):
                acc += h_inverse[j, k] * rhs[k]
            da[j] = acc
            out[j, col] = acc
        if velocity_only:
            continue
        for c in range(n):
            jn_da = 0.0
            t1 = 0.0
            t2 = 0.0
            for k in range(6):
                jn_da += jn[c, k] * da[k]
                t1 += jt[c, 0, k] * da[k]
                t2 += jt[c, 1, k] * da[k]
            dgamma = g_gamma[c] - ratio[c] * jn_da
            out[6 + c, col] = dgamma
            out[6 + n + c, col] = jn_da - r[6 + c, col] + (compliance * dgamma if c == 8 else 0.0)
            for i in range(3):
                acc = z0[c, i]
                for k in range(6):
                    acc += q_inv_c[c, i, k] * da[k]
                z[i] = acc
            out[xi0 + 3 * c, col] = mu[c] * dgamma - r[6 + n + c, col]
            out[xi0 + 3 * c + 1, col] = z[0]
            out[xi0 + 3 * c + 2, col] = z[1]
            out[eta0 + 3 * c, col] = z[2]
            out[eta0 + 3 * c + 1, col] = t1 - r[6 + 2 * n + 2 * c, col]
            out[eta0 + 3 * c + 2, col] = t2 - r[6 + 2 * n + 2 * c + 1, col]


@njit(cache=True)
def cone_search(w: np.ndarray, d: np.ndarray, n: int, tau_orthant: float, tau_soc: float) -> float:
    """Analytic line search over the orthant pairs and the second-order cones (Dojo Alg. 1)."""
    ratio = np.inf
    for i in range(6, 6 + 2 * n):
        if d[i] < 0.0:
            ratio = min(ratio, -w[i] / d[i])
    alpha = 1.0 if ratio == np.inf else min(1.0, tau_orthant * ratio)
    worst = 0.0
    for c in range(2 * n):
        base = 6 + 2 * n + 3 * c
        y0, y1, y2 = w[base], w[base + 1], w[base + 2]
        d0, d1, d2 = d[base], d[base + 1], d[base + 2]
        nu = max(y0 * y0 - y1 * y1 - y2 * y2, 1e-300)
        sqrt_nu = np.sqrt(nu)
        zeta = y0 * d0 - y1 * d1 - y2 * d2
        factor = (zeta / sqrt_nu + d0) / (y0 * sqrt_nu + nu)
        rho1 = d1 / sqrt_nu - factor * y1
        rho2 = d2 / sqrt_nu - factor * y2
        gap = np.sqrt(rho1 * rho1 + rho2 * rho2) - zeta / nu
        if gap > worst:
            worst = gap
    if worst > 0.0:
        alpha = min(alpha, min(1.0, tau_soc / worst))
    return alpha


# --- the interior-point iteration ---------------------------------------------------------------
@njit(cache=True)
def _finite(x: np.ndarray) -> bool:
    """Every entry of the 1-D array ``x`` is finite (the violation maxima skip NaN, so test here)."""
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i] * 0.0
    return total == 0.0


@njit(cache=True)
def pair_gap(w: np.ndarray, n: int) -> float:
    """Largest duality gap of one complementarity pair, ``max(γ s, ξᵀη)`` (N s · m/s)."""
    gap = 0.0
    for c in range(n):
        gap = max(gap, w[6 + c] * w[6 + n + c])
        base_xi = 6 + 2 * n + 3 * c
        base_eta = 6 + 5 * n + 3 * c
        gap = max(gap, w[base_xi] * w[base_eta] + w[base_xi + 1] * w[base_eta + 1]
                  + w[base_xi + 2] * w[base_eta + 2])
    return gap


@njit(cache=True)
def initial_iterate(n: int, jn: np.ndarray, bn: np.ndarray, v0: np.ndarray, md: np.ndarray,
                    scales: np.ndarray, w: np.ndarray) -> None:
    """Free-flight velocities, unit (scaled) cone variables strictly inside their cones."""
    p, v = scales[0], scales[1]
    for k in range(6):
        w[k] = v0[k]
    w[2] -= p / md[0]
    for c in range(n):
        slack = bn[c]
        for k in range(6):
            slack += jn[c, k] * w[k]
        w[6 + c] = p
        w[6 + n + c] = max(slack, v)
        for i in range(3):
            w[6 + 2 * n + 3 * c + i] = p if i == 0 else 0.0
            w[6 + 5 * n + 3 * c + i] = v if i == 0 else 0.0


@njit(cache=True)
def interior_point(w: np.ndarray, n: int, dt: float, kappa: float, settings: np.ndarray, jn: np.ndarray,
                   jt: np.ndarray, bn: np.ndarray, bt: np.ndarray, mu: np.ndarray, v0: np.ndarray,
                   md: np.ndarray, scales: np.ndarray, centred: bool, trace: np.ndarray, trace_count: np.ndarray,
                   substep: int) -> tuple[int, int, float, float, float]:
    """Solve ``r(w; κ) = 0`` in place from the starting point in ``w`` (see ``solver.interior_point``).

    Mehrotra predictor-corrector with Nesterov-Todd scaled cone rows, the analytic cone line
    search and violation backtracking; κ continuation through ``continuation_kappa``.
    ``centred``: converge onto the central-path point at κ (what the implicit gradients need);
    otherwise (forward hard-contact solve) after ``gap_patience`` iterations also accept every
    pair's duality gap within ``gap_factor`` κ (see ``settings.SolverSettings``).

    Whatever the outcome, ``w`` ends as a finite iterate: on failure it is the best iterate seen (the
    lowest ``max(residual violation, complementarity)``), so a caller may accept it as a last resort.
    With a ``trace`` buffer of shape (rows, len(TRACE_COLUMNS)), one row per iteration is appended at
    ``trace_count[0]`` (rows beyond the buffer are dropped; the count keeps growing).

    Returns
    -------
    (status, iterations, residual violation, complementarity, central-path error)
        ``status`` is :data:`STATUS_OK`, :data:`STATUS_NOT_CONVERGED` or :data:`STATUS_BREAKDOWN`; on
        failure the violations are those of the best iterate left in ``w``.
    """
    size = 6 + 8 * n
    unit = scales[0] * scales[1]
    degree = 2.0 * n
    residual_tol = settings[S_RESIDUAL_TOL]
    kappa_rtol = settings[S_KAPPA_RTOL]
    max_iterations = int(settings[S_MAX_ITERATIONS])
    max_backtracks = int(settings[S_MAX_BACKTRACKS])
    floor = max(kappa, settings[S_CONT_KAPPA])
    res = np.empty(size)
    rhs = np.empty((size, 1))
    d_aff = np.empty((size, 1))
    d = np.empty((size, 1))
    candidate = np.empty(size)
    scale = np.empty((n, 3, 3))
    scale_inverse = np.empty((n, 3, 3))
    lam = np.empty((n, 3))
    ratio = np.empty(n)
    cone_a0 = np.empty((n, 3))
    cone_bt = np.empty((n, 3, 2))
    q_inverse = np.empty((n, 3, 3))
    q_inv_c = np.empty((n, 3, 6))
    h_inverse = np.empty((6, 6))
    sx = np.empty(3)
    se = np.empty(3)
    scratch = np.empty(SCRATCH_SIZE)
    residual(w, n, dt, floor, jn, jt, bn, bt, mu, v0, md, scales, res)
    r_vio, k_vio, path = violations(res, w, n, floor, scales)
    xi0 = 6 + 2 * n
    eta0 = 6 + 5 * n
    best = w.copy()
    best_merit = np.inf
    best_r, best_k, best_path = r_vio, k_vio, path
    alpha = 0.0
    for iteration in range(max_iterations + 1):
        if floor > kappa and r_vio <= settings[S_CONT_RESIDUAL_TOL] and path <= settings[S_CONT_KAPPA_RTOL]:
            floor = max(kappa, floor * settings[S_CONT_FACTOR])
            residual(w, n, dt, floor, jn, jt, bn, bt, mu, v0, md, scales, res)
            r_vio, k_vio, path = violations(res, w, n, floor, scales)
        row = trace_count[0]
        if row < trace.shape[0]:
            trace[row, 0] = substep
            trace[row, 1] = kappa
            trace[row, 2] = floor
            trace[row, 3] = iteration
            trace[row, 4] = r_vio
            trace[row, 5] = k_vio
            trace[row, 6] = path
            trace[row, 7] = alpha
        trace_count[0] = row + 1
        if not (r_vio < np.inf and path < np.inf and _finite(w) and _finite(res)):  # also catches NaN
            w[:] = best
            return STATUS_BREAKDOWN, iteration, best_r, best_k, best_path
        merit = max(r_vio, k_vio)
        if merit < best_merit:
            best_merit = merit
            best[:] = w
            best_r, best_k, best_path = r_vio, k_vio, path
        if floor == kappa and r_vio <= residual_tol and (
                path <= kappa_rtol or (not centred and iteration >= settings[S_GAP_PATIENCE]
                                       and pair_gap(w, n) <= settings[S_GAP_FACTOR] * kappa * unit)):
            return STATUS_OK, iteration, r_vio, k_vio, path
        if iteration == max_iterations:
            break
        nt_scaling(w, n, scale, scale_inverse, lam, scratch)
        if not factorize(w, n, dt, True, jn, jt, mu, md, scale, scale_inverse, lam, ratio, cone_a0, cone_bt,
                         q_inverse, q_inv_c, h_inverse, scratch, scales[3]):
            w[:] = best
            return STATUS_BREAKDOWN, iteration, best_r, best_k, best_path
        # Predictor: κ = 0 in the scaled complementarity rows (λ ∘ λ).
        for i in range(6 + 4 * n):
            rhs[i, 0] = res[i]
        mu_now = 0.0
        for c in range(n):
            rhs[6 + 4 * n + c, 0] = w[6 + c] * w[6 + n + c]
            l0, l1, l2 = lam[c, 0], lam[c, 1], lam[c, 2]
            rhs[6 + 5 * n + 3 * c, 0] = l0 * l0 + l1 * l1 + l2 * l2
            rhs[6 + 5 * n + 3 * c + 1, 0] = 2.0 * l0 * l1
            rhs[6 + 5 * n + 3 * c + 2, 0] = 2.0 * l0 * l2
            mu_now += w[6 + c] * w[6 + n + c]
            for i in range(3):
                mu_now += w[xi0 + 3 * c + i] * w[eta0 + 3 * c + i]
        solve(w, n, rhs, jn, jt, mu, ratio, cone_a0, cone_bt, q_inverse, q_inv_c, h_inverse, d_aff, scratch,
              scales[3])
        alpha_aff = cone_search(w, d_aff[:, 0], n, 1.0, 1.0)
        mu_now /= degree * unit
        mu_aff = 0.0
        for c in range(n):
            mu_aff += ((w[6 + c] + alpha_aff * d_aff[6 + c, 0]) * (w[6 + n + c] + alpha_aff * d_aff[6 + n + c, 0]))
            for i in range(3):
                mu_aff += ((w[xi0 + 3 * c + i] + alpha_aff * d_aff[xi0 + 3 * c + i, 0])
                           * (w[eta0 + 3 * c + i] + alpha_aff * d_aff[eta0 + 3 * c + i, 0]))
        mu_aff /= degree * unit
        sigma = min(1.0, max(0.0, mu_aff / mu_now)) ** 3
        target = max(sigma * mu_now, floor) * unit
        second_order = sigma * mu_now > floor
        for c in range(n):
            rhs[6 + 4 * n + c, 0] -= target
            rhs[6 + 5 * n + 3 * c, 0] -= target
            if second_order:
                # Mehrotra's second-order correction, in the scaled space.
                rhs[6 + 4 * n + c, 0] += d_aff[6 + c, 0] * d_aff[6 + n + c, 0]
                for i in range(3):
                    sx[i] = 0.0
                    se[i] = 0.0
                    for j in range(3):
                        sx[i] += scale_inverse[c, i, j] * d_aff[xi0 + 3 * c + j, 0]
                        se[i] += scale[c, i, j] * d_aff[eta0 + 3 * c + j, 0]
                rhs[6 + 5 * n + 3 * c, 0] += sx[0] * se[0] + sx[1] * se[1] + sx[2] * se[2]
                rhs[6 + 5 * n + 3 * c + 1, 0] += sx[0] * se[1] + se[0] * sx[1]
                rhs[6 + 5 * n + 3 * c + 2, 0] += sx[0] * se[2] + se[0] * sx[2]
        solve(w, n, rhs, jn, jt, mu, ratio, cone_a0, cone_bt, q_inverse, q_inv_c, h_inverse, d, scratch, scales[3])
        tau_ort = max(settings[S_TAU_MIN], 1.0 - max(r_vio, k_vio) ** 2)
        tau_soc = min(settings[S_TAU_SOC_MAX], tau_ort)
        alpha = cone_search(w, d[:, 0], n, tau_ort, tau_soc)
        new_r, new_k, new_path = r_vio, k_vio, path
        for _ in range(max_backtracks):
            for i in range(size):
                candidate[i] = w[i] + alpha * d[i, 0]
            residual(candidate, n, dt, floor, jn, jt, bn, bt, mu, v0, md, scales, res)
            new_r, new_k, new_path = violations(res, candidate, n, floor, scales)
            if new_r <= max(r_vio, residual_tol) or new_k <= k_vio or new_path <= path:
                break
            alpha *= settings[S_BACKTRACK]
        for i in range(size):
            w[i] = candidate[i]
        r_vio, k_vio, path = new_r, new_k, new_path
    w[:] = best
    return STATUS_NOT_CONVERGED, max_iterations, best_r, best_k, best_path


# --- implicit gradients -----------------------------------------------------------------------
@njit(cache=True)
def implicit_jacobian(theta: np.ndarray, w: np.ndarray, n: int, capsule: bool, dt: float, kappa: float,
                      jn: np.ndarray, jt: np.ndarray, mu: np.ndarray, v0: np.ndarray, md: np.ndarray,
                      compliance: float, out: np.ndarray) -> bool:
    """d next state / d θ (13, THETA_SIZE) at the solution ``w`` (implicit function theorem).

    ``compliance``: ε of the pusher contact (``scales[3]`` of :func:`problem_data`; ∝ 1/mass, which
    enters the mass column). Returns False if the residual Jacobian is numerically
    singular at ``w`` (``out`` is then unusable).

    ``da/dθ = -R⁻¹ ∂r/∂θ``, with ``R`` the exact residual Jacobian at ``w`` block-eliminated once
    and back-substituted for all columns together.

    The partials ``∂r/∂θ`` are analytic where θ enters the contact data simply: the position
    (corner gaps; the pusher sees only its offset from the box), the state velocities (only
    through ``v0``), the mass, both friction coefficients, the table height, the pusher radius,
    the pusher placement at the end of the step (only through the pusher point's velocity; for a
    capsule its end points weigh ``1 - t`` and ``t``), and the unit of κ (``m g dt · g dt``) in the
    complementarity rows. The columns that move the contact geometry (quaternion, pusher placement
    at the start, box size, centre of mass, inertia scale, support ratio) and the partials ``∂x⁺/∂θ``, ``∂x⁺/∂a``
    of the next-state map are central differences of the compiled maps (relative step
    :data:`THETA_STEP`).
    """
    size = 6 + 8 * n
    ratio = np.empty(n)
    cone_a0 = np.empty((n, 3))
    cone_bt = np.empty((n, 3, 2))
    q_inverse = np.empty((n, 3, 3))
    q_inv_c = np.empty((n, 3, 6))
    h_inverse = np.empty((6, 6))
    dummy = np.empty((n, 3, 3))
    scratch = np.empty(SCRATCH_SIZE)
    if not factorize(w, n, dt, False, jn, jt, mu, md, dummy, dummy, np.empty((n, 3)), ratio, cone_a0, cone_bt,
                     q_inverse, q_inv_c, h_inverse, scratch, compliance):
        return False
    pjn = np.empty((n, 6))
    pjt = np.empty((n, 2, 6))
    pbn = np.empty(n)
    pbt = np.empty((n, 2))
    pmu = np.empty(n)
    pv0 = np.empty(6)
    pmd = np.empty(6)
    psc = np.empty(4)
    plus = np.empty(size)
    minus = np.empty(size)
    x_plus = np.empty(layout.STATE_SIZE)
    x_minus = np.empty(layout.STATE_SIZE)
    rhs = np.zeros((size, _T))
    dx_dtheta = np.zeros((layout.STATE_SIZE, _T))
    a = w[0:6].copy()
    perturbed = theta.copy()
    for j in range(_T):
        geometry = (layout.QUAT <= j < layout.QUAT + 4 or (n == 9 and _PS <= j < (_PS + 6 if capsule else _PS + 3))
                    or layout.GEOMETRY_PARAM_COLUMN[j])
        if not geometry:
            continue
        pose = layout.POSE_COLUMN[j]  # what the next-state map reads besides a
        h = THETA_STEP * max(1.0, abs(theta[j]))
        perturbed[j] = theta[j] + h
        problem_data(perturbed, dt, n, capsule, pjn, pjt, pbn, pbt, pmu, pv0, pmd, psc, scratch)
        equality_residual(w, n, dt, pjn, pjt, pbn, pbt, pmu, pv0, pmd, psc, plus)
        if pose:
            next_state(perturbed, a, dt, x_plus, scratch)
        perturbed[j] = theta[j] - h
        problem_data(perturbed, dt, n, capsule, pjn, pjt, pbn, pbt, pmu, pv0, pmd, psc, scratch)
        equality_residual(w, n, dt, pjn, pjt, pbn, pbt, pmu, pv0, pmd, psc, minus)
        if pose:
            next_state(perturbed, a, dt, x_minus, scratch)
        perturbed[j] = theta[j]
        for i in range(6 + 4 * n):
            rhs[i, j] = (plus[i] - minus[i]) / (2.0 * h)
        if pose:
            for i in range(layout.STATE_SIZE):
                dx_dtheta[i, j] = (x_plus[i] - x_minus[i]) / (2.0 * h)
    # State velocities enter only through v0 = (v + ω × R com, Rᵀ ω); the dynamics rows carry -md ∂v0.
    rot = np.empty((3, 3))
    _rotation(theta[layout.QUAT], theta[layout.QUAT + 1], theta[layout.QUAT + 2], theta[layout.QUAT + 3], rot)
    cx, cy, cz = theta[layout.COM_X], theta[layout.COM_Y], theta[layout.COM_Z]
    l0 = rot[0, 0] * cx + rot[0, 1] * cy + rot[0, 2] * cz
    l1 = rot[1, 0] * cx + rot[1, 1] * cy + rot[1, 2] * cz
    l2 = rot[2, 0] * cx + rot[2, 1] * cy + rot[2, 2] * cz
    for i in range(3):
        rhs[i, 7 + i] = -md[i]
        for k in range(3):
            rhs[3 + i, 10 + k] = -md[3 + i] * rot[k, i]
    rhs[0, 11], rhs[0, 12] = -md[0] * l2, md[0] * l1
    rhs[1, 10], rhs[1, 12] = md[1] * l2, -md[1] * l0
    rhs[2, 10], rhs[2, 11] = -md[2] * l1, md[2] * l0
    # Mass: inertia scales with it, and so does the gravity impulse.
    mass = theta[layout.MASS]
    ox, oy, oz = a[3], a[4], a[5]
    ix, iy, iz = md[3] * ox, md[4] * oy, md[5] * oz
    for k in range(6):
        rhs[k, _MASS_COLUMN] = md[k] / mass * (a[k] - v0[k])
    rhs[2, _MASS_COLUMN] += GRAVITY * dt
    rhs[3, _MASS_COLUMN] += dt * (oy * iz - oz * iy) / mass
    rhs[4, _MASS_COLUMN] += dt * (oz * ix - ox * iz) / mass
    rhs[5, _MASS_COLUMN] += dt * (ox * iy - oy * ix) / mass
    if n == 9:  # pusher normal row s - (Jn a + bn + ε γ) with ε ∝ 1/m
        rhs[6 + 8, _MASS_COLUMN] += compliance * w[6 + 8] / mass
    # Friction: cone head ξ₁ - μγ (μ is clamped at MIN_FRICTION from below).
    if theta[layout.MU_TABLE] > MIN_FRICTION:
        for c in range(8):
            rhs[6 + n + c, layout.MU_TABLE] = -w[6 + c]
    # Table height: corner gaps (z - h)/dt in the normal rows.
    for c in range(8):
        rhs[6 + c, layout.TABLE_HEIGHT] = 1.0 / dt
    if n == 9:
        if theta[layout.MU_PUSHER] > MIN_FRICTION:
            rhs[6 + n + 8, layout.MU_PUSHER] = -w[6 + 8]
        rhs[6 + 8, layout.PUSHER_RADIUS] = 1.0 / dt  # radius: distance - r
        weight_b = 0.0  # capsule: the segment parameter of the contact point (the point's share of b)
        if capsule:
            origin = np.empty(3)
            half = np.empty(3)
            inner_half(theta, half)
            for i in range(3):
                origin[i] = theta[layout.POS + i]
            _, weight_b = pusher_box_distance(theta, origin, rot, half, True, False, np.empty(3), np.empty(3),
                                              scratch)
        for i in range(3):  # pusher end: only the point's velocity (end - start)/dt, along the normal and tangents
            for column, weight in ((_PE + i, 1.0 - weight_b), (_PE + 3 + i, weight_b)):
                rhs[6 + 8, column] = weight * jn[8, i] / dt
                rhs[6 + 2 * n + 16, column] = weight * jt[8, 0, i] / dt
                rhs[6 + 2 * n + 17, column] = weight * jt[8, 1, i] / dt
    # Position: the pusher's geometry sees only its start placement - position (its velocity not at all,
    # so the start columns less their velocity part, which is minus the end columns), the corner gaps
    # rise with z, and the next position moves with the current one.
    for i in range(3):
        dx_dtheta[layout.POS + i, layout.POS + i] = 1.0
        if n == 9:
            for row in range(6 + 4 * n):
                rhs[row, i] = -(rhs[row, _PS + i] + rhs[row, _PS + 3 + i]
                                + rhs[row, _PE + i] + rhs[row, _PE + 3 + i])
    for c in range(8):
        rhs[6 + c, 2] -= 1.0 / dt
    d_unit = (GRAVITY * dt) ** 2  # d(m g dt · g dt)/dm
    for c in range(n):
        rhs[6 + 4 * n + c, _MASS_COLUMN] = -kappa * d_unit
        rhs[6 + 5 * n + 3 * c, _MASS_COLUMN] = -kappa * d_unit
    directions = np.empty((size, _T))
    solve(w, n, rhs, jn, jt, mu, ratio, cone_a0, cone_bt, q_inverse, q_inv_c, h_inverse, directions, scratch,
          compliance, True)
    for k in range(6):
        h = THETA_STEP * max(1.0, abs(a[k]))
        a_k = a[k]
        a[k] = a_k + h
        next_state(theta, a, dt, x_plus, scratch)
        a[k] = a_k - h
        next_state(theta, a, dt, x_minus, scratch)
        a[k] = a_k
        for i in range(layout.STATE_SIZE):
            slope = (x_plus[i] - x_minus[i]) / (2.0 * h)
            for j in range(_T):
                dx_dtheta[i, j] += slope * directions[k, j]
    out[:, :] = dx_dtheta
    return True


# --- the resting shortcut ---------------------------------------------------------------------
@njit(cache=True)
def resting(theta: np.ndarray, with_pusher: bool, capsule: bool, dt: float, settings: np.ndarray) -> bool:
    """Whether the hard-contact step is "the box stays at rest" without solving.

    True when every state velocity component is within ``speed_tol`` (m/s, rad/s; and below a
    tenth of the velocity that table friction removes in one step), the four lowest corners are
    within ``gap_tol`` m of the table (the box lies flat on a face), and the pusher cannot come
    within ``pusher_margin`` m of the box during the step (its start clearance minus the distance
    it travels; for a capsule the farther-travelling end point bounds every point of the segment).
    Then gravity is carried by the four corners, friction sticks, and zero velocities with an
    unchanged pose solve the contact problem exactly.
    """
    speed_tol = min(settings[S_REST_SPEED_TOL], 0.1 * max(theta[layout.MU_TABLE], MIN_FRICTION) * GRAVITY * dt)
    for i in range(layout.VEL, layout.OMEGA + 3):
        if abs(theta[i]) > speed_tol:
            return False
    rot = np.empty((3, 3))
    _rotation(theta[layout.QUAT], theta[layout.QUAT + 1], theta[layout.QUAT + 2], theta[layout.QUAT + 3], rot)
    half = np.empty(3)
    inner_half(theta, half)
    gap_tol = settings[S_REST_GAP_TOL]
    touching = 0
    for k in range(8):
        hx = (2.0 * (k // 4) - 1.0) * half[0]
        hy = (2.0 * ((k // 2) % 2) - 1.0) * half[1]
        hz = (2.0 * (k % 2) - 1.0) * half[2]
        gap = (theta[layout.POS + 2] + rot[2, 0] * hx + rot[2, 1] * hy + rot[2, 2] * hz - theta[layout.EDGE_RADIUS]
               - theta[layout.TABLE_HEIGHT])
        if gap < -gap_tol:
            return False
        if gap <= gap_tol:
            touching += 1
    if touching != 4:
        return False
    if with_pusher:
        travel_a = 0.0
        travel_b = 0.0
        for i in range(3):
            travel_a += (theta[_PE + i] - theta[_PS + i]) ** 2
            travel_b += (theta[_PE + 3 + i] - theta[_PS + 3 + i]) ** 2
        travel = max(travel_a, travel_b) if capsule else travel_a
        clearance, _ = pusher_box_distance(theta, theta[layout.POS:layout.POS + 3], rot, half, capsule, False,
                                           np.empty(3), np.empty(3), np.empty(14))
        if clearance - np.sqrt(travel) <= settings[S_REST_PUSHER_MARGIN]:
            return False
    return True


# --- one time step ----------------------------------------------------------------------------
@njit(cache=True)
def step_kernel(theta: np.ndarray, dt: float, substeps: int, with_pusher: bool, capsule: bool, kappa_sim: float,
                kappa_grad: float, grad: bool, settings: np.ndarray, state_out: np.ndarray,
                jacobian_out: np.ndarray, smoothed_out: np.ndarray, info: np.ndarray, trace: np.ndarray,
                trace_count: np.ndarray) -> int:
    """One time step ``dt`` (s) in ``substeps`` engine steps from the problem vector ``θ``.

    Parameters
    ----------
    theta : ndarray (THETA_SIZE,)
        State, pusher placement at the start and end of the step (6 + 6, m world: sphere centre and 3
        unused numbers, or capsule end points; ignored without pusher), parameters.
    dt : float
        Time step, s.
    substeps : int
        Engine steps of ``dt / substeps``; the pusher placement moves linearly over the step.
    with_pusher, capsule : bool
        There is a pusher; it is a capsule (else a sphere).
    kappa_sim, kappa_grad : float
        Central-path values of the forward solution and of the gradients.
    grad : bool
        Also compute d next state / d θ (then the resting shortcut is not taken).
    settings : ndarray (SETTINGS_SIZE,)
    state_out : ndarray (13,)
        Next state (at ``kappa_sim``).
    jacobian_out : ndarray (13, THETA_SIZE)
        With ``grad``: d next state / d θ at ``kappa_grad``.
    smoothed_out : ndarray (13,)
        With ``grad``: the next state at ``kappa_grad`` (last sub-step).
    info : ndarray (INFO_SIZE,)
        Active contacts, pusher normal impulse (N s), table and pusher distances at the end (m),
        the worst violations of the step's solves, iterations, the κ that failed, central-path error,
        1 if the shortcut was taken, the number of solves that ended on their best iterate.
    trace, trace_count : ndarray (rows, len(TRACE_COLUMNS)), ndarray (1,) int64
        Per-iteration solver trace (see :func:`interior_point`); :data:`NO_TRACE` records none.

    Returns
    -------
    int
        :data:`STATUS_OK`, :data:`STATUS_NOT_CONVERGED` or :data:`STATUS_BREAKDOWN` (then ``info``
        names the failing κ); with ``settings[S_ACCEPT_BEST]`` a solve that fails continues from its
        best iterate (its Jacobian block, if asked for, is zero when singular there) and the step
        returns :data:`STATUS_BEST_ITERATE`.
    """
    n = 9 if with_pusher else 8
    size = 6 + 8 * n
    sub_dt = dt / substeps
    work = theta.copy()
    for i in range(layout.STATE_SIZE):
        state_out[i] = theta[i]
    info[:] = 0.0
    half = np.empty(3)
    inner_half(theta, half)
    if (not grad and settings[S_REST_ENABLED] > 0.0 and kappa_sim <= settings[S_REST_KAPPA_MAX]
            and resting(theta, with_pusher, capsule, dt, settings)):
        for i in range(layout.VEL, layout.OMEGA + 3):
            state_out[i] = 0.0
        info[I_ACTIVE] = 4.0
        info[I_RESTING] = 1.0
    else:
        jn = np.empty((n, 6))
        jt = np.empty((n, 2, 6))
        bn = np.empty(n)
        bt = np.empty((n, 2))
        mu = np.empty(n)
        v0 = np.empty(6)
        md = np.empty(6)
        scales = np.empty(4)
        w = np.empty(size)
        scratch = np.empty(SCRATCH_SIZE)
        sub = theta.copy()
        total = np.zeros((layout.STATE_SIZE, _T))
        jac = np.empty((layout.STATE_SIZE, _T))
        chained = np.empty((layout.STATE_SIZE, _T))
        first, second = kappa_sim, kappa_sim
        if grad and kappa_grad != kappa_sim:
            first, second = max(kappa_sim, kappa_grad), min(kappa_sim, kappa_grad)
        if grad:
            for i in range(layout.STATE_SIZE):
                total[i, i] = 1.0
        iterations = 0
        accept_best = settings[S_ACCEPT_BEST] > 0.0
        best_used = 0
        for k in range(substeps):
            for i in range(_T):
                sub[i] = work[i]
            if with_pusher:
                f0, f1 = k / substeps, (k + 1) / substeps
                for i in range(6):
                    p0, p1 = theta[_PS + i], theta[_PE + i]
                    sub[_PS + i] = p0 + (p1 - p0) * f0
                    sub[_PE + i] = p0 + (p1 - p0) * f1
            problem_data(sub, sub_dt, n, capsule, jn, jt, bn, bt, mu, v0, md, scales, scratch)
            initial_iterate(n, jn, bn, v0, md, scales, w)
            count = 1 if first == second else 2
            for target in range(count):
                kappa = first if target == 0 else second
                centred = grad and kappa == kappa_grad
                status, its, r_vio, k_vio, path = interior_point(w, n, sub_dt, kappa, settings, jn, jt, bn, bt,
                                                                  mu, v0, md, scales, centred, trace, trace_count, k)
                iterations += its
                info[I_RESIDUAL_VIO] = max(info[I_RESIDUAL_VIO], r_vio)
                info[I_KAPPA_VIO] = max(info[I_KAPPA_VIO], k_vio)
                info[I_PATH_ERROR] = max(info[I_PATH_ERROR], path)
                if status != STATUS_OK:
                    info[I_FAILED_KAPPA] = kappa
                    if not accept_best or not (r_vio < np.inf and k_vio < np.inf):
                        info[I_ITERATIONS] = iterations
                        return status
                    best_used += 1
                if grad and kappa == kappa_grad:
                    if not implicit_jacobian(sub, w, n, capsule, sub_dt, kappa_grad, jn, jt, mu, v0, md, scales[3],
                                             jac):
                        info[I_FAILED_KAPPA] = kappa
                        if not accept_best:
                            info[I_ITERATIONS] = iterations
                            return STATUS_BREAKDOWN
                        best_used += 1
                        jac[:, :] = 0.0
                    next_state(sub, w[0:6], sub_dt, smoothed_out, scratch)
            if grad:
                # Chain: the sub-step sees the current state (d/dθ = total) and the sub-step pusher
                # placements (affine in θ); the parameters pass through unchanged.
                f0, f1 = k / substeps, (k + 1) / substeps
                for i in range(layout.STATE_SIZE):
                    for j in range(_T):
                        acc = jac[i, j] if j >= _PS else 0.0
                        for m in range(layout.STATE_SIZE):
                            acc += jac[i, m] * total[m, j]
                        chained[i, j] = acc
                    if with_pusher:
                        for m in range(6):
                            start, end = jac[i, _PS + m], jac[i, _PE + m]
                            chained[i, _PS + m] += start * (1.0 - f0) - start + end * (1.0 - f1)
                            chained[i, _PE + m] += start * f0 + end * f1 - end
                total[:, :] = chained
            next_state(sub, w[0:6], sub_dt, state_out, scratch)
            if not _finite(state_out):
                info[I_ITERATIONS] = iterations
                info[I_FAILED_KAPPA] = second
                return STATUS_BREAKDOWN
            for i in range(layout.STATE_SIZE):
                work[i] = state_out[i]
        if grad:
            jacobian_out[:, :] = total
        active = 0
        for c in range(n):
            if w[6 + c] / scales[0] > ACTIVE_IMPULSE:
                active += 1
        info[I_ACTIVE] = active
        info[I_PUSHER_IMPULSE] = w[6 + 8] if with_pusher else 0.0
        info[I_ITERATIONS] = iterations
        info[I_BEST_USED] = best_used
    # Contact summary at the end of the step.
    rot = np.empty((3, 3))
    _rotation(state_out[3], state_out[4], state_out[5], state_out[6], rot)
    lowest = np.inf
    for k in range(8):
        hx = (2.0 * (k // 4) - 1.0) * half[0]
        hy = (2.0 * ((k // 2) % 2) - 1.0) * half[1]
        hz = (2.0 * (k % 2) - 1.0) * half[2]
        lowest = min(lowest, rot[2, 0] * hx + rot[2, 1] * hy + rot[2, 2] * hz)
    info[I_TABLE_DISTANCE] = state_out[2] + lowest - theta[layout.EDGE_RADIUS] - theta[layout.TABLE_HEIGHT]
    info[I_PUSHER_DISTANCE] = np.inf
    if with_pusher:
        info[I_PUSHER_DISTANCE], _ = pusher_box_distance(theta, state_out[0:3], rot, half, capsule, True,
                                                         np.empty(3), np.empty(3), np.empty(14))
    return STATUS_BEST_ITERATE if info[I_BEST_USED] > 0.0 else STATUS_OK

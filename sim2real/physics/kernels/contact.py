"""Compiled contact geometry and problem data: sphere and capsule against the box, the linearised contact rows of a
step from θ, and the next-state map.

Part of :mod:`sim2real.physics.kernels` (see there for the layouts of θ, the iterate and the residual).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sim2real.physics import layout
from sim2real.physics.constants import MIN_FRICTION, PUSHER_CONTACT_FREQUENCY
from sim2real.physics.kernels.common import _PE, _PS, _SMALL_ANGLE, CONTACT_BAND, _rotation
from sim2real.sim.constants import GRAVITY


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


@njit(cache=True, inline="always")
def _set_row(jn: np.ndarray, jt: np.ndarray, k: int, row: int, a0: float, a1: float, a2: float, a3: float, a4: float,
             a5: float) -> None:
    """Row ``row`` of contact ``k``'s Jacobian (0: normal ``jn[k]``, 1-2: tangent ``jt[k, row - 1]``) set to
    ``(a0, ..., a5)``."""
    if row == 0:
        jn[k, 0], jn[k, 1], jn[k, 2], jn[k, 3], jn[k, 4], jn[k, 5] = a0, a1, a2, a3, a4, a5
    else:
        t = row - 1
        jt[k, t, 0], jt[k, t, 1], jt[k, t, 2], jt[k, t, 3], jt[k, t, 4], jt[k, t, 5] = a0, a1, a2, a3, a4, a5


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
            if row == 0:
                lx, ly, lz = dx, dy, dz
            else:
                lx = dx - shrink * (rot[0, 0] * hwx + rot[1, 0] * hwy)
                ly = dy - shrink * (rot[0, 1] * hwx + rot[1, 1] * hwy)
                lz = dz - shrink * (rot[0, 2] * hwx + rot[1, 2] * hwy)
            # written by index, not through a view of the row (a view costs a reference count)
            _set_row(jn, jt, k, row, 1.0 if axis == 0 else 0.0, 1.0 if axis == 1 else 0.0,
                     1.0 if axis == 2 else 0.0, ly * uz - lz * uy, lz * ux - lx * uz, lx * uy - ly * ux)
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
            ux = rot[0, 0] * frame[row, 0] + rot[1, 0] * frame[row, 1] + rot[2, 0] * frame[row, 2]
            uy = rot[0, 1] * frame[row, 0] + rot[1, 1] * frame[row, 1] + rot[2, 1] * frame[row, 2]
            uz = rot[0, 2] * frame[row, 0] + rot[1, 2] * frame[row, 1] + rot[2, 2] * frame[row, 2]
            _set_row(jn, jt, 8, row, frame[row, 0], frame[row, 1], frame[row, 2], dy * uz - dz * uy,
                     dz * ux - dx * uz, dx * uy - dy * ux)
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
def select_contacts(n: int, jn: np.ndarray, bn: np.ndarray, v0: np.ndarray, dt: float, band: float,
                    chosen: np.ndarray) -> tuple[int, int]:
    """The contacts of a step worth solving: those within ``band`` (m) of touching.

    Contact ``c`` of the ``n`` (:func:`problem_data`'s ``jn``, ``bn``; ``v0`` the starting velocity) is
    chosen unless both its gap at the start (``bn dt``) and its gap if the box kept ``v0`` over the step
    (``(bn + Jn v0) dt``) exceed ``band``; with ``band <= 0`` every contact is. At least one is always
    chosen (the nearest), so that a box in free flight still has a well-posed solve.

    Returns
    -------
    (count, pusher)
        ``chosen[:count]`` are the chosen contacts' indices in increasing order; ``pusher`` is the pusher
        contact's (index 8) position among them, -1 if it is not chosen or there is none.
    """
    count = 0
    nearest, nearest_gap = 0, np.inf
    for c in range(n):
        moving = bn[c]
        for k in range(6):
            moving += jn[c, k] * v0[k]
        gap = min(bn[c], moving) * dt
        if band <= 0.0 or gap < band:
            chosen[count] = c
            count += 1
        if gap < nearest_gap:
            nearest, nearest_gap = c, gap
    if count == 0:
        chosen[0] = nearest
        count = 1
    pusher = count - 1 if n == 9 and chosen[count - 1] == 8 else -1
    return count, pusher


@njit(cache=True)
def compact_contacts(chosen: np.ndarray, count: int, jn: np.ndarray, jt: np.ndarray, bn: np.ndarray,
                     bt: np.ndarray, mu: np.ndarray, out_jn: np.ndarray, out_jt: np.ndarray, out_bn: np.ndarray,
                     out_bt: np.ndarray, out_mu: np.ndarray) -> None:
    """The contact data of ``chosen[:count]`` (rows of ``jn`` (n, 6), ``jt`` (n, 2, 6), ``bn``, ``bt``, ``mu``)
    into the first ``count`` rows of the ``out_*`` arrays, in that order."""
    for i in range(count):
        c = chosen[i]
        bn_c = bn[c]
        out_bn[i] = bn_c
        out_mu[i] = mu[c]
        for r in range(2):
            out_bt[i, r] = bt[c, r]
        for k in range(6):
            out_jn[i, k] = jn[c, k]
            out_jt[i, 0, k] = jt[c, 0, k]
            out_jt[i, 1, k] = jt[c, 1, k]


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

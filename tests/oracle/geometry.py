"""Closed-form contact geometry: box corners against the table, sphere and capsule against the box.

A capsule (all points within a radius of a segment) is one contact: its signed distance is the
minimum over the segment of the sphere distance (found in closed form by
:func:`segment_box_parameters`), and it acts at one segment point (the middle of the near-minimum
band, so the point is continuous as a flat capsule tilts). Everything after that is the sphere's
code, so a capsule whose segment has zero length gives exactly the sphere's contact.

All functions broadcast over leading batch dimensions (``...``) so that the engine can
evaluate many perturbed configurations in one vectorised call. Frames: "world" is the
table frame (z up); "body" is the box frame with its origin at the box's geometric centre.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim2real.physics.constants import CONTACT_BAND
from sim2real.sim.box import box_corners_body


@dataclass(frozen=True)
class ContactFrames:
    """Contact points and frames of ``n`` contacts, before the dynamics are linearised.

    Attributes
    ----------
    signed_distance : ndarray, shape (..., n)
        Gap at the start of the step, m (negative = penetration).
    normal : ndarray, shape (..., n, 3)
        Unit direction of the normal force *on the box*, world frame.
    tangents : ndarray, shape (..., n, 2, 3)
        Two unit tangents orthogonal to ``normal`` and to each other, world frame.
    lever_body : ndarray, shape (..., n, 3)
        Contact point on the box relative to the centre of mass, m, body frame.
    other_velocity : ndarray, shape (..., n, 3)
        Velocity of the other body's contact point, m/s, world frame (0 for the table).
    friction_lever_body : ndarray, shape (..., n, 3)
        Point where the contact's friction acts, relative to the centre of mass, m, body frame: the
        contact point itself, except for table contacts with a support ratio below 1 (see
        :func:`table_contacts`).
    """

    signed_distance: np.ndarray
    normal: np.ndarray
    tangents: np.ndarray
    lever_body: np.ndarray
    other_velocity: np.ndarray
    friction_lever_body: np.ndarray


def tangent_basis(normal: np.ndarray) -> np.ndarray:
    """Two unit tangents of unit normals, smooth except at normal = -z (Frisvad's construction).

    Parameters
    ----------
    normal : ndarray, shape (..., 3)

    Returns
    -------
    ndarray, shape (..., 2, 3)
    """
    nx, ny, nz = normal[..., 0], normal[..., 1], normal[..., 2]
    flip = nz < -0.9999999
    a = 1.0 / np.where(flip, 1.0, 1.0 + nz)
    b = -nx * ny * a
    t1 = np.stack((1.0 - nx * nx * a, b, -nx), axis=-1)
    t2 = np.stack((b, 1.0 - ny * ny * a, -ny), axis=-1)
    t1 = np.where(flip[..., None], np.array([0.0, -1.0, 0.0]), t1)
    t2 = np.where(flip[..., None], np.array([-1.0, 0.0, 0.0]), t2)
    return np.stack((t1, t2), axis=-2)


def table_contacts(
    com_world: np.ndarray, rotation: np.ndarray, half_size: np.ndarray, com_body: np.ndarray,
    table_height: np.ndarray, support_ratio: np.ndarray | float = 1.0, edge_radius: np.ndarray | float = 0.0,
) -> ContactFrames:
    """The 8 box corners against the table half-space ``z >= table_height``.

    A box with rounded edges (``edge_radius`` r > 0) is a sphere-swept box: the inner box of half
    sizes ``half_size - r`` swept by a sphere of radius r. Its point nearest the table lies r below
    an inner corner, so each contact is an inner corner's gap less r, acting at that point.

    The normal force of each contact acts at its corner (so tipping about an edge is exact). Its
    friction acts at the corner moved, within the table plane, towards the vertical line through the
    centre of mass, to ``support_ratio`` of the corner's horizontal distance from that line: the
    friction moment arm of the support. At 1 all support sits at the corners (the largest friction
    torque a flat box can have); a face under uniform pressure has the torque of
    :func:`uniform_support_ratio`. The normal forces put the centre of pressure under the centre of
    mass, and the friction points are scaled about it, so sliding without turning is unchanged by the
    ratio, with the centre of mass anywhere (scaled about the geometric centre instead, the friction
    of a translation would act ``(1 - ratio) × com`` beside the centre of mass and spin a sliding box).

    Parameters
    ----------
    com_world : ndarray, shape (..., 3)
        Centre of mass, m, world.
    rotation : ndarray, shape (..., 3, 3)
        Body -> world rotation.
    half_size : ndarray, shape (..., 3)
        Half edge lengths, m.
    com_body : ndarray, shape (..., 3)
        Centre-of-mass offset from the geometric centre, m, body frame.
    table_height : ndarray, shape (...)
        Table surface height, m.
    support_ratio : ndarray, shape (...), or float
        ``contact.support_ratio``, in (0, 1].
    edge_radius : ndarray, shape (...), or float
        ``box.edge_radius``, m, below every half size.

    Returns
    -------
    ContactFrames
        With ``n = 8``.
    """
    r = np.asarray(edge_radius, dtype=float)
    corners = box_corners_body(half_size - r[..., None])
    # The contact point: r below the inner corner, in world z (body frame: -r Rᵀ z).
    lever_body = corners - com_body[..., None, :] - r[..., None, None] * rotation[..., None, 2, :]
    # Horizontal (table-plane) part of each corner's offset from the centre of mass, back in body axes.
    offset_world = np.einsum("...ij,...kj->...ki", rotation, corners - com_body[..., None, :])
    offset_world = offset_world * np.array([1.0, 1.0, 0.0])
    horizontal_body = np.einsum("...ji,...kj->...ki", rotation, offset_world)
    shrink = 1.0 - np.asarray(support_ratio, dtype=float)
    friction_lever = lever_body - shrink[..., None, None] * horizontal_body
    point_z = com_world[..., None, 2] + np.einsum("...j,...kj->...k", rotation[..., 2, :], lever_body)
    batch = point_z.shape
    normal = np.broadcast_to(np.array([0.0, 0.0, 1.0]), (*batch, 3))
    tangents = np.broadcast_to(np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), (*batch, 2, 3))
    return ContactFrames(
        signed_distance=point_z - table_height[..., None],
        normal=normal,
        tangents=tangents,
        lever_body=lever_body,
        other_velocity=np.zeros((*batch, 3)),
        friction_lever_body=friction_lever,
    )


def sphere_box_distance(
    centre_body: np.ndarray, half_size: np.ndarray, radius: np.ndarray, edge_radius: np.ndarray | float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Signed distance between a sphere and a box, in the box's body frame.

    A box with rounded edges (``edge_radius`` r) is its inner box (half sizes less r) swept by a
    sphere of radius r: the distance is the inner box's to a sphere of radius ``radius + r``, and
    the closest point lies r beyond the inner box's along the normal.

    Parameters
    ----------
    centre_body : ndarray, shape (..., 3)
        Sphere centre relative to the box's geometric centre, m, body frame.
    half_size : ndarray, shape (..., 3)
        Half edge lengths, m.
    radius : ndarray, shape (...)
        Sphere radius, m.
    edge_radius : ndarray, shape (...), or float
        Radius of the box's rounded edges and corners, m (0: sharp).

    Returns
    -------
    distance : ndarray, shape (...)
        Signed distance, m (negative = overlap).
    normal_body : ndarray, shape (..., 3)
        Unit outward box normal at the closest point, pointing to the sphere (body frame).
        On a face it is the face normal; on an edge or a corner it is the direction from the
        closest box point to the centre, so it turns continuously around edges and corners.
    point_body : ndarray, shape (..., 3)
        Closest point on the box surface, m, body frame.
    """
    r = np.asarray(edge_radius, dtype=float)
    half_size = half_size - r[..., None]
    radius = radius + r
    clamped = np.clip(centre_body, -half_size, half_size)
    offset = centre_body - clamped
    outside_distance = np.linalg.norm(offset, axis=-1)
    outside = outside_distance > 1e-12
    safe = np.where(outside, outside_distance, 1.0)
    normal_out = offset / safe[..., None]
    # Inside: leave through the face with the least depth.
    depth = half_size - np.abs(centre_body)
    axis = np.argmin(depth, axis=-1)
    onehot = np.eye(3)[axis]
    sign = np.where(np.take_along_axis(centre_body, axis[..., None], -1) >= 0.0, 1.0, -1.0)
    normal_in = onehot * sign
    point_in = np.where(onehot > 0, sign * half_size, centre_body)
    inside_distance = -np.take_along_axis(depth, axis[..., None], -1)[..., 0]
    distance = np.where(outside, outside_distance, inside_distance) - radius
    normal_body = np.where(outside[..., None], normal_out, normal_in)
    point_body = np.where(outside[..., None], clamped, point_in) + r[..., None] * normal_body
    return distance, normal_body, point_body


def segment_box_parameters(start_body: np.ndarray, end_body: np.ndarray, half_size: np.ndarray,
                           band: float = CONTACT_BAND) -> tuple[np.ndarray, np.ndarray]:
    """Where along a segment the box is nearest, and where the capsule's one contact point sits.

    The segment ``c(t) = start + t (end - start)``, ``t ∈ [0, 1]``, is given in the box's body frame.

    * Segment outside the box: its distance ``f(t)`` to the box is convex; ``f²`` is quadratic
      between the (at most 6) parameters where a coordinate crosses a face plane ``±h_i``, so each
      piece is minimised exactly (clipped to its interval) and the best piece gives ``t_min``. The
      contact point is the middle of the near-minimum interval ``{t : f(t) <= f(t_min) + band}``
      (its ends are roots of the same piecewise quadratics). A segment lying flat on a face (or
      along an edge) therefore touches at the middle of its overlap, and as it tilts the point
      slides continuously towards the nearer end (it reaches it once the tilt lifts the far end of
      the overlap by ``band``). A zero-length segment gives ``t = 0.5``, i.e. its point.
    * Segment touching or entering the box: the depth ``min_i (h_i - |c_i(t)|)`` is concave and
      piecewise linear; it is largest at an end, where a coordinate crosses 0, or where two face
      depths are equal (17 candidates, the first largest wins); that is both ``t_min`` and the
      contact parameter.

    Parameters
    ----------
    start_body, end_body : ndarray, shape (..., 3)
        Segment end points relative to the box's geometric centre, m, body frame.
    half_size : ndarray, shape (..., 3)
        Half edge lengths, m.
    band : float
        m, see above.

    Returns
    -------
    t_min : ndarray, shape (...)
        Parameter in [0, 1] of a segment point nearest to (or deepest in) the box.
    t_contact : ndarray, shape (...)
        Parameter in [0, 1] of the contact point.
    """
    p = np.asarray(start_body, dtype=float)
    d = np.asarray(end_body, dtype=float) - p
    h = np.broadcast_to(half_size, p.shape)
    moving = d != 0.0
    safe_d = np.where(moving, d, 1.0)
    # Outside: knots where a coordinate crosses a face plane, then the exact minimiser of each piece.
    crossings = np.where(moving[..., None], np.stack(((h - p) / safe_d, (-h - p) / safe_d), axis=-1), 0.0)
    inner = np.clip(crossings.reshape(*p.shape[:-1], 6), 0.0, 1.0)
    zero = np.zeros((*p.shape[:-1], 1))
    knots = np.sort(np.concatenate((zero, inner, zero + 1.0), axis=-1), axis=-1)
    t0, t1 = knots[..., :-1], knots[..., 1:]
    mid = 0.5 * (t0 + t1)
    c_mid = p[..., None, :] + mid[..., None] * d[..., None, :]
    h7 = h[..., None, :]
    side = np.where(c_mid > h7, 1.0, np.where(c_mid < -h7, -1.0, 0.0))
    active = side != 0.0
    d7 = d[..., None, :]
    offset = p[..., None, :] - side * h7
    quad = np.sum(np.where(active, d7 * d7, 0.0), axis=-1)
    lin = np.sum(np.where(active, d7 * offset, 0.0), axis=-1)
    const = np.sum(np.where(active, offset * offset, 0.0), axis=-1)
    has_quad = quad > 0.0
    safe_quad = np.where(has_quad, quad, 1.0)
    t_piece = np.where(has_quad, np.clip(-lin / safe_quad, t0, t1), t0)
    c_piece = p[..., None, :] + t_piece[..., None] * d7
    gap_sq = np.sum(np.maximum(np.abs(c_piece) - h7, 0.0) ** 2, axis=-1)
    best = np.argmin(gap_sq, axis=-1)[..., None]
    t_min = np.take_along_axis(t_piece, best, -1)[..., 0]
    g_min = np.take_along_axis(gap_sq, best, -1)[..., 0]
    # The near-minimum interval: ends at 0 / 1 or at a root of a piece's quadratic = level.
    level = (np.sqrt(g_min) + band) ** 2
    disc = lin * lin - quad * (const - level[..., None])
    root = np.sqrt(np.maximum(disc, 0.0))
    valid = has_quad & (disc >= 0.0)
    low_root = (-lin - root) / safe_quad
    high_root = (-lin + root) / safe_quad
    low_ok = valid & (low_root >= t0) & (low_root <= t1)
    high_ok = valid & (high_root >= t0) & (high_root <= t1)
    g_start = np.sum(np.maximum(np.abs(p) - h, 0.0) ** 2, axis=-1)
    g_end = np.sum(np.maximum(np.abs(p + d) - h, 0.0) ** 2, axis=-1)
    t_lo = np.where(g_start <= level, 0.0, np.min(np.where(low_ok, low_root, np.inf), axis=-1))
    t_hi = np.where(g_end <= level, 1.0, np.max(np.where(high_ok, high_root, -np.inf), axis=-1))
    t_lo = np.minimum(np.where(np.isfinite(t_lo), t_lo, t_min), t_min)
    t_hi = np.maximum(np.where(np.isfinite(t_hi), t_hi, t_min), t_min)
    t_band = 0.5 * (t_lo + t_hi)
    # Touching or inside: the deepest candidate.
    candidates = [zero[..., 0], zero[..., 0] + 1.0]
    for i in range(3):
        candidates.append(np.where(moving[..., i], -p[..., i] / safe_d[..., i], 0.0))
    for i, j in ((0, 1), (0, 2), (1, 2)):
        for si in (1.0, -1.0):
            for sj in (1.0, -1.0):
                den = si * d[..., i] - sj * d[..., j]
                num = h[..., i] - h[..., j] - si * p[..., i] + sj * p[..., j]
                candidates.append(np.where(den != 0.0, num / np.where(den != 0.0, den, 1.0), 0.0))
    t_in = np.clip(np.stack(candidates, axis=-1), 0.0, 1.0)
    c_in = p[..., None, :] + t_in[..., None] * d[..., None, :]
    depth = np.min(h[..., None, :] - np.abs(c_in), axis=-1)
    deepest = np.take_along_axis(t_in, np.argmax(depth, axis=-1)[..., None], -1)[..., 0]
    outside = g_min > 0.0
    return np.where(outside, t_min, deepest), np.where(outside, t_band, deepest)


def capsule_box_distance(start_body: np.ndarray, end_body: np.ndarray, half_size: np.ndarray, radius: np.ndarray,
                         edge_radius: np.ndarray | float = 0.0,
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Signed distance between a capsule and a box, and the capsule's contact, in the box's body frame.

    Parameters
    ----------
    start_body, end_body : ndarray, shape (..., 3)
        Segment end points relative to the box's geometric centre, m, body frame.
    half_size : ndarray, shape (..., 3)
        Half edge lengths, m.
    radius : ndarray, shape (...)
        Capsule radius, m.
    edge_radius : ndarray, shape (...), or float
        Radius of the box's rounded edges, m (see :func:`sphere_box_distance`).

    Returns
    -------
    distance, normal_body : ndarray, shape (...), (..., 3)
        As in :func:`sphere_box_distance` for the sphere centred at the nearest segment point
        ``c(t_min)`` (the exact capsule distance, continuous in the placement).
    point_body : ndarray, shape (..., 3)
        Contact point on the box: the box point nearest to ``c(t)``, m, body frame.
    t : ndarray, shape (...)
        Segment parameter of the contact point (:func:`segment_box_parameters`).
    """
    # A rounded box's distance is its inner box's less the edge radius: the same nearest segment points.
    t_min, t = segment_box_parameters(start_body, end_body, half_size - np.asarray(edge_radius, dtype=float)[..., None])
    direction = end_body - start_body
    distance, normal_body, _ = sphere_box_distance(start_body + t_min[..., None] * direction, half_size, radius,
                                                   edge_radius)
    _, _, point_body = sphere_box_distance(start_body + t[..., None] * direction, half_size, radius, edge_radius)
    return distance, normal_body, point_body, t


def _pusher_frames(rotation: np.ndarray, com_body: np.ndarray, distance: np.ndarray, normal_body: np.ndarray,
                   point_body: np.ndarray, other_velocity: np.ndarray) -> ContactFrames:
    """One pusher contact from its body-frame geometry; the force on the box points into the box."""
    normal_world = -np.einsum("...ij,...j->...i", rotation, normal_body)
    return ContactFrames(
        signed_distance=distance[..., None],
        normal=normal_world[..., None, :],
        tangents=tangent_basis(normal_world)[..., None, :, :],
        lever_body=(point_body - com_body)[..., None, :],
        other_velocity=other_velocity[..., None, :],
        friction_lever_body=(point_body - com_body)[..., None, :],
    )


def _to_body(com_world: np.ndarray, rotation: np.ndarray, com_body: np.ndarray, point_world: np.ndarray) -> np.ndarray:
    """World points (..., 3) relative to the box's geometric centre, body frame."""
    centre_geo = com_world - np.einsum("...ij,...j->...i", rotation, com_body)
    return np.einsum("...ji,...j->...i", rotation, point_world - centre_geo)


def sphere_contact(
    com_world: np.ndarray, rotation: np.ndarray, half_size: np.ndarray, com_body: np.ndarray,
    centre_start: np.ndarray, centre_end: np.ndarray, radius: np.ndarray, dt: float,
    edge_radius: np.ndarray | float = 0.0,
) -> ContactFrames:
    """One contact between a kinematic sphere and the box.

    Parameters
    ----------
    com_world, rotation, half_size, com_body
        As in :func:`table_contacts`.
    centre_start, centre_end : ndarray, shape (..., 3)
        Sphere centre at the start and end of the step, m, world.
    radius : ndarray, shape (...)
        Sphere radius, m.
    dt : float
        Step length, s (the sphere moves at constant velocity within the step).
    edge_radius : ndarray, shape (...), or float
        Radius of the box's rounded edges, m (see :func:`sphere_box_distance`).

    Returns
    -------
    ContactFrames
        With ``n = 1``; the force on the box points from the sphere into the box.
    """
    centre_body = _to_body(com_world, rotation, com_body, centre_start)
    distance, normal_body, point_body = sphere_box_distance(centre_body, half_size, radius, edge_radius)
    return _pusher_frames(rotation, com_body, distance, normal_body, point_body, (centre_end - centre_start) / dt)


def capsule_contact(
    com_world: np.ndarray, rotation: np.ndarray, half_size: np.ndarray, com_body: np.ndarray,
    segment_start: np.ndarray, segment_end: np.ndarray, radius: np.ndarray, dt: float,
    edge_radius: np.ndarray | float = 0.0,
) -> ContactFrames:
    """One contact between a kinematic capsule and the box, at the segment's closest point.

    The gap is the capsule's exact distance at the start of the step; the force acts at the box
    point nearest to the segment point ``c(t)`` of :func:`segment_box_parameters`, which moves with
    the linear interpolation of the end points' motion, ``v = ((1 - t) Δa + t Δb) / dt``. A
    capsule lying flat on a face therefore pushes at the middle of its overlap with the face (one
    point, not a line): the normal force passes
    through the capsule axis, so, as for a real line contact, the box is free to roll about that
    axis; but unlike a line contact, one point does not resist the box turning about the third
    axis (normal × capsule axis) — the box may pivot about the point as under a sphere.

    Parameters
    ----------
    com_world, rotation, half_size, com_body
        As in :func:`table_contacts`.
    segment_start, segment_end : ndarray, shape (..., 6)
        Segment end points (a, b) at the start and at the end of the step, m, world.
    radius : ndarray, shape (...)
        Capsule radius, m.
    dt : float
        Step length, s (each end point moves at constant velocity within the step).
    edge_radius : ndarray, shape (...), or float
        Radius of the box's rounded edges, m (see :func:`sphere_box_distance`).

    Returns
    -------
    ContactFrames
        With ``n = 1``; the force on the box points from the capsule into the box.
    """
    a_start, b_start = segment_start[..., 0:3], segment_start[..., 3:6]
    a_end, b_end = segment_end[..., 0:3], segment_end[..., 3:6]
    distance, normal_body, point_body, t = capsule_box_distance(
        _to_body(com_world, rotation, com_body, a_start), _to_body(com_world, rotation, com_body, b_start),
        half_size, radius, edge_radius)
    tt = t[..., None]
    velocity = ((a_end + tt * (b_end - a_end)) - (a_start + tt * (b_start - a_start))) / dt
    return _pusher_frames(rotation, com_body, distance, normal_body, point_body, velocity)



"""Closed-form contact geometry: box corners against the table, sphere against the box.

All functions broadcast over leading batch dimensions (``...``) so that the engine can
evaluate many perturbed configurations in one vectorised call. Frames: "world" is the
table frame (z up); "body" is the box frame with its origin at the box's geometric centre.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim2real.spatial import to_matrix

#: Signs of the 8 box corners in the body frame, shape (8, 3).
CORNER_SIGNS = np.array(
    [[sx, sy, sz] for sx in (-1.0, 1.0) for sy in (-1.0, 1.0) for sz in (-1.0, 1.0)]
)


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
    """

    signed_distance: np.ndarray
    normal: np.ndarray
    tangents: np.ndarray
    lever_body: np.ndarray
    other_velocity: np.ndarray


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


def box_corners_body(half_size: np.ndarray) -> np.ndarray:
    """Corner positions of boxes with half edge lengths (..., 3), m, body frame; shape (..., 8, 3)."""
    return CORNER_SIGNS * half_size[..., None, :]


def table_contacts(
    com_world: np.ndarray, rotation: np.ndarray, half_size: np.ndarray, com_body: np.ndarray,
    table_height: np.ndarray,
) -> ContactFrames:
    """The 8 box corners against the table half-space ``z >= table_height``.

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

    Returns
    -------
    ContactFrames
        With ``n = 8``.
    """
    lever_body = box_corners_body(half_size) - com_body[..., None, :]
    corner_z = com_world[..., None, 2] + np.einsum("...j,...kj->...k", rotation[..., 2, :], lever_body)
    batch = corner_z.shape
    normal = np.broadcast_to(np.array([0.0, 0.0, 1.0]), (*batch, 3))
    tangents = np.broadcast_to(np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), (*batch, 2, 3))
    return ContactFrames(
        signed_distance=corner_z - table_height[..., None],
        normal=normal,
        tangents=tangents,
        lever_body=lever_body,
        other_velocity=np.zeros((*batch, 3)),
    )


def sphere_box_distance(
    centre_body: np.ndarray, half_size: np.ndarray, radius: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Signed distance between a sphere and a box, in the box's body frame.

    Parameters
    ----------
    centre_body : ndarray, shape (..., 3)
        Sphere centre relative to the box's geometric centre, m, body frame.
    half_size : ndarray, shape (..., 3)
        Half edge lengths, m.
    radius : ndarray, shape (...)
        Sphere radius, m.

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
    point_body = np.where(outside[..., None], clamped, point_in)
    return distance, normal_body, point_body


def sphere_contact(
    com_world: np.ndarray, rotation: np.ndarray, half_size: np.ndarray, com_body: np.ndarray,
    centre_start: np.ndarray, centre_end: np.ndarray, radius: np.ndarray, dt: float,
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

    Returns
    -------
    ContactFrames
        With ``n = 1``; the force on the box points from the sphere into the box.
    """
    centre_geo = com_world - np.einsum("...ij,...j->...i", rotation, com_body)
    centre_body = np.einsum("...ji,...j->...i", rotation, centre_start - centre_geo)
    distance, normal_body, point_body = sphere_box_distance(centre_body, half_size, radius)
    normal_world = -np.einsum("...ij,...j->...i", rotation, normal_body)
    return ContactFrames(
        signed_distance=distance[..., None],
        normal=normal_world[..., None, :],
        tangents=tangent_basis(normal_world)[..., None, :, :],
        lever_body=(point_body - com_body)[..., None, :],
        other_velocity=((centre_end - centre_start) / dt)[..., None, :],
    )


def table_distance(state: np.ndarray, half_size: np.ndarray, table_height: float) -> np.ndarray:
    """Lowest corner height above the table for geometric-centre states (..., 13); m, shape (...)."""
    rotation = to_matrix(state[..., 3:7])
    corners = np.einsum("...j,kj->...k", rotation[..., 2, :], box_corners_body(np.asarray(half_size)))
    return state[..., 2] + corners.min(axis=-1) - table_height

"""Facts of a rigid box: principal inertia, corners, its lowest point above the table, and the support ratio
of a face under uniform pressure. Frames: "world" is the table frame (z up); "body" is the box frame with its
origin at the box's geometric centre. All functions broadcast over leading batch dimensions (``...``).
"""

from __future__ import annotations

import numpy as np

from sim2real.spatial import to_matrix

#: Signs of the 8 box corners in the body frame, shape (8, 3).
CORNER_SIGNS = np.array(
    [[sx, sy, sz] for sx in (-1.0, 1.0) for sy in (-1.0, 1.0) for sz in (-1.0, 1.0)]
)


def box_inertia(mass: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Principal moments of a uniform box about its centre, kg m²; mass (...), size (..., 3) -> (..., 3)."""
    sq = size**2
    return mass[..., None] / 12.0 * np.stack((sq[..., 1] + sq[..., 2], sq[..., 0] + sq[..., 2],
                                               sq[..., 0] + sq[..., 1]), axis=-1)


def uniform_support_ratio(size_x: float, size_y: float) -> float:
    """``contact.support_ratio`` of a flat face under uniform pressure.

    A rectangle of sides ``size_x`` × ``size_y`` (m) spinning on its centre under uniform pressure has
    the friction torque ``μ N r̄``, with ``r̄`` the mean distance of its points from the centre. Four
    supports at ``ρ`` times the corner distance ``d = √(a² + b²)`` (half sides ``a``, ``b``) give
    ``μ N ρ d``; so ``ρ = r̄ / d``, with ``r̄ = [2abd + a³ ln((b + d)/a) + b³ ln((a + d)/b)] / (6ab)``.
    0.5412 for a square; towards 1/2 for a long thin strip.
    """
    a, b = 0.5 * float(size_x), 0.5 * float(size_y)
    if a <= 0.0 or b <= 0.0:
        raise ValueError(f"face sides must be positive, got {size_x} x {size_y} m")
    d = np.hypot(a, b)
    mean = (2.0 * a * b * d + a**3 * np.log((b + d) / a) + b**3 * np.log((a + d) / b)) / (6.0 * a * b)
    return float(mean / d)


def box_corners_body(half_size: np.ndarray) -> np.ndarray:
    """Corner positions of boxes with half edge lengths (..., 3), m, body frame; shape (..., 8, 3)."""
    return CORNER_SIGNS * half_size[..., None, :]


def table_distance(state: np.ndarray, half_size: np.ndarray, table_height: float, edge_radius: float = 0.0
                   ) -> np.ndarray:
    """Height of the box's lowest point above the table for geometric-centre states (..., 13); m, shape (...).

    ``edge_radius`` (m): the box's edges are rounded with it (as the engine's table contacts are).
    """
    rotation = to_matrix(state[..., 3:7])
    inner = box_corners_body(np.asarray(half_size, dtype=float) - edge_radius)
    corners = np.einsum("...j,kj->...k", rotation[..., 2, :], inner)
    return state[..., 2] + corners.min(axis=-1) - edge_radius - table_height

"""The problem vector ``θ`` of one contact step: one named layout for the kernels, the NumPy
reference and the worlds.

``θ`` (:data:`THETA_SIZE` numbers) holds the box state, the pusher placement at the start and the
end of the step, and the physical parameters of :data:`THETA_PARAMS`, in this order::

    [ position (3) | quaternion w,x,y,z (3..6) | velocity (7..9) | angular velocity (10..12)
    | pusher a, b at the start (13..18) | pusher a, b at the end (19..24) | parameters (25..) ]

Position and velocity are the box's geometric centre in world coordinates (m, m/s), the
quaternion takes body to world, the angular velocity is in world coordinates (rad/s); the pusher
points are world positions (m): a sphere's centre is ``a`` (``b`` unused), a capsule's segment
runs from ``a`` to ``b``. Every slot has a name here; the kernels index ``θ`` and the columns of
the Jacobians ``∂·/∂θ`` only through these names, so reordering :data:`THETA_PARAMS` moves every
use with it (``tests/physics/test_layout.py`` checks that no bare offset is left).
"""

from __future__ import annotations

import numpy as np

#: Physical parameters that enter a step, in the order they sit in ``θ`` after state and pusher.
THETA_PARAMS: tuple[str, ...] = (
    "box.mass", "box.size_x", "box.size_y", "box.size_z", "box.com_x", "box.com_y", "box.com_z",
    "contact.mu_table", "contact.mu_pusher", "contact.table_height", "pusher.radius", "box.inertia_scale",
    "contact.support_ratio", "box.edge_radius",
)

# --- state (13) ------------------------------------------------------------------------------------
POS = 0  #: box centre x, y, z (m, world) at POS .. POS + 2
QUAT = 3  #: orientation w, x, y, z at QUAT .. QUAT + 3
VEL = 7  #: centre velocity (m/s, world) at VEL .. VEL + 2
OMEGA = 10  #: angular velocity (rad/s, world) at OMEGA .. OMEGA + 2
STATE_SIZE = 13
STATE_SLICE = slice(POS, STATE_SIZE)

# --- pusher placement (6 + 6) ---------------------------------------------------------------------
PUSHER_START = STATE_SIZE  #: points a (3) and b (3) at the start of the step
PUSHER_END = PUSHER_START + 6  #: ... and at its end
PUSHER_START_SLICE = slice(PUSHER_START, PUSHER_START + 6)
PUSHER_END_SLICE = slice(PUSHER_END, PUSHER_END + 6)
#: Where a sphere's centre sits within θ (the first point of each placement), start / end of the step.
SPHERE_START_SLICE = slice(PUSHER_START, PUSHER_START + 3)
SPHERE_END_SLICE = slice(PUSHER_END, PUSHER_END + 3)

# --- parameters -----------------------------------------------------------------------------------
PARAMS_OFFSET = PUSHER_END + 6
THETA_SIZE = PARAMS_OFFSET + len(THETA_PARAMS)


def slot(name: str) -> int:
    """The index of parameter ``name`` (a :data:`THETA_PARAMS` entry) in ``θ``."""
    return PARAMS_OFFSET + THETA_PARAMS.index(name)


MASS = slot("box.mass")
SIZE_X, SIZE_Y, SIZE_Z = slot("box.size_x"), slot("box.size_y"), slot("box.size_z")
COM_X, COM_Y, COM_Z = slot("box.com_x"), slot("box.com_y"), slot("box.com_z")
MU_TABLE = slot("contact.mu_table")
MU_PUSHER = slot("contact.mu_pusher")
TABLE_HEIGHT = slot("contact.table_height")
PUSHER_RADIUS = slot("pusher.radius")
INERTIA_SCALE = slot("box.inertia_scale")
SUPPORT_RATIO = slot("contact.support_ratio")
EDGE_RADIUS = slot("box.edge_radius")
#: Slots of the box's size and of its centre-of-mass offset along body x, y, z.
SIZE_SLOTS = np.array([SIZE_X, SIZE_Y, SIZE_Z], dtype=np.int64)
COM_SLOTS = np.array([COM_X, COM_Y, COM_Z], dtype=np.int64)

#: Parameters that move the contact geometry (where the contacts are and their normals): their
#: columns of the implicit Jacobian are central differences of the residual, the others analytic.
GEOMETRY_PARAMS: tuple[str, ...] = ("box.size_x", "box.size_y", "box.size_z", "box.com_x", "box.com_y",
                                    "box.com_z", "box.inertia_scale", "contact.support_ratio", "box.edge_radius")
#: Per θ column (THETA_SIZE,): a parameter of :data:`GEOMETRY_PARAMS`.
GEOMETRY_PARAM_COLUMN = np.zeros(THETA_SIZE, dtype=np.bool_)
GEOMETRY_PARAM_COLUMN[[slot(name) for name in GEOMETRY_PARAMS]] = True
#: Per θ column (THETA_SIZE,): read by the next-state map besides the accelerations (the pose and
#: the centre-of-mass offset).
POSE_COLUMN = np.zeros(THETA_SIZE, dtype=np.bool_)
POSE_COLUMN[POS:QUAT + 4] = True
POSE_COLUMN[COM_SLOTS] = True

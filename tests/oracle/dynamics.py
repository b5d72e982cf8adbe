"""Box dynamics of one time step, linearised contact kinematics, and the next-state map.

The unknowns of a step are the box's next velocities ``a = (v_com, ω_body)`` (m/s world,
rad/s body). The step is implicit (backward Euler on both; the gyroscopic term is taken at
the new angular velocity) and the orientation is updated on the unit-quaternion manifold,
``q+ = q ⊗ exp(dt ω_body+)``, so it stays a unit quaternion exactly.

Everything the step depends on — state, pusher placement and physical parameters — is
packed into one problem vector ``θ`` (:data:`THETA_PARAMS` lists the parameter part), and
:func:`problem_data` maps ``θ`` (any leading batch dimensions) to the linear contact data the
solver needs. That single map is what the implicit gradients differentiate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oracle.geometry import capsule_contact, sphere_contact, table_contacts
from sim2real.physics import layout
from sim2real.physics.constants import MIN_FRICTION, PUSHER_CONTACT_FREQUENCY
from sim2real.physics.layout import (  # re-exported: the layout of θ lives in sim2real.physics.layout
    PUSHER_END_SLICE,
    PUSHER_START_SLICE,
    SPHERE_END_SLICE,
    SPHERE_START_SLICE,
    STATE_SLICE,
)
from sim2real.sim.box import box_inertia
from sim2real.sim.constants import GRAVITY
from sim2real.spatial import from_rotation_vector, multiply, skew, to_matrix


@dataclass(frozen=True)
class ProblemData:
    """Linearised contact dynamics of one step (leading batch dimensions ``...`` allowed).

    The contact-point velocity of contact ``i`` relative to the other body is ``Jp_i a - v_other_i``;
    ``normal_jacobian`` and ``tangent_jacobian`` project ``Jp_i`` on the contact frame.

    Attributes
    ----------
    mass : ndarray (...)
        kg.
    inertia : ndarray (..., 3)
        Principal moments about the centre of mass, body axes, kg m².
    velocity_start : ndarray (..., 6)
        ``a`` at the start of the step: (v_com m/s world, ω rad/s body).
    gravity_impulse : ndarray (..., 6)
        Generalised impulse of gravity over the step, (N s, N m s).
    normal_jacobian : ndarray (..., n, 6)
    tangent_jacobian : ndarray (..., n, 2, 6)
    normal_offset : ndarray (..., n)
        Free part of the normal slack ``s = normal_jacobian a + normal_offset`` (m/s): gap/dt minus
        the other body's normal velocity.
    tangent_offset : ndarray (..., n, 2)
        Free part of the tangential slip velocity, m/s.
    friction : ndarray (..., n)
        Coulomb coefficients.
    impulse_scale : ndarray (...)
        ``m g dt``, N s: impulses are measured in this unit by the solver.
    velocity_scale : float
        ``g dt``, m/s: velocities are measured in this unit by the solver.
    length_scale : ndarray (...)
        Half diagonal of the box, m (scales angular momentum rows).
    compliance : ndarray (..., n)
        ``ε`` of each contact's normal row ``s = Jn a + bn + ε γ``, m/s per N s: 0 at the table,
        ``1 / (m PUSHER_CONTACT_FREQUENCY² dt²)`` at the pusher.
    """

    mass: np.ndarray
    inertia: np.ndarray
    velocity_start: np.ndarray
    gravity_impulse: np.ndarray
    normal_jacobian: np.ndarray
    tangent_jacobian: np.ndarray
    normal_offset: np.ndarray
    tangent_offset: np.ndarray
    friction: np.ndarray
    impulse_scale: np.ndarray
    velocity_scale: float
    length_scale: np.ndarray
    compliance: np.ndarray

    @property
    def contact_count(self) -> int:
        """Number of contacts ``n``."""
        return self.normal_jacobian.shape[-2]


def _unpack(theta: np.ndarray) -> dict[str, np.ndarray]:
    return {
        "mass": theta[..., layout.MASS], "size": theta[..., layout.SIZE_SLOTS],
        "com": theta[..., layout.COM_SLOTS], "mu_table": theta[..., layout.MU_TABLE],
        "mu_pusher": theta[..., layout.MU_PUSHER], "table_height": theta[..., layout.TABLE_HEIGHT],
        "radius": theta[..., layout.PUSHER_RADIUS], "inertia_scale": theta[..., layout.INERTIA_SCALE],
        "support_ratio": theta[..., layout.SUPPORT_RATIO], "edge_radius": theta[..., layout.EDGE_RADIUS],
    }


def to_com_velocity(state: np.ndarray, com_body: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Centre-of-mass position and generalised velocity of geometric-centre states.

    Parameters
    ----------
    state : ndarray (..., 13)
    com_body : ndarray (..., 3)
        Centre-of-mass offset, m, body frame.

    Returns
    -------
    com_world : ndarray (..., 3)
    rotation : ndarray (..., 3, 3)
        Body -> world (from the normalised quaternion).
    velocity : ndarray (..., 6)
        (v_com m/s world, ω rad/s body).
    """
    quaternion = state[..., layout.QUAT:layout.QUAT + 4]
    q = quaternion / np.linalg.norm(quaternion, axis=-1, keepdims=True)
    rotation = to_matrix(q)
    lever_world = np.einsum("...ij,...j->...i", rotation, com_body)
    omega_world = state[..., layout.OMEGA:layout.OMEGA + 3]
    v_com = state[..., layout.VEL:layout.VEL + 3] + np.cross(omega_world, lever_world)
    omega_body = np.einsum("...ji,...j->...i", rotation, omega_world)
    return state[..., layout.POS:layout.POS + 3] + lever_world, rotation, np.concatenate((v_com, omega_body), axis=-1)


def problem_data(theta: np.ndarray, dt: float, with_pusher: bool, capsule: bool = False) -> ProblemData:
    """Linearised contact data of a step from the problem vector.

    Parameters
    ----------
    theta : ndarray (..., THETA_SIZE)
        State (13), pusher placement at the start and at the end of the step (6 + 6, m world:
        the sphere centre then 3 ignored numbers, or the capsule's two segment end points; all
        ignored without pusher), then the values of :data:`THETA_PARAMS`.
    dt : float
        Step, s.
    with_pusher : bool
        Add the pusher-box contact as the last contact.
    capsule : bool
        The pusher is a capsule (segment end points) rather than a sphere (centre).

    Returns
    -------
    ProblemData
        With ``n = 8`` (table corners) or ``9`` contacts.
    """
    v = _unpack(theta)
    half = 0.5 * v["size"]
    com_world, rotation, velocity = to_com_velocity(theta[..., STATE_SLICE], v["com"])
    frames = [table_contacts(com_world, rotation, half, v["com"], v["table_height"], v["support_ratio"],
                             v["edge_radius"])]
    friction = [np.broadcast_to(v["mu_table"][..., None], (*v["mu_table"].shape, 8))]
    if with_pusher and capsule:
        frames.append(capsule_contact(com_world, rotation, half, v["com"], theta[..., PUSHER_START_SLICE],
                                      theta[..., PUSHER_END_SLICE], v["radius"], dt, v["edge_radius"]))
    elif with_pusher:
        frames.append(sphere_contact(com_world, rotation, half, v["com"], theta[..., SPHERE_START_SLICE],
                                     theta[..., SPHERE_END_SLICE], v["radius"], dt, v["edge_radius"]))
    if with_pusher:  # the pusher's friction, sphere or capsule
        friction.append(v["mu_pusher"][..., None])
    distance = np.concatenate([f.signed_distance for f in frames], axis=-1)
    normal = np.concatenate([f.normal for f in frames], axis=-2)
    tangents = np.concatenate([f.tangents for f in frames], axis=-3)
    lever = np.concatenate([f.lever_body for f in frames], axis=-2)
    friction_lever = np.concatenate([f.friction_lever_body for f in frames], axis=-2)
    other = np.concatenate([f.other_velocity for f in frames], axis=-2)
    # Point velocity on the box: v_com + R (ω × d) = v_com - R [d]x ω.
    angular_part = -np.einsum("...ij,...cjk->...cik", rotation, skew(lever))  # (..., n, 3, 3)
    friction_part = -np.einsum("...ij,...cjk->...cik", rotation, skew(friction_lever))
    normal_jac = np.concatenate((normal, np.einsum("...ci,...cik->...ck", normal, angular_part)), axis=-1)
    tangent_jac = np.concatenate((tangents, np.einsum("...cti,...cik->...ctk", tangents, friction_part)), axis=-1)
    mass = v["mass"]
    compliance = np.zeros(distance.shape)
    if with_pusher:
        compliance[..., -1] = 1.0 / (mass * (PUSHER_CONTACT_FREQUENCY * dt) ** 2)
    gravity_impulse = np.zeros((*mass.shape, 6))
    gravity_impulse[..., 2] = -mass * GRAVITY * dt
    return ProblemData(
        mass=mass,
        inertia=box_inertia(mass, v["size"]) * v["inertia_scale"][..., None],
        velocity_start=velocity,
        gravity_impulse=gravity_impulse,
        normal_jacobian=normal_jac,
        tangent_jacobian=tangent_jac,
        normal_offset=distance / dt - np.einsum("...ci,...ci->...c", normal, other),
        tangent_offset=-np.einsum("...cti,...ci->...ct", tangents, other),
        friction=np.maximum(np.concatenate(friction, axis=-1), MIN_FRICTION),
        impulse_scale=mass * GRAVITY * dt,
        velocity_scale=GRAVITY * dt,
        length_scale=np.linalg.norm(half, axis=-1),
        compliance=compliance,
    )


def next_state(theta: np.ndarray, velocity_next: np.ndarray, dt: float) -> np.ndarray:
    """Geometric-centre state at the end of the step.

    Parameters
    ----------
    theta : ndarray (..., THETA_SIZE)
        Problem vector (state and centre-of-mass offset are used).
    velocity_next : ndarray (..., 6)
        Solved ``a+ = (v_com m/s world, ω rad/s body)``.
    dt : float
        Step, s.

    Returns
    -------
    ndarray (..., 13)
        Position, quaternion (w, x, y, z), linear and angular velocity of the geometric centre.
    """
    com_body = _unpack(theta)["com"]
    com_world, _, _ = to_com_velocity(theta[..., STATE_SLICE], com_body)
    quaternion = theta[..., layout.QUAT:layout.QUAT + 4]
    q = quaternion / np.linalg.norm(quaternion, axis=-1, keepdims=True)
    v_com, omega_body = velocity_next[..., :3], velocity_next[..., 3:]
    q_next = multiply(q, from_rotation_vector(dt * omega_body))
    rotation_next = to_matrix(q_next)
    lever_world = np.einsum("...ij,...j->...i", rotation_next, com_body)
    omega_world = np.einsum("...ij,...j->...i", rotation_next, omega_body)
    position = com_world + dt * v_com - lever_world
    velocity = v_com - np.cross(omega_world, lever_world)
    return np.concatenate((position, q_next, velocity, omega_world), axis=-1)

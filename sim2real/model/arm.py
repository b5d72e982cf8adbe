"""The xArm 6 kinematic chain loaded from ``urdf/xarm6.urdf``: forward kinematics and Jacobians.

Frames follow the URDF: ``link_base`` is the arm base frame (also the world frame of the
experiment: x forward, z up, table top at z = 0 unless ``contact.table_height`` says
otherwise), ``link6`` is the flange, ``pusher`` the centre of the pusher sphere.
Transforms are named ``base_from_<link>``: a (4, 4) homogeneous matrix mapping
coordinates in ``<link>`` to the base frame. Lengths in m, angles in rad.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from sim2real.errors import DataError, InputError
from sim2real.params import ParameterSet
from sim2real.spatial import rpy_to_matrix

FloatArray = NDArray[np.float64]

JOINT_NAMES: tuple[str, ...] = ("joint1", "joint2", "joint3", "joint4", "joint5", "joint6")
FLANGE_LINK = "link6"
PUSHER_LINK = "pusher"


def origin_transform(xyz: FloatArray, rpy: FloatArray) -> FloatArray:
    """Homogeneous (4, 4) transform of a URDF ``<origin xyz rpy>`` (fixed-axis roll, pitch, yaw)."""
    transform = np.eye(4)
    transform[:3, :3] = rpy_to_matrix(rpy)
    transform[:3, 3] = xyz
    return transform


@dataclass(frozen=True)
class RevoluteJoint:
    """One revolute joint of the chain.

    Attributes
    ----------
    name : str
        URDF joint name (``joint1`` … ``joint6``).
    child : str
        Name of the link the joint moves.
    parent_from_joint : ndarray, shape (4, 4)
        Joint frame at zero angle, in the parent link frame.
    lower, upper : float
        Position limits (rad).
    max_velocity : float
        Velocity limit (rad/s).
    max_effort : float
        Effort limit (N·m).
    """

    name: str
    child: str
    parent_from_joint: FloatArray
    lower: float
    upper: float
    max_velocity: float
    max_effort: float


def _cross_rows(a: FloatArray, b: FloatArray) -> FloatArray:
    """Row-wise cross products ``a[i] × b[i]`` of two (n, 3) arrays, (n, 3) (``np.cross`` without its
    axis handling, which costs more than the products for a handful of rows)."""
    out = np.empty_like(a)
    out[:, 0] = a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1]
    out[:, 1] = a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2]
    out[:, 2] = a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]
    return out


@dataclass(frozen=True)
class ArmModel:
    """Serial chain of the xArm 6 (joint axes are the local z axes, as in the URDF).

    Attributes
    ----------
    joints : tuple of RevoluteJoint
        The six joints in chain order.
    flange_from_pusher : ndarray, shape (4, 4)
        Pusher centre frame in the flange frame.
    pusher_radius : float
        Pusher sphere radius (m).
    """

    joints: tuple[RevoluteJoint, ...]
    flange_from_pusher: FloatArray
    pusher_radius: float

    @property
    def lower(self) -> FloatArray:
        """Lower position limits (6,), rad."""
        return np.array([j.lower for j in self.joints])

    @property
    def upper(self) -> FloatArray:
        """Upper position limits (6,), rad."""
        return np.array([j.upper for j in self.joints])

    @property
    def max_velocity(self) -> FloatArray:
        """Velocity limits (6,), rad/s."""
        return np.array([j.max_velocity for j in self.joints])

    def link_names(self) -> tuple[str, ...]:
        """Names of the moving links, chain order, then the pusher."""
        return (*(j.child for j in self.joints), PUSHER_LINK)

    def joint_frames(self, q: FloatArray) -> FloatArray:
        """Base-frame poses of every joint frame after its rotation (= the child link frames).

        Parameters
        ----------
        q : ndarray, shape (..., 6)
            Joint angles (rad); leading dimensions are batch dimensions.

        Returns
        -------
        ndarray, shape (..., 6, 4, 4)
            ``base_from_link[i]`` for link1 … link6.
        """
        q = np.asarray(q, dtype=float)
        if q.shape[-1] != len(self.joints):
            raise ValueError(f"expected {len(self.joints)} joint angles, got shape {q.shape}")
        if q.ndim == 1:
            return self._single_joint_frames(q)
        batch = q.shape[:-1]
        frames = np.empty((*batch, len(self.joints), 4, 4))
        current = np.broadcast_to(np.eye(4), (*batch, 4, 4))
        cos, sin = np.cos(q), np.sin(q)
        for i, joint in enumerate(self.joints):
            rot_z = np.zeros((*batch, 4, 4))
            rot_z[..., 0, 0] = cos[..., i]
            rot_z[..., 0, 1] = -sin[..., i]
            rot_z[..., 1, 0] = sin[..., i]
            rot_z[..., 1, 1] = cos[..., i]
            rot_z[..., 2, 2] = 1.0
            rot_z[..., 3, 3] = 1.0
            current = current @ joint.parent_from_joint @ rot_z
            frames[..., i, :, :] = current
        return frames

    def _single_joint_frames(self, q: FloatArray) -> FloatArray:
        """:meth:`joint_frames` of one configuration ``q`` (6,): the chain without batch broadcasting
        (a rotation about z only mixes the first two columns), shape (6, 4, 4)."""
        frames = np.empty((len(self.joints), 4, 4))
        cos, sin = np.cos(q), np.sin(q)
        current = np.eye(4)
        for i, joint in enumerate(self.joints):
            frame = current @ joint.parent_from_joint
            x_axis, y_axis = frame[:, 0].copy(), frame[:, 1].copy()
            frame[:, 0] = cos[i] * x_axis + sin[i] * y_axis
            frame[:, 1] = cos[i] * y_axis - sin[i] * x_axis
            frames[i] = frame
            current = frame
        return frames

    def forward(self, q: FloatArray, link: str = FLANGE_LINK) -> FloatArray:
        """Pose of ``link`` in the base frame.

        Parameters
        ----------
        q : ndarray, shape (..., 6)
            Joint angles (rad).
        link : str
            ``link1`` … ``link6`` or ``pusher``.

        Returns
        -------
        ndarray, shape (..., 4, 4)
            ``base_from_link``.
        """
        return self._link_pose(self.joint_frames(q), link)

    def _link_pose(self, frames: FloatArray, link: str) -> FloatArray:
        """``base_from_link`` (..., 4, 4) of ``link`` from the joint frames (..., 6, 4, 4)."""
        if link == PUSHER_LINK:
            return frames[..., -1, :, :] @ self.flange_from_pusher
        for i, joint in enumerate(self.joints):
            if joint.child == link:
                return frames[..., i, :, :]
        raise InputError(f"unknown link '{link}' (known: {', '.join(self.link_names())})")

    def pusher_position(self, q: FloatArray) -> FloatArray:
        """Pusher sphere centre in the base frame, shape (..., 3), m."""
        return self.forward(q, PUSHER_LINK)[..., :3, 3]

    def jacobian(self, q: FloatArray, link: str = PUSHER_LINK) -> FloatArray:
        """Geometric Jacobian of ``link``'s origin, base frame.

        Parameters
        ----------
        q : ndarray, shape (6,)
            Joint angles (rad).
        link : str
            Link whose origin velocity is mapped.

        Returns
        -------
        ndarray, shape (6, 6)
            Rows 0-2: linear velocity (m/s per rad/s); rows 3-5: angular velocity (rad/s per rad/s).
        """
        return self._jacobian_at(self.joint_frames(q), link)

    def _jacobian_at(self, frames: FloatArray, link: str) -> FloatArray:
        """:meth:`jacobian` (6, 6) from the joint frames (6, 4, 4) of one configuration."""
        target = self._link_pose(frames, link)[:3, 3]
        n_moving = len(self.joints) if link == PUSHER_LINK else self.link_names().index(link) + 1
        jac = np.zeros((6, len(self.joints)))
        axes = frames[:n_moving, :3, 2]
        jac[:3, :n_moving] = _cross_rows(axes, target - frames[:n_moving, :3, 3]).T
        jac[3:, :n_moving] = axes.T
        return jac

    def pusher_jacobian(self, q: FloatArray) -> FloatArray:
        """d(pusher centre)/dq, shape (3, 6), m/rad, base frame."""
        return self.jacobian(q, PUSHER_LINK)[:3]

    def pusher_kinematics(self, q: FloatArray) -> tuple[FloatArray, FloatArray]:
        """The pusher centre (3,), m, and d(pusher centre)/dq (3, 6), m/rad, base frame, of one ``q`` (6,),
        from one pass down the chain (:meth:`pusher_position` and :meth:`pusher_jacobian` together)."""
        frames = self.joint_frames(q)
        return self._link_pose(frames, PUSHER_LINK)[:3, 3], self._jacobian_at(frames, PUSHER_LINK)[:3]

    def within_limits(self, q: FloatArray, margin: float = 0.0) -> bool:
        """True if every angle of ``q`` (6,) lies inside the limits shrunk by ``margin`` (rad)."""
        q = np.asarray(q, dtype=float)
        return bool(np.all(q >= self.lower + margin) and np.all(q <= self.upper - margin))


def load_arm(params: ParameterSet | None = None, urdf_path: str | os.PathLike[str] | None = None) -> ArmModel:
    """Load the xArm 6 chain from the URDF, with the pusher from the parameters.

    Parameters
    ----------
    params : ParameterSet, optional
        ``pusher.radius`` and ``pusher.offset`` (m, along flange z) override the URDF's
        pusher defaults. Default: nominal parameters.
    urdf_path : path-like, optional
        Default: the package's ``urdf/xarm6.urdf``.
    """
    from urdf_parser_py.urdf import URDF

    from sim2real.paths import urdf_file

    path = os.fspath(urdf_path or urdf_file())
    if not os.path.isfile(path):
        raise InputError(f"URDF not found: {path}")
    robot = URDF.from_xml_file(path)
    joints = []
    for name in JOINT_NAMES:
        urdf_joint = robot.joint_map.get(name)
        if urdf_joint is None or urdf_joint.type != "revolute":
            raise DataError(f"{path}: missing revolute joint '{name}'")
        if not np.allclose(urdf_joint.axis, (0.0, 0.0, 1.0)):
            raise DataError(f"{path}: joint '{name}' axis must be local z")
        origin = urdf_joint.origin
        joints.append(RevoluteJoint(
            name=name,
            child=urdf_joint.child,
            parent_from_joint=origin_transform(np.array(origin.xyz), np.array(origin.rpy)),
            lower=float(urdf_joint.limit.lower),
            upper=float(urdf_joint.limit.upper),
            max_velocity=float(urdf_joint.limit.velocity),
            max_effort=float(urdf_joint.limit.effort),
        ))
    params = params or ParameterSet.nominal()
    flange_from_pusher = np.eye(4)
    flange_from_pusher[2, 3] = float(params["pusher.offset"])
    return ArmModel(joints=tuple(joints), flange_from_pusher=flange_from_pusher,
                    pusher_radius=float(params["pusher.radius"]))

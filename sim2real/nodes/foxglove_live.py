"""A Foxglove WebSocket server (``foxglove.websocket.v1``, the ``foxglove-sdk`` package) with the run, live.

Channels (Foxglove's own schemas, protobuf-encoded; frames as in the trial bags,
:mod:`sim2real.trials.scene`):

=============================  ===================  ===============================================
topic                          schema               holds
=============================  ===================  ===============================================
``/tf``                        foxglove.FrameTransforms  per joint state: ``link_base`` → ``<ns>/link_base``,
                                                    the six joint transforms ``<ns>/link_base`` → …
                                                    → ``<ns>/link6`` and ``<ns>/link6`` → ``<ns>/pusher``;
                                                    per box pose ``link_base`` → ``<ns>/box``
``/<ns>/joint_states``         foxglove.JointStates  joint1 … joint6: rad, rad/s, N·m
``/<ns>/box_pose``             foxglove.PoseInFrame  box centre and orientation in ``link_base``, m
``/<ns>/pusher_pose``          foxglove.PoseInFrame  pusher sphere centre in ``link_base``, m
``/scene``                     foxglove.SceneUpdate  per platform the box (cube in ``<ns>/box``) and the
                                                    pusher (sphere in ``<ns>/pusher``), frame-locked;
                                                    sent again every second for late viewers
=============================  ===================  ===============================================

``ns`` is ``real`` and ``sim``. Log times are the messages' header stamps (ns). The optional
dependency is installed with ``pip install 'sim2real[live]'``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.trials.scene import (
    BOX_FRAME,
    COLORS,
    PUSHER_FRAME,
    SceneSpec,
    chain_transforms,
    frame,
    static_transforms,
)

if TYPE_CHECKING:
    from foxglove.websocket import WebSocketServer


def parse_live_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (dotted IPv4 host, port 1..65535) of ``--live``.

    Raises
    ------
    Sim2RealError
        Not an IPv4 address and a port.
    """
    import ipaddress

    host, _, port = text.rpartition(":")
    try:
        ipaddress.IPv4Address(host)
        number = int(port)
    except ValueError:
        raise Sim2RealError(f"--live must be HOST:PORT with a dotted IPv4 host, got {text!r}") from None
    if not 1 <= number <= 65535:
        raise Sim2RealError(f"--live port must be in 1..65535, got {number}")
    return host, number


def _time(stamp_ns: int) -> Any:
    from foxglove.messages import Timestamp

    sec, nsec = divmod(int(stamp_ns), 1_000_000_000)
    return Timestamp(sec=sec, nsec=nsec)


def _vector(position: Any) -> Any:
    from foxglove.messages import Vector3

    x, y, z = (float(v) for v in np.asarray(position, float).reshape(3))
    return Vector3(x=x, y=y, z=z)


def _rotation(quaternion_wxyz: Any) -> Any:
    from foxglove.messages import Quaternion

    w, x, y, z = (float(v) for v in np.asarray(quaternion_wxyz, float).reshape(4))
    return Quaternion(x=x, y=y, z=z, w=w)


def _pose(position: Any, quaternion_wxyz: Any) -> Any:
    from foxglove.messages import Pose

    return Pose(position=_vector(position), orientation=_rotation(quaternion_wxyz))


def _transform(stamp_ns: int, parent: str, child: str, translation: Any, quaternion_wxyz: Any) -> Any:
    from foxglove.messages import FrameTransform

    return FrameTransform(timestamp=_time(stamp_ns), parent_frame_id=parent, child_frame_id=child,
                          translation=_vector(translation), rotation=_rotation(quaternion_wxyz))


class FoxgloveLive:
    """The server and its channels (see the module docstring). Thread-safe (the SDK's channels are).

    Parameters
    ----------
    host, port : str, int
        Where the server listens (port 0: a free one; :attr:`port` tells which).
    spec : SceneSpec
        Platforms, box size, pusher radius and offset.

    Raises
    ------
    Sim2RealError
        ``foxglove-sdk`` is not installed, or the server cannot listen there.
    """

    def __init__(self, host: str, port: int, spec: SceneSpec) -> None:
        try:
            import foxglove
            from foxglove.channels import (
                FrameTransformsChannel,
                JointStatesChannel,
                PoseInFrameChannel,
                SceneUpdateChannel,
            )
        except ImportError:
            raise Sim2RealError("--live needs the foxglove-sdk package: pip install 'sim2real[live]'") from None
        self.spec = spec
        self.context = foxglove.Context()
        try:
            self.server: WebSocketServer | None = foxglove.start_server(name="sim2real", host=host, port=int(port),
                                                                        context=self.context)
        except Exception as err:  # the SDK's own error type: cannot bind, say
            raise Sim2RealError(f"--live {host}:{port}: the Foxglove server could not start: {err}") from None
        self.port = int(self.server.port)
        self._tf = FrameTransformsChannel("/tf", context=self.context)
        self._scene = SceneUpdateChannel("/scene", context=self.context)
        self._joints = {ns: JointStatesChannel(f"/{ns}/joint_states", context=self.context) for ns in spec.platforms}
        self._boxes = {ns: PoseInFrameChannel(f"/{ns}/box_pose", context=self.context) for ns in spec.platforms}
        self._pushers = {ns: PoseInFrameChannel(f"/{ns}/pusher_pose", context=self.context) for ns in spec.platforms}
        self._static = {ns: [t for t in static_transforms(spec) if t[1].startswith(f"{ns}/")] for ns in spec.arms}

    def joint_state(self, ns: str, stamp_ns: int, names: Sequence[str], position: Any, velocity: Any,
                    effort: Any) -> None:
        """Joint states (6,) of platform ``ns`` (rad, rad/s, N·m) and its arm's link transforms."""
        from foxglove.messages import FrameTransforms, JointState, JointStates

        joints = [JointState(name=str(n), position=float(q), velocity=float(v), effort=float(e))
                  for n, q, v, e in zip(names, position, velocity, effort, strict=True)]
        self._joints[ns].log(JointStates(timestamp=_time(stamp_ns), joints=joints), log_time=int(stamp_ns))
        transforms = [*self._static.get(ns, []), *chain_transforms(ns, position)]
        self._tf.log(FrameTransforms(transforms=[_transform(stamp_ns, *t) for t in transforms]),
                     log_time=int(stamp_ns))

    def box_pose(self, ns: str, stamp_ns: int, position: Any, quaternion_wxyz: Any) -> None:
        """The box of platform ``ns``: centre (3,) m and orientation (w, x, y, z) in ``link_base``."""
        from foxglove.messages import FrameTransforms, PoseInFrame

        self._boxes[ns].log(PoseInFrame(timestamp=_time(stamp_ns), frame_id=self.spec.root_frame,
                                        pose=_pose(position, quaternion_wxyz)), log_time=int(stamp_ns))
        self._tf.log(FrameTransforms(transforms=[_transform(stamp_ns, self.spec.root_frame, frame(ns, BOX_FRAME),
                                                            position, quaternion_wxyz)]), log_time=int(stamp_ns))

    def pusher_pose(self, ns: str, stamp_ns: int, position: Any) -> None:
        """The pusher sphere centre (3,) m of platform ``ns`` in ``link_base``."""
        from foxglove.messages import PoseInFrame

        self._pushers[ns].log(PoseInFrame(timestamp=_time(stamp_ns), frame_id=self.spec.root_frame,
                                          pose=_pose(position, (1.0, 0.0, 0.0, 0.0))), log_time=int(stamp_ns))

    def scene(self, stamp_ns: int) -> None:
        """The boxes and pushers as scene entities, locked to their frames."""
        from foxglove.messages import Color, CubePrimitive, SceneEntity, SceneUpdate, SpherePrimitive, Vector3

        identity = _pose(np.zeros(3), (1.0, 0.0, 0.0, 0.0))
        entities = []
        for ns in self.spec.platforms:
            r, g, b, a = COLORS.get(ns, (0.7, 0.7, 0.7, 1.0))
            color = Color(r=r, g=g, b=b, a=a)
            sx, sy, sz = self.spec.box_size
            entities.append(SceneEntity(timestamp=_time(stamp_ns), frame_id=frame(ns, BOX_FRAME), id=f"{ns}/box",
                                        frame_locked=True, cubes=[CubePrimitive(
                                            pose=identity, size=Vector3(x=sx, y=sy, z=sz), color=color)]))
            diameter = 2.0 * self.spec.pusher_radius
            pusher_frame = frame(ns, PUSHER_FRAME) if ns in self.spec.arms else self.spec.root_frame
            entities.append(SceneEntity(timestamp=_time(stamp_ns), frame_id=pusher_frame, id=f"{ns}/pusher",
                                        frame_locked=True, spheres=[SpherePrimitive(
                                            pose=identity, size=Vector3(x=diameter, y=diameter, z=diameter),
                                            color=color)]))
        self._scene.log(SceneUpdate(entities=entities), log_time=int(stamp_ns))

    def close(self) -> None:
        """Stop the server (idempotent)."""
        server, self.server = self.server, None
        if server is not None:
            server.stop()


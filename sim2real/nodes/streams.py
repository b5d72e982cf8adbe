"""One subscription per stream for the nodes that share a process.

The recorder, the experiment node and ``live_view`` all read the platforms' streams
(``<ns>/joint_states``, ``<ns>/box_pose``, ...). Each subscription of its own costs a wake of its
node's executor and a copy of the message per message (rclpy's executor machinery held the GIL for
about 80 % of the ``sim2real run`` process's py-spy samples). A :class:`StreamHub` subscribes each
topic once and hands every message to each node that asked for it, in the order they asked, on the
hub's own executor thread. In stand-in runs of the 5 default pushes (2026-11-29, idle, alternating
pairs) the run's own process used 19.0 and 20.7 CPU-s with the hub against 26.6 and 28.2 without (14
subscriptions to the streams there, 8 with it).

Nodes started on their own (console scripts, ``ros2 launch``) get no hub and subscribe
themselves: :func:`subscribe_stream` does either.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rclpy.node import Node

from sim2real.nodes.common import STREAM_QOS, LeanNode

#: A stream listener: takes the received message and must not modify it (other listeners read it too).
Listener = Callable[[Any], None]


class StreamHub(LeanNode):
    """Subscribes each stream topic once (:data:`~sim2real.nodes.common.STREAM_QOS`) and calls every
    listener of that topic with each message.

    The hub must be in the namespace of the nodes that listen through it (relative topic names
    resolve in the hub's namespace), and must spin: it is a node like the others of the process.
    """

    def __init__(self, name: str = "stream_hub", **kwargs: object) -> None:
        super().__init__(name, **kwargs)  # type: ignore[arg-type]
        self._listeners: dict[str, list[Listener]] = {}
        self._types: dict[str, type] = {}

    def listen(self, msg_type: type, topic: str, callback: Listener) -> None:
        """Call ``callback(msg)`` for every message on ``topic`` (a relative or absolute name).

        Raises
        ------
        ValueError
            ``topic`` was asked for before with another message type.
        """
        listeners = self._listeners.get(topic)
        if listeners is None:
            listeners = self._listeners[topic] = []
            self._types[topic] = msg_type
            self.create_subscription(msg_type, topic, _fan_out(listeners), STREAM_QOS)
        elif self._types[topic] is not msg_type:
            raise ValueError(f"stream {topic} is {self._types[topic].__name__}, not {msg_type.__name__}")
        listeners.append(callback)


def _fan_out(listeners: list[Listener]) -> Listener:
    def deliver(msg: Any) -> None:
        for listener in listeners:
            listener(msg)
    return deliver


def subscribe_stream(node: Node, streams: StreamHub | None, msg_type: type, topic: str, callback: Listener,
                     **kwargs: Any) -> None:
    """Have ``callback(msg)`` called for every message on stream ``topic``: through ``streams`` when
    given (the callback then runs on the hub's thread), else by a subscription of ``node``'s own
    (``kwargs`` go to :meth:`rclpy.node.Node.create_subscription`).

    Raises
    ------
    ValueError
        ``streams`` is in another namespace than ``node``.
    """
    if streams is None:
        node.create_subscription(msg_type, topic, callback, STREAM_QOS, **kwargs)
        return
    if streams.get_namespace() != node.get_namespace():
        raise ValueError(f"stream hub in namespace {streams.get_namespace()}, node {node.get_name()} in "
                         f"{node.get_namespace()}")
    streams.listen(msg_type, topic, callback)

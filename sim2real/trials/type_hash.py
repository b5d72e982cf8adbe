"""ROS 2 type description hashes (RIHS01) and a bag writer that records them as rosbag2 does.

REP 2011 names every message type by a hash of its *type description*: the type's fields (name,
field type id, array capacity, string capacity, nested type name) and, sorted by type name, the
descriptions of every type it refers to, directly or not. rosidl (``rosidl_generator_type_description``)
hashes the JSON text of ``{"type_description": ..., "referenced_type_descriptions": [...]}`` with the
fields' ``default_value`` left out, written with ``", "`` and ``": "`` separators, no indentation and
keys in that order, by SHA-256: ``RIHS01_<64 hex digits>``. The installed message wheels carry the
result (``share/<package>/msg/<Type>.json``) and rclpy reports it for every topic endpoint.

rosbag2 stores the hash twice: ``type_description_hash`` of each topic in metadata.yaml, and
``topic_type_hash`` in the MCAP channel's metadata beside ``offered_qos_profiles``. rosbags writes
the first; :class:`Writer` (a drop-in for ``rosbags.rosbag2.Writer``) gives both this module's hash.

Pure Python; no ROS runtime.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from io import BytesIO
from typing import TYPE_CHECKING, Any, cast

from rosbags.interfaces import ConnectionExtRosbag2, Nodetype
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer as _RosbagsWriter
from rosbags.rosbag2.storage_mcap import Channel, McapWriter, write_channel, write_string
from rosbags.typesys.store import Typestore

if TYPE_CHECKING:
    from rosbags.interfaces.typing import FieldDesc
    from rosbags.rosbag2.writer import StorageWriter

RIHS01_PREFIX = "RIHS01_"
#: Field type ids of type_description_interfaces/msg/FieldType (REP 2011) for the primitive types;
#: a fixed-size array adds 48, a bounded sequence 96, an unbounded sequence 144.
FIELD_TYPE_IDS: Mapping[str, int] = {
    "nested": 1, "int8": 2, "uint8": 3, "int16": 4, "uint16": 5, "int32": 6, "uint32": 7, "int64": 8,
    "uint64": 9, "float32": 10, "float64": 11, "float128": 12, "char": 13, "wchar": 14, "bool": 15, "byte": 16,
    "string": 17, "wstring": 18, "fixed_string": 19, "fixed_wstring": 20, "bounded_string": 21,
    "bounded_wstring": 22,
}
ARRAY_OFFSET, BOUNDED_SEQUENCE_OFFSET, SEQUENCE_OFFSET = 48, 96, 144
#: A ``char`` of a .msg file is rosidl's uint8 (the interface definition's mapping: a deprecated alias),
#: whose type id is UINT8, not CHAR; rosbags' typestore keeps the name ``char`` (its own hash then
#: differs from rosidl's for std_msgs/msg/Char, rmw_dds_common/msg/Gid, ...).
MSG_ALIASES: Mapping[str, str] = {"char": "uint8"}
#: The member rosidl gives a message without fields (e.g. std_msgs/msg/Empty).
EMPTY_MEMBER: tuple[str, FieldDesc] = ("structure_needs_at_least_one_member", (Nodetype.BASE, ("uint8", 0)))
#: The MCAP channel metadata key of the hash (rosbag2_storage_mcap).
CHANNEL_HASH_KEY = "topic_type_hash"


def _field(name: str, desc: Any) -> tuple[dict[str, Any], str | None]:
    """One field's description (``name``, ``type``) and the nested type it names (or None)."""
    offset, capacity = 0, 0
    node, detail = desc
    if node == Nodetype.ARRAY:
        (node, detail), capacity = detail
        offset = ARRAY_OFFSET
    elif node == Nodetype.SEQUENCE:
        (node, detail), bound = detail
        offset, capacity = (BOUNDED_SEQUENCE_OFFSET, int(bound)) if bound else (SEQUENCE_OFFSET, 0)
    string_capacity, nested = 0, ""
    if node == Nodetype.NAME:
        type_id, nested = FIELD_TYPE_IDS["nested"], str(detail)
    else:
        base, bound = detail
        if base in ("string", "wstring") and bound:
            type_id, string_capacity = FIELD_TYPE_IDS[f"bounded_{base}"], int(bound)
        else:
            type_id = FIELD_TYPE_IDS[MSG_ALIASES.get(base, base)]
    return ({"name": name, "type": {"type_id": offset + type_id, "capacity": int(capacity),
                                     "string_capacity": string_capacity, "nested_type_name": nested}},
            nested or None)


def type_description(typestore: Typestore, msgtype: str) -> dict[str, Any]:
    """The REP 2011 type description of ``msgtype`` (e.g. ``sensor_msgs/msg/JointState``).

    Returns
    -------
    dict
        ``{"type_description": {"type_name", "fields"}, "referenced_type_descriptions": [...]}``,
        the referenced types sorted by name; without default values (what is hashed).

    Raises
    ------
    KeyError
        ``msgtype`` or a type it refers to is not in ``typestore``.
    """
    described: dict[str, dict[str, Any]] = {}
    pending = [msgtype]
    while pending:
        name = pending.pop()
        if name in described:
            continue
        members = typestore.fielddefs[name][1] or [EMPTY_MEMBER]
        fields = []
        for field_name, desc in members:
            field, nested = _field(field_name, desc)
            fields.append(field)
            if nested is not None:
                pending.append(nested)
        described[name] = {"type_name": name, "fields": fields}
    main = described.pop(msgtype)
    return {"type_description": main, "referenced_type_descriptions": [described[k] for k in sorted(described)]}


def rihs01(description: Mapping[str, Any]) -> str:
    """The RIHS01 hash of a type description (a :func:`type_description` or the ``type_description_msg``
    of a rosidl ``<Type>.json``; fields' ``default_value`` are left out).

    Returns
    -------
    str
        ``RIHS01_`` followed by the SHA-256 of the description's JSON text, 64 lowercase hex digits.
    """
    def strip(struct: Mapping[str, Any]) -> dict[str, Any]:
        return {"type_name": struct["type_name"],
                "fields": [{"name": f["name"], "type": {key: f["type"][key] for key in
                                                          ("type_id", "capacity", "string_capacity",
                                                           "nested_type_name")}}
                           for f in struct["fields"]]}

    hashable = {"type_description": strip(description["type_description"]),
                "referenced_type_descriptions": [strip(s) for s in description["referenced_type_descriptions"]]}
    text = json.dumps(hashable, ensure_ascii=True, allow_nan=False, indent=None, separators=(", ", ": "),
                      sort_keys=False)
    return RIHS01_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()


def type_hash(typestore: Typestore, msgtype: str) -> str:
    """RIHS01 hash of ``msgtype`` from the definitions in ``typestore``."""
    return rihs01(type_description(typestore, msgtype))


class _HashingMcapWriter(McapWriter):
    """rosbags' MCAP storage, whose channels also carry ``topic_type_hash`` (as rosbag2_storage_mcap)."""

    def add_connection(self, connection: Any, offered_qos_profiles: str) -> None:
        """Add a channel with ``offered_qos_profiles`` and ``topic_type_hash`` (the connection's digest)."""
        metadata = BytesIO()
        for key, value in (("offered_qos_profiles", offered_qos_profiles), (CHANNEL_HASH_KEY, connection.digest)):
            write_string(metadata, key)
            write_string(metadata, value)
        self.channels.append(Channel(connection.id, connection.msgtype, connection.topic,
                                     cast("ConnectionExtRosbag2", connection.ext).serialization_format,
                                     metadata.getvalue()))
        self.channel_stats[connection.id] = 0
        write_channel(self.chunk.bio, self.channels[-1], self.schemas)


class Writer(_RosbagsWriter):
    """``rosbags.rosbag2.Writer`` whose topics carry this module's RIHS01 hash in metadata.yaml
    (``type_description_hash``) and, for MCAP, in the channel metadata (``topic_type_hash``)."""

    STORAGE_PLUGINS: Mapping[StoragePlugin, type[StorageWriter]] = {**_RosbagsWriter.STORAGE_PLUGINS,
                                                               StoragePlugin.MCAP: _HashingMcapWriter}

    def add_connection(self, topic: str, msgtype: str, *, typestore: Typestore | None = None,
                       msgdef: str | None = None, rihs01: str | None = None, **kwargs: Any) -> Any:
        """As rosbags' ``add_connection``; with a typestore, the hash is :func:`type_hash`'s."""
        if typestore is not None and (msgdef is None or rihs01 is None):
            msgdef = typestore.generate_msgdef(msgtype, ros_version=2)[0]
            rihs01 = type_hash(typestore, msgtype)
        return super().add_connection(topic, msgtype, typestore=typestore, msgdef=msgdef, rihs01=rihs01, **kwargs)

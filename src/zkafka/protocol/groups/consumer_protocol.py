"""ConsumerProtocol bytes (protocol type "consumer"): what members put in JoinGroup and what the
leader hands out in SyncGroup (reference group-coordinator §4).

The broker only relays these blobs; it reads the subscribed topics for offset expiry and the
tools read assignments for `consumer-groups --describe`. Both blobs start with an int16
version; newer versions only append fields, so a reader takes the fields it knows and ignores
the rest. Used by the broker, the group consumer and the tools alike (no server imports).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from zkafka.protocol.groups.formats import ByteReader, ByteWriter, CorruptCoordinatorRecordError

PROTOCOL_TYPE = "consumer"


@dataclass(frozen=True, slots=True)
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    generation: int = -1
    version: int = 0


@dataclass(frozen=True, slots=True)
class Assignment:
    partitions: Mapping[str, tuple[int, ...]]
    user_data: bytes | None = None
    version: int = 0


def _write_topic_partitions(w: ByteWriter, items: Mapping[str, Sequence[int]]) -> None:
    w.i32(len(items))
    for topic, parts in items.items():
        w.string(topic).i32(len(parts))
        for p in parts:
            w.i32(p)


def _nullable_bytes(w: ByteWriter, data: bytes | None) -> None:
    if data is None:
        w.i32(-1)
    else:
        w.bytes_(data)


def encode_subscription(sub: Subscription) -> bytes:
    w = ByteWriter().i16(sub.version).i32(len(sub.topics))
    for t in sub.topics:
        w.string(t)
    _nullable_bytes(w, sub.user_data)
    if sub.version >= 1:
        _write_topic_partitions(w, sub.owned_partitions)
    if sub.version >= 2:
        w.i32(sub.generation)
    return w.done()


def encode_assignment(assignment: Assignment) -> bytes:
    w = ByteWriter().i16(assignment.version)
    _write_topic_partitions(w, assignment.partitions)
    _nullable_bytes(w, assignment.user_data)
    return w.done()


def _read_nullable_bytes(r: ByteReader) -> bytes | None:
    n = r.i32()
    return None if n < 0 else r.take(n)


def _read_topic_partitions(r: ByteReader) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    for _ in range(r.count()):
        topic = r.string()
        n = r.count()
        out[topic] = tuple(r.i32() for _ in range(n))
    return out


def decode_subscription(data: bytes | memoryview) -> Subscription:
    r = ByteReader(data, "consumer subscription")
    try:
        version = r.i16()
        if version < 0:
            raise CorruptCoordinatorRecordError(f"consumer subscription version {version}")
        topics = tuple(r.string() for _ in range(r.count()))
        user_data = _read_nullable_bytes(r)
        owned = _read_topic_partitions(r) if version >= 1 and r.pos < len(r.data) else {}
        generation = r.i32() if version >= 2 and r.pos < len(r.data) else -1
    except struct.error as e:  # pragma: no cover - ByteReader checks lengths first
        raise CorruptCoordinatorRecordError(str(e)) from None
    return Subscription(topics, user_data, owned, generation, version)


def decode_assignment(data: bytes | memoryview) -> Assignment:
    """An empty blob is an empty assignment (a member the leader gave nothing)."""
    if len(data) == 0:
        return Assignment({})
    r = ByteReader(data, "consumer assignment")
    version = r.i16()
    if version < 0:
        raise CorruptCoordinatorRecordError(f"consumer assignment version {version}")
    partitions = _read_topic_partitions(r)
    user_data = _read_nullable_bytes(r) if r.pos < len(r.data) else None
    return Assignment(partitions, user_data, version)

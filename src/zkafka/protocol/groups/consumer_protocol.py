"""ConsumerProtocol bytes (protocol type "consumer"): what members put in JoinGroup and what the
leader hands out in SyncGroup (reference group-coordinator §4).

The broker only relays these blobs; it reads the subscribed topics for offset expiry and the
tools read assignments for `consumer-groups --describe`. Both blobs are an int16 version and the
body of Kafka's ConsumerProtocolSubscription / ConsumerProtocolAssignment data schema
(`zkafka.protocol.schemas.data.consumer_protocol`, compiled by the protocol's codec). Newer
versions only append fields, so a reader parses a version newer than it knows with the newest
format it knows and ignores the rest, as Kafka does; and a blob that ends right before the
fields a version added (some clients write the version without them) reads as the version
before. Used by the broker, the group consumer and the tools alike (no server imports).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from zkafka.protocol.codec import data_decoder, data_encoder
from zkafka.protocol.exceptions import EncodeError
from zkafka.protocol.groups.formats import DECODE_FAILURES, CorruptCoordinatorRecordError
from zkafka.protocol.messages.data.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from zkafka.protocol.schemas.data.consumer_protocol import ASSIGNMENT, SUBSCRIPTION

PROTOCOL_TYPE = "consumer"

_I16: Final = struct.Struct(">h")
_SUBSCRIPTION_MAX: Final = SUBSCRIPTION.versions.high
_ASSIGNMENT_MAX: Final = ASSIGNMENT.versions.high
_NULL_BYTES: Final = b"\xff\xff\xff\xff"  # an int32 length of -1


@dataclass(frozen=True, slots=True)
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    generation: int = -1
    version: int = 0
    rack_id: str | None = None


@dataclass(frozen=True, slots=True)
class Assignment:
    partitions: Mapping[str, tuple[int, ...]]
    user_data: bytes | None = None
    version: int = 0


def _encode(name: str, message: object, version: int, body_version: int) -> bytes:
    out = bytearray(_I16.pack(version))
    try:
        return bytes(data_encoder(name, body_version)(message, out, None))  # type: ignore[arg-type]
    except EncodeError:
        raise
    except (struct.error, ValueError, TypeError, AttributeError, OverflowError) as e:
        raise ValueError(f"cannot encode {name} v{version}: {e}") from e


def _body_version(version: int, newest: int, what: str) -> int:
    if version < 0:
        raise ValueError(f"{what} version {version}")
    return min(version, newest)


def encode_subscription(sub: Subscription) -> bytes:
    """At `sub.version` (a version newer than Kafka's newest gets the newest body)."""
    Tp = ConsumerProtocolSubscription.TopicPartition
    body = ConsumerProtocolSubscription(
        topics=list(sub.topics),
        user_data=sub.user_data,
        owned_partitions=[Tp(topic=t, partitions=list(ps)) for t, ps in sub.owned_partitions.items()],
        generation_id=sub.generation,
        rack_id=sub.rack_id,
    )
    v = _body_version(sub.version, _SUBSCRIPTION_MAX, "consumer subscription")
    return _encode("ConsumerProtocolSubscription", body, sub.version, v)


def encode_assignment(assignment: Assignment) -> bytes:
    Tp = ConsumerProtocolAssignment.TopicPartition
    body = ConsumerProtocolAssignment(
        assigned_partitions=[Tp(topic=t, partitions=list(ps)) for t, ps in assignment.partitions.items()],
        user_data=assignment.user_data,
    )
    v = _body_version(assignment.version, _ASSIGNMENT_MAX, "consumer assignment")
    return _encode("ConsumerProtocolAssignment", body, assignment.version, v)


def _decode(name: str, data: bytes | memoryview, newest: int, what: str) -> tuple[int, object]:
    """The blob's version and its body: parsed at min(version, newest); a blob that fails there
    but fills exactly an older version's body is that older body (trailing fields left out)."""
    buf = data if isinstance(data, memoryview) else memoryview(data)
    if buf.format != "B" or buf.ndim != 1:
        buf = buf.cast("B")
    if len(buf) < 2:
        raise CorruptCoordinatorRecordError(f"{what}: {len(buf)} bytes cannot hold a version")
    (version,) = _I16.unpack_from(buf)
    if version < 0:
        raise CorruptCoordinatorRecordError(f"{what} version {version}")
    first_error: Exception | None = None
    for v in range(min(version, newest), -1, -1):
        try:
            message, p = data_decoder(name, v)(buf, 2)
        except DECODE_FAILURES as e:
            first_error = first_error or e
            continue
        if v == min(version, newest) or p == len(buf):
            return version, message
    raise CorruptCoordinatorRecordError(f"{what} v{version}: {first_error}")


def _decoded_size(name: str, data: bytes) -> int:
    """Where the v0 body of `data` (after its version) ends; -1 if it does not parse."""
    try:
        return int(data_decoder(name, 0)(memoryview(data), 2)[1])
    except DECODE_FAILURES:
        return -1


def decode_subscription(data: bytes | memoryview) -> Subscription:
    version, s = _decode("ConsumerProtocolSubscription", data, _SUBSCRIPTION_MAX, "consumer subscription")
    assert isinstance(s, ConsumerProtocolSubscription)
    owned = {tp.topic: tuple(tp.partitions) for tp in s.owned_partitions}
    return Subscription(tuple(s.topics), s.user_data, owned, s.generation_id, version, s.rack_id)


def decode_assignment(data: bytes | memoryview) -> Assignment:
    """An empty blob is an empty assignment (a member the leader gave nothing)."""
    if len(data) == 0:
        return Assignment({})
    try:
        version, a = _decode("ConsumerProtocolAssignment", data, _ASSIGNMENT_MAX, "consumer assignment")
    except CorruptCoordinatorRecordError:
        # a blob that ends right after its partitions (no user data at all) reads as null user data
        try:
            padded = bytes(data) + _NULL_BYTES
            version, a = _decode("ConsumerProtocolAssignment", padded, 0, "consumer assignment")
            if _decoded_size("ConsumerProtocolAssignment", padded) != len(padded):
                raise CorruptCoordinatorRecordError("consumer assignment: bytes after the body")
        except CorruptCoordinatorRecordError:
            pass
        else:
            assert isinstance(a, ConsumerProtocolAssignment)
            return Assignment({tp.topic: tuple(tp.partitions) for tp in a.assigned_partitions}, None, version)
        raise
    assert isinstance(a, ConsumerProtocolAssignment)
    return Assignment({tp.topic: tuple(tp.partitions) for tp in a.assigned_partitions}, a.user_data, version)

"""The record keys and values of `__consumer_offsets`, in Kafka's byte formats (reference
group-coordinator §3), so Kafka itself, Burrow and other tools can read what zkafka writes.

Keys (the int16 version names the record type):
* v0/v1 offset commit: group, topic, partition (Kafka writes v1);
* v2 group metadata: group.

Values:
* offset commit v0-v4 are all read (v4, Kafka 3.5+, is the first flexible one); zkafka writes
  **v3** (with the leader epoch), or **v1** when the commit carries an explicit retention (its
  absolute expiry needs v1), as Kafka does. v2 is never written: Burrow 1.2.1 drops it.
* group metadata v0-v4 are all read (v4 flexible, as above); zkafka writes **v1** -- the newest
  version Burrow 1.2.1 decodes -- unless a member is static (has a group.instance.id), which
  only v3 can store; such groups are written as v3 so they survive a coordinator move (Burrow
  then skips them).

A null value is a tombstone (an offset deleted or a group removed). The bodies are the data
schemas of `zkafka.protocol.schemas.data.coordinator_records`, compiled by the protocol's codec;
this module writes and reads the int16 version in front of them and maps them to the dataclasses
below. Bytes after a body are ignored, as Kafka does; anything else that is not a record of a
known version (truncated, a negative length or count, a null where Kafka's schema has none, bad
UTF-8) raises `CorruptCoordinatorRecordError`, and nothing else.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Final

from zkafka.protocol.codec import data_decoder, data_encoder
from zkafka.protocol.exceptions import DecodeError, EncodeError
from zkafka.protocol.messages.data.coordinator_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
)
from zkafka.protocol.primitives import WireFormatError
from zkafka.protocol.schemas.data.coordinator_records import GROUP_METADATA_VALUE, OFFSET_COMMIT_VALUE

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_VALUE_VERSION = 1
GROUP_VALUE_VERSION_STATIC = 3

_I16: Final = struct.Struct(">h")
_VERSION_PREFIXES: Final = {v: _I16.pack(v) for v in range(8)}
# What a compiled decoder can raise on bad bytes (its checks, struct, UTF-8, a short buffer).
DECODE_FAILURES: Final = (WireFormatError, DecodeError, struct.error, ValueError, IndexError, TypeError)


class CorruptCoordinatorRecordError(ValueError):
    """Bytes in `__consumer_offsets` that are not a record of a known version."""


# -- model ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


@dataclass(frozen=True, slots=True)
class OffsetValue:
    offset: int
    metadata: str = ""
    commit_timestamp: int = -1
    leader_epoch: int = -1
    expire_timestamp: int | None = None
    """Only in v1 values: an absolute expiry chosen by the committer (OffsetCommit v2-v4)."""


@dataclass(frozen=True, slots=True)
class MemberValue:
    member_id: str
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    members: tuple[MemberValue, ...] = field(default=())
    current_state_timestamp: int = -1


# -- writing ----------------------------------------------------------------------------------------


def _encode(name: str, message: object, version: int) -> bytes:
    out = bytearray(_VERSION_PREFIXES.get(version) or _I16.pack(version))
    try:
        return bytes(data_encoder(name, version)(message, out, None))  # type: ignore[arg-type]
    except EncodeError:
        raise
    except (struct.error, ValueError, TypeError, AttributeError, OverflowError) as e:
        raise ValueError(f"cannot encode {name} v{version}: {e}") from e


def encode_offset_key(key: OffsetKey) -> bytes:
    body = OffsetCommitKey(group=key.group, topic=key.topic, partition=key.partition)
    return _encode("OffsetCommitKey", body, OFFSET_KEY_VERSION)


def encode_group_key(key: GroupKey) -> bytes:
    return _encode("GroupMetadataKey", GroupMetadataKey(group=key.group), GROUP_KEY_VERSION)


def offset_value_version(value: OffsetValue) -> int:
    return OFFSET_VALUE_VERSION_WITH_EXPIRY if value.expire_timestamp is not None else OFFSET_VALUE_VERSION


def encode_offset_value(value: OffsetValue, version: int | None = None) -> bytes:
    v = offset_value_version(value) if version is None else version
    if v not in OFFSET_COMMIT_VALUE.versions:
        raise ValueError(f"unknown offset commit value version {v}")
    body = OffsetCommitValue(
        offset=value.offset,
        leader_epoch=value.leader_epoch,
        metadata=value.metadata,
        commit_timestamp=value.commit_timestamp,
        expire_timestamp=value.commit_timestamp if value.expire_timestamp is None else value.expire_timestamp,
    )
    return _encode("OffsetCommitValue", body, v)


def group_value_version(value: GroupValue) -> int:
    static = any(m.group_instance_id is not None for m in value.members)
    return GROUP_VALUE_VERSION_STATIC if static else GROUP_VALUE_VERSION


_Member = GroupMetadataValue.MemberMetadata


def encode_group_value(value: GroupValue, version: int | None = None) -> bytes:
    v = group_value_version(value) if version is None else version
    if v not in GROUP_METADATA_VALUE.versions:
        raise ValueError(f"unknown group metadata value version {v}")
    body = GroupMetadataValue(
        protocol_type=value.protocol_type,
        generation=value.generation,
        protocol=value.protocol,
        leader=value.leader,
        current_state_timestamp=value.current_state_timestamp,
        members=[
            _Member(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=m.subscription,
                assignment=m.assignment,
            )
            for m in value.members
        ],
    )
    return _encode("GroupMetadataValue", body, v)


# -- reading ----------------------------------------------------------------------------------------


def _version(buf: memoryview, what: str) -> int:
    if len(buf) < 2:
        raise CorruptCoordinatorRecordError(f"{what}: {len(buf)} bytes cannot hold a version")
    return int(_I16.unpack_from(buf)[0])


def _decode(name: str, version: int, buf: memoryview, what: str) -> object:
    try:
        message, _ = data_decoder(name, version)(buf, 2)
    except DECODE_FAILURES as e:
        raise CorruptCoordinatorRecordError(f"{what} v{version}: {e}") from None
    return message


def _view(data: bytes | bytearray | memoryview) -> memoryview:
    view = data if isinstance(data, memoryview) else memoryview(data)
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def decode_key(data: bytes | memoryview | None) -> OffsetKey | GroupKey:
    if data is None:
        raise CorruptCoordinatorRecordError("a __consumer_offsets record needs a key")
    buf = _view(data)
    version = _version(buf, "key")
    if version in (0, 1):
        k = _decode("OffsetCommitKey", version, buf, "offset commit key")
        assert isinstance(k, OffsetCommitKey)
        return OffsetKey(k.group, k.topic, k.partition)
    if version == 2:
        g = _decode("GroupMetadataKey", version, buf, "group metadata key")
        assert isinstance(g, GroupMetadataKey)
        return GroupKey(g.group)
    raise CorruptCoordinatorRecordError(f"unknown __consumer_offsets key version {version}")


def decode_offset_value(data: bytes | memoryview) -> OffsetValue:
    buf = _view(data)
    version = _version(buf, "offset commit value")
    if version not in OFFSET_COMMIT_VALUE.versions:
        raise CorruptCoordinatorRecordError(f"unknown offset commit value version {version}")
    v = _decode("OffsetCommitValue", version, buf, "offset commit value")
    assert isinstance(v, OffsetCommitValue)
    expire = v.expire_timestamp if version == 1 and v.expire_timestamp >= 0 else None
    return OffsetValue(v.offset, v.metadata, v.commit_timestamp, v.leader_epoch, expire)


def decode_group_value(data: bytes | memoryview) -> GroupValue:
    buf = _view(data)
    version = _version(buf, "group metadata value")
    if version not in GROUP_METADATA_VALUE.versions:
        raise CorruptCoordinatorRecordError(f"unknown group metadata value version {version}")
    g = _decode("GroupMetadataValue", version, buf, "group metadata value")
    assert isinstance(g, GroupMetadataValue)
    members = tuple(
        MemberValue(
            m.member_id,
            m.client_id,
            m.client_host,
            # v0 has no rebalance timeout: Kafka takes the session timeout
            m.rebalance_timeout if version >= 1 else m.session_timeout,
            m.session_timeout,
            m.subscription,
            m.assignment,
            m.group_instance_id,
        )
        for m in g.members
    )
    return GroupValue(g.protocol_type, g.generation, g.protocol, g.leader, members, g.current_state_timestamp)

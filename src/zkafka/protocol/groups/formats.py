"""The record keys and values of `__consumer_offsets`, in Kafka's byte formats (reference
group-coordinator §3), so Kafka itself, Burrow and other tools can read what zkafka writes.

Keys (the int16 version names the record type):
* v0/v1 offset commit: group, topic, partition (Kafka writes v1);
* v2 group metadata: group.

Values:
* offset commit v0-v3 are all read; zkafka writes **v3** (with the leader epoch), or **v1**
  when the commit carries an explicit retention (its absolute expiry needs v1), as Kafka does.
  v2 is never written: Burrow 1.2.1 drops it.
* group metadata v0-v3 are all read; zkafka writes **v1** -- the newest version Burrow 1.2.1
  decodes -- unless a member is static (has a group.instance.id), which only v3 can store; such
  groups are written as v3 so they survive a coordinator move (Burrow then skips them).

A null value is a tombstone (an offset deleted or a group removed). Everything is big-endian;
strings are int16-length-prefixed UTF-8 (-1 = null), bytes int32-length-prefixed.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_VALUE_VERSION = 1
GROUP_VALUE_VERSION_STATIC = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


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


class ByteWriter:
    __slots__ = ("out",)

    def __init__(self) -> None:
        self.out = bytearray()

    def i16(self, v: int) -> ByteWriter:
        self.out += _I16.pack(v)
        return self

    def i32(self, v: int) -> ByteWriter:
        self.out += _I32.pack(v)
        return self

    def i64(self, v: int) -> ByteWriter:
        self.out += _I64.pack(v)
        return self

    def string(self, v: str | None) -> ByteWriter:
        if v is None:
            return self.i16(-1)
        data = v.encode("utf-8")
        if len(data) > 0x7FFF:
            raise ValueError(f"string of {len(data)} bytes does not fit an int16 length")
        self.i16(len(data))
        self.out += data
        return self

    def bytes_(self, v: bytes) -> ByteWriter:
        self.i32(len(v))
        self.out += v
        return self

    def done(self) -> bytes:
        return bytes(self.out)


def encode_offset_key(key: OffsetKey) -> bytes:
    return ByteWriter().i16(OFFSET_KEY_VERSION).string(key.group).string(key.topic).i32(key.partition).done()


def encode_group_key(key: GroupKey) -> bytes:
    return ByteWriter().i16(GROUP_KEY_VERSION).string(key.group).done()


def offset_value_version(value: OffsetValue) -> int:
    return OFFSET_VALUE_VERSION_WITH_EXPIRY if value.expire_timestamp is not None else OFFSET_VALUE_VERSION


def encode_offset_value(value: OffsetValue, version: int | None = None) -> bytes:
    v = offset_value_version(value) if version is None else version
    w = ByteWriter().i16(v).i64(value.offset)
    if v == 3:
        w.i32(value.leader_epoch)
    w.string(value.metadata).i64(value.commit_timestamp)
    if v == 1:
        w.i64(value.commit_timestamp if value.expire_timestamp is None else value.expire_timestamp)
    elif v not in (0, 2, 3):
        raise ValueError(f"unknown offset commit value version {v}")
    return w.done()


def group_value_version(value: GroupValue) -> int:
    static = any(m.group_instance_id is not None for m in value.members)
    return GROUP_VALUE_VERSION_STATIC if static else GROUP_VALUE_VERSION


def encode_group_value(value: GroupValue, version: int | None = None) -> bytes:
    v = group_value_version(value) if version is None else version
    if not 0 <= v <= 3:
        raise ValueError(f"unknown group metadata value version {v}")
    w = ByteWriter().i16(v).string(value.protocol_type).i32(value.generation)
    w.string(value.protocol).string(value.leader)
    if v >= 2:
        w.i64(value.current_state_timestamp)
    w.i32(len(value.members))
    for m in value.members:
        w.string(m.member_id)
        if v >= 3:
            w.string(m.group_instance_id)
        w.string(m.client_id).string(m.client_host)
        if v >= 1:
            w.i32(m.rebalance_timeout_ms)
        w.i32(m.session_timeout_ms).bytes_(m.subscription).bytes_(m.assignment)
    return w.done()


# -- reading ----------------------------------------------------------------------------------------


class ByteReader:
    __slots__ = ("data", "pos", "what")

    def __init__(self, data: bytes | memoryview, what: str) -> None:
        self.data = bytes(data)
        self.pos = 0
        self.what = what

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise CorruptCoordinatorRecordError(
                f"{self.what}: needs {n} bytes at position {self.pos}, only {len(self.data) - self.pos} left"
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def i16(self) -> int:
        return int(_I16.unpack(self.take(2))[0])

    def i32(self) -> int:
        return int(_I32.unpack(self.take(4))[0])

    def i64(self) -> int:
        return int(_I64.unpack(self.take(8))[0])

    def nullable_string(self) -> str | None:
        n = self.i16()
        if n < 0:
            return None
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError as e:
            raise CorruptCoordinatorRecordError(f"{self.what}: string is not UTF-8: {e}") from None

    def string(self) -> str:
        return self.nullable_string() or ""

    def bytes_(self) -> bytes:
        n = self.i32()
        return b"" if n < 0 else self.take(n)

    def count(self) -> int:
        n = self.i32()
        # every element takes at least two bytes: reject counts the data cannot hold
        if n < 0 or n > (len(self.data) - self.pos) // 2:
            raise CorruptCoordinatorRecordError(f"{self.what}: bad array length {n}")
        return n


def decode_key(data: bytes | memoryview | None) -> OffsetKey | GroupKey:
    if data is None:
        raise CorruptCoordinatorRecordError("a __consumer_offsets record needs a key")
    r = ByteReader(data, "key")
    version = r.i16()
    if version in (0, 1):
        return OffsetKey(r.string(), r.string(), r.i32())
    if version == 2:
        return GroupKey(r.string())
    raise CorruptCoordinatorRecordError(f"unknown __consumer_offsets key version {version}")


def decode_offset_value(data: bytes | memoryview) -> OffsetValue:
    r = ByteReader(data, "offset commit value")
    version = r.i16()
    if version == 0:
        offset, metadata, ts = r.i64(), r.string(), r.i64()
        return OffsetValue(offset, metadata, ts)
    if version == 1:
        offset, metadata, ts, expire = r.i64(), r.string(), r.i64(), r.i64()
        return OffsetValue(offset, metadata, ts, expire_timestamp=None if expire < 0 else expire)
    if version == 2:
        offset, metadata, ts = r.i64(), r.string(), r.i64()
        return OffsetValue(offset, metadata, ts)
    if version == 3:
        offset, epoch, metadata, ts = r.i64(), r.i32(), r.string(), r.i64()
        return OffsetValue(offset, metadata, ts, leader_epoch=epoch)
    raise CorruptCoordinatorRecordError(f"unknown offset commit value version {version}")


def decode_group_value(data: bytes | memoryview) -> GroupValue:
    r = ByteReader(data, "group metadata value")
    version = r.i16()
    if not 0 <= version <= 3:
        raise CorruptCoordinatorRecordError(f"unknown group metadata value version {version}")
    protocol_type = r.string()
    generation = r.i32()
    protocol = r.nullable_string()
    leader = r.nullable_string()
    state_ts = r.i64() if version >= 2 else -1
    members = []
    for _ in range(r.count()):
        member_id = r.string()
        instance_id = r.nullable_string() if version >= 3 else None
        client_id, client_host = r.string(), r.string()
        rebalance_timeout = r.i32() if version >= 1 else -1
        session_timeout = r.i32()
        if version == 0:
            rebalance_timeout = session_timeout
        members.append(
            MemberValue(
                member_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                r.bytes_(),
                r.bytes_(),
                instance_id,
            )
        )
    return GroupValue(protocol_type, generation, protocol, leader, tuple(members), state_ts)

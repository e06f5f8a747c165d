"""Byte formats and hashing: `__consumer_offsets` keys/values (round trips and hand-decoded
layouts), ConsumerProtocol blobs (cross-checked with kafka-python's), and which partition
coordinates a group (reference vectors)."""

from __future__ import annotations

import pytest
from coordinator_harness import decode_record
from hypothesis import given, settings
from hypothesis import strategies as st

from zkafka.protocol.groups.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from zkafka.protocol.groups.formats import (
    CorruptCoordinatorRecordError,
    GroupKey,
    GroupValue,
    MemberValue,
    OffsetKey,
    OffsetValue,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_key,
    encode_group_value,
    encode_offset_key,
    encode_offset_value,
)
from zkafka.protocol.groups.partitioning import java_abs, java_string_hashcode, offsets_partition_for

text = st.text(max_size=20)
i32 = st.integers(-(2**31), 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)


@pytest.mark.parametrize(
    ("group", "hashcode", "partition"),
    [("test", 3556498, 48), ("my-group", -1906497762, 12), ("Aa", 2112, 12), ("BB", 2112, 12)],
)
def test_reference_vectors(group: str, hashcode: int, partition: int) -> None:
    assert java_string_hashcode(group) == hashcode
    assert offsets_partition_for(group, 50) == partition


def test_abs_of_min_value_and_utf16() -> None:
    assert java_string_hashcode("polygenelubricants") == -(2**31)
    assert offsets_partition_for("polygenelubricants", 50) == 0
    assert java_abs(-(2**31)) == 0 and java_abs(-5) == 5
    assert offsets_partition_for("kcat", 50) == 49
    # a non-BMP character is two UTF-16 code units: 0xD83D 0xDE00
    assert java_string_hashcode("\U0001f600") == (31 * 0xD83D + 0xDE00)
    with pytest.raises(ValueError):
        offsets_partition_for("g", 0)


@settings(max_examples=100, deadline=None)
@given(text, text, i32, i64, text, i64, i32)
def test_offset_records_round_trip(group, topic, partition, offset, metadata, ts, epoch) -> None:  # type: ignore[no-untyped-def]
    key = encode_offset_key(OffsetKey(group, topic, partition))
    assert decode_key(key) == OffsetKey(group, topic, partition)
    v3 = OffsetValue(offset, metadata, ts, epoch)
    assert decode_offset_value(encode_offset_value(v3)) == v3
    v1 = OffsetValue(offset, metadata, ts, epoch, expire_timestamp=max(ts, 0))
    assert decode_offset_value(encode_offset_value(v1)) == OffsetValue(offset, metadata, ts, -1, max(ts, 0))
    decoded = decode_record(key, encode_offset_value(v3))
    assert (decoded["value_version"], decoded["offset"], decoded["leader_epoch"]) == (3, offset, epoch)
    assert decode_record(key, None)["tombstone"]


members = st.builds(
    MemberValue,
    text,
    text,
    text,
    i32,
    i32,
    st.binary(max_size=30),
    st.binary(max_size=30),
    st.one_of(st.none(), text),
)


@settings(max_examples=100, deadline=None)
@given(
    text,
    text,
    i32,
    st.one_of(st.none(), text),
    st.one_of(st.none(), text),
    st.lists(members, max_size=3),
    i64,
)
def test_group_records_round_trip(group, ptype, gen, protocol, leader, ms, state_ts) -> None:  # type: ignore[no-untyped-def]
    value = GroupValue(ptype, gen, protocol, leader, tuple(ms), state_ts)
    data = encode_group_value(value)
    static = any(m.group_instance_id is not None for m in ms)
    assert int.from_bytes(data[:2], "big") == (3 if static else 1)
    back = decode_group_value(data)
    if static:
        assert back == value
    else:  # v1 keeps neither the state timestamp nor (absent anyway) instance ids
        assert back == GroupValue(ptype, gen, protocol, leader, tuple(ms), -1)
    for version in range(4):
        again = decode_group_value(encode_group_value(value, version))
        assert (again.protocol_type, again.generation, again.protocol, again.leader) == (
            ptype,
            gen,
            protocol,
            leader,
        )
        assert [m.member_id for m in again.members] == [m.member_id for m in ms]
    key = encode_group_key(GroupKey(group))
    assert decode_key(key) == GroupKey(group)
    assert decode_record(key, data)["generation"] == gen


def test_v0_and_v2_offset_values_are_read() -> None:
    v0 = b"\x00\x00" + (7).to_bytes(8, "big") + b"\x00\x01m" + (99).to_bytes(8, "big")
    assert decode_offset_value(v0) == OffsetValue(7, "m", 99)
    v2 = b"\x00\x02" + (7).to_bytes(8, "big") + b"\x00\x00" + (5).to_bytes(8, "big")
    assert decode_offset_value(v2) == OffsetValue(7, "", 5)
    with pytest.raises(ValueError):
        encode_offset_value(OffsetValue(1), version=9)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        b"\x00\x07abc",
        b"\x00\x01\x00\x05ab",
        b"\x00\x02\xff\xff",
        b"\x00\x01\x00\x01\xff\x00\x00",
    ],
)
def test_corrupt_keys_raise(data: bytes) -> None:
    with pytest.raises(CorruptCoordinatorRecordError):
        decode_key(data)
        decode_key(data[:-1])


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_garbage_values_raise_only_the_documented_error(data: bytes) -> None:
    for decode in (decode_offset_value, decode_group_value, decode_subscription, decode_assignment):
        try:
            decode(data)
        except CorruptCoordinatorRecordError:
            pass


def test_consumer_protocol_matches_kafka_python() -> None:
    from kafka.protocol.old.consumer_protocol import (
        ConsumerProtocolMemberAssignment_v0 as ConsumerProtocolMemberAssignment,
    )
    from kafka.protocol.old.consumer_protocol import (
        ConsumerProtocolMemberMetadata_v0 as ConsumerProtocolMemberMetadata,
    )

    theirs = ConsumerProtocolMemberMetadata(0, ["a", "b"], b"ud").encode()
    assert decode_subscription(theirs) == Subscription(("a", "b"), b"ud")
    assert encode_subscription(Subscription(("a", "b"), b"ud")) == theirs
    theirs = ConsumerProtocolMemberAssignment(0, [("a", [0, 2]), ("b", [1])], b"").encode()
    assert decode_assignment(theirs) == Assignment({"a": (0, 2), "b": (1,)}, b"")
    assert encode_assignment(Assignment({"a": (0, 2), "b": (1,)}, b"")) == theirs
    # newer versions only append fields: v1 owned partitions and v2 generation are read too
    sub = Subscription(("t",), None, {"t": (3,)}, 7, version=2)
    assert decode_subscription(encode_subscription(sub)) == sub
    assert decode_assignment(b"") == Assignment({})


@settings(max_examples=60, deadline=None)
@given(i64, text, i64, i32, st.one_of(st.none(), st.integers(0, 2**63 - 1)))
def test_every_offset_value_version(offset, metadata, ts, epoch, expire) -> None:  # type: ignore[no-untyped-def]
    value = OffsetValue(offset, metadata, ts, epoch, expire)
    for version in range(5):  # v4 is Kafka's first flexible version: read and written alike
        data = encode_offset_value(value, version)
        assert int.from_bytes(data[:2], "big") == version
        back = decode_offset_value(data)
        assert (back.offset, back.metadata, back.commit_timestamp) == (offset, metadata, ts)
        assert back.leader_epoch == (epoch if version >= 3 else -1)
        assert back.expire_timestamp == (
            (ts if expire is None else expire)
            if version == 1 and ((ts if expire is None else expire) >= 0)
            else None
        )
        assert decode_offset_value(data + b"more") == back  # Kafka ignores bytes after the body


@settings(max_examples=40, deadline=None)
@given(text, i32, st.one_of(st.none(), text), st.lists(members, max_size=3), i64)
def test_every_group_value_version(ptype, gen, protocol, ms, state_ts) -> None:  # type: ignore[no-untyped-def]
    value = GroupValue(ptype, gen, protocol, None, tuple(ms), state_ts)
    for version in range(5):
        back = decode_group_value(encode_group_value(value, version))
        assert back.current_state_timestamp == (state_ts if version >= 2 else -1)
        for m, b in zip(ms, back.members, strict=True):
            assert (b.member_id, b.client_id, b.client_host, b.subscription, b.assignment) == (
                m.member_id,
                m.client_id,
                m.client_host,
                m.subscription,
                m.assignment,
            )
            assert b.session_timeout_ms == m.session_timeout_ms
            assert b.rebalance_timeout_ms == (
                m.rebalance_timeout_ms if version >= 1 else m.session_timeout_ms
            )
            assert b.group_instance_id == (m.group_instance_id if version >= 3 else None)
    with pytest.raises(ValueError):
        encode_group_value(value, 5)


def _group_v1(members: bytes, count: int = 1) -> bytes:
    head = b"\x00\x01" + b"\x00\x08consumer" + b"\x00\x00\x00\x01" + b"\x00\x05range" + b"\xff\xff"
    return head + count.to_bytes(4, "big", signed=True) + members


GOOD_MEMBER = b"\x00\x01m" + b"\x00\x01c" + b"\x00\x01h" + bytes(8) + b"\x00\x00\x00\x00" * 2


@pytest.mark.parametrize(
    "data",
    [
        b"\x00\x05" + bytes(30),  # unknown value version
        b"\xff\xff" + bytes(30),  # negative version
        _group_v1(GOOD_MEMBER, count=2),  # a member short
        _group_v1(GOOD_MEMBER, count=-1),  # negative member count
        _group_v1(b"\xff\xff" + GOOD_MEMBER[3:]),  # null member id (never nullable)
        _group_v1(GOOD_MEMBER[:-4] + b"\xff\xff\xff\xfe"),  # negative bytes length
        _group_v1(GOOD_MEMBER[:-1]),  # truncated
        _group_v1(b"\x00\x02\xc3\x28" + GOOD_MEMBER[3:]),  # not UTF-8
    ],
)
def test_corrupt_group_values_raise(data: bytes) -> None:
    assert decode_group_value(_group_v1(GOOD_MEMBER)).members[0].member_id == "m"
    with pytest.raises(CorruptCoordinatorRecordError):
        decode_group_value(data)


def test_corrupt_offset_values_and_keys_raise() -> None:
    good = encode_offset_value(OffsetValue(1, "m", 2))
    for bad in (good[:-1], good[:10], b"\x00\x09" + good[2:], good[:14] + b"\xff\xff" + good[17:]):
        with pytest.raises(CorruptCoordinatorRecordError):
            decode_offset_value(bad)
    with pytest.raises(CorruptCoordinatorRecordError):
        decode_key(b"\x00\x02\xff\xff")  # a null group: Kafka's key is never null
    with pytest.raises(CorruptCoordinatorRecordError):
        decode_key(None)
    assert decode_key(b"\x00\x00\x00\x01g\x00\x01t\x00\x00\x00\x05") == OffsetKey("g", "t", 5)  # v0 keys


def test_consumer_protocol_lenient_tails_and_newer_versions() -> None:
    sub = Subscription(("t",), b"u", {"t": (1, 2)}, 9, version=2)
    data = encode_subscription(sub)
    # a v2 blob without its generation, or without owned partitions: the fields it has
    assert decode_subscription(data[:-4]) == Subscription(("t",), b"u", {"t": (1, 2)}, -1, 2)
    assert decode_subscription(data[: -4 - 19]) == Subscription(("t",), b"u", {}, -1, 2)
    with pytest.raises(CorruptCoordinatorRecordError):
        decode_subscription(data[:-6])
    # a version newer than Kafka's newest is read with the newest format
    v9 = b"\x00\x09" + encode_subscription(Subscription(("t",), None, {}, 4, 3, "rack"))[2:]
    assert decode_subscription(v9) == Subscription(("t",), None, {}, 4, 9, "rack")
    assignment = encode_assignment(Assignment({"t": (0,)}, b"x"))
    assert decode_assignment(assignment[:-5]) == Assignment({"t": (0,)}, None)
    with pytest.raises(CorruptCoordinatorRecordError):
        decode_assignment(assignment[:-6])
    with pytest.raises(CorruptCoordinatorRecordError):
        decode_subscription(b"\xff\xff" + data[2:])

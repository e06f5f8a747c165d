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

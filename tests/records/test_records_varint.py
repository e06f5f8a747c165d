"""Zigzag varint/varlong and unsigned varint: known encodings, round trips, kafka-python agreement,
and refusal of truncated, overlong and out-of-range input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record import util as kafka_util

from zkafka.records import (
    CorruptRecordError,
    decode_unsigned_varint,
    decode_varint,
    decode_varlong,
    encode_unsigned_varint,
    encode_varint,
    encode_varlong,
    size_of_unsigned_varint,
    size_of_varint,
    size_of_varlong,
)

INT32 = st.integers(min_value=-(1 << 31), max_value=(1 << 31) - 1)
INT64 = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)
UINT32 = st.integers(min_value=0, max_value=(1 << 32) - 1)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, "00"),
        (-1, "01"),
        (1, "02"),
        (63, "7e"),
        (-64, "7f"),
        (64, "8001"),
        (-65, "8101"),
        ((1 << 31) - 1, "feffffff0f"),
        (-(1 << 31), "ffffffff0f"),
    ],
)
def test_varint_known_encodings(value: int, encoded: str) -> None:
    raw = bytes.fromhex(encoded)
    assert encode_varint(value) == raw
    assert decode_varint(raw) == (value, len(raw))
    assert size_of_varint(value) == len(raw)


def test_varlong_extremes() -> None:
    assert encode_varlong((1 << 63) - 1) == bytes.fromhex("feffffffffffffffff01")
    assert encode_varlong(-(1 << 63)) == bytes.fromhex("ffffffffffffffffff01")
    assert decode_varlong(bytes.fromhex("ffffffffffffffffff01")) == (-(1 << 63), 10)


def test_unsigned_varint_known_encodings() -> None:
    assert encode_unsigned_varint(0) == b"\x00"
    assert encode_unsigned_varint(300) == bytes.fromhex("ac02")
    assert encode_unsigned_varint((1 << 32) - 1) == bytes.fromhex("ffffffff0f")
    assert decode_unsigned_varint(bytes.fromhex("00ac02"), 1) == (300, 3)


@settings(max_examples=200, deadline=None)
@given(INT32, st.binary(max_size=3), st.binary(max_size=3))
def test_varint_round_trip_at_any_position(value: int, before: bytes, after: bytes) -> None:
    encoded = encode_varint(value)
    assert len(encoded) == size_of_varint(value)
    for buf in (before + encoded + after, bytearray(before + encoded + after)):
        assert decode_varint(buf, len(before)) == (value, len(before) + len(encoded))
    assert decode_varint(memoryview(encoded)) == (value, len(encoded))


@settings(max_examples=200, deadline=None)
@given(INT64)
def test_varlong_round_trip_and_kafka_python_agreement(value: int) -> None:
    encoded = encode_varlong(value)
    assert decode_varlong(encoded) == (value, len(encoded))
    assert len(encoded) == size_of_varlong(value)
    theirs = bytearray()
    kafka_util.encode_varint(value, theirs.append)  # kafka-python's "varint" is a zigzag int64
    assert bytes(theirs) == encoded
    assert kafka_util.decode_varint(encoded, 0) == (value, len(encoded))


@settings(max_examples=200, deadline=None)
@given(UINT32)
def test_unsigned_varint_round_trip(value: int) -> None:
    encoded = encode_unsigned_varint(value)
    assert decode_unsigned_varint(encoded) == (value, len(encoded))
    assert len(encoded) == size_of_unsigned_varint(value)


@pytest.mark.parametrize(
    ("decode", "raw"),
    [
        (decode_varint, ""),
        (decode_varint, "80"),
        (decode_varint, "ffffff"),
        (decode_varint, "8080808000"),  # fine length, but see the overlong cases below
        (decode_varint, "808080808000"),  # 6 bytes: overlong
        (decode_varint, "ffffffff1f"),  # 5 bytes holding 33 bits
        (decode_varlong, "ffffffffffffffffff"),  # truncated
        (decode_varlong, "8080808080808080808000"),  # 11 bytes
        (decode_varlong, "ffffffffffffffffff03"),  # 65 bits
        (decode_unsigned_varint, "ffffffff10"),  # 2**32
        (decode_unsigned_varint, "8080808080"),  # continuation bit on the 5th byte
    ],
)
def test_bad_encodings_are_corrupt(decode, raw: str) -> None:
    data = bytes.fromhex(raw)
    if raw == "8080808000":
        assert decode(data) == (0, 5)  # a padded zero is accepted, as Kafka's readers do
        return
    with pytest.raises(CorruptRecordError):
        decode(data)


@pytest.mark.parametrize(
    ("encode", "value"),
    [
        (encode_varint, 1 << 31),
        (encode_varint, -(1 << 31) - 1),
        (encode_varlong, 1 << 63),
        (encode_unsigned_varint, -1),
        (encode_unsigned_varint, 1 << 32),
    ],
)
def test_encode_out_of_range(encode, value: int) -> None:
    with pytest.raises(ValueError, match="out of range"):
        encode(value)

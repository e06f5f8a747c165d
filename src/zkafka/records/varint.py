"""Kafka's variable-length integers (protobuf base-128, little-endian groups of 7 bits).

- varint / varlong: zigzag-encoded signed int32 / int64, used inside v2 records.
- unsigned varint: plain uint32, used by flexible protocol versions (compact lengths, tagged fields).

Decoders take any indexable byte buffer and a position and return ``(value, new_position)``.
They refuse truncated input and encodings longer than the type allows (5 bytes for 32 bits,
10 for 64) or whose value does not fit the type: Kafka's own readers reject overlong forms too,
and accepting them would let one value have many encodings.
"""

from __future__ import annotations

from .batch import CorruptRecordError

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
UINT32_MAX = (1 << 32) - 1

# Single-byte encodings, so the common small values cost one list lookup.
_ONE_BYTE = [bytes((i,)) for i in range(0x80)]

Buffer = bytes | bytearray | memoryview


def _encode_raw(raw: int) -> bytes:
    """Base-128 groups of a non-negative int."""
    if raw < 0x80:
        return _ONE_BYTE[raw]
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def _decode_raw(buf: Buffer, pos: int, max_bytes: int, bits: int, kind: str) -> tuple[int, int]:
    """Base-128 groups into a non-negative int of at most `bits` bits and `max_bytes` bytes."""
    start = pos
    result = 0
    shift = 0
    try:
        while True:
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
            if pos - start >= max_bytes:
                raise CorruptRecordError(f"{kind} at byte {start} is longer than {max_bytes} bytes")
    except IndexError:
        raise CorruptRecordError(f"{kind} at byte {start} is truncated") from None
    if result >> bits:
        raise CorruptRecordError(f"{kind} at byte {start} does not fit in {bits} bits")
    return result, pos


def encode_unsigned_varint(value: int) -> bytes:
    if not 0 <= value <= UINT32_MAX:
        raise ValueError(f"unsigned varint out of range: {value}")
    return _encode_raw(value)


def decode_unsigned_varint(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    return _decode_raw(buf, pos, 5, 32, "unsigned varint")


def encode_varint(value: int) -> bytes:
    """Zigzag int32."""
    if not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f"varint (int32) out of range: {value}")
    return _encode_raw((value << 1) ^ (value >> 31))


def decode_varint(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """Zigzag int32."""
    raw, pos = _decode_raw(buf, pos, 5, 32, "varint")
    return (raw >> 1) ^ -(raw & 1), pos


def encode_varlong(value: int) -> bytes:
    """Zigzag int64."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"varlong (int64) out of range: {value}")
    return _encode_raw((value << 1) ^ (value >> 63))


def decode_varlong(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """Zigzag int64."""
    raw, pos = _decode_raw(buf, pos, 10, 64, "varlong")
    return (raw >> 1) ^ -(raw & 1), pos


def size_of_unsigned_varint(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


def size_of_varint(value: int) -> int:
    return size_of_unsigned_varint((value << 1) ^ (value >> 31))


def size_of_varlong(value: int) -> int:
    return size_of_unsigned_varint((value << 1) ^ (value >> 63))

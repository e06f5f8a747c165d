"""Mutations of a generated request: structure-aware ones that use the frame's anatomy (`Slot`s
and record batches from `generate.py`), blind ones (bit flips, truncation, garbage), and frames
of pure noise. Each returns the complete wire bytes (size prefix included) and a label; the
label names the mutation in the summary and in reproducers."""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from zkafka.protocol.api_keys import ApiKey
from zkafka.records import CRC_START
from zkafka.testing.fuzz.generate import INT16, INT32, Built, Slot, write_uvarint

_SIZE: Final = struct.Struct(">i")
# Lengths and counts worth lying with: null, negative, zero, off by one, the type's extremes.
_INT_LIES: Final = (-(2**31), -2, -1, 0, 1, 0x7FFF, 0x8000, 0xFFFF, 10**6, 10**8, 0x7FFFFFFF)
_BYTE_VALUES: Final = (0x00, 0xFF, 0x7F, 0x80, 0x01, 0xFE)


@dataclass(frozen=True, slots=True)
class Wire:
    """What goes on the socket for one frame."""

    data: bytes
    label: str
    api_key: int
    version: int
    expects_response: bool | None  # None: unknown (a mutated frame may or may not be answered)


def framed(payload: bytes | bytearray) -> bytes:
    return _SIZE.pack(len(payload)) + bytes(payload)


def valid(b: Built) -> Wire:
    return Wire(framed(b.payload), "valid", b.api_key, b.version, b.expects_response)


def _set_int(payload: bytearray, slot: Slot, value: int) -> bytearray:
    if slot.compact:
        enc = bytearray()
        write_uvarint(enc, value)
        return payload[: slot.offset] + enc + payload[slot.offset + slot.width :]
    if slot.width == 2:
        payload[slot.offset : slot.offset + 2] = INT16.pack(max(-(2**15), min(value, 2**15 - 1)))
    else:
        payload[slot.offset : slot.offset + 4] = INT32.pack(max(-(2**31), min(value, 2**31 - 1)))
    return payload


def _current(payload: bytearray, slot: Slot) -> int:
    if slot.compact:
        n, shift = 0, 0
        for i in range(slot.width):
            n |= (payload[slot.offset + i] & 0x7F) << shift
            shift += 7
        return n
    fmt = INT16 if slot.width == 2 else INT32
    return int(fmt.unpack_from(payload, slot.offset)[0])


def m_length(b: Built, rng: random.Random) -> bytes | None:
    """One length, count or tagged size set to a lie."""
    if not b.slots:
        return None
    slot = rng.choice(b.slots)
    payload = bytearray(b.payload)
    cur = _current(payload, slot)
    value = rng.choice((*_INT_LIES, cur + 1, cur - 1, cur * 2 + 1, len(payload)))
    if slot.compact and rng.random() < 0.1:  # an overlong varint (never terminates in 5 bytes)
        return framed(payload[: slot.offset] + b"\xff" * 6 + payload[slot.offset + slot.width :])
    return framed(_set_int(payload, slot, value & 0xFFFFFFFF if slot.compact else value))


def m_huge_count(b: Built, rng: random.Random) -> bytes | None:
    """An array count far beyond the bytes that follow."""
    counts = [s for s in b.slots if s.kind == "count"]
    if not counts:
        return None
    slot = rng.choice(counts)
    value = rng.choice((0x7FFFFFFF, 10**7, 2**20, 65536))
    return framed(_set_int(bytearray(b.payload), slot, value))


def m_bitflip(b: Built, rng: random.Random) -> bytes | None:
    payload = bytearray(b.payload)
    for _ in range(rng.choice((1, 1, 2, 4, 8))):
        i = rng.randrange(len(payload))
        payload[i] ^= 1 << rng.randrange(8)
    return framed(payload)


def m_bytes(b: Built, rng: random.Random) -> bytes | None:
    payload = bytearray(b.payload)
    for _ in range(rng.choice((1, 2, 4))):
        payload[rng.randrange(len(payload))] = rng.choice(_BYTE_VALUES)
    return framed(payload)


def m_truncate(b: Built, rng: random.Random) -> bytes | None:
    cut = rng.randrange(0, len(b.payload))
    return framed(b.payload[:cut])


def m_garbage_tail(b: Built, rng: random.Random) -> bytes | None:
    return framed(b.payload + rng.randbytes(rng.choice((1, 2, 7, 64))))


def m_version(b: Built, rng: random.Random, served: Mapping[int, tuple[int, int]]) -> bytes | None:
    """Another version of the same API (the body no longer matches), one out of range, or an
    ApiVersions request at a version the broker does not serve (it must answer that one)."""
    lo, hi = served[b.api_key]
    version = rng.choice((hi + 1, hi + 10, -1, 32767, lo - 1, rng.randint(lo, hi), rng.randint(lo, hi)))
    payload = bytearray(b.payload)
    payload[2:4] = INT16.pack(max(-(2**15), min(version, 2**15 - 1)))
    return framed(payload)


def m_api_key(b: Built, rng: random.Random, served: Mapping[int, tuple[int, int]]) -> bytes | None:
    """The header names another API (served or not); the body is the original one."""
    key = rng.choice((*served, -1, 10000, 29, 57, 67))
    payload = bytearray(b.payload)
    payload[0:2] = INT16.pack(key)
    return framed(payload)


def m_records(b: Built, rng: random.Random) -> bytes | None:
    """Produce: a record batch with a wrong CRC, length, magic, attributes or record count."""
    if not b.batches:
        return None
    offset, size = rng.choice(b.batches)
    payload = bytearray(b.payload)
    what = rng.randrange(6)
    if what == 0:  # CRC
        payload[offset + 17] ^= 0xFF
    elif what == 1:  # batchLength
        payload[offset + 8 : offset + 12] = INT32.pack(rng.choice((-1, 0, size * 4, 0x7FFFFFFF, size - 13)))
    elif what == 2:  # magic
        payload[offset + 16] = rng.choice((0, 1, 3, 0xFF))
    elif what == 3:  # recordsCount, CRC left stale or recomputed
        payload[offset + 57 : offset + 61] = INT32.pack(rng.choice((-1, 0, 10**6, 0x7FFFFFFF)))
        if rng.random() < 0.5:
            _fix_crc(payload, offset, size)
    elif what == 4:  # attributes (codec 5-7, control bit) with a correct CRC
        payload[offset + 21 : offset + 23] = INT16.pack(rng.choice((5, 6, 7, 0x20, 0x10, -1)))
        _fix_crc(payload, offset, size)
    else:  # a bit flipped inside the records, then the CRC made right again
        if size > 61:
            payload[offset + rng.randrange(61, size)] ^= 1 << rng.randrange(8)
        _fix_crc(payload, offset, size)
    return framed(payload)


def _fix_crc(payload: bytearray, offset: int, size: int) -> None:
    from zkafka.records import compute_crc

    crc = compute_crc(payload, offset + CRC_START, size - CRC_START)
    payload[offset + 17 : offset + 21] = struct.pack(">I", crc)


def m_splice(b: Built, rng: random.Random, other: Built) -> bytes | None:
    i = rng.randrange(len(b.payload))
    j = rng.randrange(len(other.payload))
    return framed(b.payload[:i] + other.payload[j:])


def m_size_lie(b: Built, rng: random.Random) -> bytes | None:
    """The size prefix lies: negative, larger than the socket limit, or a little too large (the
    broker waits for bytes that never come; the fuzzer hangs up), or too small (the rest is read
    as the next frame)."""
    n = len(b.payload)
    size = rng.choice((-1, -(2**31), 0x7FFFFFFF, 200 << 20, n + 1, n + 100, max(n - 3, 0), 0))
    return _SIZE.pack(size) + bytes(b.payload)


STRUCTURED: Final[dict[str, Callable[[Built, random.Random], bytes | None]]] = {
    "length": m_length,
    "huge_count": m_huge_count,
    "bitflip": m_bitflip,
    "bytes": m_bytes,
    "truncate": m_truncate,
    "garbage_tail": m_garbage_tail,
    "records": m_records,
    "size_lie": m_size_lie,
}


def mutate(b: Built, rng: random.Random, served: Mapping[int, tuple[int, int]], other: Built) -> Wire:
    """One structure-aware or blind mutation of `b` (records mutations for Produce mostly)."""
    data: bytes | None = None
    label = ""
    while data is None:
        r = rng.random()
        if b.batches and rng.random() < 0.3:
            label, data = "records", m_records(b, rng)
        elif r < 0.08:
            label, data = "version", m_version(b, rng, served)
        elif r < 0.13:
            label, data = "api_key", m_api_key(b, rng, served)
        elif r < 0.18:
            label, data = "splice", m_splice(b, rng, other)
        else:
            label = rng.choice(list(STRUCTURED))
            data = STRUCTURED[label](b, rng)
    return Wire(data, label, b.api_key, b.version, None)


def noise(rng: random.Random, served: Mapping[int, tuple[int, int]]) -> Wire:
    """A frame of random bytes, sometimes behind a valid api key and version."""
    body = rng.randbytes(rng.choice((0, 1, 3, 8, 20, 64, 300)))
    if rng.random() < 0.5:
        key = rng.choice(list(served))
        lo, hi = served[key]
        version = rng.randint(lo, hi)
        payload = INT16.pack(key) + INT16.pack(version) + INT32.pack(rng.randrange(2**31)) + body
        return Wire(framed(payload), "noise_header", key, version, None)
    return Wire(framed(body), "noise", -1, -1, None)


def api_versions_unsupported(rng: random.Random, correlation_id: int) -> Wire:
    """ApiVersions at a version above the broker's: it must answer (v0 UNSUPPORTED_VERSION)."""
    version = rng.choice((3, 4, 100, 32767))
    payload = INT16.pack(ApiKey.API_VERSIONS) + INT16.pack(version) + INT32.pack(correlation_id)
    payload += INT16.pack(4) + b"fuzz" + (b"\x00" if rng.random() < 0.5 else b"")
    return Wire(framed(payload), "api_versions_unsupported", ApiKey.API_VERSIONS, version, True)

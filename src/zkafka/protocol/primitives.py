"""Kafka's primitive wire types, as small functions the compiled codecs call.

Layouts (big-endian; `reference/wire-protocol.md` §2.1)::

    int8/16/32/64, uint16/32, float64   fixed width
    bool                                1 byte, 0 false, anything else true on decode
    string / bytes                      int16 / int32 length, then the data; -1 = null
    array                               int32 count, then the elements; -1 = null
    uuid                                16 raw bytes
    unsigned varint                     7 bits per byte, low group first, high bit = more
    compact string / bytes / array      unsigned varint N+1, then the data; 0 = null
    tagged fields                       uvarint count, then (uvarint tag, uvarint size, data)*

Decoders take ``(buf, p, end)`` where `buf` is a memoryview of the whole frame, `p` the read
position and `end` its length, and return ``(value, new_p)``. They never read past `end`: a
short or inconsistent input raises `WireFormatError` (a ValueError), which the codec turns into
its documented exceptions. Encoders append to a bytearray.
"""

from __future__ import annotations

import struct
import uuid
from typing import Final

from zkafka.protocol.message import DeferredRecords

INT8: Final = struct.Struct(">b")
INT16: Final = struct.Struct(">h")
INT32: Final = struct.Struct(">i")
INT64: Final = struct.Struct(">q")
UINT16: Final = struct.Struct(">H")
UINT32: Final = struct.Struct(">I")
FLOAT64: Final = struct.Struct(">d")

# struct format character and size of every fixed-width primitive
FIXED: Final[dict[str, tuple[str, int]]] = {
    "int8": ("b", 1),
    "int16": ("h", 2),
    "int32": ("i", 4),
    "int64": ("q", 8),
    "uint16": ("H", 2),
    "uint32": ("I", 4),
    "float64": ("d", 8),
    "bool": ("?", 1),
}

NULL_INT16: Final = b"\xff\xff"
NULL_INT32: Final = b"\xff\xff\xff\xff"

# Records values at least this large are handed to the network layer as separate parts by
# `encode_response_parts` instead of being copied into the header buffer.
SPLICE_THRESHOLD: Final = 4096

_MAX_UVARINT_BYTES: Final = 5  # Kafka's unsigned varints carry at most 32 bits


class WireFormatError(ValueError):
    """The bytes do not form a valid value of the expected type."""


def truncated(what: str) -> WireFormatError:
    return WireFormatError(f"truncated {what}")


# -- unsigned varint -------------------------------------------------------------------------------


def write_uvarint(out: bytearray, n: int) -> None:
    if 0 <= n < 0x80:
        out.append(n)
    elif 0 <= n < 0x4000:  # records lengths of a few KiB: the second most common case
        out += bytes(((n & 0x7F) | 0x80, n >> 7))
    elif 0 <= n <= 0xFFFFFFFF:
        while n >= 0x80:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        out.append(n)
    else:
        raise struct.error(f"unsigned varint out of range: {n}")


def read_uvarint(buf: memoryview, p: int, end: int) -> tuple[int, int]:
    if p + 2 < end:  # fast paths: up to three bytes (values below 2**21) without a loop
        b0 = buf[p]
        if b0 < 0x80:
            return b0, p + 1
        b1 = buf[p + 1]
        if b1 < 0x80:
            return (b0 & 0x7F) | (b1 << 7), p + 2
        b2 = buf[p + 2]
        if b2 < 0x80:
            return (b0 & 0x7F) | ((b1 & 0x7F) << 7) | (b2 << 14), p + 3
    result = 0
    shift = 0
    for i in range(_MAX_UVARINT_BYTES):
        if p >= end:
            raise truncated("varint")
        b = buf[p]
        p += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            if i == _MAX_UVARINT_BYTES - 1 and b > 0x0F:
                raise WireFormatError("varint exceeds 32 bits")
            return result, p
        shift += 7
    raise WireFormatError("varint longer than 5 bytes")


# -- lengths ---------------------------------------------------------------------------------------


def _classic_len(buf: memoryview, p: int, end: int, fmt: struct.Struct, what: str) -> tuple[int, int]:
    size = fmt.size
    if p + size > end:
        raise truncated(f"{what} length")
    (n,) = fmt.unpack_from(buf, p)
    return n, p + size


def read_compact_len(buf: memoryview, p: int, end: int) -> tuple[int, int]:
    """A compact length or count (stored as N+1); -1 means null."""
    n, p = read_uvarint(buf, p, end)
    return n - 1, p


_compact_len = read_compact_len


def _take(buf: memoryview, p: int, end: int, n: int, what: str, nullable: bool) -> tuple[int, int] | None:
    """Validate a decoded length; None means a null value, else (start, stop) of the data."""
    if n < 0:
        if n == -1 and nullable:
            return None
        raise WireFormatError(f"invalid {what} length {n}")
    stop = p + n
    if stop > end:
        raise truncated(what)
    return p, stop


# -- strings ---------------------------------------------------------------------------------------


def _utf8(buf: memoryview, start: int, stop: int) -> str:
    return str(buf[start:stop], "utf-8")


def read_string(buf: memoryview, p: int, end: int) -> tuple[str, int]:
    n, p = _classic_len(buf, p, end, INT16, "string")
    span = _take(buf, p, end, n, "string", False)
    assert span is not None
    return _utf8(buf, *span), span[1]


def read_nullable_string(buf: memoryview, p: int, end: int) -> tuple[str | None, int]:
    n, p = _classic_len(buf, p, end, INT16, "string")
    span = _take(buf, p, end, n, "string", True)
    if span is None:
        return None, p
    return _utf8(buf, *span), span[1]


def read_compact_string(buf: memoryview, p: int, end: int) -> tuple[str, int]:
    n, p = _compact_len(buf, p, end)
    span = _take(buf, p, end, n, "string", False)
    assert span is not None
    return _utf8(buf, *span), span[1]


def read_compact_nullable_string(buf: memoryview, p: int, end: int) -> tuple[str | None, int]:
    n, p = _compact_len(buf, p, end)
    span = _take(buf, p, end, n, "string", True)
    if span is None:
        return None, p
    return _utf8(buf, *span), span[1]


def write_string(out: bytearray, s: str) -> None:
    data = s.encode()
    out += INT16.pack(len(data))
    out += data


def write_nullable_string(out: bytearray, s: str | None) -> None:
    if s is None:
        out += NULL_INT16
    else:
        write_string(out, s)


def write_compact_string(out: bytearray, s: str) -> None:
    data = s.encode()
    write_uvarint(out, len(data) + 1)
    out += data


def write_compact_nullable_string(out: bytearray, s: str | None) -> None:
    if s is None:
        out.append(0)
    else:
        write_compact_string(out, s)


# -- bytes (copied: small values such as group metadata) ------------------------------------------


def read_bytes(buf: memoryview, p: int, end: int) -> tuple[bytes, int]:
    n, p = _classic_len(buf, p, end, INT32, "bytes")
    span = _take(buf, p, end, n, "bytes", False)
    assert span is not None
    return buf[span[0] : span[1]].tobytes(), span[1]


def read_nullable_bytes(buf: memoryview, p: int, end: int) -> tuple[bytes | None, int]:
    n, p = _classic_len(buf, p, end, INT32, "bytes")
    span = _take(buf, p, end, n, "bytes", True)
    if span is None:
        return None, p
    return buf[span[0] : span[1]].tobytes(), span[1]


def read_compact_bytes(buf: memoryview, p: int, end: int) -> tuple[bytes, int]:
    n, p = _compact_len(buf, p, end)
    span = _take(buf, p, end, n, "bytes", False)
    assert span is not None
    return buf[span[0] : span[1]].tobytes(), span[1]


def read_compact_nullable_bytes(buf: memoryview, p: int, end: int) -> tuple[bytes | None, int]:
    n, p = _compact_len(buf, p, end)
    span = _take(buf, p, end, n, "bytes", True)
    if span is None:
        return None, p
    return buf[span[0] : span[1]].tobytes(), span[1]


def write_bytes(out: bytearray, b: bytes | bytearray | memoryview) -> None:
    out += INT32.pack(memoryview(b).nbytes)
    out += b


def write_nullable_bytes(out: bytearray, b: bytes | bytearray | memoryview | None) -> None:
    if b is None:
        out += NULL_INT32
    else:
        write_bytes(out, b)


def write_compact_bytes(out: bytearray, b: bytes | bytearray | memoryview) -> None:
    write_uvarint(out, memoryview(b).nbytes + 1)
    out += b


def write_compact_nullable_bytes(out: bytearray, b: bytes | bytearray | memoryview | None) -> None:
    if b is None:
        out.append(0)
    else:
        write_compact_bytes(out, b)


# -- records (zero-copy on decode, spliced on encode) ----------------------------------------------


def read_records(buf: memoryview, p: int, end: int) -> tuple[memoryview | None, int]:
    n, p = _classic_len(buf, p, end, INT32, "records")
    span = _take(buf, p, end, n, "records", True)
    if span is None:
        return None, p
    return buf[span[0] : span[1]], span[1]


def read_compact_records(buf: memoryview, p: int, end: int) -> tuple[memoryview | None, int]:
    n, p = _compact_len(buf, p, end)
    span = _take(buf, p, end, n, "records", True)
    if span is None:
        return None, p
    return buf[span[0] : span[1]], span[1]


def _chunk_size(chunk: object) -> int:
    if isinstance(chunk, bytes | bytearray):
        return len(chunk)
    if isinstance(chunk, memoryview):
        return chunk.nbytes
    if isinstance(chunk, DeferredRecords):
        size = chunk.size
        if not isinstance(size, int) or size < 0:
            raise ValueError(f"{type(chunk).__name__}.size must be a non-negative int, not {size!r}")
        return size
    raise TypeError(
        f"records must be bytes-like, a list of them, or DeferredRecords, not {type(chunk).__name__}"
    )


def records_size(value: object) -> int:
    if isinstance(value, list | tuple):
        return sum(_chunk_size(c) for c in value)
    return _chunk_size(value)


def write_records(out: bytearray, parts: list[object] | None, value: object, compact: bool) -> bytearray:
    """Append a records value; returns the buffer to keep writing to.

    With ``parts`` None everything is copied into `out`. With a parts list, large buffers and
    every `DeferredRecords` become parts of their own: the bytes written so far are moved to
    `parts`, the payload follows, and a fresh bytearray is returned for what comes next.
    """
    kind = type(value)
    if kind is memoryview or kind is bytes or kind is bytearray:  # the hot path: one buffer
        size = value.nbytes if kind is memoryview else len(value)  # type: ignore[attr-defined,arg-type]
        if compact:
            write_uvarint(out, size + 1)
        else:
            out += INT32.pack(size)
        if parts is not None and size >= SPLICE_THRESHOLD:
            parts.append(out)
            parts.append(value)
            return bytearray()
        out += value  # type: ignore[operator]
        return out
    if value is None:
        out += b"\x00" if compact else NULL_INT32
        return out
    chunks = value if isinstance(value, list | tuple) else (value,)
    size = sum(_chunk_size(c) for c in chunks)
    if compact:
        write_uvarint(out, size + 1)
    else:
        out += INT32.pack(size)
    for chunk in chunks:
        splice = isinstance(chunk, DeferredRecords) or _chunk_size(chunk) >= SPLICE_THRESHOLD
        if parts is not None and splice:
            if out:
                parts.append(out)
                out = bytearray()
            parts.append(chunk)
        elif isinstance(chunk, DeferredRecords):
            out += chunk.materialize()
        else:
            out += chunk  # type: ignore[operator]  # bytes-like, checked by _chunk_size
    return out


# -- uuid ------------------------------------------------------------------------------------------


def read_uuid(buf: memoryview, p: int, end: int) -> tuple[uuid.UUID, int]:
    stop = p + 16
    if stop > end:
        raise truncated("uuid")
    return uuid.UUID(bytes=buf[p:stop].tobytes()), stop


def write_uuid(out: bytearray, u: uuid.UUID) -> None:
    out += u.bytes


# -- arrays ----------------------------------------------------------------------------------------


def read_array_len(
    buf: memoryview, p: int, end: int, compact: bool, nullable: bool, min_item: int
) -> tuple[int, int]:
    """The element count (-1 for null), checked against the bytes left so a hostile count
    can neither allocate nor loop beyond what the frame could hold."""
    if compact:
        n, p = _compact_len(buf, p, end)
    else:
        n, p = _classic_len(buf, p, end, INT32, "array")
    if n < 0:
        if n == -1 and nullable:
            return -1, p
        raise WireFormatError(f"invalid array length {n}")
    if n * min_item > end - p:
        raise truncated("array")
    return n, p


def write_array_len(out: bytearray, n: int, compact: bool) -> None:
    if compact:
        write_uvarint(out, n + 1)
    else:
        out += INT32.pack(n)


def write_null_array(out: bytearray, compact: bool) -> None:
    if compact:
        out.append(0)
    else:
        out += NULL_INT32


def read_tag_count(buf: memoryview, p: int, end: int) -> tuple[int, int]:
    """A tag section's field count, checked against the bytes left (each field takes at least
    two: its tag and its size)."""
    n, p = read_uvarint(buf, p, end)
    if n * 2 > end - p:
        raise truncated("tagged fields")
    return n, p


def skip_tagged_field(buf: memoryview, p: int, end: int) -> tuple[int, int, int]:
    """Read one tagged field's header: returns (tag, data start, data stop)."""
    tag, p = read_uvarint(buf, p, end)
    size, p = read_uvarint(buf, p, end)
    stop = p + size
    if stop > end:
        raise truncated("tagged field")
    return tag, p, stop

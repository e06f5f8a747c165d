"""Message sets of magic 0 and 1 (Kafka 0.8-0.10): read them in, write them out.

zkafka stores RecordBatch v2 only. Old clients still send message sets with Produce v0-v2 (and some
with later versions) and can only read them back from Fetch v0-v3, so the broker converts, as Kafka's
LogValidator does on the way in and its down-conversion on the way out.

Layout of one message (big-endian)::

    offset int64 | message_size int32 | crc uint32 | magic int8 | attributes int8
    | timestamp int64 (magic 1 only) | key bytes (int32 length, -1 = null) | value bytes (same)

The CRC is CRC-32 (IEEE, zlib's) over magic..value. Attributes: bits 0-2 the codec (0 none, 1 gzip,
2 snappy, 3 lz4), bit 3 (magic 1) LogAppendTime. A compressed message is a *wrapper* whose value
is a compressed message set of inner messages: with magic 1 the inner offsets are relative
(0..n-1) and the wrapper carries the absolute offset of the last one; with magic 0 the inner offsets
are absolute. A message set may end with a partial message (Fetch cuts at a byte limit): readers
ignore it.

Down-conversion is lazy and bounded (KIP-283): `down_convert_within` takes the stored batches one
at a time and stops at the fetch's byte limit, cutting only between whole messages, so a large
fetch is never converted (or held) at once.

Bad input raises `CorruptRecordError` (wrong CRC, truncated or inconsistent sizes, nested wrappers)
or `InvalidRecordError` (unknown magic or codec): the produce path answers CORRUPT_MESSAGE /
INVALID_RECORD, never crashes.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from .batch import CorruptRecordError, InvalidRecordError, iter_headers
from .compression import GZIP, LZ4, NONE, SNAPPY, compress, decompress
from .record import Record, iter_records

__all__ = [
    "MESSAGE_OVERHEAD_V0",
    "MESSAGE_OVERHEAD_V1",
    "Converted",
    "LegacyMessage",
    "decode_message_set",
    "down_convert",
    "down_convert_within",
    "encode_message_set",
    "is_legacy_message_set",
    "to_records",
    "wrapper_codec",
]

MAGIC_OFFSET = 16
MESSAGE_OVERHEAD_V0 = 8 + 4 + 4 + 1 + 1 + 4 + 4
"""offset, size, crc, magic, attributes, key length, value length."""
MESSAGE_OVERHEAD_V1 = MESSAGE_OVERHEAD_V0 + 8
LEGACY_CODECS = (NONE, GZIP, SNAPPY, LZ4)
CODEC_MASK = 0x07
LOG_APPEND_TIME_MASK = 0x08
NO_TIMESTAMP = -1
MAX_INNER_DEPTH = 1

_OFFSET_SIZE = struct.Struct(">qi")
_CRC_MAGIC_ATTR = struct.Struct(">IBb")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class LegacyMessage:
    """One message as a client sees it: absolute offset, timestamp (-1 for magic 0), key, value.
    `log_append_time` says the timestamp is the broker's append time."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    magic: int
    log_append_time: bool = False


def is_legacy_message_set(buf: bytes | bytearray | memoryview) -> bool:
    """The first entry is a magic 0/1 message (magic sits at byte 16 in all formats)."""
    return len(buf) > MAGIC_OFFSET and buf[MAGIC_OFFSET] in (0, 1)


# -- reading ---------------------------------------------------------------------------------------


def _read_bytes(view: memoryview, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise CorruptRecordError(f"message truncated before its {what} length")
    (length,) = _INT32.unpack_from(view, pos)
    pos += 4
    if length == -1:
        return None, pos
    if length < 0 or pos + length > end:
        raise CorruptRecordError(f"{what} length {length} exceeds the {end - pos} bytes left")
    return bytes(view[pos : pos + length]), pos + length


Entry = tuple[int, int, int, int, int, bytes | None, bytes | None]


def _iter_entries(view: memoryview) -> Iterator[Entry]:
    """(offset, magic, attributes, timestamp, crc, key, value) per whole, CRC-checked message."""
    pos, total = 0, len(view)
    while pos + 12 <= total:
        offset, size = _OFFSET_SIZE.unpack_from(view, pos)
        if size < MESSAGE_OVERHEAD_V0 - 12:
            raise CorruptRecordError(f"message size {size} at offset {offset} is below the minimum")
        end = pos + 12 + size
        if end > total:
            return  # a partial message at the end of a fetch-sized slice: not an error
        crc, magic, attributes = _CRC_MAGIC_ATTR.unpack_from(view, pos + 12)
        if magic not in (0, 1):
            raise InvalidRecordError(f"message magic {magic} at offset {offset} is not 0 or 1")
        if zlib.crc32(view[pos + 16 : end]) != crc:
            raise CorruptRecordError(f"message at offset {offset} fails its CRC-32 check")
        cur = pos + 18
        timestamp = NO_TIMESTAMP
        if magic == 1:
            if cur + 8 > end:
                raise CorruptRecordError(f"message at offset {offset} is truncated in its timestamp")
            (timestamp,) = _INT64.unpack_from(view, cur)
            cur += 8
        key, cur = _read_bytes(view, cur, end, "key")
        value, cur = _read_bytes(view, cur, end, "value")
        if cur != end:
            raise CorruptRecordError(f"message at offset {offset} has {end - cur} bytes after its value")
        yield offset, magic, attributes, timestamp, crc, key, value
        pos = end


def decode_message_set(buf: bytes | bytearray | memoryview) -> list[LegacyMessage]:
    """Every message of a magic 0/1 message set, wrappers opened, with absolute offsets as the
    producer (or broker) wrote them."""
    out: list[LegacyMessage] = []
    _decode_into(memoryview(buf), out, depth=0)
    return out


def _decode_into(view: memoryview, out: list[LegacyMessage], depth: int) -> None:
    for offset, magic, attributes, timestamp, _crc, key, value in _iter_entries(view):
        codec = attributes & CODEC_MASK
        append_time = bool(magic == 1 and attributes & LOG_APPEND_TIME_MASK)
        if codec == NONE:
            out.append(LegacyMessage(offset, timestamp, key, value, magic, append_time))
            continue
        if codec not in LEGACY_CODECS:
            raise InvalidRecordError(f"message at offset {offset} uses unknown codec {codec}")
        if depth >= MAX_INNER_DEPTH:
            raise CorruptRecordError(f"compressed message at offset {offset} nested in another")
        if value is None:
            raise CorruptRecordError(f"compressed message at offset {offset} has no value")
        inner: list[LegacyMessage] = []
        _decode_into(memoryview(decompress(codec, value)), inner, depth + 1)
        if not inner:
            raise CorruptRecordError(f"compressed message at offset {offset} holds no messages")
        if magic == 1:
            # Relative inner offsets: the wrapper's offset is that of the last inner message. A
            # producer's wrapper (offset not yet assigned, base < 0) keeps them as they are, as
            # Kafka's reader does.
            base = max(offset - inner[-1].offset, 0)
            inner = [
                LegacyMessage(
                    base + m.offset,
                    timestamp if append_time else m.timestamp,
                    m.key,
                    m.value,
                    m.magic,
                    append_time,
                )
                for m in inner
            ]
        out.extend(inner)


def to_records(messages: Sequence[LegacyMessage]) -> list[Record]:
    """The messages as v2 records with offsets 0..n-1 (the log assigns the real ones), as Kafka's
    LogValidator up-converts: magic 0 has no timestamp (-1)."""
    return [Record(i, m.timestamp, m.key, m.value) for i, m in enumerate(messages)]


def wrapper_codec(buf: bytes | bytearray | memoryview) -> int:
    """The codec of the first message of a message set (what the producer asked for)."""
    if len(buf) <= MAGIC_OFFSET + 1:
        return NONE
    return buf[MAGIC_OFFSET + 1] & CODEC_MASK


# -- writing ---------------------------------------------------------------------------------------


def _message(
    offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    body = bytearray(_CRC_MAGIC_ATTR.size)
    struct.pack_into(">Bb", body, 4, magic, attributes)
    if magic == 1:
        body += _INT64.pack(timestamp)
    for field in (key, value):
        if field is None:
            body += _INT32.pack(-1)
        else:
            body += _INT32.pack(len(field))
            body += field
    struct.pack_into(">I", body, 0, zlib.crc32(memoryview(body)[4:]))
    return _OFFSET_SIZE.pack(offset, len(body)) + bytes(body)


def encode_message_set(
    records: Sequence[Record], magic: int, *, codec: int = NONE, log_append_time: bool = False
) -> bytes:
    """`records` (absolute offsets) as a magic 0/1 message set: one message per record, or with a
    codec one wrapper holding them all (its offset the last record's, inner offsets relative for
    magic 1 and absolute for magic 0), as Kafka down-converts a v2 batch for Fetch v0-v3. Headers
    cannot be carried and are dropped; magic 0 drops timestamps."""
    if magic not in (0, 1):
        raise ValueError(f"magic {magic} is not 0 or 1")
    if not records:
        return b""
    time_attr = LOG_APPEND_TIME_MASK if (magic == 1 and log_append_time) else 0
    if codec == NONE:
        return b"".join(_message(r.offset, magic, time_attr, r.timestamp, r.key, r.value) for r in records)
    if codec not in LEGACY_CODECS:
        codec = GZIP  # zstd cannot be read by a client that fetches below v4 (Kafka does the same)
    # magic 1: inner offsets relative to the first record (gaps from compaction kept), and the
    # wrapper carries the last one's absolute offset; magic 0: inner offsets absolute.
    first, last = records[0].offset, records[-1].offset
    inner = b"".join(
        _message(r.offset - first if magic == 1 else r.offset, magic, 0, r.timestamp, r.key, r.value)
        for r in records
    )
    max_ts = max(r.timestamp for r in records)
    return _message(last, magic, codec | time_attr, max_ts, None, compress(codec, inner))


def down_convert(batches: bytes | bytearray | memoryview, magic: int) -> bytes:
    """Stored RecordBatch v2 bytes as a magic 0/1 message set for Fetch v0-v3: each compressed
    batch becomes one wrapper with the batch's codec (zstd as gzip), each uncompressed batch one
    message per record; control batches are left out; a partial trailing batch is ignored."""
    out = bytearray()
    for header in iter_headers(batches):
        if header.is_control:
            continue
        records = list(iter_records(batches, header))
        append_time = bool(header.attributes & LOG_APPEND_TIME_MASK)
        out += encode_message_set(records, magic, codec=header.compression, log_append_time=append_time)
    return bytes(out)


@dataclass(slots=True)
class Converted:
    """A down-converted fetch: message-set chunks (one per stored batch, the last perhaps cut
    between messages), their total size, and how many records they hold."""

    chunks: list[bytes]
    size: int = 0
    records: int = 0


def down_convert_within(
    batches: Iterable[bytes | memoryview], magic: int, max_bytes: int, first_offset: int = 0
) -> Converted:
    """Convert stored RecordBatch v2 batches, taken one at a time from `batches` (read lazily by the
    caller), until the output would pass `max_bytes`: an uncompressed batch is cut between its
    messages, a compressed one (one wrapper) is kept whole or left out. The first message is always
    whole even above the limit, so an old client makes progress (as KIP-74 for v2 batches); old
    clients cannot use part of a message, so none is ever sent. Records of an uncompressed batch
    below `first_offset` (the fetch offset) are left out, as Kafka does, so the limit is spent on
    what the client asked for; a compressed wrapper keeps them (it cannot be split)."""
    out = Converted([])
    for batch in batches:
        remaining = max_bytes - out.size
        if out.chunks and remaining <= 0:
            break
        for header in iter_headers(batch):
            if header.is_control:
                continue
            records = list(iter_records(batch, header))
            if header.compression == NONE and records and records[0].offset < first_offset:
                records = [r for r in records if r.offset >= first_offset]
                if not records:
                    continue
            append_time = bool(header.attributes & LOG_APPEND_TIME_MASK)
            chunk = encode_message_set(records, magic, codec=header.compression, log_append_time=append_time)
            count, full = len(records), len(chunk) > remaining
            if full and header.compression != NONE and out.chunks:
                return out
            if full and header.compression == NONE:
                # one message per record: keep the whole ones that fit (at least one)
                cut, count = _whole_messages(chunk, remaining, at_least_one=not out.chunks)
                chunk = chunk[:cut]
            if chunk:
                out.chunks.append(chunk)
                out.size += len(chunk)
                out.records += count
            if full or out.size >= max_bytes:
                return out
    return out


def _whole_messages(message_set: bytes, limit: int, *, at_least_one: bool) -> tuple[int, int]:
    """(bytes, messages) of the longest prefix of whole messages within `limit`."""
    pos = count = 0
    while pos + _OFFSET_SIZE.size <= len(message_set):
        _, size = _OFFSET_SIZE.unpack_from(message_set, pos)
        end = pos + _OFFSET_SIZE.size + size
        if end > limit and not (at_least_one and count == 0):
            break
        pos, count = end, count + 1
    return pos, count

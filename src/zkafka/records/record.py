"""Records inside a v2 batch: decoding (consumers, tools, compaction) and building (producers, the
cleaner, transaction markers).

Record layout after decompression (`reference/wire-protocol.md` §2.3)::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
    | keyLength varint, key | valueLength varint, value
    | headersCount varint, headersCount x (keyLength varint, key utf-8, valueLength varint, value)

A length of -1 means null (key, value, header value). Header keys are decoded with
``surrogateescape`` so that any bytes a producer sent survive a decode/re-encode unchanged
(compaction rewrites batches), where a strict decoder would refuse the batch and a lenient one
would corrupt the key.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from enum import IntEnum

from crc32c import crc32c

from .batch import (
    _HEADER,
    COMPRESSION_MASK,
    CONTROL_MASK,
    CRC_START,
    DELETE_HORIZON_MASK,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    CorruptRecordError,
    InvalidRecordError,
    iter_headers,
    read_header,
)
from .compression import NONE, compress, decompress
from .varint import INT32_MAX, decode_varint, decode_varlong, encode_varint, encode_varlong

CREATE_TIME = 0
LOG_APPEND_TIME = 1

RecordHeader = tuple[str, bytes | None]
Buffer = bytes | bytearray | memoryview

_NO_HEADERS: tuple[RecordHeader, ...] = ()
_UINT32 = struct.Struct(">I")
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")


@dataclass(frozen=True, slots=True)
class Record:
    """One record with absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[RecordHeader, ...] = ()


# ---------------------------------------------------------------------------------------------
# Decoding

# The frozen dataclass __init__ stores each field through object.__setattr__ by name; writing the
# slots through their descriptors builds the same object in about half the time, which is a
# quarter of the whole per-record cost. This must list every field, in order:
_RECORD_SLOTS = tuple(getattr(Record, f.name).__set__ for f in fields(Record))
if tuple(f.name for f in fields(Record)) != ("offset", "timestamp", "key", "value", "headers"):
    raise ImportError("Record's fields changed: update _decode_records' fast construction")


def _varint2(data: bytes, pos: int) -> tuple[int, int]:
    """Zigzag int32 with an inline 2-byte case (lengths 64..8191, e.g. a 100-byte value)."""
    b = data[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    c = data[pos + 1]
    if c < 0x80:
        raw = (b & 0x7F) | (c << 7)
        return (raw >> 1) ^ -(raw & 1), pos + 2
    return decode_varint(data, pos)


def _varlong2(data: bytes, pos: int) -> tuple[int, int]:
    """Zigzag int64 with the same 2-byte case (timestamp deltas under 8 s)."""
    b = data[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    c = data[pos + 1]
    if c < 0x80:
        raw = (b & 0x7F) | (c << 7)
        return (raw >> 1) ^ -(raw & 1), pos + 2
    return decode_varlong(data, pos)


def _decode_records(
    data: bytes, count: int, base_offset: int, base_timestamp: int, append_time: int | None
) -> Iterator[Record]:
    """The hot loop. Every varint gets an inline 1-byte fast path (the common case for deltas,
    null markers and header counts) and a 2-byte one, inline for the record and value lengths
    and in `_varint2` elsewhere; functions and constants are bound to locals. Reading past the
    end raises IndexError, which becomes CorruptRecordError; slices past a record's end are
    caught by the final length check of that record."""
    new = object.__new__
    record_type = Record
    set_offset, set_timestamp, set_key, set_value, set_headers = _RECORD_SLOTS
    varint = _varint2
    varlong = _varlong2
    no_headers = _NO_HEADERS
    n = len(data)
    pos = 0
    index = 0
    try:
        while index < count:
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            else:  # 2-byte case inline: any record of 64..8191 bytes
                c = data[pos + 1]
                if c < 0x80:
                    raw = (b & 0x7F) | (c << 7)
                    length = (raw >> 1) ^ -(raw & 1)
                    pos += 2
                else:
                    length, pos = decode_varint(data, pos)
            end = pos + length
            if end > n:
                raise CorruptRecordError(f"record {index} length {length} exceeds the {n - pos} bytes left")
            if length < 0:
                raise CorruptRecordError(f"record {index} has a negative length {length}")
            pos += 1  # attributes: unused
            b = data[pos]
            if b < 0x80:
                timestamp_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                timestamp_delta, pos = varlong(data, pos)
            b = data[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                offset_delta, pos = varint(data, pos)

            b = data[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                size, pos = varint(data, pos)
            if size >= 0:
                key = data[pos : pos + size]
                pos += size
            elif size == -1:
                key = None
            else:
                raise CorruptRecordError(f"record {index} has key length {size}")

            b = data[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            else:  # 2-byte case inline: values of 64..8191 bytes
                c = data[pos + 1]
                if c < 0x80:
                    raw = (b & 0x7F) | (c << 7)
                    size = (raw >> 1) ^ -(raw & 1)
                    pos += 2
                else:
                    size, pos = decode_varint(data, pos)
            if size >= 0:
                value = data[pos : pos + size]
                pos += size
            elif size == -1:
                value = None
            else:
                raise CorruptRecordError(f"record {index} has value length {size}")

            b = data[pos]
            if b == 0:
                headers = no_headers
                pos += 1
            else:
                headers, pos = _decode_headers(data, pos, end, index)

            if pos != end:
                span = pos - end + length
                raise CorruptRecordError(f"record {index} fields span {span} bytes, not its length {length}")
            record = new(record_type)
            set_offset(record, base_offset + offset_delta)
            set_timestamp(record, base_timestamp + timestamp_delta if append_time is None else append_time)
            set_key(record, key)
            set_value(record, value)
            set_headers(record, headers)
            yield record
            index += 1
    except IndexError:
        raise CorruptRecordError(f"record {index} is truncated") from None
    if pos != n:
        raise CorruptRecordError(f"{n - pos} bytes of garbage after the {count} records of the batch")


def _decode_headers(data: bytes, pos: int, end: int, index: int) -> tuple[tuple[RecordHeader, ...], int]:
    count, pos = decode_varint(data, pos)
    # Each header takes at least 2 bytes: refuse absurd counts before looping on them.
    if count < 0 or 2 * count > end - pos:
        raise CorruptRecordError(f"record {index} claims {count} headers in {end - pos} bytes")
    headers = []
    for _ in range(count):
        size, pos = decode_varint(data, pos)
        if size < 0:
            raise CorruptRecordError(f"record {index} has a header key length {size}")
        name = data[pos : pos + size].decode("utf-8", "surrogateescape")
        pos += size
        size, pos = decode_varint(data, pos)
        if size >= 0:
            headers.append((name, data[pos : pos + size]))
            pos += size
        elif size == -1:
            headers.append((name, None))
        else:
            raise CorruptRecordError(f"record {index} has a header value length {size}")
        if pos > end:
            raise CorruptRecordError(f"record {index} headers overrun the record")
    return tuple(headers), pos


def records_area(buf: Buffer, header: BatchHeader) -> bytes:
    """The records of the batch at `header.position`, decompressed (bytes after the header)."""
    start = header.position + HEADER_SIZE
    end = header.position + header.size
    if end > len(buf):
        raise CorruptRecordError(
            f"batch at byte {header.position} claims {header.size} bytes but only "
            f"{len(buf) - header.position} remain"
        )
    payload = memoryview(buf)[start:end]
    codec = header.attributes & COMPRESSION_MASK
    if codec == NONE:
        return bytes(payload)
    if not payload and header.records_count == 0:
        return b""  # an empty batch (e.g. kept by compaction) carries no compressed blob
    return decompress(codec, payload)


def iter_records(buf: Buffer, header: BatchHeader | None = None) -> Iterator[Record]:
    """The records of the one batch at `header.position` (at 0 without a header), decompressed,
    with absolute offsets and timestamps. Does not check the CRC (see `validate_batches`).

    Header and decompression errors raise here; record errors raise during iteration.
    """
    if header is None:
        header = read_header(buf, 0)
    data = records_area(buf, header)
    append_time = header.max_timestamp if header.attributes & TIMESTAMP_TYPE_MASK else None
    return _decode_records(data, header.records_count, header.base_offset, header.base_timestamp, append_time)


def iter_batch_records(buf: Buffer) -> Iterator[tuple[BatchHeader, Record]]:
    """Every record of every complete batch in `buf` (a partial trailing batch is ignored, as
    `iter_headers` does), control batches included: filter with `header.is_control`."""
    for header in iter_headers(buf):
        for record in iter_records(buf, header):
            yield header, record


# ---------------------------------------------------------------------------------------------
# Building

_ONE = b"\x01"  # varint -1: null key / value / header value


def _encode_records(records: Sequence[Record], base_offset: int, base_timestamp: int) -> bytearray:
    out = bytearray()
    varint = encode_varint
    varlong = encode_varlong
    previous = base_offset - 1
    for record in records:
        offset = record.offset
        if offset <= previous:
            raise InvalidRecordError(f"record offsets must increase: {offset} after {previous}")
        previous = offset
        delta = offset - base_offset
        if delta > INT32_MAX:
            raise InvalidRecordError(f"offset {offset} is too far from the batch base offset {base_offset}")
        body = bytearray(b"\x00")  # attributes
        body += varlong(record.timestamp - base_timestamp)
        body += varint(delta)
        key = record.key
        if key is None:
            body += _ONE
        else:
            body += varint(len(key))
            body += key
        value = record.value
        if value is None:
            body += _ONE
        else:
            body += varint(len(value))
            body += value
        headers = record.headers
        body += varint(len(headers))
        for name, header_value in headers:
            try:
                raw_name = name.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError as exc:
                raise InvalidRecordError(f"header key {name!r} is not encodable as UTF-8") from exc
            body += varint(len(raw_name))
            body += raw_name
            if header_value is None:
                body += _ONE
            else:
                body += varint(len(header_value))
                body += header_value
        out += varint(len(body))
        out += body
    return out


def build_batch(
    records: Sequence[Record],
    *,
    base_offset: int | None = None,
    last_offset_delta: int | None = None,
    compression: int = NONE,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
    timestamp_type: int = CREATE_TIME,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    is_transactional: bool = False,
    is_control: bool = False,
    delete_horizon: bool = False,
) -> bytes:
    """Encode one v2 batch with a valid CRC.

    Records keep their offsets (deltas from `base_offset`, which defaults to the first record's
    offset), so compaction can rewrite a batch with gaps. `last_offset_delta` defaults to the last
    record's delta; the cleaner passes the original batch's value to keep the offset range.
    `base_timestamp` defaults to the first record's timestamp and `max_timestamp` to the largest
    (pass the append time with `timestamp_type=LOG_APPEND_TIME`). An empty batch needs
    `last_offset_delta` and is written uncompressed with no records, as Kafka writes one.
    """
    if records:
        if base_offset is None:
            base_offset = records[0].offset
        if base_timestamp is None:
            base_timestamp = records[0].timestamp
        if max_timestamp is None:
            max_timestamp = max(record.timestamp for record in records)
        if records[0].offset < base_offset:
            raise InvalidRecordError(
                f"record offset {records[0].offset} is below the base offset {base_offset}"
            )
        try:
            body = _encode_records(records, base_offset, base_timestamp)
        except InvalidRecordError:
            raise
        except ValueError as exc:  # a varint out of range, e.g. a timestamp delta beyond int64
            raise InvalidRecordError(f"record field out of range: {exc}") from None
        last_delta = records[-1].offset - base_offset
        if last_offset_delta is None:
            last_offset_delta = last_delta
        elif last_offset_delta < last_delta:
            raise InvalidRecordError(
                f"last_offset_delta {last_offset_delta} is below the last record's delta {last_delta}"
            )
        payload = compress(compression, body) if compression != NONE else body
    else:
        if last_offset_delta is None:
            raise InvalidRecordError("an empty batch needs an explicit last_offset_delta")
        if base_offset is None:
            base_offset = 0
        if base_timestamp is None:
            base_timestamp = NO_TIMESTAMP
        if max_timestamp is None:
            max_timestamp = NO_TIMESTAMP
        compression = NONE
        payload = b""
    return _frame(
        payload,
        len(records),
        base_offset=base_offset,
        last_offset_delta=last_offset_delta,
        compression=compression,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        timestamp_type=timestamp_type,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=partition_leader_epoch,
        is_transactional=is_transactional,
        is_control=is_control,
        delete_horizon=delete_horizon,
    )


def frame_records(
    body: bytes | bytearray | memoryview,
    count: int,
    *,
    base_timestamp: int,
    max_timestamp: int,
    compression: int = NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
) -> bytes:
    """A producer's batch around `count` records already encoded in `body` (offset deltas
    0..count-1, timestamp deltas from `base_timestamp`): what `build_batch` does after encoding
    the records, for encoders that write many records at once (the Spark sink's columns)."""
    if count < 1:
        raise InvalidRecordError("a produced batch needs at least one record")
    payload = compress(compression, body) if compression != NONE else body
    return _frame(
        payload,
        count,
        base_offset=0,
        last_offset_delta=count - 1,
        compression=compression,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        timestamp_type=CREATE_TIME,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=NO_PARTITION_LEADER_EPOCH,
        is_transactional=is_transactional,
        is_control=False,
        delete_horizon=False,
    )


def _frame(
    payload: bytes | bytearray | memoryview,
    count: int,
    *,
    base_offset: int,
    last_offset_delta: int,
    compression: int,
    base_timestamp: int,
    max_timestamp: int,
    timestamp_type: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    partition_leader_epoch: int,
    is_transactional: bool,
    is_control: bool,
    delete_horizon: bool,
) -> bytes:
    """The header (with its CRC) in front of a records payload, compressed already if at all."""
    if not 0 <= last_offset_delta <= INT32_MAX:
        raise InvalidRecordError(f"last_offset_delta {last_offset_delta} out of range")
    if compression & ~COMPRESSION_MASK:
        raise InvalidRecordError(f"unknown compression codec {compression}")
    if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
        raise InvalidRecordError(f"unknown timestamp type {timestamp_type}")
    attributes = (
        compression
        | (TIMESTAMP_TYPE_MASK if timestamp_type == LOG_APPEND_TIME else 0)
        | (TRANSACTIONAL_MASK if is_transactional else 0)
        | (CONTROL_MASK if is_control else 0)
        | (DELETE_HORIZON_MASK if delete_horizon else 0)
    )
    out = bytearray(HEADER_SIZE)
    out += payload
    try:
        _HEADER.pack_into(
            out,
            0,
            base_offset,
            len(out) - LOG_OVERHEAD,
            partition_leader_epoch,
            MAGIC_V2,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
    except struct.error as exc:
        raise InvalidRecordError(f"batch header field out of range: {exc}") from None
    _UINT32.pack_into(out, 17, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def simple_batch(
    pairs: Sequence[tuple[bytes | None, bytes | None]],
    *,
    timestamp: int,
    compression: int = NONE,
    headers: Sequence[RecordHeader] = (),
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
) -> bytes:
    """A producer's batch: (key, value) pairs at offsets 0..n-1, all at `timestamp`, each carrying
    `headers`."""
    record_headers = tuple(headers)
    records = [
        Record(offset, timestamp, key, value, record_headers) for offset, (key, value) in enumerate(pairs)
    ]
    if not records:
        raise InvalidRecordError("a produced batch needs at least one record")
    return build_batch(
        records,
        base_offset=0,
        compression=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        is_transactional=is_transactional,
    )


# ---------------------------------------------------------------------------------------------
# Control records (transaction markers)


class ControlRecordType(IntEnum):
    ABORT = 0
    COMMIT = 1


CONTROL_RECORD_VERSION = 0


def parse_control_record(record: Record) -> tuple[int, int]:
    """(version, type) from a control record's key; the type is a ControlRecordType value for
    markers, and callers should skip types they do not know, as Kafka's clients do."""
    key = record.key
    if key is None or len(key) < _CONTROL_KEY.size:
        raise CorruptRecordError(f"control record at offset {record.offset} has a key shorter than 4 bytes")
    version, control_type = _CONTROL_KEY.unpack_from(key)
    if version < 0:
        raise CorruptRecordError(f"control record at offset {record.offset} has version {version}")
    return version, control_type


def control_record(control_type: int, coordinator_epoch: int, *, offset: int, timestamp: int) -> Record:
    """A transaction marker record (goes in a batch built with is_control=True, is_transactional=True)."""
    return Record(
        offset,
        timestamp,
        _CONTROL_KEY.pack(CONTROL_RECORD_VERSION, control_type),
        _CONTROL_VALUE.pack(CONTROL_RECORD_VERSION, coordinator_epoch),
    )


def end_txn_marker(buf: Buffer, header: BatchHeader) -> tuple[bool, int] | None:
    """(commit, coordinator epoch) of the transaction marker in the control batch at
    `header.position`; None when the batch holds no COMMIT/ABORT record (an unknown control type,
    which Kafka skips too). Raises CorruptRecordError for a marker that does not decode."""
    for record in iter_records(buf, header):
        _, control_type = parse_control_record(record)
        if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            return None
        value = record.value
        if value is None or len(value) < _CONTROL_VALUE.size:
            raise CorruptRecordError(f"marker at offset {record.offset} has no coordinator epoch")
        _, coordinator_epoch = _CONTROL_VALUE.unpack_from(value)
        return control_type == ControlRecordType.COMMIT, coordinator_epoch
    return None


def build_end_txn_marker(
    producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int, timestamp: int
) -> bytes:
    """A control batch holding one COMMIT or ABORT marker, as the partition leader writes it."""
    control_type = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    return build_batch(
        [control_record(control_type, coordinator_epoch, offset=0, timestamp=timestamp)],
        base_offset=0,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
    )

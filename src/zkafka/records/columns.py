"""Records of many v2 batches decoded at once into columns (numpy arrays), for columnar readers.

`record.iter_records` builds one Python object per record; a reader that wants columns (the
Spark source's Arrow batches) pays for those objects and then for taking them apart again. Here
Python only walks the record lengths (one varint per record, to find where each record starts);
every field is then read for all records together with numpy: the varints by gathering their
bytes, keys and values as (start, length) into one buffer that the caller turns into Arrow
binary columns without touching each value in Python.

Exactness: the result equals what `iter_records` returns for the same batches. Whatever this
fast path does not handle is refused with None, and the caller decodes those batches record by
record with `iter_records`, which also raises the precise error for corrupt ones:
- records with headers (decoding headers stays per record);
- any varint longer than 4 bytes (a key or value of 128 MiB or more, a timestamp delta of
  more than 37 hours within a batch; all legal, all rare);
- anything that does not add up: a record's fields not spanning its length, a length below -1,
  a record count the bytes cannot hold, bytes left after the last record.

Needs numpy (the `spark` extra); nothing else in zkafka imports this module.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .batch import TIMESTAMP_TYPE_MASK, BatchHeader
from .record import records_area
from .varint import decode_varint

MIN_RECORD_SIZE = 7
"""length, attributes, timestamp delta, offset delta, key length, value length, header count:
one byte each at least. A batch claiming more records than its bytes / 7 is corrupt."""
_MAX_VARINT_BYTES = 4
"""Varints longer than this go to the per-record decoder (see the module docstring)."""
_PAD = bytes(_MAX_VARINT_BYTES + 1)
"""Zero bytes after the last record, so that gathering a varint's next bytes never indexes
past the buffer; a field reaching into them fails the span checks."""


@dataclass(frozen=True, slots=True)
class RecordColumns:
    """n records: fields as arrays of length n; keys and values as spans of `data`."""

    data: np.ndarray
    """uint8: the batches' record bytes, decompressed and concatenated."""
    offsets: np.ndarray
    """int64 absolute offsets."""
    timestamps: np.ndarray
    """int64 milliseconds: CreateTime, or the batch's max timestamp for LogAppendTime batches."""
    timestamp_types: np.ndarray
    """int32: 0 CreateTime, 1 LogAppendTime."""
    key_starts: np.ndarray
    key_lengths: np.ndarray
    """int64; -1 for a null key (then its start is where it would have been)."""
    value_starts: np.ndarray
    value_lengths: np.ndarray
    """int64; -1 for a null value."""

    def __len__(self) -> int:
        return len(self.offsets)

    def select(self, keep: np.ndarray) -> RecordColumns:
        """The records where the boolean mask `keep` is true (spans still point into `data`)."""
        return RecordColumns(
            self.data,
            self.offsets[keep],
            self.timestamps[keep],
            self.timestamp_types[keep],
            self.key_starts[keep],
            self.key_lengths[keep],
            self.value_starts[keep],
            self.value_lengths[keep],
        )


def decode_columns(
    buf: bytes | memoryview, batches: Sequence[tuple[BatchHeader, int]]
) -> RecordColumns | None:
    """The records of `batches` (headers positioned in `buf`), each batch's from the offset paired
    with it on, as columns; None when a batch needs the per-record decoder (module docstring).
    Raises what `records_area` raises (a batch cut short, decompression failures)."""
    areas = [records_area(buf, header) for header, _ in batches]
    counts = [header.records_count for header, _ in batches]
    data = b"".join(areas) + _PAD
    # Where each batch's records begin and end in `data`
    ends = np.cumsum([len(a) for a in areas], dtype=np.int64)
    begins = ends - np.array([len(a) for a in areas], dtype=np.int64)
    for count, begin, end in zip(counts, begins.tolist(), ends.tolist(), strict=True):
        if count * MIN_RECORD_SIZE > end - begin:
            return None  # bound the walk (and its list) before walking
    starts = _record_starts(data, counts, begins.tolist(), ends.tolist())
    if starts is None:
        return None
    u8 = np.frombuffer(data, dtype=np.uint8)
    pos = np.frombuffer(starts, dtype=np.int64) if len(starts) else np.zeros(0, dtype=np.int64)
    n = len(pos)
    counts_np = np.array(counts, dtype=np.int64)
    batch_end = np.repeat(ends, counts_np)

    length, pos = _varints(u8, pos)
    if length is None:
        return None
    record_end = pos + length
    # The walk put each record right after the previous one and made the last end its batch's
    # area: so lengths only need to be non-negative and inside the batch.
    if n and (length.min() < 0 or np.any(record_end > batch_end)):
        return None
    pos = pos + 1  # attributes: unused (no record-level attribute is defined)
    timestamp_delta, pos = _varints(u8, pos)
    if timestamp_delta is None:
        return None
    offset_delta, pos = _varints(u8, pos)
    if offset_delta is None:
        return None
    key_lengths, pos = _varints(u8, pos)
    if key_lengths is None:
        return None
    key_starts = pos
    pos = pos + np.maximum(key_lengths, 0)
    if n and (key_lengths.min() < -1 or np.any(pos >= record_end)):
        return None  # the value length and header count still need a byte each
    value_lengths, pos = _varints(u8, pos)
    if value_lengths is None:
        return None
    value_starts = pos
    pos = pos + np.maximum(value_lengths, 0)
    if n and (value_lengths.min() < -1 or np.any(pos >= record_end)):
        return None
    # Header count: the fast path takes records without headers only (a single zero byte),
    # which must end the record exactly.
    if n and (np.any(u8[pos] != 0) or np.any(pos + 1 != record_end)):
        return None

    base_offsets = np.array([h.base_offset for h, _ in batches], dtype=np.int64)
    offsets = np.repeat(base_offsets, counts_np) + offset_delta
    append_time = [bool(h.attributes & TIMESTAMP_TYPE_MASK) for h, _ in batches]
    timestamps = np.repeat(np.array([h.base_timestamp for h, _ in batches], dtype=np.int64), counts_np)
    timestamps += timestamp_delta
    timestamp_types = np.repeat(np.array(append_time, dtype=np.int32), counts_np)
    if any(append_time):
        max_timestamps = np.repeat(np.array([h.max_timestamp for h, _ in batches], dtype=np.int64), counts_np)
        timestamps = np.where(timestamp_types == 1, max_timestamps, timestamps)
    columns = RecordColumns(
        u8, offsets, timestamps, timestamp_types, key_starts, key_lengths, value_starts, value_lengths
    )
    firsts = np.repeat(np.array([first for _, first in batches], dtype=np.int64), counts_np)
    below = offsets < firsts
    if n and below.any():  # a batch straddling the fetch position: drop what was returned before
        columns = columns.select(~below)
    return columns


def _record_starts(data: bytes, counts: list[int], begins: list[int], ends: list[int]) -> array | None:
    """Where each record starts: the one loop that runs per record in Python, reading only each
    record's length. None when a batch's records do not end exactly at its end. (An int64
    array.array: numpy takes its buffer as it is, where a list is converted item by item.)"""
    starts = array("q")
    append = starts.append
    try:
        for count, pos, end in zip(counts, begins, ends, strict=True):
            for _ in range(count):
                append(pos)
                b = data[pos]
                if b < 0x80:
                    pos += 1 + ((b >> 1) ^ -(b & 1))
                else:
                    c = data[pos + 1]
                    if c < 0x80:
                        raw = (b & 0x7F) | (c << 7)
                        pos += 2 + ((raw >> 1) ^ -(raw & 1))
                    else:
                        length, pos = decode_varint(data, pos)
                        pos += length
                if pos < 0:
                    return None
            if pos != end:
                return None
    except (IndexError, ValueError):  # ValueError: CorruptRecordError from decode_varint
        return None
    return starts


def _varints(u8: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray] | tuple[None, None]:
    """Zigzag varints of at most 4 bytes at every position of `pos`: (values, positions after);
    (None, None) when one is longer."""
    b = u8[pos].astype(np.int64)
    raw = b & 0x7F
    more = b >= 0x80
    size = np.ones_like(pos)
    shift = 7
    for _ in range(_MAX_VARINT_BYTES - 1):
        if not more.any():
            break
        b = u8[pos + size].astype(np.int64)
        raw |= np.where(more, (b & 0x7F) << shift, 0)
        size += more
        more &= b >= 0x80
        shift += 7
    else:
        if more.any():
            return None, None
    return (raw >> 1) ^ -(raw & 1), pos + size

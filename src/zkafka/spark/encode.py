"""The sink's Arrow batches encoded into Kafka records by columns, for `Producer.send_encoded`.

Spark hands a write task its rows as Arrow batches. Sending them one by one through
`Producer.send` costs a coroutine, a `Record`, a future and a per-record encode each; here a
whole batch becomes v2 records areas at once: every varint of every record is computed with
numpy, and Arrow's element-wise binary join lays the records out (length, attributes,
timestamp delta, offset delta, key, value, no headers) in C++. The rows are cut into chunks of
about the producer's `batch_size`; each chunk is one Kafka batch of its own.

The fast path takes what it can encode exactly as `build_batch` would and hands everything else
back to the per-record path (`None`): rows with headers, keys without a partition (the murmur2
partitioner runs per key), rows for more than one topic, null topics (an error the per-record
path raises with Spark's text).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from zkafka.client.accumulator import EncodedRecords
from zkafka.spark.schema import SinkColumns

_ESTIMATED_OVERHEAD = 21
"""A record's framing besides key and value, as the producer's accumulator estimates it."""
_ZERO = pa.scalar(b"\x00", pa.binary())
_EMPTY = pa.scalar(b"", pa.binary())


@dataclass(frozen=True, slots=True)
class EncodedSend:
    topic: str
    partition: int | None
    """None: the producer's sticky partitioner picks one."""
    records: EncodedRecords


def encode_batch(
    batch: pa.RecordBatch, columns: SinkColumns, topic: str | None, batch_size: int
) -> list[EncodedSend] | None:
    """`batch`'s rows as encoded chunks in row order per partition, or None for the per-record
    path (module docstring)."""
    n = batch.num_rows
    if n == 0:
        return []
    get = batch.column
    if columns.headers and get("headers").null_count < n:
        return None
    if topic is None:
        topics = get("topic")
        if topics.null_count or pc.count_distinct(topics).as_py() != 1:
            return None
        topic = topics[0].as_py()
    keys = _binary(get("key"), columns.key_is_string) if columns.key else None
    if keys is not None and keys.null_count == n:
        keys = None
    partitions = get("partition") if columns.partition else None
    if partitions is not None and partitions.null_count == n:
        partitions = None
    if partitions is not None and partitions.null_count:
        return None  # some rows choose their partition, others leave it to the partitioner
    if partitions is None and keys is not None:
        return None  # murmur2 of each key
    values = _binary(get("value"), columns.value_is_string)
    now = int(time.time() * 1000)
    if columns.timestamp:
        micros = get("timestamp").cast(pa.int64())
        timestamps = np.floor_divide(micros.fill_null(now * 1000).to_numpy(), 1000)
        if timestamps.min() < 0:
            return None  # the producer refuses it, with its message
    else:
        timestamps = np.full(n, now, dtype=np.int64)

    if partitions is None:
        return [
            EncodedSend(topic, None, r) for r in _encode(keys, values, timestamps, np.arange(n), batch_size)
        ]
    wanted = partitions.to_numpy()
    order = np.argsort(wanted, kind="stable")  # rows of one partition keep their order
    sends = []
    bounds = np.flatnonzero(np.diff(wanted[order])) + 1
    for rows in np.split(order, bounds):
        partition = int(wanted[rows[0]])
        sends += [
            EncodedSend(topic, partition, r) for r in _encode(keys, values, timestamps, rows, batch_size)
        ]
    return sends


def _binary(column: pa.Array, is_string: bool) -> pa.Array:
    if is_string or column.type != pa.binary():  # UTF-8 strings are the same bytes
        column = column.cast(pa.binary())
    return column


def _encode(
    keys: pa.Array | None, values: pa.Array, timestamps: np.ndarray, rows: np.ndarray, batch_size: int
) -> list[EncodedRecords]:
    """The records of `rows` (indices, in order) in chunks of about `batch_size` bytes."""
    if len(rows) != len(values) or not np.array_equal(rows, np.arange(len(rows))):
        taken = pa.array(rows)
        values = values.take(taken)
        keys = None if keys is None else keys.take(taken)
        timestamps = timestamps[rows]
    n = len(values)
    value_lengths = pc.binary_length(values).fill_null(-1).to_numpy().astype(np.int64)
    if keys is None:
        key_lengths = np.full(n, -1, dtype=np.int64)
    else:
        key_lengths = pc.binary_length(keys).fill_null(-1).to_numpy().astype(np.int64)

    # chunks: each starts a new Kafka batch when the estimated size would pass batch_size
    estimate = np.cumsum(np.maximum(key_lengths, 0) + np.maximum(value_lengths, 0) + _ESTIMATED_OVERHEAD)
    starts = []
    start = 0
    while start < n:
        starts.append(start)
        base = estimate[start - 1] if start else 0
        start = max(int(np.searchsorted(estimate, base + batch_size, side="right")), start + 1)
    starts_np = np.array(starts, dtype=np.int64)
    counts = np.diff(np.append(starts_np, n))
    first = np.repeat(starts_np, counts)
    offset_deltas = np.arange(n, dtype=np.int64) - first
    base_timestamps = timestamps[starts_np]
    timestamp_deltas = timestamps - np.repeat(base_timestamps, counts)
    max_timestamps = np.maximum.reduceat(timestamps, starts_np)

    pieces = [
        _varints(timestamp_deltas),
        _varints(offset_deltas),
        _varints(key_lengths),
    ]
    sizes = (
        1  # attributes
        + _sizes(timestamp_deltas)
        + _sizes(offset_deltas)
        + _sizes(key_lengths)
        + np.maximum(key_lengths, 0)
        + _sizes(value_lengths)
        + np.maximum(value_lengths, 0)
        + 1  # no headers
    )
    records = pc.binary_join_element_wise(
        _varints(sizes),
        _ZERO,
        *pieces,
        _EMPTY if keys is None else keys.fill_null(b""),
        _varints(value_lengths),
        values.fill_null(b""),
        _ZERO,
        _EMPTY,  # the separator
    )
    if isinstance(records, pa.ChunkedArray):
        records = records.combine_chunks()
    offsets = np.frombuffer(records.buffers()[1], dtype=np.int32, count=n + 1, offset=records.offset * 4)
    data = records.buffers()[2]
    out = []
    for i, (start, count) in enumerate(zip(starts, counts.tolist(), strict=True)):
        body = data[offsets[start] : offsets[start + count]].to_pybytes()
        out.append(EncodedRecords(body, count, int(base_timestamps[i]), int(max_timestamps[i])))
    return out


def _zigzag(values: np.ndarray) -> np.ndarray:
    v = values.astype(np.int64)
    return ((v << 1) ^ (v >> 63)).view(np.uint64)


def _sizes(values: np.ndarray) -> np.ndarray:
    """Bytes of each value's zigzag varint."""
    z = _zigzag(values)
    size = np.ones(len(z), dtype=np.int64)
    for k in range(1, 10):
        size += z >= np.uint64(1 << (7 * k))
    return size


def _varints(values: np.ndarray) -> pa.Array:
    """Each value's zigzag varint as one element of a binary array."""
    z = _zigzag(values)
    size = _sizes(values)
    width = int(size.max()) if len(size) else 1
    matrix = np.empty((len(z), width), dtype=np.uint8)
    for k in range(width):
        more = (size > k + 1).astype(np.uint8) << 7
        matrix[:, k] = ((z >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8) | more
    data = matrix[np.arange(width) < size[:, None]]  # row by row: each value's bytes in order
    offsets = np.zeros(len(z) + 1, dtype=np.int32)
    np.cumsum(size, out=offsets[1:])
    return pa.Array.from_buffers(pa.binary(), len(z), [None, pa.py_buffer(offsets), pa.py_buffer(data)])

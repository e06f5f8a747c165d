"""Executor side of a read: one offset range of one partition, as Arrow RecordBatches.

Each Spark task runs `read_range` in a Python worker. Workers serve many tasks in turn, so the
`Consumer` (with its connections and metadata) is cached per worker process and per client
configuration (pitfall P9): a task assigns its partition, seeks to the range's start and polls
until the consumer's position reaches the range's end. The consumer fetches from the partition's
leader and, when the leader moves or dies, refreshes metadata and fetches from the new one.

Reads stop by offset, never by record count: compaction and transaction markers leave gaps (P13).
Offsets that are gone (retention, a truncated or recreated partition) are data loss: the task
fails with Spark's KAFKA_DATA_LOSS text, or with failOnDataLoss=false skips what is gone.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import logging
import time
from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa

from zkafka.client.batch_consumer import FetchedBatches
from zkafka.client.consumer import corrupt_message
from zkafka.client.sync import SyncBatchConsumer
from zkafka.client.types import ConsumedRecord, TopicPartition
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.records import CorruptRecordError, InvalidRecordError, iter_records
from zkafka.records.columns import RecordColumns, decode_columns
from zkafka.spark.errors import DataLossError, FetchTimeoutError, data_loss_message
from zkafka.spark.offsets import OffsetRange
from zkafka.spark.options import ClientSpec, SourceOptions
from zkafka.spark.schema import arrow_read_schema

log = logging.getLogger("zkafka.spark")

_POLL_MS = 200
"""One poll's wait: short, so the no-progress deadline is checked often."""
_TS_MS = pa.timestamp("ms", tz="UTC")
_TS_US = pa.timestamp("us", tz="UTC")
_OFFSET_COLUMN = 4
_INT32_LIMIT = (1 << 31) - 1

_consumers: dict[ClientSpec, SyncBatchConsumer] = {}


def _consumer(client: ClientSpec) -> SyncBatchConsumer:
    consumer = _consumers.get(client)
    if consumer is None:
        consumer = SyncBatchConsumer(**client.consumer_kwargs())
        _consumers[client] = consumer
    return consumer


def _discard(client: ClientSpec) -> None:
    """Drop a consumer after an error (as Spark does): the next task starts from a clean one."""
    consumer = _consumers.pop(client, None)
    if consumer is not None:
        with contextlib.suppress(Exception):
            consumer.close()


@atexit.register
def _close_all() -> None:
    for client in list(_consumers):
        _discard(client)


def report_data_loss(options: SourceOptions, message: str) -> None:
    if options.fail_on_data_loss:
        raise DataLossError(message)
    log.warning("%s (failOnDataLoss=false: the query goes on without the lost records)", message)


def read_range(options: SourceOptions, r: OffsetRange) -> Iterator[pa.RecordBatch]:
    """The records of `r` as RecordBatches in Spark's Kafka read schema."""
    if r.until <= r.start:
        return
    consumer = _consumer(options.client)
    finished = False
    try:
        with _no_cycle_collection():
            yield from _batches(consumer, options, r)
        finished = True
    finally:
        if finished:
            consumer.assign([])  # no background fetching while the worker waits for its next task
        else:
            _discard(options.client)


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Pause Python's cycle collector while a task decodes: every record allocates a few objects
    that live until their Arrow batch is built, so the collector keeps rescanning them, which
    cost 15-40 % of a task's time (measured); records hold no cycles, so nothing accumulates."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _batches(consumer: SyncBatchConsumer, options: SourceOptions, r: OffsetRange) -> Iterator[pa.RecordBatch]:
    tp = r.tp
    schema = arrow_read_schema(options.include_headers)
    timeout = options.poll_timeout_ms / 1000
    consumer.assign([tp])
    consumer.seek(tp, r.start)
    position = r.start
    deadline = time.monotonic() + timeout
    while position < r.until:
        try:
            fetched = consumer.poll_batches(_POLL_MS)
        except KafkaError as e:
            if e.code != ErrorCode.OFFSET_OUT_OF_RANGE:
                raise
            position = _skip_lost(consumer, options, tp, position, r.until)
            if position < r.until:
                consumer.seek(tp, position)
                deadline = time.monotonic() + timeout
            continue
        for part in fetched:
            batch = to_arrow(part, schema, options.include_headers)
            if batch.num_rows and batch.column(_OFFSET_COLUMN)[-1].as_py() >= r.until:
                offsets = batch.column(_OFFSET_COLUMN).to_numpy()
                batch = batch.slice(0, int(np.searchsorted(offsets, r.until)))
            if batch.num_rows:
                yield batch
        now_at = fetched[-1].next_offset if fetched else position
        if now_at != position:
            position = now_at
            deadline = time.monotonic() + timeout
        elif time.monotonic() > deadline:
            latest = consumer.end_offsets([tp])[tp]
            if latest < r.until:  # the log lost the end of the range (e.g. an unclean leader change)
                report_data_loss(
                    options,
                    data_loss_message("COULD_NOT_READ_OFFSET_RANGE", tp=tp, start=position, end=r.until),
                )
                return
            raise FetchTimeoutError(
                f"Cannot fetch record for offset {position} in {options.poll_timeout_ms} milliseconds "
                f"({tp}, reading up to {r.until})"
            )


def _skip_lost(
    consumer: SyncBatchConsumer, options: SourceOptions, tp: TopicPartition, position: int, until: int
) -> int:
    """The position to go on from after OFFSET_OUT_OF_RANGE at `position` (or raise)."""
    earliest = consumer.beginning_offsets([tp])[tp]
    if position < earliest:  # retention (or DeleteRecords) removed [position, earliest)
        report_data_loss(
            options,
            data_loss_message("COULD_NOT_READ_OFFSET_RANGE", tp=tp, start=position, end=min(earliest, until)),
        )
        return earliest
    # past the end: the partition was truncated or deleted and created again
    report_data_loss(
        options, data_loss_message("COULD_NOT_READ_OFFSET_RANGE", tp=tp, start=position, end=until)
    )
    return until


def to_record_batch(
    records: Sequence[ConsumedRecord], schema: pa.Schema, include_headers: bool
) -> pa.RecordBatch:
    """Records of one partition as one RecordBatch; columns are built by Arrow from whole lists."""
    topics, partitions, offsets, timestamps, types, keys, values, headers = zip(*records, strict=True)
    n = len(records)
    arrays = [
        pa.array(keys, pa.binary()),
        pa.array(values, pa.binary()),
        pa.repeat(pa.scalar(topics[0], pa.string()), n),
        pa.repeat(pa.scalar(partitions[0], pa.int32()), n),
        pa.array(offsets, pa.int64()),
        pa.array(timestamps, _TS_MS).cast(_TS_US),
        pa.array(types, pa.int32()),
    ]
    if include_headers:
        arrays.append(pa.array(headers, schema.field("headers").type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def to_arrow(part: FetchedBatches, schema: pa.Schema, include_headers: bool) -> pa.RecordBatch:
    """One partition's fetched batches as one RecordBatch: by columns (`zkafka.records.columns`)
    unless headers are wanted or a batch needs the per-record decoder."""
    topic, partition = part.tp
    try:
        columns = None if include_headers else decode_columns(part.data, part.batches)
        if columns is not None:
            return columns_to_record_batch(columns, topic, partition, schema)
        records = [
            ConsumedRecord(
                topic, partition, r.offset, r.timestamp, header.timestamp_type, r.key, r.value, r.headers
            )
            for header, first in part.batches
            for r in iter_records(part.data, header)
            if r.offset >= first
        ]
    except (CorruptRecordError, InvalidRecordError) as e:
        raise corrupt_message(part.tp, part.batches[0][1], e) from e
    if not records:
        return pa.RecordBatch.from_pylist([], schema=schema)
    return to_record_batch(records, schema, include_headers)


def columns_to_record_batch(
    columns: RecordColumns, topic: str, partition: int, schema: pa.Schema
) -> pa.RecordBatch:
    """Spark's read columns from decoded record columns: keys and values are copied straight
    from the record bytes into Arrow binary arrays, nothing per record in Python."""
    n = len(columns)
    data = pa.py_buffer(columns.data)
    arrays = [
        _binary_column(data, columns.key_starts, columns.key_lengths),
        _binary_column(data, columns.value_starts, columns.value_lengths),
        pa.repeat(pa.scalar(topic, pa.string()), n),
        pa.repeat(pa.scalar(partition, pa.int32()), n),
        pa.array(columns.offsets, pa.int64()),
        pa.array(columns.timestamps, _TS_MS).cast(_TS_US),
        pa.array(columns.timestamp_types, pa.int32()),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _binary_column(data: pa.Buffer, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """Spans of `data` (length -1: null) as a binary array. Arrow copies them out in C++: the
    spans and the gaps between them are the elements of one array over all of `data` (offsets
    start0, end0, start1, end1, ...), and filtering its odd elements is the gather."""
    n = len(starts)
    if n == 0:
        return pa.array([], pa.binary())
    nulls = lengths < 0
    null_count = int(np.count_nonzero(nulls))
    if null_count == n:
        return pa.nulls(n, pa.binary())
    wide = data.size > _INT32_LIMIT
    bounds = np.empty(2 * n + 1, dtype=np.int64 if wide else np.int32)
    bounds[0] = 0
    bounds[1::2] = starts
    bounds[2::2] = starts + np.maximum(lengths, 0)
    spans = pa.Array.from_buffers(
        pa.large_binary() if wide else pa.binary(), 2 * n, [None, pa.py_buffer(bounds), data]
    )
    odd = np.zeros(2 * n, dtype=np.bool_)
    odd[1::2] = True
    values = spans.filter(pa.array(odd))
    if wide:
        values = values.cast(pa.binary())
    if null_count:
        validity = pa.py_buffer(np.packbits(~nulls, bitorder="little"))
        offsets_buffer, values_buffer = values.buffers()[1:]
        values = pa.Array.from_buffers(
            pa.binary(),
            n,
            [validity, offsets_buffer, values_buffer],
            null_count=null_count,
            offset=values.offset,
        )
    return values

"""The sink: batch and streaming writes of a DataFrame into topics.

Input columns as in Spark's Kafka sink: `value` (string or binary, required), `key` (string or
binary), `topic` (string; the `topic` option wins over it), `partition` (int; null lets the
producer's partitioner decide), `headers` (array<struct<key:string,value:binary>>) and
`timestamp` (timestamp). Spark hands each task its rows as Arrow batches; the task sends them
through an idempotent zkafka `Producer` (cached per worker process and configuration), flushes at
the end and fails with the first delivery error. A batch is encoded into Kafka records by
columns (`zkafka.spark.encode`) and queued as whole Kafka batches (`Producer.send_encoded`);
rows the columnar encoder does not take (headers, keys left to the partitioner) go one by one.

Guarantee, by default: at least once, as Spark documents for its Kafka sink. The idempotent
producer removes duplicates from its own retries within a task, but a task or micro-batch that
Spark runs again (after a failure, or after a driver restart replays the last batch) sends its
rows again.

With the sink option ``transactional.id.prefix``, streaming writes are exactly once for
read_committed readers: each task writes its rows and a progress marker in one Kafka transaction,
and an attempt that finds the marker of its batch writes nothing (`write_exactly_once`; the
protocol is `zkafka.spark.transactional`'s). That producer is the task's own, not the cached one:
its transactional id belongs to the task partition, and `init_transactions` must run per attempt.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from zkafka.client.producer import Producer
from zkafka.client.sync import LoopThread
from zkafka.client.types import RecordMetadata
from zkafka.spark.errors import SchemaError
from zkafka.spark.options import ClientSpec, SinkOptions
from zkafka.spark.schema import SinkColumns
from zkafka.spark.transactional import marker, task_identity, written_up_to

if TYPE_CHECKING:
    from zkafka.spark.encode import EncodedSend

log = logging.getLogger("zkafka.spark")

NULL_TOPIC_MESSAGE = (
    "[KAFKA_NULL_TOPIC_IN_DATA] The Kafka message data sent to the producer contains a null topic. "
    "Use the `topic` option for setting a default topic."
)

Row = tuple[str, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...], int | None, int | None]
"""topic, key, value, headers, partition, timestamp in ms."""


class _ProducerThread:
    """A Producer on its own event-loop thread; a whole Arrow batch is queued in one call."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        self.runner = LoopThread("zkafka-spark-producer")
        try:
            self.producer: Producer = self.runner.call(lambda: Producer(**kwargs))
        except BaseException:
            self.runner.stop()
            raise

    def send_all(self, rows: list[Row]) -> list[asyncio.Future[RecordMetadata]]:
        async def send() -> list[asyncio.Future[RecordMetadata]]:
            send_one = self.producer.send
            return [await send_one(t, v, k, h, p, ts) for t, k, v, h, p, ts in rows]

        return self.runner.run(send())

    def send_encoded(self, sends: list[EncodedSend]) -> list[asyncio.Future[RecordMetadata]]:
        async def send() -> list[asyncio.Future[RecordMetadata]]:
            send_one = self.producer.send_encoded
            return [await send_one(s.topic, s.records, s.partition) for s in sends]

        return self.runner.run(send())

    def send_batch(
        self, batch: pa.RecordBatch, columns: SinkColumns, topic: str | None
    ) -> tuple[list[asyncio.Future[RecordMetadata]], str | None]:
        """Queue one Arrow batch's rows: encoded by columns when `encode_batch` can, else row by
        row. Returns the futures and the topic of the first row (None without rows)."""
        from zkafka.spark.encode import encode_batch  # numpy and pyarrow.compute: writers only

        sends = encode_batch(batch, columns, topic, self.producer.batch_size)
        if sends is not None:
            return self.send_encoded(sends), sends[0].topic if sends else None
        rows = batch_rows(batch, columns, topic)
        return self.send_all(rows), rows[0][0] if rows else None

    def first_error(
        self, futures: list[asyncio.Future[RecordMetadata]], *, flush: bool
    ) -> BaseException | None:
        """Flush if asked, drop the futures that are done and return the first failure among them."""

        async def check() -> BaseException | None:
            if flush:
                await self.producer.flush()
            error = None
            still = []
            for future in futures:
                if not future.done():
                    still.append(future)
                elif error is None and future.exception() is not None:
                    error = future.exception()
            futures[:] = still
            return error

        return self.runner.run(check())

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.runner.run(self.producer.close(), timeout=30)
        self.runner.stop()


_producers: dict[ClientSpec, _ProducerThread] = {}


def _producer(client: ClientSpec) -> _ProducerThread:
    producer = _producers.get(client)
    if producer is None:
        producer = _ProducerThread(client.producer_kwargs())
        _producers[client] = producer
    return producer


def _discard(client: ClientSpec) -> None:
    producer = _producers.pop(client, None)
    if producer is not None:
        producer.close()


@atexit.register
def _close_all() -> None:
    for client in list(_producers):
        _discard(client)


@dataclass
class WriteResult(WriterCommitMessage):
    """What one task sent (Spark passes these to commit/abort; None for tasks that failed)."""

    records: int
    partition_id: int = -1
    already_written: bool = False
    """Exactly-once mode: an earlier attempt had committed this task's rows; nothing was sent."""


def _binary(column: pa.Array, is_string: bool) -> list[bytes | None]:
    if is_string:  # Spark casts string keys and values to binary; UTF-8 is the same bytes
        target = pa.large_binary() if pa.types.is_large_string(column.type) else pa.binary()
        column = column.cast(target)
    return column.to_pylist()


def batch_rows(batch: pa.RecordBatch, columns: SinkColumns, topic: str | None) -> list[Row]:
    """The rows of one Arrow batch as producer arguments (whole columns converted at once)."""
    n = batch.num_rows
    none: list[None] = [None] * n
    get = batch.column
    topics = get("topic").to_pylist() if topic is None else [topic] * n
    if topic is None and None in topics:
        raise SchemaError(NULL_TOPIC_MESSAGE)
    keys = _binary(get("key"), columns.key_is_string) if columns.key else none
    values = _binary(get("value"), columns.value_is_string)
    partitions = get("partition").to_pylist() if columns.partition else none
    if columns.timestamp:
        micros = get("timestamp").cast(pa.int64()).to_pylist()
        timestamps = [None if us is None else us // 1000 for us in micros]
    else:
        timestamps = none
    if columns.headers:
        headers = [
            () if hs is None else tuple((h["key"], h["value"]) for h in hs)
            for hs in get("headers").to_pylist()
        ]
    else:
        headers = [()] * n
    return list(zip(topics, keys, values, headers, partitions, timestamps, strict=True))


def write_batches(
    options: SinkOptions, columns: SinkColumns, batches: Iterator[pa.RecordBatch]
) -> WriteResult:
    """One task: send every row, flush, fail with the first delivery error."""
    from pyspark import TaskContext

    producer = _producer(options.client)
    sent = 0
    futures: list[asyncio.Future[RecordMetadata]] = []
    try:
        for batch in batches:
            queued, _ = producer.send_batch(batch, columns, options.topic)
            futures.extend(queued)
            sent += batch.num_rows
            error = producer.first_error(futures, flush=False)
            if error is not None:
                raise error
        error = producer.first_error(futures, flush=True)
        if error is not None:
            raise error
    except BaseException:
        _discard(options.client)  # its buffers may hold this task's records: start clean
        raise
    context = TaskContext.get()
    return WriteResult(sent, context.partitionId() if context is not None else -1)


def write_exactly_once(
    options: SinkOptions, columns: SinkColumns, batches: Iterator[pa.RecordBatch]
) -> WriteResult:
    """One streaming task in one transaction, with its batch's progress marker; nothing when an
    earlier attempt's marker says the batch is written (see `zkafka.spark.transactional`)."""
    from pyspark import TaskContext

    assert options.transactional_id_prefix is not None
    context = TaskContext.get()
    identity = task_identity(options.transactional_id_prefix, context)
    kwargs = {**options.client.producer_kwargs(), "transactional_id": identity.transactional_id}
    task = _ProducerThread(kwargs)
    producer, run = task.producer, task.runner.run
    try:
        run(producer.init_transactions())  # fences earlier attempts, completes what they left
        if run(written_up_to(options.client, identity)) > identity.batch_id:
            log.info(
                "%s: batch %d was written by an earlier attempt", identity.transactional_id, identity.batch_id
            )
            for _ in batches:  # read the input all the same: the worker's stream must end cleanly
                pass
            return WriteResult(0, context.partitionId(), already_written=True)
        run(producer.begin_transaction())
        sent, topic = 0, None
        futures: list[asyncio.Future[RecordMetadata]] = []
        for batch in batches:
            queued, first_topic = task.send_batch(batch, columns, options.topic)
            topic = topic or first_topic
            futures.extend(queued)
            sent += batch.num_rows
            error = task.first_error(futures, flush=False)
            if error is not None:
                raise error
        if topic is not None:  # no rows: nothing to mark, a new attempt would write nothing too
            run(producer.send_offsets_to_transaction(marker(identity, topic), identity.marker_group))
        run(producer.commit_transaction())  # flushes; a failed send makes it raise
        return WriteResult(sent, context.partitionId())
    except BaseException:
        with contextlib.suppress(Exception):  # else the next attempt's init_transactions aborts it
            run(producer.abort_transaction(), timeout=30)
        raise
    finally:
        task.close()


def _total(messages: list[WriterCommitMessage | None]) -> int:
    return sum(m.records for m in messages if isinstance(m, WriteResult))


def _already_written(messages: list[WriterCommitMessage | None]) -> int:
    return sum(1 for m in messages if isinstance(m, WriteResult) and m.already_written)


class ZkafkaBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: SinkOptions, columns: SinkColumns) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteResult:
        return write_batches(self.options, self.columns, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        log.info("wrote %d records to Kafka", _total(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning("write aborted; %d records had been sent (at-least-once: they stay)", _total(messages))


class ZkafkaStreamWriter(DataSourceStreamArrowWriter):
    """Spark builds a new instance for every commit (P10): everything lives in the messages."""

    def __init__(self, options: SinkOptions, columns: SinkColumns) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteResult:
        if self.options.transactional_id_prefix is not None:
            return write_exactly_once(self.options, self.columns, iterator)
        return write_batches(self.options, self.columns, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.info(
            "micro-batch %d: wrote %d records to Kafka (%d tasks found their rows already written)",
            batchId,
            _total(messages),
            _already_written(messages),
        )

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self.options.transactional_id_prefix is not None:
            log.warning("micro-batch %d aborted; its tasks' transactions are aborted or replayed", batchId)
            return
        log.warning(
            "micro-batch %d aborted; %d records had been sent and stay (at-least-once)",
            batchId,
            _total(messages),
        )

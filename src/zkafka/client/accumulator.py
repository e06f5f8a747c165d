"""The producer's per-partition batches, and the idempotent producer's sequence numbers.

Records are appended to the open batch of their partition until it holds `batch_size` bytes
(estimated uncompressed) and then a new batch starts. A batch is encoded once, when the sender
takes it (`seal`): that is when it gets its base sequence, so a retry resends the very same
bytes and the broker can recognise it as a duplicate.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from zkafka.client.types import RecordMetadata, TopicPartition
from zkafka.records import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    Record,
    RecordHeader,
    build_batch,
    frame_records,
)

BATCH_OVERHEAD = 61
"""The v2 batch header; also what an empty batch costs."""
RECORD_OVERHEAD = 21
"""Upper bound of a record's framing without its key, value and headers: length (5), attributes
(1), timestamp delta (up to 10 for far-off timestamps, 1-3 usually), offset delta (5), key and
value lengths (5 + 5) and header count (1) add to more, but the usual case is about this."""
SEQUENCE_MODULUS = 1 << 31
"""Sequences wrap at int32 max, as Kafka's producer and broker both do."""


@dataclass(frozen=True, slots=True)
class EncodedRecords:
    """Records encoded by the caller as a v2 batch's records area: offset deltas 0..count-1,
    timestamp deltas from `base_timestamp` (see `zkafka.records.frame_records`)."""

    data: bytes | memoryview
    count: int
    base_timestamp: int
    max_timestamp: int


def record_size(key: bytes | None, value: bytes | None, headers: Sequence[RecordHeader]) -> int:
    size = RECORD_OVERHEAD + (len(key) if key else 0) + (len(value) if value else 0)
    for name, header_value in headers:
        size += 10 + len(name) + (len(header_value) if header_value else 0)
    return size


class ProducerBatch:
    """Records bound for one partition, their futures, and the batch's delivery state."""

    __slots__ = (
        "attempts",
        "base_sequence",
        "batch_id",
        "body",
        "conn",
        "created",
        "done",
        "encoded",
        "futures",
        "in_flight",
        "records",
        "retry_at",
        "sent_sequence",
        "size",
        "tp",
    )

    def __init__(self, tp: TopicPartition, batch_id: int, created: float) -> None:
        self.tp = tp
        self.batch_id = batch_id
        """Creation order across the producer: retried batches are put back in this order."""
        self.created = created
        self.records: list[Record] = []
        self.futures: list[asyncio.Future[RecordMetadata]] = []
        self.size = BATCH_OVERHEAD
        self.encoded: bytes | None = None
        self.base_sequence = NO_SEQUENCE
        self.sent_sequence = NO_SEQUENCE
        """The base sequence of the bytes last sent; differs from `base_sequence` after a gap
        before this batch was closed (`SequenceNumbers.failed`)."""
        self.attempts = 0
        self.retry_at = 0.0
        self.in_flight = False
        self.conn: object | None = None
        """The connection the batch was last written to (the producer checks it is alive)."""
        self.done: asyncio.Future[None] = asyncio.Future()
        self.body: EncodedRecords | None = None
        """Instead of `records`: records the caller encoded itself (`append_encoded`), one
        future for them all."""

    def __len__(self) -> int:
        return len(self.records) if self.body is None else self.body.count

    def __repr__(self) -> str:
        return (
            f"<ProducerBatch {self.tp} #{self.batch_id} {len(self.records)} records seq={self.base_sequence}>"
        )

    def has_room(self, size: int, batch_size: int) -> bool:
        # An empty batch takes any record, however large: a big record gets a batch of its own.
        return (
            self.encoded is None
            and self.body is None
            and (not self.records or self.size + size <= batch_size)
        )

    def append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[RecordHeader, ...],
        size: int,
    ) -> asyncio.Future[RecordMetadata]:
        self.records.append(Record(len(self.records), timestamp, key, value, headers))
        self.size += size
        # asyncio.Future() directly: loop.create_future() is a Python-level call on the default
        # loop, and this runs once per record
        future: asyncio.Future[RecordMetadata] = asyncio.Future()
        self.futures.append(future)
        return future

    def seal(
        self,
        compression: int,
        producer_id: int,
        producer_epoch: int,
        base_sequence: int,
        *,
        is_transactional: bool = False,
    ) -> bytes:
        """Encode the batch (again, when its sequence changed since it was last encoded)."""
        if (self.encoded is None or base_sequence != self.base_sequence) and self.body is not None:
            self.base_sequence = base_sequence
            body = self.body
            self.encoded = frame_records(
                body.data,
                body.count,
                base_timestamp=body.base_timestamp,
                max_timestamp=body.max_timestamp,
                compression=compression,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                base_sequence=base_sequence,
                is_transactional=is_transactional,
            )
        elif self.encoded is None or base_sequence != self.base_sequence:
            self.base_sequence = base_sequence
            self.encoded = build_batch(
                self.records,
                base_offset=0,
                compression=compression,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                base_sequence=base_sequence,
                is_transactional=is_transactional,
            )
        self.sent_sequence = base_sequence
        return self.encoded

    def complete(self, base_offset: int, log_append_time: int) -> None:
        topic, partition = self.tp
        if self.body is not None:  # one future: where the first of the records landed
            if not self.futures[0].done():
                self.futures[0].set_result(
                    RecordMetadata(
                        topic,
                        partition,
                        base_offset,
                        log_append_time if log_append_time >= 0 else self.body.base_timestamp,
                        -1,
                        -1,
                    )
                )
            self._finish()
            return
        for i, (record, future) in enumerate(zip(self.records, self.futures, strict=True)):
            if future.done():
                continue
            key, value = record.key, record.value
            future.set_result(
                RecordMetadata(
                    topic,
                    partition,
                    base_offset + i if base_offset >= 0 else -1,
                    log_append_time if log_append_time >= 0 else record.timestamp,
                    len(key) if key is not None else -1,
                    len(value) if value is not None else -1,
                )
            )
        self._finish()

    def fail(self, error: BaseException) -> None:
        for future in self.futures:
            if not future.done():
                future.set_exception(error)
                # The caller may never look at a fire-and-forget future; that is its choice, so
                # asyncio must not log "exception was never retrieved" for each record.
                future.exception()
        self._finish()

    def _finish(self) -> None:
        self.records = []  # the bytes are no longer needed; release them before the futures go
        self.body = None
        self.encoded = None
        if not self.done.done():
            self.done.set_result(None)


class RecordAccumulator:
    """Queues of batches per partition; the sender drains the heads."""

    def __init__(self, batch_size: int) -> None:
        self.batch_size = batch_size
        self.queues: dict[TopicPartition, deque[ProducerBatch]] = {}
        self.buffered_bytes = 0
        self._next_id = 0

    def append(
        self,
        tp: TopicPartition,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[RecordHeader, ...],
        now: float,
    ) -> tuple[asyncio.Future[RecordMetadata], bool]:
        """Add one record; returns its future and whether it opened a new batch."""
        size = record_size(key, value, headers)
        queue = self.queues.get(tp)
        if queue is None:
            queue = self.queues[tp] = deque()
        batch = queue[-1] if queue else None
        created = False
        if batch is None or not batch.has_room(size, self.batch_size):
            batch = ProducerBatch(tp, self._next_id, now)
            self._next_id += 1
            queue.append(batch)
            created = True
            self.buffered_bytes += BATCH_OVERHEAD
        self.buffered_bytes += size
        return batch.append(timestamp, key, value, headers, size), created

    def append_encoded(
        self, tp: TopicPartition, body: EncodedRecords, now: float
    ) -> asyncio.Future[RecordMetadata]:
        """Add records encoded by the caller as a batch of their own (after the partition's open
        batch, which takes no more records); returns the one future of them all."""
        queue = self.queues.get(tp)
        if queue is None:
            queue = self.queues[tp] = deque()
        batch = ProducerBatch(tp, self._next_id, now)
        self._next_id += 1
        batch.body = body
        batch.size = BATCH_OVERHEAD + len(body.data)
        future: asyncio.Future[RecordMetadata] = asyncio.Future()
        batch.futures.append(future)
        queue.append(batch)
        self.buffered_bytes += batch.size
        return future

    def is_full(self, batch: ProducerBatch) -> bool:
        return batch.size >= self.batch_size

    def requeue(self, batch: ProducerBatch) -> None:
        """Put a batch to be retried back in creation order, ahead of younger batches."""
        queue = self.queues.setdefault(batch.tp, deque())
        queue.append(batch)
        if len(queue) > 1 and queue[-2].batch_id > batch.batch_id:
            ordered = sorted(queue, key=lambda b: b.batch_id)
            queue.clear()
            queue.extend(ordered)

    def release(self, batch: ProducerBatch) -> None:
        self.buffered_bytes -= batch.size

    def batches(self) -> Iterator[ProducerBatch]:
        for queue in self.queues.values():
            yield from queue

    def __bool__(self) -> bool:
        return any(self.queues.values())


class SequenceNumbers:
    """The idempotent producer's identity and its next sequence per partition, plus the batches
    that carry sequences but are not acknowledged yet (needed to close gaps after a failure)."""

    def __init__(self) -> None:
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self._next: dict[TopicPartition, int] = {}
        self._unacked: dict[TopicPartition, list[ProducerBatch]] = {}

    @property
    def has_id(self) -> bool:
        return self.producer_id >= 0

    def set_identity(self, producer_id: int, producer_epoch: int) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self._next.clear()
        self._unacked.clear()

    def sequence_for(self, batch: ProducerBatch) -> int:
        """The batch's base sequence: assigned on its first send, kept for retries."""
        if batch.base_sequence != NO_SEQUENCE:
            return batch.base_sequence
        tp = batch.tp
        sequence = self._next.get(tp, 0)
        self._next[tp] = (sequence + len(batch)) % SEQUENCE_MODULUS
        self._unacked.setdefault(tp, []).append(batch)
        return sequence

    def next_sequence(self, tp: TopicPartition) -> int:
        return self._next.get(tp, 0)

    def unacked_before(self, batch: ProducerBatch) -> list[ProducerBatch]:
        """The partition's unacknowledged batches numbered before `batch` (oldest first)."""
        unacked = self._unacked.get(batch.tp, [])
        for i, other in enumerate(unacked):
            if other is batch:
                return unacked[:i]
        return unacked[:]

    def is_first_unacked(self, batch: ProducerBatch) -> bool:
        unacked = self._unacked.get(batch.tp)
        return not unacked or unacked[0] is batch

    def acknowledged(self, batch: ProducerBatch) -> None:
        unacked = self._unacked.get(batch.tp)
        if unacked and batch in unacked:
            unacked.remove(batch)

    def failed(self, batch: ProducerBatch) -> None:
        """A batch with a sequence will never be written: move the later batches' sequences down
        so the broker sees no gap (they are re-encoded when sent again)."""
        unacked = self._unacked.get(batch.tp)
        if not unacked or batch not in unacked:
            return
        index = unacked.index(batch)
        unacked.pop(index)
        count = len(batch)
        for later in unacked[index:]:
            later.base_sequence = (later.base_sequence - count) % SEQUENCE_MODULUS
            later.encoded = None
        self._next[batch.tp] = (self._next[batch.tp] - count) % SEQUENCE_MODULUS

"""Producer batching and the idempotent producer's sequence numbers (no broker needed)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatch

from zkafka.client.accumulator import (
    BATCH_OVERHEAD,
    SEQUENCE_MODULUS,
    ProducerBatch,
    RecordAccumulator,
    SequenceNumbers,
    record_size,
)
from zkafka.client.types import TopicPartition
from zkafka.records import GZIP, LZ4, NO_SEQUENCE, NONE, SNAPPY, ZSTD, iter_records, read_header

TP = TopicPartition("t", 0)


def run(fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(fn())


def test_records_fill_a_batch_then_open_the_next() -> None:
    async def main() -> None:
        acc = RecordAccumulator(batch_size=1000)
        created = []
        for i in range(30):
            _, new = acc.append(TP, 1000 + i, b"k%d" % i, b"v" * 50, (), 0.0)
            created.append(new)
        queue = acc.queues[TP]
        assert len(queue) == sum(created) > 1
        assert all(b.size <= 1000 for b in queue)
        assert [len(b) for b in queue][:-1] == [len(queue[0])] * (len(queue) - 1)
        assert sum(len(b) for b in queue) == 30
        assert acc.buffered_bytes == sum(b.size for b in queue)
        # a record larger than batch_size gets a batch of its own
        _, new = acc.append(TP, 0, None, b"x" * 5000, (), 0.0)
        assert new and len(queue[-1]) == 1 and queue[-1].size > 1000
        _, new = acc.append(TP, 0, None, b"y", (), 0.0)
        assert new

    run(main)


def test_record_size_estimate_bounds_the_encoded_size() -> None:
    async def main() -> None:
        batch = ProducerBatch(TP, 0, 0.0)
        headers = (("h1", b"v1"), ("h2", None))
        for i in range(100):
            batch.append(
                1_700_000_000_000 + i, b"key-%d" % i, b"value" * i, headers, record_size(b"", b"", ())
            )
        encoded = batch.seal(NONE, -1, -1, NO_SEQUENCE)
        estimate = BATCH_OVERHEAD + sum(
            record_size(r.key, r.value, r.headers) for r in iter_records(encoded, read_header(encoded))
        )
        assert len(encoded) <= estimate

    run(main)


@pytest.mark.parametrize("codec", [NONE, GZIP, SNAPPY, LZ4, ZSTD])
def test_sealed_batch_decodes_to_the_appended_records(codec: int) -> None:
    async def main() -> None:
        batch = ProducerBatch(TP, 0, 0.0)
        rows = [
            (1000 + i, None if i == 3 else b"k%d" % i, b"v%d" % i * 20, (("h", b"%d" % i),))
            for i in range(10)
        ]
        for ts, key, value, headers in rows:
            batch.append(ts, key, value, headers, record_size(key, value, headers))
        data = batch.seal(codec, 42, 3, 17)
        header = read_header(data)
        assert (header.producer_id, header.producer_epoch, header.base_sequence) == (42, 3, 17)
        assert header.compression == codec and header.base_offset == 0
        got = [(r.timestamp, r.key, r.value, r.headers) for r in iter_records(data, header)]
        assert got == rows
        # kafka-python reads the same batch
        oracle = DefaultRecordBatch(data)
        assert oracle.validate_crc()
        assert [(r.key, r.value) for r in oracle] == [(k, v) for _, k, v, _ in rows]
        # sealing again with the same sequence keeps the bytes; another sequence re-encodes
        assert batch.seal(codec, 42, 3, 17) is data
        assert read_header(batch.seal(codec, 42, 3, 5)).base_sequence == 5

    run(main)


def test_batch_completion_resolves_every_future() -> None:
    async def main() -> None:
        batch = ProducerBatch(TP, 0, 0.0)
        futures = [batch.append(100 + i, b"k", None if i else b"v", (), 10) for i in range(3)]
        batch.complete(base_offset=40, log_append_time=-1)
        metas = [f.result() for f in futures]
        assert [m.offset for m in metas] == [40, 41, 42]
        assert [m.timestamp for m in metas] == [100, 101, 102]
        assert metas[0].serialized_value_size == 1 and metas[1].serialized_value_size == -1
        assert batch.done.done() and batch.records == []

        other = ProducerBatch(TP, 1, 0.0)
        f = other.append(5, None, b"v", (), 10)
        other.complete(base_offset=7, log_append_time=999)
        assert f.result().timestamp == 999  # LogAppendTime topics report the broker's time

        failed = ProducerBatch(TP, 2, 0.0)
        f = failed.append(5, None, b"v", (), 10)
        failed.fail(RuntimeError("boom"))
        with pytest.raises(RuntimeError, match="boom"):
            f.result()

    run(main)


def test_requeue_keeps_creation_order() -> None:
    async def main() -> None:
        acc = RecordAccumulator(batch_size=10)
        for i in range(4):
            acc.append(TP, 0, None, b"x" * 20, (), float(i))
        queue = acc.queues[TP]
        first, second = queue.popleft(), queue.popleft()
        acc.requeue(second)
        acc.requeue(first)
        assert [b.batch_id for b in queue] == [0, 1, 2, 3]
        assert bool(acc)
        acc.release(first)
        assert acc.buffered_bytes == sum(b.size for b in queue) - first.size

    run(main)


def test_sequences_are_per_partition_and_stable_across_retries() -> None:
    async def main() -> None:
        seq = SequenceNumbers()
        seq.set_identity(1000, 0)
        other = TopicPartition("t", 1)
        batches = []
        for i, (tp, n) in enumerate([(TP, 3), (other, 2), (TP, 5), (TP, 1)]):
            b = ProducerBatch(tp, i, 0.0)
            for _ in range(n):
                b.append(0, None, b"v", (), 10)
            batches.append(b)
        assigned = [seq.sequence_for(b) for b in batches]
        for b, s in zip(batches, assigned, strict=True):
            b.seal(NONE, 1000, 0, s)
        assert assigned == [0, 0, 3, 8]
        assert seq.next_sequence(TP) == 9 and seq.next_sequence(other) == 2
        # a retry asks again and gets the same sequence
        assert seq.sequence_for(batches[2]) == 3
        assert seq.is_first_unacked(batches[0]) and not seq.is_first_unacked(batches[2])
        seq.acknowledged(batches[0])
        assert seq.is_first_unacked(batches[2])

    run(main)


def test_a_failed_batch_closes_its_sequence_gap() -> None:
    async def main() -> None:
        seq = SequenceNumbers()
        seq.set_identity(7, 1)
        batches = []
        for i, n in enumerate([2, 3, 4]):
            b = ProducerBatch(TP, i, 0.0)
            for _ in range(n):
                b.append(0, None, b"v", (), 10)
            b.seal(NONE, 7, 1, seq.sequence_for(b))
            batches.append(b)
        assert [b.base_sequence for b in batches] == [0, 2, 5]
        seq.failed(batches[1])
        assert [b.base_sequence for b in batches] == [0, 2, 2]
        assert batches[2].sent_sequence == 5  # the bytes on the wire still say 5: a retry re-encodes
        assert batches[2].encoded is None
        assert read_header(batches[2].seal(NONE, 7, 1, seq.sequence_for(batches[2]))).base_sequence == 2
        assert seq.next_sequence(TP) == 6

    run(main)


def test_sequences_wrap_at_int32() -> None:
    async def main() -> None:
        seq = SequenceNumbers()
        seq.set_identity(1, 0)
        seq._next[TP] = SEQUENCE_MODULUS - 2
        b = ProducerBatch(TP, 0, 0.0)
        for _ in range(5):
            b.append(0, None, b"v", (), 10)
        assert seq.sequence_for(b) == SEQUENCE_MODULUS - 2
        assert seq.next_sequence(TP) == 3
        header = read_header(b.seal(NONE, 1, 0, SEQUENCE_MODULUS - 2))
        assert header.last_sequence == 2

    run(main)

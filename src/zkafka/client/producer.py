"""`Producer`: an asyncio Kafka producer.

    async with Producer("127.0.0.1:9092", acks=-1, linger_ms=5) as producer:
        future = await producer.send("events", b"value", key=b"user-1")
        metadata = await future          # RecordMetadata(topic, partition, offset, ...)

How it works:

* `send` picks the partition (explicit, Kafka's murmur2 of the key, or the sticky partition for
  keyless records), appends the record to that partition's open batch in the
  `RecordAccumulator`, and returns a future that resolves when the broker acknowledges it. It
  waits only for topic metadata and for buffer space (`buffer_memory`), both bounded by
  `max_block_ms`.
* One sender task drains batches that are full, older than `linger_ms`, or being flushed: for
  each leader one Produce request holding at most one batch per partition, with up to
  `max_in_flight` requests outstanding per broker (pipelined on its connection).
* Retriable errors put the batch back, in creation order, with `retry_backoff_ms`, until
  `retries` or `delivery_timeout_ms` run out; leadership errors also refresh metadata.
* With `enable_idempotence`, the producer asks InitProducerId once and numbers every partition's
  records; a retried batch keeps its sequence, so the broker writes it at most once. A
  partition's batches reach the broker in sequence order: one is written only behind older
  unacknowledged ones in flight on the same connection (checked again when the request is
  written, since the connection they went on may have broken since the batch was drained).
* With `transactional_id` (which implies idempotence), records are sent in transactions:

      producer = Producer(bootstrap, transactional_id="orders-1")
      await producer.init_transactions()
      await producer.begin_transaction()
      await producer.send("out", b"v")
      await producer.send_offsets_to_transaction({tp: next_offset}, consumer.group_metadata())
      await producer.commit_transaction()     # or abort_transaction()

  The state machine and the coordinator requests are `transaction_manager`'s; the sender only
  holds back each partition's batches until the partition was added to the transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any, Self

from zkafka.client.accumulator import EncodedRecords, ProducerBatch, RecordAccumulator, SequenceNumbers
from zkafka.client.cluster import METADATA_ERRORS, NO_LEADER, Cluster
from zkafka.client.connection import ConnectionError_
from zkafka.client.errors import (
    BrokerUnavailableError,
    ClientClosedError,
    ClientTimeoutError,
    ConfigError,
    RecordTooLargeError,
    TransactionStateError,
)
from zkafka.client.partitioner import StickyPartitioner, partition_for_key
from zkafka.client.security import ClientSecurity
from zkafka.client.transaction_manager import TransactionManager
from zkafka.client.types import ConsumerGroupMetadata, OffsetAndMetadata, RecordMetadata, TopicPartition
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.messages import (
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceResponse,
)
from zkafka.records import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, RecordHeader
from zkafka.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD

log = logging.getLogger(__name__)

COMPRESSION_CODECS = {"none": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}
_ZSTD_MIN_PRODUCE_VERSION = 7
_MAX_IDEMPOTENT_IN_FLIGHT = 5

Bytes = bytes | bytearray | memoryview | str


def parse_acks(acks: int | str) -> int:
    text = str(acks).strip().lower()
    if text == "all":
        return -1
    if text in ("0", "1", "-1"):
        return int(text)
    raise ConfigError(f"acks must be 0, 1, -1 or 'all', got {acks!r}")


def parse_compression(codec: str | int | None) -> int:
    if codec is None:
        return NONE
    if isinstance(codec, int) and codec in COMPRESSION_CODECS.values():
        return codec
    name = str(codec).strip().lower()
    if name not in COMPRESSION_CODECS:
        raise ConfigError(f"unknown compression {codec!r} (one of {', '.join(COMPRESSION_CODECS)})")
    return COMPRESSION_CODECS[name]


def _as_bytes(value: Bytes | None, what: str) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise TypeError(f"the record {what} must be bytes, str or None, not {type(value).__name__}")


def _as_headers(headers: Iterable[tuple[str, Bytes | None]]) -> tuple[RecordHeader, ...]:
    out = []
    for item in headers:
        try:
            name, value = item
        except (TypeError, ValueError):
            raise TypeError(f"a header must be a (name, value) pair, got {item!r}") from None
        if not isinstance(name, str):
            raise TypeError(f"a header name must be str, not {type(name).__name__}")
        out.append((name, _as_bytes(value, f"header {name!r} value")))
    return tuple(out)


class Producer:
    def __init__(
        self,
        bootstrap_servers: str | list[str] | None = None,
        *,
        zookeeper_connect: str | None = None,
        zookeeper_listener_name: str | None = None,
        client_id: str = "zkafka-producer",
        acks: int | str = -1,
        linger_ms: float = 5,
        batch_size: int = 16384,
        compression: str | int | None = None,
        enable_idempotence: bool = False,
        max_in_flight: int = 5,
        retries: int = 2_147_483_647,
        retry_backoff_ms: int = 100,
        request_timeout_ms: int = 30_000,
        delivery_timeout_ms: int = 120_000,
        max_block_ms: int = 60_000,
        max_request_size: int = 1_048_576,
        buffer_memory: int = 33_554_432,
        metadata_max_age_ms: int = 300_000,
        allow_auto_topic_creation: bool = True,
        security: ClientSecurity | None = None,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60_000,
    ) -> None:
        self.acks = parse_acks(acks)
        if transactional_id is not None:
            if not transactional_id:
                raise ConfigError("transactional_id must not be empty")
            if transaction_timeout_ms < 1:
                raise ConfigError(f"transaction_timeout_ms must be >= 1, got {transaction_timeout_ms}")
            enable_idempotence = True  # Kafka's rule: a transactional producer is idempotent
        self.compression = parse_compression(compression)
        if linger_ms < 0:
            raise ConfigError(f"linger_ms must be >= 0, got {linger_ms}")
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        if max_in_flight < 1:
            raise ConfigError(f"max_in_flight must be >= 1, got {max_in_flight}")
        if retries < 0:
            raise ConfigError(f"retries must be >= 0, got {retries}")
        if max_request_size < 128 or buffer_memory < max_request_size:
            raise ConfigError("max_request_size must be >= 128 and buffer_memory >= max_request_size")
        if delivery_timeout_ms < request_timeout_ms + linger_ms:
            # Kafka's rule, so that a batch gets at least one full attempt
            raise ConfigError("delivery_timeout_ms must be >= linger_ms + request_timeout_ms")
        if enable_idempotence:
            if self.acks != -1:
                raise ConfigError("enable_idempotence requires acks=-1 (all)")
            if max_in_flight > _MAX_IDEMPOTENT_IN_FLIGHT:
                raise ConfigError(f"enable_idempotence requires max_in_flight <= {_MAX_IDEMPOTENT_IN_FLIGHT}")
            if retries == 0:
                raise ConfigError("enable_idempotence requires retries > 0")
        self.idempotent = enable_idempotence
        self.linger = linger_ms / 1000
        self.batch_size = batch_size
        self.max_in_flight = max_in_flight
        self.retries = retries
        self.retry_backoff = retry_backoff_ms / 1000
        self.request_timeout_ms = request_timeout_ms
        self.delivery_timeout = delivery_timeout_ms / 1000
        self.max_block = max_block_ms / 1000
        self.max_request_size = max_request_size
        self.buffer_memory = buffer_memory
        self.cluster = Cluster(
            bootstrap_servers,
            zookeeper_connect=zookeeper_connect,
            zookeeper_listener_name=zookeeper_listener_name,
            client_id=client_id,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            metadata_max_age_ms=metadata_max_age_ms,
            allow_auto_topic_creation=allow_auto_topic_creation,
            security=security,
        )
        self._accumulator = RecordAccumulator(batch_size)
        self._partitioner = StickyPartitioner()
        self._sequences = SequenceNumbers()
        self._in_flight_batches: set[ProducerBatch] = set()
        self._requests_per_node: dict[int, int] = defaultdict(int)
        self._in_flight_by_partition: dict[TopicPartition, list[ProducerBatch]] = defaultdict(list)
        self._acknowledged: set[TopicPartition] = set()
        self._request_tasks: set[asyncio.Task[None]] = set()
        self._sender: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._space: asyncio.Event | None = None
        self._flushing = 0
        self._closing = False
        self._closed = False
        self._fatal: BaseException | None = None
        self._txn = (
            TransactionManager(
                self.cluster, self._sequences, transactional_id, transaction_timeout_ms, max_block_ms
            )
            if transactional_id is not None
            else None
        )

    # -- lifecycle ---------------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Connect and learn the cluster (optional: the first `send` does it too)."""
        self._ensure_sender()
        await self.cluster.bootstrap()

    def _ensure_sender(self) -> None:
        if self._closed or self._closing:
            raise ClientClosedError("producer closed")
        if self._fatal is not None:
            raise self._fatal
        if self._sender is None:
            self._wake = asyncio.Event()
            self._space = asyncio.Event()
            self.cluster.add_listener(self._wake)
            self._sender = asyncio.get_running_loop().create_task(self._run_sender(), name="zkafka-producer")

    async def flush(self, timeout: float | None = None) -> None:
        """Send everything buffered now and wait until each of those records is acknowledged or
        failed (failures are reported through the records' futures, not raised here)."""
        if self._sender is None:
            return
        waiting = [b.done for b in self._accumulator.batches()] + [b.done for b in self._in_flight_batches]
        if not waiting:
            return
        self._flushing += 1
        self._poke()
        try:
            _, not_done = await asyncio.wait(waiting, timeout=timeout)
        finally:
            self._flushing -= 1
        if not_done:
            raise ClientTimeoutError(f"flush timed out with {len(not_done)} batches still unacknowledged")

    async def close(self, timeout: float | None = None) -> None:
        """Flush (within `timeout`), then stop. Records still unsent fail with ClientClosedError."""
        if self._closed:
            return
        self._closing = True
        try:
            if self._sender is not None and self._fatal is None:
                with contextlib.suppress(ClientTimeoutError):
                    await self.flush(timeout)
        finally:
            self._closed = True
            if self._sender is not None:
                self._sender.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._sender
            for task in list(self._request_tasks):
                task.cancel()
            if self._request_tasks:
                await asyncio.gather(*self._request_tasks, return_exceptions=True)
            error = ClientClosedError("producer closed before the record was sent")
            for batch in [*self._accumulator.batches(), *self._in_flight_batches]:
                batch.fail(error)
            self._accumulator.queues.clear()
            await self.cluster.close()

    # -- sending -------------------------------------------------------------------------------
    async def send(
        self,
        topic: str,
        value: Bytes | None = None,
        key: Bytes | None = None,
        headers: Iterable[tuple[str, Bytes | None]] = (),
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> asyncio.Future[RecordMetadata]:
        """Queue one record; the returned future resolves to its RecordMetadata once the broker
        acknowledged it (at once with offset -1 for acks=0) or fails with the error."""
        if self._sender is None or self._closing or self._fatal is not None:
            self._ensure_sender()
        if self._txn is not None:
            self._txn.check_send()
        key_bytes = key if key is None or type(key) is bytes else _as_bytes(key, "key")
        value_bytes = value if value is None or type(value) is bytes else _as_bytes(value, "value")
        record_headers = _as_headers(headers) if headers else ()
        if timestamp_ms is None:
            timestamp_ms = int(time.time() * 1000)
        elif not isinstance(timestamp_ms, int) or timestamp_ms < 0:
            raise ValueError(f"timestamp_ms must be a non-negative int, got {timestamp_ms!r}")
        meta = self.cluster.metadata.topics.get(topic)
        if meta is None or not meta.partitions:
            meta = await self.cluster.topic(topic, timeout=self.max_block)
        count = meta.partition_count
        if partition is None:
            if key_bytes is not None:
                partition = partition_for_key(key_bytes, count)
            else:
                partition = self._partitioner.partition(topic, count, meta.available_partitions)
        elif not isinstance(partition, int) or not 0 <= partition < count:
            raise KafkaError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"partition {partition!r} does not exist: topic {topic!r} has {count} partitions",
            )
        size = len(key_bytes or b"") + len(value_bytes or b"") + 100
        if size > self.max_request_size:
            raise RecordTooLargeError(
                f"the record is about {size} bytes, more than max_request_size {self.max_request_size}"
            )
        if self._accumulator.buffered_bytes >= self.buffer_memory:
            await self._wait_for_space()
        tp = TopicPartition(topic, partition)
        if self._txn is not None:
            self._txn.record_partition(tp)
        future, new_batch = self._accumulator.append(
            tp, timestamp_ms, key_bytes, value_bytes, record_headers, time.monotonic()
        )
        if new_batch:
            if key_bytes is None and len(self._accumulator.queues[tp]) > 1:
                # the sticky partition's previous batch is now complete: move on (KIP-480)
                self._partitioner.on_new_batch(topic, count, meta.available_partitions)
            self._poke()
        elif self._accumulator.is_full(self._accumulator.queues[tp][-1]):
            self._poke()
        return future

    async def send_encoded(
        self, topic: str, records: EncodedRecords, partition: int | None = None
    ) -> asyncio.Future[RecordMetadata]:
        """Queue records the caller encoded itself (a v2 records area, no per-record objects) as
        one batch of their own: for writers that encode whole columns at once (the Spark sink).
        Without `partition` the sticky partitioner picks one, and moves on as after any batch.
        The future resolves to where the first record landed; retries, idempotence and
        transactions are those of every batch."""
        if self._sender is None or self._closing or self._fatal is not None:
            self._ensure_sender()
        if self._txn is not None:
            self._txn.check_send()
        meta = self.cluster.metadata.topics.get(topic)
        if meta is None or not meta.partitions:
            meta = await self.cluster.topic(topic, timeout=self.max_block)
        count = meta.partition_count
        sticky = partition is None
        if partition is None:
            partition = self._partitioner.partition(topic, count, meta.available_partitions)
        elif not isinstance(partition, int) or not 0 <= partition < count:
            raise KafkaError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"partition {partition!r} does not exist: topic {topic!r} has {count} partitions",
            )
        size = len(records.data) + 100
        if size > self.max_request_size:
            raise RecordTooLargeError(
                f"the batch is about {size} bytes, more than max_request_size {self.max_request_size}"
            )
        if self._accumulator.buffered_bytes >= self.buffer_memory:
            await self._wait_for_space()
        tp = TopicPartition(topic, partition)
        if self._txn is not None:
            self._txn.record_partition(tp)
        future = self._accumulator.append_encoded(tp, records, time.monotonic())
        if sticky:
            self._partitioner.on_new_batch(topic, count, meta.available_partitions)
        self._poke()
        return future

    async def send_and_wait(
        self,
        topic: str,
        value: Bytes | None = None,
        key: Bytes | None = None,
        headers: Iterable[tuple[str, Bytes | None]] = (),
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> RecordMetadata:
        future = await self.send(topic, value, key, headers, partition, timestamp_ms)
        return await future

    async def partitions_for(self, topic: str) -> list[int]:
        meta = await self.cluster.topic(topic, timeout=self.max_block)
        return sorted(meta.partitions)

    async def _wait_for_space(self) -> None:
        assert self._space is not None
        deadline = time.monotonic() + self.max_block
        while self._accumulator.buffered_bytes >= self.buffer_memory:
            self._space.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ClientTimeoutError(
                    f"buffer_memory ({self.buffer_memory} bytes) stayed full for max_block_ms"
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._space.wait(), remaining)
            if self._fatal is not None:
                raise self._fatal

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    # -- the sender ----------------------------------------------------------------------------
    async def _run_sender(self) -> None:
        assert self._wake is not None
        try:
            while True:
                self._wake.clear()
                if self._txn is not None:
                    if self._txn.pending:
                        await self._add_partitions()
                elif self.idempotent and not self._sequences.has_id and self._accumulator:
                    await self._init_producer_id()
                delay = self._drain(time.monotonic())
                if delay is None:
                    await self._wake.wait()
                else:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), max(delay, 0.0005))
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # a bug or a fatal error: fail every record instead of hanging
            log.exception("producer sender stopped")
            self._fatal = e if isinstance(e, Exception) else ClientClosedError(str(e))
            for batch in [*self._accumulator.batches(), *self._in_flight_batches]:
                batch.fail(self._fatal)
            self._accumulator.queues.clear()
            if self._space is not None:
                self._space.set()

    def _drain(self, now: float) -> float | None:
        """Send what is ready: one request per leader per pass, each with at most one batch per
        partition, passes repeated while requests may still be added. Returns the seconds until
        something else will be ready (None: nothing is waiting on a timer)."""
        delay: float | None = None
        for _ in range(self.max_in_flight):
            ready, pass_delay, need_metadata = self._ready_batches(now)
            if pass_delay is not None:
                delay = _min(delay, pass_delay)
            if need_metadata:
                self.cluster.request_refresh()
            if not ready:
                break
            for node, batches in ready.items():
                self._send_to(node, batches)
        return delay

    def _ready_batches(self, now: float) -> tuple[dict[int, list[ProducerBatch]], float | None, bool]:
        """(leader -> the head batches to send to it now, seconds until the next timer, whether
        metadata is missing)."""
        flushing = self._flushing > 0 or self._closing
        metadata = self.cluster.metadata
        delay: float | None = None
        need_metadata = self.cluster.metadata_is_stale
        ready: dict[int, list[ProducerBatch]] = defaultdict(list)
        for tp, queue in self._accumulator.queues.items():
            if not queue:
                continue
            batch = queue[0]
            if now - batch.created > self.delivery_timeout:
                self._expire(queue, now)
                if not queue:
                    continue
                batch = queue[0]
            if batch.retry_at > now:
                delay = _min(delay, batch.retry_at - now)
                continue
            if not (flushing or len(queue) > 1 or batch.size >= self.batch_size or batch.body is not None):
                linger_left = batch.created + self.linger - now
                if linger_left > 0:
                    delay = _min(delay, linger_left)
                    continue
            if self._txn is not None and not self._txn.may_send(tp):
                continue  # waits for AddPartitionsToTxn, which the sender loop sends
            in_flight = self._in_flight_by_partition.get(tp)
            if in_flight and not self._may_add_in_flight(tp, in_flight):
                continue  # a response will wake us
            leader = metadata.leader(tp)
            if leader == NO_LEADER:
                need_metadata = True
                delay = _min(delay, self.retry_backoff)
                continue
            if self._requests_per_node[leader] >= self.max_in_flight:
                continue
            ready[leader].append(batch)
        return ready, delay, need_metadata

    def _may_add_in_flight(self, tp: TopicPartition, in_flight: list[ProducerBatch]) -> bool:
        if len(in_flight) >= self.max_in_flight:
            return False
        if not self.idempotent:
            return True
        # Until the broker acknowledged one batch of this producer for the partition it has no
        # state to check a sequence against and accepts any: a second batch overtaking a lost
        # first one would be written, and the retried first one refused. So: one at a time.
        if tp not in self._acknowledged:
            return False
        # A batch whose connection broke is about to be retried; a younger batch sent now on a
        # new connection could reach the broker first.
        return not any(b.conn is not None and b.conn.is_closed for b in in_flight)  # type: ignore[attr-defined]

    def _expire(self, queue: Any, now: float) -> None:
        while queue and now - queue[0].created > self.delivery_timeout:
            batch = queue.popleft()
            self._fail(
                batch,
                ClientTimeoutError(
                    f"{len(batch)} records for {batch.tp} expired after {self.delivery_timeout:g} s "
                    f"(delivery_timeout_ms) without being acknowledged"
                ),
            )

    def _send_to(self, node: int, candidates: list[ProducerBatch]) -> None:
        batches: list[ProducerBatch] = []
        total = 0
        for batch in candidates:
            queue = self._accumulator.queues[batch.tp]
            sequence = self._sequences.sequence_for(batch) if self.idempotent else NO_SEQUENCE
            try:
                data = batch.seal(
                    self.compression,
                    self._sequences.producer_id if self.idempotent else NO_PRODUCER_ID,
                    self._sequences.producer_epoch if self.idempotent else NO_PRODUCER_EPOCH,
                    sequence,
                    is_transactional=self._txn is not None,
                )
            except Exception as e:  # e.g. a timestamp out of range: only this batch is bad
                queue.popleft()
                self._fail(batch, KafkaError(ErrorCode.INVALID_RECORD, f"cannot encode batch: {e}"))
                continue
            if batches and total + len(data) > self.max_request_size:
                break  # the rest waits for the next request to this broker
            queue.popleft()
            batches.append(batch)
            total += len(data)
        if not batches:
            return
        for batch in batches:
            batch.in_flight = True
            batch.attempts += 1
            self._in_flight_batches.add(batch)
            self._in_flight_by_partition[batch.tp].append(batch)
        self._requests_per_node[node] += 1
        task = asyncio.get_running_loop().create_task(self._produce(node, batches))
        self._request_tasks.add(task)
        task.add_done_callback(self._request_tasks.discard)

    async def _produce(self, node: int, assigned: list[ProducerBatch]) -> None:
        batches = assigned  # until the connection is known: then the ones written on it
        try:
            try:
                conn = await self.cluster.connection(node)
                if self.idempotent:
                    batches = self._writable_on(conn, assigned)
                    if not batches:
                        return
                for batch in batches:
                    batch.conn = conn
                request = self._produce_request(batches)
                version = conn.pick_version(ProduceRequest.API_KEY)
                if self.compression == ZSTD and version < _ZSTD_MIN_PRODUCE_VERSION:
                    raise KafkaError(
                        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                        f"broker {node} takes Produce up to v{version}; "
                        f"zstd needs v{_ZSTD_MIN_PRODUCE_VERSION}",
                    )
                if self.acks == 0:
                    conn.send_oneway(request, version=version)
                    resp = None
                else:
                    resp = await self.cluster.send_on(
                        conn, node, request, version=version, timeout=self.request_timeout_ms / 1000 + 1
                    )
            except (ConnectionError_, ClientTimeoutError, BrokerUnavailableError) as e:
                for batch in batches:
                    self._retry_or_fail(batch, e, refresh=True)
                return
            except KafkaError as e:
                for batch in batches:
                    self._fail(batch, e)
                return
            if resp is None:
                for batch in batches:
                    self._succeed(batch, -1, -1)
                return
            assert isinstance(resp, ProduceResponse)
            self._handle_response(resp, batches)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # never leave records hanging on a bug in response handling
            log.exception("unexpected error handling a produce response")
            for batch in batches:
                if not batch.done.done():
                    self._fail(batch, e)
        finally:
            self._requests_per_node[node] -= 1
            for batch in batches:
                if batch.in_flight:
                    batch.in_flight = False
                self._in_flight_batches.discard(batch)
                self._in_flight_by_partition[batch.tp].remove(batch)
            self._poke()

    def _produce_request(self, batches: list[ProducerBatch]) -> ProduceRequest:
        by_topic: dict[str, list[ProduceRequest.PartitionProduceData]] = defaultdict(list)
        for batch in batches:
            by_topic[batch.tp.topic].append(
                ProduceRequest.PartitionProduceData(index=batch.tp.partition, records=batch.encoded)
            )
        return ProduceRequest(
            transactional_id=self._txn.transactional_id if self._txn is not None else None,
            acks=self.acks,
            timeout_ms=self.request_timeout_ms,
            topic_data=[
                ProduceRequest.TopicProduceData(name=t, partition_data=p) for t, p in by_topic.items()
            ],
        )

    def _writable_on(self, conn: object, batches: list[ProducerBatch]) -> list[ProducerBatch]:
        """The batches that may be written on `conn` now; the others go back to their queue.

        A numbered batch may follow only batches of its partition that are acknowledged or in
        flight on this same connection (TCP then keeps them in order). The sender checked that
        when it drained the batch, but the request is written a loop turn or more later, after
        `connection()`: meanwhile the connection the older batches were on may have broken and
        this be a new one. Written here first, the batch would be appended ahead of their
        retries, and five such could push a retried batch out of the broker's window of five
        (OUT_OF_ORDER_SEQUENCE_NUMBER for records it has in fact written)."""
        writable = []
        for batch in batches:
            # (`encoded` is None when an older batch failed meanwhile and this one was renumbered)
            if batch.encoded is not None and all(
                o.in_flight and o.conn is conn for o in self._sequences.unacked_before(batch)
            ):
                writable.append(batch)
                continue
            log.debug("holding %r back: an older batch of it is not in flight on %r", batch, conn)
            batch.in_flight = False
            batch.attempts -= 1  # never written: not an attempt
            self._in_flight_batches.discard(batch)
            self._in_flight_by_partition[batch.tp].remove(batch)
            self._accumulator.requeue(batch)  # behind the older ones, which are retried first
        return writable

    def _handle_response(self, resp: ProduceResponse, batches: list[ProducerBatch]) -> None:
        by_tp = {batch.tp: batch for batch in batches}
        for topic in resp.responses:
            for p in topic.partition_responses:
                batch = by_tp.pop(TopicPartition(topic.name, p.index), None)
                if batch is None:
                    continue
                code = ErrorCode.lookup(p.error_code)
                if code in (ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER):
                    self._succeed(batch, p.base_offset, p.log_append_time_ms)
                    continue
                error = KafkaError(p.error_code, p.error_message or f"{batch.tp}: {code.message}")
                if code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and self._gap_ahead(batch):
                    self._retry_or_fail(batch, error, refresh=False)
                elif code.retriable or code in METADATA_ERRORS:
                    self._retry_or_fail(batch, error, refresh=code in METADATA_ERRORS)
                else:
                    self._fail(batch, error)
        for batch in by_tp.values():
            self._retry_or_fail(
                batch, KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"no answer for {batch.tp}"), refresh=True
            )

    def _gap_ahead(self, batch: ProducerBatch) -> bool:
        """OUT_OF_ORDER_SEQUENCE is expected, and retrying right, when an earlier batch of the
        partition is still unacknowledged or this batch's sequence was moved after a failure."""
        return not self._sequences.is_first_unacked(batch) or batch.sent_sequence != batch.base_sequence

    def _retry_or_fail(self, batch: ProducerBatch, error: BaseException, *, refresh: bool) -> None:
        now = time.monotonic()
        if self._closed or batch.attempts > self.retries or now - batch.created >= self.delivery_timeout:
            self._fail(batch, error)
            return
        log.debug("retrying %r after %s", batch, error)
        if refresh:
            self.cluster.request_refresh()
        batch.in_flight = False
        batch.conn = None
        batch.retry_at = now + self.retry_backoff
        self._in_flight_batches.discard(batch)
        self._accumulator.requeue(batch)

    def _succeed(self, batch: ProducerBatch, base_offset: int, log_append_time: int) -> None:
        if self.idempotent:
            self._sequences.acknowledged(batch)
            self._acknowledged.add(batch.tp)
        self._accumulator.release(batch)
        batch.complete(base_offset, log_append_time)
        self._space_freed()

    def _fail(self, batch: ProducerBatch, error: BaseException) -> None:
        if self.idempotent:
            self._sequences.failed(batch)
        if self._txn is not None:
            self._txn.on_send_failure(error)
        self._accumulator.release(batch)
        batch.fail(error)
        self._space_freed()

    def _space_freed(self) -> None:
        if self._space is not None and self._accumulator.buffered_bytes < self.buffer_memory:
            self._space.set()

    async def _init_producer_id(self) -> None:
        deadline = time.monotonic() + self.max_block
        while True:
            try:
                resp = await self.cluster.send_any(
                    InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=2_147_483_647)
                )
                assert isinstance(resp, InitProducerIdResponse)
                code = ErrorCode.lookup(resp.error_code)
                if code == ErrorCode.NONE:
                    self._sequences.set_identity(resp.producer_id, resp.producer_epoch)
                    log.debug("producer id %d epoch %d", resp.producer_id, resp.producer_epoch)
                    return
                error: Exception = KafkaError(resp.error_code, f"InitProducerId: {code.message}")
                if not code.retriable:
                    raise error
            except (ConnectionError_, ClientTimeoutError, BrokerUnavailableError) as e:
                error = e
            if time.monotonic() >= deadline:
                raise error
            await asyncio.sleep(self.retry_backoff)

    async def _add_partitions(self) -> None:
        """AddPartitionsToTxn for the partitions new to the transaction; when that fails, their
        batches fail with the transaction's error (the transaction must be aborted)."""
        assert self._txn is not None
        try:
            await self._txn.add_partitions()
        except Exception as e:  # the coordinator's refusal, a timeout, or no transaction open
            for tp in list(self._txn.pending):
                queue = self._accumulator.queues.get(tp)
                while queue:
                    self._fail(queue.popleft(), e)
            self._txn.pending.clear()

    # -- transactions (Kafka's producer API) -----------------------------------------------------
    def _transactions(self) -> TransactionManager:
        if self._txn is None:
            raise TransactionStateError("the producer has no transactional_id")
        if self._closed or self._closing:
            raise ClientClosedError("producer closed")
        return self._txn

    async def init_transactions(self) -> None:
        """Get the producer id and epoch for the transactional id: this fences every older
        producer with the same id and completes (aborts) a transaction it left open."""
        txn = self._transactions()
        self._ensure_sender()
        await txn.init()

    async def begin_transaction(self) -> None:
        self._transactions().begin()

    async def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
        group_metadata: str | ConsumerGroupMetadata,
    ) -> None:
        """Commit a consumer group's offsets (the next offset to read per partition) as part of
        the transaction: the group sees them only if the transaction commits. `group_metadata`
        is a group id or a member's `GroupConsumer.group_metadata()` (then a member fenced by a
        rebalance cannot commit)."""
        await self._transactions().send_offsets(offsets, group_metadata)

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit. Raises TransactionAbortableError when a send of the transaction
        failed (abort it then), FatalProducerError when a newer producer fenced this one."""
        txn = self._transactions()
        txn.check_commit()
        await self.flush(timeout)
        await txn.end(commit=True)

    async def abort_transaction(self, timeout: float | None = None) -> None:
        """Wait for the records already handed to the broker, then abort: no read_committed
        consumer ever sees the transaction's records or offsets."""
        txn = self._transactions()
        txn.check_abort()
        await self.flush(timeout)
        await txn.end(commit=False)

    # -- introspection (tests, tools) ------------------------------------------------------------
    @property
    def producer_id(self) -> int:
        return self._sequences.producer_id

    @property
    def buffered_bytes(self) -> int:
        return self._accumulator.buffered_bytes


def _min(a: float | None, b: float) -> float:
    return b if a is None else min(a, b)

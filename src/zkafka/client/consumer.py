"""`Consumer`: reads assigned partitions with Fetch (no consumer group yet).

    async with Consumer("127.0.0.1:9092", auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("events", 0)])
        async for record in consumer:
            ...

Positions: every assigned partition has a position, the offset of the next record `poll`
returns. A new assignment (or `seek_to_beginning/end`) leaves it unknown until ListOffsets
resolves it by `auto_offset_reset` ("earliest", "latest", or "none", which raises
NoOffsetForPartitionError). OFFSET_OUT_OF_RANGE resets the same way.

Fetching: one Fetch in flight per leader, covering that leader's partitions that have nothing
buffered. A response is decoded into records at once (skipping records below the fetch offset,
control batches, with read_committed the aborted transactions' records (`aborted`), and checking
CRCs), buffered, and the next Fetch for that leader starts right
away, so the network works while the application processes the previous records. Leadership
errors and broken connections refresh metadata; the next Fetch goes to the new leader.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Self, TypeVar

from zkafka.client.aborted import AbortedTransactions
from zkafka.client.cluster import METADATA_ERRORS, NO_LEADER, Cluster
from zkafka.client.connection import ConnectionError_
from zkafka.client.errors import (
    BrokerUnavailableError,
    ClientClosedError,
    ClientTimeoutError,
    ConfigError,
    NoOffsetForPartitionError,
)
from zkafka.client.offsets import READ_COMMITTED, READ_UNCOMMITTED, list_offsets, offset_spec
from zkafka.client.security import ClientSecurity
from zkafka.client.types import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ConsumedRecord,
    OffsetAndTimestamp,
    TopicPartition,
)
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.messages import FetchRequest, FetchResponse
from zkafka.records import (
    BatchHeader,
    CorruptRecordError,
    InvalidRecordError,
    is_crc_valid,
    iter_headers,
    iter_records,
)

log = logging.getLogger(__name__)

FETCH_MAX_VERSION = 11
"""The last Fetch version without topic ids and tagged fields."""
_RESET_POLICIES = {"earliest": EARLIEST_TIMESTAMP, "latest": LATEST_TIMESTAMP, "none": None}
_ISOLATION = {"read_uncommitted": READ_UNCOMMITTED, "read_committed": READ_COMMITTED}
T = TypeVar("T")
_new_record = tuple.__new__  # ConsumedRecord(...) without NamedTuple's keyword handling: the per-record cost


@dataclass(slots=True)
class _PartitionState:
    position: int | None = None
    reset_to: int | None = None
    """A pending ListOffsets spec (EARLIEST/LATEST or a timestamp) that will set `position`."""
    high_watermark: int = -1
    log_start_offset: int = -1
    last_stable_offset: int = -1
    retry_at: float = 0.0
    paused: bool = False


@dataclass(slots=True)
class _Fetched:
    """Decoded records of one partition from one Fetch, waiting to be returned by `poll`."""

    tp: TopicPartition
    fetch_offset: int
    records: deque[ConsumedRecord]
    next_offset: int
    """Where the position goes once every record here was returned (past control batches)."""
    batches: object = None
    """`BatchConsumer` only: its undecoded `FetchedBatches` (and `records` stays empty)."""


class Consumer:
    def __init__(
        self,
        bootstrap_servers: str | list[str] | None = None,
        *,
        zookeeper_connect: str | None = None,
        zookeeper_listener_name: str | None = None,
        client_id: str = "zkafka-consumer",
        auto_offset_reset: str = "latest",
        fetch_max_wait_ms: int = 500,
        fetch_min_bytes: int = 1,
        fetch_max_bytes: int = 52_428_800,
        max_partition_fetch_bytes: int = 1_048_576,
        max_poll_records: int = 500,
        isolation_level: str = "read_uncommitted",
        check_crcs: bool = True,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        metadata_max_age_ms: int = 300_000,
        security: ClientSecurity | None = None,
    ) -> None:
        if auto_offset_reset not in _RESET_POLICIES:
            raise ConfigError(
                f"auto_offset_reset must be earliest, latest or none, got {auto_offset_reset!r}"
            )
        if isolation_level not in _ISOLATION:
            raise ConfigError(
                f"isolation_level must be read_uncommitted or read_committed, got {isolation_level!r}"
            )
        for name, value in (
            ("fetch_max_wait_ms", fetch_max_wait_ms),
            ("fetch_min_bytes", fetch_min_bytes),
        ):
            if value < 0:
                raise ConfigError(f"{name} must be >= 0, got {value}")
        for name, value in (
            ("fetch_max_bytes", fetch_max_bytes),
            ("max_partition_fetch_bytes", max_partition_fetch_bytes),
            ("max_poll_records", max_poll_records),
        ):
            if value < 1:
                raise ConfigError(f"{name} must be >= 1, got {value}")
        self.reset_policy = _RESET_POLICIES[auto_offset_reset]
        self.isolation_level = _ISOLATION[isolation_level]
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.fetch_min_bytes = fetch_min_bytes
        self.fetch_max_bytes = fetch_max_bytes
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.max_poll_records = max_poll_records
        self.check_crcs = check_crcs
        self.cluster = Cluster(
            bootstrap_servers,
            zookeeper_connect=zookeeper_connect,
            zookeeper_listener_name=zookeeper_listener_name,
            client_id=client_id,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            metadata_max_age_ms=metadata_max_age_ms,
            security=security,
        )
        self._states: dict[TopicPartition, _PartitionState] = {}
        self._fetched: deque[_Fetched] = deque()
        self._buffered: set[TopicPartition] = set()
        self._fetches: dict[int, asyncio.Task[None]] = {}
        self._data: asyncio.Event | None = None
        self._errors: list[BaseException] = []
        self._iter_buffer: deque[ConsumedRecord] = deque()
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        self._closed = True
        tasks = list(self._fetches.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._fetches.clear()
        if self._data is not None:
            self._data.set()
        await self.cluster.close()

    # -- assignment and positions ------------------------------------------------------------
    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Consume exactly these partitions (replacing the previous assignment). Partitions kept
        from the previous assignment keep their positions."""
        wanted = [TopicPartition(*tp) for tp in partitions]
        for tp in wanted:
            if not isinstance(tp.topic, str) or not tp.topic or not isinstance(tp.partition, int):
                raise ValueError(f"not a topic-partition: {tp!r}")
            if tp.partition < 0:
                raise ValueError(f"partition numbers are >= 0, got {tp}")
        old = self._states
        self._states = {tp: old.get(tp) or _PartitionState() for tp in wanted}
        for tp in set(old) - set(self._states):
            self._drop_buffered(tp)
        self.cluster.add_topics({tp.topic for tp in wanted})

    async def assign_topic(self, topic: str) -> list[TopicPartition]:
        """Assign every partition of `topic` (as known now); returns them."""
        meta = await self.cluster.topic(topic)
        tps = [TopicPartition(topic, p) for p in sorted(meta.partitions)]
        self.assign([*self._states, *(tp for tp in tps if tp not in self._states)])
        return tps

    def assignment(self) -> set[TopicPartition]:
        return set(self._states)

    def _state(self, tp: TopicPartition | tuple[str, int]) -> _PartitionState:
        state = self._states.get(TopicPartition(*tp))
        if state is None:
            raise ValueError(f"{TopicPartition(*tp)} is not assigned to this consumer")
        return state

    def seek(self, tp: TopicPartition | tuple[str, int], offset: int) -> None:
        """The next `poll` returns records of `tp` from `offset` on."""
        if not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be an int >= 0, got {offset!r}")
        state = self._state(tp)
        state.position, state.reset_to, state.retry_at = offset, None, 0.0
        self._drop_buffered(TopicPartition(*tp))

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        self._seek_spec(partitions, EARLIEST_TIMESTAMP)

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        self._seek_spec(partitions, LATEST_TIMESTAMP)

    def _seek_spec(self, partitions: Iterable[TopicPartition], spec: int) -> None:
        for tp in partitions or list(self._states):
            state = self._state(tp)
            state.position, state.reset_to, state.retry_at = None, spec, 0.0
            self._drop_buffered(TopicPartition(*tp))

    async def position(self, tp: TopicPartition) -> int:
        """The offset of the next record `poll` will return for `tp` (resolving a pending reset)."""
        state = self._state(tp)
        if state.position is None:
            await self._resolve_positions()
        assert state.position is not None
        return state.position

    def highwater(self, tp: TopicPartition) -> int | None:
        """The high watermark of `tp` from the latest Fetch, None before the first one."""
        hw = self._state(tp).high_watermark
        return None if hw < 0 else hw

    def pause(self, *partitions: TopicPartition) -> None:
        for tp in partitions:
            self._state(tp).paused = True

    def resume(self, *partitions: TopicPartition) -> None:
        for tp in partitions:
            self._state(tp).paused = False
        self._start_fetches()

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The first offset of each partition whose record timestamp is >= the one given."""
        for tp, ts in timestamps.items():
            if not isinstance(ts, int) or ts < 0:
                raise ValueError(f"{tp}: a timestamp must be an int >= 0, got {ts!r}")
        return await list_offsets(self.cluster, dict(timestamps), isolation_level=self.isolation_level)

    async def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return await self._offsets(partitions, "earliest")

    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return await self._offsets(partitions, "latest")

    async def _offsets(self, partitions: Iterable[TopicPartition], spec: str) -> dict[TopicPartition, int]:
        found = await list_offsets(
            self.cluster, {tp: offset_spec(spec) for tp in partitions}, isolation_level=self.isolation_level
        )
        return {tp: (-1 if r is None else r.offset) for tp, r in found.items()}

    async def _resolve_positions(self) -> None:
        specs: dict[TopicPartition, int] = {}
        for tp, state in self._states.items():
            if state.position is not None:
                continue
            spec = state.reset_to if state.reset_to is not None else self.reset_policy
            if spec is None:
                raise NoOffsetForPartitionError(f"{tp} has no position and auto_offset_reset is 'none'")
            specs[tp] = spec
        if not specs:
            return
        found = await list_offsets(self.cluster, specs, isolation_level=self.isolation_level)
        for tp, result in found.items():
            state = self._states.get(tp)
            if state is None or state.position is not None:
                continue  # unassigned or sought meanwhile
            if result is None:  # a timestamp past the last record: start at the end
                end = await list_offsets(
                    self.cluster, {tp: LATEST_TIMESTAMP}, isolation_level=self.isolation_level
                )
                result = end[tp]
            state.position = 0 if result is None else result.offset
            state.reset_to = None

    # -- polling -------------------------------------------------------------------------------
    async def poll(self, timeout_ms: float = 0) -> list[ConsumedRecord]:
        """Records that arrived, up to `max_poll_records`; waits up to `timeout_ms` for some."""
        return await self._poll_with(lambda: self._take(self.max_poll_records), timeout_ms)

    async def _poll_with(self, take: Callable[[], list[T]], timeout_ms: float) -> list[T]:
        """What `take` returns once it returns something, fetching meanwhile; [] after `timeout_ms`."""
        if self._closed:
            raise ClientClosedError("consumer closed")
        if self._data is None:
            self._data = asyncio.Event()
        deadline = time.monotonic() + max(timeout_ms, 0) / 1000
        while True:
            self._raise_pending_error()
            taken = take()
            if taken:
                self._start_fetches()  # prefetch while the caller works on these
                return taken
            if not self._states:
                remaining = deadline - time.monotonic()
                if remaining > 0:
                    await asyncio.sleep(remaining)
                return []
            if any(s.position is None for s in self._states.values()):
                await self._resolve_positions()
            self._data.clear()
            self._start_fetches()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._data.wait(), min(remaining, self._next_retry_delay()))

    def __aiter__(self) -> AsyncIterator[ConsumedRecord]:
        return self

    async def __anext__(self) -> ConsumedRecord:
        while not self._iter_buffer:
            if self._closed:
                raise StopAsyncIteration
            self._iter_buffer.extend(await self.poll(1000))
        return self._iter_buffer.popleft()

    def _raise_pending_error(self) -> None:
        if self._errors:
            error = self._errors.pop(0)
            raise error

    def _take(self, limit: int) -> list[ConsumedRecord]:
        out: list[ConsumedRecord] = []
        while self._fetched and len(out) < limit:
            fetched = self._fetched[0]
            state = self._states.get(fetched.tp)
            if state is None or state.position != fetched.fetch_offset:
                self._fetched.popleft()  # unassigned or sought since the fetch: stale
                self._buffered.discard(fetched.tp)
                continue
            records = fetched.records
            n = min(limit - len(out), len(records))
            if n == len(records):
                out.extend(records)
                records.clear()
            else:
                out.extend(records.popleft() for _ in range(n))
            if records:
                fetched.fetch_offset = state.position = records[0].offset
            else:
                state.position = fetched.next_offset
                self._fetched.popleft()
                self._buffered.discard(fetched.tp)
        return out

    def _drop_buffered(self, tp: TopicPartition) -> None:
        if tp in self._buffered:
            self._fetched = deque(f for f in self._fetched if f.tp != tp)
            self._buffered.discard(tp)

    def _next_retry_delay(self) -> float:
        now = time.monotonic()
        waits = [s.retry_at - now for s in self._states.values() if s.retry_at > now]
        return max(min(waits), 0.001) if waits else 3600.0

    # -- fetching ------------------------------------------------------------------------------
    def _start_fetches(self) -> None:
        if self._closed:
            return
        now = time.monotonic()
        metadata = self.cluster.metadata
        by_leader: dict[int, dict[TopicPartition, int]] = defaultdict(dict)
        need_metadata = self.cluster.metadata_is_stale
        for tp, state in self._states.items():
            if state.position is None or state.paused or tp in self._buffered or state.retry_at > now:
                continue
            leader = metadata.leader(tp)
            if leader == NO_LEADER:
                need_metadata = True
                state.retry_at = now + self.cluster.retry_backoff
                continue
            by_leader[leader][tp] = state.position
        if need_metadata:
            self.cluster.request_refresh()
        for leader, positions in by_leader.items():
            task = self._fetches.get(leader)
            if task is not None and not task.done():
                continue
            task = asyncio.get_running_loop().create_task(self._fetch(leader, positions))
            self._fetches[leader] = task

    async def _fetch(self, leader: int, positions: dict[TopicPartition, int]) -> None:
        try:
            await self._fetch_once(leader, positions)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # surfaces from the next poll instead of dying silently in a task
            self._errors.append(e)
        finally:
            if self._fetches.get(leader) is asyncio.current_task():
                del self._fetches[leader]
            if self._data is not None:
                self._data.set()
            if not self._errors:
                self._start_fetches()

    async def _fetch_once(self, leader: int, positions: dict[TopicPartition, int]) -> None:
        by_topic: dict[str, list[FetchRequest.FetchPartition]] = defaultdict(list)
        for tp, offset in positions.items():
            by_topic[tp.topic].append(
                FetchRequest.FetchPartition(
                    partition=tp.partition,
                    current_leader_epoch=-1,
                    fetch_offset=offset,
                    last_fetched_epoch=-1,
                    log_start_offset=-1,
                    partition_max_bytes=self.max_partition_fetch_bytes,
                )
            )
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=self.fetch_max_wait_ms,
            min_bytes=self.fetch_min_bytes,
            max_bytes=self.fetch_max_bytes,
            isolation_level=self.isolation_level,
            session_id=0,
            session_epoch=-1,
            topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
        )
        try:
            resp = await self.cluster.send(
                leader,
                request,
                max_version=FETCH_MAX_VERSION,
                timeout=self.cluster.request_timeout + self.fetch_max_wait_ms / 1000,
            )
        except (ConnectionError_, ClientTimeoutError, BrokerUnavailableError) as e:
            log.debug("fetch from broker %d failed: %s", leader, e)
            self._back_off(positions)
            return
        assert isinstance(resp, FetchResponse)
        if resp.error_code != ErrorCode.NONE:
            code = ErrorCode.lookup(resp.error_code)
            if code.retriable:
                self._back_off(positions)
                return
            raise KafkaError(code, f"Fetch from broker {leader}: {code.message}")
        for topic in resp.responses:
            for p in topic.partitions:
                tp = TopicPartition(topic.topic, p.partition_index)
                if tp in positions:
                    self._partition_response(tp, positions[tp], p)

    def _back_off(self, positions: Iterable[TopicPartition]) -> None:
        retry_at = time.monotonic() + self.cluster.retry_backoff
        for tp in positions:
            state = self._states.get(tp)
            if state is not None:
                state.retry_at = retry_at
        self.cluster.request_refresh()

    def _partition_response(
        self, tp: TopicPartition, fetch_offset: int, p: FetchResponse.PartitionData
    ) -> None:
        state = self._states.get(tp)
        if state is None or state.position != fetch_offset or tp in self._buffered:
            return  # sought or unassigned while the fetch was out
        code = ErrorCode.lookup(p.error_code)
        if code == ErrorCode.NONE:
            state.high_watermark = p.high_watermark
            state.log_start_offset = p.log_start_offset
            state.last_stable_offset = p.last_stable_offset
            aborted = None
            if self.isolation_level == READ_COMMITTED and p.aborted_transactions:
                aborted = AbortedTransactions((a.producer_id, a.first_offset) for a in p.aborted_transactions)
            self._decode(tp, fetch_offset, p.records, aborted)
        elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
            if self.reset_policy is None:
                raise KafkaError(
                    code, f"offset {fetch_offset} is out of range for {tp} (auto_offset_reset=none)"
                )
            log.info("offset %d out of range for %s; resetting", fetch_offset, tp)
            state.position, state.reset_to = None, self.reset_policy
        elif code in METADATA_ERRORS or code.retriable:
            self._back_off([tp])
        else:
            raise KafkaError(code, f"Fetch {tp}: {code.message}")

    def _decode(
        self,
        tp: TopicPartition,
        fetch_offset: int,
        data: bytes | memoryview | None,
        aborted: AbortedTransactions | None = None,
    ) -> None:
        if not data:
            return
        accepted, next_offset = self._accepted_batches(tp, fetch_offset, data, aborted)
        if next_offset == fetch_offset:
            return
        topic, partition = tp
        records: deque[ConsumedRecord] = deque()
        append = records.append
        for header, first in accepted:
            timestamp_type = header.timestamp_type
            try:
                for r in iter_records(data, header):
                    if r.offset >= first:
                        append(
                            _new_record(
                                ConsumedRecord,
                                (
                                    topic,
                                    partition,
                                    r.offset,
                                    r.timestamp,
                                    timestamp_type,
                                    r.key,
                                    r.value,
                                    r.headers,
                                ),
                            )
                        )
            except (CorruptRecordError, InvalidRecordError) as e:
                raise corrupt_message(tp, first, e) from e
        self._fetched.append(_Fetched(tp, fetch_offset, records, next_offset))
        self._buffered.add(tp)

    def _accepted_batches(
        self,
        tp: TopicPartition,
        fetch_offset: int,
        data: bytes | memoryview,
        aborted: AbortedTransactions | None,
    ) -> tuple[list[tuple[BatchHeader, int]], int]:
        """The batches of one partition's fetched `data` whose records go to the application, each
        with the first offset to return from it (the position when it is reached), and the
        position after them all. Skipped: batches wholly below the fetch offset, control batches
        and, with read_committed, aborted transactions' batches. CRCs are checked here. When not a
        single batch is complete, the position stays at `fetch_offset` (fetch again), unless the
        data fills the partition's byte limit: then the batch can never fit, which is an error."""
        accepted: list[tuple[BatchHeader, int]] = []
        position = fetch_offset
        try:
            for header in iter_headers(data):
                if header.next_offset <= position:
                    continue
                if self.check_crcs and not is_crc_valid(data, header):
                    raise KafkaError(
                        ErrorCode.CORRUPT_MESSAGE,
                        f"{tp}: CRC mismatch in the batch at offset {header.base_offset}",
                    )
                if aborted is not None and aborted.skip(header):
                    pass  # an aborted transaction's records (read_committed)
                elif not header.is_control:
                    accepted.append((header, position))
                position = header.next_offset
        except (CorruptRecordError, InvalidRecordError) as e:
            raise corrupt_message(tp, position, e) from e
        if position == fetch_offset and len(data) >= self.max_partition_fetch_bytes:
            raise KafkaError(
                ErrorCode.RECORD_LIST_TOO_LARGE,
                f"{tp}: the batch at offset {fetch_offset} is larger than max_partition_fetch_bytes "
                f"({self.max_partition_fetch_bytes}); raise it to consume this partition",
            )
        return accepted, position


def corrupt_message(tp: TopicPartition, position: int, error: Exception) -> KafkaError:
    """CORRUPT_MESSAGE for records of `tp` that do not decode (reached at `position`)."""
    return KafkaError(ErrorCode.CORRUPT_MESSAGE, f"{tp} at offset {position}: {error}")

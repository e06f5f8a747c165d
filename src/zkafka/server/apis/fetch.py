"""Fetch: the read path for consumers and follower replicas, with long-poll.

Whole stored batches are returned as they sit in the segment file (`FileRecords`, read when the
response is written), starting with the batch that holds the fetch offset; consumers see data
below the high watermark only, followers everything the leader has. KIP-74: the first batch of
the first non-empty partition is returned whole even when larger than the limits, so a consumer
always makes progress. When less than `min_bytes` is available the request is parked
(`zkafka.server.delayed`) until an append or a high-watermark move makes enough data visible, or
`max_wait_ms` passes. A consumer with a `consumer_byte_rate` quota gets at most what its quota
allows per measurement, and the KIP-219 throttle time (`zkafka.server.client_quotas`). Fetch
sessions (v7+, KIP-227) are a layer around this handler (`fetch_session_layer.py`): what it
reads here is a plain request, the session's partitions included.

read_committed consumers (v4+, isolation_level 1) read below the last stable offset (LSO) only,
and each answer lists the aborted transactions (from the `.txnindex`es) that may have records in
what it returns, so the client drops them; the LSO is in every v4+ answer.

Fetch v0-v3 clients cannot read RecordBatch v2: their data is down-converted to magic 0 (v0-v1)
or magic 1 (v2-v3) message sets (`zkafka.records.legacy`), unless the topic's
`message.downconversion.enable` is false (UNSUPPORTED_VERSION). As KIP-283 has it, the stored
batches are read and converted one at a time and conversion stops at the partition's byte limit,
cutting only between whole messages (the first always whole): a large fetch is never read or
converted at once. Converted records are counted per topic (`fetchmessageconversions_total`).

Fetch v13 names topics by id (KIP-516), resolved through the metadata cache: an id no live topic
has answers its partitions with UNKNOWN_TOPIC_ID (the client refreshes its metadata), so a
consumer of a topic deleted and re-created under the same name never reads the new topic's data
as the old one's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field

from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.messages import FetchRequest, FetchResponse
from zkafka.protocol.schemas.fetch import FIRST_TOPIC_ID_VERSION
from zkafka.records.legacy import Converted, down_convert_within
from zkafka.server.apis.common import check_leader_epoch
from zkafka.server.dispatcher import FileRecords, RequestContext
from zkafka.server.partition import Partition
from zkafka.server.replica_manager import high_watermark_key, low_watermark_key, stable_offset_key
from zkafka.storage.errors import OffsetOutOfRangeError, StorageError
from zkafka.storage.log import Log
from zkafka.storage.naming import TopicPartition

log = logging.getLogger(__name__)

Resp = FetchResponse
LONG_POLL_TICK_S = 0.001
"""Kafka's purgatory expires requests on a 1 ms timing wheel, so an empty long-poll answer comes at
or just after `max_wait_ms`; clients that send their own deadline truncated to whole milliseconds
(kafka-go) rely on not hearing back before it."""


@dataclass(slots=True)
class _Read:
    response: Resp
    size: int = 0
    errors: bool = False
    partitions: list[TopicPartition] = field(default_factory=list)
    bytes_by_topic: dict[str, int] = field(default_factory=dict)


def handle(ctx: RequestContext, request: FetchRequest) -> Resp | Awaitable[Resp]:
    quota_max = _quota_max_bytes(ctx, request)
    first = _read(ctx, request, quota_max=quota_max)
    if first.size >= request.min_bytes or request.max_wait_ms <= 0 or first.errors or not first.partitions:
        _count(ctx, request, first)
        return _throttled(ctx, first, quota_max)
    return _long_poll(ctx, request, first, quota_max)


def _quota_max_bytes(ctx: RequestContext, request: FetchRequest) -> int | None:
    """A consumer's `consumer_byte_rate` bounds its response (Kafka's fetchMaxBytes: at most what
    the quota allows over the measured windows); replica fetches are not client quotas' business."""
    quotas = ctx.services.quotas
    if request.replica_id >= 0 or quotas is None or not quotas.enabled():
        return None
    return quotas.fetch_limit(ctx.principal, ctx.header.client_id)


def _throttled(ctx: RequestContext, read: _Read, quota_max: int | None) -> Resp:
    """Record the response's bytes against the consumer's quota; the throttle goes in the response
    (and mutes the connection when it is sent). The bytes read are sent, not withheld: the throttle
    that follows brings the client's average back to its bound."""
    if quota_max is not None:
        quotas = ctx.services.quotas
        assert quotas is not None
        read.response.throttle_time_ms = quotas.fetch(ctx.principal, ctx.header.client_id, read.size)
    return read.response


def _count(ctx: RequestContext, request: FetchRequest, read: _Read) -> None:
    """Bytes out and failed fetches of the response actually sent (a long-poll's first read is not)."""
    metrics = ctx.services.metrics
    if metrics is None:
        return
    follower = request.replica_id >= 0
    topics = metrics.topics
    for topic, nbytes in read.bytes_by_topic.items():
        topics.fetched(topic, nbytes, follower=follower)
    if read.errors:
        for t in read.response.responses:
            # Fetch v13 names topics by id only; an id no topic has is counted under no name
            name = t.topic or ctx.services.metadata.topic_name(t.topic_id) or ""
            for p in t.partitions:
                if p.error_code:
                    metrics.partition_error("Fetch", name, p.error_code, produce=False)


def _long_poll(
    ctx: RequestContext, request: FetchRequest, first: _Read, quota_max: int | None
) -> asyncio.Future[Resp]:
    """Park the fetch until enough is available (an append for a follower, a high-watermark move
    for a consumer) or `max_wait_ms`: a future completed from inside that append or move, so the
    follower's answer that lets the high watermark advance goes out on the next event-loop turn."""
    fut: asyncio.Future[Resp] = asyncio.get_running_loop().create_future()
    # what to watch, resolved once (Fetch v13's topic ids included): the first read answered any
    # unknown name at once, so every topic here has one
    watched = [
        (TopicPartition(name, p.partition), p.fetch_offset, p.partition_max_bytes)
        for t in request.topics
        if (name := _topic_name(ctx, t)) is not None
        for p in t.partitions
    ]
    is_follower = request.replica_id >= 0
    committed = _read_committed(ctx, request)

    if request.min_bytes <= 1:

        def enough() -> bool:
            return _anything_new(ctx, watched, is_follower, committed, request.replica_id)

    else:

        def enough() -> bool:
            return _available(ctx, watched, is_follower, committed, request.replica_id) >= request.min_bytes

    def answer(_enough: bool) -> None:
        if fut.done():  # the connection went away meanwhile
            return
        try:
            # The follower's position was recorded when the request arrived; recording it again
            # now would date it up to max_wait_ms later, long enough to take a replica that has
            # meanwhile left (a controlled shutdown) back into the ISR.
            final = _read(ctx, request, record_follower=False, quota_max=quota_max)
            _count(ctx, request, final)
            fut.set_result(_throttled(ctx, final, quota_max))
        except Exception as e:  # a bug: the network layer logs it and closes the connection
            fut.set_exception(e)

    # A follower waits for appends; a consumer for the high watermark (an append alone shows it
    # nothing), and a read_committed one for transaction markers too: they move its last stable
    # offset.
    if is_follower:
        keys: list[object] = list(first.partitions)
    elif committed:
        keys = [*map(high_watermark_key, first.partitions), *map(stable_offset_key, first.partitions)]
    else:
        keys = [high_watermark_key(tp) for tp in first.partitions]
    timeout_s = request.max_wait_ms / 1000 + LONG_POLL_TICK_S
    ctx.services.replicas.delayed.park(keys, enough, timeout_s, answer)
    return fut


# -- what the session layer's tracked follower sessions use (`fetch_session_layer.py`) -------------
def read(
    ctx: RequestContext,
    request: FetchRequest,
    topics: list[FetchRequest.FetchTopic],
    *,
    record_follower: bool,
) -> _Read:
    """One read of a follower's `request`, of `topics` instead of the request's own (no long-poll,
    no quota: the layer parks on its session)."""
    return _read(ctx, request, record_follower=record_follower, topics=topics)


def empty_read() -> _Read:
    return _Read(Resp(session_id=0))


def count_sent(ctx: RequestContext, request: FetchRequest, read: _Read) -> None:
    _count(ctx, request, read)


def follower_has_news(ctx: RequestContext, watched: Watched, replica_id: int, min_bytes: int) -> bool:
    """Would a follower's re-read of `watched` answer now (as a parked follower fetch decides)?"""
    if min_bytes <= 1:
        return _anything_new(ctx, watched, True, False, replica_id)
    return _available(ctx, watched, True, False, replica_id) >= min_bytes


FIRST_V2_FETCH_VERSION = 4


def _legacy_magic(api_version: int) -> int | None:
    """The message format a Fetch version can read, when it is not RecordBatch v2."""
    if api_version >= FIRST_V2_FETCH_VERSION:
        return None
    return 0 if api_version <= 1 else 1


def _down_converted(
    ctx: RequestContext,
    tp: TopicPartition,
    log_: Log,
    records: FileRecords,
    magic: int,
    limit: int,
    offset: int,
) -> Converted:
    if not log_.config.message_downconversion_enable:
        raise KafkaError(
            ErrorCode.UNSUPPORTED_VERSION,
            "message.downconversion.enable is false: fetch with version 4 or later",
        )
    converted = down_convert_within(records.batches(), magic, limit, offset)
    metrics = ctx.services.metrics
    if metrics is not None:
        metrics.converted(tp.topic, converted.records)
    return converted


def _topic_name(ctx: RequestContext, topic: FetchRequest.FetchTopic) -> str | None:
    """The topic a request's entry names: by name below v13, by id from v13 (None: unknown id)."""
    if ctx.api_version < FIRST_TOPIC_ID_VERSION:
        return topic.topic
    return ctx.services.metadata.topic_name(topic.topic_id)


READ_COMMITTED = 1


def _read_committed(ctx: RequestContext, request: FetchRequest) -> bool:
    return ctx.api_version >= FIRST_V2_FETCH_VERSION and request.isolation_level == READ_COMMITTED


def _visible_end(partition, is_follower: bool, read_committed: bool = False) -> int:  # type: ignore[no-untyped-def]
    if is_follower:
        return partition.log.log_end_offset
    return partition.last_stable_offset if read_committed else partition.high_watermark


Watched = list[tuple[TopicPartition, int, int]]
"""A parked fetch's partitions, fetch offsets and partition byte limits."""


def _available(
    ctx: RequestContext, watched: Watched, is_follower: bool, committed: bool, replica_id: int
) -> int:
    """Bytes a re-read would return now (without side effects)."""
    replicas = ctx.services.replicas
    total = 0
    for tp, fetch_offset, max_bytes in watched:
        part = replicas.get_partition(tp)
        if part is None or not part.is_leader:
            return 1 << 30  # answer now: the client must learn about the error
        end = _visible_end(part, is_follower, committed)
        if is_follower and _held_back(ctx, part, replica_id, replicas.now_ms()):
            continue  # Kafka's DelayedFetch: throttled bytes do not complete the wait
        if fetch_offset < end:
            try:
                total += part.log.read(fetch_offset, max_bytes, max_offset=end).size
            except OffsetOutOfRangeError:
                return 1 << 30
    return total


def _anything_new(
    ctx: RequestContext, watched: Watched, is_follower: bool, committed: bool, replica_id: int
) -> bool:
    """`min_bytes` <= 1: whether a re-read would return anything (or an error), by offsets alone,
    without reading the log (Kafka's DelayedFetch compares positions too): this runs for every
    parked fetch of a partition on each append or high-watermark move."""
    replicas = ctx.services.replicas
    for tp, fetch_offset, _max_bytes in watched:
        part = replicas.get_partition(tp)
        if part is None or not part.is_leader:
            return True  # answer now: the client must learn about the error
        if fetch_offset < _visible_end(part, is_follower, committed):
            if is_follower and _held_back(ctx, part, replica_id, replicas.now_ms()):
                continue  # Kafka's DelayedFetch: throttled bytes do not complete the wait
            return True
        log_ = part.log
        if fetch_offset > log_.log_end_offset or fetch_offset < log_.log_start_offset:
            return True  # answer now: OFFSET_OUT_OF_RANGE
    return False


def _replication_throttled(ctx: RequestContext, tp: TopicPartition) -> bool:
    throttle = ctx.services.leader_throttle
    return throttle is not None and throttle.active and throttle.is_throttled(tp.topic, tp.partition)


def _held_back(ctx: RequestContext, part: Partition, replica_id: int, now_ms: int) -> bool:
    """Kafka's shouldLeaderThrottle: a throttled partition, a replica out of the ISR, over the rate."""
    throttle = ctx.services.leader_throttle
    return (
        throttle is not None
        and throttle.active
        and throttle.is_throttled(part.tp.topic, part.tp.partition)
        and replica_id not in part.isr
        and throttle.is_exceeded(now_ms)
    )


def _read(
    ctx: RequestContext,
    request: FetchRequest,
    *,
    record_follower: bool = True,
    quota_max: int | None = None,
    topics: list[FetchRequest.FetchTopic] | None = None,
) -> _Read:
    replicas = ctx.services.replicas
    is_follower = request.replica_id >= 0
    budget = request.max_bytes if ctx.api_version >= 3 else 0x7FFFFFFF
    if quota_max is not None:
        budget = min(budget, quota_max)
    legacy_magic = _legacy_magic(ctx.api_version)
    committed = _read_committed(ctx, request)
    now = replicas.now_ms()
    result = _Read(Resp(session_id=0))
    answered = []
    for t in request.topics if topics is None else topics:
        parts = []
        name = _topic_name(ctx, t)
        for p in t.partitions:
            # librdkafka 2.0 rejects a null record set (size -1): Kafka always sends empty records
            out = Resp.PartitionData(partition_index=p.partition, high_watermark=-1, records=b"")
            parts.append(out)
            if name is None:
                out.error_code = ErrorCode.UNKNOWN_TOPIC_ID
                result.errors = True
                continue
            tp = TopicPartition(name, p.partition)
            result.partitions.append(tp)
            try:
                part = replicas.leader_partition(tp)
                check_leader_epoch(part, p.current_leader_epoch)
                log_ = part.log
                if is_follower and record_follower:
                    if part.update_follower_fetch(
                        request.replica_id, p.fetch_offset, now, p.log_start_offset
                    ):
                        replicas.delayed.notify(low_watermark_key(tp))
                    ctx.services.isr.maybe_expand(part, request.replica_id)
                end = _visible_end(part, is_follower, committed)
                out.high_watermark = part.high_watermark
                out.last_stable_offset = part.last_stable_offset
                out.log_start_offset = log_.log_start_offset
                if p.fetch_offset > log_.log_end_offset or p.fetch_offset < log_.log_start_offset:
                    raise OffsetOutOfRangeError(
                        f"fetch offset {p.fetch_offset} of {tp} is outside "
                        f"[{log_.log_start_offset}, {log_.log_end_offset}]",
                        log_start_offset=log_.log_start_offset,
                        log_end_offset=log_.log_end_offset,
                    )
                if p.fetch_offset >= end or budget <= 0:
                    continue
                throttled = is_follower and _replication_throttled(ctx, tp)
                if throttled and _held_back(ctx, part, request.replica_id, now):
                    continue  # KIP-73: a throttled replica out of the ISR gets no data while over the rate
                limit = min(p.partition_max_bytes, budget)
                chunk = log_.read(p.fetch_offset, limit, max_offset=end, min_one_batch=result.size == 0)
                if chunk.size:
                    if committed:
                        out.aborted_transactions = [
                            Resp.AbortedTransaction(producer_id=t.producer_id, first_offset=t.first_offset)
                            for t in log_.collect_aborted_txns(p.fetch_offset, end)
                        ]
                    records = FileRecords(chunk.lease, chunk.position, chunk.size, chunk.data)
                    size = chunk.size
                    if legacy_magic is None:
                        out.records = records
                    else:
                        converted = _down_converted(
                            ctx, tp, log_, records, legacy_magic, limit, p.fetch_offset
                        )
                        out.records, size = converted.chunks or b"", converted.size
                    result.size += size
                    by_topic = result.bytes_by_topic
                    by_topic[tp.topic] = by_topic.get(tp.topic, 0) + size  # by name: v13 asks by id
                    budget -= size
                    if throttled:
                        ctx.services.leader_throttle.record(size, now)  # type: ignore[union-attr]
            except KafkaError as e:
                out.error_code = e.code
                result.errors = True
            except OffsetOutOfRangeError:
                out.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
                result.errors = True
            except StorageError as e:
                log.error("fetch from %s failed: %s", tp, e)
                out.error_code = ErrorCode.KAFKA_STORAGE_ERROR
                result.errors = True
        answered.append(Resp.FetchableTopicResponse(topic=t.topic, topic_id=t.topic_id, partitions=parts))
    result.response.responses = answered
    return result

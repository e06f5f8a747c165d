"""Fetch sessions (KIP-227) around the Fetch handler: a layer before and after the read.

`with_fetch_sessions` wraps the Fetch entry of the handler table the listeners serve, outside the
authorizer's guard: an incremental fetch is expanded into a request for every partition its
session caches before the guard sees it, so each partition is authorized on every fetch (as in
Kafka's KafkaApis), not only on the fetch that added it. The read itself (`apis/fetch.py`) is
unchanged, long-poll included: a parked incremental fetch waits on all its session's partitions.
The rules and the cache are `zkafka.server.fetch_sessions`.

Below v7, when the broker runs no cache, and for sessionless fetches (id 0, epoch -1: what
librdkafka, aiokafka and most clients send) the request goes to the handler untouched.

A follower's session (by topic names) is read by changes (`fetch_sessions.ChangeTracking`): an
incremental fetch reads only the partitions the request lists, those pending (not caught up,
out of the ISR, in error) and those a change was reported for since (`track_partition_changes`,
fed by the replica manager: appends, high watermarks, log starts, leader and ISR changes), so an
idle round costs what changed, not what the session holds. The rest are caught up as of the
round (`partition.FollowerState.attach`). Such a fetch is authorized once (CLUSTER_ACTION, what
the guard checks for any follower fetch), read here through `apis.fetch` and parked on the
session itself: a change to any of its partitions re-checks it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any

from zkafka.protocol import ApiKey, ErrorCode
from zkafka.protocol.message import DeferredRecords
from zkafka.protocol.messages import FetchRequest, FetchResponse
from zkafka.protocol.schemas.fetch import FIRST_TOPIC_ID_VERSION
from zkafka.server.apis import fetch as fetch_api
from zkafka.server.authorization import authorize
from zkafka.server.delayed import DelayedOperations
from zkafka.server.dispatcher import Handler, RequestContext
from zkafka.server.fetch_sessions import (
    FINAL_EPOCH,
    INVALID_SESSION_ID,
    Answer,
    ChangeTracking,
    FetchContext,
    FetchSessionCache,
    FullFetch,
    IncrementalFetch,
    PartitionKey,
    SessionError,
    Sessionless,
    new_context,
)
from zkafka.storage.naming import TopicPartition
from zkafka.zk.acls import AclOperation, ResourceType

log = logging.getLogger(__name__)

FIRST_SESSION_VERSION = 7
Resp = FetchResponse


def with_fetch_sessions(handlers: Mapping[int, Handler]) -> Mapping[int, Handler]:
    """`handlers` with its Fetch handler behind the session layer."""
    inner = handlers.get(ApiKey.FETCH)
    if inner is None:
        return handlers

    def fetch(ctx: RequestContext, request: FetchRequest) -> Any:
        return serve(ctx, request, inner)

    return {**handlers, ApiKey.FETCH: fetch}


def serve(ctx: RequestContext, request: FetchRequest, inner: Handler) -> Any:
    if request.replica_id >= 0:  # a replica fetcher: Nagle off, a parked fetch needs no quick ACK
        ctx.connection.skip_quick_acks()
    cache = ctx.services.fetch_sessions
    if cache is None or ctx.api_version < FIRST_SESSION_VERSION:
        return inner(ctx, request)
    if request.session_id == INVALID_SESSION_ID and request.session_epoch == FINAL_EPOCH:
        return inner(ctx, request)  # sessionless: the common case of third-party clients
    context = new_context(
        cache,
        session_id=request.session_id,
        epoch=request.session_epoch,
        owner=(ctx.principal, request.replica_id),
        uses_topic_ids=ctx.api_version >= FIRST_TOPIC_ID_VERSION,
        requested=lambda: _requested(ctx, request),
        forgotten=lambda: _forgotten(ctx, request),
        now_ms=ctx.services.replicas.now_ms(),
    )
    if isinstance(context, SessionError):
        return Resp(error_code=context.error_code, session_id=INVALID_SESSION_ID, responses=[])
    if (
        isinstance(context, IncrementalFetch)
        and context.session.tracking is not None
        and authorize(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER)
    ):
        return _serve_tracked(ctx, request, context)
    # (a follower without CLUSTER_ACTION reads through the guard below: every partition denied)
    # a full fetch reads its partitions once each, an incremental one every partition of the session
    read = request if isinstance(context, Sessionless) else _request_for(ctx, request, context.parts)
    response = inner(ctx, read)
    if inspect.isawaitable(response):
        return _respond_later(ctx, context, response)
    return _respond(ctx, context, response)


async def _respond_later(ctx: RequestContext, context: FetchContext, response: Awaitable[Resp]) -> Resp:
    return _respond(ctx, context, await response)


def _key(ctx: RequestContext, topic: Any) -> str | Any:
    return topic.topic_id if ctx.api_version >= FIRST_TOPIC_ID_VERSION else topic.topic


def _requested(ctx: RequestContext, request: FetchRequest) -> dict[PartitionKey, Any]:
    """The request's partitions by key; a partition listed twice counts once, the last one (Kafka
    reads a request into a map)."""
    out: dict[PartitionKey, Any] = {}
    for t in request.topics:
        key = _key(ctx, t)
        for p in t.partitions:
            out[(key, p.partition)] = p
    return out


def _forgotten(ctx: RequestContext, request: FetchRequest) -> list[PartitionKey]:
    return [(_key(ctx, t), p) for t in request.forgotten_topics_data for p in t.partitions]


def _request_for(
    ctx: RequestContext, request: FetchRequest, parts: Mapping[PartitionKey, Any]
) -> FetchRequest:
    """`request` asking for exactly `parts` (in their order, grouped by topic)."""
    topics = _topics_for(ctx, parts)
    return FetchRequest(
        cluster_id=request.cluster_id,
        replica_id=request.replica_id,
        max_wait_ms=request.max_wait_ms,
        min_bytes=request.min_bytes,
        max_bytes=request.max_bytes,
        isolation_level=request.isolation_level,
        session_id=request.session_id,
        session_epoch=request.session_epoch,
        topics=topics,
        rack_id=request.rack_id,
    )


def _topics_for(ctx: RequestContext, parts: Mapping[PartitionKey, Any]) -> list[FetchRequest.FetchTopic]:
    """A request's topics asking for exactly `parts` (in their order, grouped by topic)."""
    by_topic: dict[Any, list[Any]] = {}
    for (topic, _), p in parts.items():
        by_topic.setdefault(topic, []).append(p)
    by_id = ctx.api_version >= FIRST_TOPIC_ID_VERSION
    topic = FetchRequest.FetchTopic
    return [
        topic(topic_id=k, partitions=ps) if by_id else topic(topic=k, partitions=ps)
        for k, ps in by_topic.items()
    ]


def _has_records(records: object) -> bool:
    if records is None:
        return False
    if isinstance(records, DeferredRecords):
        return records.size > 0
    return len(records) > 0  # type: ignore[arg-type]


def _answers(ctx: RequestContext, response: Resp) -> Iterator[tuple[PartitionKey, Answer]]:
    for t in response.responses:
        topic = _key(ctx, t)
        for p in t.partitions:
            yield (topic, p.partition_index), _answer_of(p)


def _respond(ctx: RequestContext, context: FetchContext, response: Resp) -> Resp:
    if isinstance(context, Sessionless):
        response.session_id = INVALID_SESSION_ID
    elif isinstance(context, FullFetch):
        now = ctx.services.replicas.now_ms()
        response.session_id = context.create_session(now, dict(_answers(ctx, response)))
    elif isinstance(context, IncrementalFetch):
        session_id = context.session.id
        kept = context.select(_answers(ctx, response))
        if kept is None:  # another fetch of the session came in while this one was parked
            return Resp(
                throttle_time_ms=response.throttle_time_ms,
                error_code=ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                session_id=session_id,
                responses=[],
            )
        topics = []
        for t in response.responses:
            topic = _key(ctx, t)
            t.partitions = [p for p in t.partitions if (topic, p.partition_index) in kept]
            if t.partitions:
                topics.append(t)
        response.responses = topics
        response.session_id = session_id
    return response


# -- followers' sessions read by changes --------------------------------------------------------------
def session_key(session_id: int) -> tuple[str, int]:
    """The delayed-operation key a tracked session's parked fetch waits under."""
    return ("fetch-session", session_id)


def track_partition_changes(
    cache: FetchSessionCache, delayed: DelayedOperations
) -> Callable[[TopicPartition], None]:
    """The replica manager's change listener for `cache`: the tracked sessions holding a changed
    partition read it in their next round, and their parked fetch re-checks once this loop turn's
    changes are all made (`notify_soon`, as for sessionless follower fetches)."""

    def changed(tp: TopicPartition) -> None:
        for session in cache.partition_changed(tp):
            delayed.notify_soon(session_key(session.id))

    return changed


def _serve_tracked(ctx: RequestContext, request: FetchRequest, context: IncrementalFetch) -> Any:
    session = context.session
    tracking = session.tracking
    assert tracking is not None
    replicas = ctx.services.replicas
    replica_id = request.replica_id
    for key in context.forgotten:  # no longer fetched from here: caught up no longer follows the session
        _follower(ctx, key, replica_id, detach=True)
    first_parts = context.take()
    first = _read_parts(ctx, request, first_parts, record_follower=True)
    # every partition not read was settled and has not changed since: caught up as of now
    tracking.ms = replicas.now_ms()
    if first.size >= request.min_bytes or first.errors or request.max_wait_ms <= 0:
        fetch_api.count_sent(ctx, request, first)
        return _answer_tracked(ctx, context, first_parts, _entries(first), {})

    fut: asyncio.Future[Resp] = asyncio.get_running_loop().create_future()
    min_bytes = request.min_bytes

    def news() -> bool:
        if session.epoch != context.expected_epoch:
            return True  # another fetch of the session came in: this one is answered with an error
        if min_bytes <= 1:
            return bool(tracking.changed) and fetch_api.follower_has_news(
                ctx, _watched(session, tracking.changed), replica_id, min_bytes
            )
        return fetch_api.follower_has_news(
            ctx, _watched(session, [*first_parts, *tracking.changed]), replica_id, min_bytes
        )

    def answer(_news: bool) -> None:
        if fut.done():  # the connection went away meanwhile
            return
        if session.epoch != context.expected_epoch:  # what changed is the newer fetch's to read
            for k in first_parts:
                tracking.pending[k] = None
            fut.set_result(_superseded(session.id))
            return
        try:
            # re-read what changed while parked and what had records (below min_bytes); the
            # follower's positions stay as recorded on arrival (see `fetch._long_poll`)
            again = {k: session.partitions[k].request for k in tracking.take() if k in session.partitions}
            entries = _entries(first)
            for k, e in entries.items():
                if _has_records(e.records) and k not in again:
                    again[k] = first_parts[k]
            final = _read_parts(ctx, request, again, record_follower=False)
            fetch_api.count_sent(ctx, request, final)
            fut.set_result(_answer_tracked(ctx, context, {**first_parts, **again}, entries, _entries(final)))
        except Exception as e:  # a bug: the network layer logs it and closes the connection
            fut.set_exception(e)

    timeout_s = request.max_wait_ms / 1000 + fetch_api.LONG_POLL_TICK_S
    replicas.delayed.park([session_key(session.id)], news, timeout_s, answer)
    return fut


def _superseded(session_id: int) -> Resp:
    return Resp(error_code=ErrorCode.INVALID_FETCH_SESSION_EPOCH, session_id=session_id, responses=[])


def _read_parts(
    ctx: RequestContext, request: FetchRequest, parts: Mapping[PartitionKey, Any], *, record_follower: bool
) -> Any:
    if not parts:
        return fetch_api.empty_read()
    # the follower's request with these partitions' topics in place of its own (no new request
    # object per read: two reads per round of every follower)
    return fetch_api.read(ctx, request, _topics_for(ctx, parts), record_follower=record_follower)


def _entries(read: Any) -> dict[PartitionKey, Any]:
    return {(t.topic, p.partition_index): p for t in read.response.responses for p in t.partitions}


def _watched(session: Any, keys: Iterable[PartitionKey]) -> list[tuple[TopicPartition, int, int]]:
    parts = session.partitions
    out = []
    for k in keys:
        cached = parts.get(k)
        if cached is not None:
            p = cached.request
            out.append((TopicPartition(k[0], k[1]), p.fetch_offset, p.partition_max_bytes))
    return out


def _follower(ctx: RequestContext, key: PartitionKey, replica_id: int, *, detach: bool = False) -> Any:
    part = ctx.services.replicas.get_partition(TopicPartition(key[0], key[1]))  # type: ignore[arg-type]
    f = part.followers.get(replica_id) if part is not None else None
    if f is not None and detach:
        f.detach()
    return part, f


def _answer_tracked(
    ctx: RequestContext,
    context: IncrementalFetch,
    parts: Mapping[PartitionKey, Any],
    first: Mapping[PartitionKey, Any],
    final: Mapping[PartitionKey, Any],
) -> Resp:
    """The answer from the latest read of each partition: only what the session rules keep; each
    read partition settled or left pending."""
    session = context.session
    tracking = session.tracking
    assert tracking is not None
    entries = {**first, **final}
    kept = context.select((k, _answer_of(e)) for k, e in entries.items())
    if kept is None:  # another fetch of the session came in meanwhile: its next round reads these
        for k in entries:
            tracking.pending[k] = None
        return _superseded(session.id)
    replica_id = session.owner[1]
    for k, e in entries.items():
        _settle(ctx, tracking, k, parts[k], e, replica_id)
    by_topic: dict[str, list[Any]] = {}
    for k, e in entries.items():
        if k in kept:
            by_topic.setdefault(k[0], []).append(e)  # type: ignore[arg-type]
    topics = [Resp.FetchableTopicResponse(topic=t, partitions=ps) for t, ps in by_topic.items()]
    return Resp(session_id=session.id, responses=topics)


def _settle(
    ctx: RequestContext,
    tracking: ChangeTracking,
    key: PartitionKey,
    request: Any,
    entry: Any,
    replica_id: int,
) -> None:
    """Settled: no error, this broker leads it, the follower is in the ISR and at the log end."""
    part, f = _follower(ctx, key, replica_id)
    settled = (
        f is not None
        and not entry.error_code
        and part.is_leader
        and replica_id in part.isr
        and request.fetch_offset >= part.log.log_end_offset
    )
    if settled:
        f.attach(tracking)
    tracking.settle(key, settled, moved=_has_records(entry.records))


def _answer_of(p: Any) -> Answer:
    return Answer(
        has_records=_has_records(p.records),
        high_watermark=p.high_watermark,
        last_stable_offset=p.last_stable_offset,
        log_start_offset=p.log_start_offset,
        preferred_read_replica=p.preferred_read_replica,
        error_code=p.error_code,
    )

"""Fetch sessions (KIP-227) around the Fetch handler: a layer before and after the read.

`with_fetch_sessions` wraps the Fetch entry of the handler table the listeners serve, outside the
authorizer's guard: an incremental fetch is expanded into a request for every partition its
session caches before the guard sees it, so each partition is authorized on every fetch (as in
Kafka's KafkaApis), not only on the fetch that added it. The read itself (`apis/fetch.py`) is
unchanged, long-poll included: a parked incremental fetch waits on all its session's partitions.
The rules and the cache are `zkafka.server.fetch_sessions`.

Below v7, when the broker runs no cache, and for sessionless fetches (id 0, epoch -1: what
librdkafka, aiokafka and most clients send) the request goes to the handler untouched.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Iterator, Mapping
from typing import Any

from zkafka.protocol import ApiKey, ErrorCode
from zkafka.protocol.message import DeferredRecords
from zkafka.protocol.messages import FetchRequest, FetchResponse
from zkafka.protocol.schemas.fetch import FIRST_TOPIC_ID_VERSION
from zkafka.server.dispatcher import Handler, RequestContext
from zkafka.server.fetch_sessions import (
    FINAL_EPOCH,
    INVALID_SESSION_ID,
    Answer,
    FetchContext,
    FullFetch,
    IncrementalFetch,
    PartitionKey,
    SessionError,
    Sessionless,
    new_context,
)

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
    by_topic: dict[Any, list[Any]] = {}
    for (topic, _), p in parts.items():
        by_topic.setdefault(topic, []).append(p)
    by_id = ctx.api_version >= FIRST_TOPIC_ID_VERSION
    topic = FetchRequest.FetchTopic
    topics = [
        topic(topic_id=k, partitions=ps) if by_id else topic(topic=k, partitions=ps)
        for k, ps in by_topic.items()
    ]
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
            answer = Answer(
                has_records=_has_records(p.records),
                high_watermark=p.high_watermark,
                last_stable_offset=p.last_stable_offset,
                log_start_offset=p.log_start_offset,
                preferred_read_replica=p.preferred_read_replica,
                error_code=p.error_code,
            )
            yield (topic, p.partition_index), answer


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

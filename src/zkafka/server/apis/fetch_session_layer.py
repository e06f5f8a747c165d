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
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any

from zkafka.protocol import ApiKey, ErrorCode
from zkafka.protocol.message import DeferredRecords
from zkafka.protocol.messages import FetchRequest, FetchResponse
from zkafka.protocol.schemas.fetch import FIRST_TOPIC_ID_VERSION
from zkafka.server.dispatcher import Handler, RequestContext
from zkafka.server.fetch_sessions import (
    FINAL_EPOCH,
    INVALID_SESSION_ID,
    CachedPartition,
    FetchSession,
    FetchSessionCache,
    PartitionKey,
    is_full,
    next_epoch,
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
    context = _new_context(ctx, cache, request)
    if isinstance(context, ErrorCode):
        return Resp(error_code=context, session_id=INVALID_SESSION_ID, responses=[])
    response = inner(ctx, context.request)
    if inspect.isawaitable(response):
        return _respond_later(response, context)
    return context.respond(response)


async def _respond_later(response: Awaitable[Resp], context: _Context) -> Resp:
    return context.respond(await response)


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


class _Context:
    request: FetchRequest

    def respond(self, response: Resp) -> Resp:
        raise NotImplementedError


@dataclass(slots=True)
class _Sessionless(_Context):
    request: FetchRequest

    def respond(self, response: Resp) -> Resp:
        response.session_id = INVALID_SESSION_ID
        return response


@dataclass(slots=True)
class _Full(_Context):
    """A full fetch (epoch 0): read what it asks; cache it as a new session if there is room."""

    ctx: RequestContext
    cache: FetchSessionCache
    request: FetchRequest
    parts: dict[PartitionKey, Any]

    def respond(self, response: Resp) -> Resp:
        answered = {
            (_key(self.ctx, t), p.partition_index): p for t in response.responses for p in t.partitions
        }

        def cached() -> dict[PartitionKey, CachedPartition]:
            out = {}
            for key, req in self.parts.items():
                entry = out[key] = CachedPartition(req)
                r = answered.get(key)
                if r is not None:
                    entry.must_respond(
                        has_records=False,
                        high_watermark=r.high_watermark,
                        last_stable_offset=r.last_stable_offset,
                        log_start_offset=r.log_start_offset,
                        preferred_read_replica=r.preferred_read_replica,
                        error_code=r.error_code,
                    )
            return out

        ctx = self.ctx
        response.session_id = self.cache.maybe_create(
            ctx.services.replicas.now_ms(),
            privileged=self.request.replica_id >= 0,
            owner=(ctx.principal, self.request.replica_id),
            uses_topic_ids=ctx.api_version >= FIRST_TOPIC_ID_VERSION,
            size=len(self.parts),
            partitions=cached,
        )
        return response


@dataclass(slots=True)
class _Incremental(_Context):
    """An incremental fetch: every partition of the session was read; answer what changed."""

    ctx: RequestContext
    session: FetchSession
    request: FetchRequest
    expected_epoch: int

    def respond(self, response: Resp) -> Resp:
        session = self.session
        if session.epoch != self.expected_epoch:
            # another fetch of the session came in while this one was parked: a duplicate
            return Resp(
                throttle_time_ms=response.throttle_time_ms,
                error_code=ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                session_id=session.id,
                responses=[],
            )
        kept_topics = []
        moved: list[PartitionKey] = []
        for t in response.responses:
            topic = _key(self.ctx, t)
            kept = []
            for p in t.partitions:
                key = (topic, p.partition_index)
                cached = session.partitions.get(key)
                records = _has_records(p.records)
                if cached is None or cached.must_respond(
                    has_records=records,
                    high_watermark=p.high_watermark,
                    last_stable_offset=p.last_stable_offset,
                    log_start_offset=p.log_start_offset,
                    preferred_read_replica=p.preferred_read_replica,
                    error_code=p.error_code,
                ):
                    kept.append(p)
                    if records:
                        moved.append(key)
            if kept:
                t.partitions = kept
                kept_topics.append(t)
        for key in moved:
            session.moved_to_end(key)
        response.responses = kept_topics
        response.session_id = session.id
        return response


def _new_context(
    ctx: RequestContext, cache: FetchSessionCache, request: FetchRequest
) -> _Context | ErrorCode:
    """Kafka's FetchManager.newContext."""
    owner = (ctx.principal, request.replica_id)
    if is_full(request.session_epoch):
        if request.session_id != INVALID_SESSION_ID:
            closed = cache.get(request.session_id, owner)
            if closed is not None:  # any session a full fetch names is closed
                cache.remove(closed)
        if request.session_epoch == FINAL_EPOCH:
            return _Sessionless(request)
        parts = _requested(ctx, request)
        return _Full(ctx, cache, _request_for(ctx, request, parts), parts)
    session = cache.get(request.session_id, owner)
    if session is None:
        return ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    if session.epoch != request.session_epoch:
        return ErrorCode.INVALID_FETCH_SESSION_EPOCH
    if session.uses_topic_ids != (ctx.api_version >= FIRST_TOPIC_ID_VERSION):
        return ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    session.update(_requested(ctx, request), _forgotten(ctx, request))
    if not session.partitions:
        cache.remove(session)  # nothing left to fetch: the session ends, answered sessionless
        return _Sessionless(request)
    cache.touch(session, ctx.services.replicas.now_ms())
    session.epoch = next_epoch(session.epoch)
    parts = {key: cached.request for key, cached in session.partitions.items()}
    return _Incremental(ctx, session, _request_for(ctx, request, parts), session.epoch)

"""CreateTopics, DeleteTopics, CreatePartitions: written to ZooKeeper, carried out by the controller.

Any broker accepts them (the ZooKeeper writes are safe from everywhere); the response waits,
up to the request's timeout, until the controller's UpdateMetadata shows the result here: every
new partition with a leader, or the deleted topic gone. A timeout answers REQUEST_TIMED_OUT,
as Kafka does; the operation itself goes on.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable

from zkafka.admin import topics as topic_admin
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.messages import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from zkafka.server.dispatcher import RequestContext
from zkafka.server.metadata_cache import MetadataCache
from zkafka.server.services import BrokerServices
from zkafka.zk.topic_names import is_valid_topic_name

log = logging.getLogger(__name__)


def _error(e: Exception) -> tuple[ErrorCode, str]:
    if isinstance(e, KafkaError):
        return e.code, topic_admin.short_message(e.message)
    log.error("admin request failed", exc_info=e)
    return ErrorCode.UNKNOWN_SERVER_ERROR, topic_admin.short_message(str(e))


def partition_limits(services: BrokerServices, adding: Iterable[int]) -> topic_admin.PartitionLimits:
    """KIP-578's limits with the cluster's counts, for a request adding these partition counts.

    A count above max.partitions fails whatever else holds, so it is left out of `adding` (which
    only decides whether per-broker loads are worth counting)."""
    cfg = services.config
    room = cfg.max_partitions
    return topic_admin.PartitionLimits.from_cache(
        services.metadata,
        max_partitions=cfg.max_partitions,
        max_broker_partitions=cfg.max_broker_partitions,
        adding=sum(n for n in adding if 0 < n <= room),
    )


async def handle_create_topics(ctx: RequestContext, request: CreateTopicsRequest) -> CreateTopicsResponse:
    services = ctx.services
    cfg, metadata = services.config, services.metadata
    results = []
    created: dict[str, int] = {}
    # a Counter, not a scan per topic: a frame can hold millions of topics
    names = Counter(t.name for t in request.topics)

    def requested(t: CreateTopicsRequest.CreatableTopic) -> tuple[int, int]:
        """(partitions, replication factor) after Kafka's -1 defaults (KIP-464)."""
        if t.assignments:
            return t.num_partitions, t.replication_factor
        partitions = cfg.num_partitions if t.num_partitions == -1 else t.num_partitions
        rf = cfg.default_replication_factor if t.replication_factor == -1 else t.replication_factor
        return partitions, rf

    limits = partition_limits(
        services, (len(t.assignments) if t.assignments else requested(t)[0] for t in request.topics)
    )
    # every topic that passes the request-level checks, validated and written in one call on the
    # ZooKeeper thread (one read of the topics, pipelined writes) rather than one call per topic
    asked: list[tuple[CreateTopicsResponse.CreatableTopicResult, topic_admin.TopicRequest]] = []
    for t in request.topics:
        out = CreateTopicsResponse.CreatableTopicResult(name=t.name)
        results.append(out)
        if names[t.name] > 1:
            out.error_code, out.error_message = ErrorCode.INVALID_REQUEST, "duplicate topic name in request"
            continue
        partitions, rf = requested(t)
        configs = {c.name: c.value for c in t.configs if c.value is not None}
        assignment = {a.partition_index: list(a.broker_ids) for a in t.assignments}
        if len(assignment) != len(t.assignments):
            out.error_code = ErrorCode.INVALID_REPLICA_ASSIGNMENT
            out.error_message = "a partition is assigned more than once"
            continue
        asked.append((out, topic_admin.TopicRequest(t.name, partitions, rf, configs, assignment or None)))
    outcomes: list[dict[int, list[int]] | Exception] = []
    if asked:
        try:
            outcomes = await services.zk.run(
                topic_admin.create_topics,
                [topic for _, topic in asked],
                live_brokers=sorted(metadata.brokers),
                defaults=services.logs.default_config,
                validate_only=request.validate_only,
                limits=limits,
            )
        except Exception as e:  # ZooKeeper unreachable: no topic was decided (one log line)
            code, message = _error(e)
            outcomes = [KafkaError(code, message)] * len(asked)
    for (out, _), plan in zip(asked, outcomes, strict=True):
        if isinstance(plan, Exception):
            out.error_code, out.error_message = _error(plan)
            continue
        out.num_partitions = len(plan)
        out.replication_factor = len(next(iter(plan.values()))) if plan else -1
        if not request.validate_only:
            created[out.name] = len(plan)
    if created:
        ok = await services.metadata_waits.wait(
            lambda: all(_has_leaders(metadata, t, n) for t, n in created.items()), request.timeout_ms / 1000
        )
        if not ok:
            for out in results:
                if out.name in created and not _has_leaders(metadata, out.name, created[out.name]):
                    out.error_code = ErrorCode.REQUEST_TIMED_OUT
                    out.error_message = "the topic was created; its partitions have no leader yet"
    return CreateTopicsResponse(topics=results)


def _has_leaders(metadata: MetadataCache, topic: str, partitions: int) -> bool:
    parts = metadata.topic_partitions(topic)
    return len(parts) >= partitions and all(p.leader >= 0 for p in parts.values())


async def handle_delete_topics(ctx: RequestContext, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
    services = ctx.services
    metadata = services.metadata
    results = []
    pending: list[str] = []
    for name in request.topic_names:
        out = DeleteTopicsResponse.DeletableTopicResult(name=name)
        results.append(out)
        if not is_valid_topic_name(name):  # cannot exist, and is no znode name ("..", "a/b")
            out.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        try:
            await services.zk.run(
                topic_admin.delete_topic, name, deletion_enabled=services.config.delete_topic_enable
            )
            pending.append(name)
        except Exception as e:
            out.error_code, _ = _error(e)
    if pending:

        def gone() -> bool:
            return not any(metadata.contains_topic(t) for t in pending)

        if not await services.metadata_waits.wait(gone, request.timeout_ms / 1000):
            for out in results:
                if out.name in pending and metadata.contains_topic(out.name):
                    out.error_code = ErrorCode.REQUEST_TIMED_OUT
    return DeleteTopicsResponse(responses=results)


async def handle_create_partitions(
    ctx: RequestContext, request: CreatePartitionsRequest
) -> CreatePartitionsResponse:
    services = ctx.services
    metadata = services.metadata
    results = []
    waits: dict[str, int] = {}
    names = Counter(t.name for t in request.topics)
    limits = partition_limits(
        services, (t.count - len(metadata.topic_partitions(t.name)) for t in request.topics)
    )
    for t in request.topics:
        out = CreatePartitionsResponse.CreatePartitionsTopicResult(name=t.name)
        results.append(out)
        if names[t.name] > 1:
            out.error_code, out.error_message = ErrorCode.INVALID_REQUEST, "duplicate topic name in request"
            continue
        if not is_valid_topic_name(t.name):  # cannot exist, and is no znode name ("..", "a/b")
            out.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            out.error_message = "no topic can have this name"
            continue
        try:
            added = await services.zk.run(
                topic_admin.create_partitions,
                topic=t.name,
                new_total=t.count,
                assignment=[list(a.broker_ids) for a in t.assignments] if t.assignments else None,
                live_brokers=sorted(metadata.brokers),
                validate_only=request.validate_only,
                limits=limits,
            )
            limits = limits.after(added)
            if not request.validate_only:
                waits[t.name] = t.count
        except Exception as e:
            out.error_code, out.error_message = _error(e)
    if waits:
        check: Callable[[], bool] = lambda: all(_has_leaders(metadata, t, n) for t, n in waits.items())  # noqa: E731
        if not await services.metadata_waits.wait(check, request.timeout_ms / 1000):
            for out in results:
                if out.name in waits and not _has_leaders(metadata, out.name, waits[out.name]):
                    out.error_code = ErrorCode.REQUEST_TIMED_OUT
    return CreatePartitionsResponse(results=results)

"""Metadata: brokers, controller and partitions from the metadata cache (never from ZooKeeper).

Unknown topics are auto-created when `auto.create.topics.enable` and the request allows it
(v4+ flag): the answer is then LEADER_NOT_AVAILABLE, and clients retry until the controller
has elected leaders, as with Kafka.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable

from zkafka.admin import topics as topic_admin
from zkafka.logs import RateLimitedLog
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.messages import MetadataRequest, MetadataResponse
from zkafka.server.apis.topics import partition_limits
from zkafka.server.dispatcher import RequestContext
from zkafka.zk.topic_names import is_internal_topic, is_valid_topic_name

log = logging.getLogger(__name__)
limited = RateLimitedLog(log)

Resp = MetadataResponse


def handle(ctx: RequestContext, request: MetadataRequest) -> Resp | Awaitable[Resp]:
    cache = ctx.services.metadata
    if request.topics is None or (ctx.api_version == 0 and not request.topics):
        names = cache.topics()
        wanted_unknown: list[str] = []
    else:
        names = [t.name for t in request.topics]
        wanted_unknown = [n for n in names if not cache.contains_topic(n)]
    allow_create = (
        ctx.services.config.auto_create_topics_enable
        and request.allow_auto_topic_creation
        and any(is_valid_topic_name(n) and not is_internal_topic(n) for n in wanted_unknown)
    )
    if allow_create:
        return _create_then_answer(ctx, names, wanted_unknown)
    return _answer(ctx, names, created=())


async def _create_then_answer(ctx: RequestContext, names: list[str], unknown: list[str]) -> Resp:
    services = ctx.services
    cfg, metadata = services.config, services.metadata
    created: list[str] = []
    candidates = [n for n in unknown if is_valid_topic_name(n) and not is_internal_topic(n)]
    # Counts the broker chose, but as many topics as a request names: KIP-578's limits apply.
    limits = partition_limits(services, [cfg.num_partitions] * len(candidates))
    for name in candidates:
        try:
            plan = await services.zk.run(
                topic_admin.create_topic,
                name=name,
                num_partitions=cfg.num_partitions,
                replication_factor=min(cfg.default_replication_factor, max(1, len(metadata.brokers))),
                configs={},
                assignment=None,
                live_brokers=sorted(metadata.brokers),
                defaults=services.logs.default_config,
                limits=limits,
            )
            limits = limits.after(plan)
            log.info("auto-created topic %s", name)
            created.append(name)
        except KafkaError as e:
            if e.code == ErrorCode.TOPIC_ALREADY_EXISTS:
                created.append(name)  # someone else is creating it: same answer
            else:
                limited.info(("auto-create", e.code), "auto-creation of %s failed: %s", name, e)
    return _answer(ctx, names, created=created)


def _answer(ctx: RequestContext, names: list[str], created: list[str] | tuple[()]) -> Resp:
    cache = ctx.services.metadata
    brokers = []
    for b in sorted(cache.brokers.values(), key=lambda b: b.broker_id):
        ep = b.endpoint(ctx.listener)
        if ep is not None:
            brokers.append(
                Resp.MetadataResponseBroker(node_id=b.broker_id, host=ep.host, port=ep.port, rack=b.rack)
            )
    topics = []
    for name in names:
        parts = cache.topic_partitions(name)
        if not parts:
            if name in created:
                code = ErrorCode.LEADER_NOT_AVAILABLE
            elif not is_valid_topic_name(name):
                code = ErrorCode.INVALID_TOPIC_EXCEPTION
            else:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            topics.append(
                Resp.MetadataResponseTopic(error_code=code, name=name, is_internal=is_internal_topic(name))
            )
            continue
        out_parts = []
        for p in sorted(parts.values(), key=lambda p: p.partition):
            live_isr = [r for r in p.isr if cache.alive(r)]
            offline = [r for r in p.replicas if not cache.alive(r)]
            error = ErrorCode.NONE
            leader = p.leader
            if leader < 0 or not cache.alive(leader):
                error, leader = ErrorCode.LEADER_NOT_AVAILABLE, -1
            elif ctx.api_version == 0 and offline:
                error = ErrorCode.REPLICA_NOT_AVAILABLE
            out_parts.append(
                Resp.MetadataResponsePartition(
                    error_code=error,
                    partition_index=p.partition,
                    leader_id=leader,
                    leader_epoch=p.leader_epoch,
                    replica_nodes=list(p.replicas),
                    isr_nodes=live_isr,
                    offline_replicas=offline,
                )
            )
        topics.append(
            Resp.MetadataResponseTopic(name=name, is_internal=is_internal_topic(name), partitions=out_parts)
        )
    return Resp(
        brokers=brokers,
        cluster_id=ctx.services.identity.cluster_id,
        controller_id=cache.controller_id,
        topics=topics,
    )

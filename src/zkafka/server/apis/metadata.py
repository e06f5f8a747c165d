"""Metadata: brokers, controller and partitions from the metadata cache (never from ZooKeeper).

Unknown topics are auto-created when `auto.create.topics.enable` and the request allows it
(v4+ flag): the answer is then LEADER_NOT_AVAILABLE, and clients retry until the controller
has elected leaders, as with Kafka.

Topic ids (KIP-516): v10+ answers carry each topic's id (all zeros while the cache knows none);
v12 requests may name topics by id alone: those are answered by name and id, an unknown id with
UNKNOWN_TOPIC_ID and a null name, and never auto-created (as Kafka). Below v12 a topic without
a name, or with an id, is INVALID_REQUEST (Kafka refuses the request as invalid).

Authorized operations (v8+, when asked): each listed topic's and (v8-10) the cluster's bit field of
the operations the principal may do, every supported one without an authorizer
(`authorization.authorized_operations`); INT32_MIN when not asked.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass, field

from zkafka.admin import topics as topic_admin
from zkafka.logs import RateLimitedLog
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.message import ZERO_UUID
from zkafka.protocol.messages import MetadataRequest, MetadataResponse
from zkafka.protocol.schemas.metadata import AUTHORIZED_OPERATIONS_OMITTED
from zkafka.server.apis.topics import partition_limits
from zkafka.server.authorization import authorized_operations
from zkafka.server.dispatcher import RequestContext
from zkafka.zk.acls import ResourceType
from zkafka.zk.topic_names import is_internal_topic, is_valid_topic_name

log = logging.getLogger(__name__)
limited = RateLimitedLog(log)

Resp = MetadataResponse


FIRST_TOPIC_ID_BY_ID_VERSION = 12


@dataclass(slots=True)
class _Asked:
    """What a request names: topics by name (in order), plus the per-topic answers decided before
    looking at the cache (ids nobody has, topics that break the version's rules)."""

    names: list[str] = field(default_factory=list)
    early: list[Resp.MetadataResponseTopic] = field(default_factory=list)
    by_id: bool = False
    topic_operations: bool = False
    cluster_operations: bool = False


def _asked(ctx: RequestContext, request: MetadataRequest) -> _Asked:
    cache = ctx.services.metadata
    out = _Asked()
    assert request.topics is not None
    for t in request.topics:
        by_id = t.topic_id.int != 0
        if ctx.api_version < FIRST_TOPIC_ID_BY_ID_VERSION and (by_id or t.name is None):
            out.early.append(
                Resp.MetadataResponseTopic(error_code=ErrorCode.INVALID_REQUEST, name=t.name or "")
            )
        elif by_id:
            out.by_id = True
            name = cache.topic_name(t.topic_id)
            if name is None:
                out.early.append(_unknown_id(t.topic_id))
            else:
                out.names.append(name)
        elif t.name is None:
            out.early.append(Resp.MetadataResponseTopic(error_code=ErrorCode.INVALID_REQUEST, name=None))
        else:
            out.names.append(t.name)
    out.names = list(dict.fromkeys(out.names))
    return out


def _unknown_id(topic_id: uuid.UUID) -> Resp.MetadataResponseTopic:
    return Resp.MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=topic_id)


def handle(ctx: RequestContext, request: MetadataRequest) -> Resp | Awaitable[Resp]:
    cache = ctx.services.metadata
    if request.topics is None or (ctx.api_version == 0 and not request.topics):
        asked = _Asked(names=cache.topics())
        wanted_unknown: list[str] = []
    else:
        asked = _asked(ctx, request)
        wanted_unknown = [n for n in asked.names if not cache.contains_topic(n)]
    asked.topic_operations = request.include_topic_authorized_operations
    asked.cluster_operations = request.include_cluster_authorized_operations
    allow_create = (
        ctx.services.config.auto_create_topics_enable
        and request.allow_auto_topic_creation
        and not asked.by_id
        and any(is_valid_topic_name(n) and not is_internal_topic(n) for n in wanted_unknown)
    )
    if allow_create:
        return _create_then_answer(ctx, asked, wanted_unknown)
    return _answer(ctx, asked, created=())


async def _create_then_answer(ctx: RequestContext, asked: _Asked, unknown: list[str]) -> Resp:
    services = ctx.services
    cfg, metadata = services.config, services.metadata
    created: list[str] = []
    candidates = [n for n in unknown if is_valid_topic_name(n) and not is_internal_topic(n)]
    # Counts the broker chose, but as many topics as a request names: KIP-578's limits apply.
    limits = partition_limits(services, [cfg.num_partitions] * len(candidates))
    if not candidates:
        return _answer(ctx, asked, created=created)
    rf = min(cfg.default_replication_factor, max(1, len(metadata.brokers)))
    # one call for all of them: one read of the topics, the znodes written together
    try:
        outcomes = await services.zk.run(
            topic_admin.create_topics,
            [topic_admin.TopicRequest(name, cfg.num_partitions, rf, {}) for name in candidates],
            live_brokers=sorted(metadata.brokers),
            defaults=services.logs.default_config,
            limits=limits,
        )
    except Exception as e:  # ZooKeeper unreachable: nothing created, the topics stay unknown
        limited.info(("auto-create", "zk"), "auto-creation of %d topic(s) failed: %s", len(candidates), e)
        outcomes = []
    for name, outcome in zip(candidates, outcomes, strict=False):
        if not isinstance(outcome, Exception):
            log.info("auto-created topic %s", name)
            created.append(name)
        elif isinstance(outcome, KafkaError) and outcome.code == ErrorCode.TOPIC_ALREADY_EXISTS:
            created.append(name)  # someone else is creating it: same answer
        else:
            code = outcome.code if isinstance(outcome, KafkaError) else type(outcome).__name__
            limited.info(("auto-create", code), "auto-creation of %s failed: %s", name, outcome)
    return _answer(ctx, asked, created=created)


def _answer(ctx: RequestContext, asked: _Asked, created: list[str] | tuple[()]) -> Resp:
    cache = ctx.services.metadata
    brokers = []
    for b in sorted(cache.brokers.values(), key=lambda b: b.broker_id):
        ep = b.endpoint(ctx.listener)
        if ep is not None:
            brokers.append(
                Resp.MetadataResponseBroker(node_id=b.broker_id, host=ep.host, port=ep.port, rack=b.rack)
            )
    topics = list(asked.early)
    for name in asked.names:
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
            # Kafka's MetadataCache: replicas and ISR as the controller last sent them, except at v0,
            # whose clients cannot tell a dead replica from a live one without it being left out
            # (and REPLICA_NOT_AVAILABLE said). Offline: what the controller reported (dead brokers,
            # failed log dirs), plus any replica whose broker this cache already knows is gone.
            gone = [r for r in p.replicas if not cache.alive(r)]
            offline = [r for r in p.replicas if r in p.offline_replicas or r in gone]
            replicas, isr = list(p.replicas), list(p.isr)
            error = ErrorCode.NONE
            leader = p.leader
            if ctx.api_version == 0 and gone:
                replicas = [r for r in replicas if r not in gone]
                isr = [r for r in isr if cache.alive(r)]
            if leader < 0 or not cache.alive(leader):
                error, leader = ErrorCode.LEADER_NOT_AVAILABLE, -1
            elif ctx.api_version == 0 and (len(replicas) < len(p.replicas) or len(isr) < len(p.isr)):
                error = ErrorCode.REPLICA_NOT_AVAILABLE
            out_parts.append(
                Resp.MetadataResponsePartition(
                    error_code=error,
                    partition_index=p.partition,
                    leader_id=leader,
                    leader_epoch=p.leader_epoch,
                    replica_nodes=replicas,
                    isr_nodes=isr,
                    offline_replicas=offline,
                )
            )
        topics.append(
            Resp.MetadataResponseTopic(
                name=name,
                topic_id=cache.topic_id(name) or ZERO_UUID,
                is_internal=is_internal_topic(name),
                partitions=out_parts,
            )
        )
    if asked.topic_operations:
        for t in topics:
            if t.name:  # not an unknown id nor an invalid entry
                t.topic_authorized_operations = authorized_operations(ctx, ResourceType.TOPIC, t.name)
    return Resp(
        brokers=brokers,
        cluster_id=ctx.services.identity.cluster_id,
        controller_id=ctx.services.controller_id_for_clients(),
        topics=topics,
        cluster_authorized_operations=(
            authorized_operations(ctx, ResourceType.CLUSTER)
            if asked.cluster_operations
            else AUTHORIZED_OPERATIONS_OMITTED
        ),
    )

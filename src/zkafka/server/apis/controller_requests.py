"""The controller's requests to this broker: LeaderAndIsr, UpdateMetadata, StopReplica.

Fencing: a request from an older controller epoch than the newest seen gets
STALE_CONTROLLER_EPOCH; one addressed to another incarnation of this broker (broker epoch =
czxid of our registration, KIP-380) gets STALE_BROKER_EPOCH. A controller that lost its
session can therefore no longer change this broker's state.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import (
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from zkafka.runtime import collector
from zkafka.server.dispatcher import RequestContext
from zkafka.server.metadata_cache import BrokerEndpoint, LiveBroker, PartitionInfo
from zkafka.server.partition import LeaderState
from zkafka.server.replica_manager import PartitionStateChange
from zkafka.storage.naming import TopicPartition
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import ConfigType
from zkafka.zk.topic_names import is_valid_topic_name

log = logging.getLogger(__name__)


def _fence(ctx: RequestContext, controller_epoch: int, broker_epoch: int) -> ErrorCode:
    if controller_epoch < ctx.services.replicas.controller_epoch:
        return ErrorCode.STALE_CONTROLLER_EPOCH
    # -1: sent by a controller that does not know epochs (old versions): accepted, as Kafka does
    if broker_epoch != -1 and broker_epoch < ctx.services.identity.broker_epoch:
        return ErrorCode.STALE_BROKER_EPOCH
    return ErrorCode.NONE


def _partition_states(request: Any) -> Iterable[tuple[str, Any]]:
    """Partition states with their topic, for both the v0-1 flat and the v2+ grouped layout."""
    for p in request.ungrouped_partition_states:
        yield p.topic_name, p
    for t in request.topic_states:
        for p in t.partition_states:
            yield t.topic_name, p


def _tuples() -> Callable[[Iterable[int]], tuple[int, ...]]:
    """One shared tuple per distinct replica list of a request: a LeaderAndIsr or UpdateMetadata
    of 100,000 partitions has a handful of distinct ISRs and assignments, and every partition state
    kept (the broker's replicas, the metadata cache) would otherwise hold two tuples of its own."""
    seen: dict[tuple[int, ...], tuple[int, ...]] = {}

    def interned(ids: Iterable[int]) -> tuple[int, ...]:
        if not ids:  # adding/removing replicas: empty but for a partition being reassigned
            return ()
        t = tuple(ids)
        return seen.setdefault(t, t)

    return interned


def handle_leader_and_isr(
    ctx: RequestContext, request: LeaderAndIsrRequest
) -> LeaderAndIsrResponse | Awaitable[LeaderAndIsrResponse]:
    error = _fence(ctx, request.controller_epoch, request.broker_epoch)
    if error != ErrorCode.NONE:
        return LeaderAndIsrResponse(error_code=error)
    ids = _tuples()
    changes = [
        PartitionStateChange(
            TopicPartition(topic, p.partition_index),
            LeaderState(
                leader=p.leader,
                leader_epoch=p.leader_epoch,
                isr=ids(p.isr),
                replicas=ids(p.replicas),
                zk_version=p.zk_version,
                controller_epoch=p.controller_epoch,
                adding_replicas=ids(p.adding_replicas),
                removing_replicas=ids(p.removing_replicas),
            ),
            is_new=p.is_new,
        )
        for topic, p in _partition_states(request)
    ]
    # No controller names these; one that does (a fake or a corrupt request) gets an error for
    # them instead of a log directory named "..-0" or a traceback.
    refused = {c.tp: code for c in changes if (code := _illegal(c.tp)) != ErrorCode.NONE}
    if refused:
        changes = [c for c in changes if c.tp not in refused]
    logs = ctx.services.logs
    new_topics = {c.tp.topic for c in changes if logs.get_log(c.tp.topic, c.tp.partition) is None}
    reassigning = {c.tp.topic for c in changes if c.state.adding_replicas}
    if not new_topics and not reassigning:
        return _apply_leader_and_isr(ctx, request, changes, refused)
    return _apply_with_topic_configs(ctx, request, changes, new_topics, reassigning, refused)


# per topic, not per partition: a request names each topic for up to thousands of partitions
_valid_topic_name = functools.lru_cache(maxsize=4096)(is_valid_topic_name)


def _illegal(tp: TopicPartition) -> ErrorCode:
    if not _valid_topic_name(tp.topic):
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    if tp.partition < 0:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.NONE


async def _apply_with_topic_configs(
    ctx: RequestContext,
    request: LeaderAndIsrRequest,
    changes: list[PartitionStateChange],
    new_topics: set[str],
    reassigning: set[str],
    refused: dict[TopicPartition, ErrorCode],
) -> LeaderAndIsrResponse:
    """Logs about to be created get their topic's config overrides from /config/topics/<t> first, as
    Kafka reads them when it creates a log: the overrides given at topic creation (min.insync.replicas,
    retention...) reach no broker any other way (config change notifications are for alterations).

    Topics being reassigned get their replication throttles read again first, and the broker's
    throttle rates too: `kafka-reassign-partitions --execute --throttle` writes them just before
    the reassignment, and their change notifications can reach this broker after the controller's
    LeaderAndIsr does. Read afterwards, the new replica's first fetches would run unthrottled."""
    topics = new_topics | reassigning
    try:
        overrides = await ctx.services.zk.run(
            KafkaZkClient.get_entity_configs, ConfigType.TOPIC, sorted(topics)
        )
    except Exception as e:  # ZooKeeper unreachable: the controller's decision still applies
        log.warning("cannot read the configs of topics %s (using the defaults): %s", sorted(topics), e)
        overrides = None
    else:
        if ctx.services.on_topic_overrides is not None:
            for topic in topics:
                ctx.services.on_topic_overrides(topic, overrides.get(topic, {}))
        if reassigning and ctx.services.dynamic is not None:
            await ctx.services.dynamic.reload()
    _configure_new_topics(ctx, new_topics, overrides or {})
    # The new logs' files are made off the loop (thousands of them take seconds of syscalls).
    mine = [
        c.tp
        for c in changes
        if c.tp.topic in new_topics and ctx.services.identity.broker_id in c.state.replicas
    ]
    if mine:
        await asyncio.get_running_loop().run_in_executor(None, ctx.services.replicas.create_logs, mine)
    # the awaits let other requests run: a newer controller may have spoken meanwhile
    error = _fence(ctx, request.controller_epoch, request.broker_epoch)
    if error != ErrorCode.NONE:
        return LeaderAndIsrResponse(error_code=error)
    return _apply_leader_and_isr(ctx, request, changes, refused)


def _configure_new_topics(
    ctx: RequestContext, topics: set[str], overrides: dict[str, dict[str, str]]
) -> None:
    lm = ctx.services.logs
    for topic in topics:
        try:
            config = lm.default_config.with_overrides(overrides[topic]) if overrides.get(topic) else None
        except ValueError as e:
            log.error("ignoring the invalid config of topic %s: %s", topic, e)
            config = None
        lm.update_topic_config(topic, config)


def _apply_leader_and_isr(
    ctx: RequestContext,
    request: LeaderAndIsrRequest,
    changes: list[PartitionStateChange],
    refused: dict[TopicPartition, ErrorCode],
) -> LeaderAndIsrResponse:
    with collector.paused():  # new partitions, kept: the dispatcher's reason (it paused the first part)
        errors = ctx.services.replicas.become_leader_or_follower(request.controller_epoch, changes)
    ctx.services.groups.on_leadership_changed(errors)
    if ctx.services.transactions is not None:
        ctx.services.transactions.on_leadership_changed(errors)
    errors = {**refused, **errors}
    return LeaderAndIsrResponse(
        partition_errors=[
            LeaderAndIsrResponse.LeaderAndIsrPartitionError(
                topic_name=tp.topic, partition_index=tp.partition, error_code=code
            )
            for tp, code in errors.items()
        ]
    )


def handle_update_metadata(ctx: RequestContext, request: UpdateMetadataRequest) -> UpdateMetadataResponse:
    error = _fence(ctx, request.controller_epoch, request.broker_epoch)
    if error != ErrorCode.NONE:
        return UpdateMetadataResponse(error_code=error)
    brokers = []
    for b in request.live_brokers:
        if ctx.api_version == 0:
            endpoints = (BrokerEndpoint("PLAINTEXT", b.v0_host, b.v0_port, 0),)
        else:
            endpoints = tuple(
                BrokerEndpoint(
                    ep.listener or _protocol_name(ep.security_protocol),
                    ep.host,
                    ep.port,
                    ep.security_protocol,
                )
                for ep in b.endpoints
            )
        brokers.append(LiveBroker(b.id, endpoints, b.rack))
    ids = _tuples()
    partitions = [
        PartitionInfo(
            topic=topic,
            partition=p.partition_index,
            controller_epoch=p.controller_epoch,
            leader=p.leader,
            leader_epoch=p.leader_epoch,
            isr=ids(p.isr),
            zk_version=p.zk_version,
            replicas=ids(p.replicas),
            offline_replicas=ids(p.offline_replicas),
        )
        for topic, p in _partition_states(request)
    ]
    replicas = ctx.services.replicas
    replicas.controller_epoch = max(replicas.controller_epoch, request.controller_epoch)
    topic_ids = {t.topic_name: t.topic_id for t in request.topic_states}  # all zeros below v7
    ctx.services.metadata.update(
        request.controller_id, request.controller_epoch, brokers, partitions, topic_ids
    )
    ctx.services.metadata_waits.updated()
    return UpdateMetadataResponse(error_code=ErrorCode.NONE)


def _protocol_name(security_protocol: int) -> str:
    return {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}.get(security_protocol, "PLAINTEXT")


def handle_stop_replica(ctx: RequestContext, request: StopReplicaRequest) -> StopReplicaResponse:
    error = _fence(ctx, request.controller_epoch, request.broker_epoch)
    if error != ErrorCode.NONE:
        return StopReplicaResponse(error_code=error)
    tps = [TopicPartition(p.topic_name, p.partition_index) for p in request.ungrouped_partitions]
    for t in request.topics:
        tps.extend(TopicPartition(t.name, i) for i in t.partition_indexes)
    # v0-1 (what we advertise) carry one request-level delete flag
    delete = bool(request.delete_partitions)
    errors = ctx.services.replicas.stop_replicas(request.controller_epoch, tps, delete)
    return StopReplicaResponse(
        partition_errors=[
            StopReplicaResponse.StopReplicaPartitionError(
                topic_name=tp.topic, partition_index=tp.partition, error_code=code
            )
            for tp, code in errors.items()
        ]
    )

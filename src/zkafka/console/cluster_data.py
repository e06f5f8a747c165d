"""Brokers and topics as the pages show them: what the brokers answer (Metadata, ListOffsets,
DescribeConfigs), with ZooKeeper's registrations (every listener, broker epoch) when known."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace

from zkafka.admin.reassignment import format_plan
from zkafka.client.admin import ConfigEntry
from zkafka.client.cluster import NO_LEADER, TopicMetadata
from zkafka.client.offsets import list_offsets
from zkafka.client.types import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, TopicPartition
from zkafka.console.source import ClusterSource, SeenBroker
from zkafka.doctor.view import ClusterView
from zkafka.zk.topic_names import is_internal_topic

OFFSETS_TIMEOUT_S = 3.0
"""A page shows offsets it could not get within this as unknown rather than wait longer."""


@dataclass(frozen=True, slots=True)
class BrokerRow:
    broker_id: int
    alive: bool
    controller: bool
    rack: str | None
    endpoints: tuple[str, ...]
    epoch: int | None = None


@dataclass(frozen=True, slots=True)
class PartitionRow:
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    earliest: int | None = None
    latest: int | None = None
    min_isr: int = 1
    """The topic's min.insync.replicas, where known (the topic page): fewer in the ISR refuses
    acks=all produce requests."""

    @property
    def offline(self) -> bool:
        return self.leader == NO_LEADER

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def under_min_isr(self) -> bool:
        return len(self.isr) < self.min_isr

    @property
    def status(self) -> str:
        if self.offline:
            return "offline"
        if self.under_min_isr:
            return "under-min-isr"
        return "under-replicated" if self.under_replicated else "ok"


@dataclass(frozen=True, slots=True)
class TopicRow:
    name: str
    internal: bool
    partitions: tuple[PartitionRow, ...]

    @property
    def replication_factor(self) -> int:
        return max((len(p.replicas) for p in self.partitions), default=0)

    @property
    def offline(self) -> int:
        return sum(p.offline for p in self.partitions)

    @property
    def under_replicated(self) -> int:
        return sum(p.under_replicated and not p.offline for p in self.partitions)


@dataclass
class ClusterState:
    cluster_id: str | None
    controller: int
    brokers: list[BrokerRow]
    topics: list[TopicRow] = field(default_factory=list)

    @property
    def dead(self) -> list[BrokerRow]:
        return [b for b in self.brokers if not b.alive]


async def cluster_state(source: ClusterSource, view: ClusterView | None) -> ClusterState:
    """Brokers (the dead ones too: remembered, or still named as replicas) and every topic."""
    description = await source.admin.describe_cluster()
    topics = await source.admin.describe_topics()
    alive = {b.node_id: b for b in description.brokers}
    for b in description.brokers:
        source.seen[b.node_id] = SeenBroker(b.node_id, b.host, b.port, b.rack)
    if view is not None:
        for bid, info in view.brokers.items():
            if bid not in source.seen and info.endpoints:
                e = info.endpoints[0]
                source.seen[bid] = SeenBroker(bid, e.host, e.port, info.rack)
    named = {r for t in topics.values() for p in t.partitions.values() for r in p.replicas}
    registered = view.brokers if view is not None else {}
    rows = []
    for bid in sorted(set(source.seen) | named | set(registered)):
        info = registered.get(bid)
        seen = source.seen.get(bid)
        if info is not None:
            endpoints = tuple(e.connection_string for e in info.endpoints)
            rack, epoch = info.rack, info.epoch
        else:
            endpoints = () if seen is None else (f"{seen.host}:{seen.port}",)
            rack, epoch = (None if seen is None else seen.rack), None
        rows.append(BrokerRow(bid, bid in alive, bid == description.controller_id, rack, endpoints, epoch))
    return ClusterState(
        description.cluster_id,
        description.controller_id,
        rows,
        [_topic_row(t) for _, t in sorted(topics.items())],
    )


def state_from_zookeeper(source: ClusterSource, view: ClusterView) -> ClusterState:
    """The same picture from ZooKeeper alone, for when no broker answers: registrations say who is
    alive, the partition state znodes say leaders and ISRs."""
    named = {r for t in view.topics.values() for rs in t.partitions.values() for r in rs}
    rows = []
    for bid in sorted(set(source.seen) | named | set(view.brokers)):
        info, seen = view.brokers.get(bid), source.seen.get(bid)
        endpoints = (
            tuple(e.connection_string for e in info.endpoints)
            if info is not None
            else (() if seen is None else (f"{seen.host}:{seen.port}",))
        )
        rack = info.rack if info is not None else None if seen is None else seen.rack
        rows.append(
            BrokerRow(
                bid,
                info is not None,
                bid == view.controller,
                rack,
                endpoints,
                None if info is None else info.epoch,
            )
        )
    topics = []
    for name, assignment in sorted(view.topics.items()):
        parts = []
        for p, replicas in sorted(assignment.partitions.items()):
            state = view.states.get(TopicPartition(name, p))
            lai = None if state is None else state.leader_and_isr
            leader = NO_LEADER if lai is None or lai.leader not in view.brokers else lai.leader
            parts.append(PartitionRow(p, leader, tuple(replicas), () if lai is None else tuple(lai.isr)))
        topics.append(TopicRow(name, is_internal_topic(name), tuple(parts)))
    return ClusterState(None, -1 if view.controller is None else view.controller, rows, topics)


def _topic_row(
    topic: TopicMetadata, offsets: dict[TopicPartition, tuple[int | None, int | None]] | None = None
) -> TopicRow:
    offsets = offsets or {}
    parts = []
    for p in sorted(topic.partitions.values(), key=lambda p: p.partition):
        earliest, latest = offsets.get(TopicPartition(topic.name, p.partition), (None, None))
        parts.append(PartitionRow(p.partition, p.leader, tuple(p.replicas), tuple(p.isr), earliest, latest))
    return TopicRow(topic.name, topic.is_internal, tuple(parts))


@dataclass
class TopicDetail:
    topic: TopicRow
    configs: list[ConfigEntry]
    offsets_note: str | None = None
    """Why some offsets are missing, when they are."""

    @property
    def plan(self) -> str:
        """The topic's assignment in Kafka's reassignment JSON: the start of a plan to edit."""
        return format_plan(
            {TopicPartition(self.topic.name, p.partition): p.replicas for p in self.topic.partitions}
        )


async def topic_detail(source: ClusterSource, name: str) -> TopicDetail:
    """One topic: partitions with their offsets, and every config with its source. An unknown
    topic raises Kafka's UNKNOWN_TOPIC_OR_PARTITION (a 404 page)."""
    meta = (await source.admin.describe_topics([name]))[name]
    led = [TopicPartition(name, p) for p, m in meta.partitions.items() if m.leader != NO_LEADER]
    offsets, note = await log_offsets(source, led)
    if len(led) < meta.partition_count:
        note = "offline partitions have no offsets to show" + (f"; {note}" if note else "")
    configs = await source.admin.describe_topic_configs(name)
    min_isr = configs.get("min.insync.replicas")
    row = _topic_row(meta, offsets)
    if min_isr is not None and min_isr.value and min_isr.value.isdigit():
        row = replace(row, partitions=tuple(replace(p, min_isr=int(min_isr.value)) for p in row.partitions))
    return TopicDetail(row, sorted(configs.values(), key=lambda c: c.name), note)


async def log_offsets(
    source: ClusterSource, partitions: list[TopicPartition]
) -> tuple[dict[TopicPartition, tuple[int | None, int | None]], str | None]:
    """Log start and end offsets of partitions that have a leader; ({}, why) when the leaders do
    not answer in time (a page never waits out the client's whole retry budget)."""
    cluster = source.admin.cluster
    try:
        await cluster.refresh({tp.topic for tp in partitions})
    except Exception as e:
        return {}, f"offsets unavailable: {e}"
    # a partition without a leader would hold ListOffsets in its retry loop for the whole timeout
    partitions = [tp for tp in partitions if cluster.metadata.leader(tp) != NO_LEADER]
    if not partitions:
        return {}, None
    try:
        earliest, latest = await asyncio.gather(
            list_offsets(cluster, dict.fromkeys(partitions, EARLIEST_TIMESTAMP), timeout=OFFSETS_TIMEOUT_S),
            list_offsets(cluster, dict.fromkeys(partitions, LATEST_TIMESTAMP), timeout=OFFSETS_TIMEOUT_S),
        )
    except Exception as e:  # a leader that just died: the page shows the rest of what it knows
        return {}, f"offsets unavailable: {e}"
    return {
        tp: (
            None if earliest.get(tp) is None else earliest[tp].offset,  # type: ignore[union-attr]
            None if latest.get(tp) is None else latest[tp].offset,  # type: ignore[union-attr]
        )
        for tp in partitions
    }, None

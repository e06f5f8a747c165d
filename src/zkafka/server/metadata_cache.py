"""The broker's view of the cluster, fed only by the controller's UpdateMetadata requests.

Brokers never read topic metadata from ZooKeeper to answer clients (as in Kafka): the controller
pushes live brokers and every partition's leader/ISR, and Metadata requests are answered from
here. Leader -2 marks a topic being deleted: such partitions are hidden from clients.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from zkafka.server.delayed import DelayedOperations
from zkafka.storage.naming import TopicPartition

LEADER_DURING_DELETE = -2
NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    listener: str
    host: str
    port: int
    security_protocol: int


@dataclass(frozen=True, slots=True)
class LiveBroker:
    broker_id: int
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None = None

    def endpoint(self, listener: str) -> BrokerEndpoint | None:
        for ep in self.endpoints:
            if ep.listener == listener:
                return ep
        return None


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    topic: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()


@dataclass
class MetadataCache:
    brokers: dict[int, LiveBroker] = field(default_factory=dict)
    controller_id: int = -1
    controller_epoch: int = -1
    partitions: dict[str, dict[int, PartitionInfo]] = field(default_factory=dict)

    def update(
        self,
        controller_id: int,
        controller_epoch: int,
        brokers: Iterable[LiveBroker],
        partition_states: Iterable[PartitionInfo],
    ) -> list[TopicPartition]:
        """Apply one UpdateMetadata. Returns the partitions that were deleted by it."""
        self.controller_id = controller_id
        self.controller_epoch = controller_epoch
        self.brokers = {b.broker_id: b for b in brokers}
        deleted: list[TopicPartition] = []
        for p in partition_states:
            if p.leader == LEADER_DURING_DELETE:
                topic = self.partitions.get(p.topic)
                if topic is not None and topic.pop(p.partition, None) is not None:
                    deleted.append(TopicPartition(p.topic, p.partition))
                    if not topic:
                        del self.partitions[p.topic]
            else:
                self.partitions.setdefault(p.topic, {})[p.partition] = p
        return deleted

    def topics(self) -> list[str]:
        return sorted(self.partitions)

    def contains_topic(self, topic: str) -> bool:
        return topic in self.partitions

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        return self.partitions.get(topic, {}).get(partition)

    def topic_partitions(self, topic: str) -> dict[int, PartitionInfo]:
        return self.partitions.get(topic, {})

    def alive(self, broker_id: int) -> bool:
        return broker_id in self.brokers

    def leader_endpoint(self, tp: TopicPartition, listener: str) -> BrokerEndpoint | None:
        p = self.partition(tp.topic, tp.partition)
        if p is None or p.leader < 0:
            return None
        b = self.brokers.get(p.leader)
        return b.endpoint(listener) if b is not None else None


class MetadataWaits:
    """Requests that answer once the cache shows their outcome (a created topic's leaders, a deleted
    topic gone, an elected leader): parked on the replica manager's delayed operations under one
    key, so they are woken by every UpdateMetadata and released with the rest at shutdown."""

    KEY = "__metadata__"

    def __init__(self, delayed: DelayedOperations) -> None:
        self._delayed = delayed

    async def wait(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """True once `predicate` holds (re-checked on every UpdateMetadata), False after `timeout_s`."""
        return await self._delayed.wait([self.KEY], predicate, timeout_s)

    def updated(self) -> None:
        self._delayed.notify(self.KEY)

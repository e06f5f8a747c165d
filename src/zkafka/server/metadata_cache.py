"""The broker's view of the cluster, fed only by the controller's UpdateMetadata requests.

Brokers never read topic metadata from ZooKeeper to answer clients (as in Kafka): the controller
pushes live brokers and every partition's leader/ISR, and Metadata requests are answered from
here. Leader -2 marks a topic being deleted: such partitions are hidden from clients.

Topic ids (KIP-516) come with UpdateMetadata v7. A topic announced with an id other than the one
cached is a new topic under an old name (deleted and re-created while this broker missed the
deletion): the old incarnation's partitions are dropped, so a re-created topic with fewer
partitions never shows the old ones.
"""

from __future__ import annotations

import uuid
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
    _ids: dict[str, uuid.UUID] = field(default_factory=dict)
    _names: dict[uuid.UUID, str] = field(default_factory=dict)

    def update(
        self,
        controller_id: int,
        controller_epoch: int,
        brokers: Iterable[LiveBroker],
        partition_states: Iterable[PartitionInfo],
        topic_ids: dict[str, uuid.UUID] | None = None,
    ) -> list[TopicPartition]:
        """Apply one UpdateMetadata. `topic_ids` are the ids it announced (none below v7, or an all
        zero id: unknown). Returns the partitions that were deleted by it."""
        self.controller_id = controller_id
        self.controller_epoch = controller_epoch
        self.brokers = {b.broker_id: b for b in brokers}
        deleted: list[TopicPartition] = []
        for topic, topic_id in (topic_ids or {}).items():
            if topic_id.int != 0:
                self._set_topic_id(topic, topic_id, deleted)
        for p in partition_states:
            if p.leader == LEADER_DURING_DELETE:
                topic = self.partitions.get(p.topic)
                if topic is not None and topic.pop(p.partition, None) is not None:
                    deleted.append(TopicPartition(p.topic, p.partition))
                    if not topic:
                        del self.partitions[p.topic]
                        self._forget_id(p.topic)
            else:
                self.partitions.setdefault(p.topic, {})[p.partition] = p
        return deleted

    def _set_topic_id(self, topic: str, topic_id: uuid.UUID, deleted: list[TopicPartition]) -> None:
        old = self._ids.get(topic)
        if old == topic_id:
            return
        if old is not None:
            # A new topic under the name: what is cached belongs to the deleted one.
            deleted.extend(TopicPartition(topic, p) for p in self.partitions.pop(topic, {}))
            self._forget_id(topic)
        self._ids[topic] = topic_id
        self._names[topic_id] = topic

    def _forget_id(self, topic: str) -> None:
        old = self._ids.pop(topic, None)
        if old is not None:
            self._names.pop(old, None)

    def topic_id(self, topic: str) -> uuid.UUID | None:
        """The topic's id, None when the cache knows none (not yet announced, or no such topic)."""
        return self._ids.get(topic) if topic in self.partitions else None

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The name of the topic with this id, None for an id no live topic has."""
        name = self._names.get(topic_id)
        return name if name is not None and name in self.partitions else None

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

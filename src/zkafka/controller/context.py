"""`ControllerContext`: the active controller's in-memory picture of the cluster.

Rule: only the controller's event task reads or changes it (no locks); it is rebuilt from ZooKeeper
on every failover and thrown away on resignation. ZooKeeper is always written *before* the context,
so a controller that dies half-way leaves ZooKeeper in a state its successor can resume from.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from zkafka.controller.states import PartitionAndReplica, PartitionState, ReplicaState
from zkafka.zk.model import BrokerInfo, LeaderIsrAndControllerEpoch, TopicAssignment, TopicPartition

__all__ = ["ControllerContext", "ReplicaAssignment"]


def _without(items: Sequence[int], removed: Iterable[int]) -> tuple[int, ...]:
    drop = set(removed)
    return tuple(i for i in items if i not in drop)


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """A partition's replicas plus its in-flight reassignment (KIP-455).

    During a reassignment `replicas` = target + original (target first, no duplicates),
    `adding` = target - original, `removing` = original - target.
    """

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        return _without(self.replicas, self.adding)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return _without(self.replicas, self.removing)

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    def reassign_to(self, target: Sequence[int]) -> ReplicaAssignment:
        origin = self.origin_replicas
        full = tuple(dict.fromkeys([*target, *origin]))
        return ReplicaAssignment(full, _without(full, origin), _without(full, target))

    def remove_replica(self, replica: int) -> ReplicaAssignment:
        return ReplicaAssignment(
            _without(self.replicas, [replica]),
            _without(self.adding, [replica]),
            _without(self.removing, [replica]),
        )

    @classmethod
    def of_topic(cls, assignment: TopicAssignment) -> dict[int, ReplicaAssignment]:
        return {
            p: cls(tuple(r), assignment.adding_replicas.get(p, ()), assignment.removing_replicas.get(p, ()))
            for p, r in assignment.partitions.items()
        }


@dataclass
class ControllerContext:
    epoch: int = 0
    """Controller epoch this controller was elected with."""
    epoch_zk_version: int = 0
    """zkVersion of /controller_epoch after the election: the fencing token of every write."""

    live_brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    """Registered brokers, including those shutting down."""
    broker_epochs: dict[int, int] = field(default_factory=dict)
    shutting_down_broker_ids: set[int] = field(default_factory=set)
    replicas_on_offline_dirs: dict[int, set[TopicPartition]] = field(default_factory=dict)

    all_topics: set[str] = field(default_factory=set)
    topic_ids: dict[str, str] = field(default_factory=dict)
    assignments: dict[str, dict[int, ReplicaAssignment]] = field(default_factory=dict)
    leadership: dict[TopicPartition, LeaderIsrAndControllerEpoch] = field(default_factory=dict)
    partition_states: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    replica_states: dict[PartitionAndReplica, ReplicaState] = field(default_factory=dict)
    partitions_being_reassigned: set[TopicPartition] = field(default_factory=set)
    _all_partitions: list[TopicPartition] | None = field(default=None, repr=False)
    verified: set[TopicPartition] = field(default_factory=set)
    """Partitions whose `leadership` copy was read from, or written to, ZooKeeper during the event
    being processed (emptied before each event): a decision from such a copy that writes
    nothing (no eligible leader, replica already out of the ISR) stands without a re-read."""

    topics_to_be_deleted: set[str] = field(default_factory=set)
    topics_with_deletion_started: set[str] = field(default_factory=set)
    topics_ineligible_for_deletion: set[str] = field(default_factory=set)

    # -- brokers ---------------------------------------------------------------------------------------
    def set_live_brokers(self, brokers: dict[int, tuple[BrokerInfo, int]]) -> None:
        self.live_brokers = {b: info for b, (info, _) in brokers.items()}
        self.broker_epochs = {b: epoch for b, (_, epoch) in brokers.items()}

    def add_live_brokers(self, brokers: dict[int, tuple[BrokerInfo, int]]) -> None:
        for b, (info, epoch) in brokers.items():
            self.live_brokers[b] = info
            self.broker_epochs[b] = epoch

    def remove_live_brokers(self, broker_ids: Iterable[int]) -> None:
        for b in broker_ids:
            self.live_brokers.pop(b, None)
            self.broker_epochs.pop(b, None)

    @property
    def live_or_shutting_down_broker_ids(self) -> set[int]:
        return set(self.live_brokers)

    @property
    def live_broker_ids(self) -> set[int]:
        return set(self.live_brokers) - self.shutting_down_broker_ids

    def is_replica_online(
        self, broker_id: int, partition: TopicPartition, *, include_shutting_down: bool = False
    ) -> bool:
        if broker_id not in self.live_brokers:
            return False
        if not include_shutting_down and broker_id in self.shutting_down_broker_ids:
            return False
        return partition not in self.replicas_on_offline_dirs.get(broker_id, ())

    def online_replicas(
        self,
        partition: TopicPartition,
        replicas: Iterable[int] | None = None,
        *,
        include_shutting_down: bool = False,
    ) -> set[int]:
        """The replicas (default: the partition's) that can serve."""
        if replicas is None:
            replicas = self.partition_replica_assignment(partition)
        return {
            r
            for r in replicas
            if self.is_replica_online(r, partition, include_shutting_down=include_shutting_down)
        }

    def online_replicas_of(
        self, partitions: Iterable[TopicPartition], *, include_shutting_down: bool = False
    ) -> list[frozenset[int]]:
        """`online_replicas` of each partition, in order. Partitions with the same assignment
        share one set while no replica is on a failed log dir: after a broker's death a set per
        partition was a fifth of deciding its 33,000 leaders (100,000 partitions)."""
        if any(self.replicas_on_offline_dirs.values()):
            return [
                frozenset(self.online_replicas(tp, include_shutting_down=include_shutting_down))
                for tp in partitions
            ]
        live = self.live_or_shutting_down_broker_ids if include_shutting_down else self.live_broker_ids
        shared: dict[tuple[int, ...], frozenset[int]] = {}
        out = []
        for tp in partitions:
            replicas = self.partition_replica_assignment(tp)
            online = shared.get(replicas)
            if online is None:
                online = shared[replicas] = frozenset(r for r in replicas if r in live)
            out.append(online)
        return out

    # -- assignments -----------------------------------------------------------------------------------
    def partition_full_replica_assignment(self, partition: TopicPartition) -> ReplicaAssignment:
        found = self.assignments.get(partition.topic, {}).get(partition.partition)
        return found if found is not None else ReplicaAssignment(())

    def partition_replica_assignment(self, partition: TopicPartition) -> tuple[int, ...]:
        return self.partition_full_replica_assignment(partition).replicas

    def update_partition_full_replica_assignment(
        self, partition: TopicPartition, assignment: ReplicaAssignment
    ) -> None:
        per_topic = self.assignments.setdefault(partition.topic, {})
        if partition.partition not in per_topic:
            self._all_partitions = None
        per_topic[partition.partition] = assignment

    def partition_assignments_for_topic(self, topic: str) -> dict[int, ReplicaAssignment]:
        return dict(self.assignments.get(topic, {}))

    def partitions_for_topic(self, topic: str) -> list[TopicPartition]:
        return [TopicPartition(topic, p) for p in sorted(self.assignments.get(topic, {}))]

    @property
    def all_partitions(self) -> list[TopicPartition]:
        """Every partition, by topic and number. Kept between calls (rebuilt when a partition
        comes or goes): failover and every broker change walk all of them. Do not modify it."""
        if self._all_partitions is None:
            self._all_partitions = [
                tp for topic in sorted(self.assignments) for tp in self.partitions_for_topic(topic)
            ]
        return self._all_partitions

    def _on_brokers(self, ids: set[int]) -> Iterator[tuple[TopicPartition, tuple[int, ...]]]:
        """(partition, its replicas) for the partitions with a replica on `ids`, by topic and number.
        Walks the assignments, not `all_partitions`: a broker's death is often the first event
        after topics were created, and rebuilding that list (a TopicPartition per partition)
        held the controller ~0.3 s at 100,000 partitions before the ISR removals could start."""
        assignments = self.assignments
        for topic in sorted(assignments):
            for p, assignment in sorted(assignments[topic].items()):
                replicas = assignment.replicas
                if not ids.isdisjoint(replicas):
                    yield TopicPartition(topic, p), replicas

    def partitions_on_broker(self, broker_id: int) -> list[TopicPartition]:
        return [tp for tp, _ in self._on_brokers({broker_id})]

    def replicas_for_partitions(self, partitions: Iterable[TopicPartition]) -> list[PartitionAndReplica]:
        return [
            PartitionAndReplica(tp, r) for tp in partitions for r in self.partition_replica_assignment(tp)
        ]

    def replicas_for_topic(self, topic: str) -> list[PartitionAndReplica]:
        return self.replicas_for_partitions(self.partitions_for_topic(topic))

    def replicas_on_brokers(self, broker_ids: Iterable[int]) -> list[PartitionAndReplica]:
        ids = set(broker_ids)
        return [
            PartitionAndReplica(tp, r) for tp, replicas in self._on_brokers(ids) for r in replicas if r in ids
        ]

    # -- leadership ------------------------------------------------------------------------------------
    def leader(self, partition: TopicPartition) -> int | None:
        found = self.leadership.get(partition)
        return None if found is None else found.leader_and_isr.leader

    def partition_leaders_on_broker(self, broker_id: int) -> set[TopicPartition]:
        return {tp for tp, s in self.leadership.items() if s.leader_and_isr.leader == broker_id}

    def partitions_with_offline_leader(self) -> list[TopicPartition]:
        """Partitions whose leader cannot serve (`is_replica_online`), topics queued for deletion
        excepted. Walks every partition after each broker's death: while no replica is on a
        failed log dir, a set lookup per partition rather than two calls."""
        deleting = self.topics_to_be_deleted
        if any(self.replicas_on_offline_dirs.values()):
            return [
                tp
                for tp, s in self.leadership.items()
                if not self.is_replica_online(s.leader_and_isr.leader, tp) and tp.topic not in deleting
            ]
        live = self.live_broker_ids
        return [
            tp
            for tp, s in self.leadership.items()
            if s.leader_and_isr.leader not in live and tp.topic not in deleting
        ]

    def partitions_with_leaders(self) -> list[TopicPartition]:
        return [tp for tp in self.all_partitions if tp in self.leadership]

    # -- states ----------------------------------------------------------------------------------------
    def partition_state(self, partition: TopicPartition) -> PartitionState:
        return self.partition_states.get(partition, PartitionState.NON_EXISTENT)

    def partitions_in_states(self, *states: PartitionState) -> list[TopicPartition]:
        return [tp for tp, s in self.partition_states.items() if s in states]

    def replica_state(self, replica: PartitionAndReplica) -> ReplicaState:
        return self.replica_states.get(replica, ReplicaState.NON_EXISTENT)

    def replicas_in_state(self, topic: str, state: ReplicaState) -> list[PartitionAndReplica]:
        return [r for r in self.replicas_for_topic(topic) if self.replica_state(r) is state]

    def are_all_replicas_in_state(self, topic: str, state: ReplicaState) -> bool:
        return all(self.replica_state(r) is state for r in self.replicas_for_topic(topic))

    def is_any_replica_in_state(self, topic: str, state: ReplicaState) -> bool:
        return any(self.replica_state(r) is state for r in self.replicas_for_topic(topic))

    # -- topics and deletion ---------------------------------------------------------------------------
    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        return topic in self.topics_to_be_deleted

    def remove_topic(self, topic: str) -> None:
        """Forget everything about a topic (it was deleted)."""
        self.all_topics.discard(topic)
        self.topic_ids.pop(topic, None)
        self.assignments.pop(topic, None)
        self._all_partitions = None
        for tp in [tp for tp in self.leadership if tp.topic == topic]:
            del self.leadership[tp]
        for tp in [tp for tp in self.partition_states if tp.topic == topic]:
            del self.partition_states[tp]
        for r in [r for r in self.replica_states if r.topic == topic]:
            del self.replica_states[r]
        reassigning = self.partitions_being_reassigned
        reassigning -= {tp for tp in reassigning if tp.topic == topic}
        self.topics_to_be_deleted.discard(topic)
        self.topics_with_deletion_started.discard(topic)
        self.topics_ineligible_for_deletion.discard(topic)

    def iter_topic_partitions(self) -> Iterator[tuple[TopicPartition, ReplicaAssignment]]:
        for topic in sorted(self.assignments):
            for p, a in sorted(self.assignments[topic].items()):
                yield TopicPartition(topic, p), a

"""The states of the controller's two state machines and the transitions each one accepts.

Rule: a state machine moves a partition or replica to a target state only from one of the target's
valid previous states (the tables below); any other request is logged and ignored, never applied.
What each transition *does* (ZooKeeper writes, requests to brokers) is documented in
`partition_state_machine.py` and `replica_state_machine.py`.

Partition states (one per topic partition)::

    NonExistent -> New -> Online <-> Offline -> NonExistent   (New -> Offline too)
    NEW           assignment known, no state znode yet (no leader ever elected)
    ONLINE        a leader was elected and is alive
    OFFLINE       the leader died (or election failed); waits for a new election
    NON_EXISTENT  never created, or deleted

Replica states (one per (partition, broker))::

    NEW                          assigned during a reassignment; may only be a follower
    ONLINE                       part of the assignment; receives LeaderAndIsr
    OFFLINE                      its broker died or it is being stopped; removed from the ISR
    REPLICA_DELETION_STARTED     StopReplica(delete=true) sent, waiting for the answer
    REPLICA_DELETION_SUCCESSFUL  the broker deleted it
    REPLICA_DELETION_INELIGIBLE  deletion failed or its broker is down; retried later
    NON_EXISTENT                 removed from the assignment
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final, NamedTuple

from zkafka.zk.model import TopicPartition

__all__ = [
    "PARTITION_VALID_PREVIOUS",
    "REPLICA_VALID_PREVIOUS",
    "PartitionAndReplica",
    "PartitionState",
    "ReplicaState",
    "StateChangeFailedError",
]


class PartitionState(enum.Enum):
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"
    NON_EXISTENT = "NonExistentPartition"

    # Members are singletons compared by identity: hashed by identity too, in C. Enum's own
    # __hash__ is Python code, and the state machines hash a state per partition and replica
    # they check (~0.14 us each, 100,000 partitions after a broker's death or at failover).
    __hash__ = object.__hash__


PARTITION_VALID_PREVIOUS: Final[Mapping[PartitionState, frozenset[PartitionState]]] = {
    PartitionState.NEW: frozenset({PartitionState.NON_EXISTENT}),
    PartitionState.ONLINE: frozenset({PartitionState.NEW, PartitionState.ONLINE, PartitionState.OFFLINE}),
    PartitionState.OFFLINE: frozenset({PartitionState.NEW, PartitionState.ONLINE, PartitionState.OFFLINE}),
    PartitionState.NON_EXISTENT: frozenset({PartitionState.OFFLINE}),
}


class ReplicaState(enum.Enum):
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT = "NonExistentReplica"

    __hash__ = object.__hash__  # as PartitionState's


_R = ReplicaState
REPLICA_VALID_PREVIOUS: Final[Mapping[ReplicaState, frozenset[ReplicaState]]] = {
    _R.NEW: frozenset({_R.NON_EXISTENT}),
    _R.ONLINE: frozenset({_R.NEW, _R.ONLINE, _R.OFFLINE, _R.DELETION_INELIGIBLE}),
    _R.OFFLINE: frozenset({_R.NEW, _R.ONLINE, _R.OFFLINE, _R.DELETION_INELIGIBLE}),
    _R.DELETION_STARTED: frozenset({_R.OFFLINE}),
    _R.DELETION_SUCCESSFUL: frozenset({_R.DELETION_STARTED}),
    _R.DELETION_INELIGIBLE: frozenset({_R.OFFLINE, _R.DELETION_STARTED}),
    _R.NON_EXISTENT: frozenset({_R.DELETION_SUCCESSFUL}),
}


class PartitionAndReplica(NamedTuple):
    """One replica: a partition on one broker."""

    partition: TopicPartition
    replica: int

    @property
    def topic(self) -> str:
        return self.partition.topic

    def __str__(self) -> str:
        return f"{self.partition}@{self.replica}"


class StateChangeFailedError(Exception):
    """A requested state change could not be made for one partition or replica (no eligible leader,
    state znode missing, written by a newer controller...). Reported per partition, never raised
    out of a state machine."""

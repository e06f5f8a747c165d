"""Small helpers shared by the API handlers."""

from __future__ import annotations

from zkafka.protocol import ErrorCode, KafkaError
from zkafka.server.partition import Partition
from zkafka.server.replica_manager import ReplicaManager
from zkafka.storage.naming import TopicPartition


def check_leader_epoch(partition: Partition, current_leader_epoch: int) -> None:
    """KIP-320 fencing: a client that names a leader epoch must agree with ours."""
    if current_leader_epoch < 0:
        return
    ours = partition.leader_epoch
    if current_leader_epoch < ours:
        raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH, f"epoch {current_leader_epoch} < current {ours}")
    if current_leader_epoch > ours:
        raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH, f"epoch {current_leader_epoch} > current {ours}")


def leader_for(
    replicas: ReplicaManager, topic: str, partition: int, current_leader_epoch: int = -1
) -> Partition:
    p = replicas.leader_partition(TopicPartition(topic, partition))
    check_leader_epoch(p, current_leader_epoch)
    return p


def error_of(exc: BaseException) -> ErrorCode:
    return exc.code if isinstance(exc, KafkaError) else ErrorCode.UNKNOWN_SERVER_ERROR

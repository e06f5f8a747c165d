"""A LeaderAndIsr naming a partition whose log was closed after an I/O error (`Log._fail` closes
the log and leaves its replica registered) answers that partition KAFKA_STORAGE_ERROR; every other
partition of the request is still applied."""

from __future__ import annotations

from pathlib import Path

import pytest

from zkafka.protocol import ErrorCode
from zkafka.server.partition import LeaderState
from zkafka.server.replica_manager import PartitionStateChange, ReplicaManager
from zkafka.storage.config import LogConfig
from zkafka.storage.manager import LogManager
from zkafka.storage.naming import TopicPartition

pytestmark = pytest.mark.timeout(60)


def _leader(epoch: int) -> LeaderState:
    return LeaderState(
        leader=1, leader_epoch=epoch, isr=(1,), replicas=(1,), zk_version=epoch, controller_epoch=1
    )


def test_a_closed_log_fails_its_partition_not_the_whole_leader_and_isr(tmp_path: Path) -> None:
    broken, healthy = TopicPartition("t", 0), TopicPartition("t", 1)
    logs = LogManager([tmp_path], LogConfig(), broker_id=1)
    replicas = ReplicaManager(1, logs)
    try:
        first = replicas.become_leader_or_follower(
            1,
            [PartitionStateChange(broken, _leader(0), True), PartitionStateChange(healthy, _leader(0), True)],
        )
        assert first == {broken: ErrorCode.NONE, healthy: ErrorCode.NONE}
        # What Log._fail does after an I/O error renaming a segment: the log is closed, its replica stays
        log_ = replicas.get_partition(broken).log  # type: ignore[union-attr]
        log_.close_without_flush()

        errors = replicas.become_leader_or_follower(
            1, [PartitionStateChange(broken, _leader(1)), PartitionStateChange(healthy, _leader(1))]
        )

        assert errors == {broken: ErrorCode.KAFKA_STORAGE_ERROR, healthy: ErrorCode.NONE}
        assert replicas.get_partition(healthy).leader_epoch == 1  # type: ignore[union-attr]
        assert replicas.get_partition(broken).leader_epoch == 0  # type: ignore[union-attr]
    finally:
        replicas.shutdown()
        logs.shutdown()

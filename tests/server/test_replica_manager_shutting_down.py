"""A broker that has asked for its controlled shutdown starts no replica fetcher for the partitions
the controller then makes it a follower of: the new leaders were elected without it in their ISRs,
and its fetches would only have them add it back before its exit takes it out again."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from zkafka.protocol import ErrorCode
from zkafka.server.partition import LeaderState
from zkafka.server.replica_manager import FollowerHooks, PartitionStateChange, ReplicaManager
from zkafka.storage.config import LogConfig
from zkafka.storage.manager import LogManager
from zkafka.storage.naming import TopicPartition


class Recorded(FollowerHooks):
    def __init__(self) -> None:
        self.added: list[dict[TopicPartition, int]] = []
        self.removed: list[list[TopicPartition]] = []

    def add_followers(self, partitions: dict[TopicPartition, int]) -> None:
        self.added.append(dict(partitions))

    def remove_followers(self, partitions: Iterable[TopicPartition]) -> None:
        self.removed.append(list(partitions))


def state(leader: int, epoch: int) -> LeaderState:
    return LeaderState(leader=leader, leader_epoch=epoch, isr=(1, 2), replicas=(1, 2), zk_version=epoch,
                       controller_epoch=1)  # fmt: skip


def test_a_broker_in_controlled_shutdown_fetches_for_no_new_leader(tmp_path: Path) -> None:
    led, followed = TopicPartition("t", 0), TopicPartition("t", 1)
    replicas = ReplicaManager(1, LogManager([tmp_path], LogConfig(), broker_id=1))
    fetchers = replicas.followers = Recorded()
    first = replicas.become_leader_or_follower(
        1, [PartitionStateChange(led, state(1, 0), True), PartitionStateChange(followed, state(2, 0), True)]
    )
    assert first == {led: ErrorCode.NONE, followed: ErrorCode.NONE}
    assert fetchers.added == [{followed: 2}]  # running normally: a fetcher for the followed one

    replicas.shutting_down = True  # the broker asks for its controlled shutdown
    moved = replicas.become_leader_or_follower(1, [PartitionStateChange(led, state(2, 1))])
    assert moved == {led: ErrorCode.NONE}
    assert replicas.get_partition(led).leader_epoch == 1  # type: ignore[union-attr]
    assert fetchers.added == [{followed: 2}]  # no fetcher for the partition it no longer leads
    replicas.log_manager.shutdown()

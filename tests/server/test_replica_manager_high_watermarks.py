"""The periodic high-watermark checkpoint takes only what changed: the replica manager hands over
the partitions touched since the last round, and the log manager writes nothing when none moved
and no log came or went (a broker of 66,000 idle replicas used to read and compare them all every
`replica.high.watermark.checkpoint.interval.ms`)."""

from __future__ import annotations

from pathlib import Path

from zkafka.records.batch import validate_batches
from zkafka.records.record import simple_batch
from zkafka.server.partition import LeaderState
from zkafka.server.replica_manager import PartitionStateChange, ReplicaManager
from zkafka.storage.checkpoint import OffsetCheckpointFile
from zkafka.storage.config import LogConfig
from zkafka.storage.manager import LogManager
from zkafka.storage.naming import TopicPartition

LED, FOLLOWED = TopicPartition("t", 0), TopicPartition("t", 1)


def state(leader: int, isr: tuple[int, ...]) -> LeaderState:
    return LeaderState(
        leader=leader, leader_epoch=0, isr=isr, replicas=(1, 2), zk_version=0, controller_epoch=1
    )


def append(replicas: ReplicaManager, tp: TopicPartition, n: int) -> None:
    batch = bytearray(simple_batch([(None, b"v")] * n, timestamp=0))
    replicas.append_to_leader(tp, batch, validate_batches(batch), required_acks=1)


def checkpoint_file(tmp_path: Path) -> Path:
    return tmp_path / "replication-offset-checkpoint"


def test_only_the_touched_partitions_are_handed_over(tmp_path: Path) -> None:
    replicas = ReplicaManager(1, LogManager([tmp_path], LogConfig(), broker_id=1))
    replicas.become_leader_or_follower(
        1,
        [
            PartitionStateChange(LED, state(1, (1,)), True),
            PartitionStateChange(FOLLOWED, state(2, (1, 2)), True),
        ],
    )
    assert replicas.high_watermark_changes() == {LED: 0, FOLLOWED: 0}  # new: both, once
    assert replicas.high_watermark_changes() == {}

    append(replicas, LED, 3)  # the ISR is the leader alone: the high watermark moves at once
    assert replicas.high_watermark_changes() == {LED: 3}

    follower = replicas.get_partition(FOLLOWED)
    assert follower is not None
    batch = bytearray(simple_batch([(None, b"v")] * 5, timestamp=0))
    follower.append_as_follower(batch, validate_batches(batch))
    follower.update_follower_high_watermark(4)
    assert replicas.high_watermark_changes() == {FOLLOWED: 4}

    follower.start_over_at(40)  # behind its leader's log start: the high watermark moves with it
    assert replicas.high_watermark_changes() == {FOLLOWED: 40}
    assert replicas.high_watermark(FOLLOWED) == 40
    replicas.log_manager.shutdown()


def test_an_idle_round_writes_nothing_and_a_new_or_deleted_log_rewrites_the_file(tmp_path: Path) -> None:
    logs = LogManager([tmp_path], LogConfig(), broker_id=1)
    replicas = ReplicaManager(1, logs)
    replicas.become_leader_or_follower(1, [PartitionStateChange(LED, state(1, (1,)), True)])
    append(replicas, LED, 2)
    logs.checkpoint_high_watermarks(replicas.high_watermark_changes())
    path = checkpoint_file(tmp_path)
    written = path.stat().st_ino
    assert OffsetCheckpointFile(path).read() == {LED: 2}

    logs.checkpoint_high_watermarks(replicas.high_watermark_changes())  # idle: nothing handed over
    assert path.stat().st_ino == written  # not rewritten

    append(replicas, LED, 1)
    logs.checkpoint_high_watermarks(replicas.high_watermark_changes())
    assert OffsetCheckpointFile(path).read() == {LED: 3}

    # a log made without a partition (nothing touched): its checkpointed value is still written
    logs.get_or_create_log("u", 0)
    logs.checkpoint_high_watermarks({})
    assert OffsetCheckpointFile(path).read() == {LED: 3}  # no high watermark known for u-0 yet
    logs.checkpoint_high_watermarks({TopicPartition("u", 0): 0})
    assert OffsetCheckpointFile(path).read() == {LED: 3, TopicPartition("u", 0): 0}

    logs.delete_log("u", 0)  # a deleted log leaves the file at the next round, though nothing moved
    logs.checkpoint_high_watermarks({})
    assert OffsetCheckpointFile(path).read() == {LED: 3}
    logs.shutdown()

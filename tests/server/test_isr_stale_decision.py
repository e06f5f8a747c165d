"""The leader's ISR writes (`zkafka.server.isr.IsrManager`) against a real ZooKeeper: an ISR
change decided from one partition state must never be written on top of a newer state that a
LeaderAndIsr brought before the write went out (the controller's decision wins)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from zkafka.server.isr import IsrManager
from zkafka.server.partition import LeaderState
from zkafka.server.replica_manager import PartitionStateChange, ReplicaManager
from zkafka.storage.config import LogConfig
from zkafka.storage.manager import LogManager
from zkafka.storage.naming import TopicPartition
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import LeaderAndIsr, LeaderIsrAndControllerEpoch
from zkafka.zk.watch_bridge import ZkExecutor

pytestmark = pytest.mark.timeout(60)

TP = TopicPartition("t", 0)


class _Zk:
    """The broker's `ZooKeeper` view (`run` on the ZooKeeper thread) over a real session."""

    def __init__(self, client: KafkaZkClient, executor: ZkExecutor) -> None:
        self.client, self.executor = client, executor

    async def run(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        return await self.executor.call(fn, self.client, *args, **kwargs)


def _state(leader: int, epoch: int, isr: tuple[int, ...], zk_version: int) -> LeaderState:
    return LeaderState(
        leader=leader,
        leader_epoch=epoch,
        isr=isr,
        replicas=(1, 2, 3),
        zk_version=zk_version,
        controller_epoch=1,
    )


@pytest.mark.parametrize("leadership_moves", [True, False], ids=["leader-and-isr-first", "no-leader-and-isr"])
def test_an_isr_change_decided_before_a_leader_and_isr_is_not_written_over_it(
    zk_connect: str, tmp_path: Path, leadership_moves: bool
) -> None:
    async def scenario() -> None:
        executor = ZkExecutor("test-zk")
        client = await executor.call(KafkaZkClient, zk_connect, connection_timeout_ms=10_000)
        logs = LogManager([tmp_path], LogConfig(), broker_id=1)
        replicas = ReplicaManager(1, logs)
        try:
            await executor.call(client.create_top_level_paths)
            await executor.call(client.ensure_path, "/brokers/topics/t")
            _epoch, epoch_zk_version = await executor.call(client.register_controller_and_increment_epoch, 1)
            # broker 1 leads at epoch 0 with ISR [1, 2, 3]
            await executor.call(
                client.create_topic_partition_states,
                {TP: LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2, 3)), 1)},
                epoch_zk_version,
            )
            replicas.become_leader_or_follower(
                1, [PartitionStateChange(TP, _state(1, 0, (1, 2, 3), 0), True)]
            )
            partition = replicas.get_partition(TP)
            assert partition is not None and partition.is_leader
            isr = IsrManager(1, replicas, _Zk(client, executor), lag_time_max_ms=100)

            if leadership_moves:
                # The controller moves leadership to broker 2 with ISR [2, 3] (its conditional
                # write; its LeaderAndIsr to this broker is still on the way) ...
                written = await executor.call(
                    client.update_leader_and_isr,
                    {TP: LeaderAndIsr(2, 1, (2, 3), zk_version=0)},
                    1,
                    epoch_zk_version,
                )
                new_version = written.successful[TP]
            # ... while this broker, still leader at epoch 0, finds replica 3 out of sync (replica 2
            # kept fetching) and queues an ISR shrink decided from its epoch-0 state ...
            await asyncio.sleep(0.3)
            partition.update_follower_fetch(2, partition.log.log_end_offset, replicas.now_ms(), 0)
            isr.maybe_shrink_all()
            assert TP in isr._inflight
            # ... and the LeaderAndIsr is handled before that write goes out (same event-loop turn
            # here; behind a previous batch's ZooKeeper round trip in a busy broker).
            if leadership_moves:
                replicas.become_leader_or_follower(
                    1, [PartitionStateChange(TP, _state(2, 1, (2, 3), new_version))]
                )
                assert not partition.is_leader

            flusher = isr._flusher
            assert flusher is not None
            await flusher

            stored = await executor.call(client.get_partition_state, TP)
            assert stored is not None
            # The new leader's ISR stands: the former leader's decision (ISR [1, 2], made from the
            # epoch-0 state) must not have been written with broker 2's epoch and zkVersion.
            if leadership_moves:
                assert (stored.leader_and_isr.leader, stored.leader_and_isr.isr) == (2, (2, 3))
            else:  # the shrink itself still goes through
                assert (stored.leader_and_isr.leader, stored.leader_and_isr.isr) == (1, (1, 2))
                assert partition.isr == (1, 2)
        finally:
            replicas.shutdown()
            logs.shutdown()
            await executor.call(client.close)
            executor.shutdown()

    asyncio.run(asyncio.wait_for(scenario(), 45))

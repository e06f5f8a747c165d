"""The coordinator runtime over a real log manager and replica manager (no network): loading a
partition from its log, a leadership lost while the log is being read, and a write whose
partition was unloaded before its replication completed (fencing).

The coordinator here is a small one of the tests' own: the last value per key of each partition.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from zkafka.coordinator.runtime import CoordinatorRuntime, LoadState, PartitionLoad
from zkafka.coordinator.store import CoordinatorLogStore
from zkafka.protocol import ErrorCode
from zkafka.protocol.groups.partitioning import offsets_partition_for
from zkafka.records import BatchHeader, iter_records
from zkafka.server.partition import LeaderState
from zkafka.server.replica_manager import PartitionStateChange, ReplicaManager
from zkafka.storage.config import LogConfig
from zkafka.storage.manager import LogManager
from zkafka.storage.naming import TopicPartition

TOPIC = "__test_coordinator"
PARTITIONS = 3


class LastValues:
    """A coordinator's state in miniature: per partition, the last value of each key."""

    def __init__(self) -> None:
        self.state: dict[int, dict[bytes, bytes]] = {}
        self.installed: list[PartitionLoad] = []
        self.unloaded: list[int] = []
        self.gate = threading.Event()  # a replay waits here (off the loop) until the test opens it
        self.gate.set()

    def new_load(self, name: str) -> dict[bytes, bytes]:
        assert name.startswith(f"{TOPIC}-")
        assert self.gate.wait(20)
        return {}

    def replay_batch(self, loaded: dict[bytes, bytes], header: BatchHeader, data: bytes) -> None:
        for rec in iter_records(data):
            assert rec.key is not None
            if rec.value is None:
                loaded.pop(rec.key, None)
            else:
                loaded[rec.key] = rec.value

    def install(self, load: PartitionLoad, loaded: dict[bytes, bytes]) -> None:
        self.state[load.partition] = loaded
        self.installed.append(load)

    def unload(self, partition: int) -> None:
        self.state.pop(partition, None)
        self.unloaded.append(partition)


class Broker:
    """Broker 1 with a log manager in `tmp_path` and a replica manager leading the topic."""

    def __init__(self, directory: Path) -> None:
        self.logs = LogManager([directory], LogConfig(), broker_id=1)
        self.replicas = ReplicaManager(1, self.logs)
        self.store = CoordinatorLogStore(self.replicas, TOPIC, commit_timeout_ms=10_000)
        self.shards = LastValues()
        self.runtime: CoordinatorRuntime[dict[bytes, bytes]] = CoordinatorRuntime(
            self.store,
            self.shards,
            new_load=self.shards.new_load,
            replay_batch=self.shards.replay_batch,
            partition_of=offsets_partition_for,
            num_partitions=lambda: PARTITIONS,
        )

    def lead(
        self, partition: int, epoch: int, isr: tuple[int, ...] = (1,), leader: int = 1
    ) -> TopicPartition:
        tp = TopicPartition(TOPIC, partition)
        state = LeaderState(
            leader=leader, leader_epoch=epoch, isr=isr, replicas=(1, 2), zk_version=0, controller_epoch=1
        )
        self.replicas.become_leader_or_follower(1, [PartitionStateChange(tp, state)])
        return tp

    def log_end(self, partition: int) -> int:
        log = self.replicas.leader_log(TopicPartition(TOPIC, partition))
        assert log is not None
        return log.log_end_offset

    async def loaded(self, partition: int) -> PartitionLoad:
        load = self.runtime.current(partition)
        assert load is not None and load.task is not None
        await load.task
        assert load.state is LoadState.LOADED
        return load

    def close(self) -> None:
        self.replicas.shutdown()
        self.logs.shutdown()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = Broker(tmp_path)
    yield b
    b.close()


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(asyncio.wait_for(coro, 30))


def test_load_replays_the_log_and_unloads_on_leadership_loss(broker: Broker) -> None:
    async def main() -> None:
        rt = broker.runtime
        tp = broker.lead(1, epoch=3)
        for records in ([(b"a", b"1"), (b"b", b"1")], [(b"a", b"2")], [(b"b", None)]):
            assert (await broker.store.append(1, records)).error == ErrorCode.NONE
        assert rt.check(1) == ErrorCode.NOT_COORDINATOR
        assert (await rt.write(1, [(b"c", b"1")])).error == ErrorCode.NOT_COORDINATOR  # not owned
        assert broker.log_end(1) == 4

        rt.leadership_changed([TopicPartition("other", 1), tp])
        assert rt.loading == {1} and rt.check(1) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        load = await broker.loaded(1)
        assert (load.partition, load.epoch) == (1, 3)
        assert rt.owned == {1} and rt.check(1) == ErrorCode.NONE
        assert broker.shards.state == {1: {b"a": b"2"}}

        written = await rt.write(1, [(b"c", b"1")])
        assert (written.error, written.base_offset) == (ErrorCode.NONE, 4)
        rt.partition_led(1)  # led again by a later LeaderAndIsr: nothing to reload
        assert broker.shards.installed == [load]

        # another broker leads it now (a newer leader epoch): unloaded, fenced, state dropped
        rt.leadership_changed([broker.lead(1, epoch=4, isr=(2, 1), leader=2)])
        assert load.state is LoadState.UNLOADED and rt.current(1) is None
        assert rt.owned == set() and broker.shards.unloaded == [1] and broker.shards.state == {}
        assert rt.check(1) == ErrorCode.NOT_COORDINATOR
        assert rt.partition_for("group-x") == offsets_partition_for("group-x", PARTITIONS)
        await rt.stop()

    run(main())


def test_leadership_lost_while_loading_installs_nothing(broker: Broker) -> None:
    async def main() -> None:
        rt = broker.runtime
        broker.lead(0, epoch=0)
        assert (await broker.store.append(0, [(b"k", b"old")])).error == ErrorCode.NONE
        broker.shards.gate.clear()
        rt.partition_led(0)
        first = rt.current(0)
        assert first is not None and first.task is not None
        rt.partition_lost(0)  # while the replay is held in its thread
        assert first.state is LoadState.UNLOADED and rt.check(0) == ErrorCode.NOT_COORDINATOR
        broker.shards.gate.set()
        await first.task
        assert broker.shards.installed == [] and rt.current(0) is None

        # led again: a new load, which is the one installed
        rt.partition_led(0)
        second = await broker.loaded(0)
        assert second is not first and broker.shards.installed == [second]
        assert broker.shards.state == {0: {b"k": b"old"}}
        await rt.stop()
        assert second.state is LoadState.UNLOADED and rt.owned == set()

    run(main())


def test_a_write_whose_partition_was_unloaded_is_not_applied(broker: Broker) -> None:
    async def main() -> None:
        rt = broker.runtime
        tp = broker.lead(2, epoch=0, isr=(1, 2))  # acks=all waits for follower 2
        rt.partition_led(2)
        old = await broker.loaded(2)
        write = asyncio.ensure_future(rt.write(2, [(b"k", b"v")]))
        while broker.log_end(2) == 0:  # appended; now waiting for replication
            await asyncio.sleep(0.005)
        assert not write.done()

        rt.partition_lost(2)  # the partition moved away and came back: a new load
        rt.partition_led(2)
        new = await broker.loaded(2)
        partition = broker.replicas.get_partition(tp)
        assert partition is not None
        partition.update_follower_fetch(2, broker.log_end(2), broker.replicas.now_ms())  # replicated
        assert (await write).error == ErrorCode.NOT_COORDINATOR  # started under the old load

        # a write that names the old load is refused before it appends anything
        end = broker.log_end(2)
        stale = await rt.write(2, [(b"k", b"stale")], load=old)
        assert stale.error == ErrorCode.NOT_COORDINATOR and broker.log_end(2) == end
        # while one under the current load goes through
        fresh = asyncio.ensure_future(rt.write(2, [(b"k", b"new")], load=new))
        while broker.log_end(2) == end:
            await asyncio.sleep(0.005)
        partition.update_follower_fetch(2, broker.log_end(2), broker.replicas.now_ms())
        assert (await fresh).error == ErrorCode.NONE
        await rt.stop()

    run(main())

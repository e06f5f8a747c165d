"""The transaction coordinator over a real log manager and replica manager (no network): this
broker leads every `__transaction_state` partition and every data partition, and markers are
written through the broker's own leader path (`server.txn_markers.write_markers_locally`)."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import replace
from pathlib import Path

from zkafka.coordinator.store import CoordinatorLogStore
from zkafka.protocol import ErrorCode
from zkafka.server.partition import LeaderState
from zkafka.server.replica_manager import PartitionStateChange, ReplicaManager
from zkafka.server.txn_markers import write_markers_locally
from zkafka.storage.config import LogConfig
from zkafka.storage.manager import LogManager
from zkafka.storage.naming import TopicPartition
from zkafka.transactions.coordinator import TransactionCoordinator, TxnConfig
from zkafka.transactions.state import TxnState
from zkafka.zk.topic_names import TRANSACTION_STATE_TOPIC

CONFIG = TxnConfig(num_partitions=2, max_timeout_ms=60_000, abort_timed_out_interval_ms=50)
DATA = [TopicPartition("out", 0), TopicPartition("out", 1)]


class LocalMarkers:
    def __init__(self, replicas: ReplicaManager) -> None:
        self.replicas = replicas

    async def write_markers(self, pid, epoch, coordinator_epoch, commit, partitions):  # type: ignore[no-untyped-def]
        out = await write_markers_locally(self.replicas, pid, epoch, coordinator_epoch, commit, partitions)
        return frozenset(tp for tp, e in out.items() if e != ErrorCode.NONE)


class Broker:
    def __init__(self, directory: Path, config: TxnConfig = CONFIG) -> None:
        self.logs = LogManager([directory], LogConfig(), broker_id=1)
        self.replicas = ReplicaManager(1, self.logs)
        state = LeaderState(
            leader=1, leader_epoch=0, isr=(1,), replicas=(1,), zk_version=0, controller_epoch=1
        )
        tps = [TopicPartition(TRANSACTION_STATE_TOPIC, p) for p in range(2)] + DATA
        self.replicas.become_leader_or_follower(1, [PartitionStateChange(tp, state) for tp in tps])
        ids = itertools.count(1000)

        async def next_id() -> int:
            return next(ids)

        self.coordinator = TransactionCoordinator(
            1,
            config,
            CoordinatorLogStore(self.replicas, TRANSACTION_STATE_TOPIC),
            next_id,
            LocalMarkers(self.replicas),
        )

    async def start(self) -> TransactionCoordinator:
        c = self.coordinator
        c.start()
        for p in range(2):
            c.runtime.partition_led(p)
        while c.runtime.loading:
            await asyncio.sleep(0.005)
        return c

    async def close(self) -> None:
        await self.coordinator.stop()
        self.replicas.shutdown()
        self.logs.shutdown()


async def _until(predicate, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


def _md(c: TransactionCoordinator, txn_id: str):  # type: ignore[no-untyped-def]
    return c.transactions[c.partition_for(txn_id)][txn_id]


def test_commit_writes_markers_and_survives_a_reload(tmp_path: Path) -> None:
    async def main() -> None:
        broker = Broker(tmp_path)
        c = await broker.start()
        r = await c.init_producer_id("app", 10_000)
        assert (r.error, r.producer_epoch) == (ErrorCode.NONE, 0)
        assert await c.add_partitions("app", r.producer_id, 0, DATA) == ErrorCode.NONE
        data = broker.replicas.get_partition(DATA[0])
        assert data is not None
        assert await c.end_transaction("app", r.producer_id, 0, True) == ErrorCode.NONE
        await _until(lambda: _md(c, "app").state == TxnState.COMPLETE_COMMIT)
        assert data.log.log_end_offset == 1  # the COMMIT marker
        assert await c.end_transaction("app", r.producer_id, 0, True) == ErrorCode.NONE  # a retry
        await c.stop()

        # a new coordinator (a restart, or another broker taking over) replays the partition
        again = TransactionCoordinator(1, CONFIG, c.store, c._new_producer_id, c.markers)
        broker.coordinator = again
        await broker.start()
        md = _md(again, "app")
        assert (md.producer_id, md.producer_epoch, md.state) == (r.producer_id, 0, TxnState.COMPLETE_COMMIT)
        r2 = await again.init_producer_id("app", 10_000)
        assert (r2.producer_id, r2.producer_epoch) == (r.producer_id, 1)
        assert await again.add_partitions("app", r.producer_id, 0, DATA) == ErrorCode.PRODUCER_FENCED
        await broker.close()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_timeout_aborts_and_fences(tmp_path: Path) -> None:
    async def main() -> None:
        broker = Broker(tmp_path)
        c = await broker.start()
        r = await c.init_producer_id("slow", 100)
        assert await c.add_partitions("slow", r.producer_id, 0, DATA[:1]) == ErrorCode.NONE
        await _until(lambda: _md(c, "slow").state == TxnState.COMPLETE_ABORT)
        md = _md(c, "slow")
        assert md.producer_epoch == 1  # bumped by the fence: the producer's epoch 0 is done
        assert await c.end_transaction("slow", r.producer_id, 0, True) == ErrorCode.PRODUCER_FENCED
        data = broker.replicas.get_partition(DATA[0])
        assert data is not None and data.log.log_end_offset == 1  # the ABORT marker
        await broker.close()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_partition_loss_fences_the_coordinator(tmp_path: Path) -> None:
    async def main() -> None:
        broker = Broker(tmp_path)
        c = await broker.start()
        p = c.partition_for("gone")
        c.runtime.partition_lost(p)
        assert (await c.init_producer_id("gone", 1000)).error == ErrorCode.NOT_COORDINATOR
        assert await c.end_transaction("gone", 1, 0, True) == ErrorCode.NOT_COORDINATOR
        assert (await c.init_producer_id("", 1000)).error == ErrorCode.INVALID_REQUEST
        assert (await c.init_producer_id("x", 60_001)).error == ErrorCode.INVALID_TRANSACTION_TIMEOUT
        await broker.close()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_expired_ids_are_removed_with_a_tombstone(tmp_path: Path) -> None:
    async def main() -> None:
        config = replace(CONFIG, id_expiration_ms=0)
        broker = Broker(tmp_path, config)
        c = await broker.start()
        first = await c.init_producer_id("idle", 10_000)
        busy = await c.init_producer_id("busy", 10_000)
        assert await c.add_partitions("busy", busy.producer_id, 0, DATA[:1]) == ErrorCode.NONE
        assert await c.remove_expired() == 1  # "busy" has a transaction open
        assert c.describe("idle")[0] == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        await c.stop()
        again = TransactionCoordinator(1, config, c.store, c._new_producer_id, c.markers)
        broker.coordinator = again
        await broker.start()
        assert again.describe("idle")[0] == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        assert again.describe("busy")[0] == ErrorCode.NONE
        fresh = await again.init_producer_id("idle", 10_000)
        assert fresh.producer_id != first.producer_id and fresh.producer_epoch == 0
        await broker.close()

    asyncio.run(asyncio.wait_for(main(), 30))

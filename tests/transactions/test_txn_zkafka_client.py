"""zkafka's own transactional producer against real broker processes: committed transactions are
read by read_committed consumers (zkafka's and, as an independent oracle, confluent-kafka's),
aborted ones by none of them, read_uncommitted sees both; a zombie with the same transactional id
is fenced; offsets sent to the transaction count only when it commits."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
from txn_helpers import confluent_consume

from zkafka.client import (
    AdminClient,
    Consumer,
    FatalProducerError,
    Producer,
    TopicPartition,
    TransactionAbortableError,
    TransactionStateError,
)
from zkafka.client.group_admin import GroupAdmin
from zkafka.client.group_consumer import GroupConsumer
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("txn-client"), brokers=1) as c:
        yield c


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def _create(
    bootstrap: str, topic: str, partitions: int = 2, configs: dict[str, str] | None = None
) -> None:
    async with AdminClient(bootstrap) as admin:
        await admin.create_topic(topic, partitions, 1, configs=configs)


async def _read(bootstrap: str, topic: str, isolation: str, partitions: int = 2) -> list[str]:
    """Every value below the end offsets the consumer's isolation level sees (the last stable
    offset for read_committed)."""
    async with Consumer(bootstrap, auto_offset_reset="earliest", isolation_level=isolation) as consumer:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        out: list[str] = []
        for _ in range(200):
            if all([await consumer.position(tp) >= ends[tp] for tp in tps]):
                break
            out.extend(r.value.decode() for r in await consumer.poll(200))
        return out


async def _send(producer: Producer, topic: str, values: list[str]) -> None:
    for i, v in enumerate(values):
        await producer.send(topic, v.encode(), partition=i % 2)


def test_commit_abort_and_both_isolation_levels(cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    topic = _name("txn-zc")

    async def main() -> tuple[list[str], list[str]]:
        await _create(bootstrap, topic)
        async with Producer(bootstrap, transactional_id=_name("tid")) as producer:
            with pytest.raises(TransactionStateError):
                await producer.begin_transaction()  # before init_transactions
            await producer.init_transactions()
            with pytest.raises(TransactionStateError):
                await producer.send(topic, b"outside")  # no transaction open
            await producer.begin_transaction()
            await _send(producer, topic, [f"c1-{i}" for i in range(10)])
            await producer.commit_transaction()
            await producer.begin_transaction()
            await _send(producer, topic, [f"a-{i}" for i in range(10)])
            await producer.flush()  # written to the log, then aborted
            await producer.abort_transaction()
            await producer.begin_transaction()
            await _send(producer, topic, [f"c2-{i}" for i in range(5)])
            await producer.commit_transaction()
        return (
            await _read(bootstrap, topic, "read_committed"),
            await _read(bootstrap, topic, "read_uncommitted"),
        )

    committed, uncommitted = asyncio.run(main())
    expected = sorted([f"c1-{i}" for i in range(10)] + [f"c2-{i}" for i in range(5)])
    assert sorted(committed) == expected
    assert sorted(uncommitted) == sorted(expected + [f"a-{i}" for i in range(10)])
    assert sorted(confluent_consume(bootstrap, topic, "read_committed", 15)) == expected
    assert len(confluent_consume(bootstrap, topic, "read_uncommitted", 25)) == 25


def test_a_zombie_is_fenced_and_cannot_commit(cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    topic, tid = _name("txn-zombie"), _name("tid")

    async def main() -> list[str]:
        await _create(bootstrap, topic)
        zombie = Producer(bootstrap, transactional_id=tid)
        successor = Producer(bootstrap, transactional_id=tid)
        try:
            await zombie.init_transactions()
            await zombie.begin_transaction()
            await _send(zombie, topic, [f"zombie-{i}" for i in range(6)])
            await zombie.flush()
            await successor.init_transactions()  # bumps the epoch, aborts the zombie's transaction
            with pytest.raises(FatalProducerError) as fenced:
                await _send(zombie, topic, ["late"])
                await zombie.commit_transaction()
            assert fenced.value.code.name in ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH")
            with pytest.raises(FatalProducerError):  # unusable from now on
                await zombie.begin_transaction()
            await successor.begin_transaction()
            await _send(successor, topic, [f"successor-{i}" for i in range(4)])
            await successor.commit_transaction()
        finally:
            await zombie.close()
            await successor.close()
        return await _read(bootstrap, topic, "read_committed")

    expected = sorted(f"successor-{i}" for i in range(4))
    assert sorted(asyncio.run(main())) == expected
    assert sorted(confluent_consume(bootstrap, topic, "read_committed", 4)) == expected


def test_offsets_sent_to_the_transaction_count_only_when_it_commits(cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    source, sink, group = _name("txn-src"), _name("txn-sink"), _name("txn-group")
    tp = TopicPartition(source, 0)

    async def main() -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        await _create(bootstrap, source, 1)
        await _create(bootstrap, sink)
        async with Producer(bootstrap) as plain:
            for i in range(10):
                await plain.send(source, f"in-{i}".encode())
        consumer = GroupConsumer(
            bootstrap,
            group_id=group,
            topics=[source],
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            isolation_level="read_committed",
        )
        async with (
            consumer,
            Producer(bootstrap, transactional_id=_name("tid")) as producer,
            GroupAdmin(bootstrap) as groups,
        ):
            got: list[str] = []
            for _ in range(100):
                if len(got) >= 10:
                    break
                got.extend(r.value.decode() for r in await consumer.poll(500))
            await producer.init_transactions()
            for commit in (False, True):
                await producer.begin_transaction()
                await _send(producer, sink, [v.replace("in", "out") for v in got])
                await producer.send_offsets_to_transaction({tp: 10}, consumer.group_metadata())
                if commit:
                    await producer.commit_transaction()
                    after_commit = await groups.committed_offsets(group)
                else:
                    await producer.abort_transaction()
                    after_abort = await groups.committed_offsets(group)
        return after_abort, after_commit

    after_abort, after_commit = asyncio.run(main())
    assert after_abort == {}
    assert after_commit == {tp: 10}
    expected = sorted(f"out-{i}" for i in range(10))
    assert sorted(asyncio.run(_read(bootstrap, sink, "read_committed"))) == expected
    assert sorted(confluent_consume(bootstrap, sink, "read_committed", 10)) == expected


def test_a_failed_send_leaves_only_abort(cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    topic = _name("txn-abortable")

    async def main() -> list[str]:
        await _create(bootstrap, topic, 1, {"max.message.bytes": "1000"})
        async with Producer(bootstrap, transactional_id=_name("tid")) as producer:
            await producer.init_transactions()
            await producer.begin_transaction()
            refused = await producer.send(topic, b"x" * 5000, partition=0)  # MESSAGE_TOO_LARGE
            with pytest.raises(TransactionAbortableError):
                await producer.commit_transaction()
            assert refused.exception() is not None
            with pytest.raises(TransactionAbortableError):
                await producer.send(topic, b"more", partition=0)
            await producer.abort_transaction()
            await producer.begin_transaction()  # usable again
            await producer.send(topic, b"after", partition=0)
            await producer.commit_transaction()
        return await _read(bootstrap, topic, "read_committed", partitions=1)

    assert asyncio.run(main()) == ["after"]

"""Transactions end to end against real broker processes: confluent-kafka's transactional
producer commits and aborts, and a read_committed consumer sees exactly the committed records
(a read_uncommitted one sees both)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from txn_helpers import confluent_consume as _consume

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("txn-e2e"), brokers=1) as c:
        yield c


def _topic(admin: AdminClient, partitions: int = 2) -> str:
    name = f"txn-out-{uuid.uuid4().hex[:8]}"
    for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(30)
    return name


def test_commit_and_abort_with_a_read_committed_consumer(cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = _topic(admin)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"app-{uuid.uuid4().hex[:6]}"})
    p.init_transactions(60)

    p.begin_transaction()
    for i in range(100):
        p.produce(topic, key=str(i).encode(), value=f"committed-{i}".encode())
    p.commit_transaction(60)

    p.begin_transaction()
    for i in range(50):
        p.produce(topic, key=str(i).encode(), value=f"aborted-{i}".encode())
    p.flush(30)
    p.abort_transaction(60)

    p.begin_transaction()
    for i in range(100, 150):
        p.produce(topic, key=str(i).encode(), value=f"committed-{i}".encode())
    p.commit_transaction(60)

    committed = _consume(bootstrap, topic, "read_committed", 150)
    assert sorted(committed) == sorted(f"committed-{i}" for i in range(150))
    everything = _consume(bootstrap, topic, "read_uncommitted", 200)
    assert sorted(everything) == sorted(
        [f"committed-{i}" for i in range(150)] + [f"aborted-{i}" for i in range(50)]
    )


def test_a_fenced_zombie_cannot_commit(cluster: LocalCluster) -> None:
    from confluent_kafka import KafkaException

    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = _topic(admin, partitions=1)
    txn_id = f"zombie-{uuid.uuid4().hex[:6]}"
    zombie = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    zombie.init_transactions(60)
    zombie.begin_transaction()
    for i in range(10):
        zombie.produce(topic, value=f"zombie-{i}".encode())
    zombie.flush(30)
    # a new instance takes over: the open transaction is aborted and the zombie fenced
    fresh = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    fresh.init_transactions(60)
    with pytest.raises(KafkaException):
        zombie.commit_transaction(30)
    fresh.begin_transaction()
    for i in range(5):
        fresh.produce(topic, value=f"fresh-{i}".encode())
    fresh.commit_transaction(60)
    assert sorted(_consume(bootstrap, topic, "read_committed", 5)) == [f"fresh-{i}" for i in range(5)]


def test_send_offsets_to_transaction_commits_the_group_offsets_only_with_the_transaction(
    cluster: LocalCluster,
) -> None:
    from confluent_kafka import TopicPartition as TP

    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    source, sink = _topic(admin, partitions=1), _topic(admin, partitions=1)
    plain = Producer({"bootstrap.servers": bootstrap})
    for i in range(20):
        plain.produce(source, value=f"in-{i}".encode())
    plain.flush(30)
    group = f"ctp-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"ctp-{uuid.uuid4().hex[:6]}"})
    producer.init_transactions(60)
    try:
        consumer.subscribe([source])
        got: list[str] = []
        while len(got) < 10:
            m = consumer.poll(1.0)
            if m is not None and m.error() is None:
                got.append(m.value().decode())
        # first round: aborted -- neither the output nor the offsets count
        producer.begin_transaction()
        for v in got:
            producer.produce(sink, value=v.replace("in", "out").encode())
        producer.send_offsets_to_transaction([TP(source, 0, 10)], consumer.consumer_group_metadata(), 30)
        producer.abort_transaction(60)
        assert consumer.committed([TP(source, 0)], 30)[0].offset < 0
        # second round: committed
        producer.begin_transaction()
        for v in got:
            producer.produce(sink, value=v.replace("in", "out").encode())
        producer.send_offsets_to_transaction([TP(source, 0, 10)], consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(60)
        assert consumer.committed([TP(source, 0)], 30)[0].offset == 10
    finally:
        consumer.close()
    assert sorted(_consume(bootstrap, sink, "read_committed", 10)) == sorted(f"out-{i}" for i in range(10))


def test_aiokafka_transactions_and_read_committed(cluster: LocalCluster) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = _topic(admin, partitions=2)

    async def main() -> list[str]:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, transactional_id=f"aio-{uuid.uuid4().hex[:6]}"
        )
        await producer.start()
        try:
            async with producer.transaction():
                for i in range(30):
                    await producer.send(topic, f"committed-{i}".encode())
            await producer.begin_transaction()
            for i in range(30):
                await producer.send(topic, f"aborted-{i}".encode())
            await producer.abort_transaction()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=f"aio-{uuid.uuid4().hex[:6]}",
            auto_offset_reset="earliest",
            isolation_level="read_committed",
        )
        await consumer.start()
        seen: list[str] = []
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60
            while len(seen) < 30 and loop.time() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                seen += [m.value.decode() for ms in batches.values() for m in ms]
            batches = await consumer.getmany(timeout_ms=1000)  # nothing aborted may follow
            seen += [m.value.decode() for ms in batches.values() for m in ms]
        finally:
            await consumer.stop()
        return seen

    seen = asyncio.run(main())
    assert sorted(seen) == sorted(f"committed-{i}" for i in range(30))


def test_kafka_python_transactions_and_read_committed(cluster: LocalCluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = _topic(admin, partitions=1)
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"kp-{uuid.uuid4().hex[:6]}")
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(10):
        producer.send(topic, f"aborted-{i}".encode())
    producer.flush()
    producer.abort_transaction()
    producer.begin_transaction()
    for i in range(10):
        producer.send(topic, f"committed-{i}".encode())
    producer.commit_transaction()
    producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        consumer_timeout_ms=5000,
    )
    seen = [m.value.decode() for m in consumer]
    consumer.close()
    assert seen == [f"committed-{i}" for i in range(10)]

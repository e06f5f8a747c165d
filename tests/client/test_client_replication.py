"""The client against three real brokers: replicated topics, the controller, leader moves."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from client_helpers import local_cluster, run, topic_name

from zkafka.client import AdminClient, Consumer, Producer, TopicPartition
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with local_cluster(
        zookeeper_server,
        tmp_path_factory.mktemp("client-replication"),
        brokers=3,
        overrides={"replica.lag.time.max.ms": "5000"},
    ) as c:
        yield c


async def _wait_full_isr(admin: AdminClient, topic: str, replicas: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while True:
        meta = (await admin.describe_topics([topic]))[topic]
        if all(len(p.isr) == replicas for p in meta.partitions.values()):
            return
        assert time.monotonic() < deadline, f"ISR did not fill: {meta}"
        await asyncio.sleep(0.2)


def test_replicated_topic_and_manual_assignment(cluster: LocalCluster) -> None:
    name, manual = topic_name("rf3"), topic_name("manual")

    async def main() -> None:
        async with AdminClient(cluster.bootstrap_servers) as admin:
            description = await admin.describe_cluster()
            assert [b.node_id for b in description.brokers] == [1, 2, 3]
            await admin.create_topic(name, 3, 3, configs={"min.insync.replicas": "2"})
            meta = (await admin.describe_topics([name]))[name]
            assert meta.replication_factor == 3
            assert sorted(p.leader for p in meta.partitions.values()) == [1, 2, 3]  # leaders spread
            await _wait_full_isr(admin, name, 3)

            await admin.create_topic(manual, assignment={0: [2, 3], 1: [3, 1]})
            meta = (await admin.describe_topics([manual]))[manual]
            assert {p: m.replicas for p, m in meta.partitions.items()} == {0: (2, 3), 1: (3, 1)}
            assert meta.partitions[0].leader == 2 and meta.partitions[1].leader == 3

            await admin.create_partition(manual, 3, assignments=[[1, 2]])
            meta = (await admin.describe_topics([manual]))[manual]
            assert meta.partitions[2].replicas == (1, 2)

    run(main())


def test_admin_follows_the_controller(cluster: LocalCluster) -> None:
    name = topic_name("ctl")

    async def main() -> None:
        async with AdminClient(cluster.bootstrap_servers) as admin:
            await admin.cluster.refresh()
            controller = admin.cluster.metadata.controller_id
            # pretend Metadata named another broker: it answers NOT_CONTROLLER and the client retries
            from dataclasses import replace

            wrong = next(b for b in (1, 2, 3) if b != controller)
            admin.cluster.metadata = replace(admin.cluster.metadata, controller_id=wrong)
            await admin.create_topic(name, 1, 2)
            assert name in await admin.list_topics()
            assert admin.cluster.metadata.controller_id == controller

    run(main())


def test_acks_all_survives_a_leader_failure(cluster: LocalCluster) -> None:
    name = topic_name("failover")
    tp = TopicPartition(name, 0)

    async def main() -> None:
        async with AdminClient(cluster.bootstrap_servers) as admin:
            await admin.create_topic(name, 1, 3)
            await _wait_full_isr(admin, name, 3)
            leader = (await admin.describe_topics([name]))[name].partitions[0].leader
        async with Producer(
            cluster.bootstrap_servers, acks=-1, enable_idempotence=True, linger_ms=2, retry_backoff_ms=50
        ) as producer:
            acked = [await producer.send_and_wait(name, b"before-%d" % i) for i in range(50)]
            await asyncio.get_running_loop().run_in_executor(None, cluster.stop_broker, leader)
            futures = [await producer.send(name, b"after-%d" % i) for i in range(50)]
            await producer.flush()
            acked += [f.result() for f in futures]
        assert [m.offset for m in acked] == list(range(100))
        async with Consumer(cluster.bootstrap_servers, auto_offset_reset="earliest") as consumer:
            consumer.assign([tp])
            got: list = []
            deadline = time.monotonic() + 30
            while len(got) < 100 and time.monotonic() < deadline:
                got += await consumer.poll(500)
            assert [r.value for r in got] == [b"before-%d" % i for i in range(50)] + [
                b"after-%d" % i for i in range(50)
            ]
            assert consumer.cluster.metadata.leader(tp) not in (leader, -1)
        return leader

    stopped = run(main(), timeout=120)
    cluster.start_broker(stopped)
    cluster.wait_ready(60)


def test_producer_and_consumer_follow_a_crashed_leader(cluster: LocalCluster) -> None:
    name = topic_name("crash")
    tp = TopicPartition(name, 0)

    async def main() -> int:
        async with AdminClient(cluster.bootstrap_servers) as admin:
            await admin.create_topic(name, 1, 3)
            await _wait_full_isr(admin, name, 3)
            leader = (await admin.describe_topics([name]))[name].partitions[0].leader
        async with (
            Producer(
                cluster.bootstrap_servers, enable_idempotence=True, linger_ms=2, retry_backoff_ms=100
            ) as producer,
            Consumer(
                cluster.bootstrap_servers, auto_offset_reset="earliest", fetch_max_wait_ms=200
            ) as consumer,
        ):
            consumer.assign([tp])
            got: list = []
            for i in range(30):
                await producer.send_and_wait(name, b"%d" % i)
            while len(got) < 30:
                got += await consumer.poll(1000)
            cluster.kill_broker(leader)  # no controlled shutdown: the controller learns from ZooKeeper
            futures = [await producer.send(name, b"%d" % i) for i in range(30, 60)]
            await producer.flush(timeout=60)
            assert [f.result().offset for f in futures] == list(range(30, 60))
            deadline = time.monotonic() + 60
            while len(got) < 60 and time.monotonic() < deadline:
                got += await consumer.poll(1000)
            assert [r.value for r in got] == [b"%d" % i for i in range(60)]
            assert consumer.cluster.metadata.leader(tp) not in (leader, -1)
        return leader

    killed = run(main(), timeout=110)
    cluster.start_broker(killed)
    cluster.wait_ready(60)

"""zkafka's clients finding the brokers through ZooKeeper (issue 19, item 2; seed 003).

A producer, consumer and admin client given only `zookeeper.connect` read the live brokers from
`/brokers/ids` and keep that list current with a watch: a broker that registers after the client
started is used without restarting the client; a registration that does not decode is skipped.
Real broker processes on the session ZooKeeper, each test in its own chroot.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from client_helpers import local_cluster, run, topic_name, zkafka_cli
from kazoo.client import KazooClient

from zkafka.client import AdminClient, Consumer, Producer, TopicPartition
from zkafka.client.config import producer_kwargs
from zkafka.client.zk_discovery import choose_endpoint
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.zk.model import BrokerInfo, EndPoint, SecurityProtocol


@pytest.fixture
def cluster(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[LocalCluster]:
    with local_cluster(zookeeper_server, tmp_path / "cluster", 1) as started:
        yield started


async def _wait(condition, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def _read(consumer: Consumer, topic: str, count: int) -> list[bytes]:
    await consumer.assign_topic(topic)
    consumer.seek_to_beginning(*consumer.assignment())
    values: list[bytes] = []
    deadline = asyncio.get_running_loop().time() + 30
    while len(values) < count and asyncio.get_running_loop().time() < deadline:
        values += [r.value for r in await consumer.poll(500)]
    return values


def test_clients_given_only_zookeeper_produce_and_consume(cluster: LocalCluster) -> None:
    name = topic_name("zkdisc")
    connect = cluster.zookeeper_connect
    kwargs, unknown = producer_kwargs({"zookeeper.connect": connect, "acks": "all"})
    assert not unknown and kwargs["zookeeper_connect"] == connect

    async def main() -> None:
        async with AdminClient(zookeeper_connect=connect) as admin:
            await admin.create_topic(name, 2, 1)
        async with Producer(**kwargs) as producer:
            for i in range(20):
                await producer.send_and_wait(name, b"v%d" % i, key=b"%d" % i)
            assert set(producer.cluster.discovered_brokers) == {1}
        async with Consumer(zookeeper_connect=connect) as consumer:
            values = await _read(consumer, name, 20)
        assert sorted(values) == sorted(b"v%d" % i for i in range(20))

    run(main())


def test_a_broker_that_joins_later_is_used_without_restarting_the_client(cluster: LocalCluster) -> None:
    connect = cluster.zookeeper_connect
    first, later = topic_name("before"), topic_name("after")
    bad = KazooClient(hosts=connect, timeout=10)
    bad.start(10)

    async def main() -> None:
        async with (
            AdminClient(zookeeper_connect=connect) as admin,
            Producer(zookeeper_connect=connect) as producer,
        ):
            await admin.create_topic(first, 1, 1)
            await producer.send_and_wait(first, b"before")
            assert set(producer.cluster.discovered_brokers) == {1}

            # a registration that does not decode is skipped, the others still used
            await asyncio.to_thread(bad.create, "/brokers/ids/99", b"{not json")
            await asyncio.to_thread(cluster.add_broker, 2)
            await asyncio.to_thread(cluster.start_broker, 2)
            # the watch, not a request of ours, brings broker 2 into the client's view
            await _wait(lambda: 2 in producer.cluster.discovered_brokers, 60, "the client to see broker 2")
            assert 99 not in producer.cluster.discovered_brokers
            assert producer.cluster.discovered_brokers[2] == ("127.0.0.1", cluster.brokers[2].port)
            await asyncio.to_thread(cluster.wait_ready, 60)

            await admin.create_topic(later, assignment={0: [2]})
            meta = await producer.send_and_wait(later, b"after")
            assert producer.cluster.metadata.leader(TopicPartition(later, 0)) == 2
            assert meta.offset == 0

            # and a broker that leaves is dropped from the list as soon as its registration goes
            await asyncio.to_thread(cluster.stop_broker, 2, 30)
            await _wait(lambda: 2 not in producer.cluster.discovered_brokers, 30, "broker 2 to be dropped")
            await asyncio.to_thread(cluster.start_broker, 2)
            await asyncio.to_thread(cluster.wait_ready, 60)
        async with Consumer(zookeeper_connect=connect) as consumer:
            assert await _read(consumer, later, 1) == [b"after"]

    try:
        run(main(), timeout=120)
    finally:
        bad.delete("/brokers/ids/99")
        bad.stop()
        bad.close()


def test_console_producer_with_zookeeper(cluster: LocalCluster) -> None:
    name = topic_name("console-zk")
    produced = zkafka_cli(
        "console-producer", "--zookeeper", cluster.zookeeper_connect, "--topic", name, stdin=b"a\nb\nc\n"
    )
    assert produced.returncode == 0, produced.stderr

    async def main() -> list[bytes]:
        async with Consumer(cluster.bootstrap_servers) as consumer:
            return await _read(consumer, name, 3)

    assert run(main()) == [b"a", b"b", b"c"]


def test_no_registered_broker_is_a_clear_error(zookeeper_server: ZooKeeperServer) -> None:
    from zkafka.client.errors import BrokerUnavailableError
    from zkafka.testing.zookeeper import chrooted

    async def main(connect: str) -> None:
        async with AdminClient(zookeeper_connect=connect, request_timeout_ms=3000) as admin:
            with pytest.raises(BrokerUnavailableError, match="no brokers registered"):
                await admin.list_topics()

    with chrooted(zookeeper_server) as connect:
        run(main(connect))


def test_endpoint_choice_follows_the_listener_name_or_the_security_protocol() -> None:
    info = BrokerInfo(
        7,
        (
            EndPoint("INTERNAL", "10.0.0.7", 9093, SecurityProtocol.SASL_SSL),
            EndPoint("EXTERNAL", "broker7", 9092, SecurityProtocol.PLAINTEXT),
            EndPoint("REPLICATION", "10.0.0.7", 9094, SecurityProtocol.PLAINTEXT),
        ),
    )
    assert choose_endpoint(info, listener_name=None, security_protocol="PLAINTEXT").port == 9092
    assert choose_endpoint(info, listener_name=None, security_protocol="SASL_SSL").port == 9093
    assert choose_endpoint(info, listener_name="replication", security_protocol="PLAINTEXT").port == 9094
    assert choose_endpoint(info, listener_name=None, security_protocol="SSL") is None
    assert choose_endpoint(info, listener_name="NOPE", security_protocol="PLAINTEXT") is None

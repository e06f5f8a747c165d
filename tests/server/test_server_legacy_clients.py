"""Old clients as their users run them: kafka-python pinned to Kafka 0.8.2 / 0.9 / 0.10 protocol
versions produces magic 0/1 message sets (Produce v0-v2) and fetches with Fetch v0-v3, which the
broker answers with down-converted message sets. A modern client reads what the old one wrote,
and the old one what a modern one wrote (headers dropped, keys, values, offsets and timestamps kept
where the format can hold them)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from zkafka.client.admin import AdminClient
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster

# kafka-python's api_version pins the protocol versions it uses: (0, 10, 1) -> Produce v2 with
# magic 1 and Fetch v3; (0, 10, 0) -> Fetch v2; (0, 9) -> Produce v1 / Fetch v1 with magic 0.
OLD_VERSIONS = [(0, 9), (0, 10, 0), (0, 10, 1)]


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("legacy-clients"), brokers=1) as c:
        yield c


def _topic(cluster: LocalCluster, config: dict[str, str] | None = None) -> str:
    name = f"legacy-{uuid.uuid4().hex[:8]}"

    async def create() -> None:
        async with AdminClient(cluster.bootstrap_servers) as admin:
            await admin.create_topic(name, 1, 1, configs=config or {})

    asyncio.run(create())
    return name


def _read_all(bootstrap: str, topic: str, count: int, api_version: tuple[int, ...] | None) -> list:
    from kafka import KafkaConsumer, TopicPartition

    options = {} if api_version is None else {"api_version": api_version}
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest", **options
    )
    try:
        consumer.assign([TopicPartition(topic, 0)])
        out: list = []
        for _ in range(60):
            for records in consumer.poll(timeout_ms=500).values():
                out.extend(records)
            if len(out) >= count:
                break
        return out
    finally:
        consumer.close()


@pytest.mark.parametrize("api_version", OLD_VERSIONS)
@pytest.mark.parametrize("compression", [None, "gzip", "snappy", "lz4"])
def test_an_old_producer_and_an_old_consumer(
    cluster: LocalCluster, api_version: tuple[int, ...], compression: str | None
) -> None:
    from kafka import KafkaProducer

    if api_version == (0, 9) and compression == "lz4":
        pytest.skip("Kafka 0.9's LZ4 framing is broken by design (KAFKA-3160)")
    topic = _topic(cluster)
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers, api_version=api_version, compression_type=compression
    )
    try:
        for i in range(50):
            producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, timestamp_ms=1_700_000_000_000 + i)
        producer.flush(30)
    finally:
        producer.close()
    old = _read_all(cluster.bootstrap_servers, topic, 50, api_version)
    new = _read_all(cluster.bootstrap_servers, topic, 50, None)
    for records in (old, new):
        assert [(r.offset, r.key, r.value) for r in records] == [
            (i, b"k%d" % i, b"v%d" % i) for i in range(50)
        ]
    with_timestamps = api_version >= (0, 10)
    assert [r.timestamp for r in new] == [1_700_000_000_000 + i if with_timestamps else -1 for i in range(50)]


@pytest.mark.parametrize("api_version", OLD_VERSIONS)
def test_an_old_consumer_reads_what_a_new_producer_wrote(
    cluster: LocalCluster, api_version: tuple[int, ...]
) -> None:
    from confluent_kafka import Producer

    topic = _topic(cluster)
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "compression.type": "zstd", "linger.ms": 20}
    )
    for i in range(40):
        producer.produce(
            topic, key=b"k%d" % i, value=b"v%d" % i, headers=[("h", b"x")], timestamp=1_700_000_000_000 + i
        )
    assert producer.flush(30) == 0
    records = _read_all(cluster.bootstrap_servers, topic, 40, api_version)
    assert [(r.offset, r.key, r.value) for r in records] == [(i, b"k%d" % i, b"v%d" % i) for i in range(40)]
    if api_version >= (0, 10):
        assert [r.timestamp for r in records] == [1_700_000_000_000 + i for i in range(40)]


def test_down_conversion_can_be_switched_off(cluster: LocalCluster) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import UnsupportedVersionError

    topic = _topic(cluster, {"message.downconversion.enable": "false"})
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    producer.produce(topic, value=b"x")
    assert producer.flush(30) == 0
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers,
        group_id=None,
        auto_offset_reset="earliest",
        api_version=(0, 10, 1),
    )
    try:
        consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(UnsupportedVersionError):
            for _ in range(20):
                consumer.poll(timeout_ms=300)
    finally:
        consumer.close()
    # a Fetch v4+ client is not affected
    assert len(_read_all(cluster.bootstrap_servers, topic, 1, None)) == 1

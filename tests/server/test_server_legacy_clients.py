"""Old clients as their users run them: kafka-python pinned to Kafka 0.8.2 / 0.9 / 0.10 protocol
versions produces magic 0/1 message sets (Produce v0-v2) and fetches with Fetch v0-v3, which the
broker answers with down-converted message sets. A modern client reads what the old one wrote,
and the old one what a modern one wrote (headers dropped, keys, values, offsets and timestamps kept
where the format can hold them)."""

from __future__ import annotations

import asyncio
import time
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


@pytest.mark.parametrize(
    ("api_version", "in_zookeeper"), [((0, 8, 1), True), ((0, 8, 2), False), ((0, 9), False)]
)
def test_old_offset_commits_land_where_kafka_keeps_them(
    cluster: LocalCluster, api_version: tuple[int, ...], in_zookeeper: bool
) -> None:
    """kafka-python pinned to 0.8.1 commits with OffsetCommit v0, which Kafka keeps in ZooKeeper
    (`/consumers/<group>/offsets/<topic>/<partition>`, read back by OffsetFetch v0); 0.8.2 commits
    with v1 (Kafka-stored, with a commit timestamp); 0.9 with v2."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata
    from kazoo.client import KazooClient

    topic = _topic(cluster)
    group = f"old-{uuid.uuid4().hex[:8]}"
    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers,
        group_id=group,
        api_version=api_version,
        enable_auto_commit=False,
    )
    try:
        consumer.assign([tp])
        consumer.commit({tp: OffsetAndMetadata(7, "meta", -1)})
        assert consumer.committed(tp) == 7
        consumer.commit({tp: OffsetAndMetadata(9, "", -1)})
        assert consumer.committed(tp) == 9
    finally:
        consumer.close()
    zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
    zk.start()
    try:
        path = f"/consumers/{group}/offsets/{topic}/0"
        if in_zookeeper:
            assert zk.get(path)[0] == b"9"
        else:
            assert zk.exists(path) is None
    finally:
        zk.stop()
        zk.close()


def test_offset_commit_v0_and_v1_corners(cluster: LocalCluster) -> None:
    """Per-partition answers as Kafka gives them: v0 to an unknown topic, v0 fetch of a partition
    never committed (-1, UNKNOWN_TOPIC_OR_PARTITION), an unreadable offset znode answered for its
    partition alone, and v1's own commit timestamp kept as the commit time."""
    from kazoo.client import KazooClient

    from zkafka.client.connection import BrokerConnection
    from zkafka.protocol import ErrorCode
    from zkafka.protocol.messages import FindCoordinatorRequest
    from zkafka.protocol.messages import OffsetCommitRequest as Commit
    from zkafka.protocol.messages import OffsetFetchRequest as Fetch

    topic = _topic(cluster)
    group = f"corners-{uuid.uuid4().hex[:8]}"

    def commit(version: int, name: str, offset: int, timestamp: int = -1) -> int:
        partition = Commit.OffsetCommitRequestPartition(
            partition_index=0, committed_offset=offset, commit_timestamp=timestamp, committed_metadata=""
        )
        request = Commit(
            group_id=group,
            member_id="",
            topics=[Commit.OffsetCommitRequestTopic(name=name, partitions=[partition])],
        )
        response = asyncio.run(_send(request, version))
        return response.topics[0].partitions[0].error_code

    def fetch_v0(partitions: list[int]) -> list[tuple[int, int]]:
        request = Fetch(
            group_id=group, topics=[Fetch.OffsetFetchRequestTopic(name=topic, partition_indexes=partitions)]
        )
        response = asyncio.run(_send(request, 0))
        return [(p.committed_offset, p.error_code) for p in response.topics[0].partitions]

    async def _send(request: object, version: int) -> object:
        conn = await BrokerConnection.open("127.0.0.1", cluster.brokers[1].port)
        try:
            return await conn.send(request, version=version)  # type: ignore[arg-type]
        finally:
            conn.close()

    assert commit(0, "no-such-topic", 5) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert fetch_v0([0]) == [(-1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert commit(0, topic, 5) == ErrorCode.NONE
    assert fetch_v0([0, 7]) == [(5, ErrorCode.NONE), (-1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]

    zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
    zk.start()
    try:
        zk.set(f"/consumers/{group}/offsets/{topic}/0", b"{not a number")
        assert fetch_v0([0]) == [(-1, ErrorCode.UNKNOWN_SERVER_ERROR)]
        assert commit(0, topic, 6) == ErrorCode.NONE  # a commit repairs it
        assert fetch_v0([0]) == [(6, ErrorCode.NONE)]
    finally:
        zk.stop()
        zk.close()

    # v1 goes to the group coordinator: FindCoordinator creates __consumer_offsets, then it loads
    asyncio.run(_send(FindCoordinatorRequest(key=group), 0))
    for _ in range(100):
        error = commit(1, topic, 11, timestamp=1_500_000_000_000)
        if error not in (
            ErrorCode.NOT_COORDINATOR,
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
            ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ):
            break
        time.sleep(0.1)
    assert error == ErrorCode.NONE
    v1 = asyncio.run(
        _send(
            Fetch(group_id=group, topics=[Fetch.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])]),
            1,
        )
    )
    assert v1.topics[0].partitions[0].committed_offset == 11  # type: ignore[attr-defined]
    assert fetch_v0([0]) == [(6, ErrorCode.NONE)]  # the two stores stay apart, as in Kafka
    assert "Traceback" not in cluster.brokers[1].log_path.read_text()

"""Kafka's per-record rules on produce (KIP-467): a compacted topic refuses keyless records with
INVALID_RECORD and `record_errors` instead of accepting them for the cleaner to drop later."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from zkafka.client.admin import AdminClient
from zkafka.client.connection import BrokerConnection
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol.messages import ProduceRequest, ProduceResponse
from zkafka.records.compression import GZIP
from zkafka.records.record import Record, build_batch
from zkafka.testing.cluster import running_cluster

INVALID_RECORD = 87
INVALID_TIMESTAMP = 32


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("record-validation"), brokers=1) as c:
        asyncio.run(_create(c, "compacted", {"cleanup.policy": "compact"}))
        asyncio.run(_create(c, "plain", {}))
        yield c


async def _create(cluster: LocalCluster, topic: str, config: dict[str, str]) -> None:
    async with AdminClient(cluster.bootstrap_servers) as admin:
        await admin.create_topic(topic, 1, 1, configs=config)


def _send(cluster: LocalCluster, topic: str, batch: bytes) -> ProduceResponse.PartitionProduceResponse:
    request = ProduceRequest(
        acks=1,
        timeout_ms=10_000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)]
            )
        ],
    )

    async def send() -> ProduceResponse:
        conn = await BrokerConnection.open("127.0.0.1", cluster.brokers[1].port)
        try:
            return await conn.send(request, version=8)  # type: ignore[return-value]
        finally:
            conn.close()

    return asyncio.run(send()).responses[0].partition_responses[0]


def _produce(
    cluster: LocalCluster, topic: str, keys: list[bytes | None], compression: int = 0
) -> ProduceResponse.PartitionProduceResponse:
    records = [Record(i, 1_700_000_000_000 + i, k, b"v%d" % i) for i, k in enumerate(keys)]
    return _send(cluster, topic, build_batch(records, compression=compression))


@pytest.mark.parametrize("compression", [0, GZIP])
def test_keyless_records_to_a_compacted_topic_are_refused_with_record_errors(
    cluster: LocalCluster, compression: int
) -> None:
    partition = _produce(cluster, "compacted", [b"a", None, b"c", None], compression)
    assert partition.error_code == INVALID_RECORD
    assert [e.batch_index for e in partition.record_errors] == [1, 3]
    assert "without key" in (partition.record_errors[0].batch_index_error_message or "")
    assert "2 of 4 records have no key" in (partition.error_message or "")
    # Nothing of the refused request was appended; keyed records still are.
    ok = _produce(cluster, "compacted", [b"x", b"y"], compression)
    assert ok.error_code == 0 and ok.record_errors == []


def test_keyless_records_to_a_plain_topic_are_fine(cluster: LocalCluster) -> None:
    ok = _produce(cluster, "plain", [None, None])
    assert ok.error_code == 0


def test_an_independent_client_sees_invalid_record(cluster: LocalCluster) -> None:
    from confluent_kafka import KafkaError, Producer

    errors: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
    producer.produce("compacted", value=b"no key", on_delivery=lambda err, _msg: errors.append(err))
    assert producer.flush(30) == 0
    # The whole batch is refused (as Kafka does), so the keyed record goes on its own.
    producer.produce(
        "compacted", key=b"k", value=b"with key", on_delivery=lambda err, _msg: errors.append(err)
    )
    assert producer.flush(30) == 0
    assert errors[0] is not None and errors[0].code() == KafkaError.INVALID_RECORD
    assert errors[1] is None


@pytest.fixture(scope="module")
def strict_clock_topic(cluster: LocalCluster) -> str:
    asyncio.run(_create(cluster, "strict-clock", {"message.timestamp.difference.max.ms": "60000"}))
    return "strict-clock"


def test_timestamps_far_from_the_broker_clock_are_invalid_timestamp(
    cluster: LocalCluster, strict_clock_topic: str
) -> None:
    import time

    now = int(time.time() * 1000)
    records = [Record(0, now, b"a", b"fresh"), Record(1, now - 3_600_000, b"b", b"an hour old")]
    partition = _send(cluster, strict_clock_topic, build_batch(records))
    assert partition.error_code == INVALID_TIMESTAMP
    assert [e.batch_index for e in partition.record_errors] == [1]
    assert _send(cluster, strict_clock_topic, build_batch([Record(0, now, b"k", b"v")])).error_code == 0


def test_valid_kafka_topic_configs_we_do_not_act_on_are_stored_and_described(cluster: LocalCluster) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    config = {"message.format.version": "2.8-IV1", "leader.replication.throttled.replicas": "*"}
    admin.create_topics([NewTopic("habits", 1, 1, config=config)])["habits"].result(30)
    described = admin.describe_configs([ConfigResource("topic", "habits")])
    entries = next(iter(described.values())).result(30)
    assert entries["message.format.version"].value == "2.8-IV1"
    assert entries["leader.replication.throttled.replicas"].value == "*"
    assert entries["message.downconversion.enable"].value == "true"

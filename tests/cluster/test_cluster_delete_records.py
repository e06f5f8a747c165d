"""DeleteRecords (key 21) against a real 3-broker cluster, driven by independent admin clients
(confluent-kafka, kafka-python): the log start offset moves on every in-sync replica, reads start
there, it survives a leader failover, and bad offsets get Kafka's error codes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cluster_helpers import BackgroundProducer, Cluster, create_topic, running, topic_name, wait_for

from zkafka.local.zookeeper import ZooKeeperServer


@pytest.fixture(scope="module")
def cluster(zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(zookeeper_server, tmp_path_factory.mktemp("delete-records"), brokers=3) as c:
        yield c


def _filled_topic(cluster: Cluster, records: int = 300) -> str:
    topic = topic_name("delete-records")
    create_topic(cluster, topic, {0: [1, 2, 3]})
    with BackgroundProducer(cluster.bootstrap, topic, rate=5000) as producer:
        producer.wait_acked(records)
    assert not producer.errors
    return topic


def _earliest(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    try:
        low, _high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return int(low)
    finally:
        consumer.close()


def test_confluent_kafka_deletes_records_on_every_replica(cluster: Cluster) -> None:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    topic = _filled_topic(cluster)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.delete_records([TopicPartition(topic, 0, 120)], request_timeout=30, operation_timeout=30)
    deleted = next(iter(futures.values())).result(30)
    assert deleted.low_watermark == 120
    assert _earliest(cluster.bootstrap, topic) == 120
    # Every replica let go: after the leader is killed, the new one still starts at 120.
    leader = cluster.leader(topic, 0)
    cluster.kill(leader)
    wait_for(lambda: cluster.leader(topic, 0) not in (-1, leader), 30, "a new leader")
    others = ",".join(
        cluster.local.brokers[b].bootstrap for b in cluster.broker_ids if cluster.local.broker_alive(b)
    )
    assert _earliest(others, topic) == 120
    cluster.start(leader)


def test_bad_offsets_get_kafkas_errors(cluster: Cluster) -> None:
    from kafka.admin import KafkaAdminClient
    from kafka.errors import OffsetOutOfRangeError
    from kafka.structs import TopicPartition

    topic = _filled_topic(cluster, records=50)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap.split(","))
    try:
        with pytest.raises(OffsetOutOfRangeError):
            admin.delete_records({TopicPartition(topic, 0): 10_000})
        result = admin.delete_records({TopicPartition(topic, 0): -1})  # everything up to the high watermark
        (low_watermark,) = [v["low_watermark"] for v in result.values()]
        assert low_watermark >= 50
    finally:
        admin.close()

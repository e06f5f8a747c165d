"""DeleteRecords (key 21) against a real 3-broker cluster, driven by independent admin clients
(confluent-kafka, kafka-python): the log start offset moves on every in-sync replica, reads start
there, it survives a leader failover, and bad offsets get Kafka's error codes. Also what clients
are told of a partition whose leader died while no other is elected: Kafka's leaderless answer,
which a fresh librdkafka consumer reads as an unknown partition (why the failover test waits for
the survivors' Metadata, not only for ZooKeeper, before it asks them)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cluster_helpers import (
    BackgroundProducer,
    Cluster,
    create_topic,
    running,
    topic_name,
    wait_for,
    wait_until_metadata_is_propagated,
)

from zkafka.local.zookeeper import ZooKeeperServer


@pytest.fixture(scope="module")
def module_cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    with running(zookeeper_server, tmp_path_factory.mktemp("delete-records"), brokers=3) as c:
        yield c


@pytest.fixture
def cluster(module_cluster: Cluster) -> Cluster:
    module_cluster.ensure_all_running()  # a test that failed may have left a broker killed
    return module_cluster


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
    new = wait_for(lambda: (n := cluster.leader(topic, 0)) not in (-1, leader) and n, 30, "a new leader")
    # What ZooKeeper says reaches the survivors with the controller's UpdateMetadata, later: a
    # consumer asking them before may be told there is no leader (see the test below).
    wait_until_metadata_is_propagated(cluster, topic, 0, new)
    others = ",".join(
        cluster.local.brokers[b].bootstrap for b in cluster.broker_ids if cluster.local.broker_alive(b)
    )
    assert _earliest(others, topic) == 120
    cluster.start(leader)


def test_a_dead_leaders_partition_is_listed_leaderless_until_it_has_a_leader_again(cluster: Cluster) -> None:
    """The state a failover passes through, made to last: partition 0's only replica is killed, so
    no other leader can be elected. Every survivor still lists the partition, as Kafka does, with
    LEADER_NOT_AVAILABLE and leader -1 (never omitted, never a topic error); librdkafka's
    get_watermark_offsets reads that answer as `_UNKNOWN_PARTITION` at once, which is the failure a
    consumer started between ZooKeeper's new leader and the survivors' UpdateMetadata got."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient

    controller = cluster.controller()
    assert controller is not None
    victim = next(b for b in cluster.broker_ids if b != controller)
    survivors = [b for b in cluster.broker_ids if b != victim]
    topic = topic_name("leaderless")
    create_topic(cluster, topic, {0: [victim], 1: [controller]})
    cluster.kill(victim)
    wait_until_metadata_is_propagated(cluster, topic, 0, -1)
    for b in survivors:
        admin = AdminClient({"bootstrap.servers": cluster.local.brokers[b].bootstrap})
        answer = admin.list_topics(topic, timeout=10).topics[topic]
        assert answer.error is None
        assert sorted(answer.partitions) == [0, 1]
        leaderless, led = answer.partitions[0], answer.partitions[1]
        assert leaderless.error is not None and leaderless.error.code() == KafkaError.LEADER_NOT_AVAILABLE
        assert (leaderless.leader, leaderless.replicas) == (-1, [victim])
        assert led.error is None and led.leader == controller
    bootstrap = ",".join(cluster.local.brokers[b].bootstrap for b in survivors)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    try:
        with pytest.raises(KafkaException) as raised:
            consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        assert raised.value.args[0].code() == KafkaError._UNKNOWN_PARTITION
        assert consumer.get_watermark_offsets(TopicPartition(topic, 1), timeout=10) == (0, 0)
    finally:
        consumer.close()
    cluster.start(victim)  # its replica is elected again, and the partition answers
    wait_until_metadata_is_propagated(cluster, topic, 0, victim)
    assert _earliest(cluster.bootstrap, topic) == 0


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

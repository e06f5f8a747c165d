"""A broker restarted after a SIGKILL with many replicas it used to lead: it reconciles them all
with their new leader (OffsetForLeaderEpoch, KIP-101/279) in a few requests, not one round trip
per partition before its first fetch, and is back in every ISR. At 30,000 partitions a restarted
broker asked 10,000 partitions one by one and stayed out of their ISRs for many minutes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cluster_helpers import Cluster, create_topic, running, topic_name, wait_for

from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.metrics.scrape import scrape

PARTITIONS = 120


@pytest.fixture(scope="module")
def cluster(zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(zookeeper_server, tmp_path_factory.mktemp("rejoin"), brokers=2) as c:
        yield c


def _requests(cluster: Cluster, broker: int, api: str) -> float:
    url = cluster.local.brokers[broker].metrics
    return sum(
        s.value
        for s in scrape(url)
        if s.name == "kafka_network_requestmetrics_requests_total" and s.labels.get("request") == api
    )


def _produce_one_each(cluster: Cluster, topic: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5})
    for p in range(PARTITIONS):
        producer.produce(topic, value=b"x", partition=p)
    assert producer.flush(30) == 0


def test_a_restarted_former_leader_reconciles_all_its_replicas_at_once(cluster: Cluster) -> None:
    topic = topic_name("rejoin")
    create_topic(cluster, topic, {p: [1, 2] for p in range(PARTITIONS)})
    _produce_one_each(cluster, topic)  # every replica of broker 1 has a leader epoch to ask about
    cluster.kill(1)
    wait_for(
        lambda: all(cluster.state(topic, p)["leader"] == 2 for p in range(PARTITIONS)),
        60,
        "broker 2 to lead every partition",
    )
    asked_before = _requests(cluster, 2, "OffsetForLeaderEpoch")
    cluster.start(1)
    for p in range(PARTITIONS):
        cluster.wait_isr(topic, p, {1, 2}, timeout=60)
    asked = _requests(cluster, 2, "OffsetForLeaderEpoch") - asked_before
    # one request per round for every partition waiting (a few rounds when the leader was not
    # ready for some yet), where it used to be one per partition
    assert 1 <= asked <= PARTITIONS / 10, asked
    assert "truncating" not in cluster.server_log(1)  # nothing diverged: nothing was cut

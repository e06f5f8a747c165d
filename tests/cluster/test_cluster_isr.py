"""Leader-side ISR maintenance with real processes: a frozen follower is dropped from the ISR after
replica.lag.time.max.ms (state znode written by the leader, announced through
/isr_change_notification, applied by the controller to every broker's metadata), acks=all producers
then get NOT_ENOUGH_REPLICAS(_AFTER_APPEND) under min.insync.replicas, and the follower is taken back
once it has caught up."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from cluster_helpers import Cluster, create_topic, metadata_isr, running, topic_name, wait_for

from zkafka.local.zookeeper import ZooKeeperServer

# The follower stays frozen until the leader's batched ISR notification (published once the last
# change is 5 s old, checked every 2.5 s) has gone through the controller: its ZooKeeper session
# must outlive that, so this cluster gets a long session timeout (nothing here waits for one).
OVERRIDES = {"zookeeper.session.timeout.ms": "20000", "replica.lag.time.max.ms": "1500"}


@pytest.fixture(scope="module")
def cluster(zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(zookeeper_server, tmp_path_factory.mktemp("isr"), brokers=3, overrides=OVERRIDES) as c:
        yield c


class OneShotProducer:
    """acks=all, no retries: each record's delivery report carries the broker's error as is."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka import Producer

        self.errors: list[object] = []
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "retries": 0,
                "enable.idempotence": False,
                "linger.ms": 0,
                "request.timeout.ms": 20000,
                "message.timeout.ms": 25000,
            }
        )

    def send(self, topic: str, value: bytes) -> None:
        self.producer.produce(
            topic, value=value, partition=0, on_delivery=lambda e, _m: self.errors.append(e)
        )
        self.producer.poll(0)

    def results(self, n: int, timeout: float = 25) -> list[object]:
        wait_for(lambda: self.producer.poll(0.1) >= 0 and len(self.errors) >= n, timeout, f"{n} deliveries")
        return self.errors[:n]


def test_a_frozen_follower_leaves_the_isr_and_returns_after_catching_up(cluster: Cluster) -> None:
    from confluent_kafka import KafkaError

    controller = cluster.controller()
    follower = next(b for b in cluster.broker_ids if b != controller)  # the controller must keep running
    leader, other = (b for b in cluster.broker_ids if b != follower)
    topic = topic_name("isr")
    create_topic(cluster, topic, {0: [leader, other, follower]}, {"min.insync.replicas": "3"})
    producer = OneShotProducer(cluster.local.brokers[leader].bootstrap)
    producer.send(topic, b"all-in-sync")
    assert producer.results(1) == [None]
    before = cluster.state(topic, 0)
    notifications = cluster.zk.exists("/isr_change_notification").cversion

    cluster.pause(follower)
    try:
        # appended while the ISR is still full, then the ISR shrinks under the waiting request
        producer.send(topic, b"during-shrink")
        shrunk = cluster.wait_isr(topic, 0, {leader, other}, timeout=10)
        assert producer.results(2)[1].code() == KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        # the leader wrote it, keeping leader, leader epoch and the deciding controller's epoch
        assert shrunk["leader"] == leader
        assert (shrunk["leader_epoch"], shrunk["controller_epoch"]) == (
            before["leader_epoch"],
            before["controller_epoch"],
        )
        # now refused before the append
        producer.send(topic, b"refused")
        assert producer.results(3)[2].code() == KafkaError.NOT_ENOUGH_REPLICAS
        # the leader's notification reaches the controller, which updates every broker's metadata
        wait_for(
            lambda: metadata_isr(cluster, other, topic) == (leader, {leader, other}),
            15,
            "the shrunk ISR in another broker's metadata",
        )
        node = cluster.zk.exists("/isr_change_notification")
        assert node.cversion >= notifications + 2 and node.numChildren == 0  # created, then processed
        assert follower in cluster.registered()  # it was the leader, not a session expiry, that acted
    finally:
        cluster.resume(follower)

    expanded = cluster.wait_isr(topic, 0, {leader, other, follower}, timeout=15)
    assert expanded["leader"] == leader and expanded["leader_epoch"] == before["leader_epoch"]
    wait_for(
        lambda: metadata_isr(cluster, other, topic) == (leader, {leader, other, follower}),
        20,
        "the expanded ISR in another broker's metadata",
    )
    assert cluster.zk.exists("/isr_change_notification").cversion >= notifications + 4
    producer.send(topic, b"in-sync-again")
    assert producer.results(4)[3] is None


def test_idle_followers_stay_in_the_isr_though_their_rounds_skip_them(cluster: Cluster) -> None:
    """Followers' fetch sessions read only partitions with something new: an idle partition is
    left out of every round once its follower has caught up, and the leader counts that follower
    caught up as of the session's last round. Idle for several replica.lag.time.max.ms, every ISR
    stays whole, and the first append after it is replicated to every follower (min.insync 3)."""
    ids = sorted(cluster.broker_ids)
    topic = topic_name("idle-isr")
    assignment = {p: [ids[(p + i) % 3] for i in range(3)] for p in range(12)}
    create_topic(cluster, topic, assignment, {"min.insync.replicas": "3"})
    for p in assignment:
        cluster.wait_isr(topic, p, set(ids), timeout=15)
    before = {p: cluster.state_with_stat(topic, p)[1].version for p in assignment}
    time.sleep(3 * 1.5 + 2.5)  # replica.lag.time.max.ms is 1.5 s; plus one shrink check
    for p in assignment:
        state, stat = cluster.state_with_stat(topic, p)
        assert set(state["isr"]) == set(ids) and stat.version == before[p], p
    leader = assignment[0][0]
    producer = OneShotProducer(cluster.local.brokers[leader].bootstrap)
    producer.send(topic, b"after-idling")
    assert producer.results(1) == [None]

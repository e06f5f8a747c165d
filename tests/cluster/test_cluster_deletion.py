"""Topic deletion with real processes: every replica's log is deleted on every broker and the topic's
znodes disappear; deletion waits for a broker that is down (deleting the live replicas meanwhile, or
none of them when the marker was there before the controller's failover, as in Kafka);
delete.topic.enable=false is honoured."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_helpers import BackgroundProducer, Cluster, create_topic, running, topic_name, wait_for

from zkafka.local.zookeeper import ZooKeeperServer


@pytest.fixture(scope="module")
def module_cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    with running(zookeeper_server, tmp_path_factory.mktemp("deletion"), brokers=3) as c:
        yield c


@pytest.fixture
def cluster(module_cluster: Cluster) -> Cluster:
    module_cluster.ensure_all_running()
    return module_cluster


def _delete(cluster: Cluster, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})  # must outlive the request
    admin.delete_topics([topic])[topic].result(30)


def _no_trace_on(cluster: Cluster, broker: int, topic: str) -> bool:
    """No partition directory of the topic, not even a `-delete` one waiting for removal."""
    logs = cluster.log_dir(broker, topic).parent
    return not any(p.name.startswith(f"{topic}-") for p in logs.iterdir())


def _topic_znodes_gone(cluster: Cluster, topic: str) -> bool:
    return not any(
        cluster.exists(path)
        for path in (f"/brokers/topics/{topic}", f"/config/topics/{topic}", f"/admin/delete_topics/{topic}")
    )


def _fill(cluster: Cluster, topic: str) -> None:
    with BackgroundProducer(cluster.bootstrap, topic, rate=5000) as producer:
        producer.wait_acked(1000)
    assert not producer.errors


def test_deletion_removes_every_replica_and_the_topic_znodes(cluster: Cluster) -> None:
    topic = topic_name("doomed")
    create_topic(cluster, topic, {0: [1, 2, 3], 1: [2, 3, 1]}, {"retention.ms": "3600000"})
    _fill(cluster, topic)
    assert cluster.exists(f"/config/topics/{topic}")
    assert all(cluster.log_dir(b, topic, p).is_dir() for b in (1, 2, 3) for p in (0, 1))
    _delete(cluster, topic)
    wait_for(lambda: _topic_znodes_gone(cluster, topic), 30, "the topic's znodes to be deleted")
    for b in (1, 2, 3):
        wait_for(lambda b=b: _no_trace_on(cluster, b, topic), 20, f"broker {b} to delete the logs")
    assert topic not in cluster.zk.get_children("/brokers/topics")


def test_deletion_pauses_while_a_replica_is_down_and_finishes_when_it_returns(cluster: Cluster) -> None:
    # The broker killed is not the controller. When it is, a marker written while the next
    # controller is failing over (after /controller is taken, before /admin/delete_topics is read)
    # queues the topic as ineligible from the start, as Kafka's fetchTopicDeletionsInProgress does
    # for a topic with an offline replica: then not even the live replicas go until the dead broker
    # returns. What this test proves is the other path: a marker seen by a settled controller.
    controller = wait_for(cluster.controller, 30, "a controller")
    victim = next(b for b in cluster.broker_ids if b != controller)
    keeper = next(b for b in cluster.broker_ids if b != victim)
    topic = topic_name("paused")
    create_topic(cluster, topic, {0: [keeper, victim], 1: [victim, keeper]})
    _fill(cluster, topic)
    cluster.kill(victim)
    wait_for(lambda: victim not in cluster.registered(), 30, f"broker {victim}'s session to expire")
    assert cluster.controller() == controller
    _delete(cluster, topic)
    # the keeper deletes its replicas, but the topic stays queued while the victim's replicas exist
    wait_for(lambda: _no_trace_on(cluster, keeper, topic), 20, f"broker {keeper} to delete its replicas")
    time.sleep(2)  # and it stays that way
    assert cluster.exists(f"/brokers/topics/{topic}") and cluster.exists(f"/admin/delete_topics/{topic}")
    assert cluster.log_dir(victim, topic, 0).is_dir()  # untouched on the dead broker
    cluster.start(victim)
    wait_for(lambda: _topic_znodes_gone(cluster, topic), 30, "the deletion to complete")
    wait_for(lambda: _no_trace_on(cluster, victim, topic), 20, f"broker {victim} to delete its replicas")


def test_deletion_queued_at_failover_with_a_replica_down_waits_for_it(cluster: Cluster) -> None:
    """The other path: the marker is already there when the next controller fails over, and a
    replica is on a dead broker (the old controller). Kafka's failover queues such a topic as
    ineligible at once, so nothing is deleted, not even the live replicas, until the broker returns."""
    controller = wait_for(cluster.controller, 30, "a controller")
    keeper = next(b for b in cluster.broker_ids if b != controller)
    topic = topic_name("failover")
    create_topic(cluster, topic, {0: [keeper, controller], 1: [controller, keeper]})
    _fill(cluster, topic)
    cluster.kill(controller)
    # written as the legacy tool does, while the dead controller's session still holds /controller
    cluster.zk.create(f"/admin/delete_topics/{topic}")
    new_controller = cluster.wait_new_controller(controller)
    assert new_controller != controller
    # what the failover decided is in the partition states it wrote: the dead replica left the ISR
    wait_for(lambda: controller not in cluster.state(topic, 1)["isr"], 30, "the dead replica out of the ISR")
    time.sleep(2)  # nothing is deleted meanwhile
    assert cluster.log_dir(keeper, topic, 0).is_dir() and cluster.log_dir(keeper, topic, 1).is_dir()
    assert cluster.exists(f"/brokers/topics/{topic}") and cluster.exists(f"/admin/delete_topics/{topic}")
    assert cluster.state(topic, 1)["leader"] == -1  # no election for a topic queued for deletion
    cluster.start(controller)
    wait_for(lambda: _topic_znodes_gone(cluster, topic), 30, "the deletion to complete")
    for b in (keeper, controller):
        wait_for(lambda b=b: _no_trace_on(cluster, b, topic), 20, f"broker {b} to delete its replicas")


def test_deletion_disabled_keeps_the_topic(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> None:
    from confluent_kafka import KafkaError, KafkaException

    with running(
        zookeeper_server, tmp_path, brokers=1, overrides={"delete.topic.enable": "false"}
    ) as cluster:
        topic = topic_name("kept")
        create_topic(cluster, topic, {0: [1]})
        with pytest.raises(KafkaException) as refused:
            _delete(cluster, topic)
        assert refused.value.args[0].code() == KafkaError.TOPIC_DELETION_DISABLED
        assert not cluster.exists(f"/admin/delete_topics/{topic}")
        # a marker written straight into ZooKeeper (as the legacy tool does) is removed by the controller
        cluster.zk.create(f"/admin/delete_topics/{topic}")
        wait_for(lambda: not cluster.exists(f"/admin/delete_topics/{topic}"), 20, "the marker to be removed")
        assert cluster.exists(f"/brokers/topics/{topic}")
        _fill(cluster, topic)  # and the replica is still served (its directory made by this write)
        assert cluster.log_dir(1, topic).is_dir()

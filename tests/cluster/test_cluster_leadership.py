"""Leadership moves with real processes: preferred replica election through
/admin/preferred_replica_election (`zkafka leader-election`), the automatic leader rebalance, and the
controlled shutdown a SIGTERM triggers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_helpers import (
    BackgroundProducer,
    Cluster,
    check_exactly_once,
    create_topic,
    read_partitions,
    running,
    topic_name,
    wait_for,
    zkafka_cli,
)

from zkafka.client.connection import BrokerConnection
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol.messages import MetadataRequest

SPREAD = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
"""Each broker is the preferred leader of one partition."""


def _leaders(cluster: Cluster, topic: str) -> dict[int, int]:
    return {p: cluster.leader(topic, p) for p in SPREAD}


def _preferred(topic_leaders: dict[int, int]) -> bool:
    return all(topic_leaders[p] == SPREAD[p][0] for p in SPREAD)


def _wait_full_isr(cluster: Cluster, topic: str) -> None:
    for p, replicas in SPREAD.items():
        cluster.wait_isr(topic, p, set(replicas))


def _metadata_partition(cluster: Cluster, via: int, topic: str, version: int) -> tuple[int, ...]:
    """(error, leader, replicas..., -1, isr..., -1, offline...) of partition 0 as `via` answers
    Metadata at `version`."""

    async def ask() -> tuple[int, ...]:
        conn = await BrokerConnection.open("127.0.0.1", cluster.local.brokers[via].port)
        try:
            topics = [MetadataRequest.MetadataRequestTopic(name=topic)]
            response = await conn.send(MetadataRequest(topics=topics), version=version)
        finally:
            conn.close()
        [p] = [p for p in response.topics[0].partitions if p.partition_index == 0]
        offline = tuple(p.offline_replicas) if version >= 5 else ()
        return (p.error_code, p.leader_id, *p.replica_nodes, -1, *p.isr_nodes, -1, *offline)

    return asyncio.run(asyncio.wait_for(ask(), 30))


def test_leader_election_cli_restores_preferred_leaders(
    zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> None:
    with running(zookeeper_server, tmp_path / "cluster", brokers=3) as cluster:  # no auto rebalance
        topic = topic_name("preferred")
        create_topic(cluster, topic, SPREAD)
        assert _preferred(_leaders(cluster, topic))
        epoch_before = cluster.state(topic, 0)["leader_epoch"]
        cluster.kill(1)
        wait_for(lambda: cluster.leader(topic, 0) == 2, 30, "partition 0 to fail over to broker 2")
        # Kafka's MetadataCache: v1+ lists every assigned replica and names the dead one offline (v5+);
        # v0 leaves it out and says REPLICA_NOT_AVAILABLE (9), since its clients could not tell.
        told = (0, 2, 1, 2, 3, -1, 2, 3, -1, 1)
        for via in (2, 3):
            wait_for(lambda v=via: _metadata_partition(cluster, v, topic, 9) == told, 30, f"{via}'s cache")
            assert _metadata_partition(cluster, via, topic, 1) == (0, 2, 1, 2, 3, -1, 2, 3, -1)
            assert _metadata_partition(cluster, via, topic, 0) == (9, 2, 2, 3, -1, 2, 3, -1)
        cluster.start(1)
        _wait_full_isr(cluster, topic)
        assert _leaders(cluster, topic) == {0: 2, 1: 2, 2: 3}  # broker 1 is back but leads nothing

        zk = cluster.local.zookeeper_connect
        out = zkafka_cli(
            "leader-election", "--zookeeper", zk, "--election-type", "PREFERRED", "--all-topic-partitions"
        )
        assert out.returncode == 0, out.stdout + out.stderr
        assert f"Successfully completed leader election (PREFERRED) for partitions {topic}-0" in out.stdout
        assert f"Valid replica already elected for partitions {topic}-1, {topic}-2" in out.stdout
        assert _preferred(_leaders(cluster, topic))
        assert cluster.state(topic, 0)["leader_epoch"] > epoch_before + 1  # failover, then this election
        assert not cluster.exists("/admin/preferred_replica_election")  # the controller consumed it

        # one partition by name, from a file, and a partition that does not exist
        single = zkafka_cli(
            "leader-election", "--zookeeper", zk, "--election-type", "preferred", "--topic", topic,
            "--partition", "1",
        )  # fmt: skip
        assert (
            single.returncode == 0
            and f"Valid replica already elected for partitions {topic}-1" in single.stdout
        )
        parts = tmp_path / "partitions.json"
        parts.write_text(
            json.dumps({"partitions": [{"topic": topic, "partition": 2}, {"topic": topic, "partition": 9}]})
        )
        mixed = zkafka_cli(
            "leader-election",
            "--zookeeper",
            zk,
            "--election-type",
            "preferred",
            "--path-to-json-file",
            str(parts),
        )
        assert mixed.returncode == 1
        assert f"Valid replica already elected for partitions {topic}-2" in mixed.stdout
        assert f"for partition: {topic}-9: UNKNOWN_TOPIC_OR_PARTITION" in mixed.stdout
        # unclean elections need the brokers' ElectLeaders API (test_cluster_admin_apis.py)
        refused = zkafka_cli(
            "leader-election", "--zookeeper", zk, "--election-type", "unclean", "--all-topic-partitions",
        )  # fmt: skip
        assert refused.returncode == 1 and "--bootstrap-server" in refused.stderr


@pytest.fixture(scope="module")
def module_cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    overrides = {"auto.leader.rebalance.enable": "true", "leader.imbalance.check.interval.seconds": "1"}
    with running(zookeeper_server, tmp_path_factory.mktemp("rebalance"), 3, overrides) as c:
        yield c


@pytest.fixture
def rebalancing(module_cluster: Cluster) -> Cluster:
    module_cluster.ensure_all_running()
    return module_cluster


def test_automatic_rebalance_restores_preferred_leaders_after_a_bounce(rebalancing: Cluster) -> None:
    cluster = rebalancing
    topic = topic_name("auto")
    create_topic(cluster, topic, SPREAD)
    controller = cluster.controller()
    bounced = next(b for b in (1, 2, 3) if b != controller)
    partition = next(p for p, r in SPREAD.items() if r[0] == bounced)
    cluster.kill(bounced)
    wait_for(
        lambda: cluster.leader(topic, partition) not in (bounced, -1),
        30,
        f"partition {partition} to fail over",
    )
    cluster.start(bounced)
    # the controller learns from the leaders' ISR notification that the preferred replica is back in
    # sync, and its next imbalance check (every second here) moves the leadership back
    wait_for(lambda: _preferred(_leaders(cluster, topic)), 40, "the preferred leaders to be restored")
    assert set(cluster.state(topic, partition)["isr"]) == set(SPREAD[partition])


def test_controlled_shutdown_moves_leadership_before_the_broker_exits(rebalancing: Cluster) -> None:
    cluster = rebalancing
    topic = topic_name("shutdown")
    create_topic(cluster, topic, SPREAD, {"min.insync.replicas": "2"})
    wait_for(lambda: _preferred(_leaders(cluster, topic)), 20, "preferred leaders")
    controller = cluster.controller()
    leaving = next(b for b in (1, 2, 3) if b != controller)
    with BackgroundProducer(cluster.bootstrap, topic, rate=3000) as producer:
        producer.wait_acked(3000)
        before = {p: cluster.state(topic, p) for p in SPREAD}
        cluster.stop(leaving)  # SIGTERM: controlled shutdown, then exit
        after = {p: cluster.state(topic, p) for p in SPREAD}  # read right after the exit
        producer.wait_acked(len(producer.acked) + 3000)
    for p, state in after.items():
        assert state["leader"] != leaving, (p, state)
        if before[p]["leader"] == leaving:  # moved to another in-sync replica, in a new leader epoch
            assert state["leader"] in before[p]["isr"] and state["leader_epoch"] > before[p]["leader_epoch"]
    # once it is gone, the controller takes it out of every ISR
    wait_for(
        lambda: all(leaving not in cluster.state(topic, p)["isr"] for p in SPREAD), 20, "ISRs without it"
    )
    assert not producer.errors, producer.errors[:5]  # no acks=all request failed during the move
    assert "controlled shutdown succeeded" in cluster.server_log(leaving)
    check_exactly_once(producer.acked, read_partitions(cluster.bootstrap, topic, list(SPREAD)))
    cluster.start(leaving)
    wait_for(lambda: _preferred(_leaders(cluster, topic)), 40, "the preferred leaders to come back")


def test_controlled_shutdown_stops_retrying_when_no_in_sync_replica_can_take_over(
    rebalancing: Cluster,
) -> None:
    """The last in-sync replica of a partition asks for a controlled shutdown (the second broker of
    `cluster down`): the controller cannot move that leadership, so the broker stops at once instead
    of retrying `controlled.shutdown.max.retries` times."""
    cluster = rebalancing
    topic = topic_name("nowhere")
    controller = cluster.controller()
    follower, leader = [b for b in (1, 2, 3) if b != controller]
    create_topic(cluster, topic, {0: [leader, follower]})
    cluster.wait_isr(topic, 0, {leader, follower})
    wait_for(lambda: cluster.leader(topic, 0) == leader, 20, "the preferred leader")
    cluster.stop(follower)  # leaves the ISR through its own controlled shutdown
    cluster.wait_isr(topic, 0, {leader})
    seen = len(cluster.server_log(leader))
    cluster.stop(leader)
    log = cluster.server_log(leader)[seen:]
    assert "no other live in-sync replica can take over the 1 partition(s)" in log
    assert "controlled shutdown attempt" not in log and "did not complete" not in log

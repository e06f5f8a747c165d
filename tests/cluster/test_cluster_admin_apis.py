"""ElectLeaders, AlterPartitionReassignments and ListPartitionReassignments against real broker processes:
`zkafka leader-election` / `zkafka reassign-partitions` with --bootstrap-server, confluent-kafka's and
kafka-python's admin clients as independent clients, and NOT_CONTROLLER from the other brokers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_helpers import Cluster, create_topic, metadata_isr, running, topic_name, wait_for, zkafka_cli

from zkafka.client.admin import AdminClient
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import (
    AlterPartitionReassignmentsRequest,
    ElectLeadersRequest,
    ListPartitionReassignmentsRequest,
)

pytestmark = pytest.mark.timeout(150)

SPREAD = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
"""Each broker is the preferred leader of one partition."""


@pytest.fixture(scope="module")
def cluster(zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    # no auto rebalance; sessions long enough to pause a broker for a few CLI runs (nothing here
    # waits for a session to expire: brokers are stopped cleanly)
    overrides = {"zookeeper.session.timeout.ms": "12000"}
    with running(zookeeper_server, tmp_path_factory.mktemp("admin-apis"), 3, overrides) as c:
        yield c


def _leaders(cluster: Cluster, topic: str) -> dict[int, int]:
    return {p: cluster.leader(topic, p) for p in SPREAD}


def _elect(cluster: Cluster, *args: str) -> tuple[int, str, str]:
    out = zkafka_cli("leader-election", "--bootstrap-server", cluster.bootstrap, *args)
    return out.returncode, out.stdout, out.stderr


def test_leader_election_over_bootstrap_restores_preferred_leaders(cluster: Cluster) -> None:
    topic = topic_name("elect")
    create_topic(cluster, topic, SPREAD)
    controller = cluster.controller()
    bounced = next(b for b in (1, 2, 3) if b != controller)  # the controller stays where it is
    moved = next(p for p, r in SPREAD.items() if r[0] == bounced)
    cluster.stop(bounced)  # SIGTERM: the controlled shutdown moves its leaderships away
    assert cluster.leader(topic, moved) not in (bounced, -1)
    cluster.start(bounced)
    for p, replicas in SPREAD.items():
        cluster.wait_isr(topic, p, set(replicas))
    assert cluster.leader(topic, moved) != bounced  # back in sync, but leads nothing (no auto rebalance)

    code, out, err = _elect(cluster, "--election-type", "preferred", "--all-topic-partitions")
    assert code == 0, out + err
    assert f"Successfully completed leader election (PREFERRED) for partitions {topic}-{moved}" in out
    assert _leaders(cluster, topic) == {p: r[0] for p, r in SPREAD.items()}
    # the broker answered only once its metadata showed the new leader: any broker agrees at once
    assert metadata_isr(cluster, bounced, topic, moved)[0] == bounced

    # nothing left to do: as with Kafka, "all partitions" lists only partitions that needed an election
    code, out, err = _elect(cluster, "--election-type", "preferred", "--all-topic-partitions")
    assert code == 0 and "Successfully" not in out, out + err
    code, out, err = _elect(
        cluster, "--election-type", "PREFERRED", "--topic", topic, "--partition", str(moved)
    )
    assert code == 0 and f"Valid replica already elected for partitions {topic}-{moved}" in out, out + err
    # unclean: every leader is alive, so no election is needed; unknown partitions are errors
    code, out, err = _elect(cluster, "--election-type", "unclean", "--topic", topic, "--partition", "9")
    assert code == 1
    assert (
        f"Error completing leader election (UNCLEAN) for partition: {topic}-9: UNKNOWN_TOPIC_OR_PARTITION"
        in out
    )
    assert "1 replica(s) could not be elected" in err


def test_confluent_and_kafka_python_admin_clients(cluster: Cluster) -> None:
    """kafka-python reorders the replicas (a reassignment keeps the current leader), which leaves the
    leader off its new preferred replica; confluent-kafka's elect_leaders moves it there."""
    from confluent_kafka import ElectionType, KafkaError
    from confluent_kafka import TopicPartition as CTopicPartition
    from confluent_kafka.admin import AdminClient as ConfluentAdmin
    from kafka import TopicPartition as KTopicPartition
    from kafka.admin import KafkaAdminClient

    topic = topic_name("clients")
    create_topic(cluster, topic, {0: [1, 2, 3], 1: [2, 3, 1]})
    kadmin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap.split(","), request_timeout_ms=30000)
    try:
        results = kadmin.alter_partition_reassignments(
            {KTopicPartition(topic, 0): [3, 1, 2]}, timeout_ms=30000
        )
        assert results == {KTopicPartition(topic, 0): None}
        wait_for(lambda: cluster.topic(topic)["partitions"]["0"] == [3, 1, 2], 30, "the reordered replicas")
        assert kadmin.list_partition_reassignments([KTopicPartition(topic, 0)]) == {}  # nothing to move
        assert cluster.leader(topic, 0) == 1
        # cancelling a reassignment that is not running
        cancel = kadmin.alter_partition_reassignments({KTopicPartition(topic, 1): None})
        assert cancel[KTopicPartition(topic, 1)].errno == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
        bad = kadmin.alter_partition_reassignments({KTopicPartition(topic, 1): [1, 1]})
        assert bad[KTopicPartition(topic, 1)].errno == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    finally:
        kadmin.close()

    admin = ConfluentAdmin({"bootstrap.servers": cluster.bootstrap})
    wanted = [CTopicPartition(topic, 0), CTopicPartition(topic, 1), CTopicPartition(topic, 7)]
    results = admin.elect_leaders(ElectionType.PREFERRED, wanted).result(60)
    by_partition = {tp.partition: e for tp, e in results.items()}
    assert by_partition[0] is None
    assert isinstance(by_partition[1], KafkaError)
    assert by_partition[1].code() == ErrorCode.ELECTION_NOT_NEEDED
    assert by_partition[7].code() == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert cluster.leader(topic, 0) == 3


def _plan(path: Path, topic: str, replicas: list[int]) -> Path:
    path.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": replicas}]})
    )
    return path


def test_reassignment_over_bootstrap_execute_verify_and_cancel(cluster: Cluster, tmp_path: Path) -> None:
    controller = cluster.controller()
    assert controller is not None
    paused, other = (b for b in cluster.broker_ids if b != controller)
    topic = topic_name("move")
    create_topic(cluster, topic, {0: [paused, other]})
    plan = _plan(tmp_path / "plan.json", topic, [other, controller])
    reassign = ["reassign-partitions", "--bootstrap-server", cluster.bootstrap]
    out = zkafka_cli(
        *reassign, "--execute", "--reassignment-json-file", str(plan), "--wait", "--timeout", "40"
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"Reassignment of partition {topic}-0 is completed." in out.stdout  # --wait ends with --verify
    current = json.loads(out.stdout.split("Current partition replica assignment\n\n")[1].splitlines()[0])
    assert current["partitions"][0]["replicas"] == [paused, other]
    assert f"Successfully started partition reassignments for {topic}-0" in out.stdout

    def verified() -> bool:
        v = zkafka_cli(*reassign, "--verify", "--reassignment-json-file", str(plan))
        return v.returncode == 0 and f"Reassignment of partition {topic}-0 is completed." in v.stdout

    wait_for(verified, 40, "--verify to report the reassignment completed", interval=0.5)
    assert cluster.topic(topic)["partitions"]["0"] == [other, controller]
    assert cluster.leader(topic) == other and set(cluster.state(topic)["isr"]) == {other, controller}

    # keep a reassignment in flight: the added replica's broker is paused (well within its session);
    # the tools talk to the two running brokers only
    back = _plan(tmp_path / "back.json", topic, [other, controller, paused])
    running_brokers = ",".join(cluster.local.brokers[b].bootstrap for b in (other, controller))
    reassign = ["reassign-partitions", "--bootstrap-server", running_brokers]
    cluster.pause(paused)
    try:
        out = zkafka_cli(*reassign, "--execute", "--reassignment-json-file", str(back))
        assert out.returncode == 0, out.stdout + out.stderr
        # zkafka's admin client, not kafka-python's: that one opens its first connection to whichever
        # broker its metadata names, the paused one included, and waits on it
        from zkafka.client.sync import SyncAdminClient
        from zkafka.client.types import TopicPartition as ClientTopicPartition

        with SyncAdminClient(running_brokers) as admin:
            listed = admin.list_partition_reassignments()
        assert listed[ClientTopicPartition(topic, 0)].adding_replicas == (paused,)
        busy = zkafka_cli(*reassign, "--execute", "--reassignment-json-file", str(plan))
        assert busy.returncode == 1 and "--additional" in busy.stderr
        v = zkafka_cli(*reassign, "--verify", "--reassignment-json-file", str(back))
        assert v.returncode == 1 and f"Reassignment of partition {topic}-0 is still in progress." in v.stdout
        out = zkafka_cli(*reassign, "--cancel", "--reassignment-json-file", str(back))
        assert out.returncode == 0, out.stdout + out.stderr
        assert f"Successfully cancelled partition reassignments for: {topic}-0" in out.stdout
    finally:
        cluster.resume(paused)
    wait_for(
        lambda: cluster.topic(topic)["partitions"]["0"] == [other, controller],
        30,
        "the cancelled reassignment to be reverted",
    )
    assert not cluster.topic(topic).get("adding_replicas", {}).get("0")


def test_only_the_controller_answers(cluster: Cluster) -> None:
    topic = topic_name("notctl")
    create_topic(cluster, topic, {0: [1, 2]})
    controller = cluster.controller()
    other = next(b for b in cluster.broker_ids if b != controller)

    async def ask() -> tuple[object, ...]:
        async with AdminClient(cluster.local.brokers[other].bootstrap) as admin:
            await admin.cluster.refresh()
            elect = ElectLeadersRequest(
                election_type=0,
                topic_partitions=[ElectLeadersRequest.TopicPartitions(topic=topic, partitions=[0])],
                timeout_ms=5000,
            )
            everything = ElectLeadersRequest(election_type=0, topic_partitions=None, timeout_ms=5000)
            alter = AlterPartitionReassignmentsRequest(timeout_ms=5000, topics=[])
            listing = ListPartitionReassignmentsRequest(timeout_ms=5000, topics=None)
            answers = []
            for request, version in (
                (elect, 0),
                (elect, 1),
                (elect, 2),
                (everything, 2),
                (alter, 0),
                (listing, 0),
            ):
                answers.append(await admin.cluster.send(other, request, version=version))
            # through the controller (the admin client finds it in Metadata)
            answers.append(await admin.elect_leaders([(topic, 0)]))
            return tuple(answers)

    *per_version, everything, alter, listing, via_controller = asyncio.run(ask())
    for resp in per_version:
        [result] = resp.replica_election_results  # type: ignore[attr-defined]
        assert [(p.partition_id, p.error_code) for p in result.partition_result] == [
            (0, ErrorCode.NOT_CONTROLLER)
        ]
    codes = {p.error_code for r in everything.replica_election_results for p in r.partition_result}  # type: ignore[attr-defined]
    assert codes == {ErrorCode.NOT_CONTROLLER}
    assert alter.error_code == ErrorCode.NOT_CONTROLLER  # type: ignore[attr-defined]
    assert listing.error_code == ErrorCode.NOT_CONTROLLER  # type: ignore[attr-defined]
    [error] = via_controller.values()  # type: ignore[attr-defined]
    assert error is not None and error.code == ErrorCode.ELECTION_NOT_NEEDED

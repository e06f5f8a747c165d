"""Partition reassignment through /admin/reassign_partitions, driven by `zkafka reassign-partitions`
against real brokers: under producer load, and with the controller SIGKILLed half-way."""

from __future__ import annotations

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

from zkafka.local.zookeeper import ZooKeeperServer


@pytest.fixture(scope="module")
def module_cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    with running(zookeeper_server, tmp_path_factory.mktemp("reassign"), brokers=3) as c:
        yield c


@pytest.fixture
def cluster(module_cluster: Cluster) -> Cluster:
    module_cluster.ensure_all_running()
    return module_cluster


def _plan(path: Path, topic: str, replicas: list[int]) -> Path:
    path.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": replicas}]})
    )
    return path


def _log_dirs_gone(cluster: Cluster, broker: int, topic: str) -> bool:
    """Neither the partition's directory nor its renamed `-delete` directory is left on `broker`."""
    logs = cluster.log_dir(broker, topic).parent
    return not any(p.name.startswith(f"{topic}-0") for p in logs.iterdir())


def test_reassignment_under_load_moves_replicas_and_leader(cluster: Cluster, tmp_path: Path) -> None:
    topic = topic_name("move")
    create_topic(cluster, topic, {0: [1, 2]})
    assert cluster.leader(topic) == 1
    plan = _plan(tmp_path / "plan.json", topic, [2, 3])
    zk = cluster.local.zookeeper_connect
    with BackgroundProducer(cluster.bootstrap, topic, rate=3000, partition=0) as producer:
        producer.wait_acked(3000)
        done = zkafka_cli(
            "reassign-partitions", "--zookeeper", zk, "--execute", "--reassignment-json-file", str(plan),
            "--wait", "--timeout", "60",
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"Successfully started partition reassignments for {topic}-0" in done.stdout
        assert f"Reassignment of partition {topic}-0 is completed." in done.stdout
        assert '"replicas":[1,2]' in done.stdout  # the rollback plan: the current assignment
        producer.wait_acked(len(producer.acked) + 3000)  # the new leader takes writes
    assert not producer.errors, producer.errors[:5]

    znode = cluster.topic(topic)
    assert znode["partitions"] == {"0": [2, 3]}
    assert znode["adding_replicas"] == {} and znode["removing_replicas"] == {}
    assert not cluster.exists("/admin/reassign_partitions")
    state = cluster.state(topic)
    assert state["leader"] == 2 and set(state["isr"]) == {2, 3}
    wait_for(lambda: _log_dirs_gone(cluster, 1, topic), 20, "broker 1's replica to be deleted")
    check_exactly_once(producer.acked, read_partitions(cluster.bootstrap, topic, [0]))
    wait_for(lambda: cluster.log_bytes(2, topic) == cluster.log_bytes(3, topic), 20, "identical new replicas")
    verify = zkafka_cli(
        "reassign-partitions", "--zookeeper", zk, "--verify", "--reassignment-json-file", str(plan)
    )
    assert verify.returncode == 0 and f"Reassignment of partition {topic}-0 is completed." in verify.stdout


def test_reassignment_survives_the_controller_being_killed_half_way(cluster: Cluster, tmp_path: Path) -> None:
    controller = cluster.controller()
    assert controller is not None
    keeper, joiner = (b for b in cluster.broker_ids if b != controller)
    topic = topic_name("resume")
    create_topic(cluster, topic, {0: [keeper]})
    zk = cluster.local.zookeeper_connect
    plan = _plan(tmp_path / "plan.json", topic, [keeper, joiner])
    with BackgroundProducer(cluster.bootstrap, topic, rate=2000, partition=0) as producer:
        producer.wait_acked(2000)
        cluster.pause(joiner)  # frozen, the new replica cannot catch up: the reassignment stays pending
        try:
            started = zkafka_cli(
                "reassign-partitions", "--zookeeper", zk, "--execute", "--reassignment-json-file", str(plan)
            )
            assert started.returncode == 0, started.stdout + started.stderr
            wait_for(
                lambda: cluster.topic(topic)["adding_replicas"] == {"0": [joiner]}, 20, "the reassignment"
            )
            assert cluster.topic(topic)["partitions"] == {"0": [keeper, joiner]}
            verify = zkafka_cli(
                "reassign-partitions", "--zookeeper", zk, "--verify", "--reassignment-json-file", str(plan)
            )
            assert verify.returncode == 1 and "is still in progress" in verify.stdout
            again = zkafka_cli(
                "reassign-partitions", "--zookeeper", zk, "--execute", "--reassignment-json-file", str(plan)
            )
            assert again.returncode == 1 and "There is an existing assignment running" in again.stderr
            cluster.kill(controller)
        finally:
            cluster.resume(joiner)  # it catches up now, but only a new controller can finish the job
        successor = cluster.wait_new_controller(controller)
        wait_for(lambda: not cluster.exists("/admin/reassign_partitions"), 30, "the reassignment to finish")
        producer.wait_acked(len(producer.acked) + 2000)
    assert f"reassignment of {topic}-0 completed" in cluster.server_log(successor)
    assert not producer.errors, producer.errors[:5]
    znode = cluster.topic(topic)
    assert znode["partitions"] == {"0": [keeper, joiner]} and znode["adding_replicas"] == {}
    assert set(cluster.state(topic)["isr"]) == {keeper, joiner}
    verify = zkafka_cli(
        "reassign-partitions", "--zookeeper", zk, "--verify", "--reassignment-json-file", str(plan)
    )
    assert verify.returncode == 0, verify.stdout
    check_exactly_once(producer.acked, read_partitions(cluster.bootstrap, topic, [0]))


def test_generate_proposes_an_assignment_over_the_given_brokers(cluster: Cluster, tmp_path: Path) -> None:
    topic = topic_name("gen")
    create_topic(cluster, topic, {0: [1, 2], 1: [2, 3], 2: [3, 1]})
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    for where in (
        ["--zookeeper", cluster.local.zookeeper_connect],
        ["--bootstrap-server", cluster.bootstrap],
    ):
        out = zkafka_cli(
            "reassign-partitions", *where, "--generate", "--topics-to-move-json-file", str(topics),
            "--broker-list", "1,3",
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        current = json.loads(lines[lines.index("Current partition replica assignment") + 1])
        proposed = json.loads(lines[lines.index("Proposed partition reassignment configuration") + 1])
        assert {(p["partition"], tuple(p["replicas"])) for p in current["partitions"]} == {
            (0, (1, 2)),
            (1, (2, 3)),
            (2, (3, 1)),
        }
        assert sorted(p["partition"] for p in proposed["partitions"]) == [0, 1, 2]
        for p in proposed["partitions"]:
            assert p["topic"] == topic and sorted(p["replicas"]) == [1, 3] and p["log_dirs"] == ["any", "any"]
    # --verify of a plan nobody executed: nothing is moving and the replicas differ, so it failed
    unexecuted = zkafka_cli(
        "reassign-partitions", "--bootstrap-server", cluster.bootstrap, "--verify",
        "--reassignment-json-file", str(_plan(tmp_path / "p.json", topic, [1])),
    )  # fmt: skip
    assert unexecuted.returncode == 1
    assert f"Reassignment of partition {topic}-0 failed: replicas are [1, 2]" in unexecuted.stdout
    # --cancel exists only for the brokers' API: the legacy znode cannot cancel
    refused = zkafka_cli(
        "reassign-partitions", "--zookeeper", cluster.local.zookeeper_connect, "--cancel",
        "--reassignment-json-file", str(tmp_path / "p.json"),
    )  # fmt: skip
    assert refused.returncode == 1 and "--cancel needs --bootstrap-server" in refused.stderr

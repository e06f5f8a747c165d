"""Replication throttles (KIP-73) on real broker processes: `zkafka reassign-partitions --throttle`
sets the rates and throttled replicas in ZooKeeper (read back with kazoo, an independent client), the
new replica catches up no faster than the rate allows (loosely: the average over the whole move stays
under twice the rate), and `--verify` removes every throttle once the move is done.

The brokers measure over 3 windows of 1 s (`replication.quota.window.num=3`, Kafka's default is 11):
a throttled replica may first take what the rate allows over the windows, so fewer windows make a few
megabytes enough to see the throttle at work.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kazoo.client import KazooClient

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster
from zkafka.testing.polling import wait_for

pytestmark = pytest.mark.timeout(240)

RATE = 500_000
DATA = 4_000_000


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    overrides = {"replication.quota.window.num": "3", "replication.quota.window.size.seconds": "1"}
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("throttles"), 2, overrides) as c:
        yield c


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def config(zk: KazooClient, path: str) -> dict[str, str]:
    found = zk.exists(path)
    return json.loads(zk.get(path)[0])["config"] if found else {}


def topic_on_broker_1(cluster: LocalCluster, prefix: str) -> str:
    """A new topic of one partition on broker 1 alone, holding DATA bytes."""
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    created = cli("topics", "--bootstrap-server", cluster.bootstrap_servers, "--create", "--topic", topic,
                  "--replica-assignment", "1")  # fmt: skip
    assert created.returncode == 0, created.stderr
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 20})
    for _ in range(DATA // 10_000):
        producer.produce(topic, b"r" * 10_000)
        producer.poll(0)
    assert producer.flush(60) == 0
    return topic


def test_reassignment_under_throttle_completes_and_verify_removes_the_throttle(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    topic = topic_on_broker_1(cluster, "throttled")

    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 2]}]})
    )
    zk_args = (
        "reassign-partitions",
        "--zookeeper",
        cluster.zookeeper_connect,
        "--reassignment-json-file",
        str(plan),
    )
    started = time.monotonic()
    executed = cli(*zk_args, "--execute", "--throttle", str(RATE))
    assert executed.returncode == 0, executed.stderr
    assert f"The inter-broker throttle limit was set to {RATE} B/s" in executed.stdout

    zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
    zk.start(timeout=15)
    try:
        rates = {
            "leader.replication.throttled.rate": str(RATE),
            "follower.replication.throttled.rate": str(RATE),
        }
        assert config(zk, "/config/brokers/1") == rates and config(zk, "/config/brokers/2") == rates
        topic_config = config(zk, f"/config/topics/{topic}")
        assert topic_config["leader.replication.throttled.replicas"] == "0:1"
        assert topic_config["follower.replication.throttled.replicas"] == "0:2"

        def verified() -> bool:
            out = cli(*zk_args, "--verify")
            if out.returncode != 0:
                assert "is still in progress" in out.stdout, out.stdout + out.stderr
                assert config(zk, "/config/brokers/1") == rates  # kept until the move is done
            return out.returncode == 0 and "Clearing broker-level throttles on brokers 1,2" in out.stdout

        wait_for(verified, 120, "the throttled reassignment to complete", interval=0.5)
        elapsed = time.monotonic() - started
        print(f"{DATA} bytes moved under a {RATE} B/s throttle in {elapsed:.1f} s ({DATA / elapsed:.0f} B/s)")
        assert DATA / elapsed < 2 * RATE
        assert config(zk, "/config/brokers/1") == {} and config(zk, "/config/brokers/2") == {}
        topic_config = config(zk, f"/config/topics/{topic}")
        assert "leader.replication.throttled.replicas" not in topic_config
        assert "follower.replication.throttled.replicas" not in topic_config
    finally:
        zk.stop()
        zk.close()


def test_throttle_through_the_brokers(cluster: LocalCluster, tmp_path: Path) -> None:
    """`--bootstrap-server`: the same throttles written through IncrementalAlterConfigs, and cleared
    by `--verify` once done."""
    topic = f"throttled-b-{uuid.uuid4().hex[:8]}"
    bootstrap = cluster.bootstrap_servers
    created = cli(
        "topics", "--bootstrap-server", bootstrap, "--create", "--topic", topic, "--replica-assignment", "2"
    )
    assert created.returncode == 0, created.stderr
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1]}]})
    )
    args = ("reassign-partitions", "--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan))
    executed = cli(*args, "--execute", "--throttle", str(RATE))
    assert executed.returncode == 0, executed.stderr
    zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
    zk.start(timeout=15)
    try:
        topic_config = config(zk, f"/config/topics/{topic}")
        assert topic_config["leader.replication.throttled.replicas"] == "0:2"
        assert topic_config["follower.replication.throttled.replicas"] == "0:1"
        assert config(zk, "/config/brokers/1")["follower.replication.throttled.rate"] == str(RATE)

        def verified() -> bool:
            out = cli(*args, "--verify")
            return out.returncode == 0 and "Clearing topic-level throttles on topic " + topic in out.stdout

        wait_for(verified, 120, "the reassignment to complete", interval=0.5)
        assert config(zk, "/config/brokers/1") == {} and config(zk, "/config/brokers/2") == {}
        assert not set(config(zk, f"/config/topics/{topic}")) & {
            "leader.replication.throttled.replicas",
            "follower.replication.throttled.replicas",
        }
    finally:
        zk.stop()
        zk.close()


def test_a_reassignment_reads_its_throttles_even_before_their_change_notifications(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """`--execute --throttle` writes the throttles, then the reassignment; a busy broker may hear of
    the reassignment (LeaderAndIsr) before the throttles' change notifications. Here the throttles
    are written with no notification at all: the brokers must still read them before the new
    replica's first fetch."""
    topic = topic_on_broker_1(cluster, "unannounced")

    plan = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 2]}]}
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan))
    rates = {"leader.replication.throttled.rate": str(RATE), "follower.replication.throttled.rate": str(RATE)}
    zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
    zk.start(timeout=15)
    try:
        for broker in (1, 2):
            path = f"/config/brokers/{broker}"
            data = json.dumps({"version": 1, "config": {**config(zk, path), **rates}}).encode()
            zk.ensure_path(path)
            zk.set(path, data)
        topic_config = {
            **config(zk, f"/config/topics/{topic}"),
            "leader.replication.throttled.replicas": "0:1",
            "follower.replication.throttled.replicas": "0:2",
        }
        zk.set(f"/config/topics/{topic}", json.dumps({"version": 1, "config": topic_config}).encode())
        started = time.monotonic()
        zk.create("/admin/reassign_partitions", json.dumps(plan).encode())
        wait_for(lambda: not zk.exists("/admin/reassign_partitions"), 120, "the reassignment to complete")
        elapsed = time.monotonic() - started
        print(f"{DATA} bytes moved under unannounced {RATE} B/s throttles in {elapsed:.1f} s")
        assert DATA / elapsed < 2 * RATE
    finally:
        # --verify clears the throttles the usual way, with change notifications
        verified = cli("reassign-partitions", "--zookeeper", cluster.zookeeper_connect,
                       "--reassignment-json-file", str(plan_file), "--verify")  # fmt: skip
        zk.stop()
        zk.close()
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "Clearing broker-level throttles on brokers 1,2" in verified.stdout

"""Burrow (LinkedIn's lag monitor; Debian's build of 1.2.1 on sarama 1.22.1) watching a real
zkafka cluster: both kinds of consumer group must show up with the lag zkafka itself reports.

Burrow reads three things, each its own way, none of them negotiated (it never sends ApiVersions):
* the cluster module asks every partition's leader for its latest offset (ListOffsets v0, exactly
  one offset expected) after Metadata v0/v1/v5, depending on `kafka-version`;
* the `kafka` consumer module reads `__consumer_offsets` from the beginning with sarama's
  partition consumer (Fetch v0-v4) and decodes Kafka's offset-commit and group-metadata records;
* the `kafka_zk` consumer module watches `/consumers/<group>/offsets/<topic>/<partition>` in
  ZooKeeper, under the cluster's chroot, as the seeds' ZooKeeper consumers write them.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from zkafka.client.types import TopicPartition
from zkafka.client.zk_consumer import ZookeeperConsumer
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer, free_port
from zkafka.testing.cluster import make_topic, running_cluster
from zkafka.testing.polling import wait_for
from zkafka.zk.connect import parse_connect_string

BURROW = shutil.which("Burrow") or "/usr/bin/Burrow"
PARTITIONS = 4
PER_PARTITION = 10
OVERRIDES = {"offsets.topic.num.partitions": "4", "group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(
        zookeeper_server, tmp_path_factory.mktemp("burrow"), brokers=1, overrides=OVERRIDES
    ) as c:
        yield c


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@contextmanager
def member_that_commits(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> Iterator[None]:
    """A confluent-kafka group member reads everything, commits `offsets` and stays in the group
    (librdkafka heartbeats on its own thread) until the block ends."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CkTopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "client.id": "burrow-watched",
        }
    )
    try:
        consumer.subscribe([topic])
        seen = 0
        deadline = time.monotonic() + 30
        while seen < PARTITIONS * PER_PARTITION:
            assert time.monotonic() < deadline, f"consumed only {seen} records"
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                seen += 1
        consumer.commit(
            offsets=[CkTopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False
        )
        yield
    finally:
        consumer.close()


async def commit_through_zookeeper(zookeeper: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """A seeds-style ZooKeeper consumer owns every partition, then commits `offsets` and closes."""
    consumer = ZookeeperConsumer(
        group,
        topics={topic: 1},
        zookeeper=zookeeper,
        auto_commit_enable=False,
        auto_offset_reset="smallest",
        rebalance_backoff_ms=100,
    )
    await consumer.start()
    try:
        deadline = time.monotonic() + 30
        while len(consumer.owned()) < PARTITIONS:
            assert time.monotonic() < deadline, "the ZooKeeper consumer never owned every partition"
            await asyncio.sleep(0.05)
        await consumer.commit({TopicPartition(topic, p): o for p, o in offsets.items()})
    finally:
        await consumer.close()


class Burrow:
    """One Burrow process configured for one zkafka cluster, and its HTTP API."""

    def __init__(self, cluster: LocalCluster, directory: Path, kafka_version: str) -> None:
        connect = parse_connect_string(cluster.zookeeper_connect)
        self.port = free_port()
        self.directory = directory
        broker = json.dumps(cluster.bootstrap_servers.split(","))
        zookeepers = json.dumps(connect.hosts.split(","))
        (directory / "burrow.toml").write_text(
            f"""
[general]
pidfile="{directory}/burrow.pid"

[logging]
filename="{directory}/burrow.log"
level="info"

[zookeeper]
servers={zookeepers}
timeout=6
root-path="/burrow-{uuid.uuid4().hex[:8]}"

[client-profile.zkafka]
client-id="burrow-test"
kafka-version="{kafka_version}"

[cluster.local]
class-name="kafka"
servers={broker}
client-profile="zkafka"
topic-refresh=1
offset-refresh=1

[consumer.coordinator]
class-name="kafka"
cluster="local"
servers={broker}
client-profile="zkafka"
start-latest=false

[consumer.zookeeper]
class-name="kafka_zk"
cluster="local"
servers={zookeepers}
zookeeper-path="{connect.chroot or ""}"
zookeeper-timeout=6

[httpserver.default]
address="127.0.0.1:{self.port}"

[storage.default]
class-name="inmemory"
intervals=10
min-distance=0
"""
        )
        self.process = subprocess.Popen(
            [BURROW, "--config-dir", str(directory)],
            cwd=directory,
            stdout=(directory / "stdout.log").open("wb"),
            stderr=subprocess.STDOUT,
        )

    def get(self, path: str) -> dict[str, Any] | None:
        assert self.process.poll() is None, f"Burrow exited: {self.logs()}"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/v3/kafka/local{path}", timeout=5) as r:
                body: dict[str, Any] = json.loads(r.read())
        except OSError:
            return None
        return None if body.get("error") else body

    def logs(self) -> str:
        return "\n".join(
            p.read_text(errors="replace")[-4000:]
            for p in (self.directory / "stdout.log", self.directory / "burrow.log")
            if p.exists()
        )

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("kafka_version", ["0.8", "0.10.0", "2.1.0"])
def test_burrow_sees_both_kinds_of_group_with_zkafkas_lag(
    cluster: LocalCluster, tmp_path: Path, kafka_version: str
) -> None:
    if not Path(BURROW).exists():
        pytest.fail("Burrow is not installed: `make setup` installs Debian's burrow package")
    topic = name("lag")
    asyncio.run(make_topic(cluster, topic, PARTITIONS, records=PARTITIONS * PER_PARTITION))
    coordinator_group, zookeeper_group = name("burrow-coord"), name("burrow-zk")
    coordinator_offsets = {p: 2 * p + 1 for p in range(PARTITIONS)}  # lag 9, 7, 5, 3
    zookeeper_offsets = {p: PER_PARTITION - p for p in range(PARTITIONS)}  # lag 0, 1, 2, 3
    asyncio.run(
        commit_through_zookeeper(cluster.zookeeper_connect, zookeeper_group, topic, zookeeper_offsets)
    )
    with member_that_commits(cluster.bootstrap_servers, coordinator_group, topic, coordinator_offsets):
        burrow = Burrow(cluster, tmp_path, kafka_version)
        try:
            check_burrow(
                burrow, topic, coordinator_group, coordinator_offsets, zookeeper_group, zookeeper_offsets
            )
        finally:
            burrow.stop()


def check_burrow(
    burrow: Burrow,
    topic: str,
    coordinator_group: str,
    coordinator_offsets: dict[int, int],
    zookeeper_group: str,
    zookeeper_offsets: dict[int, int],
) -> None:
    # The cluster module: the topic's partitions and their log end offsets (ListOffsets v0).
    described = wait_for(lambda: burrow.get(f"/topic/{topic}"), 60, what=f"Burrow to see {topic}")
    assert described["offsets"] == [PER_PARTITION] * PARTITIONS, burrow.logs()

    def status(group: str) -> dict[str, Any] | None:
        body = burrow.get(f"/consumer/{group}/lag")
        if body is None:
            return None
        partitions = body["status"].get("partitions") or []
        complete = len(partitions) == PARTITIONS and all(
            p.get("end") and p["end"].get("offset") is not None for p in partitions
        )
        return body["status"] if complete else None

    # Both consumer modules: each group's committed offsets, and the lag zkafka itself would report.
    for group, offsets in ((coordinator_group, coordinator_offsets), (zookeeper_group, zookeeper_offsets)):
        found = wait_for(lambda g=group: status(g), 60, what=f"Burrow's lag for {group}")
        by_partition = {p["partition"]: p for p in found["partitions"] if p["topic"] == topic}
        assert {p: v["end"]["offset"] for p, v in by_partition.items()} == offsets, burrow.logs()
        assert {p: v["current_lag"] for p, v in by_partition.items()} == {
            p: PER_PARTITION - o for p, o in offsets.items()
        }
        assert found["totallag"] == sum(PER_PARTITION - o for o in offsets.values())
    listed = burrow.get("/consumer")
    assert listed is not None
    assert {coordinator_group, zookeeper_group} <= set(listed["consumers"])

    # The group metadata record (key v2, value v1) of the live member: its owner and client id.
    def owners() -> dict[int, tuple[str, str]] | None:
        body = burrow.get(f"/consumer/{coordinator_group}")
        if body is None:
            return None
        found = {p: (v["owner"], v["client_id"]) for p, v in enumerate(body["topics"].get(topic, []))}
        return found if found and all(owner for owner, _ in found.values()) else None

    seen = wait_for(owners, 60, what="Burrow to decode the group's members")
    assert set(seen.values()) == {("/127.0.0.1", "burrow-watched")}, seen

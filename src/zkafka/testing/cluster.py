"""Real broker processes for tests and benchmarks: a `LocalCluster` on the session's ZooKeeper,
in a fresh chroot, waited on until every broker is registered and serves metadata."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from zkafka.client.admin import AdminClient
from zkafka.client.connection import BrokerConnection
from zkafka.client.producer import Producer
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol.messages import MetadataRequest
from zkafka.testing.zookeeper import new_chroot

TEST_BROKER_DEFAULTS = {"offsets.topic.replication.factor": "1"}
"""Test clusters keep `__consumer_offsets` on one replica (fast to create; the tests that need it
replicated say so). `cluster up` uses Kafka's default of 3, capped to the live brokers."""


def wait_until_ready(cluster: LocalCluster, timeout: float = 60.0) -> None:
    """Every live broker answers Metadata listing all live brokers and a controller."""
    expected = {b for b in cluster.brokers if cluster.broker_alive(b)}
    deadline = time.monotonic() + timeout
    last_error: object = None
    while time.monotonic() < deadline:
        for bid in expected:
            if not cluster.broker_alive(bid):
                raise RuntimeError(f"broker {bid} exited; see {cluster.brokers[bid].log_path}")
        try:
            if all(asyncio.run(_sees(cluster.brokers[b].port, expected)) for b in expected):
                return
        except Exception as e:  # not up yet
            last_error = e
        time.sleep(0.2)
    raise TimeoutError(f"cluster not ready after {timeout}s (last error: {last_error})")


async def _sees(port: int, expected: set[int]) -> bool:
    conn = await BrokerConnection.open("127.0.0.1", port, timeout=2)
    try:
        resp = await conn.send(MetadataRequest(topics=[]), timeout=2)
        return {b.node_id for b in resp.brokers} >= expected and resp.controller_id >= 0
    finally:
        conn.close()


@contextmanager
def running_cluster(
    zookeeper: ZooKeeperServer,
    directory: Path,
    brokers: int = 1,
    overrides: dict[str, str] | None = None,
    timeout: float = 60.0,
    nofile: int | None = None,
) -> Iterator[LocalCluster]:
    """`nofile`: each broker's open files limit (`LocalCluster.start_broker`)."""
    cluster = LocalCluster(
        Path(directory), zookeeper_connect=zookeeper.connect_string + new_chroot("cluster")
    )
    cluster.broker_overrides.update(TEST_BROKER_DEFAULTS)
    cluster.broker_overrides.update(overrides or {})
    try:
        for i in range(1, brokers + 1):
            cluster.add_broker(i)
            cluster.start_broker(i, nofile=nofile)
        wait_until_ready(cluster, timeout)
        yield cluster
    finally:
        for bid in list(cluster.brokers):
            if cluster.broker_alive(bid):
                cluster.stop_broker(bid, timeout=20)  # SIGTERM, SIGKILL if it hangs


async def make_topic(cluster: LocalCluster, topic: str, partitions: int, records: int = 0) -> None:
    """Create `topic` (replication factor 1) and, when asked, produce `records` values "0", "1", ...
    dealt round-robin over its partitions."""
    async with AdminClient(cluster.bootstrap_servers) as admin:
        await admin.create_topic(topic, partitions, 1)
    if records:
        async with Producer(cluster.bootstrap_servers, linger_ms=5) as producer:
            for i in range(records):
                await producer.send(topic, str(i).encode(), partition=i % partitions)
            await producer.flush()

"""A streaming query rides over its partition leader's death: the broker is SIGKILLed (RF=2), the
controller moves leadership, the executors' consumers and the driver's offset reader follow."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import create_topic, produce, topic_name, wait_until

from conftest import CLUSTER_OVERRIDES
from zkafka.client import AdminClient
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster

RECORDS = 600


@pytest.fixture
def own_cluster(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[LocalCluster]:
    """Brokers of this test only: it kills one."""
    with running_cluster(zookeeper_server, tmp_path / "cluster", brokers=2, overrides=CLUSTER_OVERRIDES) as c:
        yield c
        for broker in list(c.brokers):  # throwaway data: skip the survivor's controlled shutdown
            if c.broker_alive(broker):
                c.kill_broker(broker)


def describe(bootstrap: str, name: str) -> Any:
    async def main() -> Any:
        async with AdminClient(bootstrap) as admin:
            return (await admin.describe_topics([name]))[name]

    return asyncio.run(main())


@pytest.mark.timeout(240)
def test_streaming_query_keeps_going_when_the_leader_is_killed(
    spark: Any, own_cluster: LocalCluster, tmp_path: Path
) -> None:
    bootstrap = own_cluster.bootstrap_servers
    name = topic_name("failover")
    create_topic(bootstrap, name, 2, 2)
    wait_until(
        lambda: all(len(p.isr) == 2 for p in describe(bootstrap, name).partitions.values()), 30, "full ISR"
    )
    leader = describe(bootstrap, name).partitions[0].leader

    query = (
        spark.readStream.format("zkafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", name)
        .option("startingOffsets", "earliest")
        .load()
        .writeStream.format("memory")
        .queryName("failover")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )

    def count() -> int:
        return spark.sql("select count(*) from failover").first()[0]

    def chunks(first: int, last: int) -> None:
        for chunk in range(first, last, 20):
            batch = [(i % 2, None, b"%d" % i, None) for i in range(chunk, chunk + 20)]
            produce(bootstrap, name, batch, delivery_timeout_ms=90_000)  # retried while no leader
            time.sleep(0.05)

    half = RECORDS // 2
    errors: list[BaseException] = []

    def after_the_kill() -> None:
        try:
            chunks(half, RECORDS)
        except BaseException as e:
            errors.append(e)

    thread = threading.Thread(target=after_the_kill)
    try:
        chunks(0, half)
        wait_until(lambda: count() == half, 90, "the query to read the first half")
        own_cluster.kill_broker(leader)  # SIGKILL: no controlled shutdown
        thread.start()  # the second half goes to the new leader while the query runs
        wait_until(
            lambda: describe(bootstrap, name).partitions[0].leader not in (leader, -1), 60, "a new leader"
        )
        thread.join(120)
        assert not errors, errors
        wait_until(lambda: count() >= RECORDS, 90, "every record after the leader moved")
        assert query.isActive and query.exception() is None
        rows = spark.sql("select partition, offset, cast(value as string) as v from failover").collect()
        assert len({(r.partition, r.offset) for r in rows}) == len(rows) == RECORDS
        assert sorted(int(r.v) for r in rows) == list(range(RECORDS))
    finally:
        query.stop()
        if thread.is_alive():
            thread.join(30)

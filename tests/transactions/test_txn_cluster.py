"""Transactions on a three-broker cluster: markers reach partitions led by other brokers
(WriteTxnMarkers between brokers), and a transaction left open by a producer survives the
coordinator's SIGKILL -- the next instance of the producer fences and aborts it, and
read_committed consumers never see its records."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from test_txn_end_to_end import _consume

from zkafka.client.connection import BrokerConnection
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol.messages import FindCoordinatorRequest
from zkafka.testing.cluster import running_cluster, wait_until_ready

pytestmark = pytest.mark.timeout(300)

OVERRIDES = {
    # few __transaction_state partitions keep creation quick; replicated so a coordinator can move
    "transaction.state.log.num.partitions": "4",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
}


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(
        zookeeper_server, tmp_path_factory.mktemp("txn-3"), brokers=3, overrides=OVERRIDES
    ) as c:
        yield c


def _topic(bootstrap: str) -> str:
    name = f"txn-spread-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the futures resolve
    for f in admin.create_topics([NewTopic(name, 6, 1)]).values():
        f.result(30)
    return name


async def _coordinator_of(cluster: LocalCluster, txn_id: str) -> int:
    conn = await BrokerConnection.open("127.0.0.1", cluster.brokers[1].port)
    try:
        for _ in range(300):
            found = await conn.send(FindCoordinatorRequest(key=txn_id, key_type=1), version=2)
            if found.error_code == 0:
                return int(found.node_id)  # type: ignore[attr-defined]
            await asyncio.sleep(0.1)
    finally:
        conn.close()
    raise AssertionError(f"no coordinator for {txn_id}")


def test_markers_reach_every_leader(cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    topic = _topic(bootstrap)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"spread-{uuid.uuid4().hex[:6]}"})
    p.init_transactions(60)
    for outcome in ("commit", "abort", "commit"):
        p.begin_transaction()
        for i in range(60):
            p.produce(topic, value=f"{outcome}-{i}".encode(), partition=i % 6)
        p.flush(30)
        if outcome == "commit":
            p.commit_transaction(60)
        else:
            p.abort_transaction(60)
    seen = _consume(bootstrap, topic, "read_committed", 120)
    assert len(seen) == 120 and not any(v.startswith("abort") for v in seen)


def test_an_open_transaction_survives_the_coordinator_sigkill(cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    topic = _topic(bootstrap)
    txn_id = f"crash-{uuid.uuid4().hex[:6]}"
    zombie = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    zombie.init_transactions(60)
    zombie.begin_transaction()
    for i in range(30):
        zombie.produce(topic, value=f"open-{i}".encode(), partition=i % 6)
    zombie.flush(30)
    coordinator = asyncio.run(_coordinator_of(cluster, txn_id))
    cluster.kill_broker(coordinator)
    cluster.start_broker(coordinator)
    wait_until_ready(cluster, 60)
    fresh = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    fresh.init_transactions(120)  # fences the zombie; its open transaction is aborted
    fresh.begin_transaction()
    for i in range(30):
        fresh.produce(topic, value=f"after-{i}".encode(), partition=i % 6)
    fresh.commit_transaction(120)
    seen = _consume(bootstrap, topic, "read_committed", 30, timeout_s=120)
    assert sorted(seen) == sorted(f"after-{i}" for i in range(30))

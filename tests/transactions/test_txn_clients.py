"""The transaction coordinator against a real broker process and a real client: confluent-kafka's
transactional producer finds its coordinator (`__transaction_state` created on first use) and
initialises; a second instance with the same transactional.id bumps the epoch."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from zkafka.client.connection import BrokerConnection
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol.messages import FindCoordinatorRequest, InitProducerIdRequest
from zkafka.testing.cluster import running_cluster
from zkafka.transactions.log_records import transaction_partition_for

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("txn"), brokers=1) as c:
        yield c


def _txn_id() -> str:
    return f"txn-{uuid.uuid4().hex[:8]}"


def test_confluent_kafka_init_transactions(cluster: LocalCluster) -> None:
    txn_id = _txn_id()
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id})
    producer.init_transactions(60)
    # a new instance of the same producer: the coordinator bumps the epoch and fences the first
    again = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id})
    again.init_transactions(60)
    again.flush(5)
    producer.flush(5)


async def _wire(cluster: LocalCluster, txn_id: str) -> None:
    conn = await BrokerConnection.open("127.0.0.1", cluster.brokers[1].port)
    try:
        for _ in range(200):  # the topic and its partitions' leaders appear after the first ask
            found = await conn.send(FindCoordinatorRequest(key=txn_id, key_type=1), version=2)
            if found.error_code == 0:
                break
            await asyncio.sleep(0.1)
        assert found.error_code == 0 and found.node_id == 1, found
        epochs = []
        pid = -1
        for _ in range(3):
            for _attempt in range(100):
                r = await conn.send(
                    InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=10_000), version=1
                )
                if r.error_code not in (14, 15):  # loading / not available yet
                    break
                await asyncio.sleep(0.1)
            assert r.error_code == 0, r
            assert pid in (-1, r.producer_id)
            pid = r.producer_id
            epochs.append(r.producer_epoch)
        assert epochs == [0, 1, 2]
        too_long = await conn.send(
            InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=900_001), version=1
        )
        assert too_long.error_code == 50  # INVALID_TRANSACTION_TIMEOUT
        empty = await conn.send(FindCoordinatorRequest(key="", key_type=1), version=2)
        assert empty.error_code == 42  # INVALID_REQUEST
    finally:
        conn.close()


def test_init_producer_id_bumps_the_epoch_and_writes_the_log(cluster: LocalCluster) -> None:
    txn_id = _txn_id()
    asyncio.run(_wire(cluster, txn_id))
    log_dir = (
        Path(cluster.brokers[1].directory)
        / "logs"
        / f"__transaction_state-{transaction_partition_for(txn_id, 50)}"
    )
    assert any(p.stat().st_size > 0 for p in log_dir.glob("*.log"))

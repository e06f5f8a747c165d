"""Recovery: a broker SIGKILLed with an aborted transaction and an open one in its log comes
back with the same last stable offset and `.txnindex`, so read_committed consumers see the same
records as before the crash; the open transaction is then aborted by the producer's next
instance."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from test_txn_end_to_end import _consume

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster, wait_until_ready

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def cluster(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[LocalCluster]:
    overrides = {"transaction.state.log.num.partitions": "3", "transaction.state.log.replication.factor": "1"}
    with running_cluster(zookeeper_server, tmp_path, brokers=1, overrides=overrides) as c:
        yield c


def test_sigkill_mid_transaction(cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = f"recover-{uuid.uuid4().hex[:6]}"
    for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        f.result(30)
    txn_id = f"rec-{uuid.uuid4().hex[:6]}"
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    p.init_transactions(60)
    for outcome in ("commit", "abort"):
        p.begin_transaction()
        for i in range(20):
            p.produce(topic, value=f"{outcome}-{i}".encode())
        p.flush(30)
        if outcome == "commit":
            p.commit_transaction(60)
        else:
            p.abort_transaction(60)
    p.begin_transaction()
    for i in range(20):
        p.produce(topic, value=f"open-{i}".encode())
    p.flush(30)
    before = sorted(_consume(bootstrap, topic, "read_committed", 20))
    assert before == sorted(f"commit-{i}" for i in range(20))

    cluster.kill_broker(1)
    cluster.start_broker(1)
    wait_until_ready(cluster, 60)
    log_dir = Path(cluster.brokers[1].directory) / "logs" / f"{topic}-0"
    assert any(f.stat().st_size == 34 for f in log_dir.glob("*.txnindex"))
    assert sorted(_consume(bootstrap, topic, "read_committed", 20)) == before

    again = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    again.init_transactions(120)  # aborts the open transaction
    again.begin_transaction()
    again.produce(topic, value=b"last")
    again.commit_transaction(60)
    after = sorted(_consume(bootstrap, topic, "read_committed", 21))
    assert after == sorted([*before, "last"])

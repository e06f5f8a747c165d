"""Recovery: a broker SIGKILLed with a committed, an aborted and an open transaction in its log
comes back with the same last stable offset and `.txnindex` -- rebuilt from the markers when the
crash took the file with it (a power loss: it lives in the page cache) -- so read_committed
consumers see the same records as before the crash; the open transaction is then aborted by the
producer's next instance."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import IsolationLevel, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from test_txn_end_to_end import _consume

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster, wait_until_ready
from zkafka.testing.polling import wait_for

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


@pytest.fixture
def cluster(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[LocalCluster]:
    overrides = {"transaction.state.log.num.partitions": "3", "transaction.state.log.replication.factor": "1"}
    with running_cluster(zookeeper_server, tmp_path, brokers=1, overrides=overrides) as c:
        yield c


def _last_stable_offset(admin: AdminClient, topic: str) -> int:
    """ListOffsets LATEST at read_committed, asked again while the restarted broker brings the
    partition back online."""
    asked = {TopicPartition(topic, 0): OffsetSpec.latest()}
    for _ in range(100):
        (answer,) = admin.list_offsets(asked, isolation_level=IsolationLevel.READ_COMMITTED).values()
        try:
            return answer.result(30).offset
        except KafkaException:
            time.sleep(0.3)
    raise AssertionError(f"no last stable offset for {topic}")


@pytest.mark.parametrize("txnindex", ["kept", "lost"])
def test_sigkill_mid_transaction(cluster: LocalCluster, txnindex: str) -> None:
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
    lso = _last_stable_offset(admin, topic)
    assert lso == 42  # 20 committed, their marker, 20 aborted, their marker: the open one starts here
    log_dir = Path(cluster.brokers[1].directory) / "logs" / f"{topic}-0"
    (index,) = log_dir.glob("*.txnindex")
    entry = index.read_bytes()
    assert len(entry) == 34

    cluster.kill_broker(1)
    if txnindex == "lost":
        index.unlink()
    cluster.start_broker(1)
    wait_until_ready(cluster, 60)
    # The entry is re-added by the partition's producer-state rebuild, when the broker applies its
    # LeaderAndIsr: that may come just after the broker answers Metadata (what "ready" waits for).
    wait_for(lambda: index.read_bytes() == entry, 30, "the .txnindex entry rebuilt from the markers")
    # a new client: the old one's view of the cluster predates the restart
    assert _last_stable_offset(AdminClient({"bootstrap.servers": bootstrap}), topic) == lso
    assert sorted(_consume(bootstrap, topic, "read_committed", 20)) == before

    again = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    again.init_transactions(120)  # aborts the open transaction
    again.begin_transaction()
    again.produce(topic, value=b"last")
    again.commit_transaction(60)
    after = sorted(_consume(bootstrap, topic, "read_committed", 21))
    assert after == sorted([*before, "last"])

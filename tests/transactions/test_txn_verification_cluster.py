"""KIP-890 verification across brokers: a partition leader that is not the transaction's
coordinator asks it over the inter-broker listener (AddPartitionsToTxn v4 `verify_only`), and a
broker with `transaction.partition.verification.enable=false` appends the same unverified batch,
opening the hanging transaction the check exists to prevent (the LSO stays behind it).

Three brokers: 1 and 2 verify, 3 does not; `__transaction_state` has one partition, so one broker
is the coordinator and at least one verifying broker is not.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from test_txn_verification import _add, _batch, _end, _init, _offsets, _produce

from zkafka.client.connection import BrokerConnection
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import FindCoordinatorRequest
from zkafka.testing.cluster import TEST_BROKER_DEFAULTS, wait_until_ready
from zkafka.testing.zookeeper import new_chroot

pytestmark = pytest.mark.timeout(300)

E = ErrorCode
OVERRIDES = {
    **TEST_BROKER_DEFAULTS,
    "transaction.state.log.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
}


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    c = LocalCluster(
        tmp_path_factory.mktemp("txn-verify-3"),
        zookeeper_connect=zookeeper_server.connect_string + new_chroot("v3"),
    )
    c.broker_overrides.update(OVERRIDES)
    try:
        c.add_broker(1)
        c.add_broker(2)
        c.add_broker(3, {"transaction.partition.verification.enable": "false"})
        for b in (1, 2, 3):
            c.start_broker(b)
        wait_until_ready(c, 60)
        yield c
    finally:
        for b in list(c.brokers):
            if c.broker_alive(b):
                c.stop_broker(b, timeout=20)


async def _scenario(cluster: LocalCluster, topic: str) -> None:
    conns = {b: await BrokerConnection.open("127.0.0.1", cluster.brokers[b].port) for b in (1, 2, 3)}
    try:
        txn_id = f"remote-{uuid.uuid4().hex[:6]}"
        for _ in range(200):
            found = await conns[1].send(FindCoordinatorRequest(key=txn_id, key_type=1), version=2)
            if found.error_code == 0:
                break
            await asyncio.sleep(0.1)
        assert found.error_code == 0, found
        coordinator = found.node_id
        verifier = 1 if coordinator != 1 else 2  # partition i + 1 is led by broker i + 1
        init = await _init(conns[coordinator], txn_id)
        pid, epoch = init.producer_id, init.producer_epoch

        # a verifying leader asks the remote coordinator: never added, refused
        conn = conns[verifier]
        refused = await _produce(conn, txn_id, topic, verifier - 1, _batch(pid, epoch, 0, [b"x"]))
        assert refused.error_code == E.INVALID_TXN_STATE, refused
        assert await _offsets(conn, topic, verifier - 1, 0) == 0

        # added: the remote coordinator vouches for it
        assert await _add(conns[coordinator], txn_id, pid, epoch, topic, verifier - 1) == 0
        ok = await _produce(conn, txn_id, topic, verifier - 1, _batch(pid, epoch, 0, [b"a"]))
        assert (ok.error_code, ok.base_offset) == (0, 0), ok

        # the broker with verification off appends what was never added: a hanging transaction
        hanging = await _produce(conns[3], txn_id, topic, 2, _batch(pid, epoch, 0, [b"hanging"]))
        assert (hanging.error_code, hanging.base_offset) == (0, 0), hanging
        assert await _end(conns[coordinator], txn_id, pid, epoch, commit=True) == 0
        for _ in range(100):
            if await _offsets(conn, topic, verifier - 1, 1) == 2:
                break
            await asyncio.sleep(0.1)
        assert await _offsets(conn, topic, verifier - 1, 1) == 2  # committed: batch and marker
        await asyncio.sleep(0.5)
        assert await _offsets(conns[3], topic, 2, 0) == 1
        assert await _offsets(conns[3], topic, 2, 1) == 0  # no marker will ever come
    finally:
        for c in conns.values():
            c.close()


def test_remote_verification_and_the_switch(cluster: LocalCluster) -> None:
    topic = f"remote-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for f in admin.create_topics([NewTopic(topic, 3, replica_assignment=[[1], [2], [3]])]).values():
        f.result(30)
    asyncio.run(_scenario(cluster, topic))

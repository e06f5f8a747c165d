"""The transaction coordinator against a real broker process and a real client: confluent-kafka's
transactional producer finds its coordinator (`__transaction_state` created on first use) and
initialises; a second instance with the same transactional.id bumps the epoch; bad transaction
requests on the wire get Kafka's error codes."""

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


async def _ask(cluster: LocalCluster, request: object, version: int) -> object:
    conn = await BrokerConnection.open("127.0.0.1", cluster.brokers[1].port)
    try:
        return await conn.send(request, version=version)  # type: ignore[arg-type]
    finally:
        conn.close()


def test_describe_and_list_transactions_and_producers(cluster: LocalCluster) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    from zkafka.protocol.messages import (
        DescribeProducersRequest,
        DescribeTransactionsRequest,
        ListTransactionsRequest,
    )

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    topic = f"described-{uuid.uuid4().hex[:6]}"
    for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        f.result(30)
    txn_id = _txn_id()
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id})
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.produce(topic, value=b"open")
    producer.flush(30)

    described = asyncio.run(
        _ask(cluster, DescribeTransactionsRequest(transactional_ids=[txn_id, "nobody"]), 0)
    )
    mine, nobody = described.transaction_states  # type: ignore[attr-defined]
    assert (mine.error_code, mine.transaction_state, mine.producer_epoch) == (0, "Ongoing", 0)
    assert [(t.topic, list(t.partitions)) for t in mine.topics] == [(topic, [0])]
    assert mine.transaction_start_time_ms > 0
    assert nobody.error_code in (105, 16)  # TRANSACTIONAL_ID_NOT_FOUND, or NOT_COORDINATOR elsewhere

    listed = asyncio.run(_ask(cluster, ListTransactionsRequest(state_filters=["Ongoing", "Bogus"]), 1))
    assert listed.error_code == 0 and listed.unknown_state_filters == ["Bogus"]  # type: ignore[attr-defined]
    assert txn_id in {s.transactional_id for s in listed.transaction_states}  # type: ignore[attr-defined]

    producers = asyncio.run(
        _ask(
            cluster,
            DescribeProducersRequest(
                topics=[DescribeProducersRequest.TopicRequest(name=topic, partition_indexes=[0, 9])]
            ),
            0,
        )
    )
    part, missing = producers.topics[0].partitions  # type: ignore[attr-defined]
    assert missing.error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION
    [state] = part.active_producers
    assert (state.producer_id, state.current_txn_start_offset) == (mine.producer_id, 0)

    producer.abort_transaction(60)
    for _ in range(100):
        described = asyncio.run(_ask(cluster, DescribeTransactionsRequest(transactional_ids=[txn_id]), 0))
        if described.transaction_states[0].transaction_state == "CompleteAbort":  # type: ignore[attr-defined]
            break
    assert described.transaction_states[0].transaction_state == "CompleteAbort"  # type: ignore[attr-defined]


async def _bad_requests(cluster: LocalCluster, txn_id: str, topic: str) -> dict[str, object]:
    """Hostile or mistaken transaction requests on one connection, then an ordinary request: each
    gets Kafka's error and the connection keeps serving."""
    from zkafka.protocol.messages import AddPartitionsToTxnRequest, ApiVersionsRequest, EndTxnRequest

    conn = await BrokerConnection.open("127.0.0.1", cluster.brokers[1].port)
    try:
        for _ in range(200):  # __transaction_state created on first use
            found = await conn.send(FindCoordinatorRequest(key=txn_id, key_type=1), version=2)
            if found.error_code == 0:
                break
            await asyncio.sleep(0.1)
        for _ in range(100):
            init = await conn.send(
                InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=10_000), version=1
            )
            if init.error_code not in (14, 15):
                break
            await asyncio.sleep(0.1)
        assert init.error_code == 0, init
        pid, epoch = init.producer_id, init.producer_epoch
        Topic = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic

        def add(
            topics: list[tuple[str, list[int]]], *, producer_epoch: int = epoch
        ) -> AddPartitionsToTxnRequest:
            return AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=txn_id,
                v3_and_below_producer_id=pid,
                v3_and_below_producer_epoch=producer_epoch,
                v3_and_below_topics=[Topic(name=n, partitions=ps) for n, ps in topics],
            )

        def codes(resp: object) -> dict[tuple[str, int], int]:
            return {
                (t.name, p.partition_index): p.partition_error_code
                for t in resp.results_by_topic_v3_and_below  # type: ignore[attr-defined]
                for p in t.results_by_partition
            }

        return {
            "end_unknown_id": await conn.send(
                EndTxnRequest(
                    transactional_id=f"{txn_id}-nobody", producer_id=pid, producer_epoch=0, committed=True
                ),
                version=2,
            ),
            "end_wrong_pid": await conn.send(
                EndTxnRequest(
                    transactional_id=txn_id, producer_id=pid + 1000, producer_epoch=epoch, committed=True
                ),
                version=2,
            ),
            "end_nothing_open": await conn.send(
                EndTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=True),
                version=2,
            ),
            "add_unknown_topic": codes(
                await conn.send(add([(topic, [0]), ("no-such-topic", [0]), (topic, [7])]), version=2)
            ),
            "add_old_epoch": codes(await conn.send(add([(topic, [0])], producer_epoch=epoch - 1), version=2)),
            "still_serving": await conn.send(ApiVersionsRequest(), version=0),
        }
    finally:
        conn.close()


def test_bad_transaction_requests_get_kafkas_errors(cluster: LocalCluster) -> None:
    """EndTxn for an unknown transactional id or producer id, EndTxn with nothing open,
    AddPartitionsToTxn naming unknown topics or partitions, or from a fenced epoch: Kafka's codes
    (TransactionCoordinator's and KafkaApis' answers), nothing written, the broker still serving."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    topic = f"bad-txn-{uuid.uuid4().hex[:6]}"
    for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        f.result(30)
    txn_id = _txn_id()
    asyncio.run(_wire(cluster, txn_id))  # three epochs: 0, 1, 2
    got = asyncio.run(_bad_requests(cluster, txn_id, topic))
    assert got["end_unknown_id"].error_code == 49  # type: ignore[attr-defined]  # INVALID_PRODUCER_ID_MAPPING
    assert got["end_wrong_pid"].error_code == 49  # type: ignore[attr-defined]
    assert got["end_nothing_open"].error_code == 48  # type: ignore[attr-defined]  # INVALID_TXN_STATE
    # the unknown ones UNKNOWN_TOPIC_OR_PARTITION, the rest OPERATION_NOT_ATTEMPTED, as KafkaApis answers
    assert got["add_unknown_topic"] == {(topic, 0): 55, ("no-such-topic", 0): 3, (topic, 7): 3}
    assert set(got["add_old_epoch"].values()) == {90}  # type: ignore[attr-defined]  # PRODUCER_FENCED (v2)
    assert got["still_serving"].error_code == 0  # type: ignore[attr-defined]

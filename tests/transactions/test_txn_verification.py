"""KIP-890 part 1 and the Kafka 3.x/4.x transaction versions against a real broker process, spoken
by zkafka's own client connection with hand-built record batches (what a buggy or late producer
would send), next to confluent-kafka's transactional producer:

- a transactional batch for a partition never added to the transaction is refused with
  INVALID_TXN_STATE, nothing is appended and the LSO is not held back;
- once the partition is added the same batch is appended, and the transaction's later batches
  need no new verification;
- a batch from an old epoch after a new transaction began is refused;
- InitProducerId v3/v4 (KIP-360): the expected (id, epoch) is bumped, a retry answers the same
  epoch, a stale pair is PRODUCER_FENCED, a half pair INVALID_REQUEST;
- TxnOffsetCommit v3 checks the member and generation (KIP-447), and OffsetFetch v7 with
  require_stable answers UNSTABLE_OFFSET_COMMIT until the transaction's marker lands (v8 too,
  with several groups in one request).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from zkafka.client.connection import BrokerConnection
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    JoinGroupRequest,
    ListOffsetsRequest,
    OffsetFetchRequest,
    ProduceRequest,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
)
from zkafka.records.record import Record, build_batch
from zkafka.testing.cluster import running_cluster

pytestmark = pytest.mark.timeout(240)

E = ErrorCode
RETRIABLE = {E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE, E.CONCURRENT_TRANSACTIONS}


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("txn-verify"), brokers=1) as c:
        yield c


def _topic(cluster: LocalCluster, partitions: int = 2) -> str:
    name = f"verify-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(30)
    return name


async def _retry(conn: BrokerConnection, request: Any, version: int, field: str = "error_code") -> Any:
    """Send until the answer is no longer one a client retries (coordinator loading, ...)."""
    for _ in range(300):
        response = await conn.send(request, version=version)
        if ErrorCode.lookup(getattr(response, field)) not in RETRIABLE | {E.NOT_COORDINATOR}:
            return response
        await asyncio.sleep(0.1)
    raise AssertionError(f"still retrying: {response}")


async def _init(
    conn: BrokerConnection, txn_id: str, version: int = 4, expected: tuple[int, int] = (-1, -1)
) -> Any:
    for _ in range(200):
        found = await conn.send(FindCoordinatorRequest(key=txn_id, key_type=1), version=2)
        if found.error_code == 0:
            break
        await asyncio.sleep(0.1)
    request = InitProducerIdRequest(
        transactional_id=txn_id,
        transaction_timeout_ms=60_000,
        producer_id=expected[0],
        producer_epoch=expected[1],
    )
    return await _retry(conn, request, version)


def _batch(pid: int, epoch: int, seq: int, values: list[bytes]) -> bytes:
    return build_batch(
        [Record(i, int(time.time() * 1000), None, v) for i, v in enumerate(values)],
        base_offset=0,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )


async def _produce(
    conn: BrokerConnection, txn_id: str | None, topic: str, partition: int, batch: bytes
) -> Any:
    request = ProduceRequest(
        transactional_id=txn_id,
        acks=-1,
        timeout_ms=10_000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=batch)],
            )
        ],
    )
    response = await conn.send(request, version=8)
    return response.responses[0].partition_responses[0]


async def _add(conn: BrokerConnection, txn_id: str, pid: int, epoch: int, topic: str, partition: int) -> int:
    request = AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=txn_id,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[
            AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=[partition])
        ],
    )
    for _ in range(100):
        response = await conn.send(request, version=3)
        error = response.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
        if ErrorCode.lookup(error) not in RETRIABLE:
            return error
        await asyncio.sleep(0.1)
    raise AssertionError("AddPartitionsToTxn kept retrying")


async def _end(conn: BrokerConnection, txn_id: str, pid: int, epoch: int, commit: bool) -> int:
    response = await _retry(
        conn,
        EndTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=commit),
        3,
    )
    return response.error_code


async def _offsets(conn: BrokerConnection, topic: str, partition: int, isolation: int) -> int:
    request = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=isolation,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name=topic,
                partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=partition, timestamp=-1)],
            )
        ],
    )
    response = await conn.send(request, version=5)
    p = response.topics[0].partitions[0]
    assert p.error_code == 0, p
    return p.offset


async def _connect(cluster: LocalCluster) -> BrokerConnection:
    return await BrokerConnection.open("127.0.0.1", cluster.brokers[1].port)


# -- KIP-890 ---------------------------------------------------------------------------------------------


async def _unadded_then_added(cluster: LocalCluster, topic: str) -> None:
    conn = await _connect(cluster)
    try:
        txn_id = f"verify-{uuid.uuid4().hex[:6]}"
        init = await _init(conn, txn_id)
        assert init.error_code == 0, init
        pid, epoch = init.producer_id, init.producer_epoch

        # never added: refused, nothing appended, the LSO follows the high watermark
        refused = await _produce(conn, txn_id, topic, 0, _batch(pid, epoch, 0, [b"hanging"]))
        assert refused.error_code == E.INVALID_TXN_STATE, refused
        assert await _offsets(conn, topic, 0, 0) == 0
        plain = build_batch([Record(0, int(time.time() * 1000), None, b"plain")], base_offset=0)
        assert (await _produce(conn, None, topic, 0, plain)).error_code == 0
        assert await _offsets(conn, topic, 0, 0) == 1
        assert await _offsets(conn, topic, 0, 1) == 1  # LSO: no transaction is open

        # a transactional batch without the request's transactional id cannot be verified
        no_id = await _produce(conn, None, topic, 0, _batch(pid, epoch, 0, [b"x"]))
        assert no_id.error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, no_id

        # added: the same batch goes in; the transaction's next batch needs no new verification
        assert await _add(conn, txn_id, pid, epoch, topic, 0) == 0
        first = await _produce(conn, txn_id, topic, 0, _batch(pid, epoch, 0, [b"a", b"b"]))
        assert (first.error_code, first.base_offset) == (0, 1), first
        second = await _produce(conn, txn_id, topic, 0, _batch(pid, epoch, 2, [b"c"]))
        assert (second.error_code, second.base_offset) == (0, 3), second
        assert await _offsets(conn, topic, 0, 1) == 1  # held at the open transaction
        assert await _end(conn, txn_id, pid, epoch, commit=True) == 0
        for _ in range(100):  # the marker lands in the background
            if await _offsets(conn, topic, 0, 1) == 5:
                break
            await asyncio.sleep(0.1)
        assert await _offsets(conn, topic, 0, 1) == 5

        # after the commit the partition is out of the transaction again: a late batch is refused
        late = await _produce(conn, txn_id, topic, 0, _batch(pid, epoch, 3, [b"late"]))
        assert late.error_code == E.INVALID_TXN_STATE, late

        # a new instance (new epoch) begins a transaction on partition 1; the old epoch cannot join
        again = await _init(conn, txn_id)
        assert (again.error_code, again.producer_id, again.producer_epoch) == (0, pid, epoch + 1), again
        assert await _add(conn, txn_id, pid, epoch + 1, topic, 1) == 0
        zombie = await _produce(conn, txn_id, topic, 1, _batch(pid, epoch, 4, [b"zombie"]))
        assert zombie.error_code == E.INVALID_PRODUCER_EPOCH, zombie
        fresh = await _produce(conn, txn_id, topic, 1, _batch(pid, epoch + 1, 0, [b"fresh"]))
        assert (fresh.error_code, fresh.base_offset) == (0, 0), fresh
        assert await _end(conn, txn_id, pid, epoch + 1, commit=False) == 0
        assert await _offsets(conn, topic, 1, 0) == 2  # the batch and its ABORT marker
    finally:
        conn.close()


def test_unadded_partition_refused_added_appended_old_epoch_refused(cluster: LocalCluster) -> None:
    asyncio.run(_unadded_then_added(cluster, _topic(cluster)))


def test_confluent_kafka_commits_and_aborts_with_verification(cluster: LocalCluster) -> None:
    topic = _topic(cluster)
    bootstrap = cluster.bootstrap_servers
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"ck-{uuid.uuid4().hex[:6]}"})
    p.init_transactions(60)
    p.begin_transaction()
    for i in range(4):
        p.produce(topic, value=f"kept-{i}".encode(), partition=i % 2)
    p.commit_transaction(60)
    p.begin_transaction()
    p.produce(topic, value=b"dropped", partition=0)
    p.abort_transaction(60)
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    c.subscribe([topic])
    seen: list[str] = []
    deadline = time.monotonic() + 60
    try:
        while len(seen) < 4 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                seen.append(m.value().decode())
        end = time.monotonic() + 2
        while time.monotonic() < end:  # nothing else arrives
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                seen.append(m.value().decode())
    finally:
        c.close()
    assert sorted(seen) == [f"kept-{i}" for i in range(4)]


# -- KIP-360 ---------------------------------------------------------------------------------------------


async def _kip360(cluster: LocalCluster) -> None:
    conn = await _connect(cluster)
    try:
        txn_id = f"kip360-{uuid.uuid4().hex[:6]}"
        first = await _init(conn, txn_id, version=4)
        pid, epoch = first.producer_id, first.producer_epoch
        bumped = await _init(conn, txn_id, version=3, expected=(pid, epoch))
        assert (bumped.error_code, bumped.producer_id, bumped.producer_epoch) == (0, pid, epoch + 1)
        retried = await _init(conn, txn_id, version=3, expected=(pid, epoch))  # the answer was lost
        assert (retried.error_code, retried.producer_epoch) == (0, epoch + 1)
        stale = await _init(conn, txn_id, version=4, expected=(pid + 1000, 0))
        assert stale.error_code == E.PRODUCER_FENCED
        stale_v3 = await _init(conn, txn_id, version=3, expected=(pid + 1000, 0))
        assert stale_v3.error_code == E.INVALID_PRODUCER_EPOCH  # before v4, as Kafka answers
        half = await _init(conn, txn_id, version=4, expected=(pid, -1))
        assert half.error_code == E.INVALID_REQUEST
        plain = await _init(conn, txn_id, version=2)  # flexible, no expectation: a new instance
        assert (plain.error_code, plain.producer_epoch) == (0, epoch + 2)
    finally:
        conn.close()


def test_init_producer_id_kip360_epoch_bump(cluster: LocalCluster) -> None:
    asyncio.run(_kip360(cluster))


# -- KIP-447: TxnOffsetCommit v3 and OffsetFetch require_stable ----------------------------------------


async def _join(conn: BrokerConnection, group: str) -> tuple[str, int]:
    for _ in range(200):
        found = await conn.send(FindCoordinatorRequest(key=group, key_type=0), version=2)
        if found.error_code == 0:
            break
        await asyncio.sleep(0.1)
    member = ""
    for _ in range(100):
        joined = await conn.send(
            JoinGroupRequest(
                group_id=group,
                session_timeout_ms=30_000,
                rebalance_timeout_ms=30_000,
                member_id=member,
                protocol_type="consumer",
                protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")],
            ),
            version=5,
        )
        member = joined.member_id or member
        if joined.error_code == 0:
            break
        await asyncio.sleep(0.05)
    assert joined.error_code == 0, joined
    synced = await conn.send(
        SyncGroupRequest(
            group_id=group,
            generation_id=joined.generation_id,
            member_id=member,
            assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=member, assignment=b"")],
        ),
        version=3,
    )
    assert synced.error_code == 0, synced
    return member, joined.generation_id


async def _offset_fetch(conn: BrokerConnection, group: str, topic: str) -> Any:
    response = await conn.send(
        OffsetFetchRequest(
            group_id=group,
            topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])],
            require_stable=True,
        ),
        version=7,
    )
    return response.topics[0].partitions[0]


async def _offset_fetch_v8(conn: BrokerConnection, groups: list[str], topic: str) -> list[Any]:
    """OffsetFetch v8 (KIP-709): several groups in one request, each answered on its own."""
    req = OffsetFetchRequest
    response = await conn.send(
        req(
            groups=[
                req.OffsetFetchRequestGroup(
                    group_id=g, topics=[req.OffsetFetchRequestTopics(name=topic, partition_indexes=[0])]
                )
                for g in groups
            ],
            require_stable=True,
        ),
        version=8,
    )
    return list(response.groups)


async def _txn_offsets(cluster: LocalCluster, topic: str) -> None:
    conn = await _connect(cluster)
    try:
        group = f"g-{uuid.uuid4().hex[:6]}"
        member, generation = await _join(conn, group)
        txn_id = f"tc-{uuid.uuid4().hex[:6]}"
        init = await _init(conn, txn_id)
        pid, epoch = init.producer_id, init.producer_epoch
        added = await _retry(
            conn,
            AddOffsetsToTxnRequest(
                transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, group_id=group
            ),
            3,
        )
        assert added.error_code == 0, added

        def commit(gen: int, who: str) -> TxnOffsetCommitRequest:
            req = TxnOffsetCommitRequest
            return req(
                transactional_id=txn_id,
                group_id=group,
                producer_id=pid,
                producer_epoch=epoch,
                generation_id=gen,
                member_id=who,
                topics=[
                    req.TxnOffsetCommitRequestTopic(
                        name=topic,
                        partitions=[
                            req.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=42)
                        ],
                    )
                ],
            )

        async def error_of(request: TxnOffsetCommitRequest) -> int:
            response = await conn.send(request, version=3)
            return response.topics[0].partitions[0].error_code

        assert await error_of(commit(generation + 1, member)) == E.ILLEGAL_GENERATION
        assert await error_of(commit(generation, "nobody")) == E.UNKNOWN_MEMBER_ID
        assert await error_of(commit(generation, member)) == E.NONE

        pending = await _offset_fetch(conn, group, topic)
        assert (pending.error_code, pending.committed_offset) == (E.UNSTABLE_OFFSET_COMMIT, -1)
        mine, other = await _offset_fetch_v8(conn, [group, "no-such-group"], topic)
        assert (mine.group_id, mine.error_code) == (group, 0)
        assert [(p.error_code, p.committed_offset) for t in mine.topics for p in t.partitions] == [
            (E.UNSTABLE_OFFSET_COMMIT, -1)
        ]
        assert (other.group_id, other.error_code) == ("no-such-group", 0)
        assert [(p.error_code, p.committed_offset) for t in other.topics for p in t.partitions] == [(0, -1)]
        assert await _end(conn, txn_id, pid, epoch, commit=True) == 0
        for _ in range(100):  # until the marker reaches the group's partition
            stable = await _offset_fetch(conn, group, topic)
            if stable.error_code == 0:
                break
            await asyncio.sleep(0.1)
        assert (stable.error_code, stable.committed_offset) == (0, 42)
        mine, _ = await _offset_fetch_v8(conn, [group, "no-such-group"], topic)
        assert [(p.error_code, p.committed_offset) for t in mine.topics for p in t.partitions] == [(0, 42)]
    finally:
        conn.close()


def test_txn_offset_commit_v3_member_checks_and_require_stable(cluster: LocalCluster) -> None:
    asyncio.run(_txn_offsets(cluster, _topic(cluster, 1)))

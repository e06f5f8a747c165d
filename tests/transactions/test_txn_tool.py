"""`zkafka transactions` (kafka-transactions) as an operator runs it, against a real broker
process: confluent-kafka's transactional producer leaves a transaction open and `list`,
`describe` and `describe-producers` show it; a hanging transaction (a transactional batch its
coordinator never heard of) holds the LSO back until `find-hanging` finds it and `abort` ends it,
after which a read_committed consumer gets past it.

The hanging transaction is written the way one arises in Kafka: a producer writes a
transactional batch without AddPartitionsToTxn, and the leader does not check it with the
coordinator (`transaction.partition.verification.enable=false`, KIP-890's switch).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient as ConfluentAdmin
from confluent_kafka.admin import NewTopic

from zkafka.client import Cluster, TopicPartition
from zkafka.client.offsets import READ_COMMITTED
from zkafka.client.txn_admin import TransactionAdmin
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import (
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceResponse,
)
from zkafka.records.record import simple_batch
from zkafka.testing.cluster import running_cluster

pytestmark = pytest.mark.timeout(300)

HANGING_AGE_MS = 20 * 60_000
"""The hanging batch's timestamp is this far in the past: older than find-hanging's default
15-minute bound, so the default search finds it (the age is the record's own timestamp)."""


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    overrides = {"transaction.partition.verification.enable": "false"}
    with running_cluster(
        zookeeper_server, tmp_path_factory.mktemp("txn-tool"), brokers=1, overrides=overrides
    ) as c:
        yield c


def _cli(cluster: LocalCluster, *args: str, bootstrap: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "zkafka.cli.main",
            "transactions",
            "--bootstrap-server",
            bootstrap or cluster.bootstrap_servers,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


def _ok(result: subprocess.CompletedProcess[str]) -> list[list[str]]:
    """The table printed: rows of cells (Kafka's layout: padded cells, each followed by a tab)."""
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return [[cell.strip() for cell in line.split("\t")[:-1]] for line in result.stdout.splitlines()]


def _failed(result: subprocess.CompletedProcess[str], code: int = 1) -> str:
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    return result.stderr


def _topic(cluster: LocalCluster, partitions: int = 1, replication_factor: int = 1) -> str:
    name = f"txn-tool-{uuid.uuid4().hex[:8]}"
    admin = ConfluentAdmin({"bootstrap.servers": cluster.bootstrap_servers})
    for f in admin.create_topics([NewTopic(name, partitions, replication_factor)]).values():
        f.result(30)
    return name


def _read_committed(bootstrap: str, topic: str, expected: int, timeout_s: float = 60) -> list[str]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    out: list[str] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(out) < expected and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                out.append(m.value().decode())
        # anything beyond the expected records (the aborted ones) would arrive now
        for _ in range(4):
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                out.append(m.value().decode())
    finally:
        c.close()
    return out


def _open_transaction(cluster: LocalCluster, topic: str) -> tuple[Producer, str]:
    txn_id = f"tool-{uuid.uuid4().hex[:8]}"
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id})
    p.init_transactions(60)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, value=f"open-{i}".encode(), partition=0)
    p.flush(30)
    return p, txn_id


async def _write_hanging_batch(
    bootstrap: str, topic: str, txn_id: str, values: list[str], partition: int = 0
) -> tuple[int, int]:
    """A transactional batch from a fresh producer id that never called AddPartitionsToTxn: the
    coordinator knows the id (Empty, no partitions) but not this transaction."""
    async with TransactionAdmin(bootstrap) as admin:  # FindCoordinator, retried while it loads
        coordinator = await admin.coordinator(txn_id)
    cluster = Cluster(bootstrap)
    try:
        while True:  # the coordinator's partition may still be loading
            resp = await cluster.send(
                coordinator, InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60_000)
            )
            assert isinstance(resp, InitProducerIdResponse)
            if resp.error_code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                break
            await asyncio.sleep(0.2)
        assert resp.error_code == 0, resp
        meta = await cluster.refresh([topic])
        batch = simple_batch(
            [(None, v.encode()) for v in values],
            timestamp=int(time.time() * 1000) - HANGING_AGE_MS,
            producer_id=resp.producer_id,
            producer_epoch=resp.producer_epoch,
            base_sequence=0,
            is_transactional=True,
        )
        produce = ProduceRequest(
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
        answer = await cluster.send(meta.leader(TopicPartition(topic, partition)), produce)
        assert isinstance(answer, ProduceResponse)
        [t] = answer.responses
        [p] = t.partition_responses
        assert p.error_code == 0, ErrorCode.lookup(p.error_code)
        return resp.producer_id, p.base_offset
    finally:
        await cluster.close()


def _lso(bootstrap: str, topic: str, partition: int = 0) -> int:
    async def ask() -> int:
        async with TransactionAdmin(bootstrap) as admin:
            from zkafka.client.offsets import list_offsets, offset_spec

            tp = TopicPartition(topic, partition)
            found = await list_offsets(
                admin.cluster, {tp: offset_spec("latest")}, isolation_level=READ_COMMITTED
            )
            result = found[tp]
            assert result is not None
            return result.offset

    return asyncio.run(asyncio.wait_for(ask(), 60))


def test_list_describe_and_describe_producers_show_an_open_transaction(cluster: LocalCluster) -> None:
    topic = _topic(cluster)
    producer, txn_id = _open_transaction(cluster, topic)
    listed = _ok(_cli(cluster, "list"))
    assert listed[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    [row] = [r for r in listed[1:] if r[0] == txn_id]
    assert row[1] == "1" and row[3] == "Ongoing"
    pid = row[2]
    # KIP-994's filter: open longer than a day is nobody here
    assert all(r[0] != txn_id for r in _ok(_cli(cluster, "list", "--duration-filter", "86400000"))[1:])

    described = _ok(_cli(cluster, "describe", "--transactional-id", txn_id))
    assert described[0][0] == "CoordinatorId" and described[0][-1] == "TopicPartitions"
    [d] = described[1:]
    assert d[:3] == ["1", txn_id, pid] and d[4] == "Ongoing" and d[-1] == f"{topic}-0"
    assert int(d[6]) > 0 and int(d[7]) >= 0  # start time and duration are numbers, not None

    producers = _ok(_cli(cluster, "describe-producers", "--topic", topic, "--partition", "0"))
    assert producers[0] == [
        "ProducerId",
        "ProducerEpoch",
        "LatestCoordinatorEpoch",
        "LastSequence",
        "LastTimestamp",
        "CurrentTransactionStartOffset",
    ]
    [p] = producers[1:]
    assert p[0] == pid and p[2] == "-1" and p[3] == "2" and p[5] == "0"
    # the flags after the command work too, and with --broker-id the leader answers the same
    again = _cli(cluster, "describe-producers", "--topic", topic, "--partition", "0", "--broker-id", "1")
    assert _ok(again)[1][0] == pid

    # the coordinator knows this transaction and this partition: not hanging, however old
    hanging = _ok(_cli(cluster, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0"))
    assert hanging == [
        [
            "Topic",
            "Partition",
            "ProducerId",
            "ProducerEpoch",
            "CoordinatorEpoch",
            "StartOffset",
            "LastTimestamp",
            "Duration(min)",
        ]
    ]

    # Kafka 4.1's forceTerminateTransaction fences the producer and aborts its transaction
    _ok(_cli(cluster, "forceTerminateTransaction", "--transactionalId", txn_id))
    [after] = _ok(_cli(cluster, "describe", "--transactional-id", txn_id))[1:]
    # its InitProducerId is retried until the abort is complete, then answered: Empty, a new epoch
    assert after[4] == "Empty" and int(after[3]) > int(d[3])
    assert _lso(cluster.bootstrap_servers, topic) == 4  # three aborted records and their marker
    with pytest.raises(KafkaException):
        producer.commit_transaction(30)
    del producer  # librdkafka would keep reconnecting after the cluster stops


def test_find_hanging_and_abort_let_read_committed_consumers_pass(cluster: LocalCluster) -> None:
    topic = _topic(cluster)
    bootstrap = cluster.bootstrap_servers
    txn_id = f"hang-{uuid.uuid4().hex[:8]}"
    pid, start = asyncio.run(
        asyncio.wait_for(_write_hanging_batch(bootstrap, topic, txn_id, ["hung-0", "hung-1"]), 60)
    )
    committed = Producer({"bootstrap.servers": bootstrap})
    for i in range(5):
        committed.produce(topic, value=f"after-{i}".encode(), partition=0)
    committed.flush(30)
    assert _lso(bootstrap, topic) == start  # the hanging transaction holds the LSO back

    for scope in (["--topic", topic], ["--topic", topic, "--partition", "0"], ["--broker-id", "1"]):
        rows = _ok(_cli(cluster, "find-hanging", *scope))
        [h] = [r for r in rows[1:] if r[0] == topic]
        assert h[:3] == [topic, "0", str(pid)] and h[4] == "-1" and h[5] == str(start)
        assert int(h[7]) >= HANGING_AGE_MS // 60_000
    # a longer bound than the transaction's age leaves it out
    assert _ok(_cli(cluster, "find-hanging", "--topic", topic, "--max-transaction-timeout", "600"))[1:] == []

    _ok(_cli(cluster, "abort", "--topic", topic, "--partition", "0", "--start-offset", str(start)))
    assert _lso(bootstrap, topic) == start + 8  # past the two hung records, the five after, the marker
    assert sorted(_read_committed(bootstrap, topic, 5)) == [f"after-{i}" for i in range(5)]
    assert _ok(_cli(cluster, "find-hanging", "--topic", topic))[1:] == []
    gone = _failed(_cli(cluster, "abort", "--topic", topic, "--partition", "0", "--start-offset", str(start)))
    assert f"Could not find any open transactions starting at offset {start}" in gone


def test_abort_by_producer_id_and_epoch(cluster: LocalCluster) -> None:
    topic = _topic(cluster)
    bootstrap = cluster.bootstrap_servers
    pid, start = asyncio.run(
        asyncio.wait_for(_write_hanging_batch(bootstrap, topic, f"hang-{uuid.uuid4().hex[:8]}", ["x"]), 60)
    )
    [p] = _ok(_cli(cluster, "describe-producers", "--topic", topic, "--partition", "0"))[1:]
    assert p[0] == str(pid) and p[5] == str(start)
    # the older tools' way: producer id, epoch and coordinator epoch (-1 as DescribeProducers shows it)
    aborted = _cli(cluster, "abort", "--topic", topic, "--partition", "0", "--producer-id", str(pid),
                   "--producer-epoch", p[1], "--coordinator-epoch", "-1")  # fmt: skip
    _ok(aborted)
    [p] = _ok(_cli(cluster, "describe-producers", "--topic", topic, "--partition", "0"))[1:]
    assert p[5] == "None"
    assert _lso(bootstrap, topic) == start + 2  # the record and the marker


def test_bad_input_gets_one_line_and_a_non_zero_exit(cluster: LocalCluster) -> None:
    unknown = _failed(_cli(cluster, "describe", "--transactional-id", f"nobody-{uuid.uuid4().hex[:6]}"))
    assert "Failed to describe transaction state of transactional-id" in unknown
    assert "TRANSACTIONAL_ID_NOT_FOUND" in unknown

    no_topic = _failed(_cli(cluster, "describe-producers", "--topic", "no-such-topic", "--partition", "0"))
    assert "UNKNOWN_TOPIC_OR_PARTITION" in no_topic
    assert "UNKNOWN_TOPIC_OR_PARTITION" in _failed(_cli(cluster, "find-hanging", "--topic", "no-such-topic"))
    no_partition = _cli(cluster, "abort", "--topic", "no-such-topic", "--partition", "0", "--producer-id",
                        "1",
                        "--producer-epoch", "0", "--coordinator-epoch", "0")  # fmt: skip
    assert "UNKNOWN_TOPIC_OR_PARTITION" in _failed(no_partition)

    # argparse's own errors: usage and exit 2
    assert "--transactional-id" in _failed(_cli(cluster, "describe"), code=2)
    assert "--partition" in _failed(_cli(cluster, "describe-producers", "--topic", "t"), code=2)
    assert "--topic" in _failed(_cli(cluster, "abort", "--partition", "0", "--start-offset", "1"), code=2)
    assert "invalid int value" in _failed(_cli(cluster, "abort", "--topic", "t", "--partition", "x"), code=2)
    assert "invalid choice" in _failed(_cli(cluster, "hang"), code=2)

    # Kafka's checks after parsing
    either = _failed(_cli(cluster, "abort", "--topic", "t", "--partition", "0"))
    assert "either with --start-offset" in either
    epoch = _failed(_cli(cluster, "abort", "--topic", "t", "--partition", "0", "--producer-id", "5"))
    assert "Missing required argument --producer-epoch" in epoch
    coordinator = _cli(
        cluster, "abort", "--topic", "t", "--partition", "0", "--producer-id", "5", "--producer-epoch", "0"
    )
    assert "Missing required argument --coordinator-epoch" in _failed(coordinator)
    assert "requires either --topic or --broker-id" in _failed(_cli(cluster, "find-hanging"))
    assert "requires --topic" in _failed(
        _cli(cluster, "find-hanging", "--broker-id", "1", "--partition", "0")
    )
    assert "not a live broker" in _failed(_cli(cluster, "find-hanging", "--broker-id", "99"))


def test_the_table_is_kafkas_layout() -> None:
    from zkafka.cli.transactions import LIST_HEADERS, format_table

    text = format_table(LIST_HEADERS, [("app-1", 1, 4000, "Ongoing"), ("a-much-longer-id", 12, 7, "Empty")])
    assert text.splitlines() == [
        "TransactionalId \tCoordinator\tProducerId\tTransactionState\t",
        "app-1           \t1          \t4000      \tOngoing         \t",
        "a-much-longer-id\t12         \t7         \tEmpty           \t",
    ]


@pytest.fixture(scope="module")
def three_brokers(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    overrides = {"transaction.partition.verification.enable": "false"}
    directory = tmp_path_factory.mktemp("txn-tool-3")
    with running_cluster(zookeeper_server, directory, brokers=3, overrides=overrides) as c:
        yield c


async def _placement(bootstraps: list[str], topic: str, partition: int) -> tuple[int, tuple[int, ...]]:
    """(leader, replicas) of one partition once every broker's Metadata names its leader.

    CreateTopics answers once the broker it went to knows the leaders (Kafka's
    DelayedCreatePartitions); the others learn them from the controller's UpdateMetadata a moment
    later, so a client that asks one of them first may not find the topic yet (Kafka's tests wait
    the same way: TestUtils.waitUntilMetadataIsPropagated)."""
    seen: set[tuple[int, tuple[int, ...]]] = set()
    for bootstrap in bootstraps:
        async with TransactionAdmin(bootstrap) as admin:
            while True:
                meta = await admin.cluster.refresh([topic])
                known = meta.topics.get(topic)
                if known is not None and partition in known.partitions:
                    p = known.partitions[partition]
                    if p.leader >= 0:
                        seen.add((p.leader, tuple(p.replicas)))
                        break
                await asyncio.sleep(0.1)
    [placement] = seen  # every broker tells the same
    return placement


def test_on_three_brokers_abort_reaches_the_leader_and_broker_id_scopes_the_search(
    three_brokers: LocalCluster,
) -> None:
    c = three_brokers
    topic = _topic(c, partitions=3, replication_factor=2)
    leader, replicas = asyncio.run(
        asyncio.wait_for(_placement([b.bootstrap for b in c.brokers.values()], topic, 1), 60)
    )
    [outsider] = [b for b in c.brokers if b not in replicas]
    via = c.brokers[next(b for b in c.brokers if b != leader)].bootstrap  # the tool starts elsewhere
    txn_id = f"hang-{uuid.uuid4().hex[:8]}"
    pid, start = asyncio.run(
        asyncio.wait_for(
            _write_hanging_batch(c.bootstrap_servers, topic, txn_id, ["a", "b"], partition=1), 60
        )
    )

    found = _ok(_cli(c, "find-hanging", "--broker-id", str(leader), bootstrap=via))
    assert [r[:3] for r in found[1:] if r[0] == topic] == [[topic, "1", str(pid)]]
    # a broker holding no replica of the partition is not searched for it
    elsewhere = _ok(_cli(c, "find-hanging", "--broker-id", str(outsider), bootstrap=via))
    assert all(r[:2] != [topic, "1"] for r in elsewhere[1:])

    _ok(_cli(c, "abort", "--topic", topic, "--partition", "1", "--start-offset", str(start), bootstrap=via))
    assert _lso(c.bootstrap_servers, topic, 1) == start + 3  # two records and the marker
    assert all(r[0] != topic for r in _ok(_cli(c, "find-hanging", "--topic", topic, bootstrap=via))[1:])

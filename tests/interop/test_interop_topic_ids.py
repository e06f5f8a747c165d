"""Topic ids (KIP-516) with the client that uses them: confluent-kafka 2.16 (librdkafka 2.16) asks
Metadata v12 and Fetch v13 when the broker offers them (checked from its own protocol debug log).

The case of the issue: a producer keeps running while its topic is deleted and re-created with
fewer partitions. From Metadata v10's topic ids librdkafka sees the topic change identity (it logs
the change): a message for a partition that no longer exists fails promptly with UNKNOWN_PARTITION
instead of waiting out message.timeout.ms, and the rest reach the new topic.

Observed limit of librdkafka 2.16 (not of the broker): it keeps the old topic's cached leader
epochs across the id change, so when the old topic's leaders had moved (epochs above the new
topic's 0) and a new partition's leader differs from the old one's, it ignores the new metadata as
stale and that partition's messages wait out message.timeout.ms, as they would against Kafka.
The old topic here keeps its first leaders. A consumer
then reads the new topic over Fetch v13 (asking by topic id).

A race of librdkafka 2.16 (not of the broker, Kafka meets it too): when the Metadata showing the
new topic, answered by one broker, is handled while the Produce for partition 3 is still in flight
to the other, librdkafka removes partition 3 first (its final PARTITION_LEAVE, in
rd_kafka_broker_op_serve, fails the 0 messages then queued with UNKNOWN_PARTITION), then the late
UNKNOWN_TOPIC_OR_PARTITION answer puts the batch back on the removed partition
(rd_kafka_handle_Produce_error -> rd_kafka_toppar_retry_msgq, which does not look at
RD_KAFKA_TOPPAR_F_REMOVE) and the partition's destructor fails it with _DESTROY
(rd_kafka_toppar_destroy_final). Just as prompt and for the same reason (the id change removed the
partition), so _DESTROY is accepted, but only when librdkafka's own log shows that order.

Also here: the authorized operations Metadata (v8+) and DescribeCluster answer without an
authorizer (tests/security/test_security_authorization.py has them with one), and what a broker
answers for a partition another broker holds (the producer above meets it when a re-created
partition's leader moved): NOT_LEADER_OR_FOLLOWER, as Kafka.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AclOperation, AdminClient, NewTopic

from zkafka.client.connection import BrokerConnection
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import (
    FetchRequest,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from zkafka.records.record import simple_batch
from zkafka.testing.cluster import running_cluster
from zkafka.testing.polling import wait_for

TOPIC = "recreated"


class _Versions(logging.Handler):
    """Collects the request versions librdkafka logs with `debug=protocol` ("Sent FetchRequest (v13,
    ...") and the topic-id changes it logs with `debug=metadata`; with `debug=topic,msg`, in their
    order, a partition's final leave ("no next broker, failing N message(s)") and its batches'
    errors, both logged by the thread of the broker the partition is on."""

    SENT = re.compile(r"Sent (\w+)Request \(v(\d+)")
    ID_CHANGE = re.compile(r"Topic (\S+) changed id from (\S+) to (\S+)")
    LEAVE = re.compile(r"Topic (\S+) \[(\d+)\]: no next broker, failing (\d+) message\(s\)")
    BATCH_ERROR = re.compile(r"(\S+) \[(\d+)\]: MessageSet with \d+ message\(s\) \(.*\) encountered error")

    def __init__(self) -> None:
        super().__init__()
        self.sent: dict[str, set[int]] = {}
        self.id_changes: list[tuple[str, str, str]] = []
        self.partition_events: list[tuple[str, str, int, int]] = []  # (event, topic, partition, queued)

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        for api, version in self.SENT.findall(message):
            self.sent.setdefault(api, set()).add(int(version))
        self.id_changes.extend(self.ID_CHANGE.findall(message))
        for topic, partition, queued in self.LEAVE.findall(message):
            self.partition_events.append(("leave", topic, int(partition), int(queued)))
        for topic, partition in self.BATCH_ERROR.findall(message):
            self.partition_events.append(("batch error", topic, int(partition), 0))

    def removed_under_batch_in_flight(self, topic: str, partition: int) -> bool:
        """The race of the module docstring: the partition's final leave found no message queued
        (its batch was in flight) and the batch's error was handled after it."""
        events = [(e, queued) for e, t, p, queued in self.partition_events if (t, p) == (topic, partition)]
        leave = next((i for i, (e, _) in enumerate(events) if e == "leave"), None)
        return (
            leave is not None
            and events[leave][1] == 0
            and any(e == "batch error" for e, _ in events[leave + 1 :])
        )


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("topic-ids"), brokers=2) as c:
        yield c


def _logger(handler: _Versions, name: str) -> logging.Logger:
    logger = logging.getLogger(f"zkafka.test.librdkafka.{name}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(handler)
    return logger


def _topic_id(admin: AdminClient, topic: str) -> uuid.UUID:
    description = admin.describe_topics(TopicCollection([topic]))[topic].result(timeout=30)
    bits64 = 2**64 - 1
    msb = description.topic_id.get_most_significant_bits() & bits64
    lsb = description.topic_id.get_least_significant_bits() & bits64
    return uuid.UUID(int=msb << 64 | lsb)


def _create(admin: AdminClient, partitions: int) -> bool:
    """Create the topic; False while the deleted one is still being removed."""
    try:
        admin.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC].result(timeout=60)
    except KafkaException as e:
        if e.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return False
        raise
    return True


def _librdkafka_text(topic_id: uuid.UUID) -> str:
    """How librdkafka prints a Uuid: standard base64 without padding."""
    return base64.b64encode(topic_id.bytes).decode().rstrip("=")


@pytest.mark.timeout(240)
def test_producer_and_consumer_across_a_topic_recreated_with_fewer_partitions(cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    assert _create(admin, 4)
    first_id = wait_for(lambda: _topic_id(admin, TOPIC), 30, "the topic's id")
    assert first_id.int != 0

    versions = _Versions()
    delivered: list[tuple[int, KafkaError | None]] = []

    def report(err: KafkaError | None, msg: object) -> None:
        delivered.append((msg.partition(), err))  # type: ignore[attr-defined]

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "debug": "protocol,metadata,topic,msg",
            "topic.metadata.refresh.interval.ms": 500,
            # A producer's Metadata may auto-create topics (librdkafka's default, as the broker's
            # auto.create.topics.enable): its refresh would re-create the deleted topic with
            # num.partitions before the test does, as it would on Kafka.
            "allow.auto.create.topics": False,
            "message.timeout.ms": 120000,
            "logger": _logger(versions, "producer"),
        }
    )
    for p in range(4):
        producer.produce(TOPIC, f"old-{p}".encode(), partition=p, on_delivery=report)
    assert producer.flush(30) == 0
    assert sorted(delivered) == [(p, None) for p in range(4)]

    admin.delete_topics([TOPIC])[TOPIC].result(timeout=60)
    wait_for(lambda: _create(admin, 2), 60, "the topic re-created")
    second_id = wait_for(lambda: _topic_id(admin, TOPIC), 30, "the new topic's id")
    assert second_id not in (first_id, uuid.UUID(int=0))

    delivered.clear()
    started = time.monotonic()
    try:
        producer.produce(TOPIC, b"gone", partition=3, on_delivery=report)
    except KafkaException as e:  # the producer has already seen the new topic
        assert e.args[0].code() == KafkaError._UNKNOWN_PARTITION
        delivered.append((3, e.args[0]))
    for p in range(2):
        producer.produce(TOPIC, f"new-{p}".encode(), partition=p, on_delivery=report)
    assert producer.flush(90) == 0
    assert time.monotonic() - started < 90  # well before message.timeout.ms: nothing waited it out
    by_partition = dict(delivered)
    assert by_partition[0] is None and by_partition[1] is None, by_partition
    gone = by_partition[3]
    assert gone is not None, by_partition
    if gone.code() == KafkaError._DESTROY:  # the librdkafka race of the module docstring, and only it
        assert versions.removed_under_batch_in_flight(TOPIC, 3), versions.partition_events
    else:
        assert gone.code() == KafkaError._UNKNOWN_PARTITION, gone

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "topic-ids",
            "debug": "protocol",
            "logger": _logger(versions, "consumer"),
        }
    )
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(2)])
        values: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(values) < 2 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                values.append(msg.value())
        assert sorted(values) == [b"new-0", b"new-1"]  # the old topic's records went with it
    finally:
        consumer.close()
    # librdkafka took the new topic for what it is: it logged the id change from the broker's ids
    assert (TOPIC, _librdkafka_text(first_id), _librdkafka_text(second_id)) in versions.id_changes
    assert 12 in versions.sent.get("Metadata", set()), versions.sent
    assert 13 in versions.sent.get("Fetch", set()), versions.sent


TOPIC_OPERATIONS = {
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.CREATE,
    AclOperation.DESCRIBE,
    AclOperation.DELETE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
}
CLUSTER_OPERATIONS = {
    AclOperation.CREATE,
    AclOperation.CLUSTER_ACTION,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
    AclOperation.IDEMPOTENT_WRITE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
}


@pytest.mark.timeout(120)
def test_authorized_operations_without_an_authorizer_are_all_supported_ones(cluster: LocalCluster) -> None:
    """Kafka without an authorizer answers every operation the resource type supports."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    topic = "ops-everything"
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=60)
    described = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)
    assert set(described[topic].result(timeout=30).authorized_operations) == TOPIC_OPERATIONS
    plain = admin.describe_topics(TopicCollection([topic]))[topic].result(timeout=30)
    assert not plain.authorized_operations  # not asked: INT32_MIN on the wire
    whole = admin.describe_cluster(include_authorized_operations=True).result(timeout=30)
    assert set(whole.authorized_operations) == CLUSTER_OPERATIONS


@pytest.mark.timeout(120)
def test_metadata_and_fetch_by_topic_id_on_the_wire(cluster: LocalCluster) -> None:
    """The corners librdkafka does not reach: Metadata v12 asking by id (a known and an unknown
    one), an id below v12, and Fetch v13 for an id no topic has."""
    topic = "by-id"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(timeout=60)
    topic_id = wait_for(lambda: _topic_id(admin, topic), 30, "the topic's id")
    unknown = uuid.uuid4()
    Topic = MetadataRequest.MetadataRequestTopic

    async def ask() -> tuple[MetadataResponse, MetadataResponse, FetchResponse]:
        conn = await BrokerConnection.open("127.0.0.1", cluster.brokers[1].port)
        try:
            by_id = MetadataRequest(
                topics=[Topic(topic_id=topic_id, name=None), Topic(topic_id=unknown, name=None)]
            )
            v12 = await conn.send(by_id, version=12)
            v11 = await conn.send(MetadataRequest(topics=[Topic(topic_id=topic_id, name=topic)]), version=11)
            fetch = FetchRequest(
                max_wait_ms=0,
                min_bytes=1,
                topics=[
                    FetchRequest.FetchTopic(
                        topic_id=unknown,
                        partitions=[
                            FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1024)
                        ],
                    )
                ],
            )
            f13 = await conn.send(fetch, version=13)
            return v12, v11, f13  # type: ignore[return-value]
        finally:
            conn.close()

    v12, v11, f13 = asyncio.run(ask())
    answers = {t.topic_id: t for t in v12.topics}
    assert answers[topic_id].name == topic and answers[topic_id].error_code == 0
    assert len(answers[topic_id].partitions) == 2
    assert answers[unknown].name is None and answers[unknown].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    assert [t.error_code for t in v11.topics] == [ErrorCode.INVALID_REQUEST]
    [answer] = f13.responses
    assert answer.topic_id == unknown
    assert [p.error_code for p in answer.partitions] == [ErrorCode.UNKNOWN_TOPIC_ID]


@pytest.mark.timeout(120)
def test_a_partition_held_by_another_broker_is_not_led_here_rather_than_unknown(
    cluster: LocalCluster,
) -> None:
    """What the producer of the re-created topic meets when its leaders moved: Produce and Fetch
    sent to a broker that holds no replica of a partition the cluster has are NOT_LEADER_OR_FOLLOWER
    (Kafka's ReplicaManager.getPartitionOrError), which sends clients to refresh their metadata;
    only a partition nobody has is UNKNOWN_TOPIC_OR_PARTITION."""
    topic = "held-elsewhere"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[[1]])])[topic].result(timeout=60)
    here = cluster.brokers[2].port  # holds nothing of the topic

    async def listed() -> bool:
        conn = await BrokerConnection.open("127.0.0.1", here)
        try:
            md = await conn.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]))
            return [(p.partition_index, p.leader_id) for p in md.topics[0].partitions] == [(0, 1)]  # type: ignore[attr-defined]
        finally:
            conn.close()

    wait_for(lambda: asyncio.run(listed()), 30, "broker 2 listing the partition on broker 1")
    records = simple_batch([(None, b"misdirected")], timestamp=int(time.time() * 1000))

    async def ask() -> tuple[ProduceResponse, FetchResponse]:
        conn = await BrokerConnection.open("127.0.0.1", here)
        try:
            produce = ProduceRequest(
                acks=1,
                timeout_ms=10_000,
                topic_data=[
                    ProduceRequest.TopicProduceData(
                        name=topic,
                        partition_data=[
                            ProduceRequest.PartitionProduceData(index=i, records=records) for i in (0, 1)
                        ],
                    )
                ],
            )
            fetch = FetchRequest(
                max_wait_ms=0,
                min_bytes=1,
                topics=[
                    FetchRequest.FetchTopic(
                        topic=topic,
                        partitions=[
                            FetchRequest.FetchPartition(partition=i, fetch_offset=0, partition_max_bytes=1024)
                            for i in (0, 1)
                        ],
                    )
                ],
            )
            return await conn.send(produce, version=8), await conn.send(fetch, version=11)  # type: ignore[return-value]
        finally:
            conn.close()

    produced, fetched = asyncio.run(ask())
    [p] = produced.responses
    assert [(r.index, r.error_code) for r in p.partition_responses] == [
        (0, ErrorCode.NOT_LEADER_OR_FOLLOWER),
        (1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    [f] = fetched.responses
    assert [(r.partition_index, r.error_code) for r in f.partitions] == [
        (0, ErrorCode.NOT_LEADER_OR_FOLLOWER),
        (1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]

"""Requests are bounded before they allocate (issue 11, item 3), against one real broker process.

CreateTopics and CreatePartitions carry counts a client chooses; the broker checks them against
KIP-578's `max.partitions` / `max.broker.partitions` before computing any replica assignment, per
topic, so 20,000,000 partitions are refused at once (POLICY_VIOLATION) while the request's other
topics go through, the broker's memory stays where it was and Metadata keeps answering. Requests
are written to a raw socket with zkafka's codec so the error codes are Kafka's numbers; one
independent client (kafka-python's admin) shows the refusal reaches a real client cleanly.

The broker runs with `max.broker.partitions=60` (one broker: its replicas are the cluster's
partitions) so the per-broker limit can be reached with a handful of partitions; `max.partitions`
keeps Kafka's default, 500,000, which 20,000,000 exceeds.
"""

from __future__ import annotations

import itertools
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol import Message, RequestHeader, decode_response, encode_request
from zkafka.protocol.messages import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    MetadataRequest,
    MetadataResponse,
)
from zkafka.testing.cluster import running_cluster
from zkafka.zk.client import KafkaZkClient

# Kafka's error codes
NONE = 0
INVALID_REQUEST = 42
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
POLICY_VIOLATION = 44
TOPIC_ALREADY_EXISTS = 36
INVALID_TOPIC_EXCEPTION = 17
INVALID_CONFIG = 40

CREATE_TOPICS_V = 4  # the newest the broker serves
CREATE_TOPICS_OLD_V = 1
CREATE_PARTITIONS_V = 1
METADATA_V = 8

HUGE = 20_000_000
MAX_BROKER_PARTITIONS = 60
# What the broker may grow by while refusing a request. Computing the refused assignment would
# cost gigabytes (2.8 GB measured for 20M partitions); decoding and answering costs nothing like
# a megabyte, the rest is allocator noise.
RSS_SLACK_KB = 32 * 1024

_ids = itertools.count(1)


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(
        zookeeper_server,
        tmp_path_factory.mktemp("request-bounds"),
        brokers=1,
        overrides={
            "auto.create.topics.enable": "false",
            "max.broker.partitions": str(MAX_BROKER_PARTITIONS),
        },
    ) as c:
        yield c


@pytest.fixture
def wire(cluster: LocalCluster) -> Iterator[Wire]:
    with Wire(cluster.brokers[1].port) as w:
        yield w


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for pid {pid}")


class Wire:
    """One socket; requests encoded by zkafka's codec, frames read by hand. The socket timeout
    only keeps a hung broker from hanging the test."""

    def __init__(self, port: int, timeout: float = 30.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def _exactly(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError(f"connection closed after {len(data)} of {n} bytes")
            data += chunk
        return bytes(data)

    def call(self, request: Message, version: int) -> Message:
        cid = next(_ids)
        header = RequestHeader(type(request).API_KEY, version, cid, "request-bounds-test")
        self.sock.sendall(encode_request(header, request))
        (size,) = struct.unpack(">i", self._exactly(4))
        response_header, response = decode_response(type(request).API_KEY, version, self._exactly(size))
        assert response_header.correlation_id == cid
        return response


def topic(name: str, partitions: int, rf: int = 1, **kw: object) -> CreateTopicsRequest.CreatableTopic:
    return CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf, **kw
    )


def create_topics(
    wire: Wire,
    *topics: CreateTopicsRequest.CreatableTopic,
    validate_only: bool,
    version: int = CREATE_TOPICS_V,
) -> dict[str, CreateTopicsResponse.CreatableTopicResult]:
    request = CreateTopicsRequest(topics=list(topics), timeout_ms=15000, validate_only=validate_only)
    response = wire.call(request, version)
    assert isinstance(response, CreateTopicsResponse)
    return {r.name: r for r in response.topics}


def create_partitions(
    wire: Wire, counts: dict[str, int], *, validate_only: bool
) -> dict[str, CreatePartitionsResponse.CreatePartitionsTopicResult]:
    request = CreatePartitionsRequest(
        topics=[CreatePartitionsRequest.CreatePartitionsTopic(name=n, count=c) for n, c in counts.items()],
        timeout_ms=15000,
        validate_only=validate_only,
    )
    response = wire.call(request, CREATE_PARTITIONS_V)
    assert isinstance(response, CreatePartitionsResponse)
    return {r.name: r for r in response.results}


def partition_counts(wire: Wire) -> dict[str, int]:
    """Every topic's partition count, from Metadata (which must still answer)."""
    response = wire.call(MetadataRequest(topics=None), METADATA_V)
    assert isinstance(response, MetadataResponse)
    return {t.name: len(t.partitions) for t in response.topics}


# -- the findings of issue 11 ---------------------------------------------------------------------


@pytest.mark.parametrize("validate_only", [True, False], ids=["validate-only", "create"])
def test_twenty_million_partitions_refused_at_once_other_topic_created(
    cluster: LocalCluster, wire: Wire, validate_only: bool
) -> None:
    pid = cluster.brokers[1].pid
    suffix = "v" if validate_only else "c"
    before = rss_kb(pid)
    results = create_topics(
        wire,
        topic(f"huge-{suffix}", HUGE),
        topic(f"fine-{suffix}", 2),
        validate_only=validate_only,
    )
    after = rss_kb(pid)

    huge = results[f"huge-{suffix}"]
    assert huge.error_code == POLICY_VIOLATION
    assert huge.error_message is not None and "max.partitions=500000" in huge.error_message
    fine = results[f"fine-{suffix}"]
    assert fine.error_code == NONE
    assert after - before < RSS_SLACK_KB, f"broker grew from {before} kB to {after} kB"

    counts = partition_counts(wire)
    assert f"huge-{suffix}" not in counts
    if validate_only:
        assert f"fine-{suffix}" not in counts
    else:
        assert counts[f"fine-{suffix}"] == 2


def test_create_partitions_to_twenty_million_refused_other_topic_grows(
    cluster: LocalCluster, wire: Wire
) -> None:
    created = create_topics(wire, topic("grow-a", 1), topic("grow-b", 1), validate_only=False)
    assert [r.error_code for r in created.values()] == [NONE, NONE]
    pid = cluster.brokers[1].pid
    for validate_only in (True, False):
        before = rss_kb(pid)
        results = create_partitions(wire, {"grow-a": HUGE, "grow-b": 2}, validate_only=validate_only)
        after = rss_kb(pid)
        assert results["grow-a"].error_code == POLICY_VIOLATION
        assert "max.partitions" in (results["grow-a"].error_message or "")
        assert results["grow-b"].error_code == NONE
        assert after - before < RSS_SLACK_KB, f"broker grew from {before} kB to {after} kB"
    counts = partition_counts(wire)
    assert counts["grow-a"] == 1
    assert counts["grow-b"] == 2


def test_largest_counts_and_classic_encoding(wire: Wire) -> None:
    """int32's maximum, through the classic (v1) encoding too."""
    for version in (CREATE_TOPICS_OLD_V, CREATE_TOPICS_V):
        results = create_topics(
            wire, topic(f"max-int-{version}", 2**31 - 1), validate_only=True, version=version
        )
        assert results[f"max-int-{version}"].error_code == POLICY_VIOLATION


# -- the other per-topic answers ------------------------------------------------------------------


def test_bad_counts_each_get_their_own_error(wire: Wire) -> None:
    results = create_topics(
        wire,
        topic("zero-partitions", 0),
        topic("negative-partitions", -7),
        topic("zero-rf", 1, rf=0),
        topic("rf-above-brokers", 1, rf=3),
        topic("huge-and-rf-above-brokers", HUGE, rf=3),
        topic("ok-among-bad", 1),
        validate_only=True,
    )
    assert {n: r.error_code for n, r in results.items()} == {
        "zero-partitions": INVALID_PARTITIONS,
        "negative-partitions": INVALID_PARTITIONS,
        "zero-rf": INVALID_REPLICATION_FACTOR,
        "rf-above-brokers": INVALID_REPLICATION_FACTOR,
        # the replication factor is checked first, as it is without limits
        "huge-and-rf-above-brokers": INVALID_REPLICATION_FACTOR,
        "ok-among-bad": NONE,
    }
    assert all(r.error_message for n, r in results.items() if n != "ok-among-bad")


def test_per_broker_limit_counts_the_cluster_and_the_request(wire: Wire) -> None:
    """max.broker.partitions: what the broker holds, plus earlier topics of the same request."""
    room = MAX_BROKER_PARTITIONS - sum(partition_counts(wire).values())
    assert room > 4, "earlier tests used up the room this test needs"
    first = room // 2
    results = create_topics(
        wire,
        topic("broker-limit-1", first),
        topic("broker-limit-2", room - first + 1),  # one above what is left after the first
        topic("broker-limit-3", room - first),  # exactly what is left
        validate_only=True,
    )
    assert results["broker-limit-1"].error_code == NONE
    assert results["broker-limit-2"].error_code == POLICY_VIOLATION
    assert f"max.broker.partitions={MAX_BROKER_PARTITIONS}" in (results["broker-limit-2"].error_message or "")
    assert results["broker-limit-3"].error_code == NONE


def test_manual_assignments_are_bounded(wire: Wire) -> None:
    def assigned(
        name: str, lists: list[list[int]], indexes: list[int] | None = None
    ) -> CreateTopicsRequest.CreatableTopic:
        return topic(
            name,
            -1,
            rf=-1,
            assignments=[
                CreateTopicsRequest.CreatableReplicaAssignment(partition_index=i, broker_ids=b)
                for i, b in zip(indexes or range(len(lists)), lists, strict=True)
            ],
        )

    results = create_topics(
        wire,
        # more partitions than max.partitions allows: refused on the count, before the lists
        # are copied, sorted or checked
        assigned("many-assignments", [[1]] * 600_000),
        # one partition naming a million replicas
        assigned("long-replica-list", [[1] * 1_000_000]),
        assigned("twice-the-same-partition", [[1], [1]], indexes=[0, 0]),
        assigned("manual-ok", [[1], [1]]),
        validate_only=True,
    )
    assert {n: r.error_code for n, r in results.items()} == {
        "many-assignments": POLICY_VIOLATION,
        "long-replica-list": INVALID_REPLICA_ASSIGNMENT,
        "twice-the-same-partition": INVALID_REPLICA_ASSIGNMENT,
        "manual-ok": NONE,
    }
    assert "" not in partition_counts(wire)  # and Metadata still answers


def test_one_request_creates_many_topics_each_with_its_own_outcome(cluster: LocalCluster, wire: Wire) -> None:
    """The topics of a CreateTopics are validated against one read of ZooKeeper and written
    together; each still gets its own answer, and a later topic sees the earlier ones as
    created (Kafka creates them one after the other)."""
    assert create_topics(wire, topic("batch-taken", 1), validate_only=False)["batch-taken"].error_code == NONE
    config = CreateTopicsRequest.CreatableTopicConfig
    named = {
        "batch-ok-1": topic("batch-ok-1", 1, configs=[config(name="retention.ms", value="123456")]),
        "batch-taken": topic("batch-taken", 1),
        "batch.dot": topic("batch.dot", 1),
        "batch_dot": topic("batch_dot", 1),  # collides with the topic before it
        "bad name!": topic("bad name!", 1),
        "batch-bad-config": topic("batch-bad-config", 1, configs=[config(name="retention.ms", value="soon")]),
        "batch-ok-2": topic("batch-ok-2", 2),
    }
    # validate_only checks each topic against ZooKeeper alone, as Kafka does: no collision
    checked = create_topics(wire, named["batch.dot"], named["batch_dot"], validate_only=True)
    assert {n: r.error_code for n, r in checked.items()} == {"batch.dot": NONE, "batch_dot": NONE}
    results = create_topics(wire, *named.values(), validate_only=False)
    assert {n: r.error_code for n, r in results.items()} == {
        "batch-ok-1": NONE,
        "batch-taken": TOPIC_ALREADY_EXISTS,
        "batch.dot": NONE,
        "batch_dot": INVALID_TOPIC_EXCEPTION,
        "bad name!": INVALID_TOPIC_EXCEPTION,
        "batch-bad-config": INVALID_CONFIG,
        "batch-ok-2": NONE,
    }
    assert "collides" in (results["batch_dot"].error_message or "")
    counts = partition_counts(wire)
    assert {
        n: counts.get(n) for n in ("batch-ok-1", "batch.dot", "batch-ok-2", "batch_dot", "batch-bad-config")
    } == {
        "batch-ok-1": 1,
        "batch.dot": 1,
        "batch-ok-2": 2,
        "batch_dot": None,
        "batch-bad-config": None,
    }
    with KafkaZkClient(cluster.zookeeper_connect) as zk:
        assert zk.get_entity_config("topics", "batch-ok-1") == {"retention.ms": "123456"}
        assert zk.exists("/config/topics/batch-bad-config") is None  # refused before any write


def test_duplicate_topic_names_in_create_partitions(wire: Wire) -> None:
    create_topics(wire, topic("dup-grow", 1), validate_only=False)
    request = CreatePartitionsRequest(
        topics=[CreatePartitionsRequest.CreatePartitionsTopic(name="dup-grow", count=2)] * 2,
        timeout_ms=15000,
        validate_only=True,
    )
    response = wire.call(request, CREATE_PARTITIONS_V)
    assert isinstance(response, CreatePartitionsResponse)
    assert [r.error_code for r in response.results] == [INVALID_REQUEST, INVALID_REQUEST]


# -- hostile lengths on the wire -----------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        # CreateTopics v4 (classic): topics count 2^31-1, ten bytes left
        struct.pack(">hhi", 19, 4, 77) + b"\xff\xff" + struct.pack(">i", 2**31 - 1) + bytes(10),
        # AlterPartitionReassignments v0 (flexible; header v2): timeout_ms, then a topics
        # compact count of 2^32-2
        struct.pack(">hhi", 45, 0, 77)
        + b"\xff\xff\x00"
        + struct.pack(">i", 1000)
        + b"\xff\xff\xff\xff\x0f"
        + bytes(10),
        # the same request's header tag section claiming 2^31 tagged fields
        struct.pack(">hhi", 45, 0, 77) + b"\xff\xff" + b"\x80\x80\x80\x80\x08" + bytes(10),
        # a client id claiming more bytes than the frame has
        struct.pack(">hhi", 3, 8, 77) + struct.pack(">h", 2**15 - 1) + b"abc",
    ],
    ids=["classic-array", "compact-array", "header-tags", "string"],
)
def test_hostile_lengths_close_the_connection_at_once(cluster: LocalCluster, body: bytes) -> None:
    """A malformed request closes its connection (the dispatcher's answer to any bad request);
    the broker allocates nothing for the claimed length and goes on serving."""
    pid = cluster.brokers[1].pid
    before = rss_kb(pid)
    with Wire(cluster.brokers[1].port) as w:
        w.sock.sendall(struct.pack(">i", len(body)) + body)
        assert w.sock.recv(4) == b""  # closed, no answer
    with Wire(cluster.brokers[1].port) as w:
        assert partition_counts(w) is not None
    assert rss_kb(pid) - before < RSS_SLACK_KB


# -- an independent client ------------------------------------------------------------------------


def test_kafka_python_admin_sees_policy_violation(cluster: LocalCluster) -> None:
    from kafka import KafkaAdminClient
    from kafka.errors import PolicyViolationError

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=30000)
    try:
        with pytest.raises(PolicyViolationError) as info:
            admin.create_topics(
                {"kafka-python-huge": {"num_partitions": HUGE, "replication_factor": 1}}, validate_only=True
            )
        assert "max.partitions" in str(info.value)
        # the client and the broker are both still fine: the next request succeeds
        response = admin.create_topics(
            {"kafka-python-fine": {"num_partitions": 1, "replication_factor": 1}}, validate_only=True
        )
        assert response is not None
    finally:
        admin.close()

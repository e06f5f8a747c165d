"""A real broker process against real clients: the basics of issue 3."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

import pytest

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("one-broker"), brokers=1) as c:
        yield c


def bootstrap(cluster: LocalCluster) -> str:
    return cluster.bootstrap_servers


def test_kafka_python_produce_and_consume(cluster: LocalCluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(bootstrap_servers=bootstrap(cluster))  # idempotent by default in 3.x
    futures = [producer.send("kp-topic", key=f"k{i}".encode(), value=f"v{i}".encode()) for i in range(500)]
    producer.flush(30)
    offsets = [f.get(10).offset for f in futures]
    assert sorted(offsets) == list(range(500))
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=bootstrap(cluster), consumer_timeout_ms=5000)
    tp = TopicPartition("kp-topic", 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 500 and time.monotonic() < deadline:
        for records in consumer.poll(1000).values():
            got.extend(records)
    consumer.close()
    assert [r.value for r in got] == [f"v{i}".encode() for i in range(500)]
    assert [r.offset for r in got] == list(range(500))


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def test_garbage_and_oversized_frames_close_only_that_connection(cluster: LocalCluster) -> None:
    port = cluster.brokers[1].port
    bad_frames = [
        _frame(b"\x00"),  # shorter than a header
        _frame(b"\x7f\x7f\x00\x00\x00\x00\x00\x01"),  # unknown api key
        _frame(struct.pack(">hhi", 3, 99, 7)),  # Metadata v99
        _frame(struct.pack(">hhih", 3, 1, 7, 5) + b"ab"),  # client id longer than the frame
        struct.pack(">i", 1 << 30),  # larger than socket.request.max.bytes
        struct.pack(">i", -5),
    ]
    for raw in bad_frames:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(raw)
            s.settimeout(5)
            assert s.recv(100) == b""  # closed by the broker, nothing answered
    # ... and the broker still serves everybody else
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap(cluster))
    assert isinstance(admin.list_topics(), list)
    admin.close()


def test_api_versions_probe_above_our_max_gets_v0_answer(cluster: LocalCluster) -> None:
    port = cluster.brokers[1].port
    # ApiVersions v3 as librdkafka sends it: request header v2, compact strings, tagged fields
    body = (
        struct.pack(">hhi", 18, 3, 42)
        + struct.pack(">h", 4)
        + b"test"
        + b"\x00"
        + b"\x05zkaf"
        + b"\x021"
        + b"\x00"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(_frame(body))
        size = struct.unpack(">i", s.recv(4))[0]
        data = b""
        while len(data) < size:
            data += s.recv(size - len(data))
    correlation, error, count = struct.unpack_from(">ihi", data)
    assert (correlation, error) == (42, 35)
    keys = {
        struct.unpack_from(">hhh", data, 10 + 6 * i)[0]: struct.unpack_from(">hhh", data, 10 + 6 * i)[1:]
        for i in range(count)
    }
    assert keys[18] == (0, 2) and keys[0] == (0, 8)

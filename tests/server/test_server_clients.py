"""Issue 3's real-client matrix against one real broker process: kcat (librdkafka 2.0.2),
confluent-kafka (librdkafka 2.16), kafka-python, aiokafka."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster

N = 10_000


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("clients"), brokers=1) as c:
        yield c


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def kcat(*args: str, stdin: str | None = None, timeout: float = 60) -> str:
    out = subprocess.run(
        ["kcat", *args], input=stdin, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_kcat_produce_consume_10k_with_keys_headers_and_compression(
    cluster: LocalCluster, codec: str
) -> None:
    b = cluster.bootstrap_servers
    topic = topic_name(f"kcat-{codec}")
    lines = "".join(f"key{i}:value-{i}-{'x' * (i % 50)}\n" for i in range(N))
    kcat("-P", "-b", b, "-t", topic, "-z", codec, "-K:", "-H", "trace=abc", "-H", "n=1", stdin=lines)
    out = kcat("-C", "-b", b, "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k|%s|%h|%o\n", timeout=120)
    rows = out.splitlines()
    assert len(rows) == N
    for i, row in enumerate(rows):
        k, v, h, o = row.split("|")
        assert (k, v, o) == (f"key{i}", f"value-{i}-{'x' * (i % 50)}", str(i))
        assert h == "trace=abc,n=1"
    # the broker stored kcat's compressed batches as they came: they carry the codec (librdkafka
    # sends a batch uncompressed when compressing would not make it smaller, so 0 may appear too)
    from zkafka.records.batch import iter_headers

    log_dir = Path(cluster.brokers[1].directory) / "logs" / f"{topic}-0"
    stored = [h for seg in sorted(log_dir.glob("*.log")) for h in iter_headers(seg.read_bytes())]
    codes = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
    assert {h.compression for h in stored} <= {0, codes[codec]}
    compressed = sum(h.records_count for h in stored if h.compression == codes[codec])
    assert compressed > N // 2, [(h.compression, h.records_count) for h in stored]
    assert sum(h.records_count for h in stored) == N


def test_kcat_metadata_and_offsets_for_times(cluster: LocalCluster) -> None:
    b = cluster.bootstrap_servers
    topic = topic_name("kcat-q")
    kcat("-P", "-b", b, "-t", topic, stdin="a\nb\nc\n")
    meta = json.loads(kcat("-L", "-b", b, "-t", topic, "-J"))
    assert [br["id"] for br in meta["brokers"]] == [1]
    [t] = meta["topics"]
    assert t["topic"] == topic and t["partitions"][0]["leader"] == 1
    before = int(time.time() * 1000) - 60_000
    out = kcat("-Q", "-b", b, "-t", f"{topic}:0:{before}")
    assert "offset 0" in out
    future = int(time.time() * 1000) + 3_600_000
    out = kcat("-Q", "-b", b, "-t", f"{topic}:0:{future}")
    assert "offset -1" in out  # no record at or after that time: Kafka answers -1


def test_confluent_kafka_idempotent_acks_all_and_assign_consumer(cluster: LocalCluster) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic = topic_name("ck")
    p = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
        }
    )
    delivered: list[int] = []

    def on_delivery(err, msg) -> None:  # type: ignore[no-untyped-def]
        assert err is None, err
        delivered.append(msg.offset())

    for i in range(N):
        p.produce(
            topic, key=str(i).encode(), value=f"v{i}".encode(), headers=[("h", b"1")], on_delivery=on_delivery
        )
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(60) == 0
    assert sorted(delivered) == list(range(N))

    c = Consumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "unused", "enable.auto.commit": False}
    )
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < N and time.monotonic() < deadline:
        for m in c.consume(1000, timeout=1):
            assert m.error() is None, m.error()
            got.append(m)
    c.close()
    assert [m.offset() for m in got] == list(range(N))
    assert [m.value() for m in got[:3]] == [b"v0", b"v1", b"v2"]
    assert got[0].headers() == [("h", b"1")]


def test_aiokafka_producer(cluster: LocalCluster) -> None:
    from aiokafka import AIOKafkaProducer
    from kafka import KafkaConsumer, TopicPartition

    topic = topic_name("aio")

    async def produce() -> list[int]:
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, enable_idempotence=True)
        await producer.start()
        try:
            futs = [await producer.send(topic, f"m{i}".encode(), key=b"k") for i in range(1000)]
            return [(await f).offset for f in futs]
        finally:
            await producer.stop()

    assert asyncio.run(produce()) == list(range(1000))
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    values = []
    deadline = time.monotonic() + 30
    while len(values) < 1000 and time.monotonic() < deadline:
        for recs in consumer.poll(1000).values():
            values.extend(r.value for r in recs)
    consumer.close()
    assert values == [f"m{i}".encode() for i in range(1000)]


def test_confluent_admin_create_describe_delete(cluster: LocalCluster) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    topic = topic_name("admin")
    admin.create_topics(
        [NewTopic(topic, num_partitions=3, replication_factor=1, config={"retention.ms": "1234"})]
    )[topic].result(30)
    md = admin.list_topics(topic, timeout=10)
    assert len(md.topics[topic].partitions) == 3
    # an existing topic, an invalid name, a bad config: Kafka's error codes
    futs = admin.create_topics(
        [
            NewTopic(topic, 1, 1),
            NewTopic("bad/name", 1, 1),
            NewTopic(topic_name("cfg"), 1, 1, config={"no.such": "1"}),
        ]
    )
    errors = {}
    for name, f in futs.items():
        with pytest.raises(Exception) as e:
            f.result(30)
        errors[name] = e.value.args[0].code()
    assert errors.pop(topic) == 36  # TOPIC_ALREADY_EXISTS
    assert errors.pop("bad/name") == 17  # INVALID_TOPIC_EXCEPTION (librdkafka: TOPIC_EXCEPTION)
    assert list(errors.values()) == [40]  # INVALID_CONFIG
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = admin.describe_configs([res])[res].result(30)
    assert configs["retention.ms"].value == "1234"
    assert configs["segment.bytes"].value == "1073741824"
    admin.create_partitions([NewPartitions(topic, 5)])[topic].result(30)
    assert len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == 5
    admin.delete_topics([topic])[topic].result(30)
    deadline = time.monotonic() + 30
    while topic in admin.list_topics(timeout=10).topics and time.monotonic() < deadline:
        time.sleep(0.2)
    assert topic not in admin.list_topics(timeout=10).topics

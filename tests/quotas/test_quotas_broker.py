"""Client quotas enforced by a real broker process on real clients (issue 16, quotas).

Quotas are set the way an operator does, with `zkafka configs` processes (over ZooKeeper and over
the brokers' AlterClientQuotas), and read back with kazoo, an independent ZooKeeper client. The
clients are confluent-kafka's (librdkafka): a producer and a consumer held to 1 MB/s, whose measured
rates must land near it (loosely: 0.5x to 1.6x, never a tight timing) and who must see KIP-219
throttle times (librdkafka's `throttle_cb`).

The broker measures over 3 windows of 1 s (`quota.window.num=3`) instead of Kafka's 11: a client's
first burst may reach what the bound allows over the windows (Kafka's Rate), so fewer windows let a
10 s measurement start after a short warm-up.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from kazoo.client import KazooClient
from prometheus_client.parser import text_string_to_metric_families

from zkafka.client.admin import QuotaFilter
from zkafka.client.connection import BrokerConnection
from zkafka.client.sync import SyncAdminClient
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.messages import MetadataRequest
from zkafka.testing.cluster import running_cluster
from zkafka.testing.polling import wait_for

pytestmark = pytest.mark.timeout(240)

MB = 1024 * 1024
WARM_UP_S = 3.0
MEASURE_S = 10.0
VALUE = b"x" * 10_000


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    overrides = {"quota.window.num": "3", "quota.window.size.seconds": "1"}
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("quotas"), 1, overrides) as c:
        yield c


@pytest.fixture(scope="module")
def kazoo(cluster: LocalCluster) -> Iterator[KazooClient]:
    zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
    zk.start(timeout=15)
    try:
        yield zk
    finally:
        zk.stop()
        zk.close()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def configs(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", "configs", *args],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def broker_log(cluster: LocalCluster) -> str:
    return Path(cluster.brokers[1].log_path).read_text(errors="replace")


def applied(cluster: LocalCluster, entity_path: str, count: int = 1) -> None:
    """Wait until the broker has re-read `entity_path` after a change notification `count` times."""
    line = f"applied quota change of {entity_path}\n"
    wait_for(lambda: broker_log(cluster).count(line) >= count, timeout=30, what=line.strip())


def set_client_quota(cluster: LocalCluster, client_id: str, quotas: str) -> None:
    before = broker_log(cluster).count(f"applied quota change of clients/{client_id}\n")
    configs("--zookeeper", cluster.zookeeper_connect, "--entity-type", "clients", "--entity-name", client_id,
            "--alter", "--add-config", quotas)  # fmt: skip
    applied(cluster, f"clients/{client_id}", before + 1)


def create_topic(cluster: LocalCluster, topic: str) -> None:
    with SyncAdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topic(topic, 1, 1)


class Throttles:
    def __init__(self) -> None:
        self.events: list[int] = []

    def __call__(self, event: object) -> None:
        self.events.append(int(event.throttle_time * 1000))  # type: ignore[attr-defined]


def produce_for(
    cluster: LocalCluster, topic: str, client_id: str, seconds: float
) -> tuple[list[tuple[float, int]], Throttles]:
    """Produce as fast as librdkafka will for `seconds`; (ack time, bytes) per record, throttles."""
    throttles = Throttles()
    acked: list[tuple[float, int]] = []

    def delivered(err: object, msg: object) -> None:
        if err is None:
            acked.append((time.monotonic(), len(msg.value())))  # type: ignore[attr-defined]

    producer = Producer({
        "bootstrap.servers": cluster.bootstrap_servers, "client.id": client_id, "linger.ms": 5,
        "queue.buffering.max.kbytes": 1024, "throttle_cb": throttles, "acks": 1,
    })  # fmt: skip
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            producer.produce(topic, VALUE, on_delivery=delivered)
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    producer.purge()
    producer.flush(10)
    return acked, throttles


def rate(events: list[tuple[float, int]], start: float, end: float) -> float:
    return sum(n for t, n in events if start <= t < end) / (end - start)


def test_producer_held_to_its_byte_rate(cluster: LocalCluster, kazoo: KazooClient) -> None:
    topic, client_id = unique("qprod"), unique("producer")
    create_topic(cluster, topic)
    set_client_quota(cluster, client_id, "producer_byte_rate=1048576")
    stored = json.loads(kazoo.get(f"/config/clients/{client_id}")[0])
    assert stored == {"version": 1, "config": {"producer_byte_rate": "1048576"}}

    started = time.monotonic()
    acked, throttles = produce_for(cluster, topic, client_id, WARM_UP_S + MEASURE_S)
    measured = rate(acked, started + WARM_UP_S, started + WARM_UP_S + MEASURE_S)
    print(
        f"producer at producer_byte_rate=1 MiB/s: {measured / MB:.2f} MiB/s, "
        f"{len(throttles.events)} throttles"
    )
    assert 0.5 * MB <= measured <= 1.6 * MB
    assert throttles.events and max(throttles.events) > 0
    # the broker's own account of it, on /metrics (read with an independent parser)
    [broker] = cluster.brokers.values()
    with urllib.request.urlopen(broker.metrics, timeout=10) as answer:
        families = {f.name: f for f in text_string_to_metric_families(answer.read().decode())}
    throttled = {
        s.labels["quota"]: s.value
        for s in families["kafka_server_clientquota_throttletimems"].samples
        if s.labels.get("client_id") == client_id and s.name.endswith("_total")
    }
    assert throttled.get("produce", 0) > 0, throttled


def test_consumer_held_to_its_byte_rate(cluster: LocalCluster) -> None:
    topic, client_id = unique("qcons"), unique("consumer")
    create_topic(cluster, topic)
    # 20 MB to read, produced without a quota: more than 13 s at 1 MB/s
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 20})
    for _ in range(2000):
        while True:
            try:
                producer.produce(topic, VALUE)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    set_client_quota(cluster, client_id, "consumer_byte_rate=1048576")

    throttles = Throttles()
    consumer = Consumer({
        "bootstrap.servers": cluster.bootstrap_servers, "client.id": client_id, "group.id": unique("g"),
        "auto.offset.reset": "earliest", "throttle_cb": throttles, "enable.auto.commit": False,
    })  # fmt: skip
    consumer.subscribe([topic])
    read: list[tuple[float, int]] = []
    try:
        while not read:  # the clock starts at the first record (group join takes a while)
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                read.append((time.monotonic(), len(msg.value())))
        started = read[0][0]
        while time.monotonic() < started + WARM_UP_S + MEASURE_S:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                read.append((time.monotonic(), len(msg.value())))
    finally:
        consumer.close()
    measured = rate(read, started + WARM_UP_S, started + WARM_UP_S + MEASURE_S)
    print(
        f"consumer at consumer_byte_rate=1 MiB/s: {measured / MB:.2f} MiB/s, "
        f"{len(throttles.events)} throttles"
    )
    assert 0.5 * MB <= measured <= 1.6 * MB
    assert throttles.events and max(throttles.events) > 0
    # the broker's own account of it, on /metrics (read with an independent parser)
    [broker] = cluster.brokers.values()
    with urllib.request.urlopen(broker.metrics, timeout=10) as answer:
        families = {f.name: f for f in text_string_to_metric_families(answer.read().decode())}
    throttled = {
        s.labels["quota"]: s.value
        for s in families["kafka_server_clientquota_throttletimems"].samples
        if s.labels.get("client_id") == client_id and s.name.endswith("_total")
    }
    assert throttled.get("fetch", 0) > 0, throttled


def test_a_quota_change_applies_without_restart(cluster: LocalCluster) -> None:
    topic, client_id = unique("qchange"), unique("changing")
    create_topic(cluster, topic)
    set_client_quota(cluster, client_id, "producer_byte_rate=102400")
    _, throttles = produce_for(cluster, topic, client_id, 2.0)
    assert throttles.events, "100 KB/s must throttle a producer sending as fast as it can"

    before = broker_log(cluster).count(f"applied quota change of clients/{client_id}\n")
    configs("--zookeeper", cluster.zookeeper_connect, "--entity-type", "clients", "--entity-name", client_id,
            "--alter", "--delete-config", "producer_byte_rate")  # fmt: skip
    applied(cluster, f"clients/{client_id}", before + 1)
    acked, throttles = produce_for(cluster, topic, client_id, 2.0)
    assert not throttles.events
    assert sum(n for _, n in acked) > 102400 * 2 * 2  # well above the old bound


def test_default_and_precedence_end_to_end(cluster: LocalCluster) -> None:
    """`/config/users/<default>/clients/<c>` (precedence 4) beats `/config/clients/<c>` (7) for every
    user (here ANONYMOUS, on PLAINTEXT); written as kafka-configs' users-then-clients form."""
    topic, client_id = unique("qprec"), unique("prec")
    create_topic(cluster, topic)
    set_client_quota(cluster, client_id, "producer_byte_rate=1000000000")
    zk = cluster.zookeeper_connect
    entity = [
        "--entity-type",
        "users",
        "--entity-default",
        "--entity-type",
        "clients",
        "--entity-name",
        client_id,
    ]
    try:
        configs("--zookeeper", zk, *entity, "--alter", "--add-config", "producer_byte_rate=102400")
        applied(cluster, f"users/<default>/clients/{client_id}")
        described = configs("--zookeeper", zk, *entity, "--describe")
        assert (
            f"the default user-principal, client-id '{client_id}' are producer_byte_rate=102400" in described
        )
        _, throttles = produce_for(cluster, topic, client_id, 2.0)
        assert throttles.events
    finally:
        configs("--zookeeper", zk, *entity, "--alter", "--delete-config", "producer_byte_rate")


def test_client_quota_apis(cluster: LocalCluster, kazoo: KazooClient) -> None:
    """AlterClientQuotas / DescribeClientQuotas (KIP-546) through `zkafka configs --bootstrap-server`
    and zkafka's admin client (neither confluent-kafka nor kafka-python offers them)."""
    user, client_id = unique("alice"), unique("app")
    bootstrap = cluster.bootstrap_servers
    entity = [
        "--entity-type",
        "users",
        "--entity-name",
        user,
        "--entity-type",
        "clients",
        "--entity-name",
        client_id,
    ]
    configs("--bootstrap-server", bootstrap, *entity, "--alter",
            "--add-config", "producer_byte_rate=2048,request_percentage=50.5")  # fmt: skip
    stored = json.loads(kazoo.get(f"/config/users/{user}/clients/{client_id}")[0])
    assert stored["config"] == {"producer_byte_rate": "2048", "request_percentage": "50.5"}
    assert kazoo.exists("/config/changes") and kazoo.get_children("/config/changes")

    out = configs("--bootstrap-server", bootstrap, *entity, "--describe")
    assert (
        f"user-principal '{user}', client-id '{client_id}' are "
        "producer_byte_rate=2048.0, request_percentage=50.5" in out
    )

    with SyncAdminClient(bootstrap) as admin:
        found = admin.describe_client_quotas([QuotaFilter("user", user)])
        assert found == [((user, client_id), {"producer_byte_rate": 2048.0, "request_percentage": 50.5})]
        assert admin.describe_client_quotas([QuotaFilter("user", user)], strict=True) == []
        for bad in ({"producer_byte_rate": -1.0}, {"producer_byte_rate": 1.5}, {"no_such_quota": 1.0}):
            with pytest.raises(KafkaError) as e:
                admin.alter_client_quotas((user, client_id), bad)
            assert e.value.code == ErrorCode.INVALID_REQUEST
        admin.alter_client_quotas((user, client_id), {"producer_byte_rate": None, "request_percentage": None})
        assert admin.describe_client_quotas([QuotaFilter("user", user)]) == []


def test_a_malformed_quota_znode_is_logged_and_the_broker_serves_on(
    cluster: LocalCluster, kazoo: KazooClient
) -> None:
    client_id = unique("bad")
    path = f"/config/clients/{client_id}"
    kazoo.create(path, json.dumps({"version": 1, "config": {"producer_byte_rate": "lots"}}).encode(),
                 makepath=True)  # fmt: skip
    kazoo.create("/config/changes/config_change_", json.dumps(
        {"version": 2, "entity_path": f"clients/{client_id}"}).encode(), sequence=True)  # fmt: skip
    wait_for(lambda: f"znode {path}: ignoring quota producer_byte_rate" in broker_log(cluster), timeout=30,
             what="the bad quota logged")  # fmt: skip
    topic = unique("qbad")
    create_topic(cluster, topic)
    acked, throttles = produce_for(cluster, topic, client_id, 1.0)
    assert acked and not throttles.events  # served, and bound by nothing


def test_request_percentage_throttles_request_time(cluster: LocalCluster) -> None:
    """`request_percentage` counts handler time: a client allowed 0.001 % of the broker is throttled
    after a few requests, learns it from `throttle_time_ms`, and is muted rather than disconnected."""
    client_id = unique("busy")
    set_client_quota(cluster, client_id, "request_percentage=0.001")

    async def ask() -> tuple[list[int], bool]:
        port = cluster.brokers[1].port
        conn = await BrokerConnection.open("127.0.0.1", port, client_id=client_id)
        try:
            throttles = []
            for _ in range(8):
                resp = await conn.send(MetadataRequest(topics=None), timeout=30)
                throttles.append(resp.throttle_time_ms)
            return throttles, conn.is_closed
        finally:
            conn.close()

    throttles, closed = asyncio.run(ask())
    assert max(throttles) > 0 and not closed
    assert max(throttles) <= 1000  # Kafka caps request-time throttles at one window


def test_kafka_python_consumer_is_throttled(cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    """kafka-python honours KIP-219 itself (it pauses the connection and logs each throttle): it sees
    the throttle times and reads at about its 1 MB/s."""
    from kafka import KafkaConsumer

    topic, client_id = unique("qkp"), unique("kp-consumer")
    create_topic(cluster, topic)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 20})
    for _ in range(1200):  # 12 MB: more than 9 s at 1 MB/s
        while True:
            try:
                producer.produce(topic, VALUE)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    set_client_quota(cluster, client_id, "consumer_byte_rate=1048576")

    caplog.set_level(logging.WARNING, logger="kafka")
    consumer = KafkaConsumer(
        topic, bootstrap_servers=cluster.bootstrap_servers, client_id=client_id, auto_offset_reset="earliest",
        enable_auto_commit=False, consumer_timeout_ms=1000,
    )  # fmt: skip
    read: list[tuple[float, int]] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not read or time.monotonic() < read[0][0] + 2 + 6):
            for records in consumer.poll(timeout_ms=200).values():
                read.extend((time.monotonic(), len(r.value)) for r in records)
    finally:
        consumer.close()
    started = read[0][0]
    measured = rate(read, started + 2, started + 8)
    print(f"kafka-python consumer at 1 MiB/s: {measured / MB:.2f} MiB/s")
    assert 0.5 * MB <= measured <= 1.6 * MB
    assert any("throttled by broker" in r.getMessage() for r in caplog.records)

"""A SIGKILLed broker restarts with every acknowledged record intact; the znodes it and its
controller wrote are Kafka's, byte types included; garbage never takes it down."""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kazoo.client import KazooClient

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster, wait_until_ready


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("durability"), brokers=1) as c:
        yield c


def produce(bootstrap: str, topic: str, n: int, start: int = 0) -> list[int]:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2})
    offsets: list[int] = []

    def done(err, msg) -> None:  # type: ignore[no-untyped-def]
        assert err is None, err
        offsets.append(msg.offset())

    for i in range(start, start + n):
        p.produce(topic, key=str(i).encode(), value=f"value-{i}".encode(), on_delivery=done)
        p.poll(0)
    assert p.flush(60) == 0
    return offsets


def consume_all(bootstrap: str, topic: str, n: int, partitions: int = 1) -> list[tuple[int, int, bytes]]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[tuple[int, int, bytes]] = []
    deadline = time.monotonic() + 60
    while len(out) < n and time.monotonic() < deadline:
        for m in c.consume(1000, timeout=1):
            assert m.error() is None, m.error()
            out.append((m.partition(), m.offset(), m.value()))
    c.close()
    return out


def test_sigkill_and_restart_keeps_every_acknowledged_record(cluster: LocalCluster) -> None:
    topic = "durable"
    assert sorted(produce(cluster.bootstrap_servers, topic, 5000)) == list(range(5000))
    cluster.kill_broker(1)  # SIGKILL: no flush, no checkpoints, no clean-shutdown marker
    cluster.start_broker(1)
    wait_until_ready(cluster)
    assert sorted(produce(cluster.bootstrap_servers, topic, 1000, start=5000)) == list(range(5000, 6000))
    got = consume_all(cluster.bootstrap_servers, topic, 6000)
    assert [o for _, o, _ in got] == list(range(6000))
    assert [v for _, _, v in got] == [f"value-{i}".encode() for i in range(6000)]


def test_sigterm_stops_cleanly_and_the_restart_skips_recovery(cluster: LocalCluster) -> None:
    """SIGTERM: the registration znode goes, the logs are closed with their checkpoints and the
    `.kafka_cleanshutdown` marker; the next start consumes the marker and serves everything."""
    from pathlib import Path

    topic = "clean"
    assert sorted(produce(cluster.bootstrap_servers, topic, 300)) == list(range(300))
    log_dir = Path(cluster.brokers[1].directory) / "logs"
    zk = KazooClient(hosts=cluster.zookeeper_connect)
    zk.start(10)
    try:
        assert zk.exists("/brokers/ids/1")
        cluster.stop_broker(1)  # SIGTERM, waits for the exit
        assert zk.exists("/brokers/ids/1") is None  # gone at once, not after a session timeout
    finally:
        zk.stop()
        zk.close()
    assert (log_dir / ".kafka_cleanshutdown").exists()
    recovery = (log_dir / "recovery-point-offset-checkpoint").read_text().splitlines()
    assert recovery[0] == "0" and f"{topic} 0 300" in recovery[2:]  # Kafka's format: version, count, entries
    cluster.start_broker(1)
    wait_until_ready(cluster)
    assert not (log_dir / ".kafka_cleanshutdown").exists()
    got = consume_all(cluster.bootstrap_servers, topic, 300)
    assert [o for _, o, _ in got] == list(range(300))


def test_znodes_match_kafkas_layout(cluster: LocalCluster) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("layout", 2, 1, config={"cleanup.policy": "compact"})])["layout"].result(30)
    zk = KazooClient(hosts=cluster.zookeeper_connect)
    zk.start(10)
    try:
        reg = json.loads(zk.get("/brokers/ids/1")[0])
        assert reg["version"] == 5 and isinstance(reg["timestamp"], str) and reg["timestamp"].isdigit()
        assert reg["endpoints"] == [f"PLAINTEXT://127.0.0.1:{cluster.brokers[1].port}"]
        assert (reg["host"], reg["port"], reg["jmx_port"]) == ("127.0.0.1", cluster.brokers[1].port, -1)
        assert reg["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"} and reg["features"] == {}
        assert "rack" not in reg
        topic = json.loads(zk.get("/brokers/topics/layout")[0])
        assert topic["version"] == 3 and topic["partitions"] == {"0": [1], "1": [1]}
        assert topic["adding_replicas"] == {} and topic["removing_replicas"] == {}
        assert isinstance(topic["topic_id"], str) and len(topic["topic_id"]) == 22
        state = json.loads(zk.get("/brokers/topics/layout/partitions/0/state")[0])
        assert set(state) == {"version", "leader", "leader_epoch", "isr", "controller_epoch"}
        assert (state["version"], state["leader"], state["isr"]) == (1, 1, [1])
        controller = json.loads(zk.get("/controller")[0])
        assert (
            controller["version"] == 1
            and controller["brokerid"] == 1
            and isinstance(controller["timestamp"], str)
        )
        epoch = zk.get("/controller_epoch")[0].decode()
        assert epoch.isdigit() and int(epoch) == state["controller_epoch"]
        cluster_id = json.loads(zk.get("/cluster/id")[0])
        assert cluster_id["version"] == "1" and len(cluster_id["id"]) == 22
        assert json.loads(zk.get("/config/topics/layout")[0]) == {
            "version": 1,
            "config": {"cleanup.policy": "compact"},
        }
        for path in (
            "/consumers",
            "/admin/delete_topics",
            "/isr_change_notification",
            "/config/changes",
            "/log_dir_event_notification",
            "/latest_producer_id_block",
            "/brokers/seqid",
        ):
            assert zk.exists(path) is not None, path
    finally:
        zk.stop()
        zk.close()


def _exchange(port: int, payload: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(payload)
        s.settimeout(2)
        try:
            while s.recv(65536):
                pass
        except (TimeoutError, ConnectionResetError):
            pass


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    api_key=st.integers(-1, 70),
    version=st.integers(-1, 15),
    body=st.binary(max_size=300),
    client_id=st.one_of(st.none(), st.text(max_size=20)),
)
def test_fuzzed_requests_never_crash_the_broker(
    cluster: LocalCluster, api_key: int, version: int, body: bytes, client_id: str | None
) -> None:
    header = struct.pack(">hhi", api_key, version, 1)
    if client_id is None:
        header += struct.pack(">h", -1)
    else:
        raw = client_id.encode()
        header += struct.pack(">h", len(raw)) + raw
    frame = header + body
    _exchange(cluster.brokers[1].port, struct.pack(">i", len(frame)) + frame)
    assert cluster.broker_alive(1)


def test_broker_serves_after_fuzzing(cluster: LocalCluster) -> None:
    wait_until_ready(cluster, timeout=10)

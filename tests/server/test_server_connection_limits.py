"""The network layer under hostile connections (issue 11, item 4), against real broker processes.

* A frame's announced size allocates nothing: 64 connections announcing 100 MB each leave the
  broker's RSS within a bound while a producer on another connection is served.
* `queued.max.request.bytes` bounds request memory as a whole: large produce requests from several
  connections at once are muted and resumed, and all succeed.
* `max.connections`, `max.connections.per.ip` (+ overrides), `max.connection.creation.rate` and
  `connections.max.idle.ms` close what they should, and a refused flood is a few log lines.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from zkafka.protocol import RequestHeader, encode_request
from zkafka.protocol.messages import ApiVersionsRequest
from zkafka.server.launcher import LocalCluster
from zkafka.testing.cluster import TEST_BROKER_DEFAULTS, running_cluster, wait_until_ready
from zkafka.testing.polling import wait_for
from zkafka.testing.zookeeper import new_chroot
from zkafka.zk.server import ZooKeeperServer, free_port

HOSTILE_CONNECTIONS = 64
ANNOUNCED = 100 * 1024 * 1024
RSS_BOUND_KB = 96 * 1024
"""Allowed RSS growth for 64 hostile connections: each holds its 64 KiB read buffer and at most a
256 KiB start of its frame (20 MiB together), plus the producer's traffic."""


def rss_kb(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):  # noqa: SIM115 - tiny procfs file
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def api_versions_frame() -> bytes:
    return bytes(encode_request(RequestHeader(18, 0, 1, "limits-test"), ApiVersionsRequest()))


def is_served(sock: socket.socket, timeout: float = 10.0) -> bool:
    """True if the broker answers ApiVersions on `sock`, False if it closed the connection."""
    sock.settimeout(timeout)
    try:
        sock.sendall(api_versions_frame())
        header = sock.recv(4)
        if len(header) < 4:
            return False
        (size,) = struct.unpack(">i", header)
        got = 0
        while got < size:
            chunk = sock.recv(size - got)
            if not chunk:
                return False
            got += len(chunk)
        return True
    except (ConnectionResetError, BrokenPipeError):
        return False


def connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    return sock


@pytest.fixture(scope="module")
def plain(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    overrides = {
        # request memory bounded: at most two 1.5 MB requests in flight at once
        "socket.request.max.bytes": str(3 * 1024 * 1024),
        "queued.max.request.bytes": str(3 * 1024 * 1024),
        "message.max.bytes": str(2 * 1024 * 1024),
        "connections.max.idle.ms": "1500",
    }
    with running_cluster(
        zookeeper_server, tmp_path_factory.mktemp("limits"), brokers=1, overrides=overrides
    ) as c:
        yield c


def test_announced_frames_allocate_nothing_and_clients_are_still_served(plain: LocalCluster) -> None:
    from confluent_kafka import Producer

    broker = plain.brokers[1]
    producer = Producer({"bootstrap.servers": plain.bootstrap_servers, "linger.ms": 5})
    producer.produce("warmup", b"x")
    producer.flush(30)
    before = rss_kb(broker.pid)
    # Each announces a frame just under socket.request.max.bytes and sends a little of it.
    hostile = []
    for _ in range(HOSTILE_CONNECTIONS):
        sock = connect(broker.port)
        sock.sendall(struct.pack(">i", 3 * 1024 * 1024 - 8) + b"\0" * 100)
        hostile.append(sock)
    try:
        delivered: list[object] = []
        for i in range(2000):
            producer.produce("served", b"v%d" % i, on_delivery=lambda err, _m: delivered.append(err))
        assert producer.flush(60) == 0
        assert delivered == [None] * 2000
        grown = rss_kb(broker.pid) - before
        assert grown < RSS_BOUND_KB, f"RSS grew by {grown} kB with {HOSTILE_CONNECTIONS} hostile connections"
    finally:
        for sock in hostile:
            sock.close()


def test_large_requests_wait_for_request_memory_and_all_succeed(plain: LocalCluster) -> None:
    """queued.max.request.bytes = 3 MB: six connections each sending 1.5 MB requests at once are
    muted in turn, never refused or deadlocked."""
    from confluent_kafka import Producer

    errors: list[object] = []
    acked: list[int] = []

    def send(n: int) -> None:
        producer = Producer(
            {
                "bootstrap.servers": plain.bootstrap_servers,
                "linger.ms": 50,
                "batch.size": 1_500_000,
                "message.max.bytes": 2_000_000,
                "compression.type": "none",
            }
        )
        for i in range(20):
            producer.produce(
                "big-requests",
                b"%d-%d" % (n, i) + b"\0" * 70_000,
                on_delivery=lambda err, _m: errors.append(err) if err else acked.append(1),
            )
        producer.flush(120)

    threads = [threading.Thread(target=send, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert not errors
    assert len(acked) == 120


def test_an_idle_connection_is_closed(plain: LocalCluster) -> None:
    sock = connect(plain.brokers[1].port)
    try:
        assert is_served(sock)
        sock.settimeout(20)
        started = time.monotonic()
        assert sock.recv(1) == b""  # closed by the broker after connections.max.idle.ms
        assert time.monotonic() - started >= 1.0
    finally:
        sock.close()


@contextmanager
def client_and_internal_listeners(
    zookeeper: ZooKeeperServer, directory: Path, overrides: dict[str, str]
) -> Iterator[LocalCluster]:
    """One broker with a CLIENT listener (the limits apply) and an INTERNAL inter-broker listener:
    as in Kafka, the inter-broker listener is exempt from max.connections and the creation rate,
    so brokers are never locked out of each other (with a single listener they would not apply)."""
    cluster = LocalCluster(directory, zookeeper_connect=zookeeper.connect_string + new_chroot("limits"))
    port = free_port()
    cluster.broker_overrides.update(TEST_BROKER_DEFAULTS)
    cluster.broker_overrides.update(
        {
            "listeners": f"CLIENT://127.0.0.1:{port},INTERNAL://127.0.0.1:{free_port()}",
            "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
            **overrides,
        }
    )
    try:
        cluster.add_broker(1, port=port)
        cluster.start_broker(1)
        wait_until_ready(cluster, 60)
        yield cluster
    finally:
        cluster.stop_broker(1, timeout=20)


@pytest.fixture(scope="module")
def limited(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    overrides = {
        "max.connections": "8",
        "max.connections.per.ip": "3",
        "max.connections.per.ip.overrides": "127.0.0.1:6",
    }
    with client_and_internal_listeners(zookeeper_server, tmp_path_factory.mktemp("limited"), overrides) as c:
        yield c


def test_connection_limits_per_ip_overrides_and_total(limited: LocalCluster) -> None:
    port = limited.brokers[1].port
    held: list[socket.socket] = []
    try:
        # 127.0.0.1 may hold 6 connections to the client listener (its override, not the default 3)
        for _ in range(6):
            held.append(connect(port))
            assert is_served(held[-1])
        refused = connect(port)
        assert not is_served(refused)
        refused.close()
        # 127.0.0.2 has the default per-ip limit, and max.connections=8 caps both together
        other = [connect(port, "127.0.0.2") for _ in range(3)]
        held.extend(other)
        assert [is_served(s) for s in other] == [True, True, False]  # the 9th overall is refused
        # closing one makes room again
        held.pop(0).close()
        wait_for(lambda: is_served(connect(port, "127.0.0.2")), 10, "a connection accepted again")
    finally:
        for sock in held:
            sock.close()


def test_a_refused_flood_is_a_few_log_lines(limited: LocalCluster) -> None:
    port = limited.brokers[1].port
    held = [connect(port, "127.0.0.3") for _ in range(3)]
    try:
        for _ in range(200):
            connect(port, "127.0.0.3").close()
    finally:
        for sock in held:
            sock.close()
    lines = [line for line in limited.brokers[1].log_path.read_text().splitlines() if "127.0.0.3" in line]
    assert len(lines) <= 2, lines


@pytest.fixture(scope="module")
def rate_limited(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    overrides = {"max.connection.creation.rate": "5"}
    with client_and_internal_listeners(zookeeper_server, tmp_path_factory.mktemp("rate"), overrides) as c:
        yield c


def test_connection_creation_rate(rate_limited: LocalCluster) -> None:
    time.sleep(1.1)  # a fresh second for the rate window
    port = rate_limited.brokers[1].port
    socks = [connect(port) for _ in range(20)]
    try:
        served = [is_served(s) for s in socks]
    finally:
        for sock in socks:
            sock.close()
    assert 5 <= sum(served) <= 10  # 5 per second; the burst may span two seconds

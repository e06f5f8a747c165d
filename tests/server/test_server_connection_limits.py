"""The network layer under hostile connections (issue 11, item 4), against real broker processes.

* A frame's announced size allocates nothing: 64 connections announcing 100 MB each (and staying
  open: no pool, no idle timeout to rescue the broker) leave the broker's RSS within a bound while a
  producer on another connection is served.
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

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer, free_port
from zkafka.protocol import RequestHeader, encode_request
from zkafka.protocol.messages import ApiVersionsRequest
from zkafka.testing.cluster import TEST_BROKER_DEFAULTS, running_cluster, wait_until_ready
from zkafka.testing.polling import wait_for
from zkafka.testing.zookeeper import new_chroot

HOSTILE_CONNECTIONS = 64
ANNOUNCED = 100 * 1024 * 1024 - 8
"""Just under Kafka's default socket.request.max.bytes (104857600): a frame the broker must accept."""
RSS_BOUND_KB = 96 * 1024
"""Allowed RSS growth for 64 hostile connections: each holds a 4 KiB read buffer and the 256 KiB
start of its frame (17 MiB together), plus the producer's traffic. Allocating what they announce
would be 6.4 GB."""


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


def still_open(sock: socket.socket) -> bool:
    """The broker has not closed `sock` (nothing to read yet, no EOF)."""
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.setblocking(True)


@pytest.fixture(scope="module")
def defaults(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    """Kafka's defaults: socket.request.max.bytes 100 MiB, no request memory bound, 10 minutes idle."""
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("defaults"), brokers=1) as c:
        yield c


def test_announced_frames_allocate_nothing_and_clients_are_still_served(defaults: LocalCluster) -> None:
    from confluent_kafka import Consumer, Producer

    broker = defaults.brokers[1]
    producer = Producer({"bootstrap.servers": defaults.bootstrap_servers, "linger.ms": 5})
    producer.produce("warmup", b"x")
    assert producer.flush(30) == 0
    before = rss_kb(broker.pid)
    # Each announces a frame just under socket.request.max.bytes and sends 100 bytes of it.
    hostile = []
    try:
        for _ in range(HOSTILE_CONNECTIONS):
            sock = connect(broker.port)
            sock.sendall(struct.pack(">i", ANNOUNCED) + b"\0" * 100)
            hostile.append(sock)
        delivered: list[object] = []
        for i in range(2000):
            producer.produce("served", b"v%d" % i, on_delivery=lambda err, _m: delivered.append(err))
        assert producer.flush(60) == 0
        assert delivered == [None] * 2000
        consumer = Consumer(
            {
                "bootstrap.servers": defaults.bootstrap_servers,
                "group.id": "limits-rss",
                "auto.offset.reset": "earliest",
            }
        )
        try:
            consumer.subscribe(["served"])
            got: list[bytes] = []
            deadline = time.monotonic() + 60
            while len(got) < 2000 and time.monotonic() < deadline:
                msg = consumer.poll(1.0)
                if msg is not None and msg.error() is None:
                    got.append(msg.value())
        finally:
            consumer.close()
        assert sorted(got) == sorted(b"v%d" % i for i in range(2000))
        after = rss_kb(broker.pid)
        # the broker read every announcement and still holds every hostile connection
        assert all(still_open(s) for s in hostile)
        grown = after - before
        print(f"broker RSS {before} kB -> {after} kB (+{grown} kB) with {HOSTILE_CONNECTIONS} connections")
        assert grown < RSS_BOUND_KB, f"RSS grew by {grown} kB with {HOSTILE_CONNECTIONS} hostile connections"
    finally:
        for sock in hostile:
            sock.close()


def log_lines(cluster: LocalCluster, needle: str) -> list[str]:
    return [line for line in cluster.brokers[1].log_path.read_text().splitlines() if needle in line]


def test_a_flood_of_hostile_frames_is_a_few_log_lines(defaults: LocalCluster) -> None:
    """Frames with sizes outside [0, socket.request.max.bytes] close their connection; 2,000 of them
    write one line (plus a summary once the minute is over), no traceback."""
    port = defaults.brokers[1].port
    before = len(log_lines(defaults, "closing connection"))
    for i in range(2000):
        sock = connect(port)
        try:
            sock.sendall(struct.pack(">i", -1 - i if i % 2 else 104857601 + i))
            sock.settimeout(10)
            try:
                assert sock.recv(1) == b""  # closed by the broker
            except ConnectionResetError:
                pass
        finally:
            sock.close()
    assert len(log_lines(defaults, "closing connection")) - before <= 2
    assert not log_lines(defaults, "Traceback")
    assert is_served(connect(port))


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
    before = len(log_lines(limited, "refusing a connection"))
    held = [connect(port, "127.0.0.3") for _ in range(3)]
    try:
        assert all(is_served(s) for s in held)
        refused = 0
        for _ in range(500):
            sock = connect(port, "127.0.0.3")
            refused += not is_served(sock)
            sock.close()
        assert refused == 500
    finally:
        for sock in held:
            sock.close()
    lines = log_lines(limited, "refusing a connection")[before:]
    assert len(lines) <= 2, lines  # one per kind of refusal a minute; the rest are counted
    assert not log_lines(limited, "Traceback")


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

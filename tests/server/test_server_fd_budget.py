"""A broker holds more replicas than it has descriptors (issue 17: 67,000 replicas per broker
under a hard open files limit of 20,000), here at a small scale: a broker process whose
RLIMIT_NOFILE is below its partition count serves every partition, before and after a SIGKILL
(log recovery opens every segment written since the last checkpoint)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster, wait_until_ready

NOFILE = 160
PARTITIONS = 240  # > NOFILE: one `.log` descriptor per replica would not fit
TOPIC = "many"

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("fd-budget"), nofile=NOFILE) as c:
        yield c


def create_topic(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)], operation_timeout=60).values():
        future.result(90)


def produce_one_each(bootstrap: str, round_: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    failures: list[object] = []

    def done(err, msg) -> None:  # type: ignore[no-untyped-def]
        if err is not None:
            failures.append(err)

    for partition in range(PARTITIONS):
        p.produce(TOPIC, value=f"{round_}:{partition}".encode(), partition=partition, on_delivery=done)
        p.poll(0)
    assert p.flush(120) == 0
    assert not failures, failures[:3]


def consume_all(bootstrap: str, expected: int) -> dict[int, list[bytes]]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    got: dict[int, list[bytes]] = {}
    n = 0
    deadline = time.monotonic() + 120
    try:
        while n < expected and time.monotonic() < deadline:
            for m in c.consume(1000, timeout=1):
                assert m.error() is None, m.error()
                got.setdefault(m.partition(), []).append(m.value())
                n += 1
    finally:
        c.close()
    return got


def broker_limit(pid: int) -> int:
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    raise AssertionError("no open files limit")


def test_a_broker_with_fewer_descriptors_than_replicas_serves_them_all(cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    pid = cluster.brokers[1].pid
    assert pid is not None and broker_limit(pid) == NOFILE
    create_topic(bootstrap)
    produce_one_each(bootstrap, 0)
    got = consume_all(bootstrap, PARTITIONS)
    assert got == {p: [f"0:{p}".encode()] for p in range(PARTITIONS)}

    cluster.kill_broker(1)  # no checkpoints: the restart recovers every log written above
    cluster.start_broker(1, nofile=NOFILE)
    wait_until_ready(cluster, timeout=120)
    produce_one_each(bootstrap, 1)
    got = consume_all(bootstrap, 2 * PARTITIONS)
    assert got == {p: [f"0:{p}".encode(), f"1:{p}".encode()] for p in range(PARTITIONS)}
    log_text = cluster.brokers[1].log_path.read_text(errors="replace")
    assert "Too many open files" not in log_text

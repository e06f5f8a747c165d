"""One of a broker's two log dirs fails (a tiny tmpfs filled up; Linux and root only): the broker
stays up, stops the replicas in that dir and tells the controller through
`/log_dir_event_notification`; the controller moves their leaderships to the other brokers and
takes the broker out of their ISRs, while the replicas in its healthy dir stay as they were.
An acks=all producer writing through the failure gets every record acknowledged, and everything
acknowledged is read back."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_helpers import create_topic, read_partitions, running, topic_name, wait_for
from confluent_kafka import Producer

from zkafka.local import mounts
from zkafka.local.zookeeper import ZooKeeperServer

pytestmark = [
    pytest.mark.skipif(mounts.available() is not None, reason=f"{mounts.available()}"),
    pytest.mark.timeout(240),
]

PARTITIONS = 4


@pytest.fixture
def tiny_dir(tmp_path: Path) -> Iterator[Path]:
    with mounts.mounted_tmpfs(tmp_path / "tiny", "4m") as path:
        yield path


def value(partition: int, i: int) -> bytes:
    """~1 KiB: records that need new pages of the full tmpfs, so the appends fail too."""
    return f"{partition}-{i}-".encode() + b"x" * 1000


def produce(bootstrap: str, topic: str, start: int, count: int) -> list[str]:
    """`count` records to every partition, acks=all with librdkafka's retries; the delivery errors."""
    errors: list[str] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "enable.idempotence": True, "message.timeout.ms": 90_000})  # fmt: skip

    def report(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(str(err))

    for i in range(start, start + count):
        for p in range(PARTITIONS):
            producer.produce(topic, value(p, i), partition=p, on_delivery=report)
        producer.poll(0)
    assert producer.flush(120) == 0
    return errors


def test_a_failed_log_dir_moves_its_replicas_away_and_loses_nothing(
    zookeeper_server: ZooKeeperServer, tmp_path: Path, tiny_dir: Path
) -> None:
    healthy = tmp_path / "healthy"
    healthy.mkdir()
    per_broker = {1: {"log.dirs": f"{healthy},{tiny_dir}"}}
    with running(zookeeper_server, tmp_path / "cluster", brokers=3, per_broker=per_broker) as cluster:
        topic = topic_name("dirfail")
        create_topic(cluster, topic, {p: [1, 2, 3] for p in range(PARTITIONS)}, {"min.insync.replicas": "2"})
        assert produce(cluster.bootstrap, topic, 0, 50) == []
        on_tiny = {p for p in range(PARTITIONS) if (tiny_dir / f"{topic}-{p}").is_dir()}
        on_healthy = {p for p in range(PARTITIONS) if (healthy / f"{topic}-{p}").is_dir()}
        assert on_tiny and on_healthy and on_tiny | on_healthy == set(range(PARTITIONS)), (
            on_tiny,
            on_healthy,
        )

        mounts.fill(tiny_dir)
        assert produce(cluster.bootstrap, topic, 50, 200) == []  # written through the failure

        def moved() -> bool:
            states = {p: cluster.state(topic, p) for p in on_tiny}
            return all(s["leader"] in (2, 3) and 1 not in s["isr"] for s in states.values())

        wait_for(moved, 60, "the failed dir's partitions led elsewhere, broker 1 out of their ISRs")
        for p in on_healthy:
            assert cluster.state(topic, p)["leader"] == 1 and 1 in cluster.state(topic, p)["isr"]
        assert cluster.local.broker_alive(1)  # one dir of two failed: the broker stays up
        log_text = cluster.server_log(1)
        assert f"log dir {os.path.realpath(tiny_dir)} is offline: stopped its" in log_text
        wait_for(lambda: cluster.zk.get_children("/log_dir_event_notification") == [], 30,
                 "the controller to consume the log dir event")  # fmt: skip

        read = read_partitions(cluster.bootstrap, topic, list(range(PARTITIONS)))
        for p in range(PARTITIONS):
            values = [v for _, v in read[p]]
            assert values == [value(p, i) for i in range(250)], (p, len(values))

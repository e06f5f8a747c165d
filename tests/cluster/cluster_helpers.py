"""Shared by the cluster tests: real broker processes on the session ZooKeeper, a kazoo view of the
znodes (an independent reader, not our own ZooKeeper code), a confluent-kafka producer running in the
background, and readers for the partition logs on disk."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.records.batch import iter_headers
from zkafka.testing.cluster import TEST_BROKER_DEFAULTS, wait_until_ready
from zkafka.testing.polling import wait_for
from zkafka.testing.zookeeper import new_chroot

T = TypeVar("T")

SESSION_TIMEOUT_MS = 4000
FAST = {
    # short enough that failure detection, ISR changes and retries take seconds, not minutes
    "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "replica.lag.time.max.ms": "2000",
    "replica.fetch.backoff.ms": "200",
    "controlled.shutdown.retry.backoff.ms": "200",
    "controlled.shutdown.max.retries": "10",
    "leader.imbalance.check.interval.seconds": "1",
    "auto.leader.rebalance.enable": "false",
    "log.segment.delete.delay.ms": "200",
    "default.replication.factor": "1",
}


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Cluster:
    """A LocalCluster plus a kazoo session on its chroot."""

    def __init__(self, local: LocalCluster) -> None:
        self.local = local
        # Reconnect within ~1 s like the brokers (kazoo's default backoff grows to a minute, which
        # outlasts the tests that restart ZooKeeper).
        retry = {"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0}
        self.zk = KazooClient(hosts=local.zookeeper_connect, timeout=10, connection_retry=retry)
        self.zk.start(15)

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for bid, b in self.local.brokers.items() if self.local.broker_alive(bid))

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self.local.brokers)

    def close(self) -> None:
        self.zk.stop()
        self.zk.close()

    # -- znodes ----------------------------------------------------------------------------------------
    def get_json(self, path: str) -> dict[str, Any]:
        return json.loads(self.zk.get(path)[0])

    def state(self, topic: str, partition: int = 0) -> dict[str, Any]:
        return self.get_json(f"/brokers/topics/{topic}/partitions/{partition}/state")

    def state_with_stat(self, topic: str, partition: int = 0) -> tuple[dict[str, Any], Any]:
        data, stat = self.zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
        return json.loads(data), stat

    def leader(self, topic: str, partition: int = 0) -> int:
        return int(self.state(topic, partition)["leader"])

    def topic(self, topic: str) -> dict[str, Any]:
        return self.get_json(f"/brokers/topics/{topic}")

    def controller(self) -> int | None:
        try:
            return int(self.get_json("/controller")["brokerid"])
        except NoNodeError:
            return None

    def controller_epoch(self) -> int:
        return int(self.zk.get("/controller_epoch")[0])

    def registered(self) -> set[int]:
        return {int(b) for b in self.zk.get_children("/brokers/ids")}

    def broker_epoch(self, broker_id: int) -> int | None:
        stat = self.zk.exists(f"/brokers/ids/{broker_id}")
        return None if stat is None else stat.czxid

    def exists(self, path: str) -> bool:
        return self.zk.exists(path) is not None

    # -- processes -------------------------------------------------------------------------------------
    def kill(self, broker_id: int) -> None:
        self.local.kill_broker(broker_id)

    def stop(self, broker_id: int, timeout: float = 30) -> None:
        """SIGTERM (controlled shutdown) and wait for the exit."""
        self.local.signal_broker(broker_id, signal.SIGTERM)
        assert self.local.wait_broker_exit(broker_id, timeout), f"broker {broker_id} did not exit"

    def pause(self, broker_id: int) -> None:
        self.local.signal_broker(broker_id, signal.SIGSTOP)

    def resume(self, broker_id: int) -> None:
        self.local.signal_broker(broker_id, signal.SIGCONT)

    def start(self, broker_id: int, timeout: float = 60) -> None:
        """Start a stopped broker and wait until it is registered (its predecessor's ephemeral znode
        may first have to expire) and every broker serves metadata."""
        before = self.broker_epoch(broker_id)
        self.local.start_broker(broker_id)
        wait_for(
            lambda: (e := self.broker_epoch(broker_id)) is not None and e != before,
            timeout,
            f"broker {broker_id} to register",
        )
        wait_until_ready(self.local, timeout)

    def ensure_all_running(self) -> None:
        """Undo what a (failed) test may have left: resume paused brokers, restart dead ones."""
        for bid in self.broker_ids:
            if self.local.broker_alive(bid):
                self.resume(bid)
        for bid in self.broker_ids:
            if not self.local.broker_alive(bid):
                self.start(bid)
        wait_until_ready(self.local, 60)

    def wait_new_controller(self, old: int, timeout: float = 30) -> int:
        return wait_for(
            lambda: (c := self.controller()) is not None and c != old and c,
            timeout,
            f"a controller other than {old}",
        )

    def wait_isr(self, topic: str, partition: int, isr: set[int], timeout: float = 30) -> dict[str, Any]:
        return wait_for(
            lambda: (s := self.state(topic, partition)) and set(s["isr"]) == isr and s,
            timeout,
            f"ISR of {topic}-{partition} to become {sorted(isr)}",
        )

    # -- logs on disk ----------------------------------------------------------------------------------
    def log_dir(self, broker_id: int, topic: str, partition: int = 0) -> Path:
        return Path(self.local.brokers[broker_id].directory) / "logs" / f"{topic}-{partition}"

    def log_bytes(self, broker_id: int, topic: str, partition: int = 0) -> bytes:
        """The partition's segments concatenated (the batch stream, independent of where segments roll)."""
        d = self.log_dir(broker_id, topic, partition)
        return b"".join(p.read_bytes() for p in sorted(d.glob("*.log")))

    def server_log(self, broker_id: int) -> str:
        return self.local.brokers[broker_id].log_path.read_text(errors="replace")


@contextmanager
def running(
    zookeeper: ZooKeeperServer,
    directory: Path,
    brokers: int = 3,
    overrides: dict[str, str] | None = None,
    per_broker: dict[int, dict[str, str]] | None = None,
) -> Iterator[Cluster]:
    """`brokers` broker processes with FAST settings in a fresh chroot (`per_broker`: broker id ->
    settings of that broker alone). At the end every process is resumed and SIGKILLed (a clean
    shutdown is not what these tests are about, and it is slower)."""
    local = LocalCluster(Path(directory), zookeeper_connect=zookeeper.connect_string + new_chroot("cluster"))
    with _fast_cluster(local, overrides) as cluster_of:
        for i in range(1, brokers + 1):
            local.add_broker(i, (per_broker or {}).get(i))
            local.start_broker(i)
        wait_until_ready(local, 60)
        yield cluster_of(local)


@contextmanager
def running_on_ensemble(
    directory: Path, zookeepers: int = 3, brokers: int = 3, overrides: dict[str, str] | None = None
) -> Iterator[Cluster]:
    """Like `running`, on a ZooKeeper ensemble of its own (`LocalCluster.up(zookeepers=...)`, the
    brokers' zookeeper.connect naming every member and a chroot). Every member is stopped at the end."""
    local = LocalCluster(Path(directory))
    with _fast_cluster(local, overrides) as cluster_of:
        local.up(brokers, zookeepers=zookeepers, chroot="/kafka", timeout=120)
        yield cluster_of(local)


@contextmanager
def _fast_cluster(local: LocalCluster, overrides: dict[str, str] | None) -> Iterator[Any]:
    """FAST broker settings on `local`; yields a factory of the test's `Cluster` view, and at the end
    closes that view, resumes and SIGKILLs every broker and stops the cluster's own ZooKeeper members."""
    local.broker_overrides.update(TEST_BROKER_DEFAULTS)
    local.broker_overrides.update(FAST)
    local.broker_overrides.update(overrides or {})
    made: list[Cluster] = []

    def cluster_of(started: LocalCluster) -> Cluster:
        made.append(Cluster(started))
        return made[-1]

    try:
        yield cluster_of
    finally:
        for cluster in made:
            cluster.close()
        for bid in list(local.brokers):
            local.signal_broker(bid, signal.SIGCONT)
            local.kill_broker(bid)
        for server_id in list(local.zookeepers):
            local.stop_zookeeper_member(server_id)


def create_topic(
    cluster: Cluster,
    topic: str,
    assignment: dict[int, list[int]],
    config: dict[str, str] | None = None,
    full_isr: bool = True,
) -> None:
    """Create with an explicit assignment and wait until every partition has a leader (and, with
    `full_isr`, all replicas in its ISR) and every broker's metadata knows it."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    replicas = [assignment[p] for p in sorted(assignment)]
    admin.create_topics([NewTopic(topic, len(replicas), replica_assignment=replicas, config=config or {})])[
        topic
    ].result(30)
    for p, rs in assignment.items():
        if full_isr:
            cluster.wait_isr(topic, p, set(rs))
        else:
            wait_for(lambda p=p: cluster.state(topic, p)["leader"] >= 0, 30, f"a leader for {topic}-{p}")
    wait_for(lambda: _metadata_knows(cluster, topic, len(assignment)), 30, f"metadata of {topic}")


def _metadata_knows(cluster: Cluster, topic: str, partitions: int) -> bool:
    from confluent_kafka.admin import AdminClient

    for bid in cluster.broker_ids:
        if not cluster.local.broker_alive(bid):
            continue
        admin = AdminClient({"bootstrap.servers": cluster.local.brokers[bid].bootstrap})
        md = admin.list_topics(topic, timeout=5).topics.get(topic)
        if md is None or md.error is not None or len(md.partitions) != partitions:
            return False
        if any(p.leader < 0 for p in md.partitions.values()):
            return False
    return True


def metadata_controller(cluster: Cluster, via: int) -> int:
    """The controller id broker `via` names in Metadata."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.local.brokers[via].bootstrap})
    return admin.list_topics(timeout=5).controller_id


def metadata_isr(cluster: Cluster, via: int, topic: str, partition: int = 0) -> tuple[int, set[int]]:
    """(leader, ISR) as broker `via` answers Metadata: what the controller's UpdateMetadata told it."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.local.brokers[via].bootstrap})
    p = admin.list_topics(topic, timeout=5).topics[topic].partitions[partition]
    return p.leader, set(p.isrs)


def wait_until_metadata_is_propagated(
    cluster: Cluster, topic: str, partition: int, leader: int, timeout: float = 30
) -> None:
    """Wait until every live broker answers Metadata naming `leader` for the partition (Kafka's
    `TestUtils.waitUntilMetadataIsPropagated`). ZooKeeper names a new leader before the controller's
    UpdateMetadata reaches the brokers, and until it does they answer what they were last told: the
    dead leader, or no leader at all (LEADER_NOT_AVAILABLE, leader -1) once they know it is dead.
    A client that starts in that window may fail at once: librdkafka's get_watermark_offsets reads a
    leaderless partition as `_UNKNOWN_PARTITION`, without asking again."""
    for b in cluster.broker_ids:
        if cluster.local.broker_alive(b):
            wait_for(
                lambda b=b: metadata_isr(cluster, b, topic, partition)[0] == leader,
                timeout,
                f"broker {b}'s Metadata to name {leader} leader of {topic}-{partition}",
            )


# -- producing and consuming -------------------------------------------------------------------------


@dataclass
class Acked:
    partition: int
    offset: int | None
    """None when librdkafka reported the delivery without an offset (`check_exactly_once`)."""
    value: bytes
    at: float = 0.0
    """time.monotonic() when the acknowledgement arrived (for measuring stalls, never asserted)."""


@dataclass
class BackgroundProducer:
    """An idempotent acks=all confluent-kafka producer writing `seq-<n>` values (key = n) as fast as
    `rate` allows, on its own thread, until stopped. Records every acknowledgement and every error."""

    bootstrap: str
    topic: str
    rate: float = 3000.0
    partition: int | None = None
    config: dict[str, Any] = field(default_factory=dict)
    acked: list[Acked] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    sent: int = 0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"producer-{self.topic}", daemon=True)

    def __enter__(self) -> BackgroundProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        from confluent_kafka import Producer

        conf = {
            "bootstrap.servers": self.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "retry.backoff.ms": 100,
            "message.timeout.ms": 120000,
            "topic.metadata.refresh.interval.ms": 1000,
        }
        conf.update(self.config)
        producer = Producer(conf)

        def done(err: Any, msg: Any) -> None:
            if err is not None:
                self.errors.append(str(err))
            else:
                self.acked.append(Acked(msg.partition(), msg.offset(), msg.value(), time.monotonic()))

        started = time.monotonic()
        extra = {} if self.partition is None else {"partition": self.partition}
        while not self._stop.is_set():
            due = started + self.sent / self.rate
            now = time.monotonic()
            if due > now:
                producer.poll(min(due - now, 0.05))
                continue
            n = self.sent
            try:
                producer.produce(self.topic, key=b"%d" % n, value=b"seq-%d" % n, on_delivery=done, **extra)
            except BufferError:
                producer.poll(0.05)
                continue
            self.sent += 1
            producer.poll(0)
        left = producer.flush(90)
        if left:
            self.errors.append(f"{left} records never delivered")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(120)
        assert not self._thread.is_alive(), "producer did not finish"

    def wait_acked(self, n: int, timeout: float = 30) -> None:
        wait_for(lambda: len(self.acked) >= n, timeout, f"{n} acknowledged records")

    def longest_gap(self, since: float = 0.0, until: float = float("inf")) -> float:
        """The longest time between two consecutive acknowledgements in [since, until] (seconds)."""
        times = sorted(a.at for a in list(self.acked) if since <= a.at <= until)
        return max((b - a for a, b in itertools.pairwise(times)), default=0.0)


def read_partitions(bootstrap: str, topic: str, partitions: list[int]) -> dict[int, list[tuple[int, bytes]]]:
    """Every committed record (up to the high watermark) of each partition: [(offset, value)]. Read with
    kafka-python (an independent client) and no consumer group, so no group coordinator is involved."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap.split(","),
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=4 << 20,
    )
    try:
        tps = [TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = {tp.partition: end for tp, end in consumer.end_offsets(tps).items()}
        out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in partitions}
        pending = {p for p in partitions if ends[p] > 0}
        deadline = time.monotonic() + 90
        while pending and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500, max_records=50000).items():
                out[tp.partition].extend((r.offset, r.value) for r in records)
                if records and records[-1].offset + 1 >= ends[tp.partition]:
                    pending.discard(tp.partition)
        assert not pending, f"could not read partitions {sorted(pending)} up to {ends}"
        return out
    finally:
        consumer.close()


def check_exactly_once(acked: list[Acked], read: dict[int, list[tuple[int, bytes]]]) -> None:
    """Every acknowledged record is at its acknowledged offset, nothing is duplicated, and each
    partition holds the producer's records in the order they were sent. librdkafka may report a
    record delivered without an offset (an idempotent retry it judged already persisted, seen
    once in a controlled shutdown under load): such a record must be in its partition all the
    same, once (the duplicate check below)."""
    by_offset = {p: dict(records) for p, records in read.items()}
    values = {p: {v for _, v in records} for p, records in read.items()}
    for a in acked:
        if a.offset is None:
            assert a.value in values[a.partition], f"acknowledged {a} (no offset reported) missing"
            continue
        assert by_offset[a.partition].get(a.offset) == a.value, f"acknowledged {a} missing or different"
    for p, records in read.items():
        values = [v for _, v in records]
        assert len(values) == len(set(values)), f"duplicates in partition {p}"
        seqs = [int(v.split(b"-")[1]) for v in values]
        assert seqs == sorted(seqs), f"partition {p} is out of order"
        offsets = [o for o, _ in records]
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets))) if offsets else True


def batches_below(data: bytes, end_offset: int) -> bytes:
    """The prefix of a batch stream holding exactly the batches below `end_offset`."""
    size = 0
    for h in iter_headers(data):
        if h.next_offset > end_offset:
            break
        size = h.position + h.size
    return data[:size]


def zkafka_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def resume_all(cluster: Cluster) -> None:
    for bid in cluster.broker_ids:
        with suppress(ProcessLookupError):
            cluster.resume(bid)

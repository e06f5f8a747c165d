"""No acknowledged record is lost, duplicated or reordered while partition leaders are SIGKILLed under
acks=all load, replicas end byte-identical, and a replica that led in an older epoch and comes back
with records nobody else has truncates them (leader epochs, OffsetForLeaderEpoch) before fetching."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from cluster_helpers import (
    BackgroundProducer,
    Cluster,
    batches_below,
    check_exactly_once,
    create_topic,
    metadata_isr,
    read_partitions,
    running,
    topic_name,
    wait_for,
)

from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.storage.checkpoint import LeaderEpochCheckpointFile
from zkafka.storage.naming import is_special_dir_name, parse_partition_dir_name


@pytest.fixture(scope="module")
def module_cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    with running(zookeeper_server, tmp_path_factory.mktemp("durability"), brokers=3) as c:
        yield c


@pytest.fixture
def cluster(module_cluster: Cluster) -> Cluster:
    module_cluster.ensure_all_running()
    return module_cluster


class IsrWatcher:
    """Samples the state znodes of a topic's partitions on a thread: the smallest ISR ever seen."""

    def __init__(self, cluster: Cluster, topic: str, partitions: int) -> None:
        self.cluster, self.topic, self.partitions = cluster, topic, partitions
        self.smallest = {p: 99 for p in range(partitions)}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> IsrWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            for p in range(self.partitions):
                state = self.cluster.state(self.topic, p)
                self.smallest[p] = min(self.smallest[p], len(state["isr"]))


@pytest.mark.timeout(200)
def test_leader_sigkills_under_acks_all_load_lose_nothing(cluster: Cluster) -> None:
    topic = topic_name("durable")
    create_topic(cluster, topic, {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}, {"min.insync.replicas": "2"})
    notifications_before = cluster.zk.exists("/isr_change_notification").cversion
    with (
        IsrWatcher(cluster, topic, 3) as isr,
        BackgroundProducer(cluster.bootstrap, topic, rate=5000) as producer,
    ):
        producer.wait_acked(5000)
        for _ in range(3):
            before = cluster.state(topic, 0)
            leader = before["leader"]
            cluster.kill(leader)
            after = wait_for(
                lambda leader=leader: (s := cluster.state(topic, 0))["leader"] not in (leader, -1) and s,
                30,
                "a new leader for partition 0",
            )
            assert after["leader_epoch"] > before["leader_epoch"]
            assert leader not in after["isr"] and after["isr"]
            acked = len(producer.acked)
            producer.wait_acked(acked + 5000)  # production goes on with the new leader
            cluster.start(leader)
            # it catches up and its leaders put it back into the ISR of every partition ...
            for p in range(3):
                cluster.wait_isr(topic, p, {1, 2, 3})
            # ... and the controller, told through /isr_change_notification, tells every broker
            wait_for(
                lambda leader=leader: all(
                    leader in metadata_isr(cluster, b, topic, p)[1] for b in (1, 2, 3) for p in range(3)
                ),
                30,
                f"metadata to show broker {leader} back in the ISRs",
            )
        producer.wait_acked(100_000, timeout=90)  # the bar: >= 100k acknowledged records
    assert not producer.errors, producer.errors[:5]
    assert all(n >= 1 for n in isr.smallest.values()), isr.smallest  # never empty
    assert min(isr.smallest.values()) < 3  # and it did shrink
    node = cluster.zk.exists("/isr_change_notification")
    assert node.cversion > notifications_before and node.numChildren == 0  # created and processed

    read = read_partitions(cluster.bootstrap, topic, [0, 1, 2])
    check_exactly_once(producer.acked, read)
    assert sum(len(r) for r in read.values()) == producer.sent  # every record sent, none twice

    # replicas are byte-identical up to the high watermark (all of it, now that nothing is produced)
    for p in range(3):
        end = len(read[p])
        wait_for(
            lambda p=p, end=end: (
                len({batches_below(cluster.log_bytes(b, topic, p), end) for b in (1, 2, 3)}) == 1
            ),
            30,
            f"identical replicas of partition {p}",
        )
        assert batches_below(cluster.log_bytes(1, topic, p), end) == cluster.log_bytes(1, topic, p)


def test_a_returning_leader_truncates_what_it_alone_had(cluster: Cluster) -> None:
    """RF=2, min.insync.replicas=1: the leader takes acks=1 writes its follower never fetches (the
    follower is frozen), then dies. The follower becomes leader in a new epoch and takes other writes.
    The old leader comes back, asks the new one where its epoch ended, truncates, and ends up with the
    new leader's log byte for byte."""
    from confluent_kafka import Producer

    topic = topic_name("diverge")
    old, follower = 1, 2
    create_topic(cluster, topic, {0: [old, follower]}, {"min.insync.replicas": "1"})

    def producer(acks: str, via: int) -> Callable[[list[bytes]], None]:
        p = Producer(
            {"bootstrap.servers": cluster.local.brokers[via].bootstrap, "acks": acks, "linger.ms": 0}
        )
        p.list_topics(topic, timeout=10)  # connected and with metadata before the clock starts

        def produce(values: list[bytes]) -> None:
            errors: list[object] = []
            for v in values:
                p.produce(
                    topic, value=v, partition=0, on_delivery=lambda e, _m: e is None or errors.append(e)
                )
                p.poll(0)
            assert p.flush(10) == 0 and not errors, errors

        return produce

    producer("all", old)([b"common-%d" % i for i in range(100)])
    epoch_before = cluster.state(topic, 0)["leader_epoch"]
    to_old_leader = producer("1", old)
    cluster.pause(follower)
    try:
        # A fetch the follower sent just before it froze is still answered (into its socket buffer)
        # when its long-poll (replica.fetch.wait.max.ms, 500 ms) ends: let that happen first, so
        # none of the next records can reach it. All this well within replica.lag.time.max.ms
        # (2 s), so the follower is still in the ISR when the leader dies.
        time.sleep(0.7)
        to_old_leader([b"only-on-old-leader-%d" % i for i in range(20)])
        cluster.kill(old)
    finally:
        cluster.resume(follower)
    state = wait_for(
        lambda: (s := cluster.state(topic, 0))["leader"] == follower and s, 30, "the follower to take over"
    )
    assert state["leader_epoch"] > epoch_before
    producer("1", follower)([b"new-leader-%d" % i for i in range(30)])

    cluster.start(old)
    cluster.wait_isr(topic, 0, {old, follower})
    new_log = cluster.log_bytes(follower, topic, 0)
    wait_for(lambda: cluster.log_bytes(old, topic, 0) == new_log, 20, "the old leader's log to match")
    assert b"only-on-old-leader" not in new_log
    values = [v for _, v in read_partitions(cluster.bootstrap, topic, [0])[0]]
    assert values == [b"common-%d" % i for i in range(100)] + [b"new-leader-%d" % i for i in range(30)]

    # both replicas record the new epoch starting where the old leader's own records were cut off
    # (a change reaches the file off the event loop within ~500 ms, and always before a flush)
    def checkpoint(b: int) -> list[tuple[int, int]]:
        return LeaderEpochCheckpointFile(cluster.log_dir(b, topic, 0) / "leader-epoch-checkpoint").read()

    entry = (state["leader_epoch"], 100)
    for b in (follower, old):
        wait_for(lambda b=b: entry in checkpoint(b), 10, f"broker {b}'s epoch checkpoint")
    assert "truncating from 120 to 100" in cluster.server_log(old)  # its 20 records, nothing else


def _partition_dirs(cluster: Cluster, broker_id: int) -> set[str]:
    logs = cluster.log_dir(broker_id, "x").parent
    return {
        d.name
        for d in logs.iterdir()
        if d.is_dir() and parse_partition_dir_name(d.name) is not None and not is_special_dir_name(d.name)
    }


def test_fresh_partitions_survive_a_sigkill_of_every_broker_right_after_creation(cluster: Cluster) -> None:
    """A new replica is nothing on disk (its directory and files come with its first write, the
    leader-epoch checkpoint with its first batch): brokers SIGKILLed as soon as CreateTopics
    answers load every log they had made, none of the new topic's, get its replicas again from the
    controller's LeaderAndIsr, and every partition takes writes and serves them after the restart."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, partitions = topic_name("fresh"), 240
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 2)], operation_timeout=60)[topic].result(90)
    for b in cluster.broker_ids:
        cluster.kill(b)
    made = {b: _partition_dirs(cluster, b) for b in cluster.broker_ids}
    assert not any(n.startswith(f"{topic}-") for names in made.values() for n in names)
    for b in cluster.broker_ids:
        cluster.start(b)
    for b in cluster.broker_ids:
        # the last start's line: "loaded N logs from <dir>", or "no logs in <dir> yet"
        loads = re.findall(r"loaded (\d+) logs from|no logs in ", cluster.server_log(b))
        loaded = int(loads[-1] or 0) if loads else None
        assert loaded == len(made[b]), f"broker {b} loaded {loaded} of {len(made[b])}"
    replicas = {int(p): set(rs) for p, rs in cluster.topic(topic)["partitions"].items()}
    for p, rs in replicas.items():
        cluster.wait_isr(topic, p, rs, timeout=60)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    failed: list[object] = []
    for p in range(partitions):
        producer.produce(
            topic, value=b"v%d" % p, partition=p, on_delivery=lambda err, _m: err and failed.append(err)
        )
    assert producer.flush(60) == 0 and not failed
    got = read_partitions(cluster.bootstrap, topic, list(range(partitions)))
    assert got == {p: [(0, b"v%d" % p)] for p in range(partitions)}
    for p, rs in replicas.items():
        for b in rs:
            assert (cluster.log_dir(b, topic, p) / f"{0:020d}.log").exists()

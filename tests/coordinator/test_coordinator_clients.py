"""Consumer groups with real clients against one real broker process: kafka-python, confluent-kafka
(librdkafka 2.16), aiokafka and kcat (librdkafka 2.0.2) -- joins, rebalances, commits, restarts,
a member SIGKILLed mid-stream -- and the `__consumer_offsets` records read back over the wire
and decoded by an independent decoder."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from coordinator_harness import decode_record

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster

HERE = Path(__file__).parent
OVERRIDES = {
    # Not 0: kafka-python 3.0.12 can hang for good when its leader assigns before its metadata
    # knows the topic and it rejoins while the SyncGroup answer is in flight (it never installs
    # the assignment nor heartbeats again). A short initial delay lets its metadata arrive first.
    "group.initial.rebalance.delay.ms": "300",
    "offsets.topic.num.partitions": "10",
    "num.partitions": "4",
}


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(
        zookeeper_server, tmp_path_factory.mktemp("groups"), brokers=1, overrides=OVERRIDES
    ) as c:
        yield c


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def produce(bootstrap: str, topic: str, n: int, partitions: int = 4, start: int = 0) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        if topic not in admin.list_topics():
            admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(start, start + n):
        producer.send(topic, str(i).encode(), partition=i % partitions)
    producer.flush()
    producer.close()


def committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        found = admin.list_group_offsets({group: None})[group]
        return {(tp.topic, tp.partition): om.offset for tp, om in found.items()}
    finally:
        admin.close()


class PollingConsumer:
    """A kafka-python group member polling in its own thread, recording what it got."""

    def __init__(self, bootstrap: str, group: str, topic: str, client_id: str) -> None:
        from kafka import KafkaConsumer

        self.consumer = KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=client_id,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=300,
        )
        self.values: list[int] = []
        self.assignment: set[int] = set()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            batch = self.consumer.poll(100)
            with self._lock:
                self.values.extend(int(r.value) for rs in batch.values() for r in rs)
                self.assignment = {tp.partition for tp in self.consumer.assignment()}
            if batch:
                self.consumer.commit()
        self.consumer.close()

    def snapshot(self) -> tuple[set[int], list[int]]:
        with self._lock:
            return set(self.assignment), list(self.values)

    def close(self) -> None:
        self._stop.set()
        self.thread.join(20)


def wait_for(predicate, timeout: float = 30.0, what: str = "condition") -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_kafka_python_two_members_rebalance_commit_and_resume(cluster: LocalCluster) -> None:
    b = cluster.bootstrap_servers
    topic, group = name("kp"), name("kp-group")
    produce(b, topic, 200)
    a = PollingConsumer(b, group, topic, "kp-a")
    try:
        wait_for(lambda: a.snapshot()[0] == {0, 1, 2, 3}, what="a owning all partitions")
        second = PollingConsumer(b, group, topic, "kp-b")
        wait_for(
            lambda: a.snapshot()[0] == {0, 1} and second.snapshot()[0] == {2, 3}, what="range split over two"
        )
        produce(b, topic, 200, start=200)
        wait_for(lambda: len(set(a.snapshot()[1]) | set(second.snapshot()[1])) == 400, what="all records")
        second.close()  # leaves the group: `a` takes every partition back
        wait_for(lambda: a.snapshot()[0] == {0, 1, 2, 3}, what="a owning all partitions again")
    finally:
        a.close()
    assert committed(b, group) == {(topic, p): 100 for p in range(4)}
    # a restarted member resumes from the committed offsets: only new records arrive
    produce(b, topic, 8, start=400)
    again = PollingConsumer(b, group, topic, "kp-c")
    try:
        wait_for(lambda: len(again.snapshot()[1]) >= 8, what="new records")
        time.sleep(0.3)
        assert sorted(again.snapshot()[1]) == list(range(400, 408))
    finally:
        again.close()


def test_member_sigkilled_mid_stream_others_take_over(cluster: LocalCluster) -> None:
    b = cluster.bootstrap_servers
    topic, group = name("kill"), name("kill-group")
    produce(b, topic, 400)
    procs = [
        subprocess.Popen(
            [sys.executable, str(HERE / "coordinator_member.py"), b, group, topic],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    seen: list[set[int]] = [set() for _ in procs]
    assigned: list[set[int]] = [set() for _ in procs]

    def reader(i: int) -> None:
        for line in procs[i].stdout:  # type: ignore[union-attr]
            parts = line.split()
            if parts and parts[0] == "assigned":
                assigned[i] = {int(p) for p in parts[1:]}
            elif len(parts) == 3:
                seen[i].add(int(parts[2]))

    threads = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(3)]
    for t in threads:
        t.start()
    try:
        # three members share the four partitions
        wait_for(
            lambda: all(assigned) and set().union(*assigned) == {0, 1, 2, 3},
            what="all three members assigned",
        )
        victim = max(range(3), key=lambda i: len(assigned[i]))
        orphaned = set(assigned[victim])
        procs[victim].send_signal(signal.SIGKILL)
        procs[victim].wait(10)
        killed_at = time.monotonic()
        produce(b, topic, 400, start=400)
        # the killed member's partitions move to the others after its session timeout (6 s)
        wait_for(
            lambda: orphaned <= set().union(*(assigned[i] for i in range(3) if i != victim)),
            timeout=20,
            what="the killed member's partitions taken over",
        )
        takeover = time.monotonic() - killed_at
        assert 4.0 < takeover < 12.0, takeover
        wait_for(lambda: len(set().union(*seen)) == 800, timeout=20, what="every record consumed")
    finally:
        for p in procs:
            if p.poll() is None:
                p.stdin.close()  # type: ignore[union-attr]
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    assert set().union(*seen) == set(range(800))
    assert sum(committed(b, group).values()) == 800


def test_confluent_kafka_group_subscribe(cluster: LocalCluster) -> None:
    from confluent_kafka import Consumer

    b = cluster.bootstrap_servers
    topic, group = name("ck"), name("ck-group")
    produce(b, topic, 100)
    conf = {
        "bootstrap.servers": b,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 300,
    }
    consumers = [Consumer({**conf, "client.id": f"ck-{i}"}) for i in range(2)]
    for c in consumers:
        c.subscribe([topic])
    got: list[set[int]] = [set(), set()]
    deadline = time.monotonic() + 40
    try:
        while sum(map(len, got)) < 100 or not all(c.assignment() for c in consumers):
            assert time.monotonic() < deadline, f"got {sum(map(len, got))} records"
            for i, c in enumerate(consumers):
                msg = c.poll(0.05)
                if msg is not None and msg.error() is None:
                    got[i].add(int(msg.value()))
                    c.commit(msg, asynchronous=False)
        assignments = [{tp.partition for tp in c.assignment()} for c in consumers]
        assert assignments[0] | assignments[1] == {0, 1, 2, 3} and not assignments[0] & assignments[1]
    finally:
        for c in consumers:
            c.close()
    assert got[0] | got[1] == set(range(100))
    assert committed(b, group) == {(topic, p): 25 for p in range(4)}


def test_aiokafka_group(cluster: LocalCluster) -> None:
    from aiokafka import AIOKafkaConsumer

    b = cluster.bootstrap_servers
    topic, group = name("ak"), name("ak-group")
    produce(b, topic, 60)

    async def main() -> set[int]:
        consumers = [
            AIOKafkaConsumer(
                topic,
                bootstrap_servers=b,
                group_id=group,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                session_timeout_ms=6000,
                heartbeat_interval_ms=300,
            )
            for _ in range(2)
        ]
        for c in consumers:
            await c.start()
        got: set[int] = set()
        try:
            deadline = time.monotonic() + 40
            while len(got) < 60 or not all(c.assignment() for c in consumers):
                assert time.monotonic() < deadline, f"got {len(got)}"
                for c in consumers:
                    batch = await c.getmany(timeout_ms=100)
                    for records in batch.values():
                        got.update(int(r.value) for r in records)
                    if batch:
                        await c.commit()
        finally:
            for c in consumers:
                await c.stop()
        return got

    assert asyncio.run(asyncio.wait_for(main(), 60)) == set(range(60))
    assert committed(b, group) == {(topic, p): 15 for p in range(4)}


def test_kcat_balanced_consumer(cluster: LocalCluster) -> None:
    b = cluster.bootstrap_servers
    topic, group = name("kc"), name("kc-group")
    produce(b, topic, 40)
    out = subprocess.run(
        ["kcat", "-b", b, "-G", group, "-o", "beginning", "-e", "-q", "-f", "%s\n", topic],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert sorted(map(int, out.stdout.split())) == list(range(40))
    wait_for(lambda: committed(b, group) == {(topic, p): 10 for p in range(4)}, what="kcat's commits")


def test_consumer_offsets_records_decode(cluster: LocalCluster) -> None:
    """Read `__consumer_offsets` over the wire as Burrow does and decode it by hand."""
    from kafka import KafkaConsumer, TopicPartition

    b = cluster.bootstrap_servers
    topic, group = name("fmt"), name("fmt-group")
    produce(b, topic, 8)
    member = PollingConsumer(b, group, topic, "fmt-client")
    try:
        wait_for(lambda: len(member.snapshot()[1]) == 8, what="records")
    finally:
        member.close()
    reader = KafkaConsumer(bootstrap_servers=b, enable_auto_commit=False)
    try:
        parts = reader.partitions_for_topic("__consumer_offsets")
        tps = [TopicPartition("__consumer_offsets", p) for p in parts]
        reader.assign(tps)
        reader.seek_to_beginning(*tps)
        decoded = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            for records in reader.poll(200).values():
                decoded.extend(decode_record(r.key, r.value) for r in records)
            ours = [d for d in decoded if d["group"] == group]
            if any(d.get("members") == [] for d in ours) and len({d.get("partition") for d in ours}) >= 5:
                break
    finally:
        reader.close()
    ours = [d for d in decoded if d["group"] == group]
    offsets = {d["partition"]: d["offset"] for d in ours if d["key_version"] == 1}
    assert offsets == {0: 2, 1: 2, 2: 2, 3: 2}
    assert all(d["value_version"] == 3 for d in ours if d["key_version"] == 1)
    groups = [d for d in ours if d["key_version"] == 2]
    assert all(d["value_version"] == 1 for d in groups)
    stable = next(d for d in groups if d["members"])
    assert stable["protocol_type"] == "consumer" and stable["protocol"] in ("range", "roundrobin")
    [m] = stable["members"]
    assert m["client_id"] == "fmt-client" and m["client_host"] == "/127.0.0.1"
    assert groups[-1]["members"] == []  # the member left: the group record has no members


def consumer_groups_cli(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", "consumer-groups", "--bootstrap-server", bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_consumer_groups_cli(cluster: LocalCluster) -> None:
    b = cluster.bootstrap_servers
    topic, group = name("cli"), name("cli-group")
    produce(b, topic, 40)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return consumer_groups_cli(b, *args)

    member = PollingConsumer(b, group, topic, "cli-client")
    try:
        wait_for(lambda: len(member.snapshot()[1]) == 40, what="records")
        wait_for(lambda: sum(committed(b, group).values()) == 40, what="commits")
        active = run("--describe", "--group", group)
        assert active.returncode == 0, active.stderr
        rows = [line.split() for line in active.stdout.splitlines() if line.startswith(group)]
        # GROUP TOPIC PARTITION CURRENT LOG-END LAG CONSUMER-ID HOST CLIENT-ID, for the live member
        assert [r[1:6] for r in rows] == [[topic, str(p), "10", "10", "0"] for p in range(4)]
        assert all(r[6].startswith("cli-client-") and r[7].endswith("127.0.0.1") for r in rows), rows
        assert all(r[8] == "cli-client" for r in rows), rows
        busy = run("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
        assert busy.returncode != 0 and "still has active members" in busy.stderr
    finally:
        member.close()
    produce(b, topic, 12, start=40)  # lag 3 per partition

    listed = run("--list")
    assert listed.returncode == 0, listed.stderr
    assert group in listed.stdout.split()
    described = run("--describe", "--group", group)
    assert described.returncode == 0, described.stderr
    rows = [line.split() for line in described.stdout.splitlines() if line.startswith(group)]
    assert len(rows) == 4
    assert [r[1:6] for r in rows] == [[topic, str(p), "10", "13", "3"] for p in range(4)]
    assert "has no active members" in described.stdout
    planned = run("--reset-offsets", "--group", group, "--topic", topic, "--to-offset", "5")
    assert planned.returncode == 0, planned.stderr  # without --execute: a plan, nothing written
    assert [line.split()[1:4] for line in planned.stdout.splitlines() if line.startswith(group)] == [
        [topic, str(p), "5"] for p in range(4)
    ]
    assert committed(b, group) == {(topic, p): 10 for p in range(4)}
    to_offset = run("--reset-offsets", "--group", group, "--topic", topic, "--to-offset", "5", "--execute")
    assert to_offset.returncode == 0, to_offset.stderr
    assert committed(b, group) == {(topic, p): 5 for p in range(4)}
    to_latest = run("--reset-offsets", "--group", group, "--topic", topic, "--to-latest", "--execute")
    assert to_latest.returncode == 0, to_latest.stderr
    assert committed(b, group) == {(topic, p): 13 for p in range(4)}
    reset = run("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
    assert reset.returncode == 0, reset.stderr
    assert committed(b, group) == {(topic, p): 0 for p in range(4)}
    deleted = run("--delete", "--group", group)
    assert deleted.returncode == 0, deleted.stderr
    assert committed(b, group) == {}
    assert group not in run("--list").stdout.split()


def test_consumer_groups_cli_kafka_flags(cluster: LocalCluster, tmp_path: Path) -> None:
    """kafka-consumer-groups' flags an operator types by habit: TOPIC:P,P, --shift-by, --to-current,
    --to-datetime, --by-duration, --export / --from-file, --all-groups, --members, --state and
    --delete-offsets."""
    b = cluster.bootstrap_servers
    topic, group, other = name("flags"), name("flags-group"), name("flags-other")
    produce(b, topic, 40)  # 10 records in each of 4 partitions

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return consumer_groups_cli(b, *args)

    def ok(*args: str) -> str:
        result = run(*args)
        assert result.returncode == 0, result.stderr
        return result.stdout

    reset = ("--reset-offsets", "--group", group)
    ok(*reset, "--topic", topic, "--to-offset", "6", "--execute")
    ok("--reset-offsets", "--group", other, "--topic", f"{topic}:0", "--to-earliest", "--execute")
    assert committed(b, other) == {(topic, 0): 0}
    ok(*reset, "--topic", f"{topic}:1,2", "--shift-by", "-4", "--execute")
    assert committed(b, group) == {(topic, 0): 6, (topic, 1): 2, (topic, 2): 2, (topic, 3): 6}
    ok(*reset, "--topic", f"{topic}:1", "--shift-by", "100", "--execute")  # clamped to the log end
    assert committed(b, group)[(topic, 1)] == 10
    assert "NEW-OFFSET" in ok(*reset, "--topic", topic, "--to-current")
    ok(*reset, "--topic", topic, "--by-duration", "PT1H", "--execute")  # everything is newer: the start
    assert set(committed(b, group).values()) == {0}
    ok(*reset, "--topic", topic, "--to-datetime", "2999-01-01T00:00:00.000", "--execute")  # none that new
    assert set(committed(b, group).values()) == {10}
    exported = ok(*reset, "--topic", f"{topic}:3", "--to-offset", "7", "--export")
    assert exported.strip() == f"{topic},3,7"
    plan = tmp_path / "plan.csv"
    plan.write_text(exported)
    ok(*reset, "--from-file", str(plan), "--execute")
    assert committed(b, group)[(topic, 3)] == 7
    described = ok("--describe", "--all-groups")
    assert group in described and other in described
    assert "COORDINATOR (ID)" in ok("--describe", "--group", group, "--state")
    assert "#PARTITIONS" in ok("--describe", "--group", group, "--members")
    deleted = ok("--delete-offsets", "--group", group, "--topic", f"{topic}:0,1")
    assert deleted.count("Successful") == 2
    assert set(committed(b, group)) == {(topic, 2), (topic, 3)}
    bad = run(*reset, "--topic", f"{topic}:x", "--to-earliest")
    assert bad.returncode != 0 and "partitions must be numbers" in bad.stderr
    bad = run(*reset, "--topic", topic, "--by-duration", "one hour")
    assert bad.returncode != 0 and "ISO-8601" in bad.stderr


def test_zkafka_group_consumer_with_a_kafka_python_member(cluster: LocalCluster) -> None:
    from zkafka.client.group_consumer import GroupConsumer

    b = cluster.bootstrap_servers
    topic, group = name("zk"), name("zk-group")
    produce(b, topic, 400)
    opts = {
        "group_id": group,
        "topics": [topic],
        "auto_offset_reset": "earliest",
        "session_timeout_ms": 6000,
        "heartbeat_interval_ms": 300,
        "auto_commit_interval_ms": 200,
    }

    async def main() -> tuple[set[int], list[set[int]]]:
        got: set[int] = set()
        first = GroupConsumer(b, client_id="zk-a", **opts)
        await first.start()
        assert {tp.partition for tp in first.assignment()} == {0, 1, 2, 3}
        second = GroupConsumer(b, client_id="zk-b", **opts)
        joining = asyncio.create_task(second.start())
        while not joining.done():
            got.update(int(r.value) for r in await first.poll(50))
        await joining
        # a kafka-python member joins the same group: the protocols interoperate
        other = PollingConsumer(b, group, topic, "kp-in-zk-group")
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                for c in (first, second):
                    got.update(int(r.value) for r in await c.poll(50))
                sizes = (len(first.assignment()), len(second.assignment()), len(other.snapshot()[0]))
                if sorted(sizes) == [1, 1, 2] and len(got | set(other.snapshot()[1])) == 400:
                    break
            assignments = [{tp.partition for tp in c.assignment()} for c in (first, second)]
            assignments.append(other.snapshot()[0])
        finally:
            other.close()
        got |= set(other.snapshot()[1])
        await second.close()
        await first.close()
        return got, assignments

    got, assignments = asyncio.run(asyncio.wait_for(main(), 60))
    assert got == set(range(400))
    assert set().union(*assignments) == {0, 1, 2, 3} and sum(map(len, assignments)) == 4
    assert committed(b, group) == {(topic, p): 100 for p in range(4)}


def test_console_consumer_with_group(cluster: LocalCluster) -> None:
    b = cluster.bootstrap_servers
    topic, group = name("cc"), name("cc-group")
    produce(b, topic, 20)

    def console(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "zkafka.cli.main",
                "console-consumer",
                "--bootstrap-server",
                b,
                "--topic",
                topic,
                "--group",
                group,
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    first = console("--from-beginning", "--max-messages", "7")
    assert first.returncode == 0, first.stderr
    assert len(first.stdout.split()) == 7
    assert sum(committed(b, group).values()) == 7  # what was printed, not what was fetched
    second = console("--timeout-ms", "2000")
    assert second.returncode == 0, second.stderr
    assert sorted(map(int, first.stdout.split() + second.stdout.split())) == list(range(20))


def test_kcat_two_balanced_members_share_the_partitions(cluster: LocalCluster, tmp_path: Path) -> None:
    """Two `kcat -G` processes (librdkafka 2.0.2) in one group split the topic; together they see
    every record, each sees some."""
    b = cluster.bootstrap_servers
    topic, group = name("kc2"), name("kc2-group")
    produce(b, topic, 4)  # creates the 4-partition topic
    outputs = [tmp_path / f"member-{i}.txt" for i in range(2)]
    procs = []
    for out in outputs:
        with open(out, "w") as f:
            procs.append(
                subprocess.Popen(
                    ["kcat", "-b", b, "-G", group, "-o", "beginning", "-q", "-u", "-f", "%s\n", topic],
                    stdout=f,
                    stderr=subprocess.DEVNULL,
                )
            )
    try:
        # both members own partitions before the records arrive
        from confluent_kafka import ConsumerGroupState
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": b})

        def two_stable_members() -> bool:
            desc = admin.describe_consumer_groups([group])[group].result(10)
            return desc.state == ConsumerGroupState.STABLE and len(desc.members) == 2

        wait_for(two_stable_members, timeout=60, what="two stable kcat members")
        produce(b, topic, 200, start=4)

        def seen() -> list[list[int]]:
            return [[int(x) for x in out.read_text().split()] for out in outputs]

        wait_for(
            lambda: {v for vals in seen() for v in vals} >= set(range(204)), timeout=60, what="all records"
        )
        per_member = seen()
        assert all(any(v >= 4 for v in vals) for vals in per_member), "each member consumed some records"
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def test_offsets_topic_is_created_compacted_with_the_configured_partitions(cluster: LocalCluster) -> None:
    """__consumer_offsets, made on a group's first use: offsets.topic.num.partitions partitions,
    cleanup.policy=compact (its keys are group/topic/partition: only the latest commit matters)."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    b = cluster.bootstrap_servers
    topic, group = name("first-use"), name("first-use-group")
    produce(b, topic, 4)
    member = PollingConsumer(b, group, topic, "first-use-client")
    try:
        wait_for(lambda: len(member.snapshot()[1]) == 4, what="records")
    finally:
        member.close()
    admin = KafkaAdminClient(bootstrap_servers=b)
    try:
        [described] = admin.describe_topics(["__consumer_offsets"])
        assert described["is_internal"] and len(described["partitions"]) == 10
        assert all(len(p["replica_nodes"]) == 1 for p in described["partitions"])  # one broker here
        found = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "__consumer_offsets")])
        [entries] = [by_name["__consumer_offsets"] for by_name in found.values()]
        policy = entries["cleanup.policy"]
        assert (policy["value"] if isinstance(policy, dict) else policy) == "compact", policy
    finally:
        admin.close()


def test_list_groups_by_state_and_delete_group_offsets(cluster: LocalCluster) -> None:
    """ListGroups v4 (KIP-518, states filter) and OffsetDelete (KIP-496) through two independent
    admin clients: kafka-python and confluent-kafka (librdkafka)."""
    from confluent_kafka import ConsumerGroupState
    from confluent_kafka.admin import AdminClient
    from kafka.admin import KafkaAdminClient
    from kafka.errors import CoordinatorNotAvailableError
    from kafka.structs import OffsetAndMetadata, TopicPartition

    bootstrap = cluster.bootstrap_servers
    topic, group = name("offset-delete"), name("offset-delete-group")
    produce(bootstrap, topic, 10, partitions=2)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        wanted = {
            TopicPartition(topic, 0): OffsetAndMetadata(3, "", -1),
            TopicPartition(topic, 1): OffsetAndMetadata(4, "", -1),
        }

        def commit() -> bool:
            try:
                admin.alter_group_offsets(group, wanted)
            except CoordinatorNotAvailableError:  # __consumer_offsets is still being created
                return False
            return True

        wait_for(commit, 30, "the offsets topic")
        assert committed(bootstrap, group) == {(topic, 0): 3, (topic, 1): 4}
        listed = confluent_groups(bootstrap, {ConsumerGroupState.EMPTY})
        assert group in listed
        assert group not in confluent_groups(bootstrap, {ConsumerGroupState.STABLE})
        admin.delete_group_offsets(group, [TopicPartition(topic, 0)])
        assert committed(bootstrap, group) == {(topic, 1): 4}
    finally:
        admin.close()
    assert AdminClient  # the confluent-kafka admin client is used through confluent_groups


def confluent_groups(bootstrap: str, states: set) -> set[str]:  # type: ignore[type-arg]
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    result = admin.list_consumer_groups(states=states, request_timeout=15).result(20)
    assert not result.errors, result.errors
    return {g.group_id for g in result.valid}

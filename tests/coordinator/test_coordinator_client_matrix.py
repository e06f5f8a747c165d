"""One scenario, four real clients (kafka-python, confluent-kafka, aiokafka and `kcat -G`), on three
brokers with `__consumer_offsets` replicated three times: two members share a topic, a third joins,
one of the first two is SIGKILLed while records stream in, then the group's coordinator broker is
SIGKILLed while more arrive. Every record is consumed at least once, no acknowledged commit is
lost across the coordinator move, and once the members close the group has committed everything."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from zkafka.client.group_admin import GroupAdmin
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster, wait_until_ready

HERE = Path(__file__).parent
PARTITIONS = 4
BATCH = 300  # records per step: values 0..899 in all
OVERRIDES = {
    # not 0: see test_coordinator_clients.OVERRIDES (kafka-python's metadata race)
    "group.initial.rebalance.delay.ms": "300",
    "offsets.topic.num.partitions": "6",
    "offsets.topic.replication.factor": "3",
    "default.replication.factor": "3",
    "num.partitions": str(PARTITIONS),
    "zookeeper.session.timeout.ms": "3000",
    # leaderships stay where the failover put them when the killed broker comes back, so the
    # next case starts from a quiet cluster
    "auto.leader.rebalance.enable": "false",
    # the last broker standing cannot hand its leaderships to anyone: skip the retries at teardown
    "controlled.shutdown.enable": "false",
}
SESSION_TIMEOUT_MS = 6000
KCAT_GROUP_LINE = re.compile(r"Group \S+ rebalanced \(memberid [^)]*\): (assigned|revoked):(.*)")


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(
        zookeeper_server, tmp_path_factory.mktemp("matrix"), brokers=3, overrides=OVERRIDES
    ) as c:
        yield c


def wait_for(predicate: Callable[[], object], timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def create_topic(bootstrap: str, topic: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 3)])
    finally:
        admin.close()


def produce(bootstrap: str, topic: str, values: range, sent: list[int] | None = None) -> None:
    """Keyless records, value i to partition i % 4; acks=all, retried through leader moves."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks="all", retries=100, retry_backoff_ms=200, request_timeout_ms=10_000
    )
    try:
        for i in values:
            producer.send(topic, str(i).encode(), partition=i % PARTITIONS)
            if sent is not None:
                sent[0] += 1
                if i % 20 == 0:
                    time.sleep(0.02)  # a stream, not one burst
        producer.flush(60)
    finally:
        producer.close(10)


def committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20_000)
    try:
        found = admin.list_group_offsets({group: None})[group]
        return {tp.partition: om.offset for tp, om in found.items() if tp.topic == topic}
    finally:
        admin.close()


def coordinator_of(bootstrap: str, group: str) -> int:
    async def find() -> int:
        async with GroupAdmin(bootstrap, request_timeout_ms=10_000) as groups:
            return await groups.coordinator(group, refresh=True)

    return asyncio.run(asyncio.wait_for(find(), 30))


class Member:
    """One group member process; what it printed is collected by reader threads."""

    def __init__(self, client: str, bootstrap: str, group: str, topic: str, log: Path) -> None:
        self.client = client
        self.assigned: set[int] | None = None  # None until its first assignment
        self.values: set[int] = set()
        self.stderr: list[str] = []  # the last lines it printed there, for a failure's message
        self._log = open(log, "w")  # noqa: SIM115 - closed in wait()
        if client == "kcat":
            cmd = [
                "kcat", "-b", bootstrap, "-G", group, "-u", "-f", "%p %o %s\\n",
                # not `-o beginning`: in -G mode kcat applies it to every assignment, overriding
                # the committed offsets
                "-X", "auto.offset.reset=earliest",
                "-X", f"session.timeout.ms={SESSION_TIMEOUT_MS}",
                "-X", "heartbeat.interval.ms=500",
                "-X", "auto.commit.interval.ms=200",
                topic,
            ]  # fmt: skip
            stdin = subprocess.DEVNULL
        else:
            cmd = [sys.executable, str(HERE / "coordinator_member.py"), bootstrap, group, topic, client]
            stdin = subprocess.PIPE
        self.proc = subprocess.Popen(
            cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read_stdout(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            parts = line.split()
            if parts and parts[0] == "assigned":
                self.assigned = {int(p) for p in parts[1:]}
            elif len(parts) == 3:
                self.values.add(int(parts[2]))

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:  # type: ignore[union-attr]
            self._log.write(line)
            self._log.flush()
            self.stderr = [*self.stderr[-29:], line.rstrip()]
            m = KCAT_GROUP_LINE.search(line)
            if m and self.client == "kcat":
                parts = {int(p) for p in re.findall(r"\[(\d+)\]", m.group(2))}
                self.assigned = parts if m.group(1) == "assigned" else set()

    def owned(self) -> set[int]:
        return set(self.assigned or ())

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.wait(10)

    def close(self) -> None:
        """Graceful: stdin closed (our members), SIGTERM (kcat); the consumer leaves the group."""
        if self.proc.poll() is not None:
            return
        if self.client == "kcat":
            self.proc.send_signal(signal.SIGTERM)
        else:
            self.proc.stdin.close()  # type: ignore[union-attr]

    def wait(self, timeout: float = 20) -> int:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for t in self._threads:
            t.join(5)
        self._log.close()
        return self.proc.returncode


def settled(members: list[Member]) -> bool:
    """Each member owns something and together they own every partition exactly once."""
    owned = [m.owned() for m in members]
    return all(owned) and set().union(*owned) == set(range(PARTITIONS)) and sum(map(len, owned)) == PARTITIONS


@pytest.mark.slow
@pytest.mark.timeout(150)
@pytest.mark.parametrize("client", ["kafka-python", "confluent", "aiokafka", "kcat"])
def test_group_survives_member_and_coordinator_sigkill(
    cluster: LocalCluster, client: str, tmp_path: Path
) -> None:
    for bid in cluster.brokers:  # the previous case restarted the broker it killed
        if not cluster.broker_alive(bid):
            cluster.start_broker(bid)
    wait_until_ready(cluster)
    b = cluster.bootstrap_servers
    topic, group = f"mx-{uuid.uuid4().hex[:8]}", f"mx-group-{uuid.uuid4().hex[:8]}"
    create_topic(b, topic)
    produce(b, topic, range(0, BATCH))
    members: list[Member] = []
    started = time.monotonic()
    phases: list[str] = []

    def phase(what: str) -> None:
        phases.append(f"{what} {time.monotonic() - started:.1f}s")

    killed_broker: int | None = None
    stream: threading.Thread | None = None

    def join() -> Member:
        member = Member(client, b, group, topic, tmp_path / f"member-{len(members)}.log")
        members.append(member)
        return member

    try:
        # 1-2. two members share the four partitions
        join(), join()
        wait_for(lambda: settled(members), timeout=40, what="two members owning every partition")
        phase("two")

        # 3. a third joins and gets its share
        newcomer = join()
        wait_for(lambda: settled(members), timeout=40, what="three members owning every partition")
        assert newcomer.owned()
        phase("three")

        # 4. one of the first two is SIGKILLed while records stream in; its partitions move on
        # after its session times out
        victim = max(members[:2], key=lambda m: len(m.owned()))
        orphaned = victim.owned()
        sent = [0]
        stream = threading.Thread(target=produce, args=(b, topic, range(BATCH, 2 * BATCH), sent), daemon=True)
        stream.start()
        wait_for(lambda: sent[0] >= BATCH // 3, what="the stream under way")
        victim.kill()
        survivors = [m for m in members if m is not victim]
        stream.join(60)
        assert not stream.is_alive()
        wait_for(
            lambda: settled(survivors) and orphaned <= set().union(*(m.owned() for m in survivors)),
            timeout=40,
            what="the killed member's partitions taken over",
        )
        phase("takeover")

        # 5. the coordinator broker is SIGKILLed while more records arrive; commits made before
        # survive on the new leader of the group's __consumer_offsets partition
        before = committed(b, group, topic)
        assert sorted(before) == list(range(PARTITIONS)), before
        killed_broker = coordinator_of(b, group)
        cluster.kill_broker(killed_broker)
        alive = ",".join(br.bootstrap for bid, br in cluster.brokers.items() if bid != killed_broker)
        produce(alive, topic, range(2 * BATCH, 3 * BATCH))
        deadline = time.monotonic() + 40
        while (new_coordinator := coordinator_of(alive, group)) == killed_broker:
            assert time.monotonic() < deadline, "no new coordinator"
            time.sleep(0.2)
        after = committed(alive, group, topic)
        phase("coordinator moved")
        assert all(after.get(p, -1) >= o for p, o in before.items()), (before, after)

        # 6. every record reaches some member; all of them end up committed
        everything = set(range(3 * BATCH))
        wait_for(
            lambda: set().union(*(m.values for m in members)) >= everything,
            timeout=60,
            what="every record consumed",
        )
        phase("consumed")
        end = {p: 3 * BATCH // PARTITIONS for p in range(PARTITIONS)}
        wait_for(lambda: committed(alive, group, topic) == end, timeout=30, what="everything committed")
        phase("committed")
        for m in survivors:
            m.close()
        for m in survivors:
            assert m.wait() in (0, -signal.SIGTERM), (
                f"{m.client} exited with {m.proc.returncode}; its stderr ended:\n" + "\n".join(m.stderr)
            )
        final = committed(alive, group, topic)
        assert all(final[p] >= o for p, o in after.items())
        assert final == end, final
        assert set().union(*(m.values for m in members)) == everything
        phase("closed")
        print(f"{client}: coordinator {killed_broker} -> {new_coordinator}; {', '.join(phases)}")
    finally:
        for m in members:
            if m.proc.poll() is None:
                m.proc.kill()
            m.wait(10)
        if stream is not None:
            stream.join(30)
        if killed_broker is not None and not cluster.broker_alive(killed_broker):
            cluster.start_broker(killed_broker)
            wait_until_ready(cluster)

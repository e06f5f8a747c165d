"""The seeds' ZooKeeper consumer: the worked examples of seeds 001/002, the znode formats, watches
(new members, new partitions, new topics for wildcards, session expiry), offsets, and a churn test
with several processes -- one SIGKILLed -- that checks ownership never overlaps, takeover happens
within the session timeout and every record is consumed at least once."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from zkafka.client.admin import AdminClient
from zkafka.client.producer import Producer
from zkafka.client.types import TopicPartition
from zkafka.client.zk_consumer import (
    ConsumerRebalanceFailedError,
    ZookeeperConsumer,
    new_consumer_id,
    range_assignment,
    roundrobin_assignment,
    thread_ids,
    topic_filter_regex,
)
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import make_topic, running_cluster

HERE = Path(__file__).parent
FAST = {"rebalance_backoff_ms": 100, "auto_commit_interval_ms": 100, "zookeeper_session_timeout_ms": 3000}


# -- the assignment algorithm: the seeds' worked examples -----------------------------------------------


def _by_thread(assignment: dict[TopicPartition, str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for tp, thread in sorted(assignment.items()):
        out.setdefault(thread, []).append(tp.partition)
    return out


def test_seed_example_four_partitions_two_consumers() -> None:
    threads = thread_ids("g_C0", 1) + thread_ids("g_C1", 1)
    assert _by_thread(range_assignment({"topic1": [3, 1, 0, 2]}, {"topic1": threads})) == {
        "g_C0-0": [0, 1],
        "g_C1-0": [2, 3],
    }


def test_seed_example_three_consumers_one_thread_each() -> None:
    threads = [t for n in ("node1", "node2", "node3") for t in thread_ids(f"report_{n}", 1)]
    assert _by_thread(range_assignment({"report-log": [0, 1, 2, 3]}, {"report-log": threads})) == {
        "report_node1-0": [0, 1],
        "report_node2-0": [2],
        "report_node3-0": [3],
    }


def test_seed_example_three_consumers_two_threads_each() -> None:
    threads = [t for n in ("node1", "node2", "node3") for t in thread_ids(f"report_{n}", 2)]
    got = _by_thread(range_assignment({"report-log": [0, 1, 2, 3]}, {"report-log": threads}))
    # node1 consumes 0 and 1, node2 2 and 3, node3 idles
    assert got == {"report_node1-0": [0], "report_node1-1": [1], "report_node2-0": [2], "report_node2-1": [3]}


def test_reference_example_and_string_order_of_thread_ids() -> None:
    got = _by_thread(range_assignment({"t": range(5)}, {"t": ["C2-1", "C1-0", "C2-0", "C1-1"]}))
    assert got == {"C1-0": [0, 1], "C1-1": [2], "C2-0": [3], "C2-1": [4]}
    # thread ids compare as strings: "c-10" sorts before "c-2"
    got = _by_thread(range_assignment({"t": range(11)}, {"t": thread_ids("c", 11)}))
    assert got["c-0"] == [0] and got["c-1"] == [1] and got["c-10"] == [2] and got["c-2"] == [3]


def test_roundrobin_deals_by_hash_order_and_passes_over_unsubscribed_threads() -> None:
    threads = {"a": ["x-0", "y-0"], "b": ["y-0", "x-0"]}
    got = roundrobin_assignment({"a": [0, 1], "b": [0, 1]}, threads)
    assert sorted(got.values()).count("x-0") == 2 and sorted(got.values()).count("y-0") == 2
    assert got == roundrobin_assignment({"a": [1, 0], "b": [0, 1]}, threads)  # deterministic
    # Java hashCodes: "[a,0]" < "[a,1]" < "[b,0]" < "[b,1]", so the deal runs a0 a1 b0 b1
    assert [got[TopicPartition(t, p)] for t, p in (("a", 0), ("a", 1), ("b", 0), ("b", 1))] == [
        "x-0",
        "y-0",
        "x-0",
        "y-0",
    ]
    # 1.x: a thread not subscribed to a topic is passed over (0.8.2 refused such groups)
    mixed = roundrobin_assignment({"a": [0, 1], "b": [0, 1]}, {"a": ["x-0", "y-0"], "b": ["x-0"]})
    assert mixed == {
        TopicPartition("a", 0): "x-0",
        TopicPartition("a", 1): "y-0",
        TopicPartition("b", 0): "x-0",
        TopicPartition("b", 1): "x-0",
    }
    assert roundrobin_assignment({"a": [0]}, {"a": []}) == {}


def test_consumer_id_rule_and_filters() -> None:
    cid = new_consumer_id("grp")
    assert re.fullmatch(rf"grp_{re.escape(socket.gethostname())}-\d{{13}}-[0-9a-f]{{8}}", cid), cid
    assert new_consumer_id("grp", "node1") == "grp_node1"
    assert topic_filter_regex("' a.* , b '").pattern == "a.*|b"
    assert topic_filter_regex("a.*").fullmatch("ab") and not topic_filter_regex("a").fullmatch("ab")


def test_bad_options() -> None:
    from zkafka.client.errors import ConfigError

    for kwargs in (
        {},
        {"topics": {"t": 1}, "whitelist": "x"},
        {"topics": {"t": 0}},
        {"whitelist": "(", "streams": 1},
        {"topics": {"t": 1}, "auto_offset_reset": "middle"},
        {"topics": {"t": 1}, "partition_assignment_strategy": "sticky"},
    ):
        with pytest.raises(ConfigError):
            ZookeeperConsumer("g", zookeeper="127.0.0.1:1", **kwargs)


# -- with ZooKeeper and a broker ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("zkc"), brokers=1) as c:
        yield c


def run(coro, timeout: float = 60):  # type: ignore[no-untyped-def]
    return asyncio.run(asyncio.wait_for(coro, timeout))


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def zk_read(cluster: LocalCluster, path: str) -> bytes | None:
    zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
    zk.start(10)
    try:
        return zk.get(path)[0] if zk.exists(path) else None
    finally:
        zk.stop()
        zk.close()


async def until(predicate, timeout: float = 20, what: str = "condition") -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def owned_partitions(c: ZookeeperConsumer) -> dict[str, list[int]]:
    return _by_thread(c.owned())


def test_worked_examples_on_zookeeper(cluster: LocalCluster) -> None:
    topic, group = name("report-log"), name("g")

    async def main() -> None:
        await make_topic(cluster, topic, 4)
        for streams, expected in (
            (1, {"node1": [0, 1], "node2": [2], "node3": [3]}),
            (2, {"node1": [0, 1], "node2": [2, 3], "node3": []}),
        ):
            consumers = [
                ZookeeperConsumer(
                    f"{group}-{streams}",
                    topics={topic: streams},
                    zookeeper=cluster.zookeeper_connect,
                    consumer_id=node,
                    **FAST,
                )
                for node in ("node1", "node2", "node3")
            ]
            for c in consumers:
                await c.start()
            try:

                def settled(
                    consumers: list[ZookeeperConsumer] = consumers, expected: dict[str, list[int]] = expected
                ) -> bool:
                    got = {
                        c.consumer_id.rsplit("_", 1)[1]: sorted(tp.partition for tp in c.owned())
                        for c in consumers
                    }
                    return got == expected

                await until(settled, what=f"the seeds' assignment with {streams} threads")
                # the owner znodes hold the thread ids
                for c in consumers:
                    for tp, thread in c.owned().items():
                        path = f"/consumers/{group}-{streams}/owners/{topic}/{tp.partition}"
                        assert zk_read(cluster, path) == thread.encode()
                        assert thread.startswith(f"{group}-{streams}_node")
            finally:
                for c in consumers:
                    await c.close()

    run(main())


def test_registration_znode_and_default_ids_follow_start_order(cluster: LocalCluster) -> None:
    topic, group = name("t"), name("g")

    async def main() -> None:
        await make_topic(cluster, topic, 4)
        first = ZookeeperConsumer(group, topics={topic: 1}, zookeeper=cluster.zookeeper_connect, **FAST)
        await first.start()
        await asyncio.sleep(0.01)
        second = ZookeeperConsumer(group, topics={topic: 1}, zookeeper=cluster.zookeeper_connect, **FAST)
        await second.start()
        try:
            raw = zk_read(cluster, f"/consumers/{group}/ids/{first.consumer_id}")
            doc = json.loads(raw)  # type: ignore[arg-type]
            assert doc["version"] == 1 and doc["subscription"] == {topic: 1} and doc["pattern"] == "static"
            assert isinstance(doc["timestamp"], str) and doc["timestamp"].isdigit()
            await until(lambda: sorted(tp.partition for tp in first.owned()) == [0, 1], what="first owns 0,1")
            await until(
                lambda: sorted(tp.partition for tp in second.owned()) == [2, 3], what="second owns 2,3"
            )
        finally:
            await second.close()
        # the second left: the first takes everything back
        await until(lambda: len(first.owned()) == 4, what="first owns all")
        await first.close()

    run(main())


def test_wildcard_subscription_follows_new_topics_and_partitions(cluster: LocalCluster) -> None:
    prefix = name("wild")
    group = name("g")

    async def main() -> None:
        await make_topic(cluster, f"{prefix}-a", 2, records=4)
        c = ZookeeperConsumer(
            group,
            whitelist=f"{prefix}-.*",
            zookeeper=cluster.zookeeper_connect,
            auto_offset_reset="smallest",
            **FAST,
        )
        await c.start()
        try:
            doc = json.loads(zk_read(cluster, f"/consumers/{group}/ids/{c.consumer_id}"))  # type: ignore[arg-type]
            assert doc["pattern"] == "white_list" and doc["subscription"] == {f"{prefix}-.*": 1}
            assert {tp.topic for tp in c.owned()} == {f"{prefix}-a"}
            await make_topic(cluster, f"{prefix}-b", 1, records=3)  # /brokers/topics children watch
            await until(lambda: TopicPartition(f"{prefix}-b", 0) in c.owned(), what="the new topic")
            async with AdminClient(cluster.bootstrap_servers) as admin:
                await admin.create_partition(f"{prefix}-a", 3)  # the topic znode's data watch
            await until(lambda: TopicPartition(f"{prefix}-a", 2) in c.owned(), what="the new partition")
            got = set()
            deadline = time.monotonic() + 15
            while len(got) < 7 and time.monotonic() < deadline:
                got |= {(r.topic, r.value) for r in await c.poll(200)}
            assert len(got) == 7
        finally:
            await c.close()
        other = ZookeeperConsumer(group, blacklist=f"{prefix}-a", zookeeper=cluster.zookeeper_connect, **FAST)
        await other.start()
        try:
            assert f"{prefix}-a" not in {tp.topic for tp in other.owned()}
            assert f"{prefix}-b" in {tp.topic for tp in other.owned()}
            assert "__consumer_offsets" not in {tp.topic for tp in other.owned()}
        finally:
            await other.close()

    run(main())


def test_automatic_commits_never_pass_a_record_still_being_processed(cluster: LocalCluster) -> None:
    """At-least-once with an application that awaits while it processes: the commit timer fires
    mid-processing, yet the committed offset stops at the record in hand (iterator) or at the
    first record of the batch in hand (poll), never at what was fetched ahead."""
    topic = name("t")
    opts = {**FAST, "auto_commit_interval_ms": 50, "auto_offset_reset": "smallest"}

    def committed(group: str) -> bytes | None:
        return zk_read(cluster, f"/consumers/{group}/offsets/{topic}/0")

    async def processing() -> None:  # long enough for several automatic commits
        await asyncio.sleep(0.4)

    async def main() -> None:
        await make_topic(cluster, topic, 1, records=10)
        iterating = name("g")
        async with ZookeeperConsumer(
            iterating, topics={topic: 1}, zookeeper=cluster.zookeeper_connect, **opts
        ) as c:
            first = await anext(aiter(c))  # the consumer has fetched all ten by now
            await processing()
            assert committed(iterating) == str(first.offset).encode()
            second = await anext(aiter(c))  # asking for the next says the first is done
            await processing()
            assert committed(iterating) == str(second.offset).encode()
            await c.commit()  # explicit: everything handed out so far
            assert committed(iterating) == str(second.offset + 1).encode()

        polling = name("g")
        async with ZookeeperConsumer(
            polling, topics={topic: 1}, zookeeper=cluster.zookeeper_connect, **opts
        ) as c:
            got: list = []
            while len(got) < 10:
                batch = await c.poll(300)
                got += batch
            await processing()  # the last batch is in hand: commits stop at its first record
            assert committed(polling) == str(batch[0].offset).encode()
            assert await c.poll(100) == []  # calling poll again says the batch is processed
            await processing()
            assert committed(polling) == b"10"

    run(main())


def test_claims_back_off_until_the_previous_owner_releases_or_give_up(cluster: LocalCluster) -> None:
    """A partition still owned by a consumer that is gone from ids (its owner znode not yet
    released) is retried every rebalance_backoff_ms; after rebalance_max_retries the consumer
    fails with ConsumerRebalanceFailedError, as Kafka's did."""
    topic = name("t")
    owner_path = f"/consumers/{{group}}/owners/{topic}/0"

    async def main() -> None:
        await make_topic(cluster, topic, 1)
        holder = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
        holder.start(10)
        try:
            stuck = name("g")
            holder.create(owner_path.format(group=stuck), b"gone-0", ephemeral=True, makepath=True)
            doomed = ZookeeperConsumer(
                stuck,
                topics={topic: 1},
                zookeeper=cluster.zookeeper_connect,
                **{**FAST, "rebalance_max_retries": 3},
            )
            with pytest.raises(ConsumerRebalanceFailedError):
                await doomed.start()
            await doomed.close()

            released = name("g")
            holder.create(owner_path.format(group=released), b"gone-0", ephemeral=True, makepath=True)
            loop = asyncio.get_running_loop()
            loop.call_later(0.5, holder.delete, owner_path.format(group=released))
            patient = ZookeeperConsumer(
                released,
                topics={topic: 1},
                zookeeper=cluster.zookeeper_connect,
                **{**FAST, "rebalance_max_retries": 30},
            )
            await patient.start()
            try:
                assert list(patient.owned()) == [TopicPartition(topic, 0)]
                owner = holder.get(owner_path.format(group=released))[0].decode()
                assert owner.startswith(patient.consumer_id)
            finally:
                await patient.close()
        finally:
            holder.stop()
            holder.close()

    run(main())


def test_offsets_commit_resume_and_reset(cluster: LocalCluster) -> None:
    topic, group = name("t"), name("g")

    async def main() -> None:
        await make_topic(cluster, topic, 2, records=10)
        opts = {**FAST, "auto_commit_enable": False}
        latest = ZookeeperConsumer(
            group + "-l", topics={topic: 1}, zookeeper=cluster.zookeeper_connect, **opts
        )
        await latest.start()
        assert await latest.poll(300) == []  # "largest": only records produced from now on
        await latest.close()
        c = ZookeeperConsumer(
            group,
            topics={topic: 1},
            zookeeper=cluster.zookeeper_connect,
            auto_offset_reset="smallest",
            **opts,
        )
        await c.start()
        got = []
        while len(got) < 6:
            got += await c.poll(300)
            got = got[:6] if len(got) > 6 else got
        # commit exactly what was handed over: partition -> next offset
        positions = {}
        for r in got:
            positions[TopicPartition(r.topic, r.partition)] = r.offset + 1
        assert await c.commit(positions) == positions
        await c.close()
        for tp, offset in positions.items():
            assert (
                zk_read(cluster, f"/consumers/{group}/offsets/{topic}/{tp.partition}") == str(offset).encode()
            )
        again = ZookeeperConsumer(group, topics={topic: 1}, zookeeper=cluster.zookeeper_connect, **opts)
        await again.start()
        rest = []
        deadline = time.monotonic() + 10
        while len(rest) < 4 and time.monotonic() < deadline:
            rest += await again.poll(200)
        await again.close()
        assert sorted(int(r.value) for r in got + rest) == list(range(10))

    run(main())


def test_session_expiry_reregisters_and_rebalances(cluster: LocalCluster) -> None:
    topic, group = name("t"), name("g")

    async def main() -> None:
        await make_topic(cluster, topic, 2)
        c = ZookeeperConsumer(group, topics={topic: 1}, zookeeper=cluster.zookeeper_connect, **FAST)
        await c.start()
        try:
            assert len(c.owned()) == 2
            session_id = c.zk.kazoo.client_id  # type: ignore[union-attr]
            # the classic way to expire a session: another client takes it over and closes it
            thief = KazooClient(hosts=cluster.zookeeper_connect, client_id=session_id, timeout=10)
            await asyncio.get_running_loop().run_in_executor(None, lambda: thief.start(10))
            await asyncio.get_running_loop().run_in_executor(None, thief.stop)
            thief.close()

            def new_session() -> bool:
                current = c.zk.kazoo.client_id  # type: ignore[union-attr]
                return current is not None and current[0] != session_id[0]

            await until(new_session, what="a new session")
            await until(lambda: len(c.owned()) == 2, what="partitions owned again")
            assert zk_read(cluster, f"/consumers/{group}/ids/{c.consumer_id}") is not None
            assert zk_read(cluster, f"/consumers/{group}/owners/{topic}/0") is not None
        finally:
            await c.close()

    run(main())


# -- several processes, churn, SIGKILL -------------------------------------------------------------------


class Member:
    def __init__(self, cluster: LocalCluster, group: str, topic: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "coordinator_zk_member.py"), cluster.zookeeper_connect, group, topic],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.consumer_id = ""
        self.records: set[str] = set()
        self.intervals: dict[int, list[list[float]]] = {}  # partition -> [[start, end], ...]
        self.killed_at: float | None = None
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            parts = line.split()
            if parts[0] == "id":
                self.consumer_id = parts[1]
            elif parts[0] == "own":
                self.intervals.setdefault(int(parts[1]), []).append([float(parts[2]), float("inf")])
            elif parts[0] == "drop":
                self.intervals[int(parts[1])][-1][1] = float(parts[2])
            elif parts[0] == "rec":
                self.records.add(parts[3])

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.killed_at = time.monotonic()
        for spans in self.intervals.values():
            if spans[-1][1] == float("inf"):
                spans[-1][1] = self.killed_at

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()  # type: ignore[union-attr]
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(5)
        ended = time.monotonic()
        for spans in self.intervals.values():
            if spans[-1][1] == float("inf"):
                spans[-1][1] = ended


class OwnerSampler:
    """Reads every owner znode of the group continuously."""

    def __init__(self, cluster: LocalCluster, group: str, topic: str) -> None:
        self.zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
        self.zk.start(10)
        self.path = f"/consumers/{group}/owners/{topic}"
        self.samples: list[tuple[float, dict[int, str]]] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            owners = {}
            for child in self.zk.get_children(self.path) if self.zk.exists(self.path) else []:
                try:
                    owners[int(child)] = self.zk.get(f"{self.path}/{child}")[0].decode()
                except Exception:  # released between the listing and the read
                    pass
            self.samples.append((time.monotonic(), owners))
            time.sleep(0.01)

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(5)
        self.zk.stop()
        self.zk.close()


def test_churn_with_processes_no_double_ownership_sigkill_takeover_at_least_once(
    cluster: LocalCluster,
) -> None:
    topic, group = name("churn"), name("churn-group")
    partitions = 6
    run(make_topic(cluster, topic, partitions))
    produced = 0
    stop_producing = threading.Event()

    def producer() -> None:
        nonlocal produced

        async def go() -> None:
            nonlocal produced
            async with Producer(cluster.bootstrap_servers, linger_ms=2) as p:
                while not stop_producing.is_set():
                    for _ in range(30):
                        await p.send(topic, str(produced).encode(), partition=produced % partitions)
                        produced += 1
                    await p.flush()
                    await asyncio.sleep(0.05)

        asyncio.run(go())

    sampler = OwnerSampler(cluster, group, topic)
    feeder = threading.Thread(target=producer, daemon=True)
    feeder.start()
    members = [Member(cluster, group, topic) for _ in range(3)]
    try:
        time.sleep(2.5)
        members.append(Member(cluster, group, topic))  # a member joins
        # Wait for the rebalance it causes to settle (the range assignment over the four), not a
        # fixed time: on a loaded machine two seconds were not always enough, and the victim, still
        # between releasing and claiming, owned nothing when it was chosen.
        victim = members[0]
        deadline = time.monotonic() + 30
        while True:
            threads = {f"{m.consumer_id}-0": m for m in members if m.consumer_id}
            settled = len(threads) == len(members) and sampler.samples
            if settled:
                want = range_assignment({topic: range(partitions)}, {topic: list(threads)})
                owners = {tp.partition: thread for tp, thread in want.items()}
                settled = sampler.samples[-1][1] == owners and all(
                    p in threads[t].intervals and threads[t].intervals[p][-1][1] == float("inf")
                    for p, t in owners.items()
                )
            if settled or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        victim_partitions = {p for p, spans in victim.intervals.items() if spans[-1][1] == float("inf")}
        assert victim_partitions, "the victim should own partitions once the join has settled"
        victim.kill()
        deadline = time.monotonic() + 10
        takeover = None
        while time.monotonic() < deadline:
            t, owners = sampler.samples[-1]
            if t > victim.killed_at and all(  # type: ignore[operator]
                p in owners and not owners[p].startswith(victim.consumer_id) for p in victim_partitions
            ):
                takeover = t - victim.killed_at  # type: ignore[operator]
                break
            time.sleep(0.02)
        assert takeover is not None, "the killed member's partitions were not taken over"
        assert takeover <= 3.0 + 1.5, f"takeover took {takeover:.1f} s with a 3 s session timeout"
        members[1].stop()  # a member leaves cleanly
        time.sleep(1.0)
        stop_producing.set()
        feeder.join(10)
        expected = {str(i) for i in range(produced)}
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and set().union(*(m.records for m in members)) != expected:
            time.sleep(0.1)
        settled_at = time.monotonic()
    finally:
        stop_producing.set()
        for m in members:
            m.stop()
        sampler.stop()
    # at-least-once: every record reached some member (nothing committed was skipped)
    assert set().union(*(m.records for m in members)) == expected
    # no two members ever fetched a partition at the same time
    for p in range(partitions):
        spans = sorted((s, e, m.consumer_id) for m in members for s, e in m.intervals.get(p, []))
        for (_, e1, m1), (s2, _, m2) in itertools.pairwise(spans):
            assert e1 <= s2, f"partition {p}: {m1} until {e1:.3f} overlaps {m2} from {s2:.3f}"
    # owner znodes only ever named threads of real members, and every partition ends up owned
    ids = {m.consumer_id for m in members}
    for _, owners in sampler.samples:
        for owner in owners.values():
            assert owner.rsplit("-", 1)[0] in ids, owner
    # the last complete picture is the range assignment over the two remaining members
    survivors = [f"{m.consumer_id}-0" for m in members[2:]]
    full = [owners for t, owners in sampler.samples if t < settled_at and len(owners) == partitions]
    expected_owners = range_assignment({topic: range(partitions)}, {topic: survivors})
    assert full[-1] == {tp.partition: thread for tp, thread in expected_owners.items()}
    print(f"takeover after SIGKILL: {takeover:.2f} s; produced {produced} records")


# -- the tools ----------------------------------------------------------------------------------------------


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_console_consumer_and_consumer_groups_with_zookeeper(cluster: LocalCluster) -> None:
    topic, group = name("console"), name("console-group")
    zk = cluster.zookeeper_connect
    run(make_topic(cluster, topic, 2, records=10))
    first = cli(
        "console-consumer",
        "--zookeeper",
        zk,
        "--group",
        group,
        "--topic",
        topic,
        "--from-beginning",
        "--max-messages",
        "6",
    )
    assert first.returncode == 0, first.stderr
    printed = first.stdout.split()
    assert len(printed) == 6 and "Processed a total of 6 messages" in first.stderr
    listed = cli("consumer-groups", "--zookeeper", zk, "--list")
    assert group in listed.stdout.split()
    described = cli("consumer-groups", "--zookeeper", zk, "--describe", "--group", group)
    assert described.returncode == 0, described.stderr
    rows = [line.split() for line in described.stdout.splitlines() if line.startswith(group)]
    assert [(r[1], r[2], r[4]) for r in rows] == [(topic, "0", "5"), (topic, "1", "5")]
    assert sum(int(r[3]) for r in rows) == 6 and sum(int(r[5]) for r in rows) == 4  # lag = end - committed
    # the rest, and nothing twice: the commit stopped at the last printed record
    second = cli(
        "console-consumer", "--zookeeper", zk, "--group", group, "--topic", topic, "--timeout-ms", "1500"
    )
    assert second.returncode == 0, second.stderr
    assert sorted(map(int, printed + second.stdout.split())) == list(range(10))
    reset = cli(
        "consumer-groups",
        "--zookeeper",
        zk,
        "--reset-offsets",
        "--group",
        group,
        "--topic",
        topic,
        "--to-earliest",
        "--execute",
    )
    assert reset.returncode == 0, reset.stderr
    assert zk_read(cluster, f"/consumers/{group}/offsets/{topic}/0") == b"0"
    deleted = cli("consumer-groups", "--zookeeper", zk, "--delete", "--group", group)
    assert deleted.returncode == 0, deleted.stderr
    assert zk_read(cluster, f"/consumers/{group}") is None
    # a whitelist and the default throw-away group, which is removed at exit
    wild = cli(
        "console-consumer",
        "--zookeeper",
        zk,
        "--whitelist",
        f"{topic}|nothing",
        "--from-beginning",
        "--timeout-ms",
        "1500",
    )
    assert wild.returncode == 0, wild.stderr
    assert sorted(map(int, wild.stdout.split())) == list(range(10))
    assert not [
        g
        for g in cli("consumer-groups", "--zookeeper", zk, "--list").stdout.split()
        if g.startswith("console-consumer-")
    ]
    bad = cli("console-consumer", "--zookeeper", zk, "--topic", topic, "--whitelist", "x")
    assert bad.returncode == 1 and "exactly one of" in bad.stderr

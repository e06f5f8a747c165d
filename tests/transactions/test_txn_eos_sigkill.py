"""The exactly-once proof (issue 15): a consume-transform-produce application (confluent-kafka's
transactional producer and a read_committed consumer in a group, the offsets sent with each
transaction) turns 100,000 input records into 100,000 output records on three brokers (replication
factor 3, min.insync.replicas 2), while the test SIGKILLs, one at a time and each restarted and
caught up before the next, the leader of an input partition, the leader of an output partition and
the transaction coordinator of the application's transactional id. A read_committed read of the
output then holds every input exactly once: the transactional checker finds no lost write, no
duplicate, no aborted read, no torn transaction and no offset going backwards or skipping.

The application does what Kafka's exactly-once examples do: on an abortable error it aborts and
rewinds the consumer to the group's committed offsets; on a fatal one it makes a new producer
(whose `init_transactions` fences the old one and aborts what it left open) and rewinds too.
"""

from __future__ import annotations

import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ElectionType,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from zkafka.chaos.txn_checker import Txn, check_transactions, encode_output, outputs_of
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol.groups.partitioning import offsets_partition_for
from zkafka.testing.cluster import running_cluster, wait_until_ready
from zkafka.transactions.log_records import transaction_partition_for

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

RECORDS = 100_000
PARTITIONS = 3
TXN_RECORDS = 1000
TXN_STATE_PARTITIONS = 4
OFFSETS_PARTITIONS = 3
ABORT_EVERY = 10
"""Every tenth transaction the application aborts on purpose (a failed transformation, say) and
rewinds, so the log holds aborted transactions for the read_committed read to skip."""
OVERRIDES = {
    "transaction.state.log.num.partitions": str(TXN_STATE_PARTITIONS),
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
    "offsets.topic.replication.factor": "3",  # the group's offsets must survive its leader's SIGKILL
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
}
INTERNAL = ("__consumer_offsets", "__transaction_state")


@pytest.fixture
def cluster(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path, brokers=3, overrides=OVERRIDES) as c:
        yield c


class App:
    """The consume-transform-produce loop, on its own thread. Every transaction it begins is
    logged (`txns`) with its sources and outcome, for the checker."""

    def __init__(
        self, bootstrap: str, source: str, sink: str, ends: dict[int, int], transactional_id: str, group: str
    ) -> None:
        self.bootstrap, self.source, self.sink, self.ends = bootstrap, source, sink, ends
        self.transactional_id, self.group = transactional_id, group
        self.txns: list[Txn] = []
        self.committed: dict[int, int] = {}
        """Input partition -> the offset this application knows it committed."""
        self.limit = 0
        """The app stops beginning transactions past this many inputs (so it cannot finish before
        every fault has been applied)."""
        self.stats = {"aborted_on_error": 0, "fatal": 0, "retried": 0, "rebalances": 0, "unstable_fetches": 0}
        self.client_errors: Counter[str] = Counter()
        """What librdkafka reported through error_cb (brokers down, timeouts): the faults were felt."""
        self.error: BaseException | None = None
        self.trace = ""
        self.stop = threading.Event()
        self.strike_at: int | None = None
        """Once this many inputs are committed, the next transaction parks while open (begun,
        records sent) until the test has struck: the fault lands inside a transaction every time,
        not when a poll of the test's happens to catch one open."""
        self.parked = threading.Event()
        self.resume = threading.Event()
        self.step = "starting"
        """What the loop is doing (for a failure's message)."""
        self.needs_rewind = False
        self.thread = threading.Thread(target=self._run, name="eos-app", daemon=True)

    @property
    def progress(self) -> int:
        return sum(self.committed.values())

    def _producer(self) -> Producer:
        p = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "transactional.id": self.transactional_id,
                "linger.ms": 5,
                # Kafka's default; a message not delivered within it fails the transaction, and
                # recovering from that needs KIP-360's epoch bump (InitProducerId v3), so the
                # producer turns fatal and is replaced
                "transaction.timeout.ms": 60000,
                "error_cb": self._client_error,
                # librdkafka's transaction manager on stderr (pytest shows it with a failure):
                # once (CI, 2026-11-29) commit_transaction(60) blocked 115 s, past its own timeout,
                # on a commit our coordinator had completed 33 ms after the EndTxn
                "debug": "eos",
            }
        )
        self._retrying(lambda: p.init_transactions(120))
        return p

    def __str__(self) -> str:
        return (
            f"app at {self.progress}/{RECORDS} ({self.step}), {len(self.txns)} transactions, {self.stats}, "
            f"client errors {dict(self.client_errors)}, error {self.error!r} {self.trace}"
        )

    def _client_error(self, error: KafkaError) -> None:
        self.client_errors[error.name()] += 1

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as e:  # reported by the test, with where it was raised
            self.error = e
            self.trace = traceback.format_exc()

    def _loop(self) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10000,
                "error_cb": self._client_error,
            }
        )

        def assigned(_c: Consumer, _partitions: list[TopicPartition]) -> None:
            # librdkafka fetched the committed offsets itself, perhaps before the last commit's
            # marker reached __consumer_offsets: the loop rewinds to stable ones
            self.needs_rewind = True
            self.stats["rebalances"] += 1

        consumer.subscribe([self.source], on_assign=assigned)
        producer = self._producer()
        n = 0
        try:
            while not self.stop.is_set():
                if all(self.committed.get(p, 0) >= end for p, end in self.ends.items()):
                    return
                if self.progress >= self.limit:
                    self.step = "waiting at the limit"
                    time.sleep(0.05)
                    continue
                self.step = "consuming"
                messages = [m for m in consumer.consume(TXN_RECORDS, 0.5) if m.error() is None]
                if self.needs_rewind:
                    self._rewind(consumer)
                    continue
                if not messages:
                    continue
                txn_id = f"{self.transactional_id}:{n}"
                n += 1
                sources = tuple(m.value().decode() for m in messages)
                offsets: dict[int, int] = {}
                for m in messages:
                    offsets[m.partition()] = max(offsets.get(m.partition(), 0), m.offset() + 1)
                outcome = self._transaction(
                    producer, consumer, txn_id, sources, offsets, n % ABORT_EVERY == 0
                )
                self.txns.append(Txn(txn_id, sources, outcome))
                if outcome == "commit":
                    self.committed.update(offsets)
                    continue
                if outcome == "unknown":  # fatal: a new producer fences this one
                    producer = self._producer()
                self._rewind(consumer)
        finally:
            consumer.close()

    def _transaction(
        self,
        producer: Producer,
        consumer: Consumer,
        txn_id: str,
        sources: tuple[str, ...],
        offsets: dict[int, int],
        abort: bool,
    ) -> str:
        try:
            self.step = f"{txn_id}: producing"
            producer.begin_transaction()
            for seq, source in enumerate(sources):
                producer.produce(self.sink, key=source.encode(), value=encode_output(source, txn_id, seq))
            if self.strike_at is not None and self.progress >= self.strike_at:
                self.strike_at = None
                self.step = f"{txn_id}: open, parked for the fault"
                self.parked.set()
                self.resume.wait(120)
                self.resume.clear()
            self.step = f"{txn_id}: sending offsets"
            producer.send_offsets_to_transaction(
                [TopicPartition(self.source, p, o) for p, o in offsets.items()],
                consumer.consumer_group_metadata(),
                60,
            )
            if abort:
                self._retrying(lambda: producer.abort_transaction(60))
                return "abort"
            self.step = f"{txn_id}: committing"
            self._retrying(lambda: producer.commit_transaction(60))
            return "commit"
        except KafkaException as e:
            error: KafkaError = e.args[0]
            self.step = f"{txn_id}: failed with {error}"
            if error.txn_requires_abort():
                try:
                    self._retrying(lambda: producer.abort_transaction(60))
                    self.stats["aborted_on_error"] += 1
                    return "abort"
                except KafkaException:
                    pass
            self.stats["fatal"] += 1
            return "unknown"

    def _retrying(self, call) -> None:  # type: ignore[no-untyped-def]
        for attempt in range(10):
            try:
                call()
                return
            except KafkaException as e:
                if not e.args[0].retriable() or attempt == 9:
                    raise
                self.stats["retried"] += 1

    def _rewind(self, consumer: Consumer) -> None:
        """Seek every assigned partition to the group's committed offset, once that offset is at
        least what this application knows it committed (what OffsetFetch's require_stable waits
        for: a commit whose marker has not reached __consumer_offsets yet is not visible)."""
        self.needs_rewind = False
        self.step = "rewinding"
        assignment = consumer.assignment()
        deadline = time.monotonic() + 60
        while True:
            try:
                committed = consumer.committed(assignment, 30)
            except KafkaException as e:  # the group coordinator moved (NOT_COORDINATOR): ask again
                if not e.args[0].retriable() and e.args[0].code() != KafkaError.NOT_COORDINATOR:
                    raise
                assert time.monotonic() < deadline, f"no committed offsets: {e}"
                self.stats["retried"] += 1
                time.sleep(0.2)
                continue
            stale = [tp for tp in committed if max(tp.offset, 0) < self.committed.get(tp.partition, 0)]
            if not stale:
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"committed offsets {committed} stay below {self.committed}")
            self.stats["unstable_fetches"] += 1
            time.sleep(0.2)
        for tp in committed:
            consumer.seek(
                TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING)
            )
            self.committed[tp.partition] = max(tp.offset, 0)


def _create(admin: AdminClient, *names: str) -> None:
    topics = [NewTopic(n, PARTITIONS, 3, config={"min.insync.replicas": "2"}) for n in names]
    for f in admin.create_topics(topics).values():
        f.result(60)


def _fill(bootstrap: str, topic: str) -> list[str]:
    p = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000, "acks": "all"}
    )
    sources = [f"in-{i:06d}" for i in range(RECORDS)]
    for s in sources:
        while True:
            try:
                p.produce(topic, value=s.encode())
                break
            except BufferError:
                p.poll(0.1)
    assert p.flush(120) == 0
    return sources


def _ends(admin: AdminClient, topic: str, isolation: IsolationLevel) -> dict[int, int]:
    asked = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(PARTITIONS)}
    answers = admin.list_offsets(asked, isolation_level=isolation, request_timeout=30)
    return {tp.partition: f.result(30).offset for tp, f in answers.items()}


def _leader(admin: AdminClient, topic: str, partition: int) -> int:
    return admin.list_topics(topic, timeout=30).topics[topic].partitions[partition].leader


def _wait(what: str, condition, timeout: float = 120, app: App | None = None) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}; {app}"
        time.sleep(0.2)


def _create_internal_topics(bootstrap: str, topic: str) -> None:
    """__transaction_state and __consumer_offsets exist once someone looked for a coordinator."""
    setup = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"setup-{uuid.uuid4().hex[:6]}"})
    setup.init_transactions(60)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"setup-{uuid.uuid4().hex[:6]}"})
    try:
        c.committed([TopicPartition(topic, 0)], 60)
    finally:
        c.close()


def _leaders(admin: AdminClient, topics: tuple[str, ...]) -> dict[tuple[str, int], int]:
    metadata = admin.list_topics(timeout=30).topics
    return {(t, p.id): p.leader for t in topics for p in metadata[t].partitions.values()}


def _led_elsewhere(layout: dict[tuple[str, int], int], topic: str, broker: int) -> int:
    return next(p for (t, p), leader in sorted(layout.items()) if t == topic and leader != broker)


def _elected(admin: AdminClient, layout: dict[tuple[str, int], int]) -> bool:
    """Ask for preferred leaders; True once every partition is led as in `layout`."""
    try:
        admin.elect_leaders(ElectionType.PREFERRED, None).result(30)
    except KafkaException:
        pass  # ELECTION_NOT_NEEDED for some partitions, or a broker not ready yet: look anyway
    try:
        return _leaders(admin, tuple({t for t, _ in layout})) == layout
    except (KafkaException, KeyError):
        return False


def _fully_replicated(admin: AdminClient, topics: tuple[str, ...]) -> bool:
    try:
        metadata = admin.list_topics(timeout=10).topics
        return all(
            len(p.isrs) == 3 and p.leader >= 0 for t in topics for p in metadata[t].partitions.values()
        )
    except (KafkaException, KeyError):
        return False


def _read(bootstrap: str, topic: str, isolation: str) -> list[tuple[str, int, int, bytes | None]]:
    """Every record of `topic` from the beginning, until each partition reports its end."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex[:6]}",
            "isolation.level": isolation,
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    out: list[tuple[str, int, int, bytes | None]] = []
    ended: set[int] = set()
    deadline = time.monotonic() + 120
    try:
        while len(ended) < PARTITIONS:
            assert time.monotonic() < deadline, (
                f"{isolation} read of {topic} did not end ({len(out)} records)"
            )
            for m in c.consume(10000, 1.0):
                if m.error() is not None:
                    assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                    ended.add(m.partition())
                    continue
                out.append((m.topic(), m.partition(), m.offset(), m.value()))
    finally:
        c.close()
    return out


def test_exactly_once_through_sigkills(cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    source, sink = f"eos-in-{uuid.uuid4().hex[:6]}", f"eos-out-{uuid.uuid4().hex[:6]}"
    _create(admin, source, sink)
    started = time.monotonic()
    inputs = _fill(bootstrap, source)
    filled = time.monotonic() - started
    ends = _ends(admin, source, IsolationLevel.READ_UNCOMMITTED)
    assert sum(ends.values()) == RECORDS

    # librdkafka's send_offsets_to_transaction can hang past its timeout when the group
    # coordinator's broker goes away (confluentinc/librdkafka#5511, #5456, open in 2.16): the
    # group's coordinator is kept alive, and every other broker is fair game
    _create_internal_topics(bootstrap, source)
    layout = _leaders(admin, (source, sink, *INTERNAL))
    group = f"eos-{uuid.uuid4().hex[:8]}"
    keep = layout[("__consumer_offsets", offsets_partition_for(group, OFFSETS_PARTITIONS))]
    transactional_id, txn_partition = next(
        (t, p)
        for t in (f"eos-{uuid.uuid4().hex[:8]}" for _ in range(100))
        if layout[("__transaction_state", p := transaction_partition_for(t, TXN_STATE_PARTITIONS))] != keep
    )
    victims = {
        "input leader": (source, _led_elsewhere(layout, source, keep)),
        "output leader": (sink, _led_elsewhere(layout, sink, keep)),
        "transaction coordinator": ("__transaction_state", txn_partition),
    }
    app = App(bootstrap, source, sink, ends, transactional_id, group)
    app.thread.start()
    kills: list[tuple[str, int]] = []
    try:
        for i, (role, (topic, partition)) in enumerate(victims.items()):
            # the app may run a little past the point of this fault, not into the next one's
            threshold = RECORDS * (i + 1) // 5
            app.limit = threshold + 5 * TXN_RECORDS
            app.strike_at = threshold
            _wait(
                f"a transaction open past {threshold} inputs before killing the {role}",
                lambda: app.parked.is_set() or app.error,
                app=app,
            )
            app.parked.clear()
            phase = time.monotonic()
            assert app.error is None, app
            victim = _leader(admin, topic, partition)
            assert victim != keep, (role, topic, partition, victim)
            kills.append((role, victim))
            cluster.kill_broker(victim)
            app.resume.set()
            # down until its leaderships moved (its ZooKeeper session expired): the app fails over
            _wait(
                f"{topic}-{partition} to move off broker {victim}",
                lambda t=topic, p=partition, v=victim: _leader(admin, t, p) != v,
                app=app,
            )
            cluster.start_broker(victim)
            wait_until_ready(cluster, 120)
            # leaders back where they were (Kafka's preferred replicas), as a rebalanced cluster
            _wait("the preferred leaders back", lambda: _elected(admin, layout), app=app)
            _wait(
                "every replica back in sync",
                lambda: _fully_replicated(admin, (source, sink, *INTERNAL)),
                app=app,
            )
            print(
                f"\n{role} (broker {victim}) killed at {app.progress}, "
                f"back in {time.monotonic() - phase:.1f}s"
            )
        app.limit = RECORDS
        app.thread.join(300)
        assert not app.thread.is_alive(), f"the app did not finish: {app}"
        assert app.error is None, app
    finally:
        app.stop.set()
        app.resume.set()
        app.thread.join(60)
    processed = time.monotonic() - started - filled

    # every transaction decided and its markers written: the output's LSO reaches its end
    _wait(
        "the output's last stable offsets",
        lambda: (
            _ends(admin, sink, IsolationLevel.READ_COMMITTED)
            == _ends(admin, sink, IsolationLevel.READ_UNCOMMITTED)
        ),
    )
    committed = outputs_of(_read(bootstrap, sink, "read_committed"))
    uncommitted = outputs_of(_read(bootstrap, sink, "read_uncommitted"))
    verdict = check_transactions(inputs, app.txns, committed, uncommitted_read=uncommitted)
    print(
        f"\nfilled {RECORDS} in {filled:.1f}s; processed in {processed:.1f}s "
        f"({RECORDS / processed:.0f} records/s) in {len(app.txns)} transactions; kills {kills}; "
        f"{app.stats}; client errors {dict(app.client_errors)}; "
        f"aborted txns in the log {len(verdict.aborted_txns)}; {verdict.counts()}"
    )
    assert verdict.ok, verdict.anomalies
    assert verdict.visible == verdict.distinct == RECORDS
    assert len(verdict.aborted_txns) >= len(app.txns) // ABORT_EVERY

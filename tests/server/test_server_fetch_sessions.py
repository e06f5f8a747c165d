"""Incremental fetch sessions (KIP-227) on the wire, against a real broker process: a full fetch
opens a session, incremental fetches list only what changed and are answered with only what
changed, forgotten partitions leave, and a wrong epoch, an unknown id, a full fetch naming the
session and the final epoch are answered as Kafka answers them. kafka-python 3 (which uses fetch
sessions) consumes through them; the cache's bound is `max.incremental.fetch.session.cache.slots`."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from zkafka.client.connection import BrokerConnection
from zkafka.client.producer import Producer
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.metrics.scrape import scrape
from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import FetchRequest, FetchResponse, MetadataRequest
from zkafka.testing.cluster import make_topic, running_cluster

SLOTS = 3
Part = FetchRequest.FetchPartition
Topic = FetchRequest.FetchTopic
Forgotten = FetchRequest.ForgottenTopic


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    overrides = {"max.incremental.fetch.session.cache.slots": str(SLOTS)}
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("sessions"), 1, overrides) as c:
        yield c


def _topic() -> str:
    return f"sessions-{uuid.uuid4().hex[:8]}"


def _fetch(
    session_id: int,
    epoch: int,
    parts: dict[str, dict[int, int]],
    forgotten: dict[str, list[int]] | None = None,
    *,
    by_id: dict[str, uuid.UUID] | None = None,
) -> FetchRequest:
    """A fetch of `parts` (topic -> partition -> fetch offset), by topic id when `by_id` is given."""

    def topic(name: str, **kw: object) -> dict[str, object]:
        return {"topic_id": by_id[name]} if by_id else {"topic": name}

    return FetchRequest(
        max_wait_ms=0,
        min_bytes=0,
        session_id=session_id,
        session_epoch=epoch,
        topics=[
            Topic(
                **topic(t),  # type: ignore[arg-type]
                partitions=[
                    Part(partition=p, fetch_offset=o, partition_max_bytes=65536) for p, o in ps.items()
                ],
            )
            for t, ps in parts.items()
        ],
        forgotten_topics_data=[
            Forgotten(**topic(t), partitions=ps)  # type: ignore[arg-type]
            for t, ps in (forgotten or {}).items()
        ],
    )


def _answered(
    resp: FetchResponse, names: dict[uuid.UUID, str] | None = None
) -> dict[tuple[str, int], object]:
    return {
        (names[t.topic_id] if names else t.topic, p.partition_index): p
        for t in resp.responses
        for p in t.partitions
    }


async def _produce(cluster: LocalCluster, topic: str, partition: int, n: int) -> None:
    async with Producer(cluster.bootstrap_servers, linger_ms=0) as producer:
        for i in range(n):
            await producer.send(topic, f"v{i}".encode(), partition=partition)
        await producer.flush()


@pytest.mark.timeout(180)
def test_full_then_incremental_then_forgotten_then_session_errors(cluster: LocalCluster) -> None:
    topic = _topic()

    async def run() -> None:
        await make_topic(cluster, topic, 3, records=6)  # two records in each partition
        conn = await BrokerConnection.open("127.0.0.1", cluster.brokers[1].port)
        try:
            v = 12
            full = await conn.send(_fetch(0, 0, {topic: {0: 0, 1: 0, 2: 2}}), version=v)
            assert full.error_code == 0 and full.session_id > 0
            got = _answered(full)
            assert sorted(got) == [(topic, 0), (topic, 1), (topic, 2)]  # a full answer lists all
            assert all(p.high_watermark == 2 for p in got.values())
            sid = full.session_id

            # epoch 1: nothing changed (offsets still 0, 0, 2 in the session): partitions 0 and 1
            # still have records to return, partition 2 is idle and left out
            inc = await conn.send(_fetch(sid, 1, {}), version=v)
            assert inc.error_code == 0 and inc.session_id == sid
            assert sorted(_answered(inc)) == [(topic, 0), (topic, 1)]

            # epoch 2: the fetcher moved 0 and 1 to their ends: an idle session answers nothing
            idle = await conn.send(_fetch(sid, 2, {topic: {0: 2, 1: 2}}), version=v)
            assert idle.error_code == 0 and idle.session_id == sid and _answered(idle) == {}

            # new data on partition 1: only it comes back (records and the moved high watermark)
            await _produce(cluster, topic, 1, 3)
            moved = await conn.send(_fetch(sid, 3, {}), version=v)
            [(key, p)] = _answered(moved).items()
            assert key == (topic, 1) and p.high_watermark == 5 and p.records  # type: ignore[attr-defined]

            # forgetting partition 1 (and one the session never had, ignored as Kafka does),
            # then data on it: not answered any more
            forget = await conn.send(_fetch(sid, 4, {}, {topic: [1, 7], "never-there": [0]}), version=v)
            assert forget.error_code == 0 and _answered(forget) == {}
            await _produce(cluster, topic, 1, 1)
            after = await conn.send(_fetch(sid, 5, {}), version=v)
            assert after.error_code == 0 and _answered(after) == {}

            # a partition that does not exist joins: its error is answered every time
            bad = await conn.send(_fetch(sid, 6, {topic: {9: 0}}), version=v)
            assert _answered(bad)[(topic, 9)].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # type: ignore[attr-defined]
            again = await conn.send(_fetch(sid, 7, {}), version=v)
            assert list(_answered(again)) == [(topic, 9)]
            gone = await conn.send(_fetch(sid, 8, {}, {topic: [9]}), version=v)
            assert _answered(gone) == {}

            # a wrong epoch: INVALID_FETCH_SESSION_EPOCH, nothing read, the session stays
            wrong = await conn.send(_fetch(sid, 42, {}), version=v)
            assert (wrong.error_code, wrong.session_id, wrong.responses) == (
                ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                0,
                [],
            )
            still = await conn.send(_fetch(sid, 9, {}), version=v)
            assert still.error_code == 0 and still.session_id == sid

            # the session survives a new connection (sessions are not tied to one)
            conn.close()
            conn = await BrokerConnection.open("127.0.0.1", cluster.brokers[1].port)
            other = await conn.send(_fetch(sid, 10, {}), version=v)
            assert other.error_code == 0 and other.session_id == sid

            # an unknown id: FETCH_SESSION_ID_NOT_FOUND
            unknown = await conn.send(_fetch(sid ^ 0x5A5A5, 1, {topic: {0: 0}}), version=v)
            assert (unknown.error_code, unknown.responses) == (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, [])

            # the final epoch closes the session and is answered sessionless, with what it asked
            final = await conn.send(_fetch(sid, -1, {topic: {0: 0}}), version=v)
            assert final.error_code == 0 and final.session_id == 0 and list(_answered(final)) == [(topic, 0)]
            closed = await conn.send(_fetch(sid, 11, {}), version=v)
            assert closed.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND

            # forgetting every partition ends a session too
            opened = await conn.send(_fetch(0, 0, {topic: {0: 2}}), version=v)
            emptied = await conn.send(_fetch(opened.session_id, 1, {}, {topic: [0]}), version=v)
            assert emptied.error_code == 0 and emptied.session_id == 0
            ended = await conn.send(_fetch(opened.session_id, 2, {}), version=v)
            assert ended.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        finally:
            conn.close()

    asyncio.run(run())


@pytest.mark.timeout(180)
def test_topic_ids_duplicates_and_a_parked_incremental_fetch(cluster: LocalCluster) -> None:
    """v13 (topics by id, forgotten by id); a partition listed twice counts once; an incremental
    fetch parked for min_bytes wakes on an append to a partition the request did not list."""
    topic = _topic()

    async def run() -> None:
        await make_topic(cluster, topic, 2)
        conn = await BrokerConnection.open("127.0.0.1", cluster.brokers[1].port)
        try:
            meta = await conn.send(
                MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), version=12
            )
            topic_id = meta.topics[0].topic_id
            ids, names = {topic: topic_id}, {topic_id: topic}
            dup = _fetch(0, 0, {topic: {0: 0, 1: 0}}, by_id=ids)
            dup.topics.append(dup.topics[0])
            full = await conn.send(dup, version=13)
            assert full.error_code == 0 and full.session_id > 0
            assert sorted(_answered(full, names)) == [(topic, 0), (topic, 1)]
            sid = full.session_id

            # v12 cannot continue a session opened by id
            mixed = await conn.send(_fetch(sid, 1, {}), version=12)
            assert mixed.error_code == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR

            parked = _fetch(sid, 1, {}, by_id=ids)
            parked.max_wait_ms, parked.min_bytes = 20_000, 1
            waiting = asyncio.ensure_future(conn.send(parked, version=13, timeout=60))
            await asyncio.sleep(0.5)
            assert not waiting.done()
            await _produce(cluster, topic, 1, 1)
            woke = await waiting
            assert woke.error_code == 0 and woke.session_id == sid
            [(key, p)] = _answered(woke, names).items()
            assert key == (topic, 1) and p.records  # type: ignore[attr-defined]

            forget = await conn.send(_fetch(sid, 2, {}, {topic: [1]}, by_id=ids), version=13)
            assert forget.error_code == 0 and _answered(forget, names) == {}
            await _produce(cluster, topic, 1, 1)
            quiet = await conn.send(_fetch(sid, 3, {}, by_id=ids), version=13)
            assert _answered(quiet, names) == {}
            await conn.send(_fetch(sid, -1, {}, by_id=ids), version=13)
        finally:
            conn.close()

    asyncio.run(run())


@pytest.mark.timeout(180)
def test_a_full_cache_answers_sessionless_and_a_huge_session_is_served(cluster: LocalCluster) -> None:
    """With every slot taken by young sessions a consumer's full fetch gets no session (id 0) but
    its data; a full fetch of 20,000 partitions that do not exist opens a session answered per
    partition, and its incremental fetches keep answering the errors."""
    topic = _topic()

    async def run() -> None:
        await make_topic(cluster, topic, 1, records=1)
        conn = await BrokerConnection.open("127.0.0.1", cluster.brokers[1].port)
        try:
            ids = []
            for _ in range(SLOTS + 1):  # other tests' consumers may hold a slot too
                r = await conn.send(_fetch(0, 0, {topic: {0: 0}}), version=12)
                assert r.error_code == 0 and list(_answered(r)) == [(topic, 0)]
                ids.append(r.session_id)
                if r.session_id == 0:
                    break
            assert ids[-1] == 0 and len(set(ids)) == len(ids)
            for sid in ids:
                if sid:
                    await conn.send(_fetch(sid, -1, {}), version=12)

            huge = {f"{topic}-missing": dict.fromkeys(range(20_000), 0)}
            r = await conn.send(_fetch(0, 0, huge), version=12, timeout=120)
            assert r.error_code == 0 and r.session_id > 0
            answered = _answered(r)
            assert len(answered) == 20_000
            assert {p.error_code for p in answered.values()} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}  # type: ignore[attr-defined]
            inc = await conn.send(_fetch(r.session_id, 1, {}), version=12, timeout=120)
            assert inc.error_code == 0 and len(_answered(inc)) == 20_000
            await conn.send(_fetch(r.session_id, -1, {}), version=12)
        finally:
            conn.close()

    asyncio.run(run())


@pytest.mark.timeout(180)
def test_kafka_python_consumes_through_fetch_sessions(cluster: LocalCluster) -> None:
    """kafka-python 3 keeps an incremental fetch session per broker: it reads every record of a
    topic across idle stretches and new data, through the sessions."""
    from kafka import KafkaConsumer, TopicPartition

    topic = _topic()
    asyncio.run(make_topic(cluster, topic, 4, records=40))
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
    )
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(4)])
        seen: list[bytes] = []
        for _ in range(200):
            for records in consumer.poll(timeout_ms=200).values():
                seen.extend(r.value for r in records)
            if len(seen) >= 40:
                break
        asyncio.run(_produce(cluster, topic, 2, 5))
        for _ in range(200):
            for records in consumer.poll(timeout_ms=200).values():
                seen.extend(r.value for r in records)
            if len(seen) >= 45:
                break
        assert sorted(seen) == sorted(
            [str(i).encode() for i in range(40)] + [f"v{i}".encode() for i in range(5)]
        )
        samples = {s.name: s.value for s in scrape(cluster.brokers[1].metrics)}
        assert samples["kafka_server_fetchsessioncache_numincrementalfetchsessions"] >= 1
        assert samples["kafka_server_fetchsessioncache_numincrementalfetchpartitionscached"] >= 4
    finally:
        consumer.close()

"""The client library against one real broker process: admin, producer, consumer."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from client_helpers import local_cluster, run, topic_name

from zkafka.client import (
    AdminClient,
    ConfigResource,
    Consumer,
    KafkaError,
    NewTopic,
    NoOffsetForPartitionError,
    Producer,
    TopicPartition,
    partition_for_key,
)
from zkafka.client.accumulator import EncodedRecords
from zkafka.client.batch_consumer import BatchConsumer
from zkafka.client.sync import SyncAdminClient, SyncConsumer, SyncProducer
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol import ErrorCode
from zkafka.records import encode_varint, encode_varlong, iter_records

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with local_cluster(zookeeper_server, tmp_path_factory.mktemp("client-e2e"), brokers=1) as c:
        yield c


@pytest.fixture
def bootstrap(cluster: LocalCluster) -> str:
    return cluster.bootstrap_servers


async def _create(bootstrap: str, name: str, partitions: int = 1, **configs: str) -> None:
    async with AdminClient(bootstrap) as admin:
        await admin.create_topic(name, partitions, 1, configs=configs)


async def _consume_all(bootstrap: str, topic: str, count: int, **kwargs: object) -> list:
    async with Consumer(bootstrap, auto_offset_reset="earliest", **kwargs) as consumer:  # type: ignore[arg-type]
        await consumer.assign_topic(topic)
        got: list = []
        deadline = time.monotonic() + 30
        while len(got) < count and time.monotonic() < deadline:
            got += await consumer.poll(1000)
        return got


# -- admin -----------------------------------------------------------------------------------------
def test_admin_topic_lifecycle(bootstrap: str) -> None:
    name = topic_name("admin")

    async def main() -> None:
        async with AdminClient(bootstrap) as admin:
            cluster = await admin.describe_cluster()
            assert [b.node_id for b in cluster.brokers] == [1] and cluster.controller_id == 1
            assert cluster.cluster_id

            result = await admin.create_topics([NewTopic(name, 2, 1)], validate_only=True)
            assert result == {name: None}
            assert name not in await admin.list_topics()

            await admin.create_topic(name, 3, 1, configs={"retention.ms": "3600000"})
            assert name in await admin.list_topics()
            meta = (await admin.describe_topics([name]))[name]
            assert sorted(meta.partitions) == [0, 1, 2]
            assert all(
                p.leader == 1 and p.replicas == (1,) and p.isr == (1,) for p in meta.partitions.values()
            )

            again = await admin.create_topics([NewTopic(name, 3, 1)])
            assert again[name] is not None and again[name].code == ErrorCode.TOPIC_ALREADY_EXISTS
            with pytest.raises(KafkaError) as info:
                await admin.create_topic(name, 1, 5)
            assert info.value.code in (ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.INVALID_REPLICATION_FACTOR)
            with pytest.raises(KafkaError) as info:
                await admin.create_topic(topic_name("rf"), 1, 3)
            assert info.value.code == ErrorCode.INVALID_REPLICATION_FACTOR

            configs = await admin.describe_topic_configs(name)
            assert configs["retention.ms"].value == "3600000" and configs["retention.ms"].is_override
            await admin.alter_configs(ConfigResource.topic(name), {"cleanup.policy": "compact"})
            configs = await admin.describe_topic_configs(name)
            assert configs["cleanup.policy"].value == "compact"
            assert configs["retention.ms"].value == "3600000"  # untouched by the change
            await admin.alter_configs(ConfigResource.topic(name), {"retention.ms": None})
            configs = await admin.describe_topic_configs(name)
            assert not configs["retention.ms"].is_override and configs["cleanup.policy"].is_override

            await admin.create_partition(name, 5)
            meta = (await admin.describe_topics([name]))[name]
            assert meta.partition_count == 5
            with pytest.raises(KafkaError) as info:
                await admin.create_partition(name, 2)
            assert info.value.code == ErrorCode.INVALID_PARTITIONS

            broker_configs = await admin.describe_configs([ConfigResource.broker(1)])
            assert broker_configs[ConfigResource.broker(1)]

            await admin.delete_topic(name)
            deadline = time.monotonic() + 20
            while name in await admin.list_topics() and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
            assert name not in await admin.list_topics()
            with pytest.raises(KafkaError) as info:
                await admin.describe_topics([name])
            assert info.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            missing = await admin.delete_topics([topic_name("never")])
            assert next(iter(missing.values())).code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    run(main())


def test_sync_admin_producer_and_consumer(bootstrap: str) -> None:
    name = topic_name("sync")
    with SyncAdminClient(bootstrap) as admin:
        admin.create_topic(name, 2, 1)
        assert admin.describe_topics([name])[name].partition_count == 2
    with SyncProducer(bootstrap, linger_ms=0) as producer:
        meta = producer.send_and_wait(name, b"one", key=b"k")
        assert meta.partition == partition_for_key(b"k", 2) and meta.offset == 0
        assert producer.send(name, b"two", key=b"k").result(10).offset == 1
    with SyncConsumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(name, meta.partition)])
        records = []
        deadline = time.monotonic() + 20
        while len(records) < 2 and time.monotonic() < deadline:
            records += consumer.poll(500)
        assert [r.value for r in records] == [b"one", b"two"]
        assert consumer.end_offsets([TopicPartition(name, meta.partition)]) == {
            TopicPartition(name, meta.partition): 2
        }


# -- produce and consume ---------------------------------------------------------------------------
@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_with_compression_keys_and_headers(bootstrap: str, codec: str) -> None:
    name = topic_name(codec)

    async def main() -> None:
        await _create(bootstrap, name, 3)
        sent = []
        async with Producer(bootstrap, compression=codec, linger_ms=10, batch_size=4096) as producer:
            futures = []
            for i in range(300):
                key = None if i % 7 == 0 else f"key-{i % 13}".encode()
                value = None if i % 50 == 49 else f"value-{i}".encode() * (1 + i % 5)
                headers = [("i", str(i).encode()), ("empty", None)] if i % 3 == 0 else []
                futures.append(
                    await producer.send(name, value, key=key, headers=headers, timestamp_ms=10_000 + i)
                )
                sent.append((key, value, tuple(headers)))
            await producer.flush()
            metas = [f.result() for f in futures]
        for (key, _, _), meta in zip(sent, metas, strict=True):
            if key is not None:
                assert meta.partition == partition_for_key(key, 3)
        got = await _consume_all(bootstrap, name, len(sent))
        assert len(got) == len(sent)
        by_position = {(r.partition, r.offset): r for r in got}
        for (key, value, headers), meta in zip(sent, metas, strict=True):
            record = by_position[(meta.partition, meta.offset)]
            assert (record.key, record.value, record.headers) == (key, value, headers)
            assert record.timestamp == meta.timestamp
        for partition in range(3):
            offsets = sorted(r.offset for r in got if r.partition == partition)
            assert offsets == list(range(len(offsets)))

    run(main())


@pytest.mark.parametrize("acks", [0, 1, -1])
def test_every_acks_setting_delivers(bootstrap: str, acks: int) -> None:
    name = topic_name(f"acks{acks}")

    async def main() -> None:
        await _create(bootstrap, name, 2)
        async with Producer(bootstrap, acks=acks, linger_ms=1) as producer:
            futures = [await producer.send(name, b"v%d" % i) for i in range(200)]
            await producer.flush()
            metas = [f.result() for f in futures]
        if acks == 0:
            assert all(m.offset == -1 for m in metas)
        else:
            assert all(m.offset >= 0 for m in metas)
        got = await _consume_all(bootstrap, name, 200)
        assert sorted(r.value for r in got) == sorted(b"v%d" % i for i in range(200))

    run(main())


def test_idempotent_producer_survives_dropped_connections_without_duplicates(
    bootstrap: str, caplog: pytest.LogCaptureFixture
) -> None:
    name = topic_name("idem")
    caplog.set_level(logging.DEBUG, logger="zkafka.client.producer")

    async def main() -> None:
        await _create(bootstrap, name, 1)
        async with Producer(bootstrap, enable_idempotence=True, linger_ms=0, retry_backoff_ms=20) as producer:
            futures = []
            for round_ in range(20):
                for i in range(50):
                    futures.append(await producer.send(name, b"%d-%d" % (round_, i), partition=0))
                while not producer._in_flight_batches:  # wait until a request is on the wire
                    await asyncio.sleep(0)
                if round_ % 2:
                    await asyncio.sleep(0.002)  # sometimes the broker has written it already
                for conn in list(producer.cluster._conns.values()):
                    if conn.transport is not None:
                        conn.transport.abort()  # the answer (and maybe the request) is lost
            await producer.flush()
            assert producer.producer_id >= 0
            metas = [f.result() for f in futures]
        assert [m.offset for m in metas] == list(range(1000))
        retries = [r for r in caplog.records if r.getMessage().startswith("retrying")]
        assert retries, "no request was retried: the test did not exercise deduplication"
        got = await _consume_all(bootstrap, name, 1000)
        assert [r.value for r in got] == [b"%d-%d" % (r, i) for r in range(20) for i in range(50)]
        async with Consumer(bootstrap) as consumer:
            assert await consumer.end_offsets([TopicPartition(name, 0)]) == {TopicPartition(name, 0): 1000}

    run(main())


def test_keyless_records_fill_sticky_batches(bootstrap: str) -> None:
    name = topic_name("sticky")

    async def main() -> None:
        await _create(bootstrap, name, 4)
        async with Producer(bootstrap, linger_ms=1000, batch_size=2000) as producer:
            futures = [await producer.send(name, b"x" * 100) for _ in range(100)]
            await producer.flush()
            partitions = [f.result().partition for f in futures]
        runs = sum(1 for a, b in itertools.pairwise(partitions) if a != b) + 1
        assert runs <= 10  # ~18 records per batch: whole batches go to one partition at a time
        assert len(set(partitions)) > 1

    run(main())


def test_many_records_in_large_batches(bootstrap: str) -> None:
    name = topic_name("bulk")

    async def main() -> None:
        await _create(bootstrap, name, 2)
        async with Producer(bootstrap, linger_ms=5, batch_size=65536, compression="lz4") as producer:
            last = None
            for i in range(20_000):
                last = await producer.send(name, b"%08d" % i + b"." * 92)
            await producer.flush()
            assert last is not None and last.result().offset >= 0
        got = await _consume_all(
            bootstrap, name, 20_000, max_partition_fetch_bytes=65536, fetch_max_bytes=200_000
        )
        assert len(got) == 20_000
        assert sorted(int(r.value[:8]) for r in got) == list(range(20_000))

    run(main(), timeout=120)


def test_encoded_batches_interleave_with_records_and_read_back(bootstrap: str) -> None:
    """`send_encoded` queues a caller-encoded records area as one batch: idempotent, compressed,
    in order with the records `send` queues around it, each future at its first record; a
    `BatchConsumer` reads them back as batches (the Spark source's path)."""
    name = topic_name("encoded")
    body = b"".join(
        encode_varint(len(rest)) + rest
        for rest in (
            b"\x00"
            + encode_varlong(i)
            + encode_varint(i)
            + b"\x01"
            + encode_varint(3)
            + b"e%02d" % i
            + b"\x00"
            for i in range(10)
        )
    )

    async def main() -> None:
        await _create(bootstrap, name, 1)
        async with Producer(bootstrap, compression="gzip", linger_ms=50) as producer:
            before = await producer.send(name, b"first", partition=0, timestamp_ms=1000)
            encoded = await producer.send_encoded(name, EncodedRecords(body, 10, 5000, 5009), partition=0)
            after = await producer.send(name, b"last", partition=0, timestamp_ms=6000)
            await producer.flush()
            assert (before.result().offset, encoded.result().offset, after.result().offset) == (0, 1, 11)
        got = await _consume_all(bootstrap, name, 12)
        assert [(r.offset, r.timestamp, r.key, r.value) for r in got] == [
            (0, 1000, None, b"first"),
            *[(1 + i, 5000 + i, None, b"e%02d" % i) for i in range(10)],
            (11, 6000, None, b"last"),
        ]
        async with BatchConsumer(bootstrap, auto_offset_reset="earliest") as consumer:
            consumer.assign([TopicPartition(name, 0)])
            consumer.seek(TopicPartition(name, 0), 5)
            fetched = await consumer.poll_batches(5000)
            assert fetched and fetched[-1].next_offset == 12
            offsets = [
                r.offset
                for f in fetched
                for h, first in f.batches
                for r in iter_records(f.data, h)
                if r.offset >= first
            ]
            assert offsets == list(range(5, 12))

    run(main())


# -- consumer positions ----------------------------------------------------------------------------
def test_seek_offsets_for_times_and_out_of_range_resets(bootstrap: str) -> None:
    name = topic_name("seek")
    tp = TopicPartition(name, 0)

    async def main() -> None:
        await _create(bootstrap, name, 1)
        async with Producer(bootstrap, linger_ms=0) as producer:
            for i in range(10):
                await producer.send_and_wait(name, b"%d" % i, timestamp_ms=1_000_000 + 1000 * i)
        async with Consumer(bootstrap, auto_offset_reset="latest") as consumer:
            consumer.assign([tp])
            assert await consumer.position(tp) == 10
            assert await consumer.poll(300) == []
            consumer.seek(tp, 7)
            got = []
            while len(got) < 3:
                got += await consumer.poll(2000)
            assert [r.value for r in got] == [b"7", b"8", b"9"]
            assert consumer.highwater(tp) == 10
            consumer.seek_to_beginning(tp)
            assert await consumer.position(tp) == 0
            consumer.seek_to_end(tp)
            assert await consumer.position(tp) == 10

            found = await consumer.offsets_for_times({tp: 1_004_500})
            assert found[tp] is not None and found[tp].offset == 5 and found[tp].timestamp == 1_005_000
            assert (await consumer.offsets_for_times({tp: 9_999_999}))[tp] is None
            assert await consumer.beginning_offsets([tp]) == {tp: 0}

            consumer.seek(tp, 500)  # past the end: reset by policy (latest)
            assert await consumer.poll(1500) == []
            assert await consumer.position(tp) == 10

        async with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
            consumer.assign([tp])
            consumer.seek(tp, 500)
            got = []
            deadline = time.monotonic() + 10
            while len(got) < 10 and time.monotonic() < deadline:
                got += await consumer.poll(500)
            assert [r.offset for r in got] == list(range(10))

        async with Consumer(bootstrap, auto_offset_reset="none") as consumer:
            consumer.assign([tp])
            with pytest.raises(NoOffsetForPartitionError):
                await consumer.poll(100)
            consumer.seek(tp, 500)
            with pytest.raises(KafkaError) as info:
                for _ in range(20):
                    await consumer.poll(200)
            assert info.value.code == ErrorCode.OFFSET_OUT_OF_RANGE

        async with AdminClient(bootstrap) as admin:
            offsets = await admin.list_offsets({tp: "earliest"})
            assert offsets[tp] is not None and offsets[tp].offset == 0
            assert await admin.topic_offsets(name) == {0: 10}
            assert await admin.topic_offsets(name, 1_002_000) == {0: 2}

    run(main())


def test_async_iteration_and_unknown_topics(bootstrap: str) -> None:
    name = topic_name("iter")

    async def main() -> None:
        await _create(bootstrap, name, 1)
        async with Producer(bootstrap, linger_ms=0) as producer:
            for i in range(5):
                await producer.send(name, b"%d" % i)
            with pytest.raises(KafkaError) as info:
                await producer.send(name, b"x", partition=3)
            assert info.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        async with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
            consumer.assign([TopicPartition(name, 0)])
            values = []
            async for record in consumer:
                values.append(record.value)
                if len(values) == 5:
                    break
            assert values == [b"0", b"1", b"2", b"3", b"4"]
        async with Producer(bootstrap, allow_auto_topic_creation=False, max_block_ms=1500) as producer:
            with pytest.raises(KafkaError) as info:
                await producer.send(topic_name("missing"), b"x")
            assert info.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    run(main())


def test_zookeeper_bootstrap(cluster: LocalCluster) -> None:
    name = topic_name("zkboot")

    async def main() -> None:
        async with AdminClient(zookeeper_connect=cluster.zookeeper_connect) as admin:
            await admin.create_topic(name, 1, 1)
            assert name in await admin.list_topics()

    run(main())


def test_cluster_directory_is_recorded(cluster: LocalCluster, tmp_path: Path) -> None:
    loaded = LocalCluster.load(cluster.directory)
    assert loaded.bootstrap_servers == cluster.bootstrap_servers and loaded.running()
    status = loaded.process_status()
    assert [b["alive"] for b in status["brokers"]] == [True]

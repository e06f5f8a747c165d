"""Client pieces that need no broker: bootstrap parsing, metadata snapshots, config translation,
option validation, and the consumer's decoding of fetched batches."""

from __future__ import annotations

import asyncio

import pytest

from zkafka.client import (
    ClientClosedError,
    ConfigError,
    Consumer,
    KafkaError,
    NewTopic,
    Producer,
    TopicPartition,
    parse_bootstrap,
)
from zkafka.client.cluster import NO_LEADER, ClusterMetadata, metadata_from_response
from zkafka.client.config import consumer_kwargs, parse_key_values, producer_kwargs
from zkafka.client.offsets import offset_spec
from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import MetadataResponse
from zkafka.records import ControlRecordType, Record, build_batch, control_record, simple_batch


# -- bootstrap and metadata ----------------------------------------------------------------------
def test_parse_bootstrap() -> None:
    assert parse_bootstrap("a:1, b.example:9092,[::1]:9093,PLAINTEXT://c:5") == [
        ("a", 1),
        ("b.example", 9092),
        ("::1", 9093),
        ("c", 5),
    ]
    assert parse_bootstrap(["h:1"]) == [("h", 1)]
    for bad in ("", "host", "host:", "host:0", "host:70000", "ho st:1", ":9092"):
        with pytest.raises(ConfigError):
            parse_bootstrap(bad)


def _metadata(topics: list[MetadataResponse.MetadataResponseTopic]) -> MetadataResponse:
    return MetadataResponse(
        brokers=[
            MetadataResponse.MetadataResponseBroker(node_id=1, host="h1", port=1),
            MetadataResponse.MetadataResponseBroker(node_id=2, host="h2", port=2),
        ],
        cluster_id="cid",
        controller_id=2,
        topics=topics,
    )


def _topic(name: str, leaders: list[int], error: int = 0) -> MetadataResponse.MetadataResponseTopic:
    return MetadataResponse.MetadataResponseTopic(
        error_code=error,
        name=name,
        partitions=[
            MetadataResponse.MetadataResponsePartition(
                partition_index=i, leader_id=leader, replica_nodes=[1, 2], isr_nodes=[leader]
            )
            for i, leader in reversed(list(enumerate(leaders)))
        ],
    )


def test_metadata_snapshot_merges_refreshed_topics() -> None:
    first = metadata_from_response(
        _metadata([_topic("a", [1, 2]), _topic("b", [2])]), ClusterMetadata(), None
    )
    assert first.cluster_id == "cid" and first.controller_id == 2 and set(first.brokers) == {1, 2}
    a = first.topics["a"]
    assert list(a.partitions) == [0, 1] and a.partition_count == 2 and a.replication_factor == 2
    assert first.leader(TopicPartition("a", 1)) == 2
    assert first.leader(TopicPartition("a", 5)) == NO_LEADER
    assert first.leader(TopicPartition("zz", 0)) == NO_LEADER
    # refreshing only "a": "b" is kept, a vanished "a" (UNKNOWN_TOPIC) is dropped
    gone = _topic("a", [], error=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    second = metadata_from_response(_metadata([gone]), first, frozenset({"a"}))
    assert set(second.topics) == {"b"}
    # a leader that is not among the live brokers counts as no leader
    third = metadata_from_response(_metadata([_topic("c", [9, -1])]), second, frozenset({"c"}))
    assert third.leader(TopicPartition("c", 0)) == NO_LEADER
    assert third.topics["c"].available_partitions() == [0]
    # a topic being created keeps its error for callers to wait on
    pending = metadata_from_response(
        _metadata([_topic("d", [], error=ErrorCode.LEADER_NOT_AVAILABLE)]), third, frozenset({"d"})
    )
    assert pending.topics["d"].error == ErrorCode.LEADER_NOT_AVAILABLE


# -- configuration ---------------------------------------------------------------------------------
def test_java_properties_translate_to_keyword_arguments() -> None:
    kwargs, unknown = producer_kwargs(
        {"acks": "all", "linger.ms": "5", "enable.idempotence": "true", "compression.type": "lz4", "foo": "1"}
    )
    assert kwargs == {"acks": "all", "linger_ms": 5.0, "enable_idempotence": True, "compression": "lz4"}
    assert unknown == ["foo"]
    kwargs, _ = consumer_kwargs({"auto.offset.reset": "earliest", "max.poll.records": "10"})
    assert kwargs == {"auto_offset_reset": "earliest", "max_poll_records": 10}
    with pytest.raises(ConfigError, match=r"batch\.size"):
        producer_kwargs({"batch.size": "big"})
    with pytest.raises(ConfigError, match="true or false"):
        producer_kwargs({"enable.idempotence": "yes"})
    assert parse_key_values(["a=1", "b=x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(ConfigError):
        parse_key_values(["novalue"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"acks": 2}, "acks"),
        ({"compression": "brotli"}, "unknown compression"),
        ({"enable_idempotence": True, "acks": 1}, "acks=-1"),
        ({"enable_idempotence": True, "max_in_flight": 6}, "max_in_flight"),
        ({"linger_ms": -1}, "linger_ms"),
        ({"batch_size": 0}, "batch_size"),
        ({"delivery_timeout_ms": 1000}, "delivery_timeout_ms"),
    ],
)
def test_producer_rejects_bad_options(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Producer("127.0.0.1:1", **kwargs)


def test_consumer_and_topic_reject_bad_options() -> None:
    with pytest.raises(ConfigError, match="auto_offset_reset"):
        Consumer("127.0.0.1:1", auto_offset_reset="smallest")
    with pytest.raises(ConfigError, match="isolation_level"):
        Consumer("127.0.0.1:1", isolation_level="dirty")
    with pytest.raises(ConfigError, match="bootstrap"):
        Consumer(None)
    with pytest.raises(ConfigError, match="partitions"):
        NewTopic("t", 0)
    with pytest.raises(ConfigError, match="either"):
        NewTopic("t", 3, assignment={0: [1]})
    with pytest.raises(ConfigError, match=r"0\.\.N-1"):
        NewTopic("t", assignment={1: [1]})
    assert offset_spec("earliest") == -2 and offset_spec("latest") == -1 and offset_spec(5) == 5
    with pytest.raises(ValueError):
        offset_spec("yesterday")


def test_producer_rejects_bad_records_before_any_io() -> None:
    async def main() -> None:
        producer = Producer("127.0.0.1:1")
        with pytest.raises(TypeError, match="value"):
            await producer.send("t", 42)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="header"):
            await producer.send("t", b"v", headers=[("h",)])  # type: ignore[list-item]
        with pytest.raises(ValueError, match="timestamp"):
            await producer.send("t", b"v", timestamp_ms=-5)
        await producer.close()
        with pytest.raises(ClientClosedError):
            await producer.send("t", b"v")

    asyncio.run(main())


def test_idempotent_batch_is_written_only_behind_its_older_ones() -> None:
    """The sender drains a batch while older ones of its partition are in flight. If their
    connection breaks before the batch's request is written, a new connection must not carry it
    ahead of their retries: five such batches pushed a retried one out of the broker's window of
    five (OUT_OF_ORDER_SEQUENCE_NUMBER for records it had written; a clean-clone CI run saw it)."""
    from zkafka.client.accumulator import ProducerBatch
    from zkafka.records import NONE

    async def main() -> None:
        producer = Producer("127.0.0.1:1", enable_idempotence=True)
        producer._sequences.set_identity(5, 0)
        tp = TopicPartition("t", 0)

        def drained(b: ProducerBatch) -> ProducerBatch:  # what `_send_to` does before the write
            b.in_flight, b.attempts = True, b.attempts + 1
            producer._in_flight_batches.add(b)
            producer._in_flight_by_partition[tp].append(b)
            return b

        batches = []
        for i in range(3):
            b = ProducerBatch(tp, i, 0.0)
            b.append(0, None, b"v", (), 10)
            b.seal(NONE, 5, 0, producer._sequences.sequence_for(b))
            batches.append(drained(b))
        older, younger, youngest = batches
        old_conn, new_conn = object(), object()
        older.conn = old_conn
        # behind an older batch in flight on the same connection: TCP keeps them in order
        assert producer._writable_on(old_conn, [younger]) == [younger]
        younger.conn = old_conn
        # on another connection: held back, not counted as an attempt, queued again
        assert producer._writable_on(new_conn, [youngest]) == []
        assert not youngest.in_flight and youngest.attempts == 0
        assert youngest not in producer._in_flight_batches
        assert producer._in_flight_by_partition[tp] == [older, younger]
        assert list(producer._accumulator.queues[tp]) == [youngest]
        # once the older ones are acknowledged any connection will do
        producer._sequences.acknowledged(older)
        producer._sequences.acknowledged(younger)
        assert producer._writable_on(new_conn, [drained(producer._accumulator.queues[tp].popleft())]) == [
            youngest
        ]
        # renumbered meanwhile (an older batch failed): re-encoded at the next drain, not sent as is
        youngest.encoded = None
        assert producer._writable_on(new_conn, [youngest]) == []
        assert list(producer._accumulator.queues[tp]) == [youngest]
        await producer.close()

    asyncio.run(main())


def test_unreachable_bootstrap_fails_fast_with_a_clear_error() -> None:
    from zkafka.client import AdminClient, BrokerUnavailableError
    from zkafka.local.zookeeper import free_port

    async def main() -> None:
        async with AdminClient(f"127.0.0.1:{free_port()}") as admin:
            with pytest.raises(BrokerUnavailableError, match="cannot connect"):
                await admin.list_topics()

    asyncio.run(asyncio.wait_for(main(), 20))


# -- consumer decoding ---------------------------------------------------------------------------
TP = TopicPartition("t", 0)


def _records(base: int, n: int, ts: int = 1000) -> list[Record]:
    return [Record(base + i, ts + i, b"k%d" % (base + i), b"v%d" % (base + i), ()) for i in range(n)]


def _consumer_at(position: int) -> Consumer:
    consumer = Consumer("127.0.0.1:1", max_poll_records=4)
    consumer.assign([TP])
    consumer.seek(TP, position)
    return consumer


def test_decode_skips_records_below_the_fetch_offset_and_control_batches() -> None:
    data = (
        build_batch(_records(0, 5))
        + build_batch([control_record(ControlRecordType.COMMIT, 0, offset=5, timestamp=1)], is_control=True)
        + build_batch(_records(6, 3))
    )
    consumer = _consumer_at(3)
    consumer._decode(TP, 3, memoryview(data))
    got = consumer._take(100)
    assert [r.offset for r in got] == [3, 4, 6, 7, 8]
    assert got[0].key == b"k3" and got[0].value == b"v3" and got[0].timestamp == 1003
    assert consumer._states[TP].position == 9


def test_take_respects_the_limit_and_advances_the_position() -> None:
    consumer = _consumer_at(0)
    consumer._decode(TP, 0, build_batch(_records(0, 10)))
    assert [r.offset for r in consumer._take(4)] == [0, 1, 2, 3]
    assert consumer._states[TP].position == 4
    assert [r.offset for r in consumer._take(4)] == [4, 5, 6, 7]
    consumer.seek(TP, 2)  # seeking drops what was buffered
    assert consumer._take(4) == []
    assert TP not in consumer._buffered


def test_decode_ignores_a_cut_off_trailing_batch_and_rejects_corruption() -> None:
    whole = build_batch(_records(0, 3))
    cut = whole + build_batch(_records(3, 3))[:-7]
    consumer = _consumer_at(0)
    consumer._decode(TP, 0, cut)
    assert [r.offset for r in consumer._take(100)] == [0, 1, 2]
    assert consumer._states[TP].position == 3

    corrupt = bytearray(simple_batch([(None, b"value")], timestamp=1))
    corrupt[-1] ^= 0xFF
    consumer = _consumer_at(0)
    with pytest.raises(KafkaError) as info:
        consumer._decode(TP, 0, bytes(corrupt))
    assert info.value.code == ErrorCode.CORRUPT_MESSAGE


def test_a_batch_larger_than_the_partition_fetch_size_is_reported() -> None:
    big = build_batch(_records(0, 50))
    consumer = Consumer("127.0.0.1:1", max_partition_fetch_bytes=100)
    consumer.assign([TP])
    consumer.seek(TP, 0)
    with pytest.raises(KafkaError) as info:
        consumer._decode(TP, 0, big[:100])
    assert info.value.code == ErrorCode.RECORD_LIST_TOO_LARGE


def test_assignment_and_seek_validation() -> None:
    consumer = Consumer("127.0.0.1:1")
    consumer.assign([("a", 0), TopicPartition("a", 1)])
    assert consumer.assignment() == {TopicPartition("a", 0), TopicPartition("a", 1)}
    with pytest.raises(ValueError, match="not assigned"):
        consumer.seek(TopicPartition("b", 0), 1)
    with pytest.raises(ValueError, match="offset"):
        consumer.seek(TopicPartition("a", 0), -1)
    with pytest.raises(ValueError):
        consumer.assign([("a", -1)])
    consumer.assign([("a", 1)])
    assert consumer.assignment() == {TopicPartition("a", 1)}

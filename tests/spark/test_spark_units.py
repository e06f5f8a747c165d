"""The connector's pure parts, without Spark running: option rules and Spark's messages, canonical
offsets, admission control arithmetic, range splitting, sink schema rules, Arrow batches."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from zkafka.client.batch_consumer import FetchedBatches
from zkafka.client.types import ConsumedRecord, TopicPartition
from zkafka.records import (
    GZIP,
    LOG_APPEND_TIME,
    Record,
    build_batch,
    frame_records,
    iter_headers,
    iter_records,
    read_header,
)
from zkafka.spark.encode import encode_batch
from zkafka.spark.errors import OffsetError, OptionError, SchemaError, data_loss_message
from zkafka.spark.fetch import to_arrow, to_record_batch
from zkafka.spark.offsets import OffsetRange, canonical, from_spark, pending, rate_limit, split_ranges
from zkafka.spark.options import (
    Assign,
    EarliestOffsets,
    GlobalTimestamp,
    LatestOffsets,
    SpecificOffsets,
    SpecificTimestamps,
    Subscribe,
    SubscribePattern,
    parse_sink_options,
    parse_source_options,
    time_string_ms,
)
from zkafka.spark.schema import (
    HEADERS_TYPE,
    SinkColumns,
    arrow_read_schema,
    check_sink_schema,
    read_schema,
)

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "t"}


def src(streaming: bool | None = None, **options: str) -> object:
    return parse_source_options({**BASE, **options}, streaming=streaming)


# -- options ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        (
            {"kafka.bootstrap.servers": "b:1"},
            None,
            "One of the following options must be specified for Kafka source: subscribe, subscribepattern, "
            "assign. See the docs for more details.",
        ),
        (
            {**BASE, "assign": '{"t":[0]}'},
            None,
            "Only one of the following options can be specified for Kafka source: subscribe, "
            "subscribepattern, assign.",
        ),
        (
            {**BASE, "subscribe": " , "},
            None,
            "No topics to subscribe to as specified value for option 'subscribe' is",
        ),
        (
            {"kafka.bootstrap.servers": "b:1", "subscribePattern": "  "},
            None,
            "Pattern to subscribe is empty as specified value for option 'subscribePattern'",
        ),
        (
            {"kafka.bootstrap.servers": "b:1", "assign": "t:0"},
            None,
            "No topicpartitions to assign as specified value for option 'assign' is 't:0'",
        ),
        (
            {"kafka.bootstrap.servers": "b:1", "assign": '{"t":"0"}'},
            None,
            'Expected e.g. {"topicA":[0,1],"topicB":[0,1]}, got {"t":"0"}',
        ),
        ({**BASE, "minPartitions": "0"}, None, "minPartitions must be positive"),
        (
            {**BASE, "kafka.auto.offset.reset": "earliest"},
            None,
            "Kafka option 'auto.offset.reset' is not supported",
        ),
        (
            {**BASE, "kafka.key.deserializer": "x"},
            None,
            "Kafka option 'key.deserializer' is not supported as keys",
        ),
        ({**BASE, "kafka.value.deserializer": "x"}, None, "'value.deserializer' is not supported as values"),
        (
            {**BASE, "kafka.enable.auto.commit": "true"},
            None,
            "Kafka option 'enable.auto.commit' is not supported",
        ),
        (
            {**BASE, "kafka.interceptor.classes": "x"},
            None,
            "Kafka option 'interceptor.classes' is not supported",
        ),
        (
            {"subscribe": "t"},
            None,
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer",
        ),
        (
            {**BASE, "minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"},
            None,
            "The value of minOffsetPerTrigger(10) is higher than the maxOffsetsPerTrigger(5).",
        ),
        ({**BASE, "endingOffsets": "latest"}, True, "ending offset not valid in streaming queries"),
        ({**BASE, "endingTimestamp": "5"}, True, "ending timestamp not valid in streaming queries"),
        (
            {**BASE, "startingOffsets": "latest"},
            False,
            "starting offset can't be latest for batch queries on Kafka",
        ),
        (
            {**BASE, "startingOffsets": '{"t":{"0":-1}}'},
            False,
            "startingOffsets for t-0 can't be latest for batch queries on Kafka",
        ),
        (
            {**BASE, "endingOffsets": "earliest"},
            False,
            "ending offset can't be earliest for batch queries on Kafka",
        ),
        (
            {**BASE, "endingOffsets": '{"t":{"0":-2}}'},
            False,
            "ending offset for t-0 can't be earliest for batch queries on Kafka",
        ),
        (
            {**BASE, "startingOffsets": '{"t":{"x":1}}'},
            None,
            'Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got {"t":{"x":1}}',
        ),
        ({**BASE, "startingTimestamp": "yesterday"}, None, "Expected a single long value, got yesterday"),
        ({**BASE, "includeHeaders": "yes"}, None, 'For input string: "yes"'),
        ({**BASE, "maxTriggerDelay": "5 parsecs"}, None, "Invalid time string"),
        ({**BASE, "kafka.max.poll.records": "many"}, None, "invalid value 'many' for max.poll.records"),
    ],
)
def test_source_option_errors_carry_sparks_messages(
    options: dict[str, str], streaming: bool | None, message: str
) -> None:
    with pytest.raises(OptionError) as info:
        parse_source_options(options, streaming=streaming)
    assert message in str(info.value)


def test_source_options_parse_sparks_names_case_insensitively() -> None:
    options = parse_source_options(
        {
            "ZKAFKA.ZOOKEEPER.CONNECT": "127.0.0.1:2181/kafka",
            "SubscribePattern": "clicks-.*",
            "STARTINGOFFSETS": " Earliest ",
            "maxOffsetsPerTrigger": "1000",
            "minOffsetsPerTrigger": "10",
            "maxTriggerDelay": "30s",
            "minPartitions": "8",
            "maxRecordsPerPartition": "500",
            "failOnDataLoss": "FALSE",
            "includeHeaders": "true",
            "kafkaConsumer.pollTimeoutMs": "5000",
            "kafka.max.partition.fetch.bytes": "2097152",
            "kafka.isolation.level": "read_committed",
        },
        streaming=True,
    )
    assert options.client.bootstrap_servers is None
    assert options.client.zookeeper_connect == "127.0.0.1:2181/kafka"
    assert options.strategy == SubscribePattern("clicks-.*")
    assert options.strategy.matches("clicks-eu") and not options.strategy.matches("xclicks-eu")
    assert isinstance(options.starting, EarliestOffsets)
    assert (options.max_offsets_per_trigger, options.min_offsets_per_trigger) == (1000, 10)
    assert options.max_trigger_delay_ms == 30_000
    assert (options.min_partitions, options.max_records_per_partition) == (8, 500)
    assert options.fail_on_data_loss is False and options.include_headers is True
    assert options.poll_timeout_ms == 5000
    kwargs = options.client.consumer_kwargs()
    assert kwargs["max_partition_fetch_bytes"] == 2097152  # the user's, over the 4 MiB default
    assert kwargs["isolation_level"] == "read_committed"
    assert kwargs["auto_offset_reset"] == "none"  # executors never reset on their own
    assert options.client.isolation_level == 1


def test_source_option_defaults_differ_for_batch_and_streaming() -> None:
    assert isinstance(src(True).starting, LatestOffsets)
    batch = src(False)
    assert isinstance(batch.starting, EarliestOffsets) and isinstance(batch.ending, LatestOffsets)
    assert batch.fail_on_data_loss is True and batch.include_headers is False
    assert batch.max_trigger_delay_ms == 15 * 60_000
    # an executor fetches 4 MiB a partition (each fetch is one Arrow batch), not Kafka's 1 MiB
    assert batch.client.consumer_kwargs()["max_partition_fetch_bytes"] == 4 << 20


def test_strategies_and_offset_limits() -> None:
    assert src(subscribe="a, b,,a").strategy == Subscribe(("a", "b"))
    assigned = parse_source_options(
        {"kafka.bootstrap.servers": "b:1", "assign": '{"a":[1,0],"b":[2]}'}, streaming=False
    ).strategy
    assert isinstance(assigned, Assign)
    assert sorted(assigned.partitions) == [
        TopicPartition("a", 0),
        TopicPartition("a", 1),
        TopicPartition("b", 2),
    ]
    start = src(False, startingOffsets='{"t":{"0":5,"1":-2}}').starting
    assert start == SpecificOffsets({TopicPartition("t", 0): 5, TopicPartition("t", 1): -2})
    # precedence: startingTimestamp > startingOffsetsByTimestamp > startingOffsets
    both = src(
        True, startingTimestamp="1000", startingOffsetsByTimestamp='{"t":{"0":5}}', startingOffsets="earliest"
    )
    assert both.starting == GlobalTimestamp(1000, True)
    by_ts = src(True, startingOffsetsByTimestamp='{"t":{"0":5}}', startingOffsetsByTimestampStrategy="latest")
    assert by_ts.starting == SpecificTimestamps({TopicPartition("t", 0): 5}, False)
    # an end without a matching record is the latest offset, never an error
    assert src(False, endingTimestamp="7").ending == GlobalTimestamp(7, False)


def test_explicit_start_and_end_must_fit_together() -> None:
    with pytest.raises(OffsetError, match="MISMATCHED_TOPIC_PARTITIONS_BETWEEN_START_OFFSET_AND_END_OFFSET"):
        src(False, startingOffsets='{"t":{"0":1}}', endingOffsets='{"t":{"1":5}}')
    with pytest.raises(OffsetError, match=r"The specified start offset 9 is greater than the end offset 5"):
        src(False, startingOffsets='{"t":{"0":9}}', endingOffsets='{"t":{"0":5}}')
    src(False, startingOffsets='{"t":{"0":-2}}', endingOffsets='{"t":{"0":-1}}')  # special values: fine


def test_sink_options() -> None:
    sink = parse_sink_options({"kafka.bootstrap.servers": "b:1", "topic": " out ", "kafka.linger.ms": "20"})
    assert sink.topic == "out"
    kwargs = sink.client.producer_kwargs()
    assert kwargs["enable_idempotence"] is True and kwargs["linger_ms"] == 20
    assert kwargs["batch_size"] == 128 << 10  # whole encoded batches: larger than Kafka's 16 KiB
    small = parse_sink_options({"kafka.bootstrap.servers": "b:1", "kafka.batch.size": "16384"})
    assert small.client.producer_kwargs()["batch_size"] == 16384
    assert parse_sink_options({"kafka.bootstrap.servers": "b:1"}).topic is None
    with pytest.raises(OptionError, match=r"'key\.serializer' is not supported as keys are serialized"):
        parse_sink_options({"kafka.bootstrap.servers": "b:1", "kafka.key.serializer": "x"})
    with pytest.raises(OptionError, match="must be specified for configuring Kafka producer"):
        parse_sink_options({"topic": "t"})


def test_sink_exactly_once_options() -> None:
    base = {"kafka.bootstrap.servers": "b:1"}
    assert parse_sink_options(base).transactional_id_prefix is None  # at least once by default
    assert parse_sink_options({**base, "transactional.id.prefix": " q1 "}).transactional_id_prefix == "q1"
    with pytest.raises(OptionError, match="must not be empty"):
        parse_sink_options({**base, "transactional.id.prefix": " "})
    with pytest.raises(OptionError, match="every task needs a transactional id of its own"):
        parse_sink_options({**base, "kafka.transactional.id": "t"})


def test_time_strings() -> None:
    assert [time_string_ms(s) for s in ("500", "250us", "100ms", "30s", "15m", "2min", "1h", "1d")] == [
        500,
        0,
        100,
        30_000,
        900_000,
        120_000,
        3_600_000,
        86_400_000,
    ]


# -- offsets ------------------------------------------------------------------------------------


def test_offsets_are_canonical_json() -> None:
    """Spark compares offsets as JSON text (pitfall P4): one order, string keys, numeric sort."""
    a = {TopicPartition("b", 10): 1, TopicPartition("b", 2): 2, TopicPartition("a", 0): 3}
    b = dict(reversed(list(a.items())))
    assert json.dumps(canonical(a)) == json.dumps(canonical(b)) == '{"a": {"0": 3}, "b": {"2": 2, "10": 1}}'
    assert from_spark(json.loads(json.dumps(canonical(a)))) == a


def test_rate_limit_splits_like_spark() -> None:
    t = [TopicPartition("t", p) for p in range(3)]
    start = dict.fromkeys(t, 0)
    assert rate_limit(70, start, dict.fromkeys(t, 100)) == dict.fromkeys(t, 23)  # 69, as Spark
    # a small backlog still gets one offset instead of none; partitions without backlog stay
    skewed = rate_limit(10, {**start, t[2]: 50}, {t[0]: 1000, t[1]: 5, t[2]: 50})
    assert skewed == {t[0]: 9, t[1]: 1, t[2]: 50}
    assert rate_limit(1000, start, dict.fromkeys(t, 10)) == dict.fromkeys(t, 10)
    assert pending(start, dict.fromkeys(t, 10)) == 30


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1, max_size=6),
    st.integers(1, 5000),
)
def test_rate_limit_never_overshoots(backlogs: list[tuple[int, int]], limit: int) -> None:
    start = {TopicPartition("t", p): s for p, (s, _) in enumerate(backlogs)}
    latest = {TopicPartition("t", p): s + n for p, (s, n) in enumerate(backlogs)}
    end = rate_limit(limit, start, latest)
    assert all(start[tp] <= end[tp] <= latest[tp] for tp in latest)
    taken = sum(end[tp] - start[tp] for tp in latest)
    assert taken <= max(limit, 0) + len(latest)  # the share-below-one rounding can add one each
    assert taken == sum(n for _, n in backlogs) or taken >= min(limit, sum(n for _, n in backlogs)) - len(
        latest
    )


def test_split_ranges_like_spark() -> None:
    big, small = OffsetRange("t", 0, 0, 1000), OffsetRange("t", 1, 0, 10)
    assert split_ranges([big, small, OffsetRange("t", 2, 5, 5)]) == [big, small]  # empty dropped
    pieces = split_ranges([big, small], min_partitions=5)
    assert small in pieces and len(pieces) == 5
    assert [(p.start, p.until) for p in pieces if p.partition == 0] == [
        (0, 250),
        (250, 500),
        (500, 750),
        (750, 1000),
    ]
    capped = split_ranges([big], max_records=300)
    assert [(p.start, p.until) for p in capped] == [(0, 250), (250, 500), (500, 750), (750, 1000)]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 5_000)), min_size=1, max_size=8),
    st.one_of(st.none(), st.integers(1, 40)),
    st.one_of(st.none(), st.integers(1, 3_000)),
)
def test_split_ranges_cover_each_range_exactly(
    spans: list[tuple[int, int]], min_partitions: int | None, max_records: int | None
) -> None:
    ranges = [OffsetRange("t", p, s, s + n) for p, (s, n) in enumerate(spans)]
    pieces = split_ranges(ranges, min_partitions, max_records)
    assert all(p.size > 0 for p in pieces)
    if max_records is not None:
        assert all(p.size <= max_records for p in pieces)
    for r in ranges:
        mine = [p for p in pieces if p.partition == r.partition]
        if r.size == 0:
            assert not mine
            continue
        assert mine[0].start == r.start and mine[-1].until == r.until
        assert all(a.until == b.start for a, b in itertools.pairwise(mine))


# -- schema -------------------------------------------------------------------------------------


def test_read_schema_is_sparks_kafka_schema() -> None:
    assert read_schema(False).simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
        "timestampType:int>"
    )
    assert read_schema(True).simpleString().endswith(",headers:array<struct<key:string,value:binary>>>")


@pytest.mark.parametrize(
    ("fields", "topic", "message"),
    [
        ([("value", StringType())], None, "topic option required when no 'topic' attribute is present."),
        ([("topic", IntegerType()), ("value", StringType())], None, "topic attribute unsupported type int."),
        ([("key", LongType()), ("value", StringType())], "t", "key must be a(n) string or binary"),
        ([("key", BinaryType())], "t", "Required attribute 'value' not found"),
        (
            [("value", IntegerType())],
            "t",
            "value attribute unsupported type int. value must be a(n) string or binary",
        ),
        ([("value", BinaryType()), ("partition", LongType())], "t", "partition must be a(n) int"),
        (
            [("value", BinaryType()), ("headers", ArrayType(StringType()))],
            "t",
            "headers must be a(n) array<struct<key:string,value:binary>>",
        ),
    ],
)
def test_sink_schema_errors_carry_sparks_messages(
    fields: list[tuple[str, object]], topic: str | None, message: str
) -> None:
    schema = StructType([StructField(name, dtype) for name, dtype in fields])  # type: ignore[arg-type]
    with pytest.raises(SchemaError) as info:
        check_sink_schema(schema, topic)
    assert message in str(info.value)


def test_sink_schema_columns() -> None:
    schema = StructType(
        [
            StructField("topic", StringType()),
            StructField("key", StringType()),
            StructField("value", BinaryType()),
            StructField("headers", HEADERS_TYPE),
            StructField("partition", IntegerType()),
        ]
    )
    columns = check_sink_schema(schema, None)
    assert columns.topic and columns.key and columns.key_is_string and not columns.value_is_string
    assert columns.headers and columns.partition and not columns.timestamp
    assert not check_sink_schema(schema, "fixed").topic  # the option wins over the column


def test_arrow_batches_match_the_schema_spark_checks() -> None:
    records = [
        ConsumedRecord("t", 3, 10, 1_700_000_000_123, 0, b"k", b"v", (("h", b"1"), ("n", None))),
        ConsumedRecord("t", 3, 12, 1_700_000_000_456, 1, None, None, ()),
    ]
    for headers in (False, True):
        batch = to_record_batch(records, arrow_read_schema(headers), headers)
        assert batch.schema.equals(arrow_read_schema(headers))
        rows = batch.to_pylist()
        assert rows[0]["timestamp"] == datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)
        assert [
            (r["key"], r["value"], r["topic"], r["partition"], r["offset"], r["timestampType"]) for r in rows
        ] == [
            (b"k", b"v", "t", 3, 10, 0),
            (None, None, "t", 3, 12, 1),
        ]
        if headers:
            assert rows[0]["headers"] == [{"key": "h", "value": b"1"}, {"key": "n", "value": None}]


def test_data_loss_message_names_sparks_error_class() -> None:
    text = data_loss_message("COULD_NOT_READ_OFFSET_RANGE", tp=TopicPartition("t", 0), start=0, end=5)
    assert text.startswith("[KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE] Some data may have been lost")
    assert "set the source option failOnDataLoss to false" in text
    assert text.endswith("Could not read records in offset [0, 5) for topic partition t-0.")


def test_columnar_batches_equal_the_per_record_ones() -> None:
    """`to_arrow` decodes fetched batches by columns when it can: the result is the RecordBatch
    the per-record path builds from the same records (nulls, LogAppendTime, a batch straddling
    the fetch position, compression)."""
    tp = TopicPartition("t", 3)
    first = build_batch(
        [Record(10, 1_700_000_000_123, b"k", b"v"), Record(11, 1_700_000_000_200, None, b"")],
        compression=GZIP,
    )
    second = build_batch(
        [Record(12, 5, b"", None), Record(14, 6, b"x" * 300, b"y" * 20_000)],
        timestamp_type=LOG_APPEND_TIME,
        max_timestamp=1_700_000_009_000,
    )
    buf = first + second
    headers = list(iter_headers(buf))
    part = FetchedBatches(tp, buf, [(headers[0], 11), (headers[1], 12)], 15)
    schema = arrow_read_schema(False)
    fast = to_arrow(part, schema, False)
    records = [
        ConsumedRecord("t", 3, 11, 1_700_000_000_200, 0, None, b"", ()),
        ConsumedRecord("t", 3, 12, 1_700_000_009_000, 1, b"", None, ()),
        ConsumedRecord("t", 3, 14, 1_700_000_009_000, 1, b"x" * 300, b"y" * 20_000, ()),
    ]
    assert fast.schema.equals(schema)
    assert fast.to_pylist() == to_record_batch(records, schema, False).to_pylist()
    assert to_arrow(part, arrow_read_schema(True), True).to_pylist() == (
        to_record_batch(records, arrow_read_schema(True), True).to_pylist()
    )


def test_sink_rows_encoded_by_columns_are_the_records_sent() -> None:
    """`encode_batch`: what a Kafka batch around each chunk decodes to is the rows, in order per
    partition (nulls, string values, timestamps, chunks of about batch_size); rows it cannot
    encode exactly are left to the per-record path."""
    n = 1000
    values = [b"v%d" % i * (i % 50) if i % 7 else None for i in range(n)]
    keys = [b"k%d" % i if i % 3 else None for i in range(n)]
    micros = [1_700_000_000_000_000 + i * 1_000_000 * (i % 3) for i in range(n)]
    batch = pa.RecordBatch.from_pydict(
        {
            "value": pa.array(values, pa.binary()),
            "key": pa.array(keys, pa.binary()),
            "timestamp": pa.array(micros, pa.timestamp("us", tz="UTC")),
            "partition": pa.array([i % 4 for i in range(n)], pa.int32()),
        }
    )
    columns = SinkColumns(
        topic=False,
        key=True,
        key_is_string=False,
        value_is_string=False,
        headers=False,
        partition=True,
        timestamp=True,
    )
    sends = encode_batch(batch, columns, "t", 2000)
    assert sends is not None and len(sends) > 4
    got: dict[int | None, list] = {}
    for send in sends:
        r = send.records
        framed = frame_records(
            r.data, r.count, base_timestamp=r.base_timestamp, max_timestamp=r.max_timestamp
        )
        decoded = list(iter_records(framed))
        assert len(framed) < 2000 + 300 and read_header(framed).max_timestamp == max(
            x.timestamp for x in decoded
        )
        got.setdefault(send.partition, []).extend((x.key, x.value, x.timestamp) for x in decoded)
    for p in range(4):
        assert got[p] == [(keys[i], values[i], micros[i] // 1000) for i in range(n) if i % 4 == p]

    strings = pa.RecordBatch.from_pydict({"value": pa.array(["é" * 5, None, ""])})
    plain = SinkColumns(False, False, False, True, False, False, False)
    (send,) = encode_batch(strings, plain, "t", 16384)
    r = send.records
    framed = frame_records(r.data, r.count, base_timestamp=r.base_timestamp, max_timestamp=r.max_timestamp)
    assert send.partition is None  # the sticky partitioner's choice
    assert [(x.offset, x.key, x.value) for x in iter_records(framed)] == [
        (0, None, "é".encode() * 5),
        (1, None, None),
        (2, None, b""),
    ]
    keyed = pa.RecordBatch.from_pydict({"value": pa.array([b"v"]), "key": pa.array([b"k"])})
    assert (
        encode_batch(keyed, SinkColumns(False, True, False, False, False, False, False), "t", 16384) is None
    )

"""Batch reads and writes through spark.read / df.write with format("zkafka"), on real brokers."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from spark_helpers import create_topic, offsets, produce, topic_name

from zkafka.local.launcher import LocalCluster

BASE_TS = (int(time.time()) - 3600) * 1000  # recent: retention (7 days by default) must keep them
PARTITIONS = 3
PER_PARTITION = 10


@pytest.fixture(scope="module")
def timed_topic(cluster: LocalCluster) -> str:
    """3 partitions x 10 records; record i of partition p has value b"p:i" and timestamp BASE + i s."""
    name = topic_name("batch")
    create_topic(cluster.bootstrap_servers, name, PARTITIONS)
    produce(
        cluster.bootstrap_servers,
        name,
        [
            (p, b"k%d" % i, b"%d:%d" % (p, i), BASE_TS + i * 1000)
            for p in range(PARTITIONS)
            for i in range(PER_PARTITION)
        ],
    )
    return name


def read(spark: Any, bootstrap: str, **options: str) -> list[Any]:
    reader = spark.read.format("zkafka").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load().collect()


def by_partition(rows: list[Any]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for row in sorted(rows, key=lambda r: (r.partition, r.offset)):
        out.setdefault(row.partition, []).append(row.offset)
    return out


def test_batch_read_everything_with_sparks_columns(spark: Any, bootstrap: str, timed_topic: str) -> None:
    df = (
        spark.read.format("zkafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", timed_topic)
    )
    rows = df.load().collect()
    assert len(rows) == PARTITIONS * PER_PARTITION
    row = next(r for r in rows if r.partition == 1 and r.offset == 4)
    assert (row.key, row.value, row.topic, row.timestampType) == (b"k4", b"1:4", timed_topic, 0)
    assert row.timestamp.replace(tzinfo=UTC) == datetime.fromtimestamp((BASE_TS + 4000) / 1000, UTC)
    assert by_partition(rows) == {p: list(range(PER_PARTITION)) for p in range(PARTITIONS)}


def test_batch_read_of_offset_ranges(spark: Any, bootstrap: str, timed_topic: str) -> None:
    start = {timed_topic: {"0": 2, "1": -2, "2": 7}}
    end = {timed_topic: {"0": 5, "1": 3, "2": -1}}
    rows = read(
        spark,
        bootstrap,
        subscribe=timed_topic,
        startingOffsets=json.dumps(start),
        endingOffsets=json.dumps(end),
    )
    assert by_partition(rows) == {0: [2, 3, 4], 1: [0, 1, 2], 2: [7, 8, 9]}
    # assign reads only the partitions named, and the same ranges
    assigned = read(
        spark,
        bootstrap,
        assign=json.dumps({timed_topic: [0]}),
        startingOffsets=json.dumps({timed_topic: {"0": 8}}),
    )
    assert by_partition(assigned) == {0: [8, 9]}


def test_batch_read_by_timestamp(spark: Any, bootstrap: str, timed_topic: str) -> None:
    per_partition = {timed_topic: {"0": BASE_TS + 3000, "1": BASE_TS + 8500, "2": BASE_TS}}
    rows = read(
        spark,
        bootstrap,
        subscribe=timed_topic,
        startingOffsetsByTimestamp=json.dumps(per_partition),
        endingTimestamp=str(BASE_TS + 9000),
    )
    # the first record at or after each time, up to (not including) the first at or after the end time
    got = by_partition(rows)
    assert got.get(0) == [3, 4, 5, 6, 7, 8] and got.get(1) is None and got.get(2) == list(range(9))
    everyone = read(spark, bootstrap, subscribe=timed_topic, startingTimestamp=str(BASE_TS + 8000))
    assert by_partition(everyone) == {p: [8, 9] for p in range(PARTITIONS)}


def test_batch_read_by_timestamp_without_a_match(spark: Any, bootstrap: str, timed_topic: str) -> None:
    late = str(BASE_TS + 60_000)
    with pytest.raises(Exception, match="No offset matched from request of topic-partition"):
        read(spark, bootstrap, subscribe=timed_topic, startingTimestamp=late)
    assert (
        read(
            spark,
            bootstrap,
            subscribe=timed_topic,
            startingTimestamp=late,
            startingOffsetsByTimestampStrategy="latest",
        )
        == []
    )


def test_min_partitions_splits_ranges_into_more_tasks(spark: Any, bootstrap: str, timed_topic: str) -> None:
    df = (
        spark.read.format("zkafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", timed_topic)
        .option("minPartitions", "9")
        .load()
    )
    assert df.rdd.getNumPartitions() == 9
    assert by_partition(df.collect()) == {p: list(range(PER_PARTITION)) for p in range(PARTITIONS)}


def test_brokers_found_through_zookeeper(spark: Any, cluster: LocalCluster, timed_topic: str) -> None:
    rows = (
        spark.read.format("zkafka")
        .option("zkafka.zookeeper.connect", cluster.zookeeper_connect)
        .option("subscribe", timed_topic)
        .load()
        .collect()
    )
    assert len(rows) == PARTITIONS * PER_PARTITION


def test_start_after_end_is_refused(spark: Any, bootstrap: str, timed_topic: str) -> None:
    with pytest.raises(Exception, match="RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET"):
        read(
            spark,
            bootstrap,
            subscribe=timed_topic,
            startingOffsets=json.dumps({timed_topic: {"0": 8, "1": 0, "2": 0}}),
            endingTimestamp=str(BASE_TS + 2000),
        )


def test_batch_write_then_read_back(spark: Any, bootstrap: str) -> None:
    """Columns as in Spark's sink: topic column (two topics), string key, binary value, a fixed
    partition, headers; then the same rows come back through the source."""
    first, second = topic_name("out-a"), topic_name("out-b")
    create_topic(bootstrap, first, 2)
    create_topic(bootstrap, second, 2)
    df = spark.range(40).selectExpr(
        f"if(id % 2 = 0, '{first}', '{second}') as topic",
        "cast(id as string) as key",
        "cast(concat('value-', id) as binary) as value",
        "cast(1 as int) as partition",
        "array(named_struct('key', 'n', 'value', cast(cast(id as string) as binary))) as headers",
    )
    df.write.format("zkafka").option("kafka.bootstrap.servers", bootstrap).mode("append").save()
    assert offsets(bootstrap, first) == {0: 0, 1: 20}
    rows = read(spark, bootstrap, subscribe=f"{first},{second}", includeHeaders="true")
    assert sorted((r.topic, int(r.key), r.value, r.partition) for r in rows) == sorted(
        (first if i % 2 == 0 else second, i, b"value-%d" % i, 1) for i in range(40)
    )
    assert all(r.headers[0].key == "n" and r.headers[0].value == r.key for r in rows)


def test_batch_write_with_topic_option_and_partitioner(spark: Any, bootstrap: str) -> None:
    name = topic_name("out-opt")
    create_topic(bootstrap, name, 3)
    df = spark.range(300).selectExpr("cast(id % 10 as string) as key", "cast(id as string) as value")
    df.write.format("zkafka").option("kafka.bootstrap.servers", bootstrap).option("topic", name).mode(
        "append"
    ).save()
    rows = read(spark, bootstrap, subscribe=name)
    assert sorted(int(r.value) for r in rows) == list(range(300))
    keys_in = {}
    for r in rows:
        keys_in.setdefault(r.key, set()).add(r.partition)
    assert all(len(ps) == 1 for ps in keys_in.values())  # a key always lands in one partition


def test_sink_refuses_what_sparks_sink_refuses(spark: Any, bootstrap: str) -> None:
    df = spark.range(3).selectExpr("cast(id as string) as value")
    writer = df.write.format("zkafka").option("kafka.bootstrap.servers", bootstrap)
    with pytest.raises(Exception, match="topic option required when no 'topic' attribute is present"):
        writer.mode("append").save()
    with pytest.raises(Exception, match="Save mode Overwrite not allowed for Kafka"):
        writer.option("topic", "t").mode("overwrite").save()
    nulls = spark.range(3).selectExpr("cast(null as string) as topic", "cast(id as string) as value")
    with pytest.raises(Exception, match="KAFKA_NULL_TOPIC_IN_DATA"):
        nulls.write.format("zkafka").option("kafka.bootstrap.servers", bootstrap).mode("append").save()


def test_read_options_are_checked_at_load(spark: Any) -> None:
    with pytest.raises(Exception, match="One of the following options must be specified for Kafka source"):
        spark.read.format("zkafka").option("kafka.bootstrap.servers", "127.0.0.1:1").load()
    with pytest.raises(
        Exception, match="Kafka source has a fixed schema and cannot be set with a custom one"
    ):
        spark.read.format("zkafka").schema("value string").option("subscribe", "t").option(
            "kafka.bootstrap.servers", "127.0.0.1:1"
        ).load().collect()
    df = spark.read.format("zkafka").option("kafka.bootstrap.servers", "127.0.0.1:1").option("subscribe", "t")
    assert (
        df.load()
        .schema.simpleString()
        .startswith("struct<key:binary,value:binary,topic:string,partition:int")
    )
    assert "headers" in df.option("includeHeaders", "true").load().columns

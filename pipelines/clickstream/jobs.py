"""The clickstream jobs, written as any Spark user writes them: only the format name says zkafka.

- `start_streaming_jobs`: Structured Streaming reads the events topic, parses the JSON, and counts
  events per page per one-minute window of event time, with a watermark; finished windows go to
  Parquet (exactly-once: offsets in the checkpoint, the file sink's log) and, as JSON, to a topic
  (at-least-once, as Spark's Kafka sink).
- `batch_totals`: a batch job reading the same topic by offset range, totals per page.

Only Spark SQL functions are used: no Python UDFs, so Spark's workers need nothing from here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

EVENT_SCHEMA = "event_id long, user string, page string, type string, amount double, ts_ms long"
WINDOW = "1 minute"
WATERMARK = "30 seconds"


def parse(records: DataFrame) -> DataFrame:
    """Kafka records (Spark's Kafka schema) -> one row per event, with its event time."""
    return (
        records.select(
            F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("e"), "partition", "offset"
        )
        .select("e.*", "partition", "offset")
        .withColumn("event_time", F.timestamp_millis("ts_ms"))
    )


def _per_page(events: DataFrame, *keys: Any) -> DataFrame:
    return events.groupBy(*keys, "page").agg(
        F.count("*").alias("events"),
        F.sum(F.when(F.col("type") == "purchase", 1).otherwise(0)).alias("purchases"),
        F.round(F.coalesce(F.sum("amount"), F.lit(0.0)), 2).alias("revenue"),
    )


def page_windows(records: DataFrame) -> DataFrame:
    """Finished one-minute windows per page. The "end" marker is not filtered out: Spark would
    push such a filter below the watermark, and the marker would no longer move it. Its own
    window never closes (the watermark stays behind it), so it is never emitted."""
    events = parse(records).withWatermark("event_time", WATERMARK)
    return _per_page(events, F.window("event_time", WINDOW).alias("window"))


def start_streaming_jobs(
    spark: SparkSession, client: dict[str, str], topic: str, stats_topic: str, workdir: Path, **trigger: Any
) -> list[Any]:
    """Two queries over the events topic: windows to Parquet, and the same windows to a topic
    (exactly once, in transactions).
    `client` holds the connection options (kafka.bootstrap.servers or zkafka.zookeeper.connect)."""
    records = spark.readStream.format("zkafka").options(**client).option("subscribe", topic)
    windows = page_windows(records.option("startingOffsets", "earliest").load())
    trigger = trigger or {"availableNow": True}
    to_parquet = (
        windows.select(F.col("window.start").alias("window_start"), "page", "events", "purchases", "revenue")
        .writeStream.format("parquet")
        .outputMode("append")
        .option("path", str(workdir / "page_windows"))
        .option("checkpointLocation", str(workdir / "checkpoints" / "parquet"))
        .trigger(**trigger)
        .start()
    )
    to_topic = (
        windows.select(
            F.col("page").alias("key"),
            F.to_json(
                F.struct(
                    F.date_format("window.start", "yyyy-MM-dd HH:mm").alias("window"),
                    "page",
                    "events",
                    "purchases",
                    "revenue",
                )
            ).alias("value"),
        )
        .writeStream.format("zkafka")
        .options(**client)
        .option("topic", stats_topic)
        # exactly once: each task's rows and its progress marker in one Kafka transaction, so a
        # replayed micro-batch (after a driver or executor failure) is not written twice
        .option("transactional.id.prefix", f"clickstream-{stats_topic}")
        .option("checkpointLocation", str(workdir / "checkpoints" / "topic"))
        .trigger(**trigger)
        .start()
    )
    return [to_parquet, to_topic]


def batch_totals(
    spark: SparkSession, client: dict[str, str], topic: str, start: dict[int, int], end: dict[int, int]
) -> DataFrame:
    """Totals per page of the events in offsets [start, end) of each partition."""
    records = (
        spark.read.format("zkafka")
        .options(**client)
        .option("subscribe", topic)
        .option("startingOffsets", json.dumps({topic: {str(p): o for p, o in start.items()}}))
        .option("endingOffsets", json.dumps({topic: {str(p): o for p, o in end.items()}}))
        .load()
    )
    events = parse(records).where(F.col("type") != "end")
    return _per_page(events).orderBy("page")


def read_stats_topic(spark: SparkSession, client: dict[str, str], stats_topic: str) -> list[dict[str, Any]]:
    rows = (
        spark.read.format("zkafka")
        .options(**client)
        .option("subscribe", stats_topic)
        .option("kafka.isolation.level", "read_committed")
        .load()
        .select(F.col("value").cast("string").alias("json"))
        .collect()
    )
    return [json.loads(r.json) for r in rows]

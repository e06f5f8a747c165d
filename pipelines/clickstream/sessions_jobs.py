"""The sessions job, written as any Spark user writes it: clicks sessionized by event time and
enriched from a compacted topic read as a table.

- `users_table`: a batch read of the compacted users topic, reduced to the latest value per key
  (highest offset; a key always lands in the same partition) with tombstones removing the key,
  as Kafka's compaction itself would leave it. Reading it this way gives the same table whether
  or not the broker's cleaner has run yet.
- `start_sessions_query`: per-user event-time sessions (`session_window`, a gap of inactivity,
  with a watermark) over the clicks topic; each micro-batch's closed sessions are enriched with
  the users table as it stands when that micro-batch runs (`foreachBatch` reads the table again),
  and written into a directory of their own per batch id (overwritten when Spark replays the
  batch: the output holds each batch once).

Only Spark SQL functions are used: no Python UDFs, so Spark's workers need nothing from here (the
foreachBatch function runs in the driver).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from clickstream.jobs import parse

PROFILE_SCHEMA = "country string, plan string"
SESSION_GAP = "1 minute"
WATERMARK = "2 minutes"
MARKER_USER = "system"


def users_table(spark: SparkSession, client: dict[str, str], topic: str) -> DataFrame:
    """user, country, plan: the latest record of each key, unless that record is a tombstone."""
    records = spark.read.format("zkafka").options(**client).option("subscribe", topic).load()
    latest = records.groupBy("key").agg(F.max(F.struct("offset", "value")).alias("last"))
    return (
        latest.where(F.col("last.value").isNotNull())
        .select(
            F.col("key").cast("string").alias("user"),
            F.from_json(F.col("last.value").cast("string"), PROFILE_SCHEMA).alias("p"),
        )
        .select("user", "p.country", "p.plan")
    )


def sessions(records: DataFrame) -> DataFrame:
    """Per user, event-time sessions: clicks, first and last click. The marker is not filtered out
    here (it moves the watermark, as in `page_windows`); its sessions are dropped on output."""
    clicks = parse(records).withWatermark("event_time", WATERMARK)
    return clicks.groupBy("user", F.session_window("event_time", SESSION_GAP).alias("session")).agg(
        F.count("*").alias("clicks"), F.min("ts_ms").alias("first_ms"), F.max("ts_ms").alias("last_ms")
    )


def start_sessions_query(
    spark: SparkSession, client: dict[str, str], topic: str, users_topic: str, workdir: Path, **trigger: Any
) -> Any:
    """Sessions of the clicks topic, enriched, into `workdir/sessions/batch=<id>` (Parquet).
    `client` holds the connection options (kafka.bootstrap.servers or zkafka.zookeeper.connect)."""
    records = (
        spark.readStream.format("zkafka")
        .options(**client)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    output = workdir / "sessions"

    def enrich_and_write(batch: DataFrame, batch_id: int) -> None:
        # the table as it is now: a profile changed since the last micro-batch counts from here on
        users = users_table(batch.sparkSession, client, users_topic)
        enriched = batch.where(F.col("user") != MARKER_USER).join(users, "user", "left")
        # one action on the batch (each action would run the stateful plan again); overwrite, so
        # a batch Spark replays after a failure replaces its own earlier output
        enriched.select(
            "user",
            F.col("session.start").alias("session_start"),
            F.col("session.end").alias("session_end"),
            "clicks",
            "first_ms",
            "last_ms",
            "country",
            "plan",
        ).write.mode("overwrite").parquet(str(output / f"batch={batch_id}"))

    return (
        sessions(records)
        .writeStream.outputMode("append")
        .foreachBatch(enrich_and_write)
        .option("checkpointLocation", str(workdir / "checkpoints" / "sessions"))
        .trigger(**(trigger or {"availableNow": True}))
        .start()
    )


def dropped_by_watermark(query: Any) -> int:
    """Rows the query's stateful operator dropped as late, over the progress it still holds (its
    last 100 micro-batches). Spark counts rows after the partial aggregation before the shuffle,
    which merges rows of one user with the same event time: one row per (user, event time)."""
    return sum(
        op.numRowsDroppedByWatermark for progress in query.recentProgress for op in progress.stateOperators
    )

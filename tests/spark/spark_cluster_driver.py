"""A Spark driver on a standalone cluster, in a process of its own (the test process already holds
a local[2] session, and a JVM has one SparkContext). It runs the connector's jobs and prints one
JSON line with what they returned; every row carries `executor`, the working directory of the
executor whose task produced it (`<worker work-dir>/<app>/<executor id>`), so the test can tell
which worker ran each task.

    python spark_cluster_driver.py jobs   ARGS_JSON   batch read, AvailableNow read to Parquet, batch write
    python spark_cluster_driver.py stream ARGS_JSON   AvailableNow read to Parquet in small batches
    python spark_cluster_driver.py ship   ARGS_JSON   `jobs`, and where the executors found zkafka
    python spark_cluster_driver.py stream_eos ARGS_JSON   AvailableNow read into a topic, exactly once
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any

from spark_helpers import stream_query

from zkafka.spark.session import local_session


def executor_dir() -> str:
    return os.getcwd()


def with_executor(df: Any) -> Any:
    """`df` with the column `executor`. A plain Python UDF (mapInArrow would need pandas): it runs
    in the same task as the connector's read or write (no shuffle between them), so the executor
    seen here is the one whose Python worker read or sent the records."""
    from pyspark.sql.functions import udf

    return df.withColumn("executor", udf(executor_dir, "string").asNondeterministic()())


def tagged(df: Any) -> Any:
    return with_executor(df.selectExpr("partition", "offset", "cast(value as string) as v"))


def stream_to_parquet(spark: Any, args: dict[str, Any], output: str, checkpoint: str) -> list[dict]:
    reader = (
        spark.readStream.format("zkafka")
        .option("kafka.bootstrap.servers", args["bootstrap"])
        .option("subscribe", args["topic"])
        .option("startingOffsets", "earliest")
    )
    if args.get("max_per_trigger"):
        reader = reader.option("maxOffsetsPerTrigger", str(args["max_per_trigger"]))
    query = (
        tagged(reader.load())
        .writeStream.format("parquet")
        .option("path", output)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(f"streaming query failed: {query.exception()}")
    return [r.asDict() for r in spark.read.parquet(output).collect()]


def jobs(spark: Any, args: dict[str, Any]) -> dict[str, Any]:
    batch = tagged(
        spark.read.format("zkafka")
        .option("kafka.bootstrap.servers", args["bootstrap"])
        .option("subscribe", args["topic"])
        .load()
    )
    streamed = stream_to_parquet(spark, args, args["workdir"] + "/out", args["workdir"] + "/ckpt")
    # the write: one row per value, each keyed by the executor that sent it
    to_write = spark.range(args["write_records"]).repartition(args["write_tasks"])
    (
        with_executor(to_write.selectExpr("cast(id as string) as value"))
        .selectExpr("executor as key", "value")
        .write.format("zkafka")
        .option("kafka.bootstrap.servers", args["bootstrap"])
        .option("topic", args["write_topic"])
        .mode("append")
        .save()
    )
    return {"batch": [r.asDict() for r in batch.collect()], "stream": streamed}


def interpreter(_: Any) -> Iterator[tuple[str, str]]:
    import zkafka

    yield sys.prefix, zkafka.__file__


def main(mode: str, raw: str) -> None:
    args = json.loads(raw)
    spark = local_session(f"zkafka-cluster-{mode}", master=args["master"], conf=args["conf"])
    try:
        if mode == "jobs":
            result = jobs(spark, args)
        elif mode == "ship":
            probe = spark.sparkContext.parallelize(range(8), 8).mapPartitions(interpreter)
            result = {**jobs(spark, args), "executors": sorted(set(probe.collect()))}
        elif mode == "stream":
            result = {"stream": stream_to_parquet(spark, args, args["output"], args["checkpoint"])}
        elif mode == "stream_eos":
            query = stream_query(
                spark,
                args["bootstrap"],
                args["topic"],
                "zkafka",
                args["output"],
                args["checkpoint"],
                max_offsets_per_trigger=args["max_per_trigger"],
                available_now=True,
            )
            query.awaitTermination()
            if query.exception() is not None:
                raise RuntimeError(f"streaming query failed: {query.exception()}")
            result = {"batches": len(query.recentProgress)}
        else:
            raise SystemExit(f"unknown mode {mode}")
    finally:
        spark.stop()
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

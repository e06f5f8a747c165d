"""A Spark Connect client, run by test_spark_connect.py in a process of its own (a Connect session
switches pyspark into Connect mode for the whole process, which the tests' classic session must not
see). It registers the zkafka data source over Connect and runs a batch read, a batch write and an
AvailableNow streaming read -> write; prints one line "RESULT <json>".

    python spark_connect_driver.py '{"url": "sc://127.0.0.1:PORT", "bootstrap": ..., ...}'
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession

import zkafka.spark


def main(args: dict[str, str]) -> None:
    spark = SparkSession.builder.remote(args["url"]).getOrCreate()
    try:
        zkafka.spark.register(spark)  # spark.dataSource.register over Connect: the server keeps it
        bootstrap = args["bootstrap"]

        # batch read: every record of the source topic, as Spark's Kafka source gives them
        rows = (
            spark.read.format("zkafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", args["source"])
            .load()
            .selectExpr("partition", "offset", "cast(key as string) as k", "cast(value as string) as v")
            .collect()
        )
        read = sorted([r["partition"], r["offset"], r["k"], r["v"]] for r in rows)

        # batch write: rows built on the server, keys partitioned by the producer's murmur2
        (
            spark.range(int(args["write_count"]))
            .selectExpr("cast(id as string) as key", "concat('w', cast(id as string)) as value")
            .write.format("zkafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", args["batch_sink"])
            .mode("append")  # Python data sources take Append (as classic sessions do)
            .save()
        )

        # streaming read -> write, everything there is now and then stop
        query = (
            spark.readStream.format("zkafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", args["source"])
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", args["max_offsets_per_trigger"])
            .load()
            .selectExpr("key", "upper(cast(value as string)) as value")
            .writeStream.format("zkafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", args["stream_sink"])
            .option("checkpointLocation", args["checkpoint"])
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(240)
        finished = not query.isActive
        if not finished:
            query.stop()
        print("RESULT " + json.dumps({"read": read, "finished": finished}), flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))

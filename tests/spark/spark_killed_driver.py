"""A Spark driver in a process of its own, for the restart test: it streams a topic into Parquet
(small micro-batches) until the test SIGKILLs it, JVM and Python workers included.

    python spark_killed_driver.py BOOTSTRAP TOPIC OUTPUT_DIR CHECKPOINT_DIR
"""

from __future__ import annotations

import sys

from zkafka.spark.session import local_session


def main(bootstrap: str, topic: str, output: str, checkpoint: str) -> None:
    spark = local_session("zkafka-killed-driver")
    query = (
        spark.readStream.format("zkafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "40")
        .load()
        .selectExpr("partition", "offset", "cast(value as string) as v")
        .writeStream.format("parquet")
        .option("path", output)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    query.awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:5])

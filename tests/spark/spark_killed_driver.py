"""A Spark driver in a process of its own, for the restart tests: it streams a topic into Parquet
or, exactly once, into another topic (small micro-batches) until the test SIGKILLs it, JVM and
Python workers included.

    python spark_killed_driver.py parquet|zkafka BOOTSTRAP TOPIC OUTPUT CHECKPOINT_DIR
"""

from __future__ import annotations

import sys

from spark_helpers import stream_query

from zkafka.spark.session import local_session


def main(sink: str, bootstrap: str, topic: str, output: str, checkpoint: str) -> None:
    spark = local_session("zkafka-killed-driver")
    query = stream_query(
        spark, bootstrap, topic, sink, output, checkpoint, max_offsets_per_trigger=40, available_now=False
    )
    query.awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:6])

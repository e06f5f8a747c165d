"""zkafka for Spark: a pure-Python PySpark data source with the options and schema of Spark's
Kafka connector, so a Spark job changes one word, ``format("kafka")`` to ``format("zkafka")``.

    import zkafka.spark
    zkafka.spark.register(spark)
    df = (spark.readStream.format("zkafka")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "events").load())

Batch and streaming reads and writes; see docs/spark.md for the options, guarantees and numbers.
Needs the project's `spark` extra (pyspark and pyarrow) in the interpreter Spark's Python
workers run (PYSPARK_PYTHON): Spark starts separate Python processes that import this package.
"""

from __future__ import annotations

try:
    import pyarrow  # noqa: F401  (Python data sources hand rows to the JVM as Arrow)
    import pyspark  # noqa: F401
except ImportError as e:  # pitfall P1: without this, Spark reports only "Python worker crashed"
    raise ImportError(
        f"zkafka.spark needs pyspark and pyarrow ({e.name} is missing): install zkafka's spark extra, "
        "pip install 'zkafka[spark]'"
    ) from e

from typing import TYPE_CHECKING

from zkafka.spark.errors import (
    DataLossError,
    FetchTimeoutError,
    OffsetError,
    OptionError,
    SchemaError,
    ZkafkaSparkError,
)
from zkafka.spark.source import FORMAT, ZkafkaDataSource

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "FORMAT",
    "DataLossError",
    "FetchTimeoutError",
    "OffsetError",
    "OptionError",
    "SchemaError",
    "ZkafkaDataSource",
    "ZkafkaSparkError",
    "register",
]


def register(spark: SparkSession) -> None:
    """Make ``format("zkafka")`` available in `spark` (once per session; again is harmless)."""
    spark.dataSource.register(ZkafkaDataSource)

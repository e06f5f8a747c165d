"""A local SparkSession set up for zkafka: loopback only, the current interpreter for Spark's
Python workers, no UI, few shuffle partitions, and the "zkafka" format registered."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def local_session(
    app_name: str = "zkafka",
    *,
    master: str = "local[2]",
    shuffle_partitions: int = 2,
    conf: dict[str, str] | None = None,
    log_level: str = "ERROR",
) -> SparkSession:
    # Spark's Python workers must import zkafka: run them with this interpreter. Binding to
    # 127.0.0.1 keeps all of Spark's traffic on loopback (it otherwise picks the eth0 address).
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from zkafka.spark import register

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    register(spark)
    return spark

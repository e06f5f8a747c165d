"""The clickstream pipeline's flows for Spark Declarative Pipelines (pyspark.pipelines).

`spark-pipelines run` imports this file with `spark` (a Spark Connect session) in its globals and
runs the graph on the Connect server in its JVM. The zkafka data source is registered right here,
when the file is imported: `spark.dataSource.register` is a Connect command the server keeps for
the session, and it is not among the session mutations pipelines block. The server's Python
workers run the source and the sink, so they must import zkafka (PYSPARK_PYTHON / PYTHONPATH).

- `events`: streaming table (Parquet) of the parsed JSON events, read from the events topic.
- `page_totals`: materialized view (Parquet), events, purchases and revenue per page.
- `clicks_by_page` sink: every event, as JSON keyed by page, back into a topic through zkafka.
"""

from pyspark import pipelines as dp
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import zkafka.spark

spark = globals()["spark"]  # injected by spark-pipelines before the file runs
zkafka.spark.register(spark)

EVENT_SCHEMA = "event_id long, user string, page string, type string, amount double, ts_ms long"
BOOTSTRAP = spark.conf.get("zkafka.clickstream.bootstrap")
EVENTS_TOPIC = spark.conf.get("zkafka.clickstream.events_topic")
STATS_TOPIC = spark.conf.get("zkafka.clickstream.stats_topic")


@dp.table(format="parquet", comment="clickstream events read from the events topic")
def events() -> DataFrame:
    records = (
        spark.readStream.format("zkafka")
        .option("kafka.bootstrap.servers", BOOTSTRAP)
        .option("subscribe", EVENTS_TOPIC)
        .option("startingOffsets", "earliest")
        .load()
    )
    return (
        records.select(
            F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("e"), "partition", "offset"
        )
        .select("e.*", "partition", "offset")
        .where(F.col("type") != "end")  # the batch pipeline's watermark marker: no event
    )


@dp.materialized_view(format="parquet", comment="totals per page")
def page_totals() -> DataFrame:
    return (
        spark.read.table("events")
        .groupBy("page")
        .agg(
            F.count("*").alias("events"),
            F.sum(F.when(F.col("type") == "purchase", 1).otherwise(0)).alias("purchases"),
            F.round(F.coalesce(F.sum("amount"), F.lit(0.0)), 2).alias("revenue"),
        )
    )


dp.create_sink(
    "clicks_by_page",
    format="zkafka",
    options={"kafka.bootstrap.servers": BOOTSTRAP, "topic": STATS_TOPIC},
)


@dp.append_flow(target="clicks_by_page")
def events_to_topic() -> DataFrame:
    return spark.readStream.table("events").select(
        F.col("page").alias("key"),
        F.to_json(F.struct("event_id", "user", "page", "type", "amount", "ts_ms")).alias("value"),
    )

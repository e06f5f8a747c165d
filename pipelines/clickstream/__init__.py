"""A clickstream pipeline on Spark over zkafka: events into a topic, a windowed streaming job into
Parquet and a topic, a batch job by offset range. Run it with `python pipelines/clickstream/run.py`."""

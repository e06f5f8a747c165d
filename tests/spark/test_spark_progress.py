"""How far behind a streaming query is, as a Spark user sees it: the offsets-behind metrics of
Spark's Kafka source, from `query.lastProgress` and from a StreamingQueryListener, moving as
records arrive and are consumed."""

from __future__ import annotations

from typing import Any

import pytest
from spark_helpers import create_topic, produce, topic_name, values, wait_until

from zkafka.spark.progress import METRICS, OffsetsBehindListener, offsets_behind


def behind(progress: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in offsets_behind(progress["sources"][0]).items()}


@pytest.mark.timeout(120)
def test_offsets_behind_move_as_records_arrive_and_are_consumed(spark: Any, bootstrap: str) -> None:
    name = topic_name("lag")
    create_topic(bootstrap, name, 2)
    produce(bootstrap, name, values(500, partition=0) + values(300, partition=1))
    listener = OffsetsBehindListener()
    spark.streams.addListener(listener)
    query = (
        spark.readStream.format("zkafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", name)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "100")
        .load()
        .writeStream.format("noop")
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    try:
        # 800 records, 100 per batch: the backlog shrinks batch by batch, to nothing
        wait_until(lambda: sum(p["numInputRows"] for p in query.recentProgress) >= 800, 60, "800 rows")
        consumed = 0
        seen = []
        for progress in query.recentProgress:
            if not progress["numInputRows"]:
                continue
            consumed += progress["numInputRows"]
            lag = behind(progress)
            seen.append(lag)
            assert set(lag) == set(METRICS)
            # exact: what was produced minus what the query has read, split over two partitions
            assert lag["avgOffsetsBehindLatest"] * 2 == 800 - consumed
            assert lag["minOffsetsBehindLatest"] + lag["maxOffsetsBehindLatest"] == 800 - consumed
        assert seen[0]["maxOffsetsBehindLatest"] > 0 and seen[-1]["maxOffsetsBehindLatest"] == 0
        assert [s["avgOffsetsBehindLatest"] for s in seen] == sorted(
            (s["avgOffsetsBehindLatest"] for s in seen), reverse=True
        )
        # Spark's own metrics map stays empty for a Python source (see zkafka.spark.progress); if
        # a pyspark release fills it, this fails and the docs should say so
        assert query.lastProgress["sources"][0]["metrics"] == {}

        # records arrive: the next batch's progress shows the query behind again, then caught up
        batches = len(query.recentProgress)
        produce(bootstrap, name, values(400, partition=1))
        wait_until(
            lambda: any(
                behind(p).get("maxOffsetsBehindLatest", 0) > 0 for p in query.recentProgress[batches:]
            ),
            30,
            "a progress behind the new records",
        )
        wait_until(
            lambda: (
                sum(p["numInputRows"] for p in query.recentProgress) >= 1200
                and behind(query.lastProgress).get("maxOffsetsBehindLatest") == 0
            ),
            60,
            "the query to catch up",
        )
        # the listener saw the same, per query id
        wait_until(lambda: str(query.id) in listener.latest, 10, "a progress event")
        assert set(listener.latest[str(query.id)][0]) == set(METRICS)
    finally:
        query.stop()
        spark.streams.removeListener(listener)


def test_offsets_behind_from_a_listener_style_source_and_other_sources() -> None:
    class Source:  # a listener's SourceProgress: offsets as JSON text
        endOffset = '{"t":{"0":5,"1":7}}'
        latestOffset = '{"t":{"0":9,"1":7}}'

    assert offsets_behind(Source()) == {
        "minOffsetsBehindLatest": "0",
        "maxOffsetsBehindLatest": "4",
        "avgOffsetsBehindLatest": "2.0",
    }
    assert offsets_behind({"endOffset": None, "latestOffset": None}) == {}  # no batch yet
    assert offsets_behind({"endOffset": 41, "latestOffset": 42}) == {}  # the rate source's offsets

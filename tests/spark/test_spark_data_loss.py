"""failOnDataLoss both ways, after retention really deleted the first segments of a partition."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import create_topic, offsets, produce, topic_name, wait_until

OLD, KEPT = 50, 10


@pytest.fixture(scope="module")
def trimmed_topic(cluster: Any) -> str:
    """A partition whose records [0, 50) were deleted by retention; [50, 60) remain."""
    bootstrap = cluster.bootstrap_servers
    name = topic_name("loss")
    # tiny segments, so each produced batch rolls a segment retention can delete whole
    create_topic(bootstrap, name, 1, configs={"segment.bytes": "2048", "retention.ms": "86400000"})
    two_days_ago = int(time.time() * 1000) - 2 * 86_400_000
    for chunk in range(5):  # one batch (and segment) per call
        produce(
            bootstrap,
            name,
            [(0, None, b"old-%d" % i + b"." * 100, two_days_ago) for i in range(10 * chunk, 10 * chunk + 10)],
        )
    # as big as an old batch, so it starts a segment of its own too
    produce(bootstrap, name, [(0, None, b"new-%d" % i + b"." * 100, None) for i in range(KEPT)])
    wait_until(
        lambda: offsets(bootstrap, name, "earliest")[0] >= OLD, 30, "retention to delete the old segments"
    )
    assert offsets(bootstrap, name, "earliest")[0] == OLD
    return name


def from_zero(name: str) -> str:
    return json.dumps({name: {"0": 0}})


def test_batch_read_fails_or_skips_lost_offsets(spark: Any, bootstrap: str, trimmed_topic: str) -> None:
    reader = (
        spark.read.format("zkafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", trimmed_topic)
        .option("startingOffsets", from_zero(trimmed_topic))
    )
    with pytest.raises(Exception, match=r"KAFKA_DATA_LOSS\.COULD_NOT_READ_OFFSET_RANGE.*\[0, 50\)"):
        reader.load().collect()
    rows = reader.option("failOnDataLoss", "false").load().collect()
    assert sorted(r.offset for r in rows) == list(range(OLD, OLD + KEPT))
    assert sorted(r.value for r in rows) == sorted(b"new-%d" % i + b"." * 100 for i in range(KEPT))


def test_streaming_query_fails_or_skips_lost_offsets(
    spark: Any, bootstrap: str, trimmed_topic: str, tmp_path: Path
) -> None:
    def run(fail: str, sink: str) -> Any:
        query = (
            spark.readStream.format("zkafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", trimmed_topic)
            .option("startingOffsets", from_zero(trimmed_topic))
            .option("failOnDataLoss", fail)
            .load()
            .writeStream.format("memory")
            .queryName(sink)
            .option("checkpointLocation", str(tmp_path / sink))
            .trigger(availableNow=True)
            .start()
        )
        try:
            query.awaitTermination(120)
        except Exception:  # the failure is also on query.exception()
            pass
        return query

    failed = run("true", "loss_fail")
    assert failed.exception() is not None
    assert "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE" in str(failed.exception())
    skipped = run("false", "loss_skip")
    assert skipped.exception() is None
    offsets_read = sorted(r.offset for r in spark.sql("select offset from loss_skip").collect())
    assert offsets_read == list(range(OLD, OLD + KEPT))

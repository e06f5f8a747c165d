"""Exactly-once from a topic into Spark's file sink across a driver restart: the driver process is
SIGKILLed in the middle of a stream, a new driver restarts from the checkpoint, and every offset
is in the Parquet output exactly once (the offset log replays the unfinished batch with the same
range; the file sink's log keeps only committed batches)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from spark_helpers import create_topic, kill_driver_mid_stream, produce, stream_query, topic_name

RECORDS = 800


@pytest.mark.timeout(480)
def test_restart_after_driver_kill_is_exactly_once_into_parquet(
    spark: Any, bootstrap: str, tmp_path: Path
) -> None:
    name = topic_name("eos")
    create_topic(bootstrap, name, 2)
    produce(bootstrap, name, [(i % 2, None, b"%d" % i, None) for i in range(RECORDS)])
    output, checkpoint = tmp_path / "out", tmp_path / "ckpt"
    done_before = kill_driver_mid_stream(
        ["parquet", bootstrap, name, str(output), str(checkpoint)], checkpoint, tmp_path / "driver.log"
    )
    assert 3 <= done_before < RECORDS // 40, "the kill should land in the middle of the stream"

    query = stream_query(
        spark,
        bootstrap,
        name,
        "parquet",
        str(output),
        str(checkpoint),
        max_offsets_per_trigger=400,
        available_now=True,
    )
    query.awaitTermination(120)
    assert query.exception() is None
    first_batch = min(int(p["batchId"]) for p in query.recentProgress)
    assert first_batch >= done_before - 1  # resumed from the checkpoint, did not start over

    rows = spark.read.parquet(str(output)).collect()
    positions = [(r.partition, r.offset) for r in rows]
    assert len(positions) == len(set(positions)) == RECORDS  # nothing doubled, nothing skipped
    assert sorted(int(r.v) for r in rows) == list(range(RECORDS))

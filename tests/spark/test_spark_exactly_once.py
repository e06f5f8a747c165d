"""Exactly-once from a topic into Spark's file sink across a driver restart: the driver process is
SIGKILLed in the middle of a stream, a new driver restarts from the checkpoint, and every offset
is in the Parquet output exactly once (the offset log replays the unfinished batch with the same
range; the file sink's log keeps only committed batches)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import create_topic, produce, topic_name, wait_until

DRIVER = Path(__file__).with_name("spark_killed_driver.py")
RECORDS = 800


@pytest.mark.timeout(300)
def test_restart_after_driver_kill_is_exactly_once_into_parquet(
    spark: Any, bootstrap: str, tmp_path: Path
) -> None:
    name = topic_name("eos")
    create_topic(bootstrap, name, 2)
    produce(bootstrap, name, [(i % 2, None, b"%d" % i, None) for i in range(RECORDS)])
    output, checkpoint = tmp_path / "out", tmp_path / "ckpt"
    log = (tmp_path / "driver.log").open("wb")
    driver = subprocess.Popen(
        [sys.executable, str(DRIVER), bootstrap, name, str(output), str(checkpoint)],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: the JVM and Python workers die with it
    )
    try:
        commits = checkpoint / "commits"
        wait_until(
            lambda: commits.is_dir() and len([p for p in commits.iterdir() if p.name.isdigit()]) >= 3,
            150,
            "the first driver to commit 3 micro-batches",
        )
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(30)
        log.close()
    done_before = len([p for p in (checkpoint / "commits").iterdir() if p.name.isdigit()])
    assert 3 <= done_before < RECORDS // 40, "the kill should land in the middle of the stream"

    query = (
        spark.readStream.format("zkafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", name)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "400")
        .load()
        .selectExpr("partition", "offset", "cast(value as string) as v")
        .writeStream.format("parquet")
        .option("path", str(output))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    first_batch = min(int(p["batchId"]) for p in query.recentProgress)
    assert first_batch >= done_before - 1  # resumed from the checkpoint, did not start over

    rows = spark.read.parquet(str(output)).collect()
    positions = [(r.partition, r.offset) for r in rows]
    assert len(positions) == len(set(positions)) == RECORDS  # nothing doubled, nothing skipped
    assert sorted(int(r.v) for r in rows) == list(range(RECORDS))

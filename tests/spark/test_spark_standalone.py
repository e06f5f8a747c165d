"""The connector on a real Spark standalone cluster (a master and two 1-core workers, separate JVMs
on loopback) against a real 3-broker cluster: exact results, with tasks on both workers; a worker
SIGKILLed in the middle of a streaming query, after which the query finishes on the other worker
and the Parquet output holds every record exactly once; and the clickstream pipeline, its
sessions step included, through `zkafka pipeline run --master spark://...`.

Drivers run in processes of their own (spark_cluster_driver.py): this process's JVM already holds
the local[2] session of the other Spark tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from spark_helpers import (
    create_topic,
    driver_result,
    kill_worker_mid_stream,
    positions,
    produce,
    read_topic,
    start_driver,
    topic_name,
    workers_of,
)

from zkafka.local.launcher import LocalCluster
from zkafka.testing.spark_cluster import StandaloneCluster, source_root


@pytest.mark.timeout(240)
def test_batch_stream_and_write_on_two_workers(
    spark_standalone: StandaloneCluster, three_brokers: LocalCluster, tmp_path: Path
) -> None:
    bootstrap = three_brokers.bootstrap_servers
    topic, write_topic = topic_name("sa-read"), topic_name("sa-write")
    create_topic(bootstrap, topic, 6)
    create_topic(bootstrap, write_topic, 3)
    records = 3000
    produce(bootstrap, topic, [(i % 6, None, b"%d" % i, None) for i in range(records)])
    args = {
        "master": spark_standalone.master_url,
        "conf": spark_standalone.app_conf(),
        "bootstrap": bootstrap,
        "topic": topic,
        "write_topic": write_topic,
        "write_records": 2000,
        "write_tasks": 4,
        "workdir": str(tmp_path),
    }
    result = driver_result(start_driver("jobs", args, tmp_path / "driver.log"), tmp_path / "driver.log", 200)

    expected = sorted((i % 6, i // 6) for i in range(records))
    for job in ("batch", "stream"):
        rows = result[job]
        assert sorted(positions(rows)) == expected, job  # every record once, nothing else
        assert all(int(r["v"]) == r["offset"] * 6 + r["partition"] for r in rows), job
        assert workers_of(spark_standalone, rows) == {0, 1}, f"{job}: tasks ran on one worker only"

    written = read_topic(bootstrap, write_topic, 3, 2000)
    assert sorted(int(v) for _, v in written) == list(range(2000))
    assert workers_of(spark_standalone, ({"executor": k.decode()} for k, _ in written)) == {0, 1}


def batch_workers(sc: StandaloneCluster, output: Path) -> dict[int, set[int]]:
    """For each committed micro-batch of a Parquet file sink, the workers whose tasks wrote its rows
    (the sink's log `_spark_metadata/<batch>` lists the files of each batch)."""
    found: dict[int, set[int]] = {}
    for entry in (output / "_spark_metadata").iterdir():
        if not entry.name.isdigit():
            continue
        files = [json.loads(line)["path"] for line in entry.read_text().splitlines()[1:]]
        workers: set[int] = set()
        for f in files:
            table = pq.read_table(f.removeprefix("file://"), columns=["executor"])
            workers |= {sc.worker_of(e) for e in set(table.column("executor").to_pylist())}
        found[int(entry.name)] = workers
    return found


@pytest.mark.timeout(480)
def test_worker_killed_mid_stream_recovers_exactly_once(
    spark_standalone: StandaloneCluster, three_brokers: LocalCluster, tmp_path: Path
) -> None:
    bootstrap = three_brokers.bootstrap_servers
    topic = topic_name("sa-kill")
    create_topic(bootstrap, topic, 4)
    records = 4000
    produce(bootstrap, topic, [(i % 4, None, b"%d" % i, None) for i in range(records)])
    output, checkpoint, log = tmp_path / "out", tmp_path / "ckpt", tmp_path / "driver.log"
    args = {
        "master": spark_standalone.master_url,
        # no compaction of the sink's log, which would merge the per-batch file lists read below
        "conf": {**spark_standalone.app_conf(), "spark.sql.streaming.fileSink.log.compactInterval": "1000"},
        "bootstrap": bootstrap,
        "topic": topic,
        "max_per_trigger": 200,  # 20 micro-batches: the kill lands in the middle
        "output": str(output),
        "checkpoint": str(checkpoint),
    }
    result, killed_after = kill_worker_mid_stream(
        spark_standalone, start_driver("stream", args, log), checkpoint, log, 200
    )

    rows = result["stream"]
    assert sorted(positions(rows)) == sorted((i % 4, i // 4) for i in range(records))  # exactly once
    assert killed_after < records // 200 - 2, "the kill should land in the middle of the stream"
    by_batch = batch_workers(spark_standalone, output)
    assert sorted(by_batch) == list(range(records // 200))
    assert 1 in set().union(*(by_batch[b] for b in range(killed_after))), "worker 1 ran tasks before"
    # every batch planned after the kill ran on the surviving worker alone
    assert all(by_batch[b] == {0} for b in range(killed_after + 1, records // 200))


@pytest.mark.timeout(480)
def test_pipeline_run_on_the_standalone_cluster(
    spark_standalone: StandaloneCluster, three_brokers: LocalCluster, tmp_path: Path
) -> None:
    """`zkafka pipeline run --master spark://...`: the clickstream pipeline's own checks hold, those
    of the sessions step too (sessions, enrichment, late clicks: exact against the generator)."""
    command = [sys.executable, "-m", "zkafka.cli.pipeline", "run", "--events", "2000"]
    command += [
        "--bootstrap-server",
        three_brokers.bootstrap_servers,
        "--master",
        spark_standalone.master_url,
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([source_root(), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=420)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    report = out.decode(errors="replace")
    print(report)  # the pipeline's tables and timings (`pytest -rP` shows them)
    assert proc.returncode == 0, report
    assert f"Spark session on {spark_standalone.master_url}" in report
    assert "FAIL" not in report and report.count("OK ") >= 8, report
    for check in ("sessions: all ", "enrichment: ", "late clicks: ", "users topic read as a table"):
        assert f"OK   {check}" in report, report

"""Spark Declarative Pipelines: the clickstream pipeline defined for `spark-pipelines`
(pipelines/clickstream_sdp: a spec and Python flow definitions) run end to end with the pyspark
installation's `bin/spark-pipelines run --spec` against a real 3-broker cluster: a streaming table
read from a zkafka topic, a materialized view, and a sink writing back to a topic through zkafka.
The flow file registers the data source itself, when spark-pipelines imports it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("grpc", reason="spark-pipelines needs pyspark's pipelines extra (grpcio)")
pytest.importorskip("yaml", reason="spark-pipelines needs pyspark's pipelines extra (pyyaml)")

import pyarrow.parquet as pq
from spark_connect_helpers import spark_environment
from spark_helpers import create_topic, read_topic, topic_name

from zkafka.cli.pipeline import PIPELINE
from zkafka.local.launcher import LocalCluster
from zkafka.testing.spark_cluster import spark_home

SDP = PIPELINE.parent.parent / "clickstream_sdp"
sys.path.insert(0, str(PIPELINE.parent.parent))

from clickstream.events import generate, totals_by_page  # noqa: E402  (needs the path above)
from clickstream.events import produce as produce_events  # noqa: E402

EVENTS = 1200


def write_spec(directory: Path, bootstrap: str, events_topic: str, stats_topic: str) -> Path:
    """The repository's pipeline, its spec pointed at this cluster, topics and directory."""
    shutil.copytree(SDP, directory, ignore=shutil.ignore_patterns("__pycache__"))
    spec = directory / "spark-pipeline.yml"
    lines = spec.read_text().splitlines()
    replaced = {
        "storage:": f"storage: {(directory / 'storage').as_uri()}",
        "zkafka.clickstream.bootstrap:": f"  zkafka.clickstream.bootstrap: {bootstrap}",
        "zkafka.clickstream.events_topic:": f"  zkafka.clickstream.events_topic: {events_topic}",
        "zkafka.clickstream.stats_topic:": f"  zkafka.clickstream.stats_topic: {stats_topic}",
    }
    out = [next((new for key, new in replaced.items() if ln.strip().startswith(key)), ln) for ln in lines]
    spec.write_text("\n".join(out) + "\n")
    return spec


def run_pipeline(spec: Path, workdir: Path, timeout: float) -> None:
    log = workdir / "spark-pipelines.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            # bin/spark-pipelines runs exactly this, with pyspark's CLI in place of ours (see
            # spark_pipelines_cli.py: pyspark's fails on the Python data source's accumulators)
            [
                str(spark_home() / "bin" / "spark-class"),
                "org.apache.spark.deploy.SparkPipelines",
                str(SDP / "spark_pipelines_cli.py"),
                "run",
                "--spec",
                str(spec),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=spark_environment(workdir),
            cwd=workdir,  # the tables go to ./spark-warehouse
            start_new_session=True,  # its JVM and Python workers die with the group
        )
        try:
            process.wait(timeout)
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(30)
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
    assert process.returncode == 0, f"spark-pipelines failed ({process.returncode}):\n{tail}"


@pytest.mark.timeout(420)
def test_spark_pipelines_run_reads_zkafka_and_writes_parquet_and_a_topic(
    three_brokers: LocalCluster, tmp_path: Path
) -> None:
    bootstrap = three_brokers.bootstrap_servers
    events_topic, stats_topic = topic_name("sdp-clicks"), topic_name("sdp-by-page")
    create_topic(bootstrap, events_topic, partitions=3)
    create_topic(bootstrap, stats_topic, partitions=3)
    events = generate(EVENTS, users=20, minutes=3)
    produce_events(bootstrap, events_topic, events)
    real = [e for e in events if e.type != "end"]

    spec = write_spec(tmp_path / "pipeline", bootstrap, events_topic, stats_topic)
    run_pipeline(spec, tmp_path, timeout=360)

    warehouse = tmp_path / "spark-warehouse"
    # streaming table: every event once
    table = pq.read_table(warehouse / "events").to_pylist()
    assert sorted(r["event_id"] for r in table) == [e.event_id for e in real]

    # materialized view: the totals the generator says
    totals = {
        r["page"]: (r["events"], r["purchases"], r["revenue"])
        for r in pq.read_table(warehouse / "page_totals").to_pylist()
    }
    expected = {
        p: (t.events, t.purchases, round(t.revenue, 2)) for p, t in totals_by_page(real).items() if t.events
    }
    assert totals == expected

    # sink: every event back in a topic, keyed by its page
    records = read_topic(bootstrap, stats_topic, 3, len(real))
    sent = sorted((r[0].decode(), json.loads(r[1])["event_id"]) for r in records)
    assert sent == sorted((e.page, e.event_id) for e in real)

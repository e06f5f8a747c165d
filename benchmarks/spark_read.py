"""Streaming read throughput of the zkafka Spark source, where the time goes, and Spark's own
file sources reading the same records.

    .venv/bin/python benchmarks/spark_read.py [--records 2000000] [--partitions 8] [--record-size 100]
                                              [--bootstrap-server HOST:PORT] [--standalone]
                                              [--rounds 1] [--no-files] [--no-spark]

1. Starts ZooKeeper and one broker process (unless --bootstrap-server is given), creates a topic
   of `partitions` partitions and fills it with `records` records of `record-size` bytes
   (confluent-kafka produces, so the loading is quick).
2. Outside Spark, in this process, one partition after another, on one core:
   - fetch only: bare Fetch requests, batch headers read, no record decoded;
   - per-record decode: a `Consumer` reading every range into `ConsumedRecord`s (the source's
     path before columnar decoding), and those records turned into Arrow (partition 0 only);
   - a task's read_range: what one Spark task runs (fetch, batches decoded by columns into Arrow).
3. Spark, local[2] (and with --standalone also a standalone cluster of two 1-core workers on
   loopback, separate JVMs): a streaming query (Trigger.AvailableNow, the `noop` sink) reads the whole
   topic; run 1 + `rounds` times, the first warms the Python workers. Records/s of the whole query,
   of its micro-batches (Spark's triggerExecution: the stream's rate once running, without the
   query's start) and of their tasks (addBatch).
4. Unless --no-files: the same records (all seven columns) written once to Parquet and to JSON,
   and read back the same way (Trigger.AvailableNow into `noop`) by Spark's own file sources:
   the zkafka source's rate as a share of theirs.
Every row shows wall seconds and CPU seconds (this process for stage 2; Spark's JVM and its
Python workers for 3 and 4, the broker not counted): on a machine shared with other work, CPU
core-µs per record is the steadier figure. The last lines give the ratio to the aim (600,000
records/s, warm, local[2]) and to Spark's file sources. Nothing here is asserted; the numbers
are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from zkafka.client.sync import SyncAdminClient, SyncConsumer
from zkafka.client.types import TopicPartition
from zkafka.spark.fetch import read_range, to_record_batch
from zkafka.spark.offsets import OffsetRange
from zkafka.spark.options import parse_source_options
from zkafka.spark.schema import arrow_read_schema

TOPIC = "spark-bench"
AIM = 600_000
"""records/s of a warm streaming read on local[2] (issue 17)."""
CLK = os.sysconf("SC_CLK_TCK")


def _proc_cpu(pid: int) -> tuple[int, float]:
    """(parent pid, user + system CPU seconds) of a live process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / CLK


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds of `root` and its live descendants (Spark's JVM and its Python workers)."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)], cpu[int(entry)] = _proc_cpu(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo.extend(children.get(pid, []))
    return total


def spark_jvm_pid(spark: Any) -> int:
    return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())


class Timed:
    """Wall and CPU seconds of a block: CPU of this process, or of the process tree of `root`."""

    def __init__(self, root: int | None = None) -> None:
        self.root = root

    def _cpu(self) -> float:
        return time.process_time() if self.root is None else tree_cpu_seconds(self.root)

    def __enter__(self) -> Timed:
        self.wall, self.cpu = time.perf_counter(), self._cpu()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, self._cpu() - self.cpu


def produce(bootstrap: str, n: int, size: int, partitions: int) -> float:
    from confluent_kafka import Producer

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": 1,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 2_000_000,
        }
    )
    payload = b"x" * size
    start = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(TOPIC, payload, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.05)
    p.flush(120)
    return time.perf_counter() - start


def raw_fetch(bootstrap: str, ranges: list[OffsetRange]) -> int:
    """Fetch every range with bare Fetch requests (1 MiB per partition), reading batch headers
    only: the cost of getting the bytes, without decoding records."""
    from zkafka.client.cluster import Cluster
    from zkafka.protocol.messages import FetchRequest
    from zkafka.records import iter_headers

    async def main() -> int:
        cluster = Cluster(bootstrap)
        await cluster.refresh([TOPIC])
        count = 0
        for r in ranges:
            offset = r.start
            leader = cluster.metadata.leader(r.tp)
            while offset < r.until:
                part = FetchRequest.FetchPartition(
                    partition=r.partition,
                    current_leader_epoch=-1,
                    fetch_offset=offset,
                    last_fetched_epoch=-1,
                    log_start_offset=-1,
                    partition_max_bytes=1 << 20,
                )
                request = FetchRequest(
                    replica_id=-1,
                    max_wait_ms=100,
                    min_bytes=1,
                    max_bytes=64 << 20,
                    isolation_level=0,
                    session_id=0,
                    session_epoch=-1,
                    topics=[FetchRequest.FetchTopic(topic=TOPIC, partitions=[part])],
                )
                resp = await cluster.send(leader, request, max_version=11)
                headers = list(iter_headers(resp.responses[0].partitions[0].records))
                count += sum(h.records_count for h in headers)
                offset = headers[-1].next_offset
        await cluster.close()
        return count

    return asyncio.run(main())


Stage = tuple[int, float, float]
"""records, wall seconds, CPU seconds"""


def outside_spark(bootstrap: str, partitions: int) -> dict[str, Stage]:
    """name -> (records, wall s, CPU s), each stage on one core with the cycle collector paused,
    as in a Spark task."""
    options = parse_source_options(
        {"kafka.bootstrap.servers": bootstrap, "subscribe": TOPIC, "startingOffsets": "earliest"},
        streaming=True,
    )
    with SyncAdminClient(bootstrap) as admin:
        ends = admin.topic_offsets(TOPIC, "latest")
    ranges = [OffsetRange(TOPIC, p, 0, ends[p]) for p in range(partitions)]
    out: dict[str, Stage] = {}
    gc.disable()
    try:
        with Timed() as t:
            count = raw_fetch(bootstrap, ranges)
        out["fetch only (Fetch requests, batch headers)"] = (count, t.wall, t.cpu)

        consumer = SyncConsumer(**options.client.consumer_kwargs())
        kept = []
        count = 0
        with Timed() as t:
            for r in ranges:
                tp = TopicPartition(TOPIC, r.partition)
                consumer.assign([tp])
                consumer.seek(tp, 0)
                while consumer.position(tp) < r.until:
                    records = consumer.poll(500)
                    count += len(records)
                    if r.partition == 0:
                        kept.append(records)
        out["per-record decode (Consumer -> ConsumedRecord; before)"] = (count, t.wall, t.cpu)
        consumer.close()

        schema = arrow_read_schema(False)
        with Timed() as t:
            count = sum(to_record_batch(records, schema, False).num_rows for records in kept if records)
        out["  its per-record Arrow conversion (partition 0; before)"] = (count, t.wall, t.cpu)
        del kept
    finally:
        gc.enable()

    with Timed() as t:
        count = sum(batch.num_rows for r in ranges for batch in read_range(options, r))
    out["a task's read_range: fetch + columnar decode + Arrow"] = (count, t.wall, t.cpu)
    return out


Run = tuple[str, int, float, float, dict[str, int]]
"""kind, rows, wall s, CPU s (JVM + Python workers), Spark's durations of the micro-batches"""


def timed_query(spark: Any, reader: Any, checkpoint: Path, kind: str) -> Run:
    with Timed(spark_jvm_pid(spark)) as t:
        query = (
            reader.writeStream.format("noop")
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
    progress = [p for p in query.recentProgress if p["numInputRows"]]
    rows = sum(p["numInputRows"] for p in progress)
    durations: dict[str, int] = {}
    for p in progress:
        for key, ms in p["durationMs"].items():
            durations[key] = durations.get(key, 0) + ms
    return (kind, rows, t.wall, t.cpu, durations)


def zkafka_stream(spark: Any, bootstrap: str) -> Any:
    return (
        spark.readStream.format("zkafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", TOPIC)
        .option("startingOffsets", "earliest")
        .load()
    )


def in_spark(
    bootstrap: str,
    checkpoint_root: Path,
    master: str = "local[2]",
    conf: dict[str, str] | None = None,
    rounds: int = 1,
    files: bool = False,
) -> list[Run]:
    """The zkafka source cold, then `rounds` warm queries; with `files`, the same records through
    Spark's Parquet and JSON sources, each once to warm up and then `rounds` times."""
    from zkafka.spark.session import local_session

    spark = local_session("zkafka-bench", master=master, shuffle_partitions=2, conf=conf)
    results = []
    try:
        results.append(timed_query(spark, zkafka_stream(spark, bootstrap), checkpoint_root / "cold", "cold"))
        for i in range(rounds):
            results.append(
                timed_query(spark, zkafka_stream(spark, bootstrap), checkpoint_root / f"warm{i}", "warm")
            )
        if files:
            # the same rows, every column, written once from a batch read of the topic
            df = spark.read.format("zkafka").option("kafka.bootstrap.servers", bootstrap)
            df = df.option("subscribe", TOPIC).load()
            for fmt in ("parquet", "json"):
                where = str(checkpoint_root / f"data-{fmt}")
                df.write.format(fmt).save(where)
                for i in range(rounds + 1):
                    stream = spark.readStream.format(fmt).schema(df.schema).load(where)
                    run = timed_query(spark, stream, checkpoint_root / f"{fmt}{i}", f"Spark's {fmt} source")
                    if i:  # the first one warms up
                        results.append(run)
    finally:
        spark.stop()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--bootstrap-server", default=None)
    parser.add_argument("--rounds", type=int, default=1, help="warm queries of each kind (medians shown)")
    parser.add_argument("--no-files", action="store_true", help="skip Spark's own file sources")
    parser.add_argument("--no-spark", action="store_true", help="only the stages outside Spark")
    parser.add_argument(
        "--standalone",
        action="store_true",
        help="also run the Spark rows on a standalone cluster on loopback (a master and two 1-core "
        "workers, zkafka.testing.spark_cluster)",
    )
    args = parser.parse_args()
    console = Console(width=120)
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="zkafka-spark-bench-")))
        bootstrap = args.bootstrap_server
        if bootstrap is None:
            from zkafka.local.zookeeper import ZooKeeperServer
            from zkafka.testing.cluster import running_cluster

            zookeeper = ZooKeeperServer(data_dir=tmp / "zookeeper")
            zookeeper.start()
            stack.callback(zookeeper.stop)
            cluster = stack.enter_context(running_cluster(zookeeper, tmp / "cluster", brokers=1))
            bootstrap = cluster.bootstrap_servers
        with SyncAdminClient(bootstrap) as admin:
            admin.create_topic(TOPIC, args.partitions, 1)
        seconds = produce(bootstrap, args.records, args.record_size, args.partitions)
        console.print(f"loaded {args.records:,} records in {seconds:.1f}s")

        table = Table(
            title=f"zkafka Spark source: {args.records:,} records of {args.record_size} B, "
            f"{args.partitions} partitions"
        )
        for col in ("what", "records", "wall s", "records/s", "CPU s", "CPU µs/record"):
            table.add_column(col, justify="right" if col != "what" else "left")

        def row(name: str, n: int, wall: float, cpu: float) -> None:
            rate = f"{n / wall:,.0f}" if wall else "-"
            table.add_row(name, f"{n:,}", f"{wall:.2f}", rate, f"{cpu:.2f}", f"{cpu / n * 1e6:.2f}")

        for name, (n, wall, cpu) in outside_spark(bootstrap, args.partitions).items():
            row(name + " [1 core]", n, wall, cpu)
        files = not args.no_files
        where_runs = []
        if not args.no_spark:
            where_runs.append(("local[2]", in_spark(bootstrap, tmp / "ck", rounds=args.rounds, files=files)))
        if args.standalone:
            from zkafka.testing.spark_cluster import standalone_cluster

            with standalone_cluster(tmp / "spark-standalone", workers=2) as sc:
                found = in_spark(bootstrap, tmp / "ck-sa", sc.master_url, sc.app_conf("1g"), args.rounds)
                where_runs.append(("standalone, 2 workers x 1 core", found))
        medians: dict[tuple[str, str], float] = {}
        streaming: dict[tuple[str, str], float] = {}  # records / the micro-batches' execution time
        for where, runs in where_runs:
            for kind in dict.fromkeys(run[0] for run in runs):
                same = [run for run in runs if run[0] == kind]
                rows = same[0][1]
                wall = statistics.median(run[2] for run in same)
                cpu = statistics.median(run[3] for run in same)
                batch_s = statistics.median(run[4].get("addBatch", 0) for run in same) / 1000
                trigger_s = statistics.median(run[4].get("triggerExecution", 0) for run in same) / 1000
                medians[(where, kind)] = rows / wall
                if trigger_s:
                    streaming[(where, kind)] = rows / trigger_s
                what = f"zkafka source, {kind}" if kind in ("cold", "warm") else kind
                of = f" (median of {len(same)})" if len(same) > 1 else ""
                row(f"Spark {where}: {what} -> noop, whole query{of}", rows, wall, cpu)
                for label, seconds in (
                    ("  of which its micro-batches (triggerExecution)", trigger_s),
                    ("    of which the tasks (addBatch)", batch_s),
                ):
                    if seconds:
                        table.add_row(label, f"{rows:,}", f"{seconds:.2f}", f"{rows / seconds:,.0f}", "", "")
        console.print(table)
        # Two rates: the whole query includes its start, where Spark launches a new Python process
        # for the source's driver side (importing pyspark from pyspark.zip, which zipimport cannot
        # cache as bytecode) once per query; a running stream's rate is its micro-batches'.
        for name, rates in (("whole query", medians), ("micro-batches", streaming)):
            warm = rates.get(("local[2]", "warm"))
            if not warm:
                continue
            console.print(
                f"aim: >= {AIM:,} records/s warm on local[2]; {name}: {warm:,.0f}: {warm / AIM:.2f}x"
            )
            for fmt in ("parquet", "json"):
                theirs = rates.get(("local[2]", f"Spark's {fmt} source"))
                if theirs:
                    share = warm / theirs
                    console.print(f"  zkafka source / Spark's {fmt} source ({name}, records/s): {share:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

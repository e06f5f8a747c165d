"""Streaming write throughput of the zkafka Spark sink, next to Spark's own file sinks.

    .venv/bin/python benchmarks/spark_write.py [--records 2000000] [--partitions 8] [--record-size 100]
                                               [--bootstrap-server HOST:PORT] [--rounds 3] [--no-spark]
                                               [--standalone]

1. Starts ZooKeeper and one broker process (unless --bootstrap-server is given) and creates a
   topic of `partitions` partitions.
1b. Outside Spark, in this process, on one core: what one write task runs (`write_batches`) on
   the rows as Arrow batches of 10,000 (Spark's default arrow batch size): wall and CPU seconds.
2. Spark local[2] (unless --no-spark): `records` rows with one `value` column of `record-size`
   bytes, written once to Parquet in `partitions` files (the input every sink below reads).
3. The same streaming query for each sink: Parquet files in (Trigger.AvailableNow), out to
   `format("zkafka")` (the idempotent producer, acks=all: the sink's defaults), to Spark's
   Parquet and JSON file sinks, and to `noop` (reading the input alone). Each sink once to warm
   up, then `rounds` times; medians of wall and CPU seconds (Spark's JVM and its Python workers;
   the broker not counted, its CPU is shown on its own line).
4. With --standalone, step 3 again on a standalone cluster on loopback (a master and two 1-core
   workers, `zkafka.testing.spark_cluster`); CPU then counts the driver's and the workers'
   process trees (the executors are the workers' children).
Prints records/s per sink, the zkafka sink as a share of Spark's file sinks, and the ratio to
the aim the read side has (600,000 records/s on local[2]; issue 17 sets no separate figure for
writes). Nothing here is asserted; the numbers are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from spark_read import AIM, Timed, spark_jvm_pid, tree_cpu_seconds

from zkafka.client.sync import SyncAdminClient

TOPIC = "spark-write-bench"
SINKS = ("noop", "zkafka", "parquet", "json")


def cpu_of(roots: list[int]) -> float:
    return sum(tree_cpu_seconds(root) for root in roots)


def write_once(
    spark: Any, source: str, sink: str, out: Path, bootstrap: str, broker_pid: int | None, roots: list[int]
) -> tuple:
    """One streaming query from the Parquet input into `sink`: (rows, wall, CPU of the process
    trees `roots`, broker CPU)."""
    stream = spark.readStream.schema("value binary").parquet(source)
    writer = stream.writeStream.format(sink).option("checkpointLocation", str(out / "checkpoint"))
    if sink == "zkafka":
        writer = writer.option("kafka.bootstrap.servers", bootstrap).option("topic", TOPIC)
    elif sink != "noop":
        writer = writer.option("path", str(out / "data"))
    broker_before = tree_cpu_seconds(broker_pid) if broker_pid else 0.0
    cpu_before, wall_before = cpu_of(roots), time.perf_counter()
    query = writer.trigger(availableNow=True).start()
    query.awaitTermination()
    wall, cpu = time.perf_counter() - wall_before, cpu_of(roots) - cpu_before
    broker_cpu = tree_cpu_seconds(broker_pid) - broker_before if broker_pid else 0.0
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    return rows, wall, cpu, broker_cpu


def outside_spark(bootstrap: str, records: int, size: int) -> tuple[float, float]:
    """(wall, CPU seconds of this process) of one task's write_batches over `records` rows."""
    import pyarrow as pa

    from zkafka.spark.options import parse_sink_options
    from zkafka.spark.schema import check_sink_schema
    from zkafka.spark.writer import write_batches

    options = parse_sink_options({"kafka.bootstrap.servers": bootstrap, "topic": TOPIC})
    from pyspark.sql.types import BinaryType, StructField, StructType

    columns = check_sink_schema(StructType([StructField("value", BinaryType())]), TOPIC)
    step = 10_000
    batches = [
        pa.RecordBatch.from_pydict(
            {"value": pa.array([b"%0*d" % (size, i) for i in range(start, min(start + step, records))])}
        )
        for start in range(0, records, step)
    ]
    with Timed() as t:
        write_batches(options, columns, iter(batches))
    return t.wall, t.cpu


def in_spark(
    console: Console,
    args: argparse.Namespace,
    tmp: Path,
    bootstrap: str,
    broker_pid: int | None,
    label: str,
    master: str,
    conf: dict[str, str],
    extra_roots: list[int],
) -> None:
    """Step 3 on one Spark (`master`): every sink once to warm up, then `rounds` times; a table."""
    from zkafka.spark.session import local_session

    tmp.mkdir(parents=True, exist_ok=True)
    spark = local_session("zkafka-write-bench", master=master, conf=conf)
    try:
        roots = [spark_jvm_pid(spark), *extra_roots]
        source = str(tmp / "input")
        start = time.perf_counter()
        (
            spark.range(0, args.records, 1, args.partitions)
            .selectExpr(f"cast(lpad(cast(id as string), {args.record_size}, 'x') as binary) as value")
            .write.parquet(source)
        )
        console.print(f"wrote the input, {args.records:,} rows, in {time.perf_counter() - start:.1f}s")

        sinks = [s for s in args.sinks.split(",") if s]
        results: dict[str, list[tuple]] = {s: [] for s in sinks}
        for i in range(args.rounds + 1):
            for sink in sinks:  # interleaved, so that a burst of other work hits every sink alike
                run = write_once(spark, source, sink, tmp / f"{sink}-{i}", bootstrap, broker_pid, roots)
                if i:
                    results[sink].append(run)
        table = Table(
            title=f"Spark {label} streaming writes (AvailableNow, Parquet input): {args.records:,} "
            f"records of {args.record_size} B, medians of {args.rounds}"
        )
        for col in ("sink", "records", "wall s", "records/s", "CPU s", "CPU µs/record", "broker CPU s"):
            table.add_column(col, justify="right" if col != "sink" else "left")
        rates = {}
        for sink, runs in results.items():
            rows = runs[0][0]
            wall = statistics.median(r[1] for r in runs)
            cpu = statistics.median(r[2] for r in runs)
            broker = statistics.median(r[3] for r in runs)
            rates[sink] = rows / wall
            table.add_row(
                sink,
                f"{rows:,}",
                f"{wall:.2f}",
                f"{rows / wall:,.0f}",
                f"{cpu:.2f}",
                f"{cpu / rows * 1e6:.2f}",
                f"{broker:.2f}" if sink == "zkafka" else "",
            )
        console.print(table)
        if "zkafka" in rates:
            ours = rates["zkafka"]
            console.print(f"zkafka sink: {ours:,.0f} records/s = {ours / AIM:.2f}x the read aim of {AIM:,}/s")
            for fmt in ("parquet", "json"):
                if fmt in rates:
                    console.print(f"zkafka sink / Spark's {fmt} sink (records/s): {ours / rates[fmt]:.2f}")
    finally:
        spark.stop()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--bootstrap-server", default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-spark", action="store_true", help="only the task outside Spark")
    parser.add_argument(
        "--standalone", action="store_true", help="also on a standalone cluster of two 1-core workers"
    )
    parser.add_argument("--sinks", default=",".join(SINKS), help="comma-separated, of " + ", ".join(SINKS))
    args = parser.parse_args()
    console = Console(width=120)
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="zkafka-spark-write-")))
        bootstrap, broker_pid = args.bootstrap_server, None
        if bootstrap is None:
            from zkafka.local.zookeeper import ZooKeeperServer
            from zkafka.testing.cluster import running_cluster

            zookeeper = ZooKeeperServer(data_dir=tmp / "zookeeper")
            zookeeper.start()
            stack.callback(zookeeper.stop)
            cluster = stack.enter_context(running_cluster(zookeeper, tmp / "cluster", brokers=1))
            bootstrap = cluster.bootstrap_servers
            broker_pid = next(iter(cluster.brokers.values())).pid
        with SyncAdminClient(bootstrap) as admin:
            admin.create_topic(TOPIC, args.partitions, 1)

        wall, cpu = outside_spark(bootstrap, args.records, args.record_size)
        console.print(
            f"one task's write_batches outside Spark [1 core]: {args.records:,} records, {wall:.2f} s, "
            f"{args.records / wall:,.0f} records/s, {cpu:.2f} CPU s, {cpu / args.records * 1e6:.2f} µs/record"
        )
        if args.no_spark:
            return 0
        where = [("local[2]", "local[2]", {}, lambda: [])]
        if args.standalone:
            from zkafka.testing.spark_cluster import standalone_cluster

            sc = stack.enter_context(standalone_cluster(tmp / "spark-standalone", workers=2))
            workers = [w.process.pid for w in sc.workers if w.process is not None]
            where.append(
                ("standalone, 2 workers x 1 core", sc.master_url, sc.app_conf("1g"), lambda: workers)
            )
        for label, master, conf, extra_roots in where:
            in_spark(
                console,
                args,
                tmp / label.split(",")[0].replace("[", "").replace("]", ""),  # no glob characters
                bootstrap,
                broker_pid,
                label,
                master,
                conf,
                extra_roots(),
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Streaming read throughput of the zkafka Spark source, and where the time goes.

    .venv/bin/python benchmarks/spark_read.py [--records 2000000] [--partitions 8] [--record-size 100]
                                              [--bootstrap-server HOST:PORT] [--standalone]

1. Starts ZooKeeper and one broker process (unless --bootstrap-server is given), creates a topic
   of `partitions` partitions and fills it with `records` records of `record-size` bytes
   (confluent-kafka produces, so the loading is quick).
2. Outside Spark, in this process, one partition after another, on one core:
   - fetch only: bare Fetch requests, batch headers read, no record decoded;
   - fetch + decode: the executor's consumer reading every range (records decoded), no Arrow;
   - Arrow conversion only: partition 0's records turned into Spark-schema RecordBatches;
   - a task's read_range: what one Spark task runs (fetch + decode + Arrow).
3. Spark, local[2] (and with --standalone also a standalone cluster of two 1-core workers on
   loopback, separate JVMs): a streaming query (Trigger.AvailableNow, the `noop` sink) reads the whole
   topic; run twice, the first warms the Python workers. Records/s of the whole query and of its
   micro-batch's tasks (Spark's addBatch duration).
Prints a table with core-µs per record for each stage (Spark rows: 2 cores x seconds / records).
Nothing here is asserted; the numbers are in docs/spark.md.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from rich.console import Console
from rich.table import Table

from zkafka.client.sync import SyncAdminClient, SyncConsumer
from zkafka.client.types import TopicPartition
from zkafka.spark.fetch import read_range, to_record_batch
from zkafka.spark.offsets import OffsetRange
from zkafka.spark.options import parse_source_options
from zkafka.spark.schema import arrow_read_schema

TOPIC = "spark-bench"


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


def outside_spark(bootstrap: str, partitions: int) -> dict[str, tuple[int, float]]:
    """name -> (records, seconds), each stage on one core with the cycle collector paused, as in
    a Spark task."""
    options = parse_source_options(
        {"kafka.bootstrap.servers": bootstrap, "subscribe": TOPIC, "startingOffsets": "earliest"},
        streaming=True,
    )
    with SyncAdminClient(bootstrap) as admin:
        ends = admin.topic_offsets(TOPIC, "latest")
    ranges = [OffsetRange(TOPIC, p, 0, ends[p]) for p in range(partitions)]
    out: dict[str, tuple[int, float]] = {}
    gc.disable()
    try:
        start = time.perf_counter()
        count = raw_fetch(bootstrap, ranges)
        out["fetch only (Fetch requests, batch headers)"] = (count, time.perf_counter() - start)

        consumer = SyncConsumer(**options.client.consumer_kwargs())
        kept = []
        start = time.perf_counter()
        count = 0
        for r in ranges:
            tp = TopicPartition(TOPIC, r.partition)
            consumer.assign([tp])
            consumer.seek(tp, 0)
            while consumer.position(tp) < r.until:
                records = consumer.poll(500)
                count += len(records)
                if r.partition == 0:
                    kept.append(records)
        out["fetch + decode (executor's Consumer)"] = (count, time.perf_counter() - start)
        consumer.close()

        schema = arrow_read_schema(False)
        start = time.perf_counter()
        count = sum(to_record_batch(records, schema, False).num_rows for records in kept if records)
        out["Arrow conversion only (partition 0)"] = (count, time.perf_counter() - start)
        del kept
    finally:
        gc.enable()

    start = time.perf_counter()
    count = sum(batch.num_rows for r in ranges for batch in read_range(options, r))
    out["a task's read_range: fetch + decode + Arrow"] = (count, time.perf_counter() - start)
    return out


def in_spark(
    bootstrap: str, checkpoint_root: Path, master: str = "local[2]", conf: dict[str, str] | None = None
) -> list[tuple[str, int, float, dict[str, int]]]:
    from zkafka.spark.session import local_session

    spark = local_session("zkafka-bench", master=master, shuffle_partitions=2, conf=conf)
    results = []
    try:
        for run in ("cold", "warm"):
            start = time.perf_counter()
            query = (
                spark.readStream.format("zkafka")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", TOPIC)
                .option("startingOffsets", "earliest")
                .load()
                .writeStream.format("noop")
                .option("checkpointLocation", str(checkpoint_root / run))
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()
            elapsed = time.perf_counter() - start
            progress = [p for p in query.recentProgress if p["numInputRows"]]
            rows = sum(p["numInputRows"] for p in progress)
            durations: dict[str, int] = {}
            for p in progress:
                for key, ms in p["durationMs"].items():
                    durations[key] = durations.get(key, 0) + ms
            results.append((run, rows, elapsed, durations))
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
        for col in ("what", "records", "seconds", "records/s", "core-µs/record"):
            table.add_column(col, justify="right" if col != "what" else "left")
        for name, (n, s) in outside_spark(bootstrap, args.partitions).items():
            table.add_row(name + " [1 core]", f"{n:,}", f"{s:.2f}", f"{n / s:,.0f}", f"{s / n * 1e6:.2f}")
        runs = [("local[2]", run) for run in in_spark(bootstrap, tmp / "checkpoints")]
        if args.standalone:
            from zkafka.testing.spark_cluster import standalone_cluster

            with standalone_cluster(tmp / "spark-standalone", workers=2) as sc:
                found = in_spark(bootstrap, tmp / "checkpoints-sa", sc.master_url, sc.app_conf("1g"))
                runs += [("standalone, 2 workers x 1 core", run) for run in found]
        for where, (run, rows, elapsed, durations) in runs:
            batch_s = durations.get("addBatch", 0) / 1000
            table.add_row(
                f"Spark {where} availableNow -> noop, {run}: whole query",
                f"{rows:,}",
                f"{elapsed:.2f}",
                f"{rows / elapsed:,.0f}",
                f"{2 * elapsed / rows * 1e6:.2f}",
            )
            table.add_row(
                f"  of which the micro-batch's tasks (addBatch), {run}",
                f"{rows:,}",
                f"{batch_s:.2f}",
                f"{rows / batch_s:,.0f}" if batch_s else "-",
                f"{2 * batch_s / rows * 1e6:.2f}",
            )
        console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

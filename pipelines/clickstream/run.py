"""The clickstream pipeline end to end against a running zkafka cluster, with a result a person can
check against what was produced.

    python pipelines/clickstream/run.py --bootstrap-server 127.0.0.1:9092 [--events 6000]
    python pipelines/clickstream/run.py --zookeeper 127.0.0.1:2181/kafka
    python pipelines/clickstream/run.py --bootstrap-server ... --master spark://127.0.0.1:7077
    zkafka pipeline run --bootstrap-server 127.0.0.1:9092     (the same, through the CLI)

1. Creates two topics (named with a run id, so runs never mix): the events, 4 partitions, and the
   per-window page statistics.
2. Produces the events (deterministic, keyed by user) with zkafka's idempotent producer.
3. Streaming job (Trigger.AvailableNow): per-page counts per one-minute event-time window, with a
   watermark, into Parquet and into the statistics topic.
4. Batch job: the same topic read by offset range (the second half of every partition).
5. Prints the tables and checks them: the windows add up to what was produced, the statistics
   topic holds the same windows as the Parquet output, and the batch totals equal the events
   that the producer's acknowledgements place in that offset range.
6. The sessions job (sessions_run.py): clicks in event-time sessions (`session_window`, watermark)
   enriched from a compacted users topic read as a table, late clicks counted, checked exactly.
Exit status 0 when every check holds.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

if __package__ in (None, ""):  # run as a script: make the `clickstream` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from clickstream.events import PAGES, Totals, events_by_minute_and_page, generate, produce, totals_by_page
from clickstream.jobs import batch_totals, read_stats_topic, start_streaming_jobs
from clickstream.sessions_run import run_sessions
from zkafka.cli.output import console as make_console
from zkafka.cli.output import print_table
from zkafka.client.sync import SyncAdminClient

if TYPE_CHECKING:
    from rich.console import Console

PARTITIONS = 4


@dataclass
class PipelineResult:
    checks: dict[str, bool] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(self.checks.values())


def _minute(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M")


def run(
    client: dict[str, str],
    *,
    events: int = 6000,
    users: int = 40,
    minutes: int = 5,
    workdir: Path,
    spark: Any = None,
    master: str = "local[2]",
    console: Console | None = None,
    sessions: bool = True,
) -> PipelineResult:
    """Run the pipeline (in `spark`, or a session of its own on `master`: local[N] or a cluster's
    spark://host:port) and print what it found."""
    console = console or make_console()  # the CLI's policy: piped output is not wrapped
    result = PipelineResult()
    run_id = uuid.uuid4().hex[:6]
    topic, stats_topic = f"clicks-{run_id}", f"page-stats-{run_id}"
    admin_args = (
        {"bootstrap_servers": client["kafka.bootstrap.servers"]}
        if "kafka.bootstrap.servers" in client
        else {"zookeeper_connect": client["zkafka.zookeeper.connect"]}
    )
    with SyncAdminClient(**admin_args) as admin:
        brokers = len(admin.describe_cluster().brokers)
        replication = min(3, brokers)
        admin.create_topic(topic, PARTITIONS, replication)
        admin.create_topic(stats_topic, 1, replication)
        bootstrap = ",".join(f"{b.host}:{b.port}" for b in admin.describe_cluster().brokers)

    produced = generate(events, users, minutes)
    started = time.perf_counter()
    acks = produce(bootstrap, topic, produced)
    console.print(
        f"produced {len(acks) - 1:,} events and an end marker (it moves the watermark past the last "
        f"window) into [bold]{topic}[/bold] ({PARTITIONS} partitions, replication factor {replication}) "
        f"in {time.perf_counter() - started:.1f}s"
    )

    own_session = spark is None
    if own_session:
        from zkafka.spark.session import local_session

        started = time.perf_counter()
        spark = local_session("zkafka-clickstream", master=master)
        console.print(f"Spark session on {master} ready in {time.perf_counter() - started:.1f}s")
    try:
        started = time.perf_counter()
        queries = start_streaming_jobs(spark, client, topic, stats_topic, workdir)
        for query in queries:
            query.awaitTermination()
            if query.exception() is not None:
                raise RuntimeError(f"streaming query failed: {query.exception()}")
        console.print(f"streaming job (availableNow, 2 queries) done in {time.perf_counter() - started:.1f}s")
        _report_windows(spark, client, stats_topic, workdir, produced, result, console)

        ends: dict[int, int] = {}
        for _, meta in acks:
            ends[meta.partition] = max(ends.get(meta.partition, 0), meta.offset + 1)
        start = {p: ends.get(p, 0) // 2 for p in range(PARTITIONS)}
        end = {p: ends.get(p, 0) for p in range(PARTITIONS)}
        _report_batch(spark, client, topic, start, end, acks, result, console)
        if sessions:
            outcome = run_sessions(spark, client, bootstrap, replication, run_id, workdir, console)
            result.checks.update(outcome.checks)
    finally:
        if own_session:
            spark.stop()
    for name, ok in result.checks.items():
        console.print(f"{'[green]OK  [/green]' if ok else '[red]FAIL[/red]'} {name}")
    return result


def _report_windows(
    spark: Any,
    client: dict[str, str],
    stats_topic: str,
    workdir: Path,
    produced: list[Any],
    result: PipelineResult,
    console: Console,
) -> None:
    rows = spark.read.parquet(str(workdir / "page_windows")).collect()
    got = {(int(r.window_start.replace(tzinfo=UTC).timestamp() * 1000), r.page): r.events for r in rows}
    expected = events_by_minute_and_page(produced)
    table = Table(title="streaming job: events per page per 1-minute window (from the Parquet output)")
    table.add_column("window (UTC)")
    for page in PAGES:
        table.add_column(page, justify="right")
    table.add_column("total", justify="right")
    for minute in sorted({m for m, _ in expected}):
        counts = [got.get((minute, page), 0) for page in PAGES]
        table.add_row(_minute(minute), *map(str, counts), str(sum(counts)))
    per_page = [sum(n for (_, p), n in got.items() if p == page) for page in PAGES]
    table.add_row("all windows", *map(str, per_page), str(sum(per_page)), style="bold")
    produced_per_page = [sum(n for (_, p), n in expected.items() if p == page) for page in PAGES]
    table.add_row("produced", *map(str, produced_per_page), str(sum(produced_per_page)), style="dim")
    print_table(console, table)
    result.checks["every window of the streaming job matches the produced events"] = got == dict(expected)
    stats = read_stats_topic(spark, client, stats_topic)
    from_topic = {(s["window"], s["page"]): s["events"] for s in stats}
    result.checks[f"topic {stats_topic} holds each window once (transactional sink, read_committed)"] = len(
        stats
    ) == len(from_topic)
    from_parquet = {(_minute_full(m), p): n for (m, p), n in got.items()}
    result.checks[f"topic {stats_topic} holds the same {len(stats)} windows as the Parquet output"] = (
        from_topic == from_parquet
    )


def _minute_full(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M")


def _report_batch(
    spark: Any,
    client: dict[str, str],
    topic: str,
    start: dict[int, int],
    end: dict[int, int],
    acks: list[Any],
    result: PipelineResult,
    console: Console,
) -> None:
    rows = {r.page: r for r in batch_totals(spark, client, topic, start, end).collect()}
    in_range = [e for e, meta in acks if start[meta.partition] <= meta.offset < end[meta.partition]]
    expected = totals_by_page(in_range)
    ranges = ", ".join(f"p{p}: [{start[p]}, {end[p]})" for p in sorted(start))
    table = Table(title=f"batch job: totals per page of offsets {ranges}")
    for column in ("page", "events", "purchases", "revenue", "expected events", "expected revenue"):
        table.add_column(column, justify="left" if column == "page" else "right")
    matches = True
    for page in PAGES:
        row = rows.get(page)
        want = expected.get(page, Totals())
        got = (row.events, row.purchases, round(row.revenue, 2)) if row else (0, 0, 0.0)
        matches &= got == (want.events, want.purchases, round(want.revenue, 2))
        table.add_row(
            page, str(got[0]), str(got[1]), f"{got[2]:.2f}", str(want.events), f"{want.revenue:.2f}"
        )
    print_table(console, table)
    result.checks[f"batch job over the offset range read exactly the {len(in_range)} events placed there"] = (
        matches
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--bootstrap-server", help="host:port[,host:port...] of the brokers")
    where.add_argument("--zookeeper", help="ZooKeeper connect string of the cluster (host:port/chroot)")
    parser.add_argument("--events", type=int, default=6000)
    parser.add_argument(
        "--master",
        default="local[2]",
        help="Spark master: local[N] (default local[2]) or a cluster's spark://host:port; its "
        "workers' Python must import zkafka (docs/spark.md, deploying on a cluster)",
    )
    parser.add_argument("--users", type=int, default=40)
    parser.add_argument("--minutes", type=int, default=5)
    parser.add_argument(
        "--workdir", type=Path, default=None, help="output and checkpoints (default: temporary)"
    )
    args = parser.parse_args()
    client = (
        {"kafka.bootstrap.servers": args.bootstrap_server}
        if args.bootstrap_server
        else {"zkafka.zookeeper.connect": args.zookeeper}
    )
    with tempfile.TemporaryDirectory(prefix="zkafka-clickstream-") as tmp:
        workdir = args.workdir or Path(tmp)
        result = run(
            client,
            events=args.events,
            users=args.users,
            minutes=args.minutes,
            workdir=workdir,
            master=args.master,
        )
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())

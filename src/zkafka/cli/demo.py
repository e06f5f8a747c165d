"""`zkafka demo` (what `make run` runs): the whole system end to end on this machine.

An embedded ZooKeeper and a 3-broker cluster are started as real processes; a replicated topic
is created through the CLI; records are produced and consumed with zkafka's client and the
console tools; then the evidence is printed: per-partition counts, one partition's log
directory as Kafka lays it out, both kinds of consumer group with live figures from every broker's
/metrics (under-replicated partitions, bytes and records in, the controller's events by kind and
their time, the groups' lag as the brokers report it), the ZooKeeper tree in Kafka's layout (a
znode with many children, such as `__consumer_offsets`' 50 partitions, summarised on one line),
`cluster status`, the clickstream pipeline on Spark, security (the cluster runs with `cluster up
--security`: SCRAM users, ACLs and one allowed and one refused client on the SASL_SSL listener,
`zkafka.cli.demo_security`), and `zkafka doctor`'s check of the whole cluster, and the URL the web
console (which `cluster up` starts) was served on while the demo ran. Everything started is
stopped at the end, also on errors and Ctrl-C. The output follows the CLI's console policy
(`zkafka.cli.output`): redirected into a CI log it is neither wrapped nor coloured.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from zkafka.cli.errors import CliError
from zkafka.cli.output import console as make_console
from zkafka.cli.output import heading, print_table

if TYPE_CHECKING:
    from rich.console import Console

    from zkafka.local.launcher import LocalCluster

TOPIC = "demo-events"
PARTITIONS = 6
RECORDS = 30_000
USERS = 100
TREE_CHILDREN = 20
"""The ZooKeeper tree shows up to this many children of a znode (the topic's 6 partitions); more
(`__consumer_offsets`' 50) are one line with their count."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the end-to-end demo (what `make run` does)")
    p.add_argument("--dir", type=Path, default=None, help="cluster directory (default: a temporary one)")
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--records", type=int, default=RECORDS)
    p.set_defaults(func=run)


def _zkafka(*args: str, stdin: str | None = None, capture: bool = True, ok: tuple[int, ...] = (0,)) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", *args],
        input=stdin,
        capture_output=capture,
        text=True,
        timeout=300,
        check=False,
    )
    if proc.returncode not in ok:
        raise CliError(f"`zkafka {' '.join(args)}` failed: {(proc.stderr or '').strip()[-500:]}")
    return proc.stdout or ""


def run(args: argparse.Namespace) -> int:
    console = make_console()
    with tempfile.TemporaryDirectory(prefix="zkafka-demo-") as tmp:
        directory = args.dir or Path(tmp) / "cluster"
        heading(console, f"zkafka demo: ZooKeeper + {args.brokers} brokers in {directory}")
        up = ("cluster", "up", "--security", "--brokers", str(args.brokers), "--dir", str(directory))
        _zkafka(*up, capture=False)
        try:
            _demo(console, directory, args)
        finally:
            heading(console, "stopping everything")
            _zkafka("cluster", "down", "--dir", str(directory), capture=False)
    return 0


async def _produce(bootstrap: str, n: int) -> list:
    from zkafka.client.producer import Producer

    producer = Producer(bootstrap, acks=-1, enable_idempotence=True, linger_ms=5, compression="lz4")
    try:
        futures = [
            await producer.send(
                TOPIC, f'{{"user":"user-{i % USERS}","n":{i}}}'.encode(), key=f"user-{i % USERS}".encode()
            )
            for i in range(n)
        ]
        await producer.flush()
        return [await f for f in futures]
    finally:
        await producer.close()


def _demo(console: Console, directory: Path, args: argparse.Namespace) -> None:
    from zkafka.client.sync import SyncConsumer
    from zkafka.client.types import TopicPartition
    from zkafka.local.launcher import LocalCluster

    cluster = LocalCluster.load(directory)
    bootstrap = cluster.bootstrap_servers
    rf = min(3, args.brokers)

    heading(console, f"1. create topic {TOPIC}: {PARTITIONS} partitions, replication factor {rf}")
    console.out(
        _zkafka(
            "topics",
            "--bootstrap-server",
            bootstrap,
            "--create",
            "--topic",
            TOPIC,
            "--partitions",
            str(PARTITIONS),
            "--replication-factor",
            str(rf),
        ).strip()
    )

    heading(console, f"2. produce {args.records:,} keyed records (idempotent, acks=all)")
    start = time.perf_counter()
    metas = asyncio.run(_produce(bootstrap, args.records))
    elapsed = time.perf_counter() - start
    console.print(
        f"acknowledged {len(metas):,} records in {elapsed:.2f}s ({len(metas) / elapsed:,.0f} records/s)"
    )
    _zkafka(
        "console-producer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        TOPIC,
        "--property",
        "parse.key=true",
        "--property",
        "key.separator=:",
        stdin="console:hello from the console producer\n",
    )

    heading(console, "3. consume everything back")
    consumer = SyncConsumer(bootstrap, auto_offset_reset="earliest")
    consumer.assign([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    got: list = []
    deadline = time.monotonic() + 60
    while len(got) < args.records + 1 and time.monotonic() < deadline:
        got.extend(consumer.poll(1000))
    consumer.close()
    per_partition = Counter(r.partition for r in got)
    keys_per_partition: dict[int, set[bytes]] = {}
    for r in got:
        keys_per_partition.setdefault(r.partition, set()).add(r.key)
    table = Table(title=f"{TOPIC}: records per partition (a key always lands in one partition)")
    for col in ("partition", "records", "distinct keys", "first offset", "last offset"):
        table.add_column(col, justify="right")
    for p in range(PARTITIONS):
        offsets = [r.offset for r in got if r.partition == p]
        table.add_row(
            str(p),
            f"{per_partition[p]:,}",
            str(len(keys_per_partition.get(p, ()))),
            str(min(offsets, default="-")),
            str(max(offsets, default="-")),
        )
    table.add_row("total", f"{len(got):,}", str(len({r.key for r in got})), "", "")
    print_table(console, table)
    sent = {(m.partition, m.offset) for m in metas}
    received = {(r.partition, r.offset) for r in got}
    verdict = "every acknowledged record was read back" if sent <= received else "MISSING RECORDS"
    console.print(f"[bold]{verdict}[/bold] ({len(sent & received):,} of {len(sent):,})")
    if not sent <= received:
        raise CliError("the demo lost records")
    console.print("console-consumer, last record of the topic's partitions:")
    line = _zkafka(
        "console-consumer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        TOPIC,
        "--from-beginning",
        "--property",
        "print.key=true",
        "--timeout-ms",
        "5000",
    )
    console.out("  " + next(ln for ln in line.splitlines() if ln.startswith("console")))

    heading(console, "4. one partition's log directory on broker 1 (Kafka's layout)")
    broker1 = Path(cluster.brokers[min(cluster.brokers)].directory) / "logs"
    part_dir = next(iter(sorted(broker1.glob(f"{TOPIC}-*"))), None)
    files = Table(title=str(part_dir))
    files.add_column("file")
    files.add_column("bytes", justify="right")
    for f in sorted(part_dir.iterdir()) if part_dir else []:
        files.add_row(f.name, f"{f.stat().st_size:,}")
    for f in sorted(broker1.iterdir()):
        if f.is_file():
            files.add_row(f"../{f.name}", f"{f.stat().st_size:,}")
    print_table(console, files)

    heading(console, "5. consumer groups: the broker's coordinator and the seeds' ZooKeeper consumer")
    half = (args.records + 1) // 2
    _zkafka(
        "console-consumer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        TOPIC,
        "--group",
        "demo-group",
        "--from-beginning",
        "--max-messages",
        str(half),
        "--timeout-ms",
        "20000",
    )
    _zkafka(
        "console-consumer",
        "--zookeeper",
        cluster.zookeeper_connect,
        "--topic",
        TOPIC,
        "--group",
        "demo-zk-group",
        "--from-beginning",
        "--max-messages",
        str(half),
        "--timeout-ms",
        "20000",
    )
    console.print(f"consumed {half:,} records in group demo-group (broker) and demo-zk-group (ZooKeeper):")
    console.out(
        _zkafka(
            "consumer-groups", "--bootstrap-server", bootstrap, "--describe", "--group", "demo-group"
        ).rstrip()
    )
    console.out(
        _zkafka(
            "consumer-groups",
            "--zookeeper",
            cluster.zookeeper_connect,
            "--describe",
            "--group",
            "demo-zk-group",
        ).rstrip()
    )

    _live_metrics(console, cluster)

    heading(console, "6. the cluster's metadata in ZooKeeper (Kafka's znode layout)")
    tree = ("zk", "tree", "/", "--zookeeper", cluster.zookeeper_connect, "--max-children", str(TREE_CHILDREN))
    console.out(_zkafka(*tree).rstrip())

    heading(console, "7. zkafka cluster status")
    console.out(_zkafka("cluster", "status", "--dir", str(directory), "--exclude-internal").rstrip())

    from zkafka.cli.pipeline import demo_step

    demo_step(console, bootstrap, step="8")

    from zkafka.cli import demo_security

    demo_security.demo_step(console, cluster, _zkafka, step="9")

    heading(console, "10. zkafka doctor: the whole cluster checked from ZooKeeper")
    # Exit 1/2 (warnings, critical findings) is the doctor's answer, not a failure of the demo.
    doctor = ("doctor", "--zookeeper", cluster.zookeeper_connect)
    console.out(_zkafka(*doctor, ok=(0, 1, 2)).rstrip())
    if cluster.ui_url:  # `cluster up` started it; it stops with the cluster below
        console.print(f"\nthe web console served this cluster at {cluster.ui_url} while the demo ran")


def _one(samples: list, name: str, **labels: str) -> float:
    """The sum of the scraped samples of `name` whose labels include `labels`."""
    return sum(s.value for s in samples if s.name == name and labels.items() <= s.labels.items())


def _controller_events(console: Console, per_broker: dict) -> None:
    """What the active controller spent its time on, from Kafka's ControllerStats timers."""
    prefix, suffix = "kafka_controller_controllerstats_", "rateandtimems"
    for bid, samples in per_broker.items():
        if not _one(samples, "kafka_controller_kafkacontroller_activecontrollercount"):
            continue
        events = Table(title=f"the controller's events (broker {bid}; kafka_controller_controllerstats_*)")
        events.add_column("event")
        for col in ("processed", "total ms", "mean ms"):
            events.add_column(col, justify="right")
        for s in samples:
            if s.name.startswith(prefix) and s.name.endswith(f"{suffix}_count") and s.value > 0:
                state = s.name[len(prefix) : -len(f"{suffix}_count")]
                total_ms = _one(samples, f"{prefix}{state}{suffix}_sum")
                shown = "leaderelection (broker change)" if state == "leaderelection" else state
                events.add_row(shown, f"{s.value:,.0f}", f"{total_ms:,.1f}", f"{total_ms / s.value:,.1f}")
        print_table(console, events)


def _live_metrics(console: Console, cluster: LocalCluster) -> None:
    """A few live figures from every broker's /metrics: replication health, what came in, and the
    demo groups' lag as the brokers themselves report it (no exporter)."""
    from zkafka.metrics.scrape import scrape

    per_broker = {}
    for bid, broker in sorted(cluster.brokers.items()):
        if broker.metrics:
            try:
                per_broker[bid] = scrape(broker.metrics)
            except OSError as e:
                console.print(f"broker {bid}: /metrics unreadable ({e})")
    if not per_broker:
        return

    brokers = Table(title="live from each broker's /metrics (URLs in `cluster status`)")
    for col in (
        "broker",
        "controller",
        "under-replicated",
        "leaders",
        f"{TOPIC} MB in",
        f"{TOPIC} records in",
        "MB out to consumers",
    ):
        brokers.add_column(col, justify="right")
    for bid, samples in per_broker.items():
        brokers.add_row(
            str(bid),
            "yes" if _one(samples, "kafka_controller_kafkacontroller_activecontrollercount") else "",
            f"{_one(samples, 'kafka_server_replicamanager_underreplicatedpartitions'):.0f}",
            f"{_one(samples, 'kafka_server_replicamanager_leadercount'):.0f}",
            f"{_one(samples, 'kafka_server_brokertopicmetrics_bytesin_total', topic=TOPIC) / 1e6:.2f}",
            f"{_one(samples, 'kafka_server_brokertopicmetrics_messagesin_total', topic=TOPIC):,.0f}",
            f"{_one(samples, 'kafka_server_brokertopicmetrics_bytesout_total') / 1e6:.2f}",
        )
    print_table(console, brokers)
    _controller_events(console, per_broker)
    lag = Table(title="consumer lag, as the brokers report it (kafka_consumergroup_*)")
    for col in ("group", "reported by broker", "lag (records)", "oldest unconsumed (s)"):
        lag.add_column(col, justify="right")
    for group in ("demo-group", "demo-zk-group"):
        for bid, samples in per_broker.items():
            rows = [
                s
                for s in samples
                if s.name == "kafka_consumergroup_lag" and s.labels.get("consumergroup") == group
            ]
            if not rows:
                continue
            ages = [
                s.value
                for s in samples
                if s.name == "kafka_consumergroup_lag_seconds" and s.labels.get("consumergroup") == group
            ]
            lag.add_row(
                group, str(bid), f"{sum(s.value for s in rows):,.0f}", f"{max(ages):.1f}" if ages else "-"
            )
    print_table(console, lag)

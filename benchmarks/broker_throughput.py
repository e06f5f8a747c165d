"""Broker throughput and CPU cost, measured against a raw asyncio socket sink in the same run.

    .venv/bin/python benchmarks/broker_throughput.py [--records 2000000] [--record-size 100]
    .venv/bin/python benchmarks/broker_throughput.py --compare-replication [--partitions 6]
    .venv/bin/python benchmarks/broker_throughput.py --brokers 3 --replication-factor 3 --acks all \
        --partitions 6

Default (no replication options): the single-broker CPU measurement below.
1. Starts ZooKeeper and one broker process (acks=1, one partition).
2. Produces N records of `record-size` bytes with confluent-kafka (librdkafka, so the client is
   not the bottleneck) and reports records/s and MB/s; the broker's CPU seconds (user+sys from
   /proc) per GiB of record batches received.
3. Consumes them back with confluent-kafka: records/s.
4. Starts a raw asyncio (uvloop) Protocol server that discards what it receives, sends it the
   same number of bytes over loopback from another process, and reports its CPU seconds per GiB.
Prints a table and the ratio broker CPU/GiB : raw sink CPU/GiB. Nothing here is asserted.

With `--brokers/--replication-factor/--acks/--partitions` it measures produce records/s of one
configuration instead (a fresh ZooKeeper and cluster, one topic created with that partition count and
replication factor, every partition's ISR complete before producing, 10,000 warm-up records first),
with each broker's CPU seconds. `--compare-replication` runs two configurations in one command with
the same partition count and record size -- 1 broker acks=1, then `--brokers` (default 3) brokers with
replication factor `--replication-factor` (default 3) and acks=all -- and prints the share of the
replicated rate in the single-broker rate (the aim is at least 50 %).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from zkafka.local.zookeeper import ZooKeeperServer, free_port
from zkafka.testing.cluster import running_cluster

CLK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def log_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*.log"))


def produce(bootstrap: str, topic: str, n: int, size: int, acks: str = "1") -> float:
    from confluent_kafka import Producer

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 2_000_000,
            "compression.type": "none",
        }
    )
    payload = b"x" * size
    start = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                p.produce(topic, payload)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(300) == 0
    return time.perf_counter() - start


def consume_kcat(bootstrap: str, topic: str, n: int) -> float:
    """kcat (librdkafka in C): what the broker serves when the client is not the bottleneck. Fetch
    sizes are raised as for kafka-consumer-perf-test runs, and kcat writes its lines to a file, not
    a pipe: with librdkafka's default fetch sizes and a Python reader on the pipe, kcat itself is
    the limit (~0.5 M records/s while the broker uses 0.05 CPU-s)."""
    fetch_sizes = ["-X", "fetch.max.bytes=52428800", "-X", "fetch.message.max.bytes=10485760"]
    command = ["kcat", "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-c", str(n), "-q"]
    with tempfile.TemporaryFile() as lines:
        start = time.perf_counter()
        subprocess.run([*command, *fetch_sizes, "-f", "%o\n"], stdout=lines, check=True, timeout=600)
        elapsed = time.perf_counter() - start
        lines.seek(0)
        assert lines.read().count(b"\n") == n
    return elapsed


def consume(bootstrap: str, topic: str, n: int) -> float:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52_428_800,
            "max.partition.fetch.bytes": 10_485_760,
            "queued.max.messages.kbytes": 1_000_000,
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    got = 0
    start = time.perf_counter()
    while got < n:
        got += len(c.consume(100_000, timeout=1))
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed


SINK = r"""
import asyncio, sys, uvloop
class Sink(asyncio.Protocol):
    def connection_made(self, t): self.n = 0
    def data_received(self, d): self.n += len(d)
    def connection_lost(self, e): loop.stop()
uvloop.install()
loop = asyncio.new_event_loop()
loop.run_until_complete(loop.create_server(Sink, "127.0.0.1", int(sys.argv[1])))
print("ready", flush=True)
loop.run_forever()
"""


def raw_sink(total: int) -> float:
    """CPU seconds per GiB of a uvloop Protocol that discards `total` bytes."""
    port = free_port()
    script = SINK.replace(
        "loop.stop()",
        "print(__import__('os').times()[0] + __import__('os').times()[1], flush=True); loop.stop()",
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(port)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    start_cpu = cpu_seconds(proc.pid)
    chunk = b"x" * 65536
    with socket.create_connection(("127.0.0.1", port)) as s:
        sent = 0
        while sent < total:
            s.sendall(chunk)
            sent += len(chunk)
    end_cpu = float(proc.stdout.readline())
    proc.wait(60)
    return (end_cpu - start_cpu) / (total / 2**30)


@dataclass
class ProduceRun:
    brokers: int
    replication_factor: int
    acks: str
    partitions: int
    records: int
    record_size: int
    seconds: float = 0.0
    broker_cpu: dict[int, float] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.brokers} broker(s), RF {self.replication_factor}, acks={self.acks}"

    @property
    def rate(self) -> float:
        return self.records / self.seconds


def wait_full_isr(connect: str, topic: str, partitions: int, rf: int, timeout: float = 120) -> None:
    """Every partition has a leader and all `rf` replicas in its ISR (read from ZooKeeper)."""
    from zkafka.zk.client import KafkaZkClient
    from zkafka.zk.model import TopicPartition

    zk = KafkaZkClient(connect, connection_timeout_ms=30_000)
    try:
        deadline = time.monotonic() + timeout
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        while True:
            states = zk.get_partition_states(tps)
            if len(states) == partitions and all(
                s.leader_and_isr.leader >= 0 and len(s.leader_and_isr.isr) == rf for s in states.values()
            ):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: ISRs not complete after {timeout:g} s: {states}")
            time.sleep(0.2)
    finally:
        zk.close()


def produce_run(run: ProduceRun) -> ProduceRun:
    """One configuration on a fresh ZooKeeper and cluster: produce `records` records, timed."""
    from confluent_kafka.admin import AdminClient, NewTopic

    with (
        tempfile.TemporaryDirectory() as tmp,
        ZooKeeperServer() as zk,
        running_cluster(
            zk,
            Path(tmp),
            brokers=run.brokers,
            overrides={"num.partitions": "1", "default.replication.factor": str(run.replication_factor)},
        ) as cluster,
    ):
        b = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": b})
        admin.create_topics([NewTopic("bench", run.partitions, run.replication_factor)])["bench"].result(60)
        wait_full_isr(cluster.zookeeper_connect, "bench", run.partitions, run.replication_factor)
        time.sleep(1)  # every broker's metadata cache learns the leaders
        produce(b, "bench", 10_000, run.record_size, run.acks)
        cpu0 = {bid: cpu_seconds(bp.pid) for bid, bp in cluster.brokers.items()}
        run.seconds = produce(b, "bench", run.records, run.record_size, run.acks)
        run.broker_cpu = {bid: cpu_seconds(bp.pid) - cpu0[bid] for bid, bp in cluster.brokers.items()}
    return run


def print_runs(console: Console, runs: list[ProduceRun]) -> None:
    first = runs[0]
    table = Table(
        title=f"produce: {first.records:,} records of {first.record_size} B, "
        f"{first.partitions} partition(s), "
        f"confluent-kafka, load average {os.getloadavg()[0]:.2f}"
    )
    table.add_column("configuration")
    table.add_column("records/s", justify="right")
    table.add_column("MB/s (payload)", justify="right")
    table.add_column("broker CPU-s (per broker)", justify="right")
    table.add_column("broker CPU (cores)", justify="right")
    table.add_column("vs first row", justify="right")
    for r in runs:
        cpu = sum(r.broker_cpu.values())
        table.add_row(
            r.label,
            f"{r.rate:,.0f}",
            f"{r.rate * r.record_size / 1e6:,.1f}",
            " + ".join(f"{c:.1f}" for _, c in sorted(r.broker_cpu.items())),
            f"{cpu / r.seconds:.2f}",
            f"{r.rate / first.rate:.0%}",
        )
    console.print(table)
    if len(runs) == 2:
        share = runs[1].rate / runs[0].rate
        verdict = "meets" if share >= 0.5 else "misses"
        console.print(
            f"share: {runs[1].label} is [bold]{share:.0%}[/] of {runs[0].label} ({verdict} the 50 % aim)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--record-size", type=int, default=100)
    ap.add_argument("--brokers", type=int, default=None, help="produce-only run on this many brokers")
    ap.add_argument("--replication-factor", type=int, default=None)
    ap.add_argument("--acks", choices=["0", "1", "all"], default=None)
    ap.add_argument("--partitions", type=int, default=None)
    ap.add_argument(
        "--compare-replication",
        action="store_true",
        help="1 broker acks=1 vs --brokers (3) brokers, RF --replication-factor (3), acks=all, "
        "same partitions",
    )
    args = ap.parse_args()
    console = Console()
    if args.compare_replication:
        brokers = args.brokers or 3
        rf = args.replication_factor or brokers
        parts = args.partitions or 6
        runs = [
            ProduceRun(1, 1, "1", parts, args.records, args.record_size),
            ProduceRun(brokers, rf, args.acks or "all", parts, args.records, args.record_size),
        ]
        for r in runs:
            console.print(f"running {r.label}, {parts} partition(s) (load average {os.getloadavg()[0]:.2f})")
            produce_run(r)
            console.print(f"  {r.rate:,.0f} records/s")
        print_runs(console, runs)
        return
    if any(v is not None for v in (args.brokers, args.replication_factor, args.acks, args.partitions)):
        brokers = args.brokers or 1
        run = ProduceRun(
            brokers,
            args.replication_factor or 1,
            args.acks or "1",
            args.partitions or 1,
            args.records,
            args.record_size,
        )
        print_runs(console, [produce_run(run)])
        return
    with (
        tempfile.TemporaryDirectory() as tmp,
        ZooKeeperServer() as zk,
        running_cluster(zk, Path(tmp), brokers=1, overrides={"num.partitions": "1"}) as cluster,
    ):
        if True:
            broker = cluster.brokers[1]
            b = cluster.bootstrap_servers
            produce(b, "warmup", 10_000, args.record_size)
            cpu0 = cpu_seconds(broker.pid)
            elapsed = produce(b, "bench", args.records, args.record_size)
            cpu1 = cpu_seconds(broker.pid)
            stored = log_bytes(Path(broker.directory) / "logs" / "bench-0")
            c_elapsed = consume(b, "bench", args.records)
            k_elapsed = consume_kcat(b, "bench", args.records)
    gib = stored / 2**30
    sink = raw_sink(stored)
    mb = args.records * args.record_size / 1e6
    table = Table(title=f"{args.records:,} records of {args.record_size} B, 1 broker, 1 partition, acks=1")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("produce records/s", f"{args.records / elapsed:,.0f}")
    table.add_row("produce MB/s (payload)", f"{mb / elapsed:,.1f}")
    table.add_row("consume records/s (kcat)", f"{args.records / k_elapsed:,.0f}")
    table.add_row("consume records/s (confluent-kafka Python)", f"{args.records / c_elapsed:,.0f}")
    table.add_row("bytes stored (batches)", f"{stored:,}")
    table.add_row("broker CPU-s per GiB produced", f"{(cpu1 - cpu0) / gib:.2f}")
    table.add_row("raw asyncio sink CPU-s per GiB", f"{sink:.2f}")
    table.add_row("ratio broker : raw sink", f"{(cpu1 - cpu0) / gib / sink:.1f}x")
    console.print(table)


if __name__ == "__main__":
    main()

"""Broker throughput and CPU cost, measured against a raw asyncio socket sink in the same run.

    .venv/bin/python benchmarks/broker_throughput.py [--records 2000000] [--record-size 100]

1. Starts ZooKeeper and one broker process (acks=1, one partition).
2. Produces N records of `record-size` bytes with confluent-kafka (librdkafka, so the client is
   not the bottleneck) and reports records/s and MB/s; the broker's CPU seconds (user+sys from
   /proc) per GiB of record batches received.
3. Consumes them back with confluent-kafka: records/s.
4. Starts a raw asyncio (uvloop) Protocol server that discards what it receives, sends it the
   same number of bytes over loopback from another process, and reports its CPU seconds per GiB.
Prints a table and the ratio broker CPU/GiB : raw sink CPU/GiB. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from zkafka.testing.cluster import running_cluster
from zkafka.zk.server import ZooKeeperServer, free_port

CLK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def log_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*.log"))


def produce(bootstrap: str, topic: str, n: int, size: int) -> float:
    from confluent_kafka import Producer

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": 1,
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
    """kcat (librdkafka in C): what the broker serves when the client is not the bottleneck."""
    start = time.perf_counter()
    out = subprocess.run(
        ["kcat", "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-c", str(n), "-q", "-f", "%o\n"],
        capture_output=True,
        check=True,
        timeout=600,
    )
    elapsed = time.perf_counter() - start
    assert out.stdout.count(b"\n") == n
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--record-size", type=int, default=100)
    args = ap.parse_args()
    console = Console()
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

"""End-to-end latency produce to consume (acks=all, RF 3) and small-request capacity (issue 17).

    PYTHONPATH=src .venv/bin/python benchmarks/e2e_latency.py [--rates 1000 10000 100000]
        [--linger-ms 0 5] [--seconds 10] [--warmup-seconds 2] [--record-size 100]
        [--capacity-seconds 5] [--skip latency,capacity] [--py-spy PATH --profile-dir DIR]

A fresh 3-broker cluster and one topic of `--partitions` (3) partitions, replication factor 3,
`min.insync.replicas=2`, every ISR complete before the first run.

**Latency**: for each `--linger-ms` and each rate in `--rates`, a producer process
(confluent-kafka, i.e. librdkafka, acks=all, no idempotence) sends records at that rate for
`--seconds`, each record's value starting with the send time (CLOCK_MONOTONIC, shared by the
processes of one machine); a librdkafka consumer in this process, assigned every partition at
its end before the producer starts, takes the receive time of each record. Records sent in the
first `--warmup-seconds` are not counted. Prints p50 / p99 / p99.9 / max, the rate reached,
for `linger.ms=0` at 10,000 records/s the ratio to the aim (p50 <= 2 ms, p99 <= 10 ms; >= 1 meets it),
and the brokers' CPU seconds per 1,000 records received over the run (warm-up included).

**Small-request capacity**: produce requests/s per broker with `linger.ms=0` and
`batch.num.messages=1` (one record per request), acks=1 and acks=all, as fast as the producer
gets answers for `--capacity-seconds`; requests/s per leader broker and the brokers' CPU seconds
per 1,000 requests.

`--py-spy PATH` samples every broker during each latency run and capacity run into
`--profile-dir` (py-spy's raw collapsed stacks, one file per phase and broker). The figures are
printed, nothing is asserted.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import struct
import tempfile
import time
from pathlib import Path

from _cluster import cpu_seconds
from rich.console import Console
from rich.table import Table
from scale_partitions import add_profile_arguments, profiled

from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster

TOPIC = "latency"
AIM_RATE = 10_000
AIM_P50_MS = 2.0
AIM_P99_MS = 10.0
STAMP = struct.Struct(">q")


def create_topic(bootstrap: str, partitions: int, timeout: float = 120) -> dict[int, int]:
    """Create the topic (RF 3, min.insync.replicas=2) and wait for every ISR; partition -> leader."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(TOPIC, partitions, 3, config={"min.insync.replicas": "2"})
    admin.create_topics([topic])[TOPIC].result(60)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        meta = admin.list_topics(TOPIC, timeout=10).topics[TOPIC]
        parts = meta.partitions
        if len(parts) == partitions and all(len(p.isrs) == 3 and p.leader >= 0 for p in parts.values()):
            return {p.id: p.leader for p in parts.values()}
        time.sleep(0.2)
    raise TimeoutError("ISR not complete")


def produce_at(bootstrap: str, rate: int, seconds: float, size: int, linger_ms: float, done) -> None:
    """Child process: send `rate` records/s for `seconds`, each value led by its send time."""
    from confluent_kafka import Producer

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": linger_ms,
            "queue.buffering.max.messages": 1_000_000,
            "compression.type": "none",
        }
    )
    pad = b"x" * max(0, size - STAMP.size)
    sent = 0
    t0 = time.monotonic()
    end = t0 + seconds
    while (now := time.monotonic()) < end:
        due = int((now - t0) * rate) - sent
        for _ in range(due):
            p.produce(TOPIC, STAMP.pack(time.monotonic_ns()) + pad)
        sent += max(due, 0)
        p.poll(0)
        if due <= 0:
            time.sleep(min(0.0005, 1 / rate))
    p.flush(60)
    done.value = sent


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def latency_run(
    args: argparse.Namespace, bootstrap: str, partitions: int, rate: int, linger: float, pids: dict[int, int]
) -> dict:
    from confluent_kafka import OFFSET_END, Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"latency-{rate}-{linger}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 500,
        }
    )
    c.assign([TopicPartition(TOPIC, p, OFFSET_END) for p in range(partitions)])
    c.consume(1, timeout=1)  # connect and resolve the end offsets before anything is sent
    ctx = multiprocessing.get_context("spawn")
    done = ctx.Value("q", -1)
    producer = ctx.Process(
        target=produce_at, args=(bootstrap, rate, args.seconds, args.record_size, linger, done)
    )
    cpu0 = sum(cpu_seconds(pid) for pid in pids.values())
    start_ns = time.monotonic_ns()
    producer.start()
    warm_until = start_ns + int((args.warmup_seconds + 1.0) * 1e9)  # + the child's start-up
    latencies: list[float] = []
    received = 0
    deadline = time.monotonic() + args.seconds + 60
    first = last = None
    last_rx = time.monotonic()
    while time.monotonic() < deadline:
        # poll returns on the first record (consume(n, timeout) would wait to fill its batch);
        # whatever else has arrived is then taken without waiting
        first_msg = c.poll(0.05)
        now = time.monotonic_ns()
        msgs = [first_msg, *c.consume(10_000, timeout=0)] if first_msg is not None else []
        for m in msgs:
            if m.error():
                continue
            sent = STAMP.unpack_from(m.value())[0]
            received += 1
            if sent >= warm_until:
                latencies.append((now - sent) / 1e6)
                first = sent if first is None else min(first, sent)
                last = sent if last is None else max(last, sent)
        if msgs:
            last_rx = time.monotonic()
        if done.value >= 0 and (received >= done.value or time.monotonic() - last_rx > 5):
            break  # all in, or nothing more for 5 s after the producer finished (records missed)
    cpu = sum(cpu_seconds(pid) for pid in pids.values()) - cpu0
    producer.join(30)
    c.close()
    latencies.sort()
    span = (last - first) / 1e9 if first is not None and last is not None and last > first else 0
    return {
        "rate": rate,
        "linger": linger,
        "sent": done.value,
        "received": received,
        "achieved": len(latencies) / span if span else 0,
        "cpu_per_1000": cpu / max(received, 1) * 1000,
        "p50": percentile(latencies, 0.50),
        "p99": percentile(latencies, 0.99),
        "p999": percentile(latencies, 0.999),
        "max": latencies[-1] if latencies else float("nan"),
    }


def capacity_run(
    args: argparse.Namespace, bootstrap: str, pids: dict[int, int], leaders: int, acks: str
) -> dict:
    from confluent_kafka import Producer

    errors = 0
    delivered = 0

    def on_delivery(err, _msg) -> None:
        nonlocal errors, delivered
        if err is not None:
            errors += 1
        else:
            delivered += 1

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "linger.ms": 0,
            "batch.num.messages": 1,
            "queue.buffering.max.messages": 20_000,
            "compression.type": "none",
        }
    )
    p.list_topics(TOPIC, timeout=10)
    value = b"x" * args.record_size
    cpu0 = sum(cpu_seconds(pid) for pid in pids.values())
    t0 = time.monotonic()
    while time.monotonic() - t0 < args.capacity_seconds:
        try:
            p.produce(TOPIC, value, on_delivery=on_delivery)
        except BufferError:
            p.poll(0.001)
        p.poll(0)
    p.flush(60)
    wall = time.monotonic() - t0
    cpu = sum(cpu_seconds(pid) for pid in pids.values()) - cpu0
    return {
        "acks": acks,
        "requests": delivered,
        "errors": errors,
        "per_broker": delivered / wall / leaders,
        "cpu_per_1000": cpu / max(delivered, 1) * 1000,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", type=int, nargs="+", default=[1000, 10_000, 100_000], help="records/s")
    ap.add_argument("--linger-ms", type=float, nargs="+", default=[0, 5])
    ap.add_argument("--seconds", type=float, default=10.0, help="per latency run")
    ap.add_argument("--warmup-seconds", type=float, default=2.0)
    ap.add_argument("--record-size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--capacity-seconds", type=float, default=5.0)
    ap.add_argument("--skip", type=lambda s: set(s.split(",")), default=set(), help="of latency,capacity")
    add_profile_arguments(ap, "the brokers during each run", "build/latency-profiles")
    args = ap.parse_args()
    console = Console(width=150)
    console.print(f"cpus {os.cpu_count()}; load average {os.getloadavg()[0]:.2f}")
    lat_rows: list[dict] = []
    cap_rows: list[dict] = []
    with (
        ZooKeeperServer() as zk,
        tempfile.TemporaryDirectory() as tmp,
        running_cluster(zk, Path(tmp), brokers=3) as cluster,
    ):
        bootstrap = cluster.bootstrap_servers
        pids = {b: cluster.brokers[b].pid for b in cluster.brokers}
        spy = {f"b{b}": pid for b, pid in pids.items()}
        leaders = create_topic(bootstrap, args.partitions)
        console.print(f"topic {TOPIC}: leaders {leaders}")
        if "latency" not in args.skip:
            for linger in args.linger_ms:
                for rate in args.rates:
                    console.print(f"latency: {rate:,} records/s, linger.ms={linger:g}")
                    with profiled(args, f"latency-{rate}-linger{linger:g}", spy):
                        lat_rows.append(latency_run(args, bootstrap, args.partitions, rate, linger, pids))
        if "capacity" not in args.skip:
            for acks in ("1", "all"):
                console.print(f"capacity: one record per request, acks={acks}")
                with profiled(args, f"capacity-acks{acks}", spy):
                    cap_rows.append(capacity_run(args, bootstrap, pids, len(set(leaders.values())), acks))
    load = os.getloadavg()[0]
    if lat_rows:
        table = Table(
            title=f"end-to-end latency, 3 brokers, RF 3, acks=all, min.insync.replicas=2, "
            f"{args.partitions} partitions, {args.record_size} B records (load average {load:.2f})"
        )
        for column in ("records/s asked", "linger.ms", "reached/s", "sent", "received", "p50 ms", "p99 ms"):
            table.add_column(column, justify="right")
        for column in ("p99.9 ms", "max ms", "ratio to aim p50 / p99", "brokers' CPU-s per 1,000"):
            table.add_column(column, justify="right")
        for r in lat_rows:
            ratio = ""
            if r["rate"] == AIM_RATE and r["linger"] == 0:
                ratio = f"{AIM_P50_MS / r['p50']:.2f} / {AIM_P99_MS / r['p99']:.2f}"
            table.add_row(
                f"{r['rate']:,}",
                f"{r['linger']:g}",
                f"{r['achieved']:,.0f}",
                f"{r['sent']:,}",
                f"{r['received']:,}",
                *(f"{r[k]:,.1f}" for k in ("p50", "p99", "p999", "max")),
                ratio,
                f"{r['cpu_per_1000']:.3f}",
            )
        console.print(table)
    if cap_rows:
        table = Table(
            title=f"small-request capacity: linger.ms=0, one {args.record_size} B record per request"
        )
        for column in (
            "acks",
            "requests",
            "errors",
            "requests/s per leader broker",
            "brokers' CPU-s per 1,000",
        ):
            table.add_column(column, justify="right")
        for r in cap_rows:
            table.add_row(
                r["acks"],
                f"{r['requests']:,}",
                str(r["errors"]),
                f"{r['per_broker']:,.0f}",
                f"{r['cpu_per_1000']:.3f}",
            )
        console.print(table)


if __name__ == "__main__":
    main()

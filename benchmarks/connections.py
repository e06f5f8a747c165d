"""Many client connections to one broker: errors, refusals, per-client fairness, RSS (issue 17).

    PYTHONPATH=src .venv/bin/python benchmarks/connections.py [--connections 500 2000 5000]
        [--producers 200] [--consumers 200] [--groups 20] [--partitions 1000] [--seconds 20]
        [--warmup-seconds 3] [--batch-records 10] [--record-size 100] [--py-spy PATH --profile-dir DIR]

One broker process (its open-files limit raised to the hard limit first, as this process's is:
the broker inherits it) and, per size, a new topic of `--partitions` partitions (RF 1). For each size in
`--connections`, that many connections are opened to the broker at once (zkafka's own asyncio
`BrokerConnection`, which sends ApiVersions on connect; at most `--connect-concurrency` connects
in flight). Of them:
- `--producers` send Produce (acks=1) back to back, each a batch of `--batch-records` records, each
  producer cycling over its own share of the partitions;
- `--consumers` fetch (max.wait 200 ms) in `--groups` groups: every group reads the whole topic,
  its members splitting the partitions among them (manual assignment, p % members), and each
  member commits its positions to its group every `--commit-interval-s` (5 s, Kafka's
  `auto.commit.interval.ms`; OffsetCommit with generation -1, as a
  consumer with `group.id` and `assign()` does); records are counted from batch headers;
- the rest stay connected and idle.

After `--seconds` (the first `--warmup-seconds` not counted) it prints: connections refused /
failed, request errors by kind, each side's per-client rate (slowest, median, fastest, and
median / slowest with the aim <= 5), the broker's RSS before connecting, with every connection
open, after the load and after the connections are closed, its open descriptors and CPU. The
clients run in this one process on the same cores as the broker, so the rates are a floor.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from _cluster import cpu_seconds, open_fds, raise_nofile_limit, rss_mib
from rich.console import Console
from rich.table import Table
from scale_partitions import add_profile_arguments, profiled

from zkafka.client.connection import BrokerConnection, ConnectionError_
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol.messages import (
    FetchRequest,
    FetchResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    ProduceRequest,
    ProduceResponse,
)
from zkafka.records import iter_headers, simple_batch
from zkafka.testing.cluster import running_cluster

FAIRNESS_AIM = 5.0
FETCH_VERSION = 11


@dataclass
class Load:
    """Shared counters of one size's run."""

    stop: asyncio.Event
    topic: str
    commit_interval: float
    errors: Counter = field(default_factory=Counter)
    produced: dict[int, int] = field(default_factory=dict)  # producer -> records acked
    consumed: dict[int, int] = field(default_factory=dict)  # consumer -> records fetched


def broker_nofile(pid: int) -> int:
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    return -1


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 120_000})
    admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=120)[topic].result(180)


async def open_all(port: int, n: int, concurrency: int) -> tuple[list[BrokerConnection], Counter]:
    gate = asyncio.Semaphore(concurrency)
    failures: Counter = Counter()

    async def one(i: int) -> BrokerConnection | None:
        async with gate:
            try:
                return await BrokerConnection.open("127.0.0.1", port, client_id=f"c{i}", timeout=60)
            except ConnectionError_ as e:
                cause = e.__cause__
                failures[
                    "refused" if isinstance(cause, ConnectionRefusedError) else type(cause).__name__
                ] += 1
                return None

    conns = await asyncio.gather(*(one(i) for i in range(n)))
    return [c for c in conns if c is not None], failures


async def produce_loop(
    i: int, conn: BrokerConnection, partitions: list[int], batch: bytes, records: int, load: Load
) -> None:
    load.produced[i] = 0
    k = 0
    while not load.stop.is_set():
        p = partitions[k % len(partitions)]
        k += 1
        request = ProduceRequest(
            acks=1,
            timeout_ms=30_000,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name=load.topic,
                    partition_data=[ProduceRequest.PartitionProduceData(index=p, records=batch)],
                )
            ],
        )
        try:
            resp = await conn.send(request, timeout=60)
        except (ConnectionError_, TimeoutError) as e:
            load.errors[f"produce: {type(e).__name__}"] += 1
            return
        assert isinstance(resp, ProduceResponse)
        code = resp.responses[0].partition_responses[0].error_code
        if code:
            load.errors[f"produce: error {code}"] += 1
        else:
            load.produced[i] += records


async def consume_loop(i: int, conn: BrokerConnection, group: str, partitions: list[int], load: Load) -> None:
    load.consumed[i] = 0
    positions = dict.fromkeys(partitions, 0)
    # as a client does before committing: the first lookup also creates __consumer_offsets
    while not load.stop.is_set():
        try:
            found = await conn.send(FindCoordinatorRequest(key=group, key_type=0), timeout=60)
        except (ConnectionError_, TimeoutError) as e:
            load.errors[f"find coordinator: {type(e).__name__}"] += 1
            return
        assert isinstance(found, FindCoordinatorResponse)
        if found.error_code == 0:
            break
        load.errors[f"find coordinator: error {found.error_code} (retried)"] += 1
        await asyncio.sleep(0.5)
    committed = time.monotonic()
    while not load.stop.is_set():
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=200,
            min_bytes=1,
            max_bytes=4 * 1024 * 1024,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[
                FetchRequest.FetchTopic(
                    topic=load.topic,
                    partitions=[
                        FetchRequest.FetchPartition(
                            partition=p,
                            current_leader_epoch=-1,
                            fetch_offset=offset,
                            last_fetched_epoch=-1,
                            log_start_offset=-1,
                            partition_max_bytes=256 * 1024,
                        )
                        for p, offset in positions.items()
                    ],
                )
            ],
        )
        try:
            resp = await conn.send(request, version=FETCH_VERSION, timeout=60)
            assert isinstance(resp, FetchResponse)
            if resp.error_code:
                load.errors[f"fetch: error {resp.error_code}"] += 1
            for data in resp.responses[0].partitions if resp.responses else ():
                if data.error_code:
                    load.errors[f"fetch: error {data.error_code}"] += 1
                    continue
                for header in iter_headers(data.records or b""):
                    if header.next_offset > positions[data.partition_index]:
                        load.consumed[i] += header.records_count
                        positions[data.partition_index] = header.next_offset
            if time.monotonic() - committed >= load.commit_interval:
                committed = time.monotonic()
                commit = OffsetCommitRequest(
                    group_id=group,
                    generation_id_or_member_epoch=-1,
                    member_id="",
                    topics=[
                        OffsetCommitRequest.OffsetCommitRequestTopic(
                            name=load.topic,
                            partitions=[
                                OffsetCommitRequest.OffsetCommitRequestPartition(
                                    partition_index=p, committed_offset=o
                                )
                                for p, o in positions.items()
                            ],
                        )
                    ],
                )
                answer = await conn.send(commit, timeout=60)
                assert isinstance(answer, OffsetCommitResponse)
                for t in answer.topics:
                    for cp in t.partitions:
                        if cp.error_code:
                            load.errors[f"commit: error {cp.error_code}"] += 1
        except (ConnectionError_, TimeoutError) as e:
            load.errors[f"fetch: {type(e).__name__}"] += 1
            return


def spread(rates: list[float]) -> tuple[float, float, float, float]:
    """(slowest, median, fastest, median / slowest)."""
    if not rates:
        return (0.0, 0.0, 0.0, float("nan"))
    lo, med, hi = min(rates), statistics.median(rates), max(rates)
    return lo, med, hi, (med / lo if lo > 0 else float("inf"))


async def run_size(args: argparse.Namespace, port: int, pid: int, n: int, topic: str) -> dict:
    out: dict = {"connections": n, "rss_before": rss_mib(pid)}
    t0 = time.perf_counter()
    conns, failures = await open_all(port, n, args.connect_concurrency)
    out["connect_s"] = time.perf_counter() - t0
    out["opened"] = len(conns)
    out["failures"] = failures
    out["rss_open"] = rss_mib(pid)
    out["fds_open"] = open_fds(pid)
    producers = conns[: min(args.producers, len(conns))]
    consumers = conns[len(producers) : len(producers) + min(args.consumers, len(conns) - len(producers))]
    load = Load(asyncio.Event(), topic, args.commit_interval_s)
    batch = simple_batch(
        [(None, b"x" * args.record_size)] * args.batch_records, timestamp=int(time.time() * 1000)
    )
    tasks = []
    k = args.partitions
    for i, conn in enumerate(producers):
        own = list(range(i, k, len(producers))) or [i % k]
        tasks.append(asyncio.ensure_future(produce_loop(i, conn, own, batch, args.batch_records, load)))
    groups = max(1, min(args.groups, len(consumers)))
    for j, conn in enumerate(consumers):
        g, member = j % groups, j // groups
        members = len(range(g, len(consumers), groups))
        own = [p for p in range(k) if p % members == member]
        tasks.append(asyncio.ensure_future(consume_loop(j, conn, f"group-{g}", own, load)))
    await asyncio.sleep(args.warmup_seconds)
    p0, c0 = dict(load.produced), dict(load.consumed)
    cpu0, t0, own0 = cpu_seconds(pid), time.perf_counter(), time.process_time()
    await asyncio.sleep(args.seconds - args.warmup_seconds)
    window = time.perf_counter() - t0
    cpu = cpu_seconds(pid) - cpu0
    out["client_cpu"] = (time.process_time() - own0) / window
    p1, c1 = dict(load.produced), dict(load.consumed)
    load.stop.set()
    await asyncio.wait(tasks, timeout=30)
    out["rss_load"] = rss_mib(pid)
    out["cpu"] = cpu / window
    out["errors"] = load.errors
    out["produce"] = spread([(p1[i] - p0.get(i, 0)) / window for i in p1])
    out["consume"] = spread([(c1[i] - c0.get(i, 0)) / window for i in c1])
    out["produce_total"] = sum(p1[i] - p0.get(i, 0) for i in p1) / window
    out["consume_total"] = sum(c1[i] - c0.get(i, 0) for i in c1) / window
    out["producers"], out["consumers"], out["groups"] = len(producers), len(consumers), groups
    for conn in conns:
        conn.close()
    await asyncio.sleep(2)
    out["rss_closed"] = rss_mib(pid)
    return out


def print_result(console: Console, r: dict, args: argparse.Namespace, limit: int) -> None:
    table = Table(
        title=f"{r['connections']:,} connections ({r['producers']} producers, {r['consumers']} consumers in "
        f"{r['groups']} groups, {args.partitions:,} partitions, rest idle); broker open-files limit {limit:,}"
    )
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("ratio to aim", justify="right")
    refused = r["failures"].get("refused", 0)
    other = sum(r["failures"].values()) - refused
    table.add_row("connections opened", f"{r['opened']:,} in {r['connect_s']:.1f} s", "")
    table.add_row("connections refused / failed otherwise", f"{refused} / {other}", "")
    if r["failures"]:
        table.add_row("  connect failures", ", ".join(f"{k}: {v}" for k, v in r["failures"].items()), "")
    table.add_row("request errors", ", ".join(f"{k}: {v}" for k, v in r["errors"].items()) or "0", "")
    for side in ("produce", "consume"):
        lo, med, hi, ratio = r[side]
        table.add_row(
            f"{side}: records/s per client slowest / median / fastest",
            f"{lo:,.0f} / {med:,.0f} / {hi:,.0f}",
            f"{FAIRNESS_AIM / ratio:.2f}" if ratio == ratio and ratio > 0 else "",
        )
        table.add_row(f"{side}: records/s all clients", f"{r[side + '_total']:,.0f}", "")
    table.add_row(
        "broker RSS before / connected / after load / closed",
        f"{r['rss_before']:,.0f} / {r['rss_open']:,.0f} / {r['rss_load']:,.0f} / {r['rss_closed']:,.0f} MiB",
        "",
    )
    per_conn = (r["rss_open"] - r["rss_before"]) * 1024 / max(1, r["opened"])
    table.add_row("broker RSS per idle connection", f"{per_conn:,.1f} KiB", "")
    table.add_row("broker open descriptors, connected", f"{r['fds_open']:,}", "")
    table.add_row(
        "CPU under load: broker / clients (this process)", f"{r['cpu']:.2f} / {r['client_cpu']:.2f} cores", ""
    )
    console.print(table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connections", type=int, nargs="+", default=[500, 2000, 5000])
    ap.add_argument("--producers", type=int, default=200)
    ap.add_argument("--consumers", type=int, default=200)
    ap.add_argument("--groups", type=int, default=20)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=20.0, help="load per size, warm-up included")
    ap.add_argument("--warmup-seconds", type=float, default=3.0)
    ap.add_argument("--batch-records", type=int, default=10)
    ap.add_argument("--record-size", type=int, default=100)
    ap.add_argument("--connect-concurrency", type=int, default=200)
    ap.add_argument(
        "--commit-interval-s", type=float, default=5.0, help="consumers' commits (auto.commit.interval.ms)"
    )
    add_profile_arguments(ap, "the broker during each size", "build/connections-profiles")
    args = ap.parse_args()
    console = Console(width=160)
    before, now = raise_nofile_limit()
    console.print(f"open files limit of this process and the broker: {now:,} (was {before:,})")
    top = max(args.connections)
    if top + 200 > now:
        console.print(
            f"[bold]{top:,} connections need about {top + 200:,} descriptors on each side: the hard "
            f"limit {now:,} bounds this run (raise it with `ulimit -Hn` / limits.conf, as Kafka's docs say)"
        )
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    with (
        ZooKeeperServer() as zk,
        tempfile.TemporaryDirectory() as tmp,
        running_cluster(zk, Path(tmp), brokers=1) as cluster,
    ):
        broker = cluster.brokers[1]
        limit = broker_nofile(broker.pid)
        for n in args.connections:
            topic = f"connections-{n}"  # fresh per size: consumers start at 0 with no backlog
            t0 = time.perf_counter()
            create_topic(cluster.bootstrap_servers, topic, args.partitions)
            took = time.perf_counter() - t0
            console.print(f"{n:,} connections; topic {topic}: {args.partitions:,} partitions in {took:.1f} s")
            with profiled(args, f"connections-{n}", {"broker": broker.pid}):
                result = asyncio.run(run_size(args, broker.port, broker.pid, n, topic))
            print_result(console, result, args, limit)


if __name__ == "__main__":
    main()

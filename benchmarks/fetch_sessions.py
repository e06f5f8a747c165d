"""What idle followers cost, with and without incremental fetch sessions (KIP-227; issue 17).

    PYTHONPATH=src .venv/bin/python benchmarks/fetch_sessions.py [--partitions 10000]
        [--brokers 2] [--idle-seconds 60] [--settle-seconds 20] [--modes sessionless,sessions]

Twice, each on a fresh cluster of `--brokers` brokers: `--partitions` partitions with replication
factor 2 (10,000 on 2 brokers: 10,000 replicas per broker, half of them followers), no records.
Once every partition is fully replicated (each broker's UnderReplicatedPartitions is 0) and
`--settle-seconds` passed, the brokers' CPU seconds (user + system, /proc) are read over
`--idle-seconds` of idling. "sessions" is the default broker; "sessionless" sets Kafka's
`max.incremental.fetch.session.cache.slots=0`, so leaders open no session and every follower
fetch lists (and every answer carries) every partition, as before fetch sessions. Printed: CPU
seconds per idle minute per broker and in total, Fetch requests per second (from the
brokers' request counters) and CPU seconds per Fetch round trip (both ends); nothing is asserted.
`--modes sessions` runs one of the two (to compare two trees: the brokers run the code that
`PYTHONPATH` points at).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _cluster import cpu_seconds, create_topics, raise_nofile_limit

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.metrics.scrape import scrape
from zkafka.testing.cluster import running_cluster

TOPIC_SIZE = 1000


def _metric(cluster: LocalCluster, broker: int, name: str, **labels: str) -> float:
    return sum(
        s.value
        for s in scrape(cluster.brokers[broker].metrics)
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def _wait_replicated(cluster: LocalCluster, timeout: float) -> float:
    t0 = time.perf_counter()
    name = "kafka_server_replicamanager_underreplicatedpartitions"
    while any(_metric(cluster, b, name) > 0 for b in cluster.brokers):
        if time.perf_counter() - t0 > timeout:
            raise TimeoutError("partitions still under-replicated")
        time.sleep(1)
    return time.perf_counter() - t0


def measure(zkserver: ZooKeeperServer, args: argparse.Namespace, slots: int) -> dict[str, float]:
    overrides = {
        "max.incremental.fetch.session.cache.slots": str(slots),
        "auto.leader.rebalance.enable": "false",
    }
    topics = max(1, args.partitions // TOPIC_SIZE)
    size = min(TOPIC_SIZE, args.partitions)
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_cluster(zkserver, Path(tmp), brokers=args.brokers, overrides=overrides) as cluster,
    ):
        t0 = time.perf_counter()
        create_topics(cluster.bootstrap_servers, [f"idle-{i:03d}" for i in range(topics)], size, 2, 10)
        replicated = _wait_replicated(cluster, 900) + time.perf_counter() - t0
        time.sleep(args.settle_seconds)
        pids = {b: cluster.brokers[b].pid for b in cluster.brokers}
        fetches = "kafka_network_requestmetrics_requests_total"
        cpu0 = {b: cpu_seconds(p) for b, p in pids.items()}
        f0 = sum(_metric(cluster, b, fetches, request="Fetch") for b in pids)
        time.sleep(args.idle_seconds)
        cpu = {b: cpu_seconds(p) - cpu0[b] for b, p in pids.items()}
        f1 = sum(_metric(cluster, b, fetches, request="Fetch") for b in pids)
        per_minute = 60 / args.idle_seconds
        out = {f"b{b} CPU-s per idle minute": c * per_minute for b, c in cpu.items()}
        out["all brokers CPU-s per idle minute"] = sum(cpu.values()) * per_minute
        out["Fetch requests/s (all brokers)"] = (f1 - f0) / args.idle_seconds
        out["CPU-s per Fetch round trip (both ends)"] = sum(cpu.values()) / max(1.0, f1 - f0)
        out["created and replicated in (s)"] = replicated
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--brokers", type=int, default=2)
    ap.add_argument("--idle-seconds", type=float, default=60.0)
    ap.add_argument("--settle-seconds", type=float, default=20.0)
    ap.add_argument("--modes", type=lambda s: s.split(","), default=["sessionless", "sessions"])
    args = ap.parse_args()
    raise_nofile_limit()
    results = {}
    with ZooKeeperServer() as zkserver:
        for label, slots in (("sessionless", 0), ("sessions", 1000)):
            if label not in args.modes:
                continue
            print(f"{label}: {args.partitions:,} partitions, RF 2, {args.brokers} brokers ...", flush=True)
            results[label] = measure(zkserver, args, slots)
            for k, v in results[label].items():
                print(f"  {k}: {v:,.2f}", flush=True)
    if len(results) < 2:
        return
    before, after = results["sessionless"], results["sessions"]
    key = "all brokers CPU-s per idle minute"
    ratio = before[key] / after[key]
    print(f"idle CPU: {before[key]:,.2f} -> {after[key]:,.2f} CPU-s per minute ({ratio:.1f}x less)")


if __name__ == "__main__":
    main()

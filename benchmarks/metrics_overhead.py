"""Produce throughput with metrics on and off, in the same run.

    .venv/bin/python benchmarks/metrics_overhead.py [--records 1000000] [--record-size 100] [--rounds 3]

Starts ZooKeeper and two one-broker clusters side by side: one with `metrics.listener` (every request
timed, every batch counted, /metrics scraped once a second during the run, as Prometheus would),
one without (nothing counted at all). Produces `--records` records of `--record-size` bytes with
confluent-kafka (acks=1, one partition) to each, alternating, `--rounds` times, and prints the best
records/s of each, the ratio on/off (the aim is at least 0.97) and each broker's CPU seconds per
million records. Nothing is asserted: the machine's other load moves single runs by more than 3 %.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import urllib.request
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from broker_throughput import cpu_seconds, produce

from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster


def scrape_every_second(url: str, stop: threading.Event) -> None:
    while not stop.wait(1.0):
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                r.read()
        except OSError:
            pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--record-size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        zk = stack.enter_context(ZooKeeperServer())
        on = stack.enter_context(running_cluster(zk, tmp / "on", 1, {"num.partitions": "1"}))
        off = stack.enter_context(
            running_cluster(zk, tmp / "off", 1, {"num.partitions": "1", "metrics.listener": ""})
        )
        assert on.brokers[1].metrics and not off.brokers[1].metrics
        stop = threading.Event()
        scraper = threading.Thread(
            target=scrape_every_second, args=(on.brokers[1].metrics, stop), daemon=True
        )
        scraper.start()
        best = {"on": 0.0, "off": 0.0}
        cpu = {"on": float("inf"), "off": float("inf")}
        for _name, cluster in (("on", on), ("off", off)):  # warm-up: topic creation, first segment
            produce(cluster.bootstrap_servers, "bench", 10_000, args.record_size)
        for _ in range(args.rounds):
            for name, cluster in (("off", off), ("on", on)):
                pid = cluster.brokers[1].pid
                before = cpu_seconds(pid)
                elapsed = produce(cluster.bootstrap_servers, "bench", args.records, args.record_size)
                used = cpu_seconds(pid) - before
                best[name] = max(best[name], args.records / elapsed)
                cpu[name] = min(cpu[name], used / args.records * 1e6)
                print(f"metrics {name:3}: {args.records / elapsed:12,.0f} records/s, broker CPU {used:.2f} s")
        stop.set()
        print()
        print(
            f"best metrics off: {best['off']:12,.0f} records/s  ({cpu['off']:.2f} CPU s per million records)"
        )
        print(f"best metrics on:  {best['on']:12,.0f} records/s  ({cpu['on']:.2f} CPU s per million records)")
        print(f"on/off: {best['on'] / best['off']:.3f} records/s, {cpu['on'] / cpu['off']:.3f} broker CPU")


if __name__ == "__main__":
    main()

"""Produce throughput with metrics on and off, in the same run.

    .venv/bin/python benchmarks/metrics_overhead.py [--records 1000000] [--record-size 100] [--rounds 3]

Starts ZooKeeper and two one-broker clusters side by side: one with `metrics.listener` (every request
timed, every batch counted, /metrics scraped once a second during the run, as Prometheus would),
one without (nothing counted at all). Produces `--records` records of `--record-size` bytes with
confluent-kafka (acks=1, one partition) to each, alternating, `--rounds` times, and prints the best
and median records/s of each, the ratios on/off (the aim is at least 0.97) and each broker's CPU
seconds per million records. Nothing is asserted: the machine's other load moves single runs by more
than 3 %, which is why the rounds alternate and both best and median are shown.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).parent))

from broker_throughput import cpu_seconds, produce

from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.metrics.scrape import scrape
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
        rates: dict[str, list[float]] = {"on": [], "off": []}
        cpus: dict[str, list[float]] = {"on": [], "off": []}
        for _name, cluster in (("on", on), ("off", off)):  # warm-up: topic creation, first segment
            produce(cluster.bootstrap_servers, "bench", 10_000, args.record_size)
        for round_ in range(args.rounds):
            # alternate which goes first: a load change on the machine must not always hit one side
            order = (("off", off), ("on", on)) if round_ % 2 == 0 else (("on", on), ("off", off))
            for name, cluster in order:
                pid = cluster.brokers[1].pid
                before = cpu_seconds(pid)
                elapsed = produce(cluster.bootstrap_servers, "bench", args.records, args.record_size)
                used = cpu_seconds(pid) - before
                rates[name].append(args.records / elapsed)
                cpus[name].append(used / args.records * 1e6)
                print(f"metrics {name:3}: {args.records / elapsed:12,.0f} records/s, broker CPU {used:.2f} s")
        stop.set()
        samples = scrape(on.brokers[1].metrics)
        produces = sum(
            x.value
            for x in samples
            if x.name == "kafka_network_requestmetrics_requests_total"
            and x.labels.get("request") == "Produce"
        )
        print()
        print(
            f"the metrics-on broker answered {produces:,.0f} Produce requests, "
            f"{produces / (args.rounds * args.records + 10_000) * 1e6:,.0f} per million records"
        )
        for name in ("off", "on"):
            print(
                f"metrics {name:3}: best {max(rates[name]):12,.0f} records/s, median "
                f"{median(rates[name]):12,.0f} records/s, median broker CPU "
                f"{median(cpus[name]):.2f} s per million records"
            )
        print(
            f"on/off: best {max(rates['on']) / max(rates['off']):.3f}, median "
            f"{median(rates['on']) / median(rates['off']):.3f} records/s; median broker CPU "
            f"{median(cpus['on']) / median(cpus['off']):.3f}"
        )


if __name__ == "__main__":
    main()

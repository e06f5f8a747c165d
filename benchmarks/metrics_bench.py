"""What metrics cost: the per-request/per-batch bumps on the hot path, and one scrape of a big broker.

    .venv/bin/python benchmarks/metrics_bench.py [--partitions 10000] [--topics 1000] [--rounds 5]

Bumps are timed in a loop of 1M calls against a bare dict increment (the floor any counter pays in
CPython). The scrape renders a registry holding `--partitions` partitions' size/start/end gauges
(callbacks over a dict, as a log manager would register them), per-topic counters for `--topics`
topics, request counters and histograms for 40 APIs, and the process gauges; it is then parsed by
prometheus_client's parser to check it (not timed). Prints ns per call and ms per scrape (best of
`--rounds`); nothing is asserted.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from zkafka.metrics import Registry
from zkafka.metrics.broker import RequestMetrics, TopicMetrics
from zkafka.metrics.process import register_process_metrics

CALLS = 1_000_000


def per_call_ns(body: Callable[[int], None], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter_ns()
        body(CALLS)
        best = min(best, (time.perf_counter_ns() - start) / CALLS)
    return best


def bump_costs(rounds: int) -> dict[str, float]:
    registry = Registry()
    topics, requests = TopicMetrics(registry), RequestMetrics(registry)
    shrinks = registry.counter("kafka_server_replicamanager_isrshrinks_total")
    plain: dict[str, int] = {}

    def bare(n: int) -> None:
        for _ in range(n):
            plain["orders"] = plain.get("orders", 0) + 1

    def empty(n: int) -> None:
        for _ in range(n):
            pass

    def counter_inc(n: int) -> None:
        inc = shrinks.inc
        for _ in range(n):
            inc()

    def produced(n: int) -> None:
        call = topics.produced
        for _ in range(n):
            call("orders", 10, 16384)

    def completed(n: int) -> None:
        call = requests.completed
        for _ in range(n):
            call(
                "Produce",
                9,
                "NONE",
                queue_ms=0.05,
                local_ms=0.4,
                remote_ms=2.0,
                throttle_ms=0.0,
                total_ms=2.5,
            )

    loop = per_call_ns(empty, rounds)
    return {
        "bare dict increment (floor)": per_call_ns(bare, rounds) - loop,
        "Counter.inc() (unlabelled)": per_call_ns(counter_inc, rounds) - loop,
        "TopicMetrics.produced (per batch: 2 counters)": per_call_ns(produced, rounds) - loop,
        "RequestMetrics.completed (per request: 2 counters, 5 histograms)": per_call_ns(completed, rounds)
        - loop,
    }


def big_registry(partitions: int, topic_count: int) -> Registry:
    registry = Registry()
    per_topic = max(1, partitions // topic_count)
    logs = {
        (f"topic-{i // per_topic}", str(i % per_topic)): (i * 1_000_003, i * 7, i * 11)
        for i in range(partitions)
    }
    for name, index in (
        ("kafka_log_log_size", 0),
        ("kafka_log_log_logstartoffset", 1),
        ("kafka_log_log_logendoffset", 2),
    ):
        registry.register(name, lambda index=index: ((key, v[index]) for key, v in logs.items()))
    topics, requests = TopicMetrics(registry), RequestMetrics(registry)
    for t in range(topic_count):
        topics.produced(f"topic-{t}", 100, 100_000)
        topics.fetched(f"topic-{t}", 100_000, follower=False)
        topics.fetched(f"topic-{t}", 100_000, follower=True)
    for api in range(40):
        for version in range(3):
            requests.completed(
                f"Api{api}", version, "NONE", queue_ms=0.1, local_ms=1, remote_ms=5, throttle_ms=0, total_ms=6
            )
    register_process_metrics(registry)
    return registry


def scrape_ms(registry: Registry, rounds: int) -> tuple[float, int]:
    best, size = float("inf"), 0
    for _ in range(rounds):
        start = time.perf_counter()
        text = registry.render()
        best = min(best, time.perf_counter() - start)
        size = len(text)
    return best * 1000, size


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    for what, ns in bump_costs(args.rounds).items():
        print(f"{what:70s} {ns:8.1f} ns")
    registry = big_registry(args.partitions, args.topics)
    ms, size = scrape_ms(registry, args.rounds)
    from prometheus_client.parser import text_string_to_metric_families

    series = sum(len(f.samples) for f in text_string_to_metric_families(registry.render()))
    print(
        f"scrape of {args.partitions} partitions, {args.topics} topics: {ms:.1f} ms, "
        f"{size / 1e6:.1f} MB, {series} samples (parsed back by prometheus_client)"
    )


if __name__ == "__main__":
    main()

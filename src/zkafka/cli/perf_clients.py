"""`zkafka perf produce` and `zkafka perf consume`: load tests against a running cluster, modelled
on Kafka's kafka-producer-perf-test and kafka-consumer-perf-test.

    zkafka perf produce --bootstrap-server B --topic T --num-records 1000000 --record-size 100 \\
        [--throughput -1] [--producer-props acks=1 linger.ms=5] [--client confluent|zkafka]
    zkafka perf consume --bootstrap-server B --topic T --messages 1000000 [--client confluent|zkafka]

The load is driven with confluent-kafka (librdkafka) by default, so that the client is not what
is measured; `--client zkafka` uses zkafka's own asyncio client instead. Producer properties
are librdkafka's names (which are Kafka's for the common ones); for `--client zkafka` they are
translated by `zkafka.client.config`.

The produce test prints a progress line every 5 s and a final line with records/s, MB/s and
the latency average, max and percentiles (time from send to acknowledgement, per record); the
consume test prints kafka-consumer-perf-test's CSV columns.

These subcommands hang under `zkafka perf` (see `add_client_perf_commands`); the module also
runs on its own: ``python -m zkafka.cli.perf_clients produce ...``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from zkafka.cli.errors import CliError
from zkafka.cli.target import add_target_args, fill_from_local_cluster, split_security

REPORT_INTERVAL_S = 5.0
CLIENTS = ("confluent", "zkafka")
MB = 1024 * 1024


# -- statistics --------------------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """The value at index int(n * fraction) of the sorted values (kafka-producer-perf-test's way)."""
    if not sorted_values:
        return 0.0
    return sorted_values[min(int(len(sorted_values) * fraction), len(sorted_values) - 1)]


@dataclass
class ProduceStats:
    """Latencies (ms) of acknowledged records and bytes sent, with a window for progress lines."""

    record_size: int
    started: float = field(default_factory=time.monotonic)
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    first_error: str | None = None
    window_start: float = field(default_factory=time.monotonic)
    window_count: int = 0
    window_latency_sum: float = 0.0
    window_latency_max: float = 0.0

    def record(self, latency_ms: float) -> None:
        self.latencies.append(latency_ms)
        self.window_count += 1
        self.window_latency_sum += latency_ms
        if latency_ms > self.window_latency_max:
            self.window_latency_max = latency_ms

    def error(self, message: str) -> None:
        self.errors += 1
        if self.first_error is None:
            self.first_error = message

    def window_line(self, now: float) -> str | None:
        """kafka-producer-perf-test's progress line for the last window, then a new window."""
        if now - self.window_start < REPORT_INTERVAL_S or not self.window_count:
            return None
        elapsed = now - self.window_start
        rate = self.window_count / elapsed
        line = (
            f"{self.window_count} records sent, {rate:.1f} records/sec "
            f"({rate * self.record_size / MB:.2f} MB/sec), "
            f"{self.window_latency_sum / self.window_count:.1f} ms avg latency, "
            f"{self.window_latency_max:.1f} ms max latency."
        )
        self.window_start, self.window_count = now, 0
        self.window_latency_sum = self.window_latency_max = 0.0
        return line

    def summary(self, finished: float) -> dict[str, float]:
        values = sorted(self.latencies)
        count = len(values)
        elapsed = max(finished - self.started, 1e-9)
        return {
            "records": count,
            "errors": self.errors,
            "seconds": elapsed,
            "records_per_sec": count / elapsed,
            "mb_per_sec": count * self.record_size / MB / elapsed,
            "avg_latency_ms": sum(values) / count if count else 0.0,
            "max_latency_ms": values[-1] if values else 0.0,
            "p50_ms": percentile(values, 0.5),
            "p95_ms": percentile(values, 0.95),
            "p99_ms": percentile(values, 0.99),
            "p999_ms": percentile(values, 0.999),
        }


def summary_line(s: dict[str, float]) -> str:
    return (
        f"{s['records']:.0f} records sent, {s['records_per_sec']:.1f} records/sec "
        f"({s['mb_per_sec']:.2f} MB/sec), {s['avg_latency_ms']:.2f} ms avg latency, "
        f"{s['max_latency_ms']:.2f} ms max latency, {s['p50_ms']:.0f} ms 50th, {s['p95_ms']:.0f} ms 95th, "
        f"{s['p99_ms']:.0f} ms 99th, {s['p999_ms']:.0f} ms 99.9th."
    )


class Throttle:
    """Keeps the send rate at `per_second` records/s (no limit when <= 0) by sleeping ahead of
    schedule, checked every few records so the check itself costs little."""

    def __init__(self, per_second: float) -> None:
        self.per_second = per_second
        self.started = time.monotonic()

    def delay(self, sent: int) -> float:
        if self.per_second <= 0:
            return 0.0
        return sent / self.per_second - (time.monotonic() - self.started)


def make_payload(size: int, seed: int = 0) -> bytes:
    """Random uppercase letters, as kafka-producer-perf-test's default payload."""
    rng = random.Random(seed)
    return bytes(rng.randrange(65, 91) for _ in range(size))


# -- command line --------------------------------------------------------------------------------


def add_client_perf_commands(perf_sub: argparse._SubParsersAction) -> None:
    """Add `produce` and `consume` under `zkafka perf`."""
    produce = perf_sub.add_parser("produce", help="producer load test (like kafka-producer-perf-test)")
    add_target_args(produce)
    produce.add_argument("--topic", required=True)
    produce.add_argument("--num-records", type=int, required=True, metavar="N")
    produce.add_argument(
        "--record-size", type=int, default=100, metavar="BYTES", help="value size (default 100)"
    )
    produce.add_argument(
        "--throughput",
        type=float,
        default=-1,
        metavar="REC/S",
        help="records per second, -1 unlimited (default)",
    )
    produce.add_argument(
        "--producer-props", nargs="+", default=[], metavar="KEY=VALUE", help="producer configs"
    )
    produce.add_argument(
        "--producer.config",
        dest="producer_config",
        metavar="FILE",
        help="producer properties file (security.protocol, sasl.*, ssl.* too)",
    )
    produce.add_argument(
        "--client", choices=CLIENTS, default="confluent", help="load generator (default confluent)"
    )
    produce.add_argument("--json", action="store_true", help="print the final statistics as JSON too")
    produce.set_defaults(func=run_produce)

    consume = perf_sub.add_parser("consume", help="consumer load test (like kafka-consumer-perf-test)")
    add_target_args(consume)
    consume.add_argument("--topic", required=True)
    consume.add_argument("--messages", type=int, required=True, metavar="N", help="records to consume")
    consume.add_argument(
        "--timeout",
        type=int,
        default=10_000,
        metavar="MS",
        help="give up when no record arrives for MS (10000)",
    )
    consume.add_argument(
        "--from-latest", action="store_true", help="start at the end instead of the beginning"
    )
    consume.add_argument(
        "--consumer-props", nargs="+", default=[], metavar="KEY=VALUE", help="consumer configs"
    )
    consume.add_argument(
        "--consumer.config",
        dest="consumer_config",
        metavar="FILE",
        help="consumer properties file (security.protocol, sasl.*, ssl.* too)",
    )
    consume.add_argument(
        "--client", choices=CLIENTS, default="confluent", help="load generator (default confluent)"
    )
    consume.add_argument("--json", action="store_true", help="print the statistics as JSON too")
    consume.set_defaults(func=run_consume)


def _props(items: list[str], what: str, config_file: str | None = None) -> dict[str, str]:
    """The properties file (Kafka's --producer.config / --consumer.config), then the flags over it."""
    from zkafka.client.config import parse_key_values
    from zkafka.client.errors import ConfigError
    from zkafka.config.properties import load_properties

    props: dict[str, str] = {}
    try:
        if config_file is not None:
            props.update(load_properties(config_file))
        props.update(parse_key_values(items, what=what))
    except (ConfigError, OSError, ValueError) as e:
        raise CliError(str(e)) from None
    return props


def _librdkafka(props: dict[str, str]) -> dict[str, str]:
    from zkafka.client.security import librdkafka_security_config

    try:
        return librdkafka_security_config(props)
    except ValueError as e:
        raise CliError(str(e)) from None


def _zkafka_kwargs(props: dict[str, str], translate: Callable[..., Any], source: str) -> dict[str, Any]:
    """zkafka client keyword arguments: the security keys become one ClientSecurity, the rest are
    translated (unknown keys warned about, as Kafka's tools do)."""
    security, props = split_security(props, source)
    kwargs, unknown = translate(props)
    for key in unknown:
        print(f"WARNING: the configuration '{key}' was supplied but isn't a known config.", file=sys.stderr)
    if security is not None:
        kwargs["security"] = security
    return kwargs


def _confluent() -> Any:
    try:
        import confluent_kafka
    except ImportError:
        raise CliError(
            "confluent-kafka is not installed (pip install 'confluent-kafka==2.16.1'), or use --client zkafka"
        ) from None
    return confluent_kafka


def _print_json(data: dict[str, Any]) -> None:
    import json

    print(json.dumps(data))


# -- produce -------------------------------------------------------------------------------------


def run_produce(args: argparse.Namespace) -> int:
    if args.num_records < 1 or args.record_size < 0:
        raise CliError("--num-records must be >= 1 and --record-size >= 0")
    props = _props(args.producer_props, "--producer-props", args.producer_config)
    payload = make_payload(args.record_size)
    stats = ProduceStats(args.record_size)
    if args.client == "confluent":
        _produce_confluent(args, props, payload, stats)
    else:
        _produce_zkafka(args, props, payload, stats)
    summary = stats.summary(time.monotonic())
    print(summary_line(summary))
    if args.json:
        _print_json({"test": "produce", "client": args.client, **summary})
    if stats.errors:
        raise CliError(f"{stats.errors} records failed; first error: {stats.first_error}")
    return 0


def _produce_confluent(
    args: argparse.Namespace, props: dict[str, str], payload: bytes, stats: ProduceStats
) -> None:
    ck = _confluent()
    config = {
        "bootstrap.servers": args.bootstrap_server,
        "partitioner": "murmur2_random",
        **_librdkafka(props),
    }
    try:
        producer = ck.Producer(config)
    except ck.KafkaException as e:
        raise CliError(f"confluent-kafka: {e}") from None
    throttle = Throttle(args.throughput)
    clock = time.monotonic
    record = stats.record
    error = stats.error

    def delivered_at(sent: float) -> Callable[[Any, Any], None]:
        def on_delivery(err: Any, _msg: Any) -> None:
            if err is not None:
                error(str(err))
            else:
                record((clock() - sent) * 1000)

        return on_delivery

    produce, poll, topic = producer.produce, producer.poll, args.topic
    stats.started = stats.window_start = clock()
    for i in range(args.num_records):
        while True:
            try:
                produce(topic, payload, on_delivery=delivered_at(clock()))
                break
            except BufferError:  # librdkafka's queue is full: serve callbacks, then retry
                poll(0.05)
        poll(0)
        if i & 0xFF == 0:
            _progress(stats)
            wait = throttle.delay(i)
            if wait > 0:
                time.sleep(wait)
    while producer.flush(1.0) > 0:
        _progress(stats)


def _produce_zkafka(
    args: argparse.Namespace, props: dict[str, str], payload: bytes, stats: ProduceStats
) -> None:
    from zkafka.cli.topics import client_errors
    from zkafka.client.config import producer_kwargs

    kwargs = _zkafka_kwargs(props, producer_kwargs, "--producer.config/--producer-props")
    with client_errors():
        _run_fast(_produce_zkafka_async(args, kwargs, payload, stats))


async def _produce_zkafka_async(
    args: argparse.Namespace, kwargs: dict[str, Any], payload: bytes, stats: ProduceStats
) -> None:
    from zkafka.client.producer import Producer

    throttle = Throttle(args.throughput)
    clock = time.monotonic
    record, error = stats.record, stats.error

    def delivered_at(sent: float) -> Callable[[asyncio.Future[Any]], None]:
        def on_delivery(future: asyncio.Future[Any]) -> None:
            if future.exception() is not None:
                error(str(future.exception()))
            else:
                record((clock() - sent) * 1000)

        return on_delivery

    async with Producer(args.bootstrap_server, **kwargs) as producer:
        send, topic = producer.send, args.topic
        await producer.partitions_for(topic)
        stats.started = stats.window_start = clock()
        for i in range(args.num_records):
            future = await send(topic, payload)
            future.add_done_callback(delivered_at(clock()))
            if i & 0xFF == 0:
                _progress(stats)
                wait = throttle.delay(i)
                await asyncio.sleep(max(wait, 0))  # also lets the sender run
        await producer.flush()


def _run_fast(coro: Coroutine[Any, Any, None]) -> None:
    """On uvloop when it is there (the client's per-record futures and callbacks cost less)."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency
        asyncio.run(coro)
    else:
        uvloop.run(coro)


def _progress(stats: ProduceStats) -> None:
    line = stats.window_line(time.monotonic())
    if line:
        print(line, flush=True)


# -- consume -------------------------------------------------------------------------------------

CONSUME_HEADER = (
    "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
    "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
)


@dataclass
class ConsumeStats:
    messages: int = 0
    bytes: int = 0
    started_wall: float = field(default_factory=time.time)
    started: float = field(default_factory=time.monotonic)
    first_record: float | None = None
    finished: float | None = None

    def line(self) -> str:
        end = self.finished or time.monotonic()
        elapsed = max(end - self.started, 1e-9)
        fetch_start = self.first_record or self.started
        fetch_elapsed = max(end - fetch_start, 1e-9)
        mb = self.bytes / MB
        start_s = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started_wall))
        end_s = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started_wall + elapsed))
        rebalance_ms = (fetch_start - self.started) * 1000
        return (
            f"{start_s}, {end_s}, {mb:.4f}, {mb / elapsed:.4f}, "
            f"{self.messages}, {self.messages / elapsed:.4f}, "
            f"{rebalance_ms:.0f}, {fetch_elapsed * 1000:.0f}, {mb / fetch_elapsed:.4f}, "
            f"{self.messages / fetch_elapsed:.4f}"
        )

    def as_dict(self) -> dict[str, float]:
        end = self.finished or time.monotonic()
        fetch_elapsed = max(end - (self.first_record or self.started), 1e-9)
        return {
            "messages": self.messages,
            "mb": self.bytes / MB,
            "seconds": end - self.started,
            "fetch_seconds": fetch_elapsed,
            "mb_per_sec": self.bytes / MB / fetch_elapsed,
            "records_per_sec": self.messages / fetch_elapsed,
        }


def run_consume(args: argparse.Namespace) -> int:
    if args.messages < 1:
        raise CliError("--messages must be >= 1")
    props = _props(args.consumer_props, "--consumer-props", args.consumer_config)
    stats = ConsumeStats()
    if args.client == "confluent":
        _consume_confluent(args, props, stats)
    else:
        _consume_zkafka(args, props, stats)
    print(CONSUME_HEADER)
    print(stats.line())
    if args.json:
        _print_json({"test": "consume", "client": args.client, **stats.as_dict()})
    if stats.messages < args.messages:
        raise CliError(
            f"only {stats.messages} of {args.messages} records arrived "
            f"before --timeout {args.timeout} ms passed"
        )
    return 0


def _consume_confluent(args: argparse.Namespace, props: dict[str, str], stats: ConsumeStats) -> None:
    ck = _confluent()
    config = {
        "bootstrap.servers": args.bootstrap_server,
        # librdkafka wants a group id even for assign(); nothing is committed or joined with it
        "group.id": f"zkafka-perf-{os.getpid()}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        **_librdkafka(props),
    }
    consumer = ck.Consumer(config)
    try:
        metadata = consumer.list_topics(args.topic, timeout=10)
        topic = metadata.topics.get(args.topic)
        if topic is None or topic.error is not None or not topic.partitions:
            raise CliError(f"topic {args.topic!r} not found: {topic.error if topic else 'no metadata'}")
        start = ck.OFFSET_END if args.from_latest else ck.OFFSET_BEGINNING
        consumer.assign([ck.TopicPartition(args.topic, p, start) for p in sorted(topic.partitions)])
        stats.started, stats.started_wall = time.monotonic(), time.time()
        last = time.monotonic()
        while stats.messages < args.messages:
            batch = consumer.consume(num_messages=min(10_000, args.messages - stats.messages), timeout=0.5)
            now = time.monotonic()
            if not batch:
                if (now - last) * 1000 >= args.timeout:
                    break
                continue
            if stats.first_record is None:
                stats.first_record = now
            last = now
            for msg in batch:
                if msg.error() is not None:
                    if msg.error().code() == ck.KafkaError._PARTITION_EOF:
                        continue
                    raise CliError(f"confluent-kafka: {msg.error()}")
                stats.messages += 1
                stats.bytes += len(msg.value() or b"")
        stats.finished = time.monotonic()
    finally:
        consumer.close()


def _consume_zkafka(args: argparse.Namespace, props: dict[str, str], stats: ConsumeStats) -> None:
    from zkafka.cli.topics import client_errors
    from zkafka.client.config import consumer_kwargs

    kwargs = _zkafka_kwargs(props, consumer_kwargs, "--consumer.config/--consumer-props")
    kwargs.setdefault("max_poll_records", 10_000)
    with client_errors():
        _run_fast(_consume_zkafka_async(args, kwargs, stats))


async def _consume_zkafka_async(
    args: argparse.Namespace, kwargs: dict[str, Any], stats: ConsumeStats
) -> None:
    from zkafka.client.consumer import Consumer

    async with Consumer(args.bootstrap_server, **kwargs) as consumer:
        await consumer.assign_topic(args.topic)
        if args.from_latest:
            consumer.seek_to_end()
        else:
            consumer.seek_to_beginning()
        stats.started, stats.started_wall = time.monotonic(), time.time()
        last = time.monotonic()
        while stats.messages < args.messages:
            records = await consumer.poll(500)
            now = time.monotonic()
            if not records:
                if (now - last) * 1000 >= args.timeout:
                    break
                continue
            if stats.first_record is None:
                stats.first_record = now
            last = now
            records = records[: args.messages - stats.messages]
            stats.messages += len(records)
            stats.bytes += sum(len(r.value) for r in records if r.value is not None)
        stats.finished = time.monotonic()


# -- standalone entry point ----------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="zkafka perf", description="client load tests")
    add_client_perf_commands(parser.add_subparsers(dest="perf_command", metavar="TEST", required=True))
    args = parser.parse_args(argv)
    try:
        fill_from_local_cluster(args)
        return int(args.func(args) or 0)
    except CliError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

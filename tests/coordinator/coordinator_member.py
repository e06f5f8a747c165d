"""A group member in its own process (so a test can SIGKILL it): a consumer that prints "started"
once, "assigned <sorted partitions>" whenever its assignment changes, and
"<partition> <offset> <value>" for every record it gets, committing synchronously after printing
(at-least-once). Runs until killed or until stdin closes (then it closes the consumer gracefully).
A commit that fails (a rebalance, a coordinator moving) is reported on stderr and not retried: the
records come back to whoever owns the partition next. A poll that raises (kafka-python passes on
what its heartbeat or fetch saw) is reported there too, and the member polls again.

    python coordinator_member.py BOOTSTRAP GROUP TOPIC [CLIENT]

CLIENT is one of kafka-python (the default), confluent (confluent-kafka / librdkafka) and aiokafka.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterable

SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 500
MAX_POLL_RECORDS = 20


def say(lines: Iterable[str]) -> None:
    text = "\n".join(lines)
    if text:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def complain(what: str, error: BaseException) -> None:
    sys.stderr.write(f"{what}: {type(error).__name__}: {error}\n")
    sys.stderr.flush()


class Assignment:
    """Prints "assigned ..." when the set of owned partitions differs from the last one printed."""

    def __init__(self) -> None:
        self.last: set[int] | None = None

    def update(self, now: set[int]) -> None:
        if now != self.last:
            self.last = now
            say(["assigned " + " ".join(map(str, sorted(now)))])


def stdin_watcher() -> threading.Event:
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    return stop


def python_client_settings(bootstrap: str, group: str) -> dict[str, object]:
    """kafka-python and aiokafka take the same consumer settings."""
    return {
        "bootstrap_servers": bootstrap,
        "group_id": group,
        "client_id": f"member-{group}",
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "session_timeout_ms": SESSION_TIMEOUT_MS,
        "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
        "max_poll_records": MAX_POLL_RECORDS,
    }


def run_kafka_python(bootstrap: str, group: str, topic: str) -> None:
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError

    stop = stdin_watcher()
    consumer = KafkaConsumer(topic, **python_client_settings(bootstrap, group))
    say(["started"])
    assignment = Assignment()
    try:
        while not stop.is_set():
            try:
                batch = consumer.poll(200)
            except KafkaError as e:
                # kafka-python raises what its heartbeat or fetch saw (a coordinator that died
                # mid-request); an application logs it and polls again, as this one does
                complain("poll failed", e)
                continue
            assignment.update({tp.partition for tp in consumer.assignment()})
            lines = [f"{r.partition} {r.offset} {r.value.decode()}" for rs in batch.values() for r in rs]
            if lines:
                say(lines)
                try:
                    consumer.commit()
                except KafkaError as e:
                    complain("commit failed", e)
    finally:
        consumer.close()


def run_confluent(bootstrap: str, group: str, topic: str) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    stop = stdin_watcher()
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": f"member-{group}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
        }
    )
    consumer.subscribe([topic])
    say(["started"])
    assignment = Assignment()
    try:
        while not stop.is_set():
            batch = consumer.consume(MAX_POLL_RECORDS, 0.2)
            assignment.update({tp.partition for tp in consumer.assignment()})
            records = [m for m in batch if m.error() is None]
            for m in batch:
                if m.error() is not None:
                    sys.stderr.write(f"consume error: {m.error()}\n")
            if records:
                say(f"{m.partition()} {m.offset()} {m.value().decode()}" for m in records)
                ends: dict[int, int] = {}
                for m in records:
                    ends[m.partition()] = max(ends.get(m.partition(), 0), m.offset() + 1)
                try:
                    consumer.commit(
                        offsets=[TopicPartition(topic, p, o) for p, o in sorted(ends.items())],
                        asynchronous=False,
                    )
                except KafkaException as e:
                    complain("commit failed", e)
    finally:
        consumer.close()


def run_aiokafka(bootstrap: str, group: str, topic: str) -> None:
    async def main() -> None:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.errors import KafkaError

        loop = asyncio.get_running_loop()
        stdin_closed = loop.run_in_executor(None, sys.stdin.read)
        consumer = AIOKafkaConsumer(topic, **python_client_settings(bootstrap, group))
        await consumer.start()
        say(["started"])
        assignment = Assignment()
        try:
            while not stdin_closed.done():
                batch = await consumer.getmany(timeout_ms=200)
                assignment.update({tp.partition for tp in consumer.assignment()})
                lines = [f"{r.partition} {r.offset} {r.value.decode()}" for rs in batch.values() for r in rs]
                if lines:
                    say(lines)
                    try:
                        await consumer.commit()
                    except KafkaError as e:
                        complain("commit failed", e)
        finally:
            await consumer.stop()

    asyncio.run(main())


CLIENTS = {"kafka-python": run_kafka_python, "confluent": run_confluent, "aiokafka": run_aiokafka}


def main() -> None:
    bootstrap, group, topic = sys.argv[1:4]
    client = sys.argv[4] if len(sys.argv) > 4 else "kafka-python"
    CLIENTS[client](bootstrap, group, topic)


if __name__ == "__main__":
    main()

"""Shared by the Spark tests: topics, producing known records, reading a query's results."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from zkafka.client import AdminClient, Producer, RecordMetadata

Record = tuple[int | None, bytes | None, bytes | None, int | None]
"""partition, key, value, timestamp in ms (None: let the producer choose)."""


def topic_name(prefix: str = "spark") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int = 1,
    replication: int = 1,
    configs: dict[str, str] | None = None,
) -> None:
    async def main() -> None:
        async with AdminClient(bootstrap) as admin:
            await admin.create_topic(name, partitions, replication, configs=configs)

    asyncio.run(main())


def add_partitions(bootstrap: str, name: str, total: int) -> None:
    async def main() -> None:
        async with AdminClient(bootstrap) as admin:
            await admin.create_partition(name, total)

    asyncio.run(main())


def offsets(bootstrap: str, name: str, spec: str = "latest") -> dict[int, int]:
    async def main() -> dict[int, int]:
        async with AdminClient(bootstrap) as admin:
            return await admin.topic_offsets(name, spec)

    return asyncio.run(main())


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[Record],
    headers: Sequence[tuple[str, bytes | None]] = (),
    **producer_options: Any,
) -> list[RecordMetadata]:
    async def main() -> list[RecordMetadata]:
        options = {"linger_ms": 2, "enable_idempotence": True, **producer_options}
        async with Producer(bootstrap, **options) as producer:
            futures = [
                await producer.send(topic, value, key, headers=headers, partition=partition, timestamp_ms=ts)
                for partition, key, value, ts in records
            ]
            await producer.flush()
            return [await f for f in futures]

    return asyncio.run(main())


def values(n: int, start: int = 0, partition: int | None = None) -> list[Record]:
    return [(partition, None, b"v%d" % i, None) for i in range(start, start + n)]


def wait_until(predicate: Callable[[], bool], timeout: float, what: str, interval: float = 0.25) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def batch_sizes(query: Any) -> list[int]:
    """Rows of each non-empty micro-batch of a finished or running query."""
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]

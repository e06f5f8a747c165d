"""Shared by the Spark tests: topics, producing known records, reading a query's results."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from zkafka.client import AdminClient, Consumer, Producer, RecordMetadata
from zkafka.client.sync import SyncConsumer
from zkafka.client.types import TopicPartition
from zkafka.testing.spark_cluster import StandaloneCluster, source_root

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


# -- drivers on a standalone cluster (spark_cluster_driver.py) ----------------------------------------

CLUSTER_DRIVER = Path(__file__).with_name("spark_cluster_driver.py")


def start_driver(
    mode: str, args: dict[str, Any], log: Path, environment: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """spark_cluster_driver.py in its own process group, this checkout first on its PYTHONPATH
    (`environment` changes that and more)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([source_root(), os.environ.get("PYTHONPATH", "")])}
    env.update(environment or {})
    return subprocess.Popen(
        [sys.executable, str(CLUSTER_DRIVER), mode, json.dumps(args)],
        stdout=subprocess.PIPE,
        stderr=log.open("wb"),
        env=env,
        start_new_session=True,  # its own group: killed with its JVM and Python workers on failure
    )


def driver_result(driver: subprocess.Popen[bytes], log: Path, timeout: float) -> dict[str, Any]:
    try:
        out, _ = driver.communicate(timeout=timeout)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(30)
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
    assert driver.returncode == 0, f"driver failed ({driver.returncode}):\n{tail}"
    line = next(ln for ln in out.decode().splitlines() if ln.startswith("RESULT "))
    return dict(json.loads(line.removeprefix("RESULT ")))


def kill_worker_mid_stream(
    sc: StandaloneCluster, driver: subprocess.Popen[bytes], checkpoint: Path, log: Path, timeout: float
) -> tuple[dict[str, Any], int]:
    """SIGKILL worker 1 once the streaming query of `driver` committed 3 micro-batches, then wait
    for the driver's result; returns it and how many batches were committed before the kill.
    Worker 1 is started again afterwards, for the next tests."""
    victim = sc.workers[1]
    try:
        wait_until(  # a JVM and its Python workers start slowly on a busy machine
            lambda: driver.poll() is not None or len(committed_batches(checkpoint)) >= 3,
            300,
            "3 committed micro-batches",
        )
        killed_after = len(committed_batches(checkpoint))
        victim.kill()
        result = driver_result(driver, log, timeout)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(30)
        if not victim.alive:
            sc.start_worker(1)
            sc.wait_for_workers()
    return result, killed_after


def workers_of(sc: StandaloneCluster, rows: Iterable[dict[str, Any]]) -> set[int]:
    return {sc.worker_of(r["executor"]) for r in rows}


def positions(rows: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [(r["partition"], r["offset"]) for r in rows]


def read_committed(bootstrap: str, topic: str, partitions: int) -> list[bytes]:
    """Every value a read_committed consumer sees, up to the last stable offsets."""

    async def main() -> list[bytes]:
        async with Consumer(bootstrap, auto_offset_reset="earliest", isolation_level="read_committed") as c:
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            c.assign(tps)
            ends = await c.end_offsets(tps)
            out: list[bytes] = []
            for _ in range(600):
                if all([await c.position(tp) >= ends[tp] for tp in tps]):
                    return out
                out.extend(r.value for r in await c.poll(200))
            raise AssertionError(f"{topic}: positions did not reach {ends}")

    return asyncio.run(main())


# -- a driver SIGKILLed mid-stream (spark_killed_driver.py) ---------------------------------------------

KILLED_DRIVER = Path(__file__).with_name("spark_killed_driver.py")


def committed_batches(checkpoint: Path, log: str = "commits") -> list[int]:
    """The micro-batches in a query's commit log (or its offset log: `log="offsets"`)."""
    entries = checkpoint / log
    return sorted(int(p.name) for p in entries.iterdir() if p.name.isdigit()) if entries.is_dir() else []


def kill_driver_mid_stream(args: list[str], checkpoint: Path, log: Path, batches: int = 3) -> int:
    """Run spark_killed_driver.py with `args` in a process group of its own, SIGKILL the group (JVM
    and Python workers included) once the query committed `batches` micro-batches; returns how
    many it had committed."""
    with log.open("wb") as out:
        driver = subprocess.Popen(
            [sys.executable, str(KILLED_DRIVER), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            wait_until(  # a JVM and its Python workers start slowly on a busy machine
                lambda: len(committed_batches(checkpoint)) >= batches,
                300,
                f"the first driver to commit {batches} micro-batches",
            )
        finally:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(30)
    return len(committed_batches(checkpoint))


def stream_query(
    spark: Any,
    bootstrap: str,
    topic: str,
    sink: str,
    output: str,
    checkpoint: str,
    *,
    max_offsets_per_trigger: int,
    available_now: bool,
) -> Any:
    """Start a query from `topic` into Parquet files at `output` (sink "parquet": partition,
    offset and value of each record) or into the topic `output` (sink "zkafka", exactly once with
    transactions: the values)."""
    records = (
        spark.readStream.format("zkafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
        .load()
    )
    if sink == "parquet":
        writer = (
            records.selectExpr("partition", "offset", "cast(value as string) as v")
            .writeStream.format("parquet")
            .option("path", output)
        )
    else:
        writer = (
            records.select("value")
            .writeStream.format("zkafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", output)
            .option("transactional.id.prefix", f"eos-{output}")
        )
    writer = writer.option("checkpointLocation", checkpoint)
    if available_now:
        return writer.trigger(availableNow=True).start()
    return writer.trigger(processingTime="100 milliseconds").start()


def read_topic(bootstrap: str, topic: str, partitions: int, expected: int) -> list[tuple[bytes, bytes]]:
    records: list[Any] = []
    with SyncConsumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        wait_until(
            lambda: len(records) >= expected or bool(records.extend(consumer.poll(500))), 30, "records"
        )
    return [(r.key, r.value) for r in records]

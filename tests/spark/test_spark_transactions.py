"""Transactions and Spark: the source with kafka.isolation.level=read_committed never puts an
aborted record in a DataFrame, and the sink with transactional.id.prefix writes a stream exactly
once across a driver SIGKILL and the replay of a micro-batch whose rows were already written,
and across a worker SIGKILLed mid-stream on a standalone cluster (its tasks, some in the middle
of their transactions, run again on the other worker)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import (
    committed_batches,
    create_topic,
    kill_driver_mid_stream,
    kill_worker_mid_stream,
    produce,
    read_committed,
    start_driver,
    stream_query,
    topic_name,
)

from zkafka.client import Producer
from zkafka.local.launcher import LocalCluster
from zkafka.testing.spark_cluster import StandaloneCluster

RECORDS = 800


def _transactions(bootstrap: str, topic: str) -> None:
    """Committed c0..c9, aborted a0..a9, committed c10..c14, over two partitions."""

    async def main() -> None:
        async with Producer(bootstrap, transactional_id=topic_name("tid")) as producer:
            await producer.init_transactions()
            for values, commit in (
                (range(10), True),
                (range(10), False),
                (range(10, 15), True),
            ):
                await producer.begin_transaction()
                for i in values:
                    await producer.send(topic, (b"c%d" if commit else b"a%d") % i, partition=i % 2)
                if commit:
                    await producer.commit_transaction()
                else:
                    await producer.flush()  # in the log, then aborted
                    await producer.abort_transaction()

    asyncio.run(main())


@pytest.mark.timeout(180)
def test_read_committed_source_never_sees_aborted_records(spark: Any, bootstrap: str) -> None:
    name = topic_name("txn-src")
    create_topic(bootstrap, name, 2)
    _transactions(bootstrap, name)

    def values(**options: str) -> list[str]:
        reader = spark.read.format("zkafka").option("kafka.bootstrap.servers", bootstrap)
        for key, value in options.items():
            reader = reader.option(key, value)
        return sorted(
            r.v
            for r in reader.option("subscribe", name).load().selectExpr("cast(value as string) v").collect()
        )

    committed = sorted(f"c{i}" for i in range(15))
    assert values(**{"kafka.isolation.level": "read_committed"}) == committed
    assert values() == sorted(committed + [f"a{i}" for i in range(10)])


@pytest.mark.timeout(540)
def test_transactional_sink_is_exactly_once_across_driver_kill_and_replay(
    spark: Any, bootstrap: str, tmp_path: Path
) -> None:
    source, sink = topic_name("eos-in"), topic_name("eos-out")
    create_topic(bootstrap, source, 2)
    create_topic(bootstrap, sink, 2)
    produce(bootstrap, source, [(i % 2, None, b"%d" % i, None) for i in range(RECORDS)])
    checkpoint = tmp_path / "ckpt"
    done_before = kill_driver_mid_stream(
        ["zkafka", bootstrap, source, sink, str(checkpoint)], checkpoint, tmp_path / "driver.log"
    )
    assert 3 <= done_before < RECORDS // 40, "the kill should land in the middle of the stream"
    # Spark replays the last batch of its offset log unless the commit log has it. When the kill
    # landed between batches, make it the worst moment of a crash instead: the sink's
    # transactions of that batch committed, Spark's commit log entry not yet written (the state
    # a driver dying right after the tasks leaves). At-least-once would write it twice.
    replayed = committed_batches(checkpoint, "offsets")[-1]
    for path in (checkpoint / "commits" / str(replayed), checkpoint / "commits" / f".{replayed}.crc"):
        path.unlink(missing_ok=True)

    query = stream_query(
        spark,
        bootstrap,
        source,
        "zkafka",
        sink,
        str(checkpoint),
        max_offsets_per_trigger=400,
        available_now=True,
    )
    query.awaitTermination(180)
    assert query.exception() is None
    first = min(query.recentProgress, key=lambda p: int(p["batchId"]))
    assert int(first["batchId"]) == replayed and first["numInputRows"] > 0  # the replay happened

    values = read_committed(bootstrap, sink, 2)
    assert len(values) == RECORDS  # nothing doubled
    assert sorted(int(v) for v in values) == list(range(RECORDS))  # nothing lost


@pytest.mark.timeout(600)
def test_transactional_sink_is_exactly_once_across_a_worker_kill(
    spark_standalone: StandaloneCluster, three_brokers: LocalCluster, tmp_path: Path
) -> None:
    bootstrap = three_brokers.bootstrap_servers
    source, sink = topic_name("eos-w-in"), topic_name("eos-w-out")
    create_topic(bootstrap, source, 4)
    create_topic(bootstrap, sink, 3)
    records = 4000
    produce(bootstrap, source, [(i % 4, None, b"%d" % i, None) for i in range(records)])
    checkpoint, log = tmp_path / "ckpt", tmp_path / "driver.log"
    args = {
        "master": spark_standalone.master_url,
        "conf": spark_standalone.app_conf(),
        "bootstrap": bootstrap,
        "topic": source,
        "output": sink,
        "checkpoint": str(checkpoint),
        "max_per_trigger": 200,  # 20 micro-batches: the kill lands in the middle
    }
    _, killed_after = kill_worker_mid_stream(
        spark_standalone, start_driver("stream_eos", args, log), checkpoint, log, 300
    )
    assert killed_after < records // 200 - 2, "the kill should land in the middle of the stream"

    values = read_committed(bootstrap, sink, 3)
    assert len(values) == records  # nothing doubled
    assert sorted(int(v) for v in values) == list(range(records))  # nothing lost

"""Broker consume capacity: a batch-header-only fetch client beside kcat and librdkafka (issue 17).

    PYTHONPATH=src .venv/bin/python benchmarks/consume_capacity.py [--records 1000000]
        [--record-size 100] [--partitions 1] [--rounds 1]

What the broker can serve, not what a client can decode: one broker process, one topic of
`--partitions` partitions (RF 1) filled with `--records` records of `--record-size` bytes by
confluent-kafka (linger 5 ms, so batches of realistic size), then read from the beginning to the
end by:
1. **headers**: zkafka's own `BrokerConnection` sending Fetch requests back to back (50 MiB per
   response, 10 MiB per partition) and counting records from each batch header's record count
   (`zkafka.records.iter_headers`); no record is ever decoded, so the client costs little more
   than the socket reads;
2. **kcat**: `kcat -C -e -o beginning -q` with the fetch sizes raised, its output to /dev/null;
3. **librdkafka**: confluent-kafka's Consumer (assigned partitions, `consume(100000)` batches).

For each: records/s, MiB/s of batches served, and the broker's CPU seconds (user + system from
/proc/<pid>/stat) per GiB served. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _cluster import cpu_seconds
from rich.console import Console
from rich.table import Table

from zkafka.client.connection import BrokerConnection
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol.messages import FetchRequest, FetchResponse
from zkafka.records import iter_headers
from zkafka.testing.cluster import running_cluster

FETCH_VERSION = 11  # what zkafka's own consumer sends (no topic ids)
GIB = 1024**3


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)


def fill(bootstrap: str, topic: str, records: int, size: int) -> None:
    from confluent_kafka import Producer

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 2_000_000,
            "compression.type": "none",
        }
    )
    payload = b"x" * size
    for _ in range(records):
        while True:
            try:
                p.produce(topic, payload)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(300) == 0


async def _read_headers(port: int, topic: str, partitions: int) -> tuple[int, int]:
    """(records, bytes of batches) of the whole topic, counted from batch headers only."""
    conn = await BrokerConnection.open("127.0.0.1", port)
    positions = dict.fromkeys(range(partitions), 0)
    ends: dict[int, int] = {}
    records = size = 0
    try:
        while positions:
            request = FetchRequest(
                replica_id=-1,
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=52_428_800,
                isolation_level=0,
                session_id=0,
                session_epoch=-1,
                topics=[
                    FetchRequest.FetchTopic(
                        topic=topic,
                        partitions=[
                            FetchRequest.FetchPartition(
                                partition=p,
                                current_leader_epoch=-1,
                                fetch_offset=offset,
                                last_fetched_epoch=-1,
                                log_start_offset=-1,
                                partition_max_bytes=10_485_760,
                            )
                            for p, offset in positions.items()
                        ],
                    )
                ],
            )
            resp = await conn.send(request, version=FETCH_VERSION, timeout=60)
            assert isinstance(resp, FetchResponse) and resp.error_code == 0, resp
            for data in resp.responses[0].partitions:
                assert data.error_code == 0, data
                p = data.partition_index
                ends[p] = data.high_watermark
                for header in iter_headers(data.records or b""):
                    if header.next_offset > positions[p]:
                        records += header.records_count
                        size += header.size
                        positions[p] = header.next_offset
                if positions[p] >= ends[p]:
                    del positions[p]
    finally:
        conn.close()
    return records, size


def read_headers(bootstrap: str, topic: str, partitions: int, expected: int) -> int:
    port = int(bootstrap.split(",")[0].rsplit(":", 1)[1])
    records, size = asyncio.run(_read_headers(port, topic, partitions))
    assert records == expected, (records, expected)
    return size


def read_kcat(bootstrap: str, topic: str, partitions: int, expected: int) -> int:
    command = ["kcat", "-C", "-b", bootstrap, "-t", topic, "-e", "-o", "beginning", "-q"]
    fetch_sizes = ["-X", "fetch.max.bytes=52428800", "-X", "fetch.message.max.bytes=10485760"]
    with open(os.devnull, "wb") as sink:
        subprocess.run([*command, *fetch_sizes, "-f", "%o\n"], stdout=sink, check=True, timeout=600)
    return 0


def read_librdkafka(bootstrap: str, topic: str, partitions: int, expected: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "consume-capacity",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52_428_800,
            "max.partition.fetch.bytes": 10_485_760,
            "queued.max.messages.kbytes": 1_000_000,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = 0
    while got < expected:
        got += len(c.consume(100_000, timeout=1))
    c.close()
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--record-size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=1, help="reads per client (best kept)")
    ap.add_argument("--clients", default="headers,kcat,librdkafka", help="which readers, comma-separated")
    args = ap.parse_args()
    console = Console(width=150)
    console.print(f"cpus {os.cpu_count()}; load average {os.getloadavg()[0]:.2f}")
    readers: dict[str, Callable[[str, str, int, int], int]] = {
        "headers": read_headers,
        "kcat": read_kcat,
        "librdkafka": read_librdkafka,
    }
    topic = "capacity"
    rows = []
    with (
        ZooKeeperServer() as zk,
        tempfile.TemporaryDirectory() as tmp,
        running_cluster(zk, Path(tmp), brokers=1) as cluster,
    ):
        pid = cluster.brokers[1].pid
        bootstrap = cluster.bootstrap_servers
        create_topic(bootstrap, topic, args.partitions)
        t0 = time.perf_counter()
        fill(bootstrap, topic, args.records, args.record_size)
        console.print(f"filled {args.records:,} records in {time.perf_counter() - t0:.1f} s")
        served = 0
        for name in args.clients.split(","):
            best = None
            for _ in range(args.rounds):
                cpu0, t0 = cpu_seconds(pid), time.perf_counter()
                size = readers[name](bootstrap, topic, args.partitions, args.records)
                wall, cpu = time.perf_counter() - t0, cpu_seconds(pid) - cpu0
                served = size or served  # the header reader measures the bytes served
                if best is None or wall < best[0]:
                    best = (wall, cpu)
            assert best is not None
            rows.append((name, *best))
    table = Table(
        title=f"consume {args.records:,} x {args.record_size} B records, {args.partitions} partition(s), "
        f"{served / 2**20:,.0f} MiB of batches, load average {os.getloadavg()[0]:.2f}"
    )
    for column in ("client", "records/s", "MiB/s", "broker CPU-s", "broker CPU-s per GiB"):
        table.add_column(column, justify="right")
    for name, wall, cpu in rows:
        gib = served / GIB
        table.add_row(
            name,
            f"{args.records / wall:,.0f}",
            f"{served / 2**20 / wall:,.0f}",
            f"{cpu:.2f}",
            f"{cpu / gib:.2f}" if gib else "?",
        )
    console.print(table)
    if "headers" not in args.clients:
        console.print("(bytes served are measured by the headers client: include it for MiB/s and CPU/GiB)")


if __name__ == "__main__":
    main()

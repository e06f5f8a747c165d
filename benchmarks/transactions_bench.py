"""Transactional produce throughput as a share of idempotent produce, in the same run.

    .venv/bin/python benchmarks/transactions_bench.py [--records 200000] [--record-size 100] \
        [--per-transaction 1000] [--partitions 3]

Starts ZooKeeper and one broker process, creates two topics with `--partitions` partitions, then
with confluent-kafka (librdkafka):
1. an idempotent producer (enable.idempotence, acks=all) writes N records: records/s;
2. a transactional producer writes the same N records in transactions of `--per-transaction`
   records (begin, produce, commit): records/s, and transactions/s;
3. a read_committed consumer reads the transactional topic back: records/s.
Prints the transactional rate as a share of the idempotent one (issue 15 aims at 80 % or more).
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table

from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster


def _create(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(60)


def idempotent(bootstrap: str, topic: str, n: int, size: int) -> float:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    value = b"x" * size
    start = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(120)
    return time.perf_counter() - start


def transactional(bootstrap: str, topic: str, n: int, size: int, per_txn: int) -> float:
    from confluent_kafka import Producer

    p = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"bench-{uuid.uuid4().hex[:6]}", "linger.ms": 5}
    )
    p.init_transactions(60)
    value = b"x" * size
    start = time.perf_counter()
    done = 0
    while done < n:
        p.begin_transaction()
        for _ in range(min(per_txn, n - done)):
            while True:
                try:
                    p.produce(topic, value)
                    break
                except BufferError:
                    p.poll(0.01)
        done += min(per_txn, n - done)
        p.commit_transaction(120)
    return time.perf_counter() - start


def read_committed(bootstrap: str, topic: str, n: int) -> float:
    from confluent_kafka import Consumer

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    seen = 0
    start = time.perf_counter()
    while seen < n:
        for m in c.consume(1000, 1.0):
            if m.error() is None:
                seen += 1
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--record-size", type=int, default=100)
    ap.add_argument("--per-transaction", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=3)
    args = ap.parse_args()
    overrides = {"transaction.state.log.num.partitions": "5", "transaction.state.log.replication.factor": "1"}
    with (
        tempfile.TemporaryDirectory() as tmp,
        ZooKeeperServer() as zk,
        running_cluster(zk, Path(tmp), brokers=1, overrides=overrides) as cluster,
    ):
        b = cluster.bootstrap_servers
        for topic in ("idem", "txn", "warmup"):
            _create(b, topic, args.partitions)
        transactional(b, "warmup", 10_000, args.record_size, args.per_transaction)
        idem_s = idempotent(b, "idem", args.records, args.record_size)
        txn_s = transactional(b, "txn", args.records, args.record_size, args.per_transaction)
        read_s = read_committed(b, "txn", args.records)
    n = args.records
    table = Table(
        title=f"{n:,} records of {args.record_size} B, 1 broker, {args.partitions} partitions, "
        f"transactions of {args.per_transaction}"
    )
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("idempotent produce records/s", f"{n / idem_s:,.0f}")
    table.add_row("transactional produce records/s", f"{n / txn_s:,.0f}")
    table.add_row("transactions/s", f"{n / args.per_transaction / txn_s:,.1f}")
    table.add_row("transactional share of idempotent", f"{idem_s / txn_s:.0%}")
    table.add_row("read_committed consume records/s", f"{n / read_s:,.0f}")
    Console().print(table)


if __name__ == "__main__":
    main()

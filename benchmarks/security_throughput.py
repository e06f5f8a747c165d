"""Produce and consume records/s over SASL_SSL (SCRAM-SHA-512, TLS) as a share of PLAINTEXT, same run.

    .venv/bin/python benchmarks/security_throughput.py [--records 500000] [--record-size 100] [--rounds 2]

One broker process with a PLAINTEXT and a SASL_SSL listener (certificates made by trustme for the run,
a SCRAM-SHA-512 user written to ZooKeeper), one partition per topic, acks=1. Each round produces
`--records` records with confluent-kafka (librdkafka, so the client is not the Python bottleneck) to a
fresh topic over PLAINTEXT, then to another over SASL_SSL, and consumes each back with
confluent-kafka's batch `consume()`; the order of the two alternates between rounds. Prints records/s
per round and the SASL_SSL share of PLAINTEXT (median over rounds). Nothing here is asserted; the
issue's aim is at least 70 %.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trustme

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer, free_port
from zkafka.security.scram import upsert_credential
from zkafka.testing.cluster import TEST_BROKER_DEFAULTS, wait_until_ready
from zkafka.testing.zookeeper import new_chroot
from zkafka.zk.client import KafkaZkClient

USER, PASSWORD = "bench", "bench-secret"


def produce(config: dict[str, Any], topic: str, n: int, size: int) -> float:
    from confluent_kafka import Producer

    p = Producer(
        {
            **config,
            "acks": "1",
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 2_000_000,
            "compression.type": "none",
        }
    )
    payload = b"x" * size
    start = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                p.produce(topic, payload)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(300) == 0
    return time.perf_counter() - start


def consume(config: dict[str, Any], topic: str, n: int) -> float:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            **config,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52_428_800,
            "max.partition.fetch.bytes": 10_485_760,
            "queued.max.messages.kbytes": 1_000_000,
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    got = 0
    start = time.perf_counter()
    while got < n:
        got += len(c.consume(100_000, timeout=1))
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--record-size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="zkafka-secbench-"))
    ca = trustme.CA()
    keystore, ca_path = work / "broker.pem", work / "ca.pem"
    ca.issue_cert("localhost", "127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(keystore))
    ca.cert_pem.write_to_path(str(ca_path))
    zk = ZooKeeperServer(data_dir=work / "zk", force_sync=False)
    zk.start()
    cluster = LocalCluster(work / "cluster", zookeeper_connect=zk.connect_string + new_chroot("secbench"))
    try:
        with KafkaZkClient(cluster.zookeeper_connect) as client:
            upsert_credential(client, USER, "SCRAM-SHA-512", PASSWORD, 4096)
        plaintext, sasl_ssl = free_port(), free_port()
        cluster.broker_overrides.update(TEST_BROKER_DEFAULTS)
        cluster.add_broker(
            1,
            {
                "listeners": f"PLAINTEXT://127.0.0.1:{plaintext},SASL_SSL://127.0.0.1:{sasl_ssl}",
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(keystore),
                "sasl.enabled.mechanisms": "SCRAM-SHA-512",
                "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                ),
            },
            port=plaintext,
        )
        cluster.start_broker(1)
        wait_until_ready(cluster, 60)
        configs = {
            "PLAINTEXT": {"bootstrap.servers": f"127.0.0.1:{plaintext}"},
            "SASL_SSL": {
                "bootstrap.servers": f"127.0.0.1:{sasl_ssl}",
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": USER,
                "sasl.password": PASSWORD,
                "ssl.ca.location": str(ca_path),
            },
        }
        rates: dict[tuple[str, str], list[float]] = {}
        produce(configs["PLAINTEXT"], "warm-up", 50_000, args.record_size)
        for r in range(args.rounds):
            order = ["PLAINTEXT", "SASL_SSL"] if r % 2 == 0 else ["SASL_SSL", "PLAINTEXT"]
            for kind in order:
                topic = f"bench-{kind.lower()}-{r}"
                p = args.records / produce(configs[kind], topic, args.records, args.record_size)
                c = args.records / consume(configs[kind], topic, args.records)
                rates.setdefault((kind, "produce"), []).append(p)
                rates.setdefault((kind, "consume"), []).append(c)
                print(f"round {r + 1} {kind:10} produce {p:>12,.0f} records/s  consume {c:>12,.0f} records/s")
        print()
        for what in ("produce", "consume"):
            plain = statistics.median(rates[("PLAINTEXT", what)])
            secure = statistics.median(rates[("SASL_SSL", what)])
            print(
                f"{what:8} PLAINTEXT {plain:>12,.0f} records/s  SASL_SSL {secure:>12,.0f} records/s  "
                f"share {secure / plain:6.1%}"
            )
    finally:
        for bid in list(cluster.brokers):
            if cluster.broker_alive(bid):
                cluster.stop_broker(bid, timeout=20)
        zk.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Failover window: how long survivors' Metadata lags ZooKeeper's new leader; what fresh clients get.

    PYTHONPATH=src .venv/bin/python benchmarks/failover_metadata_window.py [--rounds 8] [--wait-metadata]

Per round, on 3 brokers: a topic of one partition on every broker, led by the controller; SIGKILL
that broker (leader and controller at once, the case where the new controller first sends an
UpdateMetadata of the live brokers only, as Kafka's onControllerFailover does); poll ZooKeeper
every 2 ms until the partition's state names a new leader, while a thread polls every survivor's
Metadata for the partition (zkafka's client) without pause; then start fresh confluent-kafka
consumers 0, 5, 10, 20, 40 and 80 ms after the ZooKeeper change (`--wait-metadata`: after every
survivor's Metadata names the new leader) and call `get_watermark_offsets`; restart the broker.
Prints per round the last moment a survivor named no leader (-1) and the dead one, relative to the
state znode's write (its mtime), when the poll saw that write, and what the consumers got; asserts
nothing.
docs/reliability.md ("What clients are told while a dead leader is replaced") has the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import threading
import time
from pathlib import Path

from kazoo.client import KazooClient

from zkafka.client.connection import BrokerConnection
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol.messages import MetadataRequest
from zkafka.testing.cluster import running_cluster, wait_until_ready

DELAYS_S = (0.0, 0.005, 0.01, 0.02, 0.04, 0.08)
Answer = tuple[float, int, int, int]
"""(time.time() when the answer arrived, broker, leader named, partition error code)"""


def poll_metadata(
    cluster: LocalCluster, brokers: list[int], topic: str, stop: threading.Event, answers: list[Answer]
) -> None:
    """Append every answer of `brokers` to a Metadata request for `topic`, asked back to back until
    `stop`, to `answers` as it arrives (the main thread reads it meanwhile)."""

    async def one(broker: int) -> None:
        conn: BrokerConnection | None = None
        request = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False
        )
        while not stop.is_set():
            try:
                if conn is None or conn.is_closed:
                    conn = await BrokerConnection.open("127.0.0.1", cluster.brokers[broker].port, timeout=2)
                response = await conn.send(request, timeout=2)
                p = response.topics[0].partitions[0]
                answers.append((time.time(), broker, p.leader_id, p.error_code))
            except (ConnectionError, TimeoutError, IndexError):
                conn = None
                await asyncio.sleep(0.01)
        if conn is not None:
            conn.close()

    async def main() -> None:
        await asyncio.gather(*(one(b) for b in brokers))

    asyncio.run(main())


def earliest(bootstrap: str, topic: str) -> str:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return f"({low},{high})"
    except KafkaException as e:
        return str(e.args[0].name())
    finally:
        consumer.close()


def leader_in_zk(zk: KazooClient, topic: str) -> tuple[int, float]:
    """The partition's leader in its state znode, and when that znode was last written (its mtime:
    ZooKeeper's clock, this machine's, so comparable with time.time())."""
    data, stat = zk.get(f"/brokers/topics/{topic}/partitions/0/state")
    return int(json.loads(data)["leader"]), stat.mtime / 1000


def one_round(cluster: LocalCluster, zk: KazooClient, n: int, wait_metadata: bool) -> tuple[int, int]:
    from confluent_kafka.admin import AdminClient, NewTopic

    controller = int(json.loads(zk.get("/controller")[0])["brokerid"])
    survivors = [b for b in sorted(cluster.brokers) if b != controller]
    topic = f"window-{n}-{os.getpid()}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[[controller, *survivors]])])[topic].result(30)
    while not all(
        AdminClient({"bootstrap.servers": cluster.brokers[b].bootstrap})
        .list_topics(topic, timeout=5)
        .topics[topic]
        .partitions.get(0, None)
        is not None
        for b in sorted(cluster.brokers)
    ):
        time.sleep(0.1)
    stop = threading.Event()
    answers: list[Answer] = []
    poller = threading.Thread(
        target=poll_metadata, args=(cluster, survivors, topic, stop, answers), daemon=True
    )
    poller.start()
    cluster.kill_broker(controller)
    deadline = time.monotonic() + 60
    while (new := leader_in_zk(zk, topic)[0]) in (-1, controller):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no new leader for {topic} in ZooKeeper")
        time.sleep(0.002)
    changed, seen = time.monotonic(), time.time()
    written = leader_in_zk(zk, topic)[1]
    while wait_metadata:
        latest = {b: leader for _, b, leader, _ in answers[-20:]}
        if all(latest.get(b) == new for b in survivors):
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"survivors' Metadata never named {new} for {topic}")
        time.sleep(0.002)
    bootstrap = ",".join(cluster.brokers[b].bootstrap for b in survivors)
    results: list[str] = [""] * len(DELAYS_S)
    threads = []
    for i, delay in enumerate(DELAYS_S):
        while time.monotonic() - changed < delay:
            time.sleep(0.001)
        t = threading.Thread(target=lambda i=i: results.__setitem__(i, earliest(bootstrap, topic)))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    time.sleep(0.2)
    stop.set()
    poller.join()

    def last_ms(leader: int) -> str:
        times = [at for at, _, named, _ in answers if named == leader]
        return f"{(max(times) - written) * 1000:+.0f} ms" if times else "never"

    failed = sum(1 for r in results if not r.startswith("("))
    print(
        f"round {n}: killed {controller} (leader and controller), new leader {new}, ZooKeeper's write seen "
        f"{(seen - written) * 1000:.0f} ms after it was made; survivors last named no leader "
        f"{last_ms(-1)}, the dead one {last_ms(controller)} after the write; consumers: {' '.join(results)}",
        flush=True,
    )
    cluster.start_broker(controller)
    wait_until_ready(cluster, 60)
    return failed, len(results)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument(
        "--wait-metadata", action="store_true", help="start the consumers once every survivor names it"
    )
    ap.add_argument("--session-timeout-ms", type=int, default=4000)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
    overrides = {
        "zookeeper.session.timeout.ms": str(args.session_timeout_ms),
        "auto.leader.rebalance.enable": "false",
    }
    with (
        tempfile.TemporaryDirectory() as tmp,
        ZooKeeperServer() as zkserver,
        running_cluster(zkserver, Path(tmp), brokers=3, overrides=overrides) as cluster,
    ):
        zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
        zk.start(15)
        try:
            failed = total = 0
            for n in range(args.rounds):
                f, t = one_round(cluster, zk, n, args.wait_metadata)
                failed, total = failed + f, total + t
        finally:
            zk.stop()
            zk.close()
    print(
        f"{failed} of {total} get_watermark_offsets calls failed "
        f"({'after' if args.wait_metadata else 'without'} waiting for the survivors' Metadata); "
        f"load average {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()

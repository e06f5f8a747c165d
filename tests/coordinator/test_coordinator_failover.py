"""Coordinator failover: three brokers, `__consumer_offsets` with replication factor 3; the group's
coordinator is SIGKILLed, a new leader of its offsets partition loads the group from the log,
and every acknowledged commit survives."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest

from zkafka.client.group_admin import GroupAdmin
from zkafka.client.types import TopicPartition
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster

OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "3",
    "offsets.topic.replication.factor": "3",
    "default.replication.factor": "3",
    "zookeeper.session.timeout.ms": "3000",
    # the last broker standing cannot hand its leaderships to anyone: skip the retries at teardown
    "controlled.shutdown.enable": "false",
}


def test_commits_survive_coordinator_sigkill(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTP
    from kafka.admin import KafkaAdminClient, NewTopic

    topic, group = f"fo-{uuid.uuid4().hex[:8]}", f"fo-group-{uuid.uuid4().hex[:8]}"
    with running_cluster(zookeeper_server, tmp_path, brokers=3, overrides=OVERRIDES) as cluster:
        b = cluster.bootstrap_servers
        admin = KafkaAdminClient(bootstrap_servers=b)
        admin.create_topics([NewTopic(topic, 3, 3)])
        admin.close()
        producer = KafkaProducer(bootstrap_servers=b, acks="all")
        for i in range(300):
            producer.send(topic, str(i).encode(), partition=i % 3)
        producer.flush()
        producer.close()

        consumer = KafkaConsumer(
            topic,
            bootstrap_servers=b,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            max_poll_records=10,
        )
        seen: list[int] = []
        while len(seen) < 150:
            for records in consumer.poll(200).values():
                seen.extend(int(r.value) for r in records)
        consumer.commit()  # acknowledged once replicated to the offsets partition's ISR
        committed = {tp.partition: consumer.committed(tp) for tp in (KTP(topic, p) for p in range(3))}
        consumer.close()
        assert sum(committed.values()) == len(seen)

        async def coordinator() -> int:
            async with GroupAdmin(b) as groups:
                return await groups.coordinator(group)

        victim = asyncio.run(coordinator())
        cluster.kill_broker(victim)
        alive = ",".join(br.bootstrap for bid, br in cluster.brokers.items() if bid != victim)

        async def after_failover() -> tuple[int, dict[TopicPartition, int], float]:
            started = time.monotonic()
            async with GroupAdmin(alive, request_timeout_ms=30_000) as groups:
                deadline = time.monotonic() + 30
                while True:
                    new = await groups.coordinator(group, refresh=True)
                    if new != victim:
                        break
                    assert time.monotonic() < deadline, "no new coordinator"
                    await asyncio.sleep(0.2)
                offsets = await groups.committed_offsets(group)
                return new, offsets, time.monotonic() - started

        new_coordinator, offsets, took = asyncio.run(asyncio.wait_for(after_failover(), 60))
        assert new_coordinator != victim
        assert offsets == {TopicPartition(topic, p): o for p, o in committed.items()}

        # the group keeps working on the new coordinator: a member (librdkafka this time)
        # resumes where the first one stopped
        from confluent_kafka import Consumer

        resumed = Consumer(
            {
                "bootstrap.servers": alive,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 6000,
            }
        )
        resumed.subscribe([topic])
        rest: list[int] = []
        deadline = time.monotonic() + 40
        try:
            while len(rest) < 150 and time.monotonic() < deadline:
                msg = resumed.poll(0.2)
                if msg is not None and msg.error() is None:
                    rest.append(int(msg.value()))
            resumed.commit(asynchronous=False)
        finally:
            resumed.close()
        assert sorted(seen + rest) == list(range(300))
        print(f"coordinator {victim} -> {new_coordinator}; offsets readable again after {took:.1f} s")


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__, "-s"])

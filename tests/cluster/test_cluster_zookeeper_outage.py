"""The whole ZooKeeper down for 30 s under load (issue 11, item 6).

A ZooKeeper server of its own (so no other test's session is touched) is SIGKILLed under an acks=all
and an acks=1 producer, kept down for 30 s and started again on the same port and data. Like Kafka, the
brokers keep serving produce and fetch for the leaderships they have, change no ISR they cannot record,
and when ZooKeeper is back they are still registered, a controller is elected if there was none, and
every acknowledged record is there exactly once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_helpers import (
    BackgroundProducer,
    Cluster,
    check_exactly_once,
    create_topic,
    read_partitions,
    running,
    topic_name,
    wait_for,
)

from zkafka.local.zookeeper import ZooKeeperServer

OUTAGE_S = 30.0


@pytest.fixture
def own_zookeeper(tmp_path: Path) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(data_dir=tmp_path / "zookeeper", force_sync=False)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_brokers_serve_through_a_zookeeper_outage_and_recover(
    own_zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    overrides = {"min.insync.replicas": "2", "zookeeper.session.timeout.ms": "6000"}
    with running(own_zookeeper, tmp_path / "cluster", brokers=3, overrides=overrides) as cluster:
        strict, loose = topic_name("acks-all"), topic_name("acks-one")
        assignment = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
        create_topic(cluster, strict, assignment)
        create_topic(cluster, loose, assignment)
        states_before = {p: cluster.state(strict, p) for p in assignment}
        epochs_before = {b: cluster.broker_epoch(b) for b in cluster.broker_ids}
        controller_before = cluster.controller()

        with (
            BackgroundProducer(cluster.bootstrap, strict, rate=500) as all_acks,
            BackgroundProducer(
                cluster.bootstrap, loose, rate=500, config={"acks": "1", "enable.idempotence": False}
            ) as one_ack,
        ):
            all_acks.wait_acked(200)
            one_ack.wait_acked(200)
            own_zookeeper.kill()
            down_at = time.monotonic()
            acked_at_kill = (len(all_acks.acked), len(one_ack.acked))
            time.sleep(OUTAGE_S)
            acked_during = (len(all_acks.acked) - acked_at_kill[0], len(one_ack.acked) - acked_at_kill[1])
            own_zookeeper.start()
            outage = time.monotonic() - down_at
            _reconnect(cluster)
            all_acks.wait_acked(acked_at_kill[0] + acked_during[0] + 200, timeout=60)
            one_ack.wait_acked(acked_at_kill[1] + acked_during[1] + 200, timeout=60)

        # Produce kept being acknowledged while ZooKeeper was away (~500/s each for 30 s).
        assert acked_during[0] > 0.5 * 500 * OUTAGE_S, (acked_during, outage)
        assert acked_during[1] > 0.5 * 500 * OUTAGE_S, (acked_during, outage)
        assert not all_acks.errors and not one_ack.errors

        # Same registrations (no session was lost), a controller, and the ISRs as they were.
        assert {b: cluster.broker_epoch(b) for b in cluster.broker_ids} == epochs_before
        wait_for(cluster.controller, 30, "a controller")
        assert cluster.controller() == controller_before
        for p in assignment:
            state = cluster.state(strict, p)
            assert set(state["isr"]) == set(states_before[p]["isr"])
            assert state["leader"] == states_before[p]["leader"]

        check_exactly_once(all_acks.acked, read_partitions(cluster.bootstrap, strict, list(assignment)))
        read = read_partitions(cluster.bootstrap, loose, list(assignment))
        stored = {(p, o): v for p, records in read.items() for o, v in records}
        assert all(stored.get((a.partition, a.offset)) == a.value for a in one_ack.acked)
        for b in cluster.broker_ids:
            assert "Traceback" not in cluster.server_log(b), f"broker {b} logged a traceback"


def _reconnect(cluster: Cluster) -> None:
    """The test's own kazoo session waits for ZooKeeper like the brokers do."""
    wait_for(lambda: cluster.zk.connected, 60, "the test's ZooKeeper session to reconnect")

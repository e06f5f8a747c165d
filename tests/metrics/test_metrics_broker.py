"""/metrics of real broker processes, read with prometheus_client's own parser (an independent reader
of the text format): counters move as records are produced and consumed, a SIGKILLed follower shows
as under-replicated on the leader until it is back, the active controller count moves with the
controller, the controller times its events by state (Kafka's ControllerStats), consumer lag equals
`zkafka consumer-groups --describe` for both kinds of group, and a bad scrape path answers 404
without hurting the endpoint."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from zkafka.client.admin import AdminClient
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster, wait_until_ready
from zkafka.testing.polling import wait_for
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import TopicPartition as ZkTopicPartition

pytestmark = pytest.mark.timeout(300)

OVERRIDES = {
    "zookeeper.session.timeout.ms": "4000",
    "replica.lag.time.max.ms": "2000",
    "replica.fetch.backoff.ms": "200",
    "auto.leader.rebalance.enable": "false",
    "controlled.shutdown.max.retries": "2",
    "controlled.shutdown.retry.backoff.ms": "200",
}

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
TIMERS = "kafka_controller_controllerstats_"


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("metrics"), 3, OVERRIDES) as c:
        yield c


def scrape(cluster: LocalCluster, broker_id: int) -> Samples:
    url = cluster.brokers[broker_id].metrics
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum over the series of `name` whose labels include `labels`."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= set(ls))


def create_topic(cluster: LocalCluster, topic: str, partitions: int = 1, rf: int = 3) -> None:
    async def create() -> None:
        async with AdminClient(cluster.bootstrap_servers) as admin:
            await admin.create_topic(topic, partitions, rf)

    asyncio.run(create())


def leader_of(cluster: LocalCluster, topic: str, partition: int = 0) -> int:
    zk = KafkaZkClient(cluster.zookeeper_connect, create_chroot=False)
    try:
        found: dict[str, int] = {}

        def read() -> bool:
            state = zk.get_partition_states([ZkTopicPartition(topic, partition)]).get(
                ZkTopicPartition(topic, partition)
            )
            if state is None:
                return False
            found["leader"] = state.leader_and_isr.leader
            return found["leader"] >= 0

        wait_for(read, 30, f"a leader for {topic}")
        return found["leader"]
    finally:
        zk.close()


def produce(cluster: LocalCluster, topic: str, n: int, partition: int = 0) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for i in range(n):
        producer.produce(topic, value=f"v{i}".encode(), partition=partition)
    assert producer.flush(30) == 0


def describe_lag(cluster: LocalCluster, group: str, *, zookeeper: bool = False) -> dict[tuple[str, int], int]:
    """LAG per (topic, partition) as `zkafka consumer-groups --describe` prints it."""
    target = (
        ["--zookeeper", cluster.zookeeper_connect]
        if zookeeper
        else ["--bootstrap-server", cluster.bootstrap_servers]
    )
    out = subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", "consumer-groups", *target, "--describe", "--group", group],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    lags = {}
    for line in out.splitlines():
        cells = line.split()
        if len(cells) >= 6 and cells[0] == group and cells[2].isdigit() and cells[5].lstrip("-").isdigit():
            lags[(cells[1], int(cells[2]))] = int(cells[5])
    return lags


def reported_lag(cluster: LocalCluster, group: str) -> dict[tuple[str, int], float]:
    """kafka_consumergroup_lag of `group` over every broker (each group is reported by one)."""
    out: dict[tuple[str, int], float] = {}
    for bid in cluster.brokers:
        if not cluster.broker_alive(bid):
            continue
        for (name, labels), v in scrape(cluster, bid).items():
            ls = dict(labels)
            if name == "kafka_consumergroup_lag" and ls.get("consumergroup") == group:
                assert (ls["topic"], int(ls["partition"])) not in out, "a group reported by two brokers"
                out[(ls["topic"], int(ls["partition"]))] = v
    return out


def test_a_bad_path_is_404_and_the_endpoint_keeps_serving(cluster: LocalCluster) -> None:
    base = cluster.brokers[1].metrics.rsplit("/", 1)[0]
    for path in ("/", "/metricsx", "/../etc/passwd", "/metrics/extra"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(base + path, timeout=10)
        assert e.value.code == 404
    samples = scrape(cluster, 1)
    assert value(samples, "process_open_fds") is not None
    assert total(samples, "kafka_network_requestmetrics_requests_total") > 0


def test_counters_move_as_records_are_produced_and_consumed(cluster: LocalCluster) -> None:
    from confluent_kafka import Consumer, TopicPartition

    topic, group = f"moves-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(cluster, topic)
    leader = leader_of(cluster, topic)
    produce(cluster, topic, 50)
    wait_for(
        lambda: (
            value(scrape(cluster, leader), "kafka_server_brokertopicmetrics_messagesin_total", topic=topic)
            == 50
        ),
        30,
        "messages in to reach 50",
    )
    samples = scrape(cluster, leader)
    assert value(samples, "kafka_server_brokertopicmetrics_bytesin_total", topic=topic) > 0
    assert total(samples, "kafka_network_requestmetrics_requests_total", request="Produce") > 0
    assert value(samples, "kafka_network_requestmetrics_totaltimems_count", request="Produce") > 0
    assert value(samples, "kafka_server_replicamanager_leadercount") >= 1
    assert value(samples, "kafka_log_log_logendoffset", topic=topic, partition="0") == 50
    assert value(samples, "kafka_log_log_size", topic=topic, partition="0") > 0
    # the followers replicate it
    followers = [b for b in cluster.brokers if b != leader]
    wait_for(
        lambda: all(
            (
                value(
                    scrape(cluster, b),
                    "kafka_server_brokertopicmetrics_replicationbytesin_total",
                    topic=topic,
                )
                or 0
            )
            > 0
            for b in followers
        ),
        30,
        "replication bytes in on the followers",
    )

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        got = 0
        for _ in range(100):
            got += len(consumer.consume(50, 0.5))
            if got >= 50:
                break
        assert got == 50
        consumer.commit(offsets=[TopicPartition(topic, 0, 20)], asynchronous=False)
    finally:
        consumer.close()
    assert value(scrape(cluster, leader), "kafka_server_brokertopicmetrics_bytesout_total", topic=topic) > 0
    # lag: 30 records after the committed offset 20, as consumer-groups --describe says
    assert describe_lag(cluster, group) == {(topic, 0): 30}
    assert reported_lag(cluster, group) == {(topic, 0): 30}
    seconds = [
        v
        for bid in cluster.brokers
        for (n, ls), v in scrape(cluster, bid).items()
        if n == "kafka_consumergroup_lag_seconds" and dict(ls).get("consumergroup") == group
    ]
    # the age of the record at offset 20, wherever the partition's leader is
    assert len(seconds) == 1 and seconds[0] >= 0


def test_zookeeper_group_lag_is_reported_by_the_controller(cluster: LocalCluster) -> None:
    topic, group = f"zkg-{uuid.uuid4().hex[:8]}", f"old-{uuid.uuid4().hex[:8]}"
    create_topic(cluster, topic, partitions=3, rf=1)  # one partition led by each broker
    zk = KafkaZkClient(cluster.zookeeper_connect, create_chroot=False)
    try:
        for p in range(3):
            produce(cluster, topic, 12, partition=p)
            zk.commit_consumer_offset(group, ZkTopicPartition(topic, p), 5 + p)
    finally:
        zk.close()
    expected = {(topic, p): 7 - p for p in range(3)}
    assert describe_lag(cluster, group, zookeeper=True) == expected
    assert reported_lag(cluster, group) == expected
    controllers = [
        b
        for b in cluster.brokers
        if value(scrape(cluster, b), "kafka_controller_kafkacontroller_activecontrollercount") == 1
    ]
    assert len(controllers) == 1
    # lag in seconds for all three: the controller's own partition from its log, the others fetched
    # from their leaders
    seconds = {
        dict(ls)["partition"]: v
        for (n, ls), v in scrape(cluster, controllers[0]).items()
        if n == "kafka_consumergroup_lag_seconds" and dict(ls).get("consumergroup") == group
    }
    assert sorted(seconds) == ["0", "1", "2"] and all(v >= 0 for v in seconds.values())


def test_a_killed_follower_is_under_replicated_on_the_leader_until_restarted(cluster: LocalCluster) -> None:
    topic = f"urp-{uuid.uuid4().hex[:8]}"
    create_topic(cluster, topic)
    leader = leader_of(cluster, topic)
    produce(cluster, topic, 5)
    urp = "kafka_server_replicamanager_underreplicatedpartitions"
    wait_for(lambda: value(scrape(cluster, leader), urp) == 0, 30, "no under-replicated partitions at first")
    follower = next(b for b in sorted(cluster.brokers) if b != leader and not _is_controller(cluster, b))
    controller = next(b for b in cluster.brokers if _is_controller(cluster, b))
    broker_changes = f"{TIMERS}leaderelectionrateandtimems_count"
    changes_before = value(scrape(cluster, controller), broker_changes) or 0
    cluster.signal_broker(follower, signal.SIGKILL)
    cluster.wait_broker_exit(follower)
    try:
        wait_for(lambda: (value(scrape(cluster, leader), urp) or 0) >= 1, 60, "under-replicated to rise")
    finally:
        cluster.start_broker(follower)
        wait_until_ready(cluster, 90)
    wait_for(lambda: value(scrape(cluster, leader), urp) == 0, 90, "under-replicated to fall back to 0")
    # the leader took the restarted follower back into the ISR itself
    assert value(scrape(cluster, leader), "kafka_server_replicamanager_isrexpands_total") >= 1
    # the controller timed the follower's death and its return: Kafka's LeaderElectionRateAndTimeMs
    # times each broker change
    assert (value(scrape(cluster, controller), broker_changes) or 0) >= changes_before + 2


def test_the_controller_times_each_event_by_state(cluster: LocalCluster) -> None:
    """Kafka's ControllerStats timers (`<State>RateAndTimeMs`), the ControllerState gauge and the
    event manager's queue time and size."""
    wait_for(lambda: sum(_is_controller(cluster, b) for b in cluster.brokers) == 1, 30, "one controller")
    controller = next(b for b in cluster.brokers if _is_controller(cluster, b))
    topic_changes = f"{TIMERS}topicchangerateandtimems_count"
    before = value(scrape(cluster, controller), topic_changes) or 0
    create_topic(cluster, f"timed-{uuid.uuid4().hex[:8]}", partitions=3)
    wait_for(
        lambda: (value(scrape(cluster, controller), topic_changes) or 0) > before, 30, "a topic change timed"
    )
    samples = scrape(cluster, controller)
    assert value(samples, f"{TIMERS}topicchangerateandtimems_sum") > 0
    queued = "kafka_controller_controllereventmanager_eventqueuetimems_count"
    assert value(samples, queued) >= value(samples, topic_changes)
    for b in cluster.brokers:  # every broker's controller processes events (elections at least)
        samples = scrape(cluster, b)
        assert value(samples, f"{TIMERS}controllerchangerateandtimems_count") >= 1
        assert 0 <= value(samples, "kafka_controller_kafkacontroller_controllerstate") <= 12
        assert value(samples, "kafka_controller_controllereventmanager_eventqueuesize") >= 0


def _is_controller(cluster: LocalCluster, broker_id: int) -> bool:
    return value(scrape(cluster, broker_id), "kafka_controller_kafkacontroller_activecontrollercount") == 1


def test_killing_the_controller_moves_activecontrollercount(cluster: LocalCluster) -> None:
    create_topic(cluster, f"counted-{uuid.uuid4().hex[:8]}")  # something to count, whatever ran before
    wait_for(lambda: sum(_is_controller(cluster, b) for b in cluster.brokers) == 1, 30, "one controller")
    old = next(b for b in cluster.brokers if _is_controller(cluster, b))
    cluster.signal_broker(old, signal.SIGKILL)
    cluster.wait_broker_exit(old)
    try:
        others = [b for b in cluster.brokers if b != old]
        wait_for(lambda: sum(_is_controller(cluster, b) for b in others) == 1, 60, "a new controller")
        new = next(b for b in others if _is_controller(cluster, b))
        # Active from its election on, as Kafka's gauge; its partitions count once it has loaded them
        wait_for(
            lambda: (
                (value(scrape(cluster, new), "kafka_controller_kafkacontroller_globalpartitioncount") or 0)
                >= 1
            ),
            30,
            "the new controller counting partitions",
        )
    finally:
        cluster.start_broker(old)
        wait_until_ready(cluster, 90)
    assert not _is_controller(cluster, old)


def test_cluster_status_prints_each_brokers_metrics_url(cluster: LocalCluster) -> None:
    cluster.save()
    out = subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", "cluster", "status", "--dir", str(cluster.directory)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    for broker in cluster.brokers.values():
        assert broker.metrics.startswith("http://127.0.0.1:")
        assert broker.metrics in out


def test_down_converted_records_are_counted(cluster: LocalCluster) -> None:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition

    topic = f"conv-{uuid.uuid4().hex[:8]}"
    create_topic(cluster, topic, rf=1)
    leader = leader_of(cluster, topic)
    produce(cluster, topic, 40)
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers,
        group_id=None,
        auto_offset_reset="earliest",
        api_version=(0, 10, 1),
    )
    try:  # Fetch v3: magic 1 message sets, converted from the stored v2 batches
        consumer.assign([KafkaTopicPartition(topic, 0)])
        got = 0
        for _ in range(60):
            got += sum(len(rs) for rs in consumer.poll(timeout_ms=500).values())
            if got >= 40:
                break
        assert got == 40
    finally:
        consumer.close()
    samples = scrape(cluster, leader)
    assert value(samples, "kafka_server_brokertopicmetrics_fetchmessageconversions_total", topic=topic) >= 40
    assert value(samples, "kafka_network_requestmetrics_requests_total", request="Fetch", version="3") >= 1


def test_a_deleted_topics_series_go_away(cluster: LocalCluster) -> None:
    topic = f"gone-{uuid.uuid4().hex[:8]}"
    create_topic(cluster, topic)
    leader = leader_of(cluster, topic)
    produce(cluster, topic, 3)
    wait_for(
        lambda: (
            value(scrape(cluster, leader), "kafka_server_brokertopicmetrics_messagesin_total", topic=topic)
            == 3
        ),
        30,
        "the topic's counter",
    )

    async def delete() -> None:
        async with AdminClient(cluster.bootstrap_servers) as admin:
            await admin.delete_topics([topic])

    asyncio.run(delete())

    def gone() -> bool:
        return not any(
            dict(ls).get("topic") == topic for b in cluster.brokers for _n, ls in scrape(cluster, b)
        )

    wait_for(gone, 60, f"every series of {topic} to go")

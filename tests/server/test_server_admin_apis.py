"""Issue 13's admin corners through real clients: IncrementalAlterConfigs (44) on topics and
brokers, dynamic broker configs (KIP-226) in `/config/brokers/<id>` and `<default>`,
DescribeConfigs of brokers with Kafka's sources, DescribeLogDirs (35) and DescribeCluster (60).
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)
from confluent_kafka.error import KafkaException
from test_server_connection_limits import client_and_internal_listeners

from zkafka.client.admin import AdminClient as ZkafkaAdmin
from zkafka.client.admin import ConfigResource as ZkafkaResource
from zkafka.client.connection import BrokerConnection
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol.messages import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    IncrementalAlterConfigsRequest,
    ListOffsetsRequest,
)
from zkafka.testing.polling import wait_for

TIMEOUT = 30


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    """One broker with a CLIENT listener and an INTERNAL inter-broker one (exempt from connection
    limits), so the dynamic max.connections.* keys have connections to act on."""
    with client_and_internal_listeners(zookeeper_server, tmp_path_factory.mktemp("admin-apis"), {}) as c:
        yield c


@pytest.fixture(scope="module")
def admin(cluster: LocalCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


@pytest.fixture(scope="module")
def topic(admin: AdminClient) -> str:
    name = "admin-apis"
    admin.create_topics([NewTopic(name, 2, 1)])[name].result(TIMEOUT)
    return name


def incremental(admin: AdminClient, resource: ConfigResource, *, validate_only: bool = False) -> None:
    admin.incremental_alter_configs([resource], validate_only=validate_only)[resource].result(TIMEOUT)


def describe(admin: AdminClient, resource: ConfigResource) -> dict:
    return admin.describe_configs([resource])[resource].result(TIMEOUT)


def error_of(admin: AdminClient, resource: ConfigResource) -> str:
    with pytest.raises(KafkaException) as e:
        incremental(admin, resource)
    return e.value.args[0].name()


def topic_resource(topic: str, *ops: tuple[str, AlterConfigOpType, str | None]) -> ConfigResource:
    return ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[ConfigEntry(k, v, incremental_operation=op) for k, op, v in ops],
    )


def broker_resource(name: str, *ops: tuple[str, AlterConfigOpType, str | None]) -> ConfigResource:
    return ConfigResource(
        ConfigResource.Type.BROKER,
        name,
        incremental_configs=[ConfigEntry(k, v, incremental_operation=op) for k, op, v in ops],
    )


SET, DELETE, APPEND, SUBTRACT = (
    AlterConfigOpType.SET,
    AlterConfigOpType.DELETE,
    AlterConfigOpType.APPEND,
    AlterConfigOpType.SUBTRACT,
)


def test_incremental_alter_topic_set_delete_append_subtract(admin: AdminClient, topic: str) -> None:
    incremental(admin, topic_resource(topic, ("retention.ms", SET, "3600000"), ("segment.ms", SET, "60000")))
    configs = describe(admin, ConfigResource(ConfigResource.Type.TOPIC, topic))
    assert configs["retention.ms"].value == "3600000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    # incremental: the other override stays
    incremental(admin, topic_resource(topic, ("segment.ms", DELETE, None)))
    configs = describe(admin, ConfigResource(ConfigResource.Type.TOPIC, topic))
    assert configs["retention.ms"].value == "3600000"
    assert configs["segment.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    # APPEND to a list-typed key starts from its default
    incremental(admin, topic_resource(topic, ("cleanup.policy", APPEND, "compact")))
    value = describe(admin, ConfigResource(ConfigResource.Type.TOPIC, topic))["cleanup.policy"].value
    assert sorted(value.split(",")) == ["compact", "delete"]
    incremental(admin, topic_resource(topic, ("cleanup.policy", SUBTRACT, "delete")))
    assert (
        describe(admin, ConfigResource(ConfigResource.Type.TOPIC, topic))["cleanup.policy"].value == "compact"
    )
    incremental(
        admin, topic_resource(topic, ("cleanup.policy", DELETE, None), ("retention.ms", DELETE, None))
    )


def test_incremental_alter_validate_only_writes_nothing(admin: AdminClient, topic: str) -> None:
    incremental(admin, topic_resource(topic, ("retention.bytes", SET, "12345")), validate_only=True)
    configs = describe(admin, ConfigResource(ConfigResource.Type.TOPIC, topic))
    assert configs["retention.bytes"].source == ConfigSource.DEFAULT_CONFIG.value


def test_incremental_alter_bad_input_gets_per_resource_errors(admin: AdminClient, topic: str) -> None:
    assert error_of(admin, topic_resource(topic, ("no.such.config", SET, "1"))) == "INVALID_CONFIG"
    assert error_of(admin, topic_resource(topic, ("retention.ms", SET, "soon"))) == "INVALID_CONFIG"
    assert error_of(admin, topic_resource(topic, ("retention.ms", APPEND, "1"))) == "INVALID_REQUEST"
    assert error_of(admin, topic_resource("no-such-topic", ("retention.ms", SET, "1"))) == (
        "UNKNOWN_TOPIC_OR_PART"  # librdkafka's name
    )
    assert (
        error_of(admin, topic_resource("bad/name", ("retention.ms", SET, "1")))
        == "TOPIC_EXCEPTION"  # librdkafka: INVALID_TOPIC_EXCEPTION
    )
    # one bad resource does not fail the others
    good = topic_resource(topic, ("retention.ms", SET, "7200000"))
    bad = topic_resource("no-such-topic", ("retention.ms", SET, "1"))
    futures = admin.incremental_alter_configs([good, bad])
    futures[good].result(TIMEOUT)
    with pytest.raises(KafkaException):
        futures[bad].result(TIMEOUT)
    incremental(admin, topic_resource(topic, ("retention.ms", DELETE, None)))


# -- dynamic broker configs (KIP-226) -----------------------------------------------------------------


def zk_json(cluster: LocalCluster, path: str) -> dict | None:
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=cluster.zookeeper_connect)
    zk.start(timeout=TIMEOUT)
    try:
        if not zk.exists(path):
            return None
        data, _ = zk.get(path)
        return json.loads(data)
    finally:
        zk.stop()
        zk.close()


def notifications(cluster: LocalCluster) -> list[dict]:
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=cluster.zookeeper_connect)
    zk.start(timeout=TIMEOUT)
    try:
        return [
            json.loads(zk.get(f"/config/changes/{n}")[0]) for n in sorted(zk.get_children("/config/changes"))
        ]
    finally:
        zk.stop()
        zk.close()


def set_default(cluster: LocalCluster, changes: dict[str, str | None]) -> None:
    async def run() -> None:
        async with ZkafkaAdmin(cluster.bootstrap_servers) as admin:
            await admin.alter_configs(ZkafkaResource.broker(""), changes)

    asyncio.run(run())


def describe_zkafka(cluster: LocalCluster, broker: str) -> dict:
    async def run() -> dict:
        async with ZkafkaAdmin(cluster.bootstrap_servers) as admin:
            resource = ZkafkaResource.broker(broker)
            return (await admin.describe_configs([resource], include_synonyms=True))[resource]

    return asyncio.run(run())


def test_dynamic_broker_config_per_broker_and_default(cluster: LocalCluster, admin: AdminClient) -> None:
    incremental(
        admin, broker_resource("1", ("log.retention.ms", SET, "86400000"), ("num.io.threads", SET, "4"))
    )
    assert zk_json(cluster, "/config/brokers/1") == {
        "version": 1,
        "config": {"log.retention.ms": "86400000", "num.io.threads": "4"},
    }
    assert {"version": 2, "entity_path": "brokers/1"} in notifications(cluster)
    configs = describe(admin, ConfigResource(ConfigResource.Type.BROKER, "1"))
    entry = configs["log.retention.ms"]
    assert entry.value == "86400000"
    assert entry.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert not entry.is_read_only
    assert next((s.name, s.source) for s in entry.synonyms.values()) == (
        "log.retention.ms",
        ConfigSource.DYNAMIC_BROKER_CONFIG.value,
    )
    assert configs["broker.id"].is_read_only
    assert configs["num.network.threads"].source == ConfigSource.DEFAULT_CONFIG.value

    # the cluster-wide default, below the per-broker value
    # librdkafka refuses an empty broker name: the default goes through zkafka's own client
    set_default(cluster, {"log.retention.ms": "172800000", "message.max.bytes": "2000000"})
    assert zk_json(cluster, "/config/brokers/<default>")["config"] == {
        "log.retention.ms": "172800000",
        "message.max.bytes": "2000000",
    }
    assert {"version": 2, "entity_path": "brokers/<default>"} in notifications(cluster)
    configs = describe(admin, ConfigResource(ConfigResource.Type.BROKER, "1"))
    assert configs["log.retention.ms"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert configs["message.max.bytes"].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    # librdkafka keys synonyms by name: the whole chain, in Kafka's order, through zkafka's client
    chain = describe_zkafka(cluster, "1")
    assert [(n, v, s.name) for n, v, s in chain["log.retention.ms"].synonyms] == [
        ("log.retention.ms", "86400000", "DYNAMIC_BROKER_CONFIG"),
        ("log.retention.ms", "172800000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
        ("log.retention.hours", "168", "DEFAULT_CONFIG"),
    ]
    assert [(n, v, s.name) for n, v, s in chain["message.max.bytes"].synonyms] == [
        ("message.max.bytes", "2000000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
        ("message.max.bytes", "1048588", "DEFAULT_CONFIG"),
    ]
    default = describe_zkafka(cluster, "")
    assert {k: e.value for k, e in default.items()} == {
        "log.retention.ms": "172800000",
        "message.max.bytes": "2000000",
    }

    # applied at run time: a new topic's defaults follow the dynamic value
    admin.create_topics([NewTopic("dyn-defaults", 1, 1)])["dyn-defaults"].result(TIMEOUT)
    topic_configs = describe(admin, ConfigResource(ConfigResource.Type.TOPIC, "dyn-defaults"))
    assert topic_configs["retention.ms"].value == "86400000"
    assert topic_configs["max.message.bytes"].value == "2000000"

    incremental(
        admin, broker_resource("1", ("log.retention.ms", DELETE, None), ("num.io.threads", DELETE, None))
    )
    set_default(cluster, {"log.retention.ms": None, "message.max.bytes": None})
    topic_configs = describe(admin, ConfigResource(ConfigResource.Type.TOPIC, "dyn-defaults"))
    assert topic_configs["retention.ms"].value == "604800000"


def test_dynamic_broker_config_refusals(admin: AdminClient) -> None:
    assert error_of(admin, broker_resource("1", ("broker.id", SET, "7"))) == "INVALID_REQUEST"
    assert error_of(admin, broker_resource("1", ("no.such.key", SET, "7"))) == "INVALID_REQUEST"
    assert error_of(admin, broker_resource("1", ("num.io.threads", SET, "many"))) == "INVALID_REQUEST"
    assert error_of(admin, broker_resource("1", ("num.io.threads", SET, "0"))) == "INVALID_REQUEST"
    resource = ConfigResource(ConfigResource.Type.BROKER, "1", set_config={"broker.id": "7"})
    with pytest.raises(KafkaException) as e:
        with pytest.warns(DeprecationWarning):  # AlterConfigs: the same path
            future = admin.alter_configs([resource])[resource]
        future.result(TIMEOUT)
    assert e.value.args[0].name() == "INVALID_REQUEST"
    assert "Cannot update these configs dynamically" in e.value.args[0].str()


def raw_incremental(
    cluster: LocalCluster, resources: list[tuple[int, str, list[tuple[str, int, str | None]]]]
):
    """IncrementalAlterConfigs as sent by hand (librdkafka refuses duplicates before sending)."""
    R = IncrementalAlterConfigsRequest

    async def run():
        conn = await BrokerConnection.open("127.0.0.1", cluster.brokers[1].port)
        try:
            request = R(
                resources=[
                    R.AlterConfigsResource(
                        resource_type=t,
                        resource_name=n,
                        configs=[R.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops],
                    )
                    for t, n, ops in resources
                ],
                validate_only=False,
            )
            return await conn.send(request, version=0)
        finally:
            conn.close()

    return [(r.error_code, r.error_message) for r in asyncio.run(run()).responses]


def test_incremental_alter_request_level_refusals(cluster: LocalCluster, topic: str) -> None:
    INVALID_REQUEST = 42
    answers = raw_incremental(
        cluster,
        [
            (2, topic, [("retention.ms", 0, "1000"), ("retention.ms", 1, None)]),
            (2, topic, [("retention.ms", 9, "1000")]),
            (2, topic, [("retention.ms", 0, None)]),
            (4, "1", [("num.io.threads", 0, "2"), ("num.io.threads", 0, "3")]),
            (4, "2", [("num.io.threads", 0, "2")]),
            (4, "one", [("num.io.threads", 0, "2")]),
            (99, "x", [("a", 0, "b")]),
        ],
    )
    assert [code for code, _ in answers] == [INVALID_REQUEST] * 7
    assert "duplicate config keys" in answers[0][1]
    assert "Unexpected broker id" in answers[4][1]


def test_max_connections_applied_at_run_time(cluster: LocalCluster, admin: AdminClient) -> None:
    port = cluster.brokers[1].port
    incremental(admin, broker_resource("1", ("max.connections.per.ip", SET, "40")))
    try:
        socks = []
        try:
            for _ in range(45):
                socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))

            def some_refused() -> bool:
                closed = 0
                for s in socks:
                    s.settimeout(0.01)
                    try:
                        if s.recv(1) == b"":
                            closed += 1
                    except TimeoutError:
                        pass
                    except OSError:
                        closed += 1
                return closed > 0

            wait_for(some_refused, timeout=10, what="a connection above max.connections.per.ip refused")
        finally:
            for s in socks:
                s.close()
    finally:
        incremental(admin, broker_resource("1", ("max.connections.per.ip", DELETE, None)))


# -- DescribeLogDirs and DescribeCluster --------------------------------------------------------------


def test_describe_log_dirs_with_kafka_python(cluster: LocalCluster, admin: AdminClient, topic: str) -> None:
    from confluent_kafka import Producer
    from kafka.admin import KafkaAdminClient

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(10):
        producer.produce(topic, value=b"x" * 100, partition=i % 2)
    assert producer.flush(TIMEOUT) == 0
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        everything = client.describe_log_dirs()
        client_topic = client.describe_log_dirs(topic_partitions={topic: [1]})
    finally:
        client.close()
    text = json.dumps(everything, default=str)
    assert topic in text
    results = _results(everything)
    assert len(results) == 1 and results[0]["error_code"] == 0
    ours = {t["name"]: t["partitions"] for t in results[0]["topics"]}
    assert sorted(p["partition_index"] for p in ours[topic]) == [0, 1]
    assert all(
        p["partition_size"] > 0 and p["offset_lag"] == 0 and not p["is_future_key"] for p in ours[topic]
    )
    only = {t["name"]: t["partitions"] for t in _results(client_topic)[0]["topics"]}
    assert list(only) == [topic] and [p["partition_index"] for p in only[topic]] == [1]


def _results(answers: list[dict]) -> list[dict]:
    """The DescribeLogDirs results in kafka-python's answer: [{"broker": id, "log_dirs": [...]}]."""
    assert [a["broker"] for a in answers] == [1]
    return answers[0]["log_dirs"]


def test_describe_cluster_with_confluent_kafka(cluster: LocalCluster, admin: AdminClient) -> None:
    plain = admin.describe_cluster(request_timeout=TIMEOUT).result(TIMEOUT)
    assert plain.controller is not None and plain.controller.id == 1
    assert [n.id for n in plain.nodes] == [1]
    assert plain.nodes[0].port == cluster.brokers[1].port
    assert plain.cluster_id
    assert not plain.authorized_operations


def test_describe_cluster_raw(cluster: LocalCluster) -> None:
    """DescribeCluster (60) itself: librdkafka 2.16 describes a cluster with Metadata, so the API
    is asked with zkafka's codec (kafka-python's decodes it in the api matrix test)."""

    async def ask(include: bool) -> DescribeClusterResponse:
        conn = await BrokerConnection.open("127.0.0.1", cluster.brokers[1].port)
        try:
            request = DescribeClusterRequest(include_cluster_authorized_operations=include)
            return await conn.send(request, version=0)  # type: ignore[return-value]
        finally:
            conn.close()

    plain = asyncio.run(ask(False))
    assert plain.error_code == 0 and plain.controller_id == 1 and plain.cluster_id
    assert [(b.broker_id, b.port) for b in plain.brokers] == [(1, cluster.brokers[1].port)]
    assert plain.cluster_authorized_operations == -(2**31)
    asked = asyncio.run(ask(True))
    ops = {op for op in range(32) if asked.cluster_authorized_operations >> op & 1}
    assert ops == {
        5,
        7,
        8,
        9,
        10,
        11,
        12,
    }  # CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, *_CONFIGS, IDEMPOTENT_WRITE


# -- ListOffsets v0's max_num_offsets and FindCoordinator for transactions -----------------------------


def test_list_offsets_v0_offsets_before(cluster: LocalCluster, admin: AdminClient) -> None:
    """Kafka's old answer: latest is the log end offset then each segment's base offset, newest
    first, at most max_num_offsets; earliest is the log start offset alone."""
    from confluent_kafka import Producer

    name = "offsets-before"
    admin.create_topics([NewTopic(name, 1, 1, config={"segment.bytes": "1000"})])[name].result(TIMEOUT)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
    for _ in range(6):
        producer.produce(name, value=b"v" * 600, partition=0)
        assert producer.flush(TIMEOUT) == 0  # one batch each: every batch rolls a 1000-byte segment
    R = ListOffsetsRequest

    async def ask(timestamp: int, max_num: int) -> list[int]:
        conn = await BrokerConnection.open("127.0.0.1", cluster.brokers[1].port)
        try:
            request = R(
                replica_id=-1,
                topics=[
                    R.ListOffsetsTopic(
                        name=name,
                        partitions=[
                            R.ListOffsetsPartition(
                                partition_index=0, timestamp=timestamp, max_num_offsets=max_num
                            )
                        ],
                    )
                ],
            )
            response = await conn.send(request, version=0)
        finally:
            conn.close()
        (part,) = response.topics[0].partitions  # type: ignore[attr-defined]
        assert part.error_code == 0
        return list(part.old_style_offsets)

    latest = asyncio.run(ask(-1, 100))
    assert latest[0] == 6 and latest == sorted(latest, reverse=True) and latest[-1] == 0
    assert len(latest) >= 3
    assert asyncio.run(ask(-1, 2)) == latest[:2]
    assert asyncio.run(ask(-1, 1)) == [6]
    assert asyncio.run(ask(-2, 5)) == [0]


def test_find_coordinator_for_a_transactional_id_answers_at_once(cluster: LocalCluster) -> None:
    async def ask(version: int) -> FindCoordinatorResponse:
        conn = await BrokerConnection.open("127.0.0.1", cluster.brokers[1].port)
        try:
            return await conn.send(FindCoordinatorRequest(key="txn-1", key_type=1), version=version)  # type: ignore[return-value]
        finally:
            conn.close()

    for version in (1, 2):
        start = time.monotonic()
        answer = asyncio.run(ask(version))
        assert time.monotonic() - start < 5
        # COORDINATOR_NOT_AVAILABLE while `__transaction_state` is being created, then the leader
        assert (answer.error_code, answer.node_id) in ((15, -1), (0, 1))


def test_topic_defaults_name_their_dynamic_broker_source(
    cluster: LocalCluster, admin: AdminClient, topic: str
) -> None:
    incremental(admin, broker_resource("1", ("log.retention.bytes", SET, "1000000")))
    try:
        entry = describe(admin, ConfigResource(ConfigResource.Type.TOPIC, topic))["retention.bytes"]
        assert entry.value == "1000000"
        assert entry.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
        # a topic override still wins
        incremental(admin, topic_resource(topic, ("retention.bytes", SET, "5000")))
        entry = describe(admin, ConfigResource(ConfigResource.Type.TOPIC, topic))["retention.bytes"]
        assert (entry.value, entry.source) == ("5000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    finally:
        incremental(admin, topic_resource(topic, ("retention.bytes", DELETE, None)))
        incremental(admin, broker_resource("1", ("log.retention.bytes", DELETE, None)))
    entry = describe(admin, ConfigResource(ConfigResource.Type.TOPIC, topic))["retention.bytes"]
    assert (entry.value, entry.source) == ("-1", ConfigSource.DEFAULT_CONFIG.value)

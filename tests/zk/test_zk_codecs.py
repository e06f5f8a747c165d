"""Znode codecs: byte-exact current encodings, round trips, every older version we must read, and
clear refusals of bad data."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kazoo.protocol.states import ZnodeStat

from zkafka.zk.acls import (
    AclEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from zkafka.zk.errors import ZNodeDataError
from zkafka.zk.json_codec import encode_json, parse_json
from zkafka.zk.model import (
    UNKNOWN_VERSION,
    BrokerInfo,
    ConfigChangeNotification,
    ConsumerRegistration,
    ControllerRegistration,
    DelegationTokenInfo,
    EndPoint,
    FeatureZNodeData,
    FeatureZNodeStatus,
    FinalizedFeatureLevel,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    LogDirEvent,
    ProducerIdBlock,
    SecurityProtocol,
    SubscriptionPattern,
    SupportedVersionRange,
    TopicAssignment,
    TopicPartition,
    random_uuid_base64,
)
from zkafka.zk.znodes import (
    ISR_CHANGES,
    PERSISTENT_TOP_LEVEL_PATHS,
    AclZNodes,
    BrokerIdZNode,
    ClusterIdZNode,
    ConfigEntityChangeNotificationZNode,
    ConfigEntityZNode,
    ConsumerIdZNode,
    ConsumerOffsetZNode,
    ConsumerOwnerZNode,
    ControllerEpochZNode,
    ControllerZNode,
    DelegationTokenInfoZNode,
    ExtendedAclChangeZNode,
    FeatureZNode,
    IsrChangeNotificationZNode,
    LiteralAclChangeZNode,
    LogDirEventNotificationZNode,
    PreferredReplicaElectionZNode,
    ProducerIdBlockZNode,
    ReassignPartitionsZNode,
    TopicPartitionStateZNode,
    TopicZNode,
    config_entity_name,
    user_client_entity_name,
)

PLAINTEXT, SSL = SecurityProtocol.PLAINTEXT, SecurityProtocol.SSL
TS = 1700000000000


def stat(version: int = 0, czxid: int = 77, ephemeral_owner: int = 0) -> ZnodeStat:
    return ZnodeStat(czxid, czxid, TS, TS, version, 0, 0, ephemeral_owner, 0, 0, czxid)


# -- byte-exact encodings -------------------------------------------------------------------------------


def test_broker_v5_bytes() -> None:
    info = BrokerInfo(
        id=1,
        endpoints=(EndPoint("PLAINTEXT", "host1", 9092, PLAINTEXT), EndPoint("SSL", "host1", 9093, SSL)),
        rack="r1",
        features={"metadata.version": SupportedVersionRange(1, 7)},
        timestamp_ms=TS,
    )
    assert BrokerIdZNode.encode(info) == (
        b'{"version":5,"host":"host1","port":9092,"jmx_port":-1,"timestamp":"1700000000000",'
        b'"endpoints":["PLAINTEXT://host1:9092","SSL://host1:9093"],'
        b'"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","SSL":"SSL"},"rack":"r1",'
        b'"features":{"metadata.version":{"min_version":1,"max_version":7}}}'
    )


def test_broker_v5_without_rack_or_plaintext_listener() -> None:
    info = BrokerInfo(2, (EndPoint("CLIENT", "::1", 9093, SSL),), jmx_port=9999, timestamp_ms=TS)
    assert BrokerIdZNode.encode(info) == (
        b'{"version":5,"host":null,"port":-1,"jmx_port":9999,"timestamp":"1700000000000",'
        b'"endpoints":["CLIENT://[::1]:9093"],"listener_security_protocol_map":{"CLIENT":"SSL"},"features":{}}'
    )


def test_broker_older_write_versions() -> None:
    info = BrokerInfo(3, (EndPoint("PLAINTEXT", "h", 1, PLAINTEXT),), rack="r", timestamp_ms=TS)
    v2 = json.loads(BrokerIdZNode.encode(info, version=2))
    assert set(v2) == {"version", "host", "port", "jmx_port", "timestamp", "endpoints"}
    v4 = json.loads(BrokerIdZNode.encode(info, version=4))
    assert (
        v4["rack"] == "r"
        and "features" not in v4
        and v4["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
    )
    with pytest.raises(ValueError, match="cannot write broker registration version 3"):
        BrokerIdZNode.encode(info, version=3)


def test_topic_v3_bytes_match_the_reference_example() -> None:
    assignment = TopicAssignment(
        topic="t", partitions={1: (2, 3, 1), 0: (1, 2, 3)}, topic_id="b8tRS7h4TJ2Vt43Dp85v2A"
    )
    assert TopicZNode.encode(assignment) == (
        b'{"version":3,"partitions":{"0":[1,2,3],"1":[2,3,1]},"adding_replicas":{},'
        b'"removing_replicas":{},"topic_id":"b8tRS7h4TJ2Vt43Dp85v2A"}'
    )


def test_topic_v3_reassignment_keeps_only_non_empty_lists_and_unknown_keys() -> None:
    assignment = TopicAssignment(
        topic="t",
        partitions={0: (4, 1, 2)},
        adding_replicas={0: (4,), 1: ()},
        removing_replicas={0: (2,)},
        extra={"future": {"x": 1}, "version": 99},
    )
    assert TopicZNode.encode(assignment) == (
        b'{"version":3,"partitions":{"0":[4,1,2]},"adding_replicas":{"0":[4]},'
        b'"removing_replicas":{"0":[2]},"future":{"x":1}}'
    )


def test_partition_state_bytes() -> None:
    lai = LeaderAndIsr(1, 0, (1, 2))
    assert TopicPartitionStateZNode.encode(lai, 3) == (
        b'{"version":1,"leader":1,"leader_epoch":0,"isr":[1,2],"controller_epoch":3}'
    )
    recovering = LeaderAndIsr(2, 5, (2,), LeaderRecoveryState.RECOVERING)
    assert TopicPartitionStateZNode.encode(recovering, 4) == (
        b'{"version":1,"leader":2,"leader_epoch":5,"isr":[2],"controller_epoch":4,"leader_recovery_state":1}'
    )


def test_controller_cluster_id_and_config_change_bytes() -> None:
    assert ControllerZNode.encode(1, TS) == b'{"version":1,"brokerid":1,"timestamp":"1700000000000"}'
    assert ControllerEpochZNode.encode(17) == b"17"
    assert ClusterIdZNode.encode("abc") == b'{"version":"1","id":"abc"}'
    assert (
        ConfigEntityChangeNotificationZNode.encode("topics/foo")
        == b'{"version":2,"entity_path":"topics/foo"}'
    )


def test_other_bytes() -> None:
    assert ProducerIdBlockZNode.encode(ProducerIdBlock(3, 1000, 1999)) == (
        b'{"version":1,"broker":3,"block_start":"1000","block_end":"1999"}'
    )
    assert IsrChangeNotificationZNode.encode([TopicPartition("b", 1), TopicPartition("a", 0)]) == (
        b'{"version":1,"partitions":[{"topic":"a","partition":0},{"topic":"b","partition":1}]}'
    )
    assert LogDirEventNotificationZNode.encode(LogDirEvent(4)) == b'{"version":1,"broker":4,"event":1}'
    assert (
        ConfigEntityZNode.encode({"retention.ms": "100"}) == b'{"version":1,"config":{"retention.ms":"100"}}'
    )
    assert ReassignPartitionsZNode.encode({TopicPartition("t", 0): [4, 5, 6]}) == (
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,5,6]}]}'
    )
    assert PreferredReplicaElectionZNode.encode([TopicPartition("t", 0)]) == (
        b'{"version":1,"partitions":[{"topic":"t","partition":0}]}'
    )
    acl = AclEntry("User:alice", AclPermissionType.ALLOW, AclOperation.CLUSTER_ACTION, "*")
    assert AclZNodes.encode([acl]) == (
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",'
        b'"operation":"ClusterAction","host":"*"}]}'
    )
    pattern = ResourcePattern(ResourceType.TOPIC, "foo", PatternType.PREFIXED)
    assert ExtendedAclChangeZNode.encode(pattern) == (
        b'{"version":1,"resourceType":"TOPIC","name":"foo","patternType":"PREFIXED"}'
    )
    assert LiteralAclChangeZNode.encode(ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx")) == (
        b"TRANSACTIONAL_ID:tx"
    )
    registration = ConsumerRegistration({"t": 2}, SubscriptionPattern.STATIC, TS)
    assert ConsumerIdZNode.encode(registration) == (
        b'{"version":1,"subscription":{"t":2},"pattern":"static","timestamp":"1700000000000"}'
    )
    assert ConsumerOffsetZNode.encode(42) == b"42"
    assert ConsumerOwnerZNode.encode("g_host-1-abcd-0") == b"g_host-1-abcd-0"


def test_json_is_compact_and_utf8_like_jackson() -> None:
    assert encode_json({"a": [1, 2], "b": "ü"}) == '{"a":[1,2],"b":"ü"}'.encode()


# -- round trips --------------------------------------------------------------------------------------

replica_lists = st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=5, unique=True).map(tuple)
partition_maps = st.dictionaries(st.integers(0, 5000), replica_lists, min_size=1, max_size=20)


@settings(max_examples=100, deadline=None)
@given(
    partitions=partition_maps,
    adding=st.dictionaries(st.integers(0, 5000), replica_lists, max_size=3),
    removing=st.dictionaries(st.integers(0, 5000), replica_lists, max_size=3),
    with_id=st.booleans(),
)
def test_topic_round_trip(
    partitions: dict[int, tuple[int, ...]],
    adding: dict[int, tuple[int, ...]],
    removing: dict[int, tuple[int, ...]],
    with_id: bool,
) -> None:
    original = TopicAssignment(
        "t",
        partitions,
        adding,
        removing,
        topic_id=random_uuid_base64() if with_id else None,
        extra={"zz": [1, "x"]},
    )
    decoded = TopicZNode.decode(TopicZNode.encode(original), "/brokers/topics/t", stat(version=7))
    assert decoded == TopicAssignment(
        "t", partitions, adding, removing, original.topic_id, 3, zk_version=7, extra={"zz": [1, "x"]}
    )


@settings(max_examples=100, deadline=None)
@given(
    leader=st.integers(-1, 2**31 - 1),
    epoch=st.integers(0, 2**31 - 1),
    isr=st.lists(st.integers(0, 1000), max_size=6).map(tuple),
    controller_epoch=st.integers(0, 2**31 - 1),
    recovery=st.sampled_from(LeaderRecoveryState),
)
def test_partition_state_round_trip(
    leader: int, epoch: int, isr: tuple[int, ...], controller_epoch: int, recovery: LeaderRecoveryState
) -> None:
    lai = LeaderAndIsr(leader, epoch, isr, recovery, zk_version=3)
    path = "/brokers/topics/t/partitions/0/state"
    decoded = TopicPartitionStateZNode.decode(
        TopicPartitionStateZNode.encode(lai, controller_epoch), path, stat(3)
    )
    assert decoded == LeaderIsrAndControllerEpoch(lai, controller_epoch)


hosts = st.one_of(
    st.from_regex(r"[a-z][a-z0-9.-]{0,20}", fullmatch=True), st.sampled_from(["::1", "fe80::1%eth0", ""])
)
endpoint = st.builds(
    EndPoint,
    listener_name=st.from_regex(r"[A-Z][A-Z0-9_]{0,10}", fullmatch=True),
    host=hosts,
    port=st.integers(0, 65535),
    security_protocol=st.sampled_from(SecurityProtocol),
)


@settings(max_examples=100, deadline=None)
@given(
    broker_id=st.integers(0, 2**31 - 1),
    endpoints=st.lists(endpoint, max_size=4, unique_by=lambda e: e.listener_name).map(tuple),
    rack=st.one_of(st.none(), st.text(max_size=10)),
    features=st.dictionaries(
        st.text(min_size=1, max_size=10),
        st.tuples(st.integers(1, 20), st.integers(0, 20)).map(
            lambda t: SupportedVersionRange(t[0], t[0] + t[1])
        ),
        max_size=3,
    ),
    jmx=st.integers(-1, 65535),
)
def test_broker_round_trip(
    broker_id: int,
    endpoints: tuple[EndPoint, ...],
    rack: str | None,
    features: dict[str, SupportedVersionRange],
    jmx: int,
) -> None:
    info = BrokerInfo(broker_id, endpoints, rack, features, jmx, TS)
    path = f"/brokers/ids/{broker_id}"
    decoded = BrokerIdZNode.decode(BrokerIdZNode.encode(info), path, stat(1, czxid=4242))
    assert decoded == BrokerInfo(broker_id, endpoints, rack, features, jmx, TS, 5, epoch=4242)


def test_small_round_trips() -> None:
    assert ControllerZNode.decode(ControllerZNode.encode(5, TS)) == ControllerRegistration(5, TS, None, 1)
    assert ControllerEpochZNode.decode(ControllerEpochZNode.encode(9)) == 9
    assert ClusterIdZNode.decode(ClusterIdZNode.encode("xyz")) == "xyz"
    block = ProducerIdBlock(1, 2**62, 2**62 + 999)
    assert ProducerIdBlockZNode.decode(ProducerIdBlockZNode.encode(block)) == block
    tps = frozenset({TopicPartition("a", 0), TopicPartition("b", 3)})
    assert IsrChangeNotificationZNode.decode(IsrChangeNotificationZNode.encode(tps), "/x") == tps
    assert PreferredReplicaElectionZNode.decode(PreferredReplicaElectionZNode.encode(tps)) == tps
    reassignment = {TopicPartition("a", 0): (1, 2), TopicPartition("a", 1): (3,)}
    assert ReassignPartitionsZNode.decode(ReassignPartitionsZNode.encode(reassignment)) == reassignment
    assert LogDirEventNotificationZNode.decode(LogDirEventNotificationZNode.encode(LogDirEvent(7)), "/x") == (
        LogDirEvent(7)
    )
    config = {"cleanup.policy": "compact", "unicode": "ü"}
    assert ConfigEntityZNode.decode(ConfigEntityZNode.encode(config), "/config/topics/t") == config
    acls = frozenset(
        AclEntry(p, perm, op, h)
        for p in ("User:alice", "User:*")
        for perm in AclPermissionType
        for op in (AclOperation.READ, AclOperation.IDEMPOTENT_WRITE)
        for h in ("*", "10.0.0.1")
    )
    assert AclZNodes.decode(AclZNodes.encode(acls), "/kafka-acl/Topic/t") == acls
    for pattern in (
        ResourcePattern(ResourceType.GROUP, "g", PatternType.PREFIXED),
        ResourcePattern(ResourceType.DELEGATION_TOKEN, "tok", PatternType.LITERAL),
    ):
        assert ExtendedAclChangeZNode.decode(ExtendedAclChangeZNode.encode(pattern), "/x") == pattern
    literal = ResourcePattern(ResourceType.CLUSTER, "kafka-cluster")
    assert LiteralAclChangeZNode.decode(LiteralAclChangeZNode.encode(literal), "/x") == literal
    registration = ConsumerRegistration({"a": 1, "b.*": 3}, SubscriptionPattern.WHITE_LIST, TS)
    assert ConsumerIdZNode.decode(ConsumerIdZNode.encode(registration), "/x") == registration
    token = DelegationTokenInfo("tid", "User:bob smith", ("User:*", "User:al*ce"), 1, 2, 3)
    encoded = DelegationTokenInfoZNode.encode(token)
    assert b'"owner":"User%3Abob%20smith"' in encoded
    assert DelegationTokenInfoZNode.decode(encoded, "/x") == token


@pytest.mark.parametrize("version", [1, 2])
def test_feature_round_trip(version: int) -> None:
    levels = {"metadata.version": FinalizedFeatureLevel(7, 7 if version == 1 else None)}
    data = FeatureZNodeData(FeatureZNodeStatus.ENABLED, levels, version)
    decoded = FeatureZNode.decode(FeatureZNode.encode(data), "/feature", stat(4))
    assert decoded == FeatureZNodeData(FeatureZNodeStatus.ENABLED, levels, version, zk_version=4)
    v1_without_min = FeatureZNodeData(FeatureZNodeStatus.ENABLED, {"f": FinalizedFeatureLevel(3)}, 1)
    assert json.loads(FeatureZNode.encode(v1_without_min))["features"] == {
        "f": {"min_version_level": 3, "max_version_level": 3}
    }


# -- reading older versions --------------------------------------------------------------------------------


def test_broker_v2_v4_and_listener_mapping() -> None:
    v2 = b'{"version":2,"host":"h","port":1,"jmx_port":-1,"timestamp":"5","endpoints":["SASL_SSL://h:2"]}'
    info = BrokerIdZNode.decode(v2, "/brokers/ids/3")
    assert info.endpoints == (EndPoint("SASL_SSL", "h", 2, SecurityProtocol.SASL_SSL),)
    assert info.version == 2 and info.timestamp_ms == 5 and info.epoch is None
    v4 = (
        b'{"version":4,"host":null,"port":-1,"jmx_port":-1,"timestamp":"5",'
        b'"endpoints":["client://h:9093","REPLICATION://[::1]:9094"],'
        b'"listener_security_protocol_map":{"CLIENT":"SSL","replication":"plaintext"},"rack":null}'
    )
    info = BrokerIdZNode.decode(v4, "/brokers/ids/3", stat(czxid=99))
    assert info.endpoints == (
        EndPoint("CLIENT", "h", 9093, SSL),
        EndPoint("REPLICATION", "::1", 9094, PLAINTEXT),
    )
    assert info.rack is None and info.epoch == 99
    assert info.endpoint("client") == EndPoint("CLIENT", "h", 9093, SSL)


def test_topic_v1_and_v2_with_topic_id() -> None:
    v1 = TopicZNode.decode(b'{"version":1,"partitions":{"1":[2],"0":[1]}}', "/brokers/topics/x", stat(2))
    assert v1 == TopicAssignment("x", {0: (1,), 1: (2,)}, version=1, zk_version=2)
    # a 2.8 development snapshot wrote version 2 with a topic id: decode by field presence
    v2 = TopicZNode.decode(
        b'{"version":2,"partitions":{"0":[1]},"adding_replicas":{"0":[]},"removing_replicas":{},'
        b'"topic_id":"b8tRS7h4TJ2Vt43Dp85v2A"}',
        "/brokers/topics/x",
    )
    assert (
        v2.topic_id == "b8tRS7h4TJ2Vt43Dp85v2A"
        and v2.adding_replicas == {}
        and v2.zk_version == UNKNOWN_VERSION
    )


def test_controller_legacy_and_v2() -> None:
    assert ControllerZNode.decode(b"3") == ControllerRegistration(3, version=0)
    v2 = b'{"version":2,"brokerid":4,"timestamp":"10","kraftControllerEpoch":-1}'
    assert ControllerZNode.decode(v2) == ControllerRegistration(4, 10, -1, 2)


def test_config_change_v1() -> None:
    v1 = b'{"version":1,"entity_type":"clients","entity_name":"app"}'
    change = ConfigEntityChangeNotificationZNode.decode(v1, "/config/changes/config_change_0000000001")
    assert change == ConfigChangeNotification("clients/app", 1)
    assert (change.entity_type, change.entity_name) == ("clients", "app")
    v2 = b'{"version":2,"entity_path":"users/alice/clients/app"}'
    assert ConfigEntityChangeNotificationZNode.decode(v2, "/x").entity_path == "users/alice/clients/app"


def test_acl_parsing_is_case_insensitive_and_change_text_accepts_both_spellings() -> None:
    data = (
        b'{"version":1,"acls":[{"principal":"User:a","permissionType":"allow","operation":"READ","host":"*"},'
        b'{"principal":"User:a","permissionType":"DENY","operation":"cluster_action","host":"*"},'
        b'{"principal":"User:a","permissionType":"Deny","operation":"describeconfigs","host":"*"}]}'
    )
    ops = {(a.permission_type, a.operation) for a in AclZNodes.decode(data, "/kafka-acl/Topic/t")}
    assert ops == {
        (AclPermissionType.ALLOW, AclOperation.READ),
        (AclPermissionType.DENY, AclOperation.CLUSTER_ACTION),
        (AclPermissionType.DENY, AclOperation.DESCRIBE_CONFIGS),
    }
    for text in (b"Topic:foo", b"TOPIC:foo", b"topic:foo"):
        assert LiteralAclChangeZNode.decode(text, "/x") == ResourcePattern(ResourceType.TOPIC, "foo")
    assert LiteralAclChangeZNode.decode(b"Group:a:b", "/x").name == "a:b"
    assert (
        LiteralAclChangeZNode.decode(b"TransactionalId:t", "/x").resource_type
        is ResourceType.TRANSACTIONAL_ID
    )


def test_acl_paths() -> None:
    assert AclZNodes.path(ResourcePattern(ResourceType.TOPIC, "t")) == "/kafka-acl/Topic/t"
    prefixed = ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx-", PatternType.PREFIXED)
    assert AclZNodes.path(prefixed) == "/kafka-acl-extended/prefixed/TransactionalId/tx-"
    paths = AclZNodes.all_paths()
    assert "/kafka-acl/Cluster" in paths and "/kafka-acl-extended/prefixed/Group" in paths
    assert "/kafka-acl-changes" in paths and "/kafka-acl-extended-changes" in paths


# -- refusals ----------------------------------------------------------------------------------------------

STATE = "/brokers/topics/t/partitions/0/state"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "no data (expected JSON)"),
        (b"\xff\xfe", "not valid UTF-8"),
        (b"[1,2]", "expected a JSON object, got array"),
        (b'{"version":1,"leader":NaN}', "NaN is not valid JSON"),
        (b'{"version":1,"version":1}', "duplicate key 'version'"),
        (
            b'{"version":2,"leader":1,"leader_epoch":0,"isr":[1],"controller_epoch":1}',
            "unsupported version 2",
        ),
        (b'{"version":"1","leader":1,"leader_epoch":0,"isr":[1],"controller_epoch":1}', 'field "version"'),
        (b'{"version":1,"leader":"1","leader_epoch":0,"isr":[1],"controller_epoch":1}', 'field "leader"'),
        (b'{"version":1,"leader":true,"leader_epoch":0,"isr":[1],"controller_epoch":1}', "got boolean true"),
        (b'{"version":1,"leader":1.0,"leader_epoch":0,"isr":[1],"controller_epoch":1}', "got number 1.0"),
        (b'{"version":1,"leader":1,"leader_epoch":0,"isr":[1,"2"],"controller_epoch":1}', 'field "isr[1]"'),
        (b'{"version":1,"leader":1,"leader_epoch":0,"isr":1,"controller_epoch":1}', "expected an array"),
        (b'{"version":1,"leader":2147483648,"leader_epoch":0,"isr":[],"controller_epoch":1}', "out of range"),
        (b'{"version":1,"leader":1,"leader_epoch":0,"isr":[]}', 'missing required field "controller_epoch"'),
        (
            b'{"version":1,"leader":1,"leader_epoch":0,"isr":[],"controller_epoch":1,"leader_recovery_state":7}',
            "unknown leader recovery state 7",
        ),
    ],
)
def test_partition_state_refusals(data: bytes, problem: str) -> None:
    with pytest.raises(ZNodeDataError) as info:
        TopicPartitionStateZNode.decode(data, STATE)
    assert info.value.path == STATE
    assert problem in info.value.problem


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b'{"version":4,"partitions":{}}', "unsupported version 4"),
        (b'{"version":3,"partitions":{"-1":[1]}}', "partition id '-1'"),
        (b'{"version":3,"partitions":{"01":[1]}}', "partition id '01'"),
        (b'{"version":3,"partitions":{"zero":[1]}}', "partition id 'zero'"),
        (b'{"version":3,"partitions":{"0":[1]},"topic_id":"short"}', "not a 22-character base64 topic id"),
        (
            b'{"version":3,"partitions":{"0":[1]},"adding_replicas":[]}',
            'field "adding_replicas": expected an object',
        ),
        (b'{"version":3}', 'missing required field "partitions"'),
    ],
)
def test_topic_refusals(data: bytes, problem: str) -> None:
    with pytest.raises(ZNodeDataError, match="znode /brokers/topics/t") as info:
        TopicZNode.decode(data, "/brokers/topics/t")
    assert problem in info.value.problem


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b'{"version":6,"jmx_port":-1,"endpoints":[]}', "unsupported version 6"),
        (b'{"version":0,"jmx_port":-1,"endpoints":[]}', "unsupported version 0"),
        (b'{"version":5,"endpoints":[]}', 'missing required field "jmx_port"'),
        (b'{"version":2,"jmx_port":-1}', 'missing required field "endpoints"'),
        (b'{"version":2,"jmx_port":-1,"endpoints":["LOCAL://h:1"]}', "unknown security protocol 'LOCAL'"),
        (
            b'{"version":2,"jmx_port":-1,"endpoints":["PLAINTEXT:/h:1"]}',
            "not of the form LISTENER://host:port",
        ),
        (
            b'{"version":4,"jmx_port":-1,"endpoints":["A://h:1"],"listener_security_protocol_map":{"B":"SSL"}}',
            "listener A is not in the security protocol map",
        ),
        (b'{"version":1,"jmx_port":-1,"port":1}', "a version 1 registration needs a host"),
        (b'{"version":5,"jmx_port":-1,"endpoints":[],"timestamp":"soon"}', 'field "timestamp"'),
        (
            b'{"version":5,"jmx_port":-1,"endpoints":[],"features":{"f":{"min_version":3,"max_version":1}}}',
            "bad supported version range",
        ),
    ],
)
def test_broker_refusals(data: bytes, problem: str) -> None:
    with pytest.raises(ZNodeDataError) as info:
        BrokerIdZNode.decode(data, "/brokers/ids/1")
    assert info.value.path == "/brokers/ids/1"
    assert problem in info.value.problem


def test_broker_id_comes_from_the_path() -> None:
    with pytest.raises(ZNodeDataError, match="'abc' is not a broker id"):
        BrokerIdZNode.decode(b'{"version":1,"host":"h","port":1,"jmx_port":-1}', "/brokers/ids/abc")


@pytest.mark.parametrize(
    ("decode", "data", "problem"),
    [
        (ControllerZNode.decode, b'{"version":3,"brokerid":1}', "unsupported version 3"),
        (ControllerZNode.decode, b'{"version":1}', 'missing required field "brokerid"'),
        (ControllerZNode.decode, b'"3"', "expected a JSON object or a bare broker id"),
        (ControllerEpochZNode.decode, b"5\n", "expected a decimal number as plain text"),
        (ControllerEpochZNode.decode, b"99999999999", "out of range"),
        (ClusterIdZNode.decode, b'{"version":"2","id":"x"}', "unsupported version '2'"),
        (ClusterIdZNode.decode, b'{"version":"1","id":""}', "cluster id is empty"),
        (FeatureZNode.decode, b'{"version":2,"status":3,"features":{}}', "unknown status 3"),
        (
            FeatureZNode.decode,
            b'{"version":1,"status":1,"features":{"f":{"max_version_level":1}}}',
            "min_version",
        ),
        (
            ProducerIdBlockZNode.decode,
            b'{"version":1,"broker":1,"block_start":0,"block_end":"9"}',
            "block_start",
        ),
        (
            ProducerIdBlockZNode.decode,
            b'{"version":1,"broker":1,"block_start":"9","block_end":"0"}',
            "bad producer",
        ),
    ],
)
def test_small_refusals(decode, data: bytes, problem: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ZNodeDataError) as info:
        decode(data)
    assert problem in info.value.problem


@pytest.mark.parametrize(
    ("decode", "data", "problem"),
    [
        (ConfigEntityZNode.decode, b'{"version":1,"config":{"a":1}}', 'field "config.a": expected a string'),
        (ConfigEntityZNode.decode, b'{"version":1}', 'missing required field "config"'),
        (
            ConfigEntityChangeNotificationZNode.decode,
            b'{"version":1,"entity_type":"users","entity_name":"a"}',
            "only for topics or clients",
        ),
        (
            ConfigEntityChangeNotificationZNode.decode,
            b'{"version":2,"entity_path":"widgets/x"}',
            "bad entity path",
        ),
        (
            ConfigEntityChangeNotificationZNode.decode,
            b'{"version":3,"entity_path":"topics/x"}',
            "unsupported version",
        ),
        (
            AclZNodes.decode,
            b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow",'
            b'"operation":"Juggle","host":"*"}]}',
            "unknown AclOperation 'Juggle'",
        ),
        (
            AclZNodes.decode,
            b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Maybe",'
            b'"operation":"Read","host":"*"}]}',
            'field "acls[0].permissionType"',
        ),
        (LiteralAclChangeZNode.decode, b"just-a-name", "expected <ResourceType>:<name>"),
        (LiteralAclChangeZNode.decode, b"Widget:x", "unknown ResourceType 'Widget'"),
        (
            ExtendedAclChangeZNode.decode,
            b'{"version":1,"resourceType":"TOPIC","name":"x","patternType":"ANY"}',
            "unknown pattern type 'ANY'",
        ),
        (
            ConsumerIdZNode.decode,
            b'{"version":1,"subscription":{"t":1},"pattern":"regex"}',
            "static, white_list",
        ),
        (
            ConsumerIdZNode.decode,
            b'{"version":1,"subscription":{"t":0},"pattern":"static"}',
            "must be positive",
        ),
        (ConsumerOffsetZNode.decode, b"-", "expected a decimal number"),
        (ConsumerOwnerZNode.decode, b"", "owner thread id is empty"),
        (
            IsrChangeNotificationZNode.decode,
            b'{"version":1,"partitions":[{"topic":"t"}]}',
            '"partitions[0].partition"',
        ),
        (
            DelegationTokenInfoZNode.decode,
            b'{"version":1,"owner":"%zz","renewers":[],"issueTimestamp":1,'
            b'"maxTimestamp":1,"expiryTimestamp":1,"tokenId":"t"}',
            'field "owner"',
        ),
    ],
)
def test_more_refusals(decode, data: bytes, problem: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ZNodeDataError) as info:
        decode(data, "/some/path")
    assert info.value.path == "/some/path"
    assert problem in info.value.problem


def test_reassignment_refuses_duplicate_partitions() -> None:
    data = b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}'  # noqa: E501
    with pytest.raises(ZNodeDataError, match="partition t-0 is listed more than once"):
        ReassignPartitionsZNode.decode(data)


def test_empty_producer_id_block_and_config_nodes() -> None:
    assert ProducerIdBlockZNode.decode(b"") is None
    assert ConfigEntityZNode.decode(b"", "/config/topics/t") == {}


def test_deeply_nested_json_is_refused_not_crashing() -> None:
    with pytest.raises(ZNodeDataError):
        parse_json(b"[" * 100000 + b"]" * 100000, "/x")


# -- paths ---------------------------------------------------------------------------------------------------


def test_paths() -> None:
    tp = TopicPartition("t", 3)
    assert TopicPartitionStateZNode.path(tp) == "/brokers/topics/t/partitions/3/state"
    assert BrokerIdZNode.path(7) == "/brokers/ids/7"
    assert ISR_CHANGES.path(42) == "/isr_change_notification/isr_change_0000000042"
    assert ISR_CHANGES.sequence_number("isr_change_0000000042") == 42
    assert ISR_CHANGES.sequence_number("/isr_change_notification/isr_change_0000000042") == 42
    assert not ISR_CHANGES.is_notification("isr_change_42")
    assert ConsumerOffsetZNode.path("g", tp) == "/consumers/g/offsets/t/3"
    assert ConsumerOwnerZNode.path("g", tp) == "/consumers/g/owners/t/3"
    assert ConsumerIdZNode.path("g", "c1") == "/consumers/g/ids/c1"
    assert ConfigEntityZNode.path("users", "alice/clients/app") == "/config/users/alice/clients/app"
    assert PERSISTENT_TOP_LEVEL_PATHS[:9] == (
        "/consumers",
        "/brokers/ids",
        "/brokers/topics",
        "/config/changes",
        "/admin/delete_topics",
        "/brokers/seqid",
        "/isr_change_notification",
        "/latest_producer_id_block",
        "/log_dir_event_notification",
    )
    assert set(PERSISTENT_TOP_LEVEL_PATHS[9:]) == {
        f"/config/{t}" for t in ("topics", "clients", "users", "brokers", "ips")
    }


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\x00"])
def test_path_components_cannot_escape(name: str) -> None:
    with pytest.raises(ValueError):
        TopicZNode.path(name)
    with pytest.raises(ValueError):
        ConsumerIdZNode.path("g", name)


def test_config_entity_names() -> None:
    assert config_entity_name("users", "CN=alice,O=x") == "CN%3Dalice%2CO%3Dx"
    assert config_entity_name("clients", "my app*") == "my%20app%2A"
    assert config_entity_name("users", "<default>") == "<default>"
    assert config_entity_name("brokers", "3") == "3"
    assert config_entity_name("topics", "my.topic") == "my.topic"
    assert user_client_entity_name("a b", "<default>") == "a%20b/clients/<default>"
    with pytest.raises(ValueError, match="broker id"):
        config_entity_name("brokers", "x")
    with pytest.raises(ValueError):
        config_entity_name("widgets", "x")
    with pytest.raises(ValueError):
        ConfigEntityZNode.path("topics", "a/b")


# -- never a crash ------------------------------------------------------------------------------------------

DECODERS = [
    lambda d: BrokerIdZNode.decode(d, "/brokers/ids/1"),
    lambda d: TopicZNode.decode(d, "/brokers/topics/t"),
    lambda d: TopicPartitionStateZNode.decode(d, STATE),
    ControllerZNode.decode,
    ControllerEpochZNode.decode,
    ClusterIdZNode.decode,
    FeatureZNode.decode,
    ProducerIdBlockZNode.decode,
    ReassignPartitionsZNode.decode,
    PreferredReplicaElectionZNode.decode,
    lambda d: ConfigEntityZNode.decode(d, "/config/topics/t"),
    lambda d: ConfigEntityChangeNotificationZNode.decode(d, "/c"),
    lambda d: IsrChangeNotificationZNode.decode(d, "/i"),
    lambda d: LogDirEventNotificationZNode.decode(d, "/l"),
    lambda d: AclZNodes.decode(d, "/kafka-acl/Topic/t"),
    lambda d: LiteralAclChangeZNode.decode(d, "/a"),
    lambda d: ExtendedAclChangeZNode.decode(d, "/a"),
    lambda d: DelegationTokenInfoZNode.decode(d, "/d"),
    lambda d: ConsumerIdZNode.decode(d, "/consumers/g/ids/c"),
    lambda d: ConsumerOwnerZNode.decode(d, "/o"),
    lambda d: ConsumerOffsetZNode.decode(d, "/o"),
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
KNOWN_KEYS = [
    "version",
    "partitions",
    "topic",
    "partition",
    "replicas",
    "leader",
    "isr",
    "brokerid",
    "endpoints",
    "jmx_port",
    "acls",
    "config",
    "entity_path",
    "entity_type",
    "status",
    "features",
    "subscription",
    "pattern",
    "broker",
    "block_start",
    "block_end",
    "id",
    "host",
    "port",
    "leader_epoch",
    "controller_epoch",
]
known_keys = st.sampled_from(KNOWN_KEYS)
shaped_docs = st.dictionaries(known_keys, json_values, max_size=8).map(lambda d: {"version": 1, **d})


@settings(max_examples=150, deadline=None)
@given(
    data=st.one_of(
        st.binary(max_size=64),
        json_values.map(lambda v: json.dumps(v).encode()),
        shaped_docs.map(lambda v: json.dumps(v).encode()),
    )
)
def test_decoders_refuse_garbage_with_znode_data_error_only(data: bytes) -> None:
    for decode in DECODERS:
        try:
            decode(data)
        except ZNodeDataError:
            pass


STATE_LAYOUTS = [
    # zkafka's and Kafka's own layouts (the fast path) ...
    b'{"version":1,"leader":1,"leader_epoch":0,"isr":[1,2],"controller_epoch":3}',
    b'{"controller_epoch":3,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2]}',
    b'{"version":1,"leader":-1,"leader_epoch":999999999,"isr":[],"controller_epoch":0}',
    b'{"controller_epoch":7,"leader":-1,"version":1,"leader_epoch":-0,"isr":[3]}',
    b'{"version":1,"leader":2,"leader_epoch":12,"isr":[2,1,3,5,8],"controller_epoch":123456789}',
    # ... and what only the strict decoder may judge: other orders, spaces, recovery state,
    # 10-digit numbers (in range or not), leading zeros, wrong types, versions, duplicates.
    b'{"leader":1,"version":1,"leader_epoch":0,"isr":[1,2],"controller_epoch":3}',
    b'{"version": 1, "leader": 1, "leader_epoch": 0, "isr": [1, 2], "controller_epoch": 3}',
    b'{"version":1,"leader":2,"leader_epoch":5,"isr":[2],"controller_epoch":4,"leader_recovery_state":1}',
    b'{"version":1,"leader":1,"leader_epoch":2147483647,"isr":[1],"controller_epoch":3}',
    b'{"version":1,"leader":1,"leader_epoch":2147483648,"isr":[1],"controller_epoch":3}',
    b'{"version":1,"leader":01,"leader_epoch":0,"isr":[1],"controller_epoch":3}',
    b'{"version":1,"leader":1,"leader_epoch":0,"isr":[1,02],"controller_epoch":3}',
    b'{"version":1,"leader":1,"leader_epoch":0,"isr":[1,],"controller_epoch":3}',
    b'{"version":1,"leader":1.0,"leader_epoch":0,"isr":[1],"controller_epoch":3}',
    b'{"version":2,"leader":1,"leader_epoch":0,"isr":[1],"controller_epoch":3}',
    b'{"version":1,"leader":1,"leader":2,"leader_epoch":0,"isr":[1],"controller_epoch":3}',
    b'{"version":1,"leader":1,"leader_epoch":0,"isr":[1],"controller_epoch":3}\n',
    b'{"version":1,"leader":1,"leader_epoch":0,"isr":[1],"controller_epoch":3}}',
    b"",
]


def _decoded_or_error(decode, data: bytes) -> object:  # type: ignore[no-untyped-def]
    try:
        return decode(data, "/brokers/topics/t/partitions/0/state", stat(version=4))
    except ZNodeDataError as e:
        return str(e)


@pytest.mark.parametrize("data", STATE_LAYOUTS)
def test_partition_state_fast_path_decodes_exactly_as_the_strict_decoder(data: bytes) -> None:
    assert _decoded_or_error(TopicPartitionStateZNode.decode, data) == _decoded_or_error(
        TopicPartitionStateZNode.decode_strict, data
    )


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(-(2**33), 2**33), min_size=4, max_size=4),
    st.lists(st.integers(-(2**33), 2**33), max_size=4),
    st.booleans(),
)
def test_partition_state_fast_path_agrees_on_any_numbers(
    numbers: list[int], isr: list[int], kafka_layout: bool
) -> None:
    version, leader, leader_epoch, controller_epoch = numbers
    version = version % 3  # 0, 1 or 2: only 1 is known
    isr_text = ",".join(map(str, isr))
    if kafka_layout:
        text = (
            f'{{"controller_epoch":{controller_epoch},"leader":{leader},"version":{version},'
            f'"leader_epoch":{leader_epoch},"isr":[{isr_text}]}}'
        )
    else:
        text = (
            f'{{"version":{version},"leader":{leader},"leader_epoch":{leader_epoch},'
            f'"isr":[{isr_text}],"controller_epoch":{controller_epoch}}}'
        )
    data = text.encode()
    assert _decoded_or_error(TopicPartitionStateZNode.decode, data) == _decoded_or_error(
        TopicPartitionStateZNode.decode_strict, data
    )


@settings(max_examples=200, deadline=None)
@given(
    st.integers(-1, 2**31 - 1),
    st.integers(0, 2**31 - 1),
    st.lists(st.integers(0, 2**31 - 1), max_size=5),
    st.integers(0, 2**31 - 1),
)
def test_partition_state_encoding_is_the_json_document(
    leader: int, leader_epoch: int, isr: list[int], controller_epoch: int
) -> None:
    lai = LeaderAndIsr(leader, leader_epoch, tuple(isr))
    assert TopicPartitionStateZNode.encode(lai, controller_epoch) == encode_json(
        {
            "version": 1,
            "leader": leader,
            "leader_epoch": leader_epoch,
            "isr": isr,
            "controller_epoch": controller_epoch,
        }
    )

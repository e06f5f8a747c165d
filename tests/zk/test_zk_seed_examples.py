"""Every example from the seed documents: well-formed ones decode with their znode's codec, malformed
ones and schema blocks are refused with a ZNodeDataError that names the path. Key order and unknown keys
never matter."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from zk_seed_examples import (
    BY_NAME,
    EXAMPLES,
    OFFSET_JSON_PROPOSAL,
    OFFSET_TEXT,
    OFFSET_TEXT_SEED,
    SeedExample,
)

from zkafka.zk.acls import AclEntry, AclOperation, AclPermissionType
from zkafka.zk.errors import ZNodeDataError
from zkafka.zk.model import (
    BrokerInfo,
    ConfigChangeNotification,
    ConsumerRegistration,
    ControllerRegistration,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    SecurityProtocol,
    SubscriptionPattern,
    TopicAssignment,
    TopicPartition,
)
from zkafka.zk.znodes import (
    AclZNodes,
    BrokerIdZNode,
    ConfigEntityChangeNotificationZNode,
    ConfigEntityZNode,
    ConsumerIdZNode,
    ConsumerOffsetZNode,
    ControllerZNode,
    PreferredReplicaElectionZNode,
    ReassignPartitionsZNode,
    TopicPartitionStateZNode,
    TopicZNode,
)

SEEDS = Path("/work/shared/seeds")

DECODERS: dict[str, Callable[[bytes, str], Any]] = {
    "broker": BrokerIdZNode.decode,
    "topic": TopicZNode.decode,
    "partition_state": TopicPartitionStateZNode.decode,
    "controller": ControllerZNode.decode,
    "consumer": ConsumerIdZNode.decode,
    "reassign": ReassignPartitionsZNode.decode,
    "preferred": PreferredReplicaElectionZNode.decode,
    "config": ConfigEntityZNode.decode,
    "config_change": ConfigEntityChangeNotificationZNode.decode,
    "acl": AclZNodes.decode,
}

PLAINTEXT, SSL = SecurityProtocol.PLAINTEXT, SecurityProtocol.SSL


def _state(
    leader: int, epoch: int, isr: tuple[int, ...], controller_epoch: int
) -> LeaderIsrAndControllerEpoch:
    return LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, epoch, isr, zk_version=-2), controller_epoch)


ACCEPTED: dict[str, Any] = {
    "S000_BROKER_V5": BrokerInfo(
        id=0,
        endpoints=(EndPoint("PLAINTEXT", "192.168.1.76", 9092, PLAINTEXT),),
        jmx_port=-1,
        timestamp_ms=1649662012051,
        version=5,
    ),
    "S000_TOPIC_V2": TopicAssignment(topic="saint-test-topic", partitions={0: (0,)}, version=2),
    "S000_PARTITION_STATE": _state(0, 0, (0,), 2),
    "S000_CONTROLLER": ControllerRegistration(0, 1649662012132, None, 1),
    "S000_CONSUMER": ConsumerRegistration(
        {"saint-test-topic": 1}, SubscriptionPattern.WHITE_LIST, 1558617131642
    ),
    "S000_REASSIGN": {TopicPartition("bl_mall_wish", 1): (0, 1, 3)},
    "S000_PREFERRED": frozenset({TopicPartition("bl_mall_orders", 1), TopicPartition("bl_mall_products", 0)}),
    # Kafka's /controller decoder needs only "brokerid".
    "S001_CONTROLLER_FRAGMENT": ControllerRegistration(0, None, None, 1),
    "S001_STATE_EXAMPLE": _state(3, 0, (3, 0, 1), 1),
    "S001_CONTROLLER_EXAMPLE": ControllerRegistration(0, 1525741822769, None, 1),
    "S001_CONSUMER_EXAMPLE": ConsumerRegistration(
        {"topic2": 1}, SubscriptionPattern.WHITE_LIST, 1525747915336
    ),
    "S002_PARTITION_STATE_EXAMPLE": _state(2, 0, (2, 1), 1),
    "S002_CONTROLLER_EXAMPLE": ControllerRegistration(3, 1403061802981, None, 1),
    "S004_PARTITION_STATE_EXAMPLE": _state(0, 0, (0, 1), 1),
    "S004_BROKER_V1_EXAMPLE": BrokerInfo(
        id=1, endpoints=(EndPoint("PLAINTEXT", "192.168.1.148", 9092, PLAINTEXT),), jmx_port=9999, version=1
    ),
    "S004_CONSUMER_STATIC": ConsumerRegistration({"topic1": 1, "topic2": 2}, SubscriptionPattern.STATIC),
    "S004_CONSUMER_WHITELIST": ConsumerRegistration({"abc": 1}, SubscriptionPattern.WHITE_LIST),
    "S004_CONSUMER_BLACKLIST": ConsumerRegistration({"abc": 1}, SubscriptionPattern.BLACK_LIST),
    "S004_REASSIGN_EXAMPLE": {TopicPartition("Foo", 1): (0, 1, 3)},
    "S004_PREFERRED_EXAMPLE": frozenset({TopicPartition("Foo", 1), TopicPartition("Bar", 0)}),
    "S004_ACL": frozenset({AclEntry("User:alice", AclPermissionType.ALLOW, AclOperation.READ, "host1")}),
    "S004_BROKER_V3_EXAMPLE": BrokerInfo(
        id=1,
        endpoints=(EndPoint("PLAINTEXT", "host1", 9092, PLAINTEXT), EndPoint("SSL", "host1", 9093, SSL)),
        rack="us-east-1c",
        jmx_port=9999,
        timestamp_ms=2233345666,
        version=3,
    ),
}

MALFORMED = "malformed JSON"
MISSING_VERSION = 'missing required field "version"'

REFUSED: dict[str, str] = {
    # overview fragments: well-formed JSON, but not a whole partition state
    "S001_STATE_FRAGMENT": MISSING_VERSION,
    # trailing commas
    "S001_TOPIC_EXAMPLE": "Expecting property name enclosed in double quotes at line 7",
    "S002_TOPIC_EXAMPLE": "Expecting property name enclosed in double quotes at line 7",
    # missing commas between fields
    "S001_BROKER_EXAMPLE": "Expecting ',' delimiter at line 4",
    "S002_BROKER_EXAMPLE": "Expecting ',' delimiter at line 4",
    # "host","localhost"
    "S004_BROKER_V2_EXAMPLE": "Expecting ':' delimiter at line 3",
    # an extra closing brace
    "S004_TOPIC_EXAMPLE": "Extra data at line 4",
    # U+3000 ideographic spaces are not JSON whitespace
    "S002_CONSUMER_EXAMPLE": "Expecting property name enclosed in double quotes at line 2",
    # '...' placeholders
    "S004_TOPIC_CONFIG_081": MALFORMED,
    "S004_CLIENT_CONFIG_090": MALFORMED,
    # placeholder values: "topics/clients" is not an entity type
    "S004_CONFIG_CHANGE_V1": 'field "entity_type": version 1 notifications are only for topics or clients',
    # schema blocks written with placeholders instead of values
    "S001_TOPIC_SCHEMA": MALFORMED,
    "S001_STATE_SCHEMA": MALFORMED,
    "S001_BROKER_SCHEMA": MALFORMED,
    "S001_CONTROLLER_SCHEMA": MALFORMED,
    "S001_CONSUMER_SCHEMA": MALFORMED,
    "S002_TOPIC_SCHEMA": MALFORMED,
    "S002_PARTITION_STATE_SCHEMA": MALFORMED,
    "S002_BROKER_SCHEMA": MALFORMED,
    "S002_CONTROLLER_SCHEMA": MALFORMED,
    "S002_CONSUMER_SCHEMA": MALFORMED,
    # Avro-like schema documents: some malformed, some valid JSON without any znode field
    "S004_TOPIC_SCHEMA": MALFORMED,
    "S004_REASSIGN_SCHEMA": MALFORMED,
    "S004_PREFERRED_SCHEMA": MALFORMED,
    "S004_BROKER_V2_SCHEMA": MALFORMED,
    "S004_BROKER_V3_SCHEMA": MALFORMED,
    "S004_PARTITION_STATE_SCHEMA": MISSING_VERSION,
    "S004_BROKER_V1_SCHEMA": MISSING_VERSION,
    "S004_CONSUMER_SCHEMA": MISSING_VERSION,
}


def _decode(example: SeedExample, text: str | None = None) -> Any:
    data = (example.text if text is None else text).encode("utf-8")
    return DECODERS[example.codec](data, example.path)


def test_every_example_is_classified() -> None:
    names = {e.name for e in EXAMPLES}
    assert names == set(ACCEPTED) | set(REFUSED)
    assert not set(ACCEPTED) & set(REFUSED)
    assert {e.seed[:3] for e in EXAMPLES} == {"000", "001", "002", "004"}


@pytest.mark.skipif(not SEEDS.is_dir(), reason="seed documents not available on this machine")
def test_examples_are_verbatim_copies() -> None:
    for example in EXAMPLES:
        assert example.text in (SEEDS / example.seed).read_text(encoding="utf-8"), example.name


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_well_formed_example_decodes(name: str) -> None:
    assert _decode(BY_NAME[name]) == ACCEPTED[name]


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_malformed_example_is_refused_naming_the_path(name: str) -> None:
    example = BY_NAME[name]
    with pytest.raises(ZNodeDataError) as info:
        _decode(example)
    assert info.value.path == example.path
    assert REFUSED[name] in str(info.value)
    assert str(info.value).startswith(f"znode {example.path}: ")


def _permuted(value: Any, rng: random.Random, unknown: bool) -> Any:
    """Same JSON with object keys shuffled at every level, optionally with unknown keys added."""
    if isinstance(value, dict):
        items = [(k, _permuted(v, rng, unknown)) for k, v in value.items()]
        rng.shuffle(items)
        out = dict(items)
        if unknown:
            out["zz_future_field"] = [1, {"nested": None}]
        return out
    if isinstance(value, list):
        return [_permuted(v, rng, unknown) for v in value]
    return value


# Maps whose keys are data (partition ids, topics, config keys), not fields: adding keys there changes
# the value, so unknown keys are only added at the top level for these codecs.
TOP_LEVEL_ONLY = {"topic", "consumer", "broker", "acl", "reassign", "preferred"}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_key_order_and_unknown_keys_do_not_matter(name: str) -> None:
    example = BY_NAME[name]
    doc = json.loads(example.text)
    rng = random.Random(name)
    for _ in range(5):
        shuffled = _permuted(doc, rng, unknown=False)
        assert _decode(example, json.dumps(shuffled)) == ACCEPTED[name]
        with_unknown = _permuted(doc, rng, unknown=example.codec not in TOP_LEVEL_ONLY)
        with_unknown["zz_future_field"] = "kept or ignored"
        decoded = _decode(example, json.dumps(with_unknown))
        if isinstance(decoded, TopicAssignment):
            assert decoded.extra == {"zz_future_field": "kept or ignored"}
            decoded = TopicAssignment(**{**decoded.__dict__, "extra": {}})
        assert decoded == ACCEPTED[name]


@pytest.mark.parametrize(
    ("entity_type", "entity_name", "entity_path"),
    [("topics", "topic_name", "topics/topic_name"), ("clients", "client_id", "clients/client_id")],
)
def test_config_change_v1_example_with_concrete_values(
    entity_type: str, entity_name: str, entity_path: str
) -> None:
    example = BY_NAME["S004_CONFIG_CHANGE_V1"]
    text = example.text.replace("topics/clients", entity_type).replace("topic_name/client_id", entity_name)
    assert _decode(example, text) == ConfigChangeNotification(entity_path=entity_path, version=1)


def test_offset_text_from_the_seed_comments() -> None:
    assert OFFSET_TEXT_SEED.startswith("004")
    path = "/consumers/my-group/offsets/some-topic/0"
    assert ConsumerOffsetZNode.decode(OFFSET_TEXT.encode(), path) == 42
    with pytest.raises(ZNodeDataError, match="expected a decimal number as plain text"):
        ConsumerOffsetZNode.decode(OFFSET_JSON_PROPOSAL.encode(), path)

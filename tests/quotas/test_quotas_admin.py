"""Quota administration and replication throttles, the parts without a broker: `quotas.admin` against a
real ZooKeeper (Kafka's znodes and JSON, other keys of a user kept, the change notification), the
DescribeClientQuotas filter rules, throttled-replica lists and the reassignment's throttle plan."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from zkafka.admin.throttles import throttled_replicas
from zkafka.quotas.admin import QuotaAlterError, alter_quotas, check_quota_changes, entity_znode, read_quotas
from zkafka.quotas.entities import DEFAULT
from zkafka.quotas.replication import ALL, UNLIMITED, ReplicationQuota, parse_throttled_replicas
from zkafka.server.apis.client_quotas import _components, _matches
from zkafka.server.client_quotas import client_entity
from zkafka.storage.naming import TopicPartition
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import ConfigType


@pytest.fixture
def zk(zk_connect: str) -> Iterator[KafkaZkClient]:
    client = KafkaZkClient(zk_connect, session_timeout_ms=10000)
    client.create_top_level_paths()
    yield client
    client.close()


def test_entity_znodes_are_kafkas() -> None:
    assert entity_znode((None, "app")) == (ConfigType.CLIENT, "app")
    assert entity_znode((None, DEFAULT)) == (ConfigType.CLIENT, "<default>")
    assert entity_znode(("alice", None)) == (ConfigType.USER, "alice")
    assert entity_znode((DEFAULT, "app")) == (ConfigType.USER, "<default>/clients/app")
    assert entity_znode(("CN=a,O=b", "c/d")) == (ConfigType.USER, "CN%3Da%2CO%3Db/clients/c%2Fd")  # sanitized
    with pytest.raises(QuotaAlterError):
        entity_znode((None, None))


@pytest.mark.parametrize(
    ("added", "removed", "text"),
    [
        ({"producer_byte_rate": "1.5"}, [], "whole bytes"),
        ({"consumer_byte_rate": "-1"}, [], "positive"),
        ({"request_percentage": "many"}, [], "a number"),
        ({"producer_byte_rate": "0"}, [], "positive"),
        ({"retention.ms": "1"}, [], "not a client quota"),
        ({}, ["SCRAM-SHA-256"], "not a client quota"),
    ],
)
def test_bad_quota_changes_are_refused(added: dict[str, str], removed: list[str], text: str) -> None:
    with pytest.raises(QuotaAlterError, match=text):
        check_quota_changes(added, removed)


def test_alter_keeps_other_keys_and_notifies(zk: KafkaZkClient) -> None:
    zk.set_entity_config(ConfigType.USER, "alice", {"SCRAM-SHA-256": "salt=...,stored_key=..."})
    before = len(zk.get_children("/config/changes") or [])
    assert alter_quotas(zk, ("alice", None), {"producer_byte_rate": " 1024 "}, []) == {
        "producer_byte_rate": "1024"
    }
    data = json.loads(zk.get_data("/config/users/alice")[0])  # type: ignore[index]
    assert data == {
        "version": 1,
        "config": {"SCRAM-SHA-256": "salt=...,stored_key=...", "producer_byte_rate": "1024"},
    }
    assert len(zk.get_children("/config/changes") or []) == before + 1
    alter_quotas(zk, ("alice", None), {}, ["producer_byte_rate"])
    assert read_quotas(zk, ("alice", None)) == {}
    assert zk.get_entity_config(ConfigType.USER, "alice") == {"SCRAM-SHA-256": "salt=...,stored_key=..."}


def test_describe_filters_follow_kip_546() -> None:
    exact_user = _components([_C("user", 0, "alice")])
    assert _matches(exact_user, False, ("alice", None))
    assert _matches(exact_user, False, ("alice", "app"))
    assert not _matches(exact_user, True, ("alice", "app"))  # strict: the client part is not asked for
    assert not _matches(exact_user, False, (None, "app"))
    defaults = _components([_C("client-id", 1, None)])
    assert _matches(defaults, False, (None, DEFAULT)) and not _matches(defaults, False, (None, "app"))
    any_client = _components([_C("client-id", 2, None)])
    assert _matches(any_client, False, (None, "app")) and _matches(any_client, False, ("u", DEFAULT))
    for bad in ([_C("ip", 0, "1.2.3.4")], [_C("user", 0, None)], [_C("user", 2, None), _C("user", 1, None)]):
        with pytest.raises(QuotaAlterError):
            _components(bad)


class _C:
    def __init__(self, entity_type: str, match_type: int, match: str | None) -> None:
        self.entity_type, self.match_type, self.match = entity_type, match_type, match


def test_request_entities_name_the_principal() -> None:
    assert client_entity("User:alice", "app") == ("alice", "app")
    assert client_entity("User:ANONYMOUS", None) == ("ANONYMOUS", "")


def test_throttled_replica_lists() -> None:
    assert parse_throttled_replicas("", 1) == frozenset()
    assert parse_throttled_replicas("*", 1) == {ALL}
    assert parse_throttled_replicas("0:1, 1:2,2:1", 1) == {0, 2}
    with pytest.raises(ValueError, match="partition:brokerId"):
        parse_throttled_replicas("0-1", 1)
    quota = ReplicationQuota(1, samples=3, window_s=1)
    quota.update_topic("t", parse_throttled_replicas("*", 1))
    assert not quota.active  # no rate set: nothing to enforce
    quota.update_bound(1000)
    assert quota.active and quota.is_throttled("t", 7) and not quota.is_throttled("u", 0)
    quota.record(1500, 0)  # 1500 bytes over the 2-window floor: 750 B/s
    assert not quota.is_exceeded(0)
    quota.record(1000, 10)
    assert quota.is_exceeded(10)
    quota.update_bound(UNLIMITED)
    assert not quota.is_exceeded(10)


def test_reassignment_throttles_name_current_and_added_replicas() -> None:
    current = {TopicPartition("a", 0): (1, 2), TopicPartition("a", 1): (2, 3), TopicPartition("b", 0): (1,)}
    plan = {TopicPartition("a", 0): (3, 2), TopicPartition("a", 1): (2, 3), TopicPartition("b", 0): (1, 2)}
    assert throttled_replicas(current, plan) == {
        "a": {
            "leader.replication.throttled.replicas": "0:1,0:2",
            "follower.replication.throttled.replicas": "0:3",
        },
        "b": {
            "leader.replication.throttled.replicas": "0:1",
            "follower.replication.throttled.replicas": "0:2",
        },
    }

"""`QuotaConfigCache` against a real ZooKeeper: Kafka's znodes in, resolved bounds out, kept current by
`/config/changes`, and bad data logged once without stopping anything."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from zkafka.quotas.cache import QuotaConfigCache
from zkafka.quotas.entities import DEFAULT, ClientEntity
from zkafka.quotas.types import QuotaType
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import ConfigType
from zkafka.zk.znodes import CONFIG_CHANGES, config_entity_name, user_client_entity_name

P, F, R = QuotaType.PRODUCE, QuotaType.FETCH, QuotaType.REQUEST


@pytest.fixture
def zk(zk_connect: str) -> Iterator[KafkaZkClient]:
    client = KafkaZkClient(zk_connect, session_timeout_ms=10000)
    client.create_top_level_paths()
    yield client
    client.close()


def set_client(zk: KafkaZkClient, client_id: str, config: dict[str, str]) -> None:
    zk.set_entity_config(ConfigType.CLIENT, config_entity_name(ConfigType.CLIENT, client_id), config)


def set_user(zk: KafkaZkClient, user: str, config: dict[str, str], client_id: str | None = None) -> None:
    if client_id is None:
        name = config_entity_name(ConfigType.USER, user)
    else:
        name = user_client_entity_name(user, client_id)
    zk.set_entity_config(ConfigType.USER, name, config)


def bound(cache: QuotaConfigCache, quota: QuotaType, user: str, client: str) -> float | None:
    found = cache.limit(quota, ClientEntity(user, client))
    return None if found is None else found.bound


def test_loads_every_kind_of_entity_with_kafkas_names(zk: KafkaZkClient) -> None:
    set_client(zk, DEFAULT, {"producer_byte_rate": "1000"})
    set_client(zk, "app 1", {"producer_byte_rate": "2000", "consumer_byte_rate": "3000"})  # sanitized
    set_user(zk, DEFAULT, {"request_percentage": "50"})
    set_user(zk, "CN=alice,O=x", {"consumer_byte_rate": "4000", "SCRAM-SHA-256": "salt=..."})
    set_user(zk, "CN=alice,O=x", {"producer_byte_rate": "5000"}, client_id=DEFAULT)
    set_user(zk, DEFAULT, {"producer_byte_rate": "6000"}, client_id="batch")
    cache = QuotaConfigCache(zk)
    cache.load()
    assert cache.quotas() == {
        (None, DEFAULT): {P: 1000.0},
        (None, "app 1"): {P: 2000.0, F: 3000.0},
        (DEFAULT, None): {R: 50.0},
        ("CN=alice,O=x", None): {F: 4000.0},
        ("CN=alice,O=x", DEFAULT): {P: 5000.0},
        (DEFAULT, "batch"): {P: 6000.0},
    }
    assert bound(cache, P, "CN=alice,O=x", "app 1") == 5000.0  # user + default client beats client
    assert bound(cache, F, "CN=alice,O=x", "app 1") == 4000.0  # user beats client
    assert bound(cache, F, "bob", "app 1") == 3000.0
    assert bound(cache, P, "bob", "batch") == 6000.0  # default user + client beats client
    assert bound(cache, P, "bob", "other") == 1000.0
    assert bound(cache, F, "bob", "other") is None
    assert bound(cache, R, "ANONYMOUS", "other") == 50.0


def test_follows_change_notifications(zk: KafkaZkClient) -> None:
    cache = QuotaConfigCache(zk)
    cache.load()
    listener = cache.listener()
    listener.process_notifications()
    assert bound(cache, P, "u", "app") is None
    set_client(zk, "app", {"producer_byte_rate": "1000"})
    set_user(zk, "u", {"producer_byte_rate": "2000"}, client_id="app")
    listener.process_notifications()
    assert bound(cache, P, "u", "app") == 2000.0 and bound(cache, P, "v", "app") == 1000.0
    set_user(zk, "u", {}, client_id="app")  # quota removed
    listener.process_notifications()
    assert bound(cache, P, "u", "app") == 1000.0
    # A version 1 notification (clients only) as pre-2.0 tools wrote it.
    config = {"version": 1, "config": {"producer_byte_rate": "7"}}
    zk.set_or_create("/config/clients/app", json.dumps(config).encode())
    zk.create(
        CONFIG_CHANGES.path_prefix,
        json.dumps({"version": 1, "entity_type": "clients", "entity_name": "app"}).encode(),
        sequential=True,
    )
    listener.process_notifications()
    assert bound(cache, P, "v", "app") == 7.0


def test_bad_values_and_bad_znodes_are_logged_once_and_ignored(
    zk: KafkaZkClient, caplog: pytest.LogCaptureFixture
) -> None:
    set_client(zk, "good", {"producer_byte_rate": "1000"})
    set_client(zk, "half", {"producer_byte_rate": "lots", "consumer_byte_rate": "500"})
    zk.set_or_create("/config/clients/broken", b"{not json")
    cache = QuotaConfigCache(zk)
    with caplog.at_level(logging.WARNING):
        cache.load()
        cache.load()
        cache.refresh("clients", "half")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len([w for w in warnings if "/config/clients/half" in w]) == 1, warnings
    assert any("/config/clients/half" in w and "producer_byte_rate" in w and "'lots'" in w for w in warnings)
    assert len([w for w in warnings if "/config/clients/broken" in w]) == 1, warnings
    assert bound(cache, P, "u", "good") == 1000.0
    assert bound(cache, P, "u", "half") is None and bound(cache, F, "u", "half") == 500.0
    caplog.clear()
    listener = cache.listener()
    set_client(zk, "half", {"producer_byte_rate": "0"})  # another bad value: reported again
    listener.process_notifications()
    set_client(zk, "half", {"producer_byte_rate": "800"})
    listener.process_notifications()
    assert bound(cache, P, "u", "half") == 800.0
    assert [r for r in caplog.records if r.levelno == logging.WARNING and "half" in r.getMessage()]

"""The ZooKeeper half against a real ZooKeeper: the ACL cache following change notifications (a bad
ACL znode included) and SCRAM credentials stored as Kafka stores them."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator

import pytest
from scramp import ScramClient, ScramMechanism

from zkafka.security.acl_cache import AclCache
from zkafka.security.authorizer import AclAuthorizer, Action, AuthorizationResult, RequestInfo
from zkafka.security.principal import KafkaPrincipal
from zkafka.security.sasl import ScramServer
from zkafka.security.scram import (
    ScramCredential,
    ScramCredentialCache,
    ScramCredentialError,
    delete_credential,
    describe_credentials,
    upsert_credential,
)
from zkafka.zk.acls import (
    AclEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.watch_bridge import AsyncWatcher, ZkExecutor
from zkafka.zk.znodes import CONFIG_CHANGES

READ = AclEntry("User:alice", AclPermissionType.ALLOW, AclOperation.READ, "*")
WRITE = AclEntry("User:alice", AclPermissionType.ALLOW, AclOperation.WRITE, "*")
TOPIC = ResourcePattern(ResourceType.TOPIC, "orders")
PREFIX = ResourcePattern(ResourceType.GROUP, "app-", PatternType.PREFIXED)


@pytest.fixture
def zk(zk_connect: str) -> Iterator[KafkaZkClient]:
    client = KafkaZkClient(zk_connect, session_timeout_ms=10000)
    client.create_top_level_paths()
    yield client
    client.close()


def allowed(cache: AclCache, op: AclOperation, resource: ResourcePattern) -> bool:
    request = RequestInfo(KafkaPrincipal("User", "alice"), "10.0.0.1")
    return AclAuthorizer(cache).authorize_one(request, Action(op, resource)) is AuthorizationResult.ALLOWED


def test_acl_cache_loads_and_follows_notifications(zk: KafkaZkClient, zk_connect: str) -> None:
    zk.create_acl_paths()
    zk.update_resource_acls(TOPIC, lambda acls: acls | {READ})
    zk.update_resource_acls(PREFIX, lambda acls: acls | {READ})
    cache = AclCache(zk)
    cache.load()
    cache.process_notifications()
    assert allowed(cache, AclOperation.READ, TOPIC)
    assert allowed(cache, AclOperation.READ, ResourcePattern(ResourceType.GROUP, "app-1"))
    assert not allowed(cache, AclOperation.WRITE, TOPIC)

    # Another writer (another broker, the CLI) changes ZooKeeper; the notifications bring it in.
    with KafkaZkClient(zk_connect) as other:
        other.update_resource_acls(TOPIC, lambda acls: acls | {WRITE})
        other.update_resource_acls(PREFIX, lambda acls: frozenset())
    assert cache.process_notifications() == 2
    assert allowed(cache, AclOperation.WRITE, TOPIC)
    assert not allowed(cache, AclOperation.READ, ResourcePattern(ResourceType.GROUP, "app-1"))
    assert cache.snapshot.get(PREFIX) == frozenset()


def test_bad_acl_znode_is_reported_once_and_means_no_acls(
    zk: KafkaZkClient, caplog: pytest.LogCaptureFixture
) -> None:
    zk.create_acl_paths()
    zk.update_resource_acls(TOPIC, lambda acls: acls | {READ})
    zk.create("/kafka-acl/Topic/broken", b"{not json")
    zk.create_acl_change_notification(ResourcePattern(ResourceType.TOPIC, "broken"))
    zk.create("/kafka-acl-changes/acl_changes_", b"\xffgarbage", sequential=True)  # bad notification
    cache = AclCache(zk)
    with caplog.at_level(logging.WARNING):
        cache.load()
        cache.process_notifications()
        cache.refresh(ResourcePattern(ResourceType.TOPIC, "broken"))
    bad_lines = [r for r in caplog.records if "/kafka-acl/Topic/broken" in r.getMessage()]
    assert len(bad_lines) == 1, [r.getMessage() for r in caplog.records]
    assert "treating the resource as having no ACLs" in bad_lines[0].getMessage()
    assert any("ignoring change notification" in r.getMessage() for r in caplog.records)
    assert allowed(cache, AclOperation.READ, TOPIC)  # everything else still served
    broken = ResourcePattern(ResourceType.TOPIC, "broken")
    assert cache.snapshot.get(broken) == frozenset()
    # An update through the store replaces the bad data.
    zk.update_resource_acls(broken, lambda acls: acls | {READ})
    cache.process_notifications()
    assert allowed(cache, AclOperation.READ, broken)


def test_acl_cache_attached_to_an_event_loop(zk: KafkaZkClient, zk_connect: str) -> None:
    async def scenario() -> None:
        executor = ZkExecutor()
        watcher = AsyncWatcher(zk, asyncio.get_running_loop())
        cache = AclCache(zk)
        await executor.call(cache.load)
        cache.attach(watcher, executor)
        with KafkaZkClient(zk_connect) as other:
            other.update_resource_acls(TOPIC, lambda acls: acls | {READ})
        deadline = time.monotonic() + 10
        while not allowed(cache, AclOperation.READ, TOPIC):
            assert time.monotonic() < deadline, "the cache never saw the change"
            await asyncio.sleep(0.02)
        watcher.close()
        executor.shutdown()

    asyncio.run(scenario())


# -- SCRAM credentials ----------------------------------------------------------------------------------


def test_credentials_stored_as_kafka_stores_them(zk: KafkaZkClient, caplog: pytest.LogCaptureFixture) -> None:
    zk.set_entity_config("users", "alice%40example.com", {"producer_byte_rate": "1024"})
    with caplog.at_level(logging.DEBUG):
        upsert_credential(zk, "alice@example.com", "SCRAM-SHA-512", "s3cret-pw", 8192)
        upsert_credential(zk, "alice@example.com", "SCRAM-SHA-256", "s3cret-pw")
    assert "s3cret-pw" not in caplog.text
    data, _ = zk.get_data("/config/users/alice%40example.com")  # type: ignore[misc]
    assert b"s3cret-pw" not in data
    stored = json.loads(data)
    assert stored["version"] == 1 and set(stored["config"]) == {
        "producer_byte_rate",
        "SCRAM-SHA-512",
        "SCRAM-SHA-256",
    }
    value = stored["config"]["SCRAM-SHA-512"]
    assert [p.split("=", 1)[0] for p in value.split(",")] == [
        "salt",
        "stored_key",
        "server_key",
        "iterations",
    ]
    assert value.endswith(",iterations=8192")
    assert data.startswith(b'{"version":1,"config":{')  # compact, like Jackson
    changes = sorted(zk.get_children(CONFIG_CHANGES.root) or [])
    last = zk.get_data(CONFIG_CHANGES.path(changes[-1]))[0]  # type: ignore[index]
    assert last == b'{"version":2,"entity_path":"users/alice%40example.com"}'

    assert describe_credentials(zk, "alice@example.com") == {"SCRAM-SHA-512": 8192, "SCRAM-SHA-256": 4096}
    assert delete_credential(zk, "alice@example.com", "SCRAM-SHA-256")
    assert not delete_credential(zk, "alice@example.com", "SCRAM-SHA-256")
    assert describe_credentials(zk, "alice@example.com") == {"SCRAM-SHA-512": 8192}
    assert zk.get_entity_config("users", "alice%40example.com")["producer_byte_rate"] == "1024"
    for bad in [("SCRAM-SHA-1", 4096), ("SCRAM-SHA-256", 4095), ("SCRAM-SHA-256", 16385)]:
        with pytest.raises(ScramCredentialError) as info:
            upsert_credential(zk, "bob", bad[0], "pw-never-shown", bad[1])
        assert "pw-never-shown" not in str(info.value)


def test_generated_credential_validates_with_independent_scram_clients(zk: KafkaZkClient) -> None:
    upsert_credential(zk, "alice", "SCRAM-SHA-256", "alice-secret")
    cache = ScramCredentialCache(zk)
    cache.load()
    # Our server mechanism with the cache, against scramp's client.
    server = ScramServer("SCRAM-SHA-256", cache.get)
    client = ScramClient(["SCRAM-SHA-256"], "alice", "alice-secret")
    first = server.evaluate(client.get_client_first().encode())
    client.set_server_first(first.response.decode())
    final = server.evaluate(client.get_client_final().encode())
    assert final.complete, final.error
    client.set_server_final(final.response.decode())
    # scramp's own server fed straight from the znode value, against scramp's client: no zkafka code
    # between the stored string and the exchange but the parser.
    value = zk.get_entity_config("users", "alice")["SCRAM-SHA-256"]
    cred = ScramCredential.from_config_value(value)
    scramp_server = ScramMechanism("SCRAM-SHA-256").make_server(
        lambda user: (cred.salt, cred.stored_key, cred.server_key, cred.iterations)
    )
    client = ScramClient(["SCRAM-SHA-256"], "alice", "alice-secret")
    scramp_server.set_client_first(client.get_client_first())
    client.set_server_first(scramp_server.get_server_first())
    scramp_server.set_client_final(client.get_client_final())
    client.set_server_final(scramp_server.get_server_final())


def test_a_credential_written_the_way_kafka_writes_it_is_accepted(zk: KafkaZkClient) -> None:
    """Salt, keys and iterations made by scramp and formatted by hand in Kafka's format (as
    `kafka-configs --zookeeper` would leave them) log in through our cache and server."""
    import base64

    salt, stored, server_key, iterations = ScramMechanism("SCRAM-SHA-512").make_auth_info("pw-512", 4096)
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    value = f"salt={b64(salt)},stored_key={b64(stored)},server_key={b64(server_key)},iterations={iterations}"
    zk.set_entity_config("users", "carol", {"SCRAM-SHA-512": value})
    cache = ScramCredentialCache(zk)
    cache.load()
    server = ScramServer("SCRAM-SHA-512", cache.get)
    client = ScramClient(["SCRAM-SHA-512"], "carol", "pw-512")
    client.set_server_first(server.evaluate(client.get_client_first().encode()).response.decode())
    assert server.evaluate(client.get_client_final().encode()).complete


def test_credential_cache_follows_config_changes(
    zk: KafkaZkClient, zk_connect: str, caplog: pytest.LogCaptureFixture
) -> None:
    cache = ScramCredentialCache(zk)
    cache.load()
    listener = cache.listener()
    listener.process_notifications()
    assert cache.get("SCRAM-SHA-256", "dave") is None
    with KafkaZkClient(zk_connect) as other:
        upsert_credential(other, "dave", "SCRAM-SHA-256", "pw")
        other.set_entity_config("users", "dave/clients/app", {"producer_byte_rate": "1"})  # a quota: ignored
        other.set_entity_config(
            "users", "erin", {"SCRAM-SHA-256": "salt=not base64!,stored_key=,server_key=,iterations=x"}
        )
    with caplog.at_level(logging.WARNING):
        listener.process_notifications()
    assert cache.get("SCRAM-SHA-256", "dave") is not None
    assert cache.get("SCRAM-SHA-256", "erin") is None
    assert any("ignoring SCRAM-SHA-256 credential of user 'erin'" in r.getMessage() for r in caplog.records)
    assert "not base64!" not in caplog.text
    delete_credential(zk, "dave", "SCRAM-SHA-256")
    listener.process_notifications()
    assert cache.get("SCRAM-SHA-256", "dave") is None

"""`zkafka acls` as a real subprocess against the fixture ZooKeeper: kafka-acls' flags and output, and
znodes byte-compatible with what Kafka's AclAuthorizer writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from zkafka.security.acl_cache import AclCache
from zkafka.security.authorizer import AclAuthorizer, Action, AuthorizationResult, RequestInfo
from zkafka.security.principal import parse_principal
from zkafka.zk.acls import AclOperation, ResourcePattern, ResourceType
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.znodes import EXTENDED_ACL_CHANGES, LITERAL_ACL_CHANGES


def acls_cli(zk_connect: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "zkafka.cli.main",
            "acls",
            "--authorizer-properties",
            f"zookeeper.connect={zk_connect}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        input=stdin,
        env=env,
    )


@pytest.fixture
def zk(zk_connect: str) -> Iterator[KafkaZkClient]:
    client = KafkaZkClient(zk_connect)
    client.create_top_level_paths()
    yield client
    client.close()


def test_add_writes_kafkas_znodes_and_prints_like_kafka_acls(zk: KafkaZkClient, zk_connect: str) -> None:
    added = acls_cli(
        zk_connect, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders"
    )
    assert added.returncode == 0, added.stderr
    resource = "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
    assert added.stdout == (
        f"Adding ACLs for resource `{resource}`: \n"
        " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW) \n\n"
        f"Current ACLs for resource `{resource}`: \n"
        " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW) \n\n"
    )
    data, stat = zk.get_data("/kafka-acl/Topic/orders")  # type: ignore[misc]
    assert data == (
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}'
    )
    assert stat.version == 0
    changes = zk.get_children(LITERAL_ACL_CHANGES.root) or []
    assert [zk.get_data(LITERAL_ACL_CHANGES.path(c))[0] for c in changes] == [b"TOPIC:orders"]  # type: ignore[index]

    # Adding to the same resource is a versioned rewrite, and a deny host is kept per entry.
    again = acls_cli(
        zk_connect, "--add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.9",
        "--operation", "Write", "--topic", "orders",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    data, stat = zk.get_data("/kafka-acl/Topic/orders")  # type: ignore[misc]
    assert stat.version == 1
    assert json.loads(data)["acls"] == [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"},
        {"principal": "User:bob", "permissionType": "Deny", "operation": "Write", "host": "10.0.0.9"},
    ]


def test_prefixed_producer_consumer_and_the_cache_sees_them(zk: KafkaZkClient, zk_connect: str) -> None:
    prefixed = acls_cli(
        zk_connect, "--add", "--allow-principal", "User:app", "--operation", "Write", "--topic", "app-",
        "--resource-pattern-type", "prefixed",
    )  # fmt: skip
    assert prefixed.returncode == 0, prefixed.stderr
    assert json.loads(zk.get_data("/kafka-acl-extended/prefixed/Topic/app-")[0])["acls"] == [  # type: ignore[index]
        {"principal": "User:app", "permissionType": "Allow", "operation": "Write", "host": "*"}
    ]
    note = zk.get_children(EXTENDED_ACL_CHANGES.root)[0]  # type: ignore[index]
    assert zk.get_data(EXTENDED_ACL_CHANGES.path(note))[0] == (  # type: ignore[index]
        b'{"version":1,"resourceType":"TOPIC","name":"app-","patternType":"PREFIXED"}'
    )
    producer = acls_cli(
        zk_connect, "--add", "--producer", "--idempotent", "--allow-principal", "User:p", "--topic", "t",
        "--transactional-id", "tx",
    )  # fmt: skip
    assert producer.returncode == 0, producer.stderr
    ops = {e["operation"] for e in json.loads(zk.get_data("/kafka-acl/Topic/t")[0])["acls"]}  # type: ignore[index]
    assert ops == {"Write", "Describe", "Create"}
    ops = {e["operation"] for e in json.loads(zk.get_data("/kafka-acl/TransactionalId/tx")[0])["acls"]}  # type: ignore[index]
    assert ops == {"Write", "Describe"}
    cluster = json.loads(zk.get_data("/kafka-acl/Cluster/kafka-cluster")[0])["acls"]  # type: ignore[index]
    assert [e["operation"] for e in cluster] == ["IdempotentWrite"]
    consumer = acls_cli(
        zk_connect, "--add", "--consumer", "--allow-principal", "User:c", "--topic", "t", "--group", "g"
    )
    assert consumer.returncode == 0, consumer.stderr
    assert [e["operation"] for e in json.loads(zk.get_data("/kafka-acl/Group/g")[0])["acls"]] == ["Read"]  # type: ignore[index]

    cache = AclCache(zk)
    cache.load()
    authorizer = AclAuthorizer(cache)

    def allowed(principal: str, op: AclOperation, resource: ResourcePattern) -> bool:
        request = RequestInfo(parse_principal(principal), "127.0.0.1")
        return authorizer.authorize_one(request, Action(op, resource)) is AuthorizationResult.ALLOWED

    assert allowed("User:app", AclOperation.WRITE, ResourcePattern(ResourceType.TOPIC, "app-orders"))
    assert allowed("User:c", AclOperation.READ, ResourcePattern(ResourceType.GROUP, "g"))
    assert allowed(
        "User:p", AclOperation.IDEMPOTENT_WRITE, ResourcePattern(ResourceType.CLUSTER, "kafka-cluster")
    )
    assert not allowed("User:c", AclOperation.WRITE, ResourcePattern(ResourceType.TOPIC, "t"))


def test_list_with_filters(zk: KafkaZkClient, zk_connect: str) -> None:
    for args in (
        ("--allow-principal", "User:a", "--operation", "Read", "--topic", "orders"),
        (
            "--allow-principal",
            "User:b",
            "--operation",
            "Write",
            "--topic",
            "ord",
            "--resource-pattern-type",
            "prefixed",
        ),
        ("--allow-principal", "User:a", "--operation", "Describe", "--topic", "*"),
        ("--allow-principal", "User:a", "--operation", "Read", "--group", "g"),
    ):
        assert acls_cli(zk_connect, "--add", *args).returncode == 0
    everything = acls_cli(zk_connect, "--list")
    assert everything.returncode == 0, everything.stderr
    assert everything.stdout.count("Current ACLs for resource") == 4
    literal = acls_cli(zk_connect, "--list", "--topic", "orders")
    assert literal.stdout.count("Current ACLs") == 1 and "name=orders, patternType=LITERAL" in literal.stdout
    match = acls_cli(zk_connect, "--list", "--topic", "orders", "--resource-pattern-type", "match")
    assert match.stdout.count("Current ACLs") == 3  # orders, *, and the prefix ord
    by_principal = acls_cli(zk_connect, "--list", "--principal", "User:b")
    assert by_principal.stdout.startswith("ACLs for principal `User:b`\n")
    assert by_principal.stdout.count("Current ACLs") == 1 and "User:a" not in by_principal.stdout


def test_remove(zk: KafkaZkClient, zk_connect: str) -> None:
    acls_cli(zk_connect, "--add", "--allow-principal", "User:a", "--allow-principal", "User:b",
             "--operation", "Read", "--topic", "t")  # fmt: skip
    removed = acls_cli(
        zk_connect,
        "--remove",
        "--force",
        "--allow-principal",
        "User:a",
        "--operation",
        "Read",
        "--topic",
        "t",
    )
    assert removed.returncode == 0, removed.stderr
    assert [e["principal"] for e in json.loads(zk.get_data("/kafka-acl/Topic/t")[0])["acls"]] == ["User:b"]  # type: ignore[index]
    declined = acls_cli(zk_connect, "--remove", "--topic", "t", stdin="n\n")
    assert (
        "Are you sure you want to delete all ACLs for resource filter "
        "`ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`? (y/n)" in declined.stdout
    )
    assert zk.exists("/kafka-acl/Topic/t") is not None
    confirmed = acls_cli(zk_connect, "--remove", "--topic", "t", stdin="y\n")
    assert confirmed.returncode == 0, confirmed.stderr
    assert zk.exists("/kafka-acl/Topic/t") is None  # the last ACL gone: the znode is deleted, as Kafka does
    assert "Current ACLs" not in confirmed.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--list", "--bootstrap-server", "localhost:9092"), "only one of --bootstrap-server"),
        (("--add", "--topic", "t"), "You must specify one of: --allow-principal, --deny-principal"),
        (("--add", "--allow-principal", "User:a"), "You must provide at least one resource"),
        (("--add", "--list", "--topic", "t"), "exactly one action"),
        (("--add", "--allow-principal", "alice", "--topic", "t"), "principalType:principalName"),
        (
            ("--add", "--allow-principal", "User:a", "--operation", "ClusterAction", "--topic", "t"),
            "only supports operations",
        ),
        (
            ("--add", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t"),
            "unknown AclOperation",
        ),
        (
            ("--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"),
            "not valid when adding",
        ),
        (
            ("--add", "--consumer", "--allow-principal", "User:a", "--topic", "t"),
            "With --consumer you must specify",
        ),
        (
            ("--add", "--producer", "--allow-principal", "User:a", "--group", "g"),
            "With --producer you must specify a --topic",
        ),
        (("--list", "--allow-principal", "User:a"), "can't be used with --list"),
        (("--add", "--allow-principal", "User:a", "--topic", "a/b"), "Error while adding ACLs"),
    ],
)
def test_errors(zk: KafkaZkClient, zk_connect: str, args: tuple[str, ...], message: str) -> None:
    result = acls_cli(zk_connect, *args)
    assert result.returncode == 1 and message in result.stderr, (result.stdout, result.stderr)


def test_bootstrap_server_nobody_listening_is_a_clear_error() -> None:
    from zkafka.local.zookeeper import free_port

    result = subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", "acls", "--bootstrap-server", f"127.0.0.1:{free_port()}",
         "--list"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 1 and "no broker of" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr

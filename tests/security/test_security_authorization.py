"""The ACL authorizer in a running broker (issue 14, step 3): a principal without ACLs gets Kafka's
AUTHORIZATION_FAILED errors, and succeeds once `zkafka acls --add` has granted what it needs; the mTLS
principal is the mapped DN; Metadata lists only describable topics; a cluster action needs ClusterAction.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from secure_cluster import ADMIN, ADMIN_PASSWORD, ALICE, ALICE_PASSWORD, SecureCluster, secure_cluster

from zkafka.local.zookeeper import ZooKeeperServer

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AclOperation, AdminClient, NewTopic  # noqa: E402

AUTHORIZER = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    # the PLAINTEXT listener is the inter-broker one and the tests' own (fixtures, tools)
    "super.users": "User:ANONYMOUS;User:admin",
}


@pytest.fixture(scope="module")
def secured(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SecureCluster]:
    with secure_cluster(zookeeper_server, tmp_path_factory.mktemp("authz"), AUTHORIZER) as sc:
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{sc.plaintext}"})
        for f in admin.create_topics([NewTopic(t, 1, 1) for t in ("orders", "secret", "certs")]).values():
            f.result(30)
        yield sc


def acls(sc: SecureCluster, *args: str) -> str:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "zkafka.cli.main",
            "acls",
            "--authorizer-properties",
            f"zookeeper.connect={sc.cluster.zookeeper_connect}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def alice(sc: SecureCluster, **extra: object) -> dict[str, object]:
    return {
        "bootstrap.servers": f"127.0.0.1:{sc.sasl_plaintext}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": ALICE,
        "sasl.password": ALICE_PASSWORD,
        **extra,
    }


def _produce_error(conf: dict[str, object], topic: str) -> object:
    outcome: list[object] = []
    producer = ck.Producer({**conf, "message.timeout.ms": 10000, "linger.ms": 0})
    producer.produce(topic, b"x", on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(20)
    assert outcome, "no delivery report"
    return outcome[0]


def _consume(
    conf: dict[str, object], topic: str, group: str, want: int, timeout: float = 20
) -> tuple[list[bytes], list[object]]:
    consumer = ck.Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    errors: list[object] = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error() is not None:
            errors.append(msg.error())
            if msg.error().code() in (
                ck.KafkaError.GROUP_AUTHORIZATION_FAILED,
                ck.KafkaError.TOPIC_AUTHORIZATION_FAILED,
            ):
                break
            continue
        got.append(msg.value())
    consumer.close()
    return got, errors


def test_no_acls_then_zkafka_acls_add(secured: SecureCluster) -> None:
    err = _produce_error(alice(secured), "orders")
    assert err is not None and err.code() == ck.KafkaError.TOPIC_AUTHORIZATION_FAILED  # type: ignore[attr-defined]

    acls(secured, "--add", "--allow-principal", "User:alice", "--producer", "--topic", "orders")
    time.sleep(1)  # the change notification reaches the broker's ACL cache
    assert _produce_error(alice(secured), "orders") is None

    got, errors = _consume(alice(secured), "orders", "billing", 1)
    assert not got
    assert any(
        e.code() in (ck.KafkaError.GROUP_AUTHORIZATION_FAILED, ck.KafkaError.TOPIC_AUTHORIZATION_FAILED)
        for e in errors
    ), errors  # type: ignore[attr-defined]

    acls(
        secured,
        "--add",
        "--allow-principal",
        "User:alice",
        "--consumer",
        "--topic",
        "orders",
        "--group",
        "billing",
    )
    time.sleep(1)
    got, errors = _consume(alice(secured), "orders", "billing", 1)
    assert got == [b"x"], errors


def test_group_authorization_failed_for_a_group_without_acls(secured: SecureCluster) -> None:
    acls(secured, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders")
    time.sleep(1)
    got, errors = _consume(alice(secured), "orders", "no-acl-group", 1)
    assert not got
    assert any(e.code() == ck.KafkaError.GROUP_AUTHORIZATION_FAILED for e in errors), errors  # type: ignore[attr-defined]


def test_metadata_lists_only_describable_topics(secured: SecureCluster) -> None:
    acls(secured, "--add", "--allow-principal", "User:alice", "--operation", "Describe", "--topic", "orders")
    time.sleep(1)
    admin = AdminClient(alice(secured))
    topics = set(admin.list_topics(timeout=10).topics)
    assert "orders" in topics and "secret" not in topics
    everything = AdminClient(alice(secured, **{"sasl.username": ADMIN, "sasl.password": ADMIN_PASSWORD}))
    assert {"orders", "secret"} <= set(everything.list_topics(timeout=10).topics)  # a super user


def test_create_and_delete_topics_need_acls(secured: SecureCluster) -> None:
    admin = AdminClient(alice(secured))
    future = admin.create_topics([NewTopic("alice-new", 1, 1)])["alice-new"]
    with pytest.raises(ck.KafkaException) as info:
        future.result(20)
    assert info.value.args[0].code() == ck.KafkaError.TOPIC_AUTHORIZATION_FAILED
    future = admin.delete_topics(["secret"])["secret"]
    with pytest.raises(ck.KafkaException) as info:
        future.result(20)
    assert info.value.args[0].code() == ck.KafkaError.TOPIC_AUTHORIZATION_FAILED
    acls(
        secured,
        "--add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Create",
        "--topic",
        "alice-",
        "--resource-pattern-type",
        "prefixed",
    )
    time.sleep(1)
    admin.create_topics([NewTopic("alice-new", 1, 1)])["alice-new"].result(20)


def test_mtls_principal_is_authorized_by_its_mapped_name(secured: SecureCluster) -> None:
    chain, key = secured.client_cert("carol")
    conf = {
        "bootstrap.servers": f"127.0.0.1:{secured.ssl}",
        "security.protocol": "SSL",
        "ssl.ca.location": str(secured.ca_path),
        "ssl.certificate.location": str(chain),
        "ssl.key.location": str(key),
    }
    err = _produce_error(conf, "certs")
    assert err is not None and err.code() == ck.KafkaError.TOPIC_AUTHORIZATION_FAILED  # type: ignore[attr-defined]
    # ssl.principal.mapping.rules maps CN=carol,OU=clients,... to "carol"
    acls(secured, "--add", "--allow-principal", "User:carol", "--operation", "Write", "--topic", "certs")
    time.sleep(1)
    assert _produce_error(conf, "certs") is None


def test_cluster_actions_need_cluster_action(secured: SecureCluster) -> None:
    """An inter-broker API from an ordinary principal: CLUSTER_AUTHORIZATION_FAILED."""
    import socket
    import struct

    from zkafka.protocol import RequestHeader, decode_response, encode_request
    from zkafka.protocol.messages import (
        SaslAuthenticateRequest,
        SaslHandshakeRequest,
        UpdateMetadataRequest,
    )

    def call(s: socket.socket, key: int, version: int, request: object) -> object:
        s.sendall(encode_request(RequestHeader(key, version, 3, "t"), request))  # type: ignore[arg-type]
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        return decode_response(key, version, s.recv(size, socket.MSG_WAITALL))[1]

    with socket.create_connection(("127.0.0.1", secured.sasl_plaintext), timeout=10) as s:
        call(s, 17, 1, SaslHandshakeRequest(mechanism="PLAIN"))
        assert (
            call(
                s, 36, 1, SaslAuthenticateRequest(auth_bytes=f"\0{ALICE}\0{ALICE_PASSWORD}".encode())
            ).error_code
            == 0
        )  # type: ignore[attr-defined]
        r = call(s, 6, 5, UpdateMetadataRequest(controller_id=1, controller_epoch=1, broker_epoch=0))
        assert r.error_code == 31  # type: ignore[attr-defined]
    assert "Traceback" not in secured.log_text


def acls_via_broker(sc: SecureCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", "acls", "--bootstrap-server", f"127.0.0.1:{sc.plaintext}",
         *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_zkafka_acls_through_the_broker(secured: SecureCluster) -> None:
    """DescribeAcls / CreateAcls / DeleteAcls behind `zkafka acls --bootstrap-server`, printing what the
    ZooKeeper form prints."""
    added = acls_via_broker(secured, "--add", "--allow-principal", "User:erin", "--operation", "Read",
                            "--topic", "erin-", "--resource-pattern-type", "prefixed")  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert (
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=erin-, patternType=PREFIXED)`"
        in (added.stdout)
    )
    assert "(principal=User:erin, host=*, operation=READ, permissionType=ALLOW)" in added.stdout
    via_zk = acls(secured, "--list", "--topic", "erin-", "--resource-pattern-type", "prefixed")
    listed = acls_via_broker(secured, "--list", "--topic", "erin-", "--resource-pattern-type", "prefixed")
    assert listed.returncode == 0 and listed.stdout == via_zk, (listed.stdout, via_zk)
    matched = acls_via_broker(secured, "--list", "--topic", "erin-data", "--resource-pattern-type", "match")
    assert "name=erin-, patternType=PREFIXED" in matched.stdout
    removed = acls_via_broker(secured, "--remove", "--force", "--topic", "erin-", "--resource-pattern-type",
                              "prefixed")  # fmt: skip
    assert removed.returncode == 0, removed.stderr
    assert "erin" not in acls(secured, "--list", "--topic", "erin-", "--resource-pattern-type", "prefixed")
    bad = acls_via_broker(secured, "--add", "--allow-principal", "User:erin", "--topic", "a/b")
    assert bad.returncode == 1 and "Error while adding ACLs" in bad.stderr and "Traceback" not in bad.stderr


def test_acl_apis_need_cluster_permissions(secured: SecureCluster) -> None:
    """A principal without Cluster:Alter / Cluster:Describe gets CLUSTER_AUTHORIZATION_FAILED."""
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient(alice(secured))
    binding = AclBinding(ResourceType.TOPIC, "x", ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip
    with pytest.raises(ck.KafkaException) as info:
        admin.create_acls([binding])[binding].result(20)
    assert info.value.args[0].code() == ck.KafkaError.CLUSTER_AUTHORIZATION_FAILED
    any_filter = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip
    # on the wire (librdkafka's describe_acls reports this top-level error as an empty result)
    import socket
    import struct

    from zkafka.protocol import RequestHeader, decode_response, encode_request
    from zkafka.protocol.messages import DescribeAclsRequest, SaslAuthenticateRequest, SaslHandshakeRequest

    def call(s: socket.socket, key: int, version: int, request: object) -> object:
        s.sendall(encode_request(RequestHeader(key, version, 3, "t"), request))  # type: ignore[arg-type]
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        return decode_response(key, version, s.recv(size, socket.MSG_WAITALL))[1]

    with socket.create_connection(("127.0.0.1", secured.sasl_plaintext), timeout=10) as s:
        call(s, 17, 1, SaslHandshakeRequest(mechanism="PLAIN"))
        call(s, 36, 1, SaslAuthenticateRequest(auth_bytes=f"\0{ALICE}\0{ALICE_PASSWORD}".encode()))
        r = call(s, 29, 1, DescribeAclsRequest(resource_type_filter=1, pattern_type_filter=1, operation=1,
                                               permission_type=1))  # fmt: skip
        assert r.error_code == ck.KafkaError.CLUSTER_AUTHORIZATION_FAILED and not r.resources  # type: ignore[attr-defined]
    # a super user (admin over SASL) may, and sees what zkafka acls wrote
    su = AdminClient(alice(secured, **{"sasl.username": ADMIN, "sasl.password": ADMIN_PASSWORD}))
    su.create_acls([binding])[binding].result(20)
    found = su.describe_acls(any_filter).result(20)
    assert binding in found
    x_filter = AclBindingFilter(ResourceType.TOPIC, "x", ResourcePatternType.LITERAL, None, None,
                                AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip
    deleted = su.delete_acls([x_filter])
    assert [b for f in deleted.values() for b in f.result(20)] == [binding]


def _command_config(sc: SecureCluster, name: str, text: str) -> str:
    path = sc.directory / name
    path.write_text(text)
    return str(path)


def test_zkafka_acls_over_sasl_and_tls_with_command_config(secured: SecureCluster) -> None:
    """The client library speaks SASL (PLAIN, SCRAM) and TLS from Kafka's client keys."""
    from zkafka.security.scram import upsert_credential
    from zkafka.zk.client import KafkaZkClient

    with KafkaZkClient(secured.cluster.zookeeper_connect) as zk:
        upsert_credential(zk, ADMIN, "SCRAM-SHA-512", "admin-scram-secret", 4096)
    time.sleep(1)
    scram = _command_config(secured, "scram.properties", (
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="admin" password="admin-scram-secret";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={secured.ca_path}\n"
    ))  # fmt: skip
    plain = _command_config(secured, "plain.properties", (
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="admin" password="{ADMIN_PASSWORD}";\n'
    ))  # fmt: skip
    for port, config in ((secured.sasl_ssl, scram), (secured.sasl_plaintext, plain)):
        result = subprocess.run(
            [sys.executable, "-m", "zkafka.cli.main", "acls", "--bootstrap-server", f"localhost:{port}",
             "--command-config", config, "--add", "--allow-principal", "User:frank", "--operation", "Read",
             "--topic", "frank"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert "principal=User:frank" in result.stdout
    # alice over SASL is no super user: CLUSTER_AUTHORIZATION_FAILED; a wrong password fails cleanly
    alice_config = _command_config(secured, "alice.properties", (
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        f"sasl.username={ALICE}\nsasl.password={ALICE_PASSWORD}\n"
    ))  # fmt: skip
    wrong = _command_config(secured, "wrong.properties", (
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=admin\nsasl.password=nope\n"
    ))  # fmt: skip
    for config, message in ((alice_config, "CLUSTER_AUTHORIZATION_FAILED"), (wrong, "Authentication failed")):
        result = subprocess.run(
            [sys.executable, "-m", "zkafka.cli.main", "acls", "--bootstrap-server",
             f"127.0.0.1:{secured.sasl_plaintext}", "--command-config", config, "--list"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert result.returncode == 1 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and "nope" not in result.stderr


def test_authorized_operations_are_the_principals(secured: SecureCluster) -> None:
    """Metadata's topic_authorized_operations and the cluster's: what the ACLs allow the principal
    (Read implies Describe), everything for a super user."""
    topic = "ops-of-alice"
    plain = AdminClient({"bootstrap.servers": f"127.0.0.1:{secured.plaintext}"})
    plain.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    for op in ("Read", "Write"):
        acls(secured, "--add", "--allow-principal", "User:alice", "--operation", op, "--topic", topic)
    time.sleep(1)  # the change notification reaches the broker's ACL cache
    admin = AdminClient(alice(secured))
    described = admin.describe_topics(ck.TopicCollection([topic]), include_authorized_operations=True)
    ops = set(described[topic].result(30).authorized_operations)
    assert ops == {AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE}
    super_user = AdminClient(alice(secured, **{"sasl.username": ADMIN, "sasl.password": ADMIN_PASSWORD}))
    whole = super_user.describe_cluster(include_authorized_operations=True).result(30)
    assert AclOperation.ALTER in set(whole.authorized_operations)
    assert len(set(whole.authorized_operations)) == 7


def test_transactions_need_the_transactional_id_acl(secured: SecureCluster) -> None:
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{secured.plaintext}"})
    for f in admin.create_topics([NewTopic("txn-orders", 1, 1)]).values():
        f.result(30)

    def transact() -> None:
        p = ck.Producer(alice(secured, **{"transactional.id": "tx-alice"}))
        p.init_transactions(20)
        p.begin_transaction()
        p.produce("txn-orders", b"paid")
        p.commit_transaction(30)

    with pytest.raises(ck.KafkaException) as refused:
        transact()
    assert refused.value.args[0].code() == ck.KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED

    acls(
        secured, "--add", "--allow-principal", "User:alice", "--producer", "--topic", "txn-orders",
        "--transactional-id", "tx-alice",
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while True:  # until the change notification reaches the broker's ACL cache
        try:
            transact()
            break
        except ck.KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_the_web_console_is_judged_by_the_authorizer(secured: SecureCluster) -> None:
    """The console's pages and actions go through the brokers' admin APIs as its own principal:
    on the super user's listener `/acls` lists the bindings (DescribeAcls); connected as alice
    (`zkafka ui --command-config`), the authorizer refuses her the ACL list and adding partitions,
    and the console answers 403 with Kafka's error, never a traceback."""
    from starlette.testclient import TestClient

    from zkafka.client.security import ClientSecurity
    from zkafka.console.app import build_app
    from zkafka.console.settings import ConsoleSettings

    added = acls(
        secured, "--add", "--allow-principal", "User:grace", "--operation", "Write", "--topic", "graces"
    )
    assert "principal=User:grace" in added
    anonymous = ConsoleSettings(f"127.0.0.1:{secured.plaintext}")
    with TestClient(build_app(anonymous), raise_server_exceptions=False) as client:
        page = client.get("/acls")
        assert page.status_code == 200 and "no-authorizer" not in page.text
        assert "User:grace" in page.text and "graces" in page.text and "Write" in page.text
    alice = ClientSecurity("SASL_PLAINTEXT", mechanism="PLAIN", username=ALICE, password=ALICE_PASSWORD)
    as_alice = ConsoleSettings(f"127.0.0.1:{secured.sasl_plaintext}", security=alice)
    with TestClient(build_app(as_alice), raise_server_exceptions=False) as client:
        refused = client.get("/acls")
        assert refused.status_code == 403 and "CLUSTER_AUTHORIZATION_FAILED" in refused.text, refused.text
        grow = client.post("/topics/orders/partitions", data={"total": "2"})
        assert grow.status_code == 403 and "AUTHORIZATION_FAILED" in grow.text, grow.text
        assert "Traceback" not in refused.text + grow.text


def test_console_sign_in_acts_as_each_user(secured: SecureCluster) -> None:
    """`zkafka ui --login`: a page without a session sends the browser to sign in; the brokers check
    the password over SASL (a wrong one is refused, never echoed); alice then sees what the
    authorizer lets alice see, and the super user what it lets the super user see."""
    from starlette.testclient import TestClient

    from zkafka.client.security import ClientSecurity
    from zkafka.console.app import build_app
    from zkafka.console.settings import ConsoleSettings

    acls(secured, "--add", "--allow-principal", "User:heidi", "--operation", "Read", "--topic", "heidis")
    listener = ClientSecurity("SASL_PLAINTEXT", mechanism="PLAIN")
    settings = ConsoleSettings(f"127.0.0.1:{secured.sasl_plaintext}", security=listener, login=True)
    with TestClient(build_app(settings), raise_server_exceptions=False, follow_redirects=False) as client:
        r = client.get("/acls")
        assert r.status_code == 303 and r.headers["location"].endswith("/login?next=%2Facls")
        r = client.post("/login", data={"username": ALICE, "password": "wrong-pass", "next": "/acls"})
        assert r.status_code == 401 and "sign-in refused" in r.text and "wrong-pass" not in r.text, r.text
        r = client.post("/login", data={"username": ALICE, "password": ALICE_PASSWORD, "next": "/acls"})
        assert r.status_code == 303 and r.headers["location"] == "/acls"
        assert (
            "httponly" in r.headers["set-cookie"].lower()
            and "samesite=strict" in r.headers["set-cookie"].lower()
        )
        r = client.get("/acls")
        assert r.status_code == 403 and "CLUSTER_AUTHORIZATION_FAILED" in r.text and ALICE in r.text
        assert client.get("/zookeeper?path=/").status_code == 404  # no authorizer guards ZooKeeper
        r = client.post("/logout")
        assert r.status_code == 303 and client.get("/acls").status_code == 303
        r = client.post(
            "/login", data={"username": ADMIN, "password": ADMIN_PASSWORD, "next": "//evil.example"}
        )
        assert r.status_code == 303 and r.headers["location"] == "/"  # never off to another site
        r = client.get("/acls")
        assert r.status_code == 200 and "User:heidi" in r.text, r.text[-500:]


def test_fetch_sessions_are_authorized_on_every_fetch_and_answer_only_their_owner(
    secured: SecureCluster,
) -> None:
    """KIP-227 sessions under the authorizer: every partition a session caches is authorized again
    on each incremental fetch (an ACL removed mid-session is felt at once, as in Kafka), and a
    session is found only by the principal that opened it."""
    import asyncio

    from zkafka.client.connection import BrokerConnection
    from zkafka.client.security import ClientSecurity
    from zkafka.protocol import ErrorCode
    from zkafka.protocol.messages import FetchRequest

    topic = "sessioned"
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{secured.plaintext}"})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    grant = ["--allow-principal", "User:alice", "--operation", "Read", "--topic", topic]
    acls(secured, "--add", *grant)

    def fetch(session_id: int, epoch: int, partitions: list[int]) -> FetchRequest:
        parts = [
            FetchRequest.FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=1024)
            for p in partitions
        ]
        topics = [FetchRequest.FetchTopic(topic=topic, partitions=parts)] if parts else []
        return FetchRequest(
            max_wait_ms=0, min_bytes=0, session_id=session_id, session_epoch=epoch, topics=topics
        )

    def errors(response: object) -> list[int]:
        return [p.error_code for t in response.responses for p in t.partitions]  # type: ignore[attr-defined]

    async def run() -> None:
        security = ClientSecurity.from_config(
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": ALICE,
                "sasl.password": ALICE_PASSWORD,
            }
        )
        conn = await BrokerConnection.open("127.0.0.1", secured.sasl_plaintext, security=security)
        anonymous = await BrokerConnection.open("127.0.0.1", secured.plaintext)
        try:
            deadline = time.monotonic() + 30
            while True:  # the grant reaches the broker's ACL cache through a change notification
                full = await conn.send(fetch(0, 0, [0]), version=12)
                if errors(full) == [0] or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
            assert errors(full) == [0] and full.session_id > 0
            sid, epoch = full.session_id, 1
            # another principal (a super user, even) does not find alice's session
            theirs = await anonymous.send(fetch(sid, epoch, []), version=12)
            assert theirs.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
            acls(secured, "--remove", "--force", *grant)
            deadline = time.monotonic() + 30
            while True:  # the request lists nothing: the cached partition is what gets denied
                inc = await conn.send(fetch(sid, epoch, []), version=12)
                assert inc.error_code == 0 and inc.session_id == sid
                epoch += 1
                if errors(inc) == [ErrorCode.TOPIC_AUTHORIZATION_FAILED] or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
            assert errors(inc) == [ErrorCode.TOPIC_AUTHORIZATION_FAILED]
        finally:
            conn.close()
            anonymous.close()

    asyncio.run(run())

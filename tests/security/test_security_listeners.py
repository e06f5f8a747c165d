"""TLS and SASL on real broker listeners, with real clients (issue 14, steps 1-2).

One broker with PLAINTEXT, SSL (mTLS requested), SASL_PLAINTEXT and SASL_SSL listeners; SCRAM users
written to ZooKeeper as Kafka writes them. confluent-kafka and kafka-python produce and consume over
SASL_SSL with SCRAM-SHA-512, SASL_PLAINTEXT with PLAIN, and SSL with a client certificate, aiokafka
(admin, produce, group consume) and kcat (produce, consume, group consume, metadata) over the two SASL
ones; wrong passwords, unknown mechanisms, requests before authentication and hostile bytes get Kafka's
answers and leave the broker serving everyone else with no traceback in its log.
"""

from __future__ import annotations

import socket
import ssl
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from secure_cluster import (
    ADMIN,
    ADMIN_PASSWORD,
    ALICE,
    ALICE_PASSWORD,
    SecureCluster,
    secure_cluster,
)

from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol import ErrorCode, RequestHeader, decode_response, encode_request
from zkafka.protocol.messages import (
    ApiVersionsRequest,
    MetadataRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from zkafka.security.scram import upsert_credential
from zkafka.zk.client import KafkaZkClient

ck = pytest.importorskip("confluent_kafka")
SCRAM_USER, SCRAM_PASSWORD = "scrammy", "scram-secret"


@pytest.fixture(scope="module")
def secure(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SecureCluster]:
    with secure_cluster(zookeeper_server, tmp_path_factory.mktemp("secure")) as sc:
        with KafkaZkClient(sc.cluster.zookeeper_connect) as zk:
            upsert_credential(zk, SCRAM_USER, "SCRAM-SHA-512", SCRAM_PASSWORD, 4096)
            upsert_credential(zk, SCRAM_USER, "SCRAM-SHA-256", SCRAM_PASSWORD, 4096)
        yield sc


def _client_config(sc: SecureCluster, kind: str, **extra: str) -> dict[str, str]:
    if kind == "sasl_ssl_scram":
        conf = {
            "bootstrap.servers": f"127.0.0.1:{sc.sasl_ssl}",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": SCRAM_USER,
            "sasl.password": SCRAM_PASSWORD,
            "ssl.ca.location": str(sc.ca_path),
        }
    elif kind == "sasl_plain":
        conf = {
            "bootstrap.servers": f"127.0.0.1:{sc.sasl_plaintext}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": ALICE,
            "sasl.password": ALICE_PASSWORD,
        }
    elif kind == "ssl":
        chain, key = sc.client_cert("carol")
        conf = {
            "bootstrap.servers": f"127.0.0.1:{sc.ssl}",
            "security.protocol": "SSL",
            "ssl.ca.location": str(sc.ca_path),
            "ssl.certificate.location": str(chain),
            "ssl.key.location": str(key),
        }
    else:
        raise AssertionError(kind)
    conf.update(extra)
    return conf


def _produce_consume(conf: dict[str, str], topic: str) -> list[bytes]:
    producer = ck.Producer({**conf, "linger.ms": 5})
    for i in range(5):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(30) == 0
    consumer = ck.Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < 5 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.close()
    return got


@pytest.mark.parametrize("kind", ["sasl_ssl_scram", "sasl_plain", "ssl"])
def test_confluent_kafka_produces_and_consumes(secure: SecureCluster, kind: str) -> None:
    topic = f"ck-{kind.replace('_', '-')}"
    assert _produce_consume(_client_config(secure, kind), topic) == [f"v{i}".encode() for i in range(5)]


@pytest.mark.parametrize("kind", ["sasl_ssl_scram", "sasl_plain", "ssl"])
def test_kafka_python_produces_and_consumes(secure: SecureCluster, kind: str) -> None:
    kafka = pytest.importorskip("kafka")
    if kind == "sasl_ssl_scram":
        conf = dict(
            bootstrap_servers=f"127.0.0.1:{secure.sasl_ssl}",
            security_protocol="SASL_SSL",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username=SCRAM_USER,
            sasl_plain_password=SCRAM_PASSWORD,
            ssl_cafile=str(secure.ca_path),
        )
    elif kind == "ssl":
        chain, key = secure.client_cert("kp-client")
        conf = dict(
            bootstrap_servers=f"127.0.0.1:{secure.ssl}",
            security_protocol="SSL",
            ssl_cafile=str(secure.ca_path),
            ssl_certfile=str(chain),
            ssl_keyfile=str(key),
        )
    else:
        conf = dict(
            bootstrap_servers=f"127.0.0.1:{secure.sasl_plaintext}",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username=ADMIN,
            sasl_plain_password=ADMIN_PASSWORD,
        )
    topic = f"kp-{kind.replace('_', '-')}"
    producer = kafka.KafkaProducer(**conf)
    for i in range(5):
        producer.send(topic, f"v{i}".encode())
    producer.flush(30)
    producer.close()
    consumer = kafka.KafkaConsumer(
        topic, group_id=f"g-{topic}", auto_offset_reset="earliest", consumer_timeout_ms=15000, **conf
    )
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < 5 and time.monotonic() < deadline:
        for records in consumer.poll(500).values():
            got.extend(r.value for r in records)
    consumer.close()
    assert got == [f"v{i}".encode() for i in range(5)]


def test_wrong_password_is_sasl_authentication_failed(secure: SecureCluster) -> None:
    for kind, extra in (
        ("sasl_plain", {"sasl.password": "nope"}),
        ("sasl_ssl_scram", {"sasl.password": "nope"}),
    ):
        errors: list[object] = []
        conf = _client_config(secure, kind, **extra, error_cb=errors.append, log_level=0)  # type: ignore[arg-type]
        producer = ck.Producer(conf)
        deadline = time.monotonic() + 15
        while not errors and time.monotonic() < deadline:
            producer.poll(0.2)
        assert errors and errors[0].code() == ck.KafkaError._AUTHENTICATION, errors  # type: ignore[attr-defined]
        assert "Authentication failed" in errors[0].str()  # type: ignore[attr-defined]
    # ... and on the wire: SASL_AUTHENTICATION_FAILED with a message, then the close
    with _sock(secure.sasl_plaintext) as s:
        assert _call(s, 17, 1, SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
        r = _call(s, 36, 1, SaslAuthenticateRequest(auth_bytes=b"\0alice\0wrong"))
        assert r.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert r.error_message and "wrong" not in r.error_message
        assert _closed(s)


def _sock(port: int, tls: SecureCluster | None = None) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    if tls is not None:
        ctx = ssl.create_default_context(cafile=str(tls.ca_path))
        s = ctx.wrap_socket(s, server_hostname="localhost")
    return s


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def _call(s: socket.socket, key: int, version: int, request: object, correlation_id: int = 7):
    s.sendall(encode_request(RequestHeader(key, version, correlation_id, "sec-test"), request))  # type: ignore[arg-type]
    (size,) = struct.unpack(">i", _recv_exact(s, 4))
    return decode_response(key, version, _recv_exact(s, size))[1]


def _closed(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except (ConnectionError, ssl.SSLError):
        return True


def test_unknown_mechanism_lists_the_enabled_ones(secure: SecureCluster) -> None:
    with _sock(secure.sasl_plaintext) as s:
        r = _call(s, 17, 1, SaslHandshakeRequest(mechanism="GSSAPI"))
        assert r.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert list(r.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert _closed(s)


def test_only_the_handshake_before_authentication(secure: SecureCluster) -> None:
    with _sock(secure.sasl_plaintext) as s:
        assert _call(s, 18, 0, ApiVersionsRequest()).error_code == 0
        s.sendall(encode_request(RequestHeader(3, 1, 8, "sec-test"), MetadataRequest(topics=None)))
        assert _closed(s)
    # SaslAuthenticate before any handshake: ILLEGAL_SASL_STATE, then the close
    with _sock(secure.sasl_plaintext) as s:
        r = _call(s, 36, 1, SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"))
        assert r.error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert _closed(s)


def test_sasl_apis_on_a_plaintext_listener_are_illegal_state(secure: SecureCluster) -> None:
    with _sock(secure.plaintext) as s:
        assert (
            _call(s, 17, 1, SaslHandshakeRequest(mechanism="PLAIN")).error_code
            == ErrorCode.ILLEGAL_SASL_STATE
        )
        assert _call(s, 3, 1, MetadataRequest(topics=None)).brokers


def test_handshake_v0_then_raw_tokens(secure: SecureCluster) -> None:
    with _sock(secure.sasl_plaintext) as s:
        assert _call(s, 17, 0, SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
        token = f"\0{ALICE}\0{ALICE_PASSWORD}".encode()
        s.sendall(struct.pack(">i", len(token)) + token)
        assert _recv_exact(s, 4) == b"\0\0\0\0"  # PLAIN's empty server token
        assert _call(s, 3, 1, MetadataRequest(topics=None)).brokers
    with _sock(secure.sasl_plaintext) as s:
        assert _call(s, 17, 0, SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
        s.sendall(struct.pack(">i", 5) + b"\0a\0bx")
        assert _closed(s)


def test_hostile_input_is_refused_and_the_broker_keeps_serving(secure: SecureCluster) -> None:
    # garbage SCRAM tokens
    with _sock(secure.sasl_plaintext) as s:
        assert _call(s, 17, 1, SaslHandshakeRequest(mechanism="SCRAM-SHA-512")).error_code == 0
        r = _call(s, 36, 1, SaslAuthenticateRequest(auth_bytes=b"\xff\xfe garbage,,=,r"))
        assert r.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert _closed(s)
    # a huge announced size before authentication: closed at once, nothing allocated
    with _sock(secure.sasl_plaintext) as s:
        s.sendall(struct.pack(">i", 50_000_000) + b"x" * 100)
        assert _closed(s)
    # TLS garbage on an SSL port, and plaintext Kafka on a TLS port
    for port in (secure.ssl, secure.sasl_ssl):
        with _sock(port) as s:
            s.sendall(b"\x16\x03\x01\x00\x05hello" + b"\x00" * 64)
            assert _closed(s)
        with _sock(port) as s:
            s.sendall(encode_request(RequestHeader(18, 0, 1, "x"), ApiVersionsRequest()))
            assert _closed(s)
    # everyone else is still served
    with _sock(secure.sasl_ssl, tls=secure) as s:
        assert _call(s, 17, 1, SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
        r = _call(s, 36, 1, SaslAuthenticateRequest(auth_bytes=f"\0{ALICE}\0{ALICE_PASSWORD}".encode()))
        assert r.error_code == 0
        assert _call(s, 3, 1, MetadataRequest(topics=None)).brokers
    assert "Traceback" not in secure.log_text


def test_passwords_never_reach_the_broker_log(secure: SecureCluster) -> None:
    text = secure.log_text
    for secret in (ADMIN_PASSWORD, ALICE_PASSWORD, SCRAM_PASSWORD):
        assert secret not in text


def test_mtls_principal_is_the_mapped_dn(secure: SecureCluster, tmp_path: Path) -> None:
    """The SSL connection's principal, seen through a client-certificate handshake (the authorizer
    tests check it decides by this name)."""
    chain, key = secure.client_cert("dave")
    ctx = ssl.create_default_context(cafile=str(secure.ca_path))
    ctx.load_cert_chain(str(chain), str(key))
    with ctx.wrap_socket(
        socket.create_connection(("127.0.0.1", secure.ssl), timeout=10), server_hostname="localhost"
    ) as s:
        assert _call(s, 3, 1, MetadataRequest(topics=None)).brokers


@pytest.fixture(scope="module")
def reauth(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SecureCluster]:
    overrides = {"connections.max.reauth.ms": "1500"}
    with secure_cluster(zookeeper_server, tmp_path_factory.mktemp("reauth"), overrides) as sc:
        yield sc


def _plain_login(s: socket.socket, version: int = 1) -> object:
    assert _call(s, 17, 1, SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
    r = _call(s, 36, version, SaslAuthenticateRequest(auth_bytes=f"\0{ALICE}\0{ALICE_PASSWORD}".encode()))
    assert r.error_code == 0
    return r


def test_sessions_expire_and_reauthentication_keeps_the_connection(reauth: SecureCluster) -> None:
    """KIP-368: SaslAuthenticate v1 tells the session lifetime; past it, anything but a
    re-authentication closes the connection; re-authenticating keeps it."""
    with _sock(reauth.sasl_plaintext) as s:
        assert _plain_login(s).session_lifetime_ms == 1500  # type: ignore[attr-defined]
        assert _call(s, 3, 1, MetadataRequest(topics=None)).brokers
        time.sleep(1.7)
        s.sendall(encode_request(RequestHeader(3, 1, 9, "sec-test"), MetadataRequest(topics=None)))
        assert _closed(s)
    with _sock(reauth.sasl_plaintext) as s:
        _plain_login(s)
        time.sleep(1.7)
        _plain_login(s)  # re-authentication on the same connection
        assert _call(s, 3, 1, MetadataRequest(topics=None)).brokers
    with _sock(reauth.sasl_plaintext) as s:  # v0 clients cannot re-authenticate: no lifetime
        assert _plain_login(s, version=0)
        time.sleep(1.7)
        assert _call(s, 3, 1, MetadataRequest(topics=None)).brokers


def test_confluent_kafka_reauthenticates(reauth: SecureCluster) -> None:
    conf = _client_config(reauth, "sasl_plain")
    before = len(reauth.log_text)
    producer = ck.Producer({**conf, "linger.ms": 5})
    for i in range(4):
        producer.produce("reauth", f"v{i}".encode())
        assert producer.flush(30) == 0
        time.sleep(0.8)  # the session expires twice while the producer keeps its connection
    assert "SASL session expired" not in reauth.log_text[before:]
    assert "closing connection" not in reauth.log_text[before:]


def test_acl_apis_without_an_authorizer_are_security_disabled(secure: SecureCluster) -> None:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", "acls", "--bootstrap-server",
         f"127.0.0.1:{secure.plaintext}", "--list"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1 and "SECURITY_DISABLED" in result.stderr, result.stderr


@pytest.mark.parametrize("kind", ["sasl_ssl_scram", "ssl_mtls", "sasl_plain"])
def test_zkafka_client_library_over_tls_and_sasl(secure: SecureCluster, kind: str) -> None:
    """zkafka's own Producer, Consumer and AdminClient with Kafka's client keys."""
    import asyncio

    from zkafka.client.admin import AdminClient
    from zkafka.client.consumer import Consumer
    from zkafka.client.producer import Producer
    from zkafka.client.security import ClientSecurity

    if kind == "sasl_ssl_scram":
        port, keys = secure.sasl_ssl, {
            "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{SCRAM_USER}" password="{SCRAM_PASSWORD}";',
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(secure.ca_path),
        }  # fmt: skip
    elif kind == "ssl_mtls":
        chain, key = secure.client_cert("zed")
        port, keys = secure.ssl, {
            "security.protocol": "SSL", "ssl.ca.location": str(secure.ca_path),
            "ssl.certificate.location": str(chain), "ssl.key.location": str(key),
        }  # fmt: skip
    else:
        port, keys = secure.sasl_plaintext, {
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": ALICE, "sasl.password": ALICE_PASSWORD,
        }  # fmt: skip
    security = ClientSecurity.from_config(keys)
    bootstrap = f"127.0.0.1:{port}"
    topic = f"lib-{kind.replace('_', '-')}"

    async def scenario() -> list[bytes]:
        async with AdminClient(bootstrap, security=security) as admin:
            await admin.create_topic(topic, 1, 1)
        async with Producer(bootstrap, security=security, linger_ms=5) as producer:
            for i in range(3):
                await producer.send(topic, f"v{i}".encode(), partition=0)
            await producer.flush()
        async with Consumer(bootstrap, security=security) as consumer:
            consumer.assign([(topic, 0)])
            consumer.seek((topic, 0), 0)
            got: list[bytes] = []
            for _ in range(50):
                got += [r.value for r in await consumer.poll(200)]
                if len(got) >= 3:
                    break
            return got

    assert asyncio.run(scenario()) == [b"v0", b"v1", b"v2"]


def test_scram_credentials_made_with_zkafka_configs_log_in(secure: SecureCluster) -> None:
    """kafka-configs' way: `configs --zookeeper --entity-type users --add-config SCRAM-...=[...]`
    writes the credential a SCRAM client then logs in with; --describe shows mechanisms and
    iterations only; --delete-config removes it, and the login fails."""
    import subprocess
    import sys

    from confluent_kafka.admin import AdminClient

    def configs(*args: str) -> subprocess.CompletedProcess[str]:
        base = [
            sys.executable,
            "-m",
            "zkafka.cli.main",
            "configs",
            "--zookeeper",
            secure.cluster.zookeeper_connect,
        ]
        return subprocess.run(
            [*base, "--entity-type", "users", "--entity-name", "dora", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def logs_in() -> bool:
        conf = {
            "bootstrap.servers": f"127.0.0.1:{secure.sasl_ssl}",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "dora",
            "sasl.password": "dora-pw",
            "ssl.ca.location": str(secure.ca_path),
        }
        try:
            AdminClient(conf).list_topics(timeout=10)
        except ck.KafkaException:
            return False
        return True

    added = configs("--alter", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=dora-pw]")
    assert added.returncode == 0, added.stderr
    assert added.stdout == "Completed updating config for user dora.\n"
    described = configs("--describe")
    assert (
        described.stdout
        == "SCRAM credential configs for user-principal 'dora' are SCRAM-SHA-256=iterations=8192\n"
    )
    assert "dora-pw" not in described.stdout + secure.log_text
    deadline = time.monotonic() + 20  # the brokers pick the credential up from /config/changes
    while not logs_in():
        assert time.monotonic() < deadline, "the new SCRAM credential never worked"
        time.sleep(0.5)
    assert configs("--alter", "--delete-config", "SCRAM-SHA-256").returncode == 0
    deadline = time.monotonic() + 20
    while logs_in():
        assert time.monotonic() < deadline, "the deleted SCRAM credential still works"
        time.sleep(0.5)
    # a quota key on a user is a client quota now, kept beside the credentials; mixing is refused
    refused = configs("--alter", "--add-config", "producer_byte_rate=1024,SCRAM-SHA-512=[password=x]")
    assert refused.returncode == 1 and "separate commands" in refused.stderr
    assert configs("--alter", "--add-config", "producer_byte_rate=1024").returncode == 0
    assert configs("--describe").stdout.endswith(
        "Configs for user-principal 'dora' are producer_byte_rate=1024\n"
    )


def _aiokafka_security(sc: SecureCluster, kind: str) -> dict[str, object]:
    from aiokafka.helpers import create_ssl_context

    if kind == "sasl_ssl_scram":
        return dict(
            bootstrap_servers=f"127.0.0.1:{sc.sasl_ssl}",
            security_protocol="SASL_SSL",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username=SCRAM_USER,
            sasl_plain_password=SCRAM_PASSWORD,
            ssl_context=create_ssl_context(cafile=str(sc.ca_path)),
        )
    return dict(
        bootstrap_servers=f"127.0.0.1:{sc.sasl_plaintext}",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username=ADMIN,
        sasl_plain_password=ADMIN_PASSWORD,
    )


@pytest.mark.parametrize("kind", ["sasl_ssl_scram", "sasl_plain"])
def test_aiokafka_admin_produces_and_consumes_in_a_group(secure: SecureCluster, kind: str) -> None:
    pytest.importorskip("aiokafka")
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    topic = f"aio-{kind.replace('_', '-')}"

    async def run() -> list[bytes]:
        admin = AIOKafkaAdminClient(**_aiokafka_security(secure, kind))
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
            assert topic in await admin.list_topics()
        finally:
            await admin.close()
        producer = AIOKafkaProducer(acks="all", **_aiokafka_security(secure, kind))
        await producer.start()
        try:
            for i in range(6):
                await producer.send_and_wait(topic, f"v{i}".encode(), partition=i % 2)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic, group_id=f"g-{topic}", auto_offset_reset="earliest", **_aiokafka_security(secure, kind)
        )
        await consumer.start()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(60):
                while len(got) < 6:
                    batches = await consumer.getmany(timeout_ms=500)
                    got.extend(r.value for records in batches.values() for r in records)
            await consumer.commit()
        finally:
            await consumer.stop()
        return got

    assert sorted(asyncio.run(run())) == [f"v{i}".encode() for i in range(6)]


def _kcat_security(sc: SecureCluster, kind: str) -> list[str]:
    if kind == "sasl_ssl_scram":
        settings = {
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": SCRAM_USER,
            "sasl.password": SCRAM_PASSWORD,
            "ssl.ca.location": str(sc.ca_path),
        }
        port = sc.sasl_ssl
    else:
        settings = {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": ALICE,
            "sasl.password": ALICE_PASSWORD,
        }
        port = sc.sasl_plaintext
    args = ["-b", f"127.0.0.1:{port}"]
    for key, value in settings.items():
        args += ["-X", f"{key}={value}"]
    return args


@pytest.mark.parametrize("kind", ["sasl_ssl_scram", "sasl_plain"])
def test_kcat_produces_consumes_and_lists(secure: SecureCluster, kind: str) -> None:
    import shutil
    import subprocess

    if shutil.which("kcat") is None:
        pytest.skip("kcat is not installed")
    topic = f"kcat-{kind.replace('_', '-')}"
    security = _kcat_security(secure, kind)
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(_client_config(secure, kind))
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    produced = subprocess.run(
        ["kcat", *security, "-P", "-t", topic],
        input="one\ntwo\nthree\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(
        ["kcat", *security, "-C", "-t", topic, "-o", "beginning", "-c", "3", "-e", "-q"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.split() == ["one", "two", "three"]
    grouped = subprocess.run(
        ["kcat", *security, "-X", "auto.offset.reset=earliest", "-G", f"g-{topic}", topic, "-c", "3", "-q"],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert grouped.returncode == 0, grouped.stderr
    assert sorted(grouped.stdout.split()) == ["one", "three", "two"]
    listed = subprocess.run(
        ["kcat", *security, "-L", "-t", topic], capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0 and f'topic "{topic}" with 1 partitions' in listed.stdout, listed.stderr
    # a wrong password is refused, and kcat says so
    wrong = [a if not a.startswith("sasl.password=") else "sasl.password=wrong" for a in security]
    refused = subprocess.run(["kcat", *wrong, "-L"], capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0

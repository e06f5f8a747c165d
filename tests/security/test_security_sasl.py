"""SASL server mechanisms (PLAIN, SCRAM-SHA-256/512) against independent clients: scramp's ScramClient,
and hand-built RFC 4616 messages; hostile input always ends in a clean failure step."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scramp import ScramClient, ScramMechanism

from zkafka.security.principal import KafkaPrincipal
from zkafka.security.sasl import MAX_TOKEN_BYTES, PlainServer, ScramServer, create_sasl_server
from zkafka.security.scram import ScramCredential, make_credential

USERS = {"alice": "alice-secret", "admin": "admin-secret"}


def plain(authzid: str, user: str, password: str) -> bytes:
    return f"{authzid}\0{user}\0{password}".encode()


def test_plain_accepts_a_configured_user() -> None:
    server = PlainServer(USERS)
    step = server.evaluate(plain("", "alice", "alice-secret"))
    assert step.complete and not step.failed and step.response == b""
    assert server.principal == KafkaPrincipal("User", "alice")
    # An authzid equal to the user is accepted (Kafka's rule), any further token refused.
    assert PlainServer(USERS).evaluate(plain("alice", "alice", "alice-secret")).complete
    assert server.evaluate(plain("", "alice", "alice-secret")).failed


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (plain("", "alice", "wrong"), "Invalid username or password"),
        (plain("", "mallory", "x"), "Invalid username or password"),
        (plain("", "", "x"), "username not specified"),
        (plain("", "alice", ""), "password not specified"),
        (plain("admin", "alice", "alice-secret"), "authorization id that is different"),
        (b"alice\0alice-secret", "expected 3 tokens, got 2"),
        (b"\0a\0b\0c", "expected 3 tokens, got 4"),
        (b"\xff\xfe\0a\0b", "not UTF-8"),
        (b"", "expected 3 tokens, got 1"),
        (b"x" * (MAX_TOKEN_BYTES + 1), "larger than"),
    ],
)
def test_plain_failures_are_clean(token: bytes, message: str) -> None:
    server = PlainServer(USERS)
    step = server.evaluate(token)
    assert step.failed and message in (step.error or "")
    assert server.principal is None
    assert "alice-secret" not in (step.error or "")


@pytest.fixture(params=["SCRAM-SHA-256", "SCRAM-SHA-512"])
def mechanism(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def lookup_for(creds: dict[tuple[str, str], ScramCredential]):  # type: ignore[no-untyped-def]
    return lambda mechanism, user: creds.get((mechanism, user))


def scram_exchange(server: ScramServer, client: ScramClient) -> tuple[bool, str | None]:
    first = server.evaluate(client.get_client_first().encode())
    if first.failed:
        return False, first.error
    client.set_server_first(first.response.decode())
    final = server.evaluate(client.get_client_final().encode())
    if final.failed:
        return False, final.error
    client.set_server_final(final.response.decode())  # raises if the server signature is wrong
    return final.complete, None


def test_scram_with_scramps_client(mechanism: str) -> None:
    creds = {(mechanism, "alice"): make_credential(mechanism, "alice-secret", 4096)}
    server = ScramServer(mechanism, lookup_for(creds))
    ok, error = scram_exchange(server, ScramClient([mechanism], "alice", "alice-secret"))
    assert ok, error
    assert server.principal == KafkaPrincipal("User", "alice")


def test_scram_refuses_wrong_password_and_unknown_user(mechanism: str) -> None:
    creds = {(mechanism, "alice"): make_credential(mechanism, "alice-secret", 4096)}
    server = ScramServer(mechanism, lookup_for(creds))
    ok, error = scram_exchange(server, ScramClient([mechanism], "alice", "wrong"))
    assert not ok and error == "Authentication failed: Invalid user credentials"
    assert server.principal is None
    unknown = ScramServer(mechanism, lookup_for(creds))
    ok, error = scram_exchange(unknown, ScramClient([mechanism], "bob", "alice-secret"))
    assert not ok and error == "Authentication failed: Invalid user credentials"


def test_scram_with_a_hand_written_rfc5802_client() -> None:
    """A second, minimal client written from RFC 5802 here (not scramp) logs in with the same keys."""
    import hashlib
    import hmac

    mech, password = "SCRAM-SHA-512", "pa,ss=w0rd"
    creds = {(mech, "bob"): make_credential(mech, password, 8192)}
    server = ScramServer(mech, lookup_for(creds))
    c_nonce = "fyko+d2lbbFgONRv9qkxdawL"
    first_bare = f"n=bob,r={c_nonce}"
    step = server.evaluate(f"n,,{first_bare}".encode())
    server_first = step.response.decode()
    attrs = dict(a.split("=", 1) for a in server_first.split(","))
    assert attrs["r"].startswith(c_nonce) and int(attrs["i"]) == 8192
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.digest(salted, b"Client Key", "sha512")
    without_proof = f"c=biws,r={attrs['r']}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.digest(hashlib.sha512(client_key).digest(), auth_message, "sha512")
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    final = server.evaluate(f"{without_proof},p={base64.b64encode(proof).decode()}".encode())
    assert final.complete, final.error
    server_key = hmac.digest(salted, b"Server Key", "sha512")
    expected = hmac.digest(server_key, auth_message, "sha512")
    assert final.response == b"v=" + base64.b64encode(expected)


def test_scram_hostile_input(mechanism: str) -> None:
    creds = {(mechanism, "alice"): make_credential(mechanism, "alice-secret", 4096)}

    def fresh() -> ScramServer:
        return ScramServer(mechanism, lookup_for(creds))

    for token in [
        b"",
        b"garbage",
        b"\xff\xfe",
        b"n,,n=alice",
        b"p=tls-unique,,n=alice,r=abc",
        b"n,,n=alice,r=abc,tokenauth=true",
        b"n,a=bob,n=alice,r=abc",
        b"x" * (MAX_TOKEN_BYTES + 1),
    ]:
        step = fresh().evaluate(token)
        assert step.failed and step.error, token[:40]

    # Right first message, then a client-final with a wrong nonce, bad base64 or garbage.
    for final in [b"c=biws,r=wrongnonce,p=AAAA", b"c=biws,r={nonce},p=!!!notbase64", b"\x00\x01", b""]:
        server = fresh()
        client = ScramClient([mechanism], "alice", "alice-secret")
        first = server.evaluate(client.get_client_first().encode())
        nonce = dict(a.split("=", 1) for a in first.response.decode().split(","))["r"]
        step = server.evaluate(final.replace(b"{nonce}", nonce.encode()))
        assert step.failed and step.error and server.principal is None
        assert server.evaluate(b"anything").failed  # finished

    # Authzid equal to the user is Kafka-legal.
    server = fresh()
    step = server.evaluate(b"n,a=alice,n=alice,r=abcdef")
    assert not step.failed and step.response.startswith(b"r=abcdef")


@settings(max_examples=300, deadline=None)
@given(first=st.binary(max_size=200), second=st.binary(max_size=200))
def test_scram_never_raises(first: bytes, second: bytes) -> None:
    creds = {("SCRAM-SHA-256", "alice"): make_credential("SCRAM-SHA-256", "pw", 4096)}
    server = ScramServer("SCRAM-SHA-256", lookup_for(creds))
    for token in (first, second):
        step = server.evaluate(token)
        assert not step.complete


@settings(max_examples=300, deadline=None)
@given(token=st.binary(max_size=200))
def test_plain_never_raises(token: bytes) -> None:
    step = PlainServer(USERS).evaluate(token)
    assert step.failed or step.complete


def test_credential_matches_scramp_for_ascii_passwords(mechanism: str) -> None:
    """Our derivation (raw UTF-8, like Kafka) equals scramp's make_auth_info where SASLprep is a no-op."""
    salt = b"0123456789abcdef"
    ours = make_credential(mechanism, "alice-secret", 4096, salt=salt)
    salt_out, stored, server_key, iterations = ScramMechanism(mechanism).make_auth_info(
        "alice-secret", 4096, salt=salt
    )
    assert (ours.salt, ours.stored_key, ours.server_key, ours.iterations) == (
        salt_out,
        stored,
        server_key,
        iterations,
    )


def test_create_sasl_server() -> None:
    assert isinstance(create_sasl_server("PLAIN", plain_users=USERS), PlainServer)
    assert (
        create_sasl_server("SCRAM-SHA-512", scram_credentials=lambda m, u: None).mechanism == "SCRAM-SHA-512"
    )
    for bad in ("GSSAPI", "OAUTHBEARER", "plain"):
        with pytest.raises(ValueError):
            create_sasl_server(bad, plain_users=USERS, scram_credentials=lambda m, u: None)
    with pytest.raises(ValueError, match="not configured"):
        create_sasl_server("PLAIN")


# -- kafka-python's client-side mechanisms as independent peers -------------------------------------------


def test_kafka_python_scram_client(mechanism: str) -> None:
    from kafka.net.sasl.scram import SaslMechanismScram

    creds = {(mechanism, "alice"): make_credential(mechanism, "alice-secret", 4096)}
    server = ScramServer(mechanism, lookup_for(creds))
    client = SaslMechanismScram(
        sasl_plain_username="alice", sasl_plain_password="alice-secret", sasl_mechanism=mechanism
    )
    while not client.is_done():
        step = server.evaluate(client.auth_bytes())
        assert not step.failed, step.error
        client.receive(step.response)  # raises on a wrong server signature
    assert client.is_authenticated() and server.complete

    wrong = SaslMechanismScram(
        sasl_plain_username="alice", sasl_plain_password="nope", sasl_mechanism=mechanism
    )
    server = ScramServer(mechanism, lookup_for(creds))
    wrong.receive(server.evaluate(wrong.auth_bytes()).response)
    assert server.evaluate(wrong.auth_bytes()).error == "Authentication failed: Invalid user credentials"


def test_kafka_python_plain_client_and_jaas() -> None:
    from kafka.net.sasl.plain import SaslMechanismPlain

    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'
    )
    server = PlainServer.from_jaas(jaas)
    client = SaslMechanismPlain(sasl_plain_username="alice", sasl_plain_password="alice-secret")
    step = server.evaluate(client.auth_bytes())  # kafka-python sends authzid = username
    client.receive(step.response)
    assert step.complete and client.is_authenticated()
    assert server.principal == KafkaPrincipal("User", "alice")
    bad = SaslMechanismPlain(sasl_plain_username="alice", sasl_plain_password="admin-secret")
    assert PlainServer.from_jaas(jaas).evaluate(bad.auth_bytes()).failed


def test_passwords_are_used_raw_like_kafka_clients() -> None:
    """A password SASLprep would change (a no-break space becomes a space): the credential is derived
    from the raw UTF-8 bytes, as Kafka's tools derive it and as kafka-python (like the Java client and
    librdkafka) answers, so that client logs in."""
    from kafka.net.sasl.scram import SaslMechanismScram

    password = "pass\u00a0word"
    creds = {("SCRAM-SHA-256", "alice"): make_credential("SCRAM-SHA-256", password, 4096)}
    server = ScramServer("SCRAM-SHA-256", lookup_for(creds))
    client = SaslMechanismScram(
        sasl_plain_username="alice", sasl_plain_password=password, sasl_mechanism="SCRAM-SHA-256"
    )
    while not client.is_done():
        step = server.evaluate(client.auth_bytes())
        assert not step.failed, step.error
        client.receive(step.response)
    assert server.complete
    prepped = ScramMechanism("SCRAM-SHA-256").make_auth_info(
        password, 4096, salt=creds[("SCRAM-SHA-256", "alice")].salt
    )
    assert prepped[1] != creds[("SCRAM-SHA-256", "alice")].stored_key  # scramp's make_auth_info would differ


@pytest.mark.parametrize("prefix", ["fyko+d2lbbFgONRv9qkxdawL", "", "x"])
def test_scram_final_nonce_that_ends_with_the_servers_is_accepted_as_kafka_does(prefix: str) -> None:
    """librdkafka <= 2.0 (kcat) sends its client nonce again in front of the server's nonce; Kafka's
    server only checks that the final nonce ends with its own, and so does ours; the proof still counts."""
    import hashlib
    import hmac

    mech, password = "SCRAM-SHA-256", "pw"
    server = ScramServer(mech, lookup_for({(mech, "kc"): make_credential(mech, password, 4096)}))
    c_nonce = "fyko+d2lbbFgONRv9qkxdawL"
    first_bare = f"n=kc,r={c_nonce}"
    server_first = server.evaluate(f"n,,{first_bare}".encode()).response.decode()
    attrs = dict(a.split("=", 1) for a in server_first.split(","))
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(attrs["s"]), 4096)
    client_key = hmac.digest(salted, b"Client Key", "sha256")
    without_proof = f"c=biws,r={prefix}{attrs['r']}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.digest(hashlib.sha256(client_key).digest(), auth_message, "sha256")
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    final = server.evaluate(f"{without_proof},p={base64.b64encode(proof).decode()}".encode())
    assert final.complete, final.error


def test_scram_final_nonce_must_end_with_the_servers() -> None:
    mech = "SCRAM-SHA-256"
    server = ScramServer(mech, lookup_for({(mech, "kc"): make_credential(mech, "pw", 4096)}))
    server.evaluate(b"n,,n=kc,r=abc")
    final = server.evaluate(b"c=biws,r=abcdef-not-the-servers,p=" + base64.b64encode(b"x" * 32))
    assert final.failed and "nonce" in (final.error or "")

"""TLS contexts from Kafka's ssl.* keys with certificates trustme makes per test (none checked in), a
real handshake over loopback with asyncio, and the mTLS principal (DN in Java's RFC 2253 form, then
ssl.principal.mapping.rules)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Mapping

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from zkafka.security.principal import ANONYMOUS, KafkaPrincipal
from zkafka.security.ssl_principal import NoMatchingRuleError, SslPrincipalMapper, rfc2253_name, ssl_principal
from zkafka.security.tls import SslConfigError, client_ssl_context, listener_ssl_config, server_ssl_context


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def pki(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("pki")
    server = ca.issue_cert("localhost", "127.0.0.1", common_name="broker1", organization_name="Zkafka")
    client = ca.issue_cert(
        "alice@example.com", common_name="alice", organization_unit_name="eng", organization_name="Org, Inc"
    )
    paths = {
        "ca": d / "ca.pem",
        "server": d / "server.pem",
        "client": d / "client.pem",
        "server_encrypted": d / "server-encrypted.pem",
        "server_p12": d / "server.p12",
        "trust_p12": d / "trust.p12",
    }
    ca.cert_pem.write_to_path(str(paths["ca"]))
    server.private_key_and_cert_chain_pem.write_to_path(str(paths["server"]))
    client.private_key_and_cert_chain_pem.write_to_path(str(paths["client"]))
    key = serialization.load_pem_private_key(server.private_key_pem.bytes(), None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"key-pw"),
    )
    paths["server_encrypted"].write_bytes(encrypted + b"".join(p.bytes() for p in server.cert_chain_pems))
    chain = [x509.load_pem_x509_certificate(p.bytes()) for p in server.cert_chain_pems]
    paths["server_p12"].write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"server",
            key,
            chain[0],
            chain[1:],
            serialization.BestAvailableEncryption(b"store-pw"),  # type: ignore[arg-type]
        )
    )
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem.bytes())
    paths["trust_p12"].write_bytes(
        pkcs12.serialize_key_and_certificates(
            None, None, None, [ca_cert], serialization.BestAvailableEncryption(b"trust-pw")
        )
    )
    out = {k: str(v) for k, v in paths.items()}
    out["client_key"] = client.private_key_pem.bytes().decode()
    out["client_chain"] = "".join(p.bytes().decode() for p in client.cert_chain_pems)
    return out


def server_config(pki: Mapping[str, str], client_auth: str = "required", **extra: str) -> dict[str, str]:
    return {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": pki["server"],
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": pki["ca"],
        "ssl.client.auth": client_auth,
        **extra,
    }


def client_config(pki: Mapping[str, str], with_cert: bool = True, **extra: str) -> dict[str, str]:
    config = {"ssl.truststore.type": "PEM", "ssl.truststore.location": pki["ca"]}
    if with_cert:  # inline PEM keystore (KIP-651)
        config |= {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.key": pki["client_key"],
            "ssl.keystore.certificate.chain": pki["client_chain"],
        }
    return config | extra


async def handshake(
    server_ctx: ssl.SSLContext,
    client_ctx: ssl.SSLContext,
    mapper: SslPrincipalMapper,
    server_hostname: str = "localhost",
) -> str:
    """Connect over loopback; the server answers with the principal it derived from the client's cert."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        writer.write(str(ssl_principal(der, mapper)).encode() + b"\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server_ctx)
    port = server.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, ssl=client_ctx, server_hostname=server_hostname), 10
        )
        line = await asyncio.wait_for(reader.readline(), 10)
        writer.close()
        return line.decode().strip()
    finally:
        server.close()


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_mtls_handshake_gives_the_dn_principal(pki: dict[str, str]) -> None:
    principal = run(
        handshake(
            server_ssl_context(server_config(pki)),
            client_ssl_context(client_config(pki)),
            SslPrincipalMapper.from_rules(None),
        )
    )
    assert principal == r"User:CN=alice,OU=eng,O=Org\, Inc"
    rules = SslPrincipalMapper.from_rules("RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/U, DEFAULT")
    assert run(
        handshake(server_ssl_context(server_config(pki)), client_ssl_context(client_config(pki)), rules)
    ) == ("User:ALICE@ENG")


def test_requested_client_auth_without_a_certificate_is_anonymous(pki: dict[str, str]) -> None:
    server = server_ssl_context(server_config(pki, "requested"))
    got = run(
        handshake(
            server,
            client_ssl_context(client_config(pki, with_cert=False)),
            SslPrincipalMapper.from_rules(None),
        )
    )
    assert got == str(ANONYMOUS)


def test_required_client_auth_refuses_a_client_without_certificate(pki: dict[str, str]) -> None:
    server = server_ssl_context(server_config(pki, "required"))
    client = client_ssl_context(client_config(pki, with_cert=False))
    try:
        got = run(handshake(server, client, SslPrincipalMapper.from_rules(None)))
    except (ssl.SSLError, ConnectionError, asyncio.IncompleteReadError):
        return  # refused during the handshake
    # With TLS 1.3 the client may finish its side first; the server then closes without an answer.
    assert got == "", f"a client without a certificate got principal {got!r}"


def test_keystore_formats(pki: dict[str, str]) -> None:
    client = client_ssl_context(client_config(pki))
    mapper = SslPrincipalMapper.from_rules(None)
    encrypted = server_config(
        pki, "none", **{"ssl.keystore.location": pki["server_encrypted"], "ssl.key.password": "key-pw"}
    )
    p12 = server_config(
        pki,
        "none",
        **{
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": pki["server_p12"],
            "ssl.keystore.password": "store-pw",
        },
    )
    for config in (encrypted, p12):
        assert run(handshake(server_ssl_context(config), client, mapper)) == str(
            ANONYMOUS
        )  # client.auth=none
    trust_p12 = client_config(
        pki,
        **{
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.location": pki["trust_p12"],
            "ssl.truststore.password": "trust-pw",
        },
    )
    got = run(handshake(server_ssl_context(server_config(pki)), client_ssl_context(trust_p12), mapper))
    assert got.startswith("User:CN=alice")


def test_endpoint_identification(pki: dict[str, str]) -> None:
    server = server_ssl_context(server_config(pki, "none"))
    mapper = SslPrincipalMapper.from_rules(None)
    with pytest.raises(ssl.SSLCertVerificationError):
        run(
            handshake(server, client_ssl_context(client_config(pki)), mapper, server_hostname="other.example")
        )
    no_check = client_ssl_context(client_config(pki, **{"ssl.endpoint.identification.algorithm": ""}))
    assert run(handshake(server, no_check, mapper, server_hostname="other.example")) == str(ANONYMOUS)


def test_enabled_protocols(pki: dict[str, str]) -> None:
    server = server_ssl_context(server_config(pki, "none", **{"ssl.enabled.protocols": "TLSv1.3"}))
    assert server.minimum_version == ssl.TLSVersion.TLSv1_3
    old_client = client_ssl_context(client_config(pki, **{"ssl.enabled.protocols": "TLSv1.2"}))
    assert old_client.maximum_version == ssl.TLSVersion.TLSv1_2
    with pytest.raises((ssl.SSLError, ConnectionError)):
        run(handshake(server, old_client, SslPrincipalMapper.from_rules(None)))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"ssl.keystore.type": "JKS"}, "JKS"),
        ({"ssl.keystore.password": "x"}, "ssl.keystore.password cannot be set"),
        ({"ssl.keystore.location": "/nonexistent/k.pem"}, "No such file"),
        ({"ssl.client.auth": "sometimes"}, "ssl.client.auth"),
        ({"ssl.enabled.protocols": "SSLv3"}, "unknown"),
        ({"ssl.truststore.password": "x"}, "ssl.truststore.password cannot be set"),
        ({"ssl.keystore.type": "PKCS12", "ssl.keystore.password": "wrong-pw"}, "wrong ssl.keystore.password"),
        ({"ssl.key.password": "nope"}, "ssl.key.password"),
    ],
)
def test_configuration_errors(pki: dict[str, str], overrides: dict[str, str], message: str) -> None:
    config = server_config(pki) | overrides
    if overrides.get("ssl.keystore.type") == "PKCS12":
        config["ssl.keystore.location"] = pki["server_p12"]
    if "ssl.key.password" in overrides:
        config["ssl.keystore.location"] = pki["server_encrypted"]
    with pytest.raises(SslConfigError, match=message) as info:
        server_ssl_context(config)
    assert "wrong-pw" not in str(info.value) and "key-pw" not in str(info.value)
    with pytest.raises(SslConfigError, match=r"need ssl\.keystore\.type=PEM"):
        server_ssl_context({"ssl.keystore.key": "x", "ssl.keystore.certificate.chain": "y"})
    with pytest.raises(SslConfigError, match="needs a keystore"):
        server_ssl_context({})
    with pytest.raises(SslConfigError, match="must be https or empty"):
        client_ssl_context({"ssl.endpoint.identification.algorithm": "ldaps"})


def test_listener_prefixed_keys() -> None:
    merged = listener_ssl_config(
        {"ssl.client.auth": "none", "listener.name.internal.ssl.client.auth": "required", "port": "1"},
        "INTERNAL",
    )
    assert merged == {"ssl.client.auth": "required"}


def test_rfc2253_like_java() -> None:
    name = x509.Name(
        [
            x509.RelativeDistinguishedName([x509.NameAttribute(NameOID.COUNTRY_NAME, "US")]),
            x509.RelativeDistinguishedName([x509.NameAttribute(NameOID.ORGANIZATION_NAME, 'A+B; "C" <D>')]),
            x509.RelativeDistinguishedName(
                [
                    x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "ops"),
                    x509.NameAttribute(NameOID.COMMON_NAME, " #x=y "),
                ]
            ),
            x509.RelativeDistinguishedName([x509.NameAttribute(NameOID.EMAIL_ADDRESS, "a@b.c")]),
        ]
    )
    dn = rfc2253_name(name)
    # Most specific first; email is not an RFC 2253 keyword: dotted OID and the hex of its DER (IA5String).
    assert dn.startswith("1.2.840.113549.1.9.1=#16056140622e63,")
    rdn = dn.split(",", 1)[1]
    assert rdn.endswith(r",O=A\+B\; \"C\" \<D\>,C=US")
    assert "CN=\\ \\#x\\=y\\ " in rdn and "OU=ops" in rdn and "+" in rdn


def test_mapping_rules() -> None:
    mapper = SslPrincipalMapper.from_rules(
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,\n "
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, "
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L, DEFAULT"
    )
    assert mapper.get_name("CN=kafka-server1,OU=ServiceUsers,O=Org,C=US") == "kafka-server1"
    assert mapper.get_name("CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Cupertino,ST=CA,C=US") == "duke@javasoft"
    assert mapper.get_name("OU=JavaSoft,O=Sun Microsystems,C=US,cn=Admin.Two") == "admin.two"
    assert mapper.get_name("O=Nobody") == "O=Nobody"
    only = SslPrincipalMapper.from_rules("RULE:^CN=(.*)$/$1/")
    with pytest.raises(NoMatchingRuleError):
        only.get_name("O=x")
    # An out-of-range group reference is literal text (Kafka's escapeLiteralBackReferences).
    assert SslPrincipalMapper.from_rules("RULE:^CN=(.*)$/$1-$2/").get_name("CN=a") == "a-$2"
    for bad in ("RULE:^CN=(.*)$/$1/X", "nonsense", "RULE:(unclosed/$1/"):
        with pytest.raises(ValueError):
            SslPrincipalMapper.from_rules(bad)
    assert ssl_principal(None) == ANONYMOUS
    assert KafkaPrincipal("User", "x") != ANONYMOUS

"""`zkafka cluster up --security`: a SASL_SSL listener on every local broker, next to PLAINTEXT.

At start-up a small CA and one broker certificate (for `localhost` and 127.0.0.1) are made with the
`cryptography` package into `<cluster dir>/tls/` (nothing is checked in; private keys are 0600), and
each broker gets Kafka's keys for a SASL_SSL listener with SCRAM-SHA-512 and PLAIN and the ACL
authorizer. Clients trust `tls/ca.pem`; `admin-client.properties` holds the PLAIN `admin` user's
client keys (a random password made here), for `--command-config` of the tools.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SECURE_LISTENER = "SASL_SSL"
MECHANISMS = "SCRAM-SHA-512,PLAIN"
ADMIN_USER = "admin"
_VALIDITY = datetime.timedelta(days=30)


@dataclass(frozen=True)
class TlsFiles:
    ca: Path
    """The CA certificate (PEM): clients' `ssl.truststore.location` / `ssl.ca.location`."""
    keystore: Path
    """The brokers' private key and certificate chain (PEM, `ssl.keystore.type=PEM`)."""
    admin_client_config: Path
    """Client keys of the PLAIN super user `admin` over SASL_SSL (a tool's `--command-config`)."""
    admin_password: str


def generate_tls(directory: Path) -> TlsFiles:
    """A fresh CA and broker certificate under `directory/tls` (replacing any from an earlier start)."""
    tls = directory / "tls"
    tls.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    # Backdated a little so a clock a few seconds behind on the client side still accepts them.
    not_before, not_after = now - datetime.timedelta(hours=1), now + _VALIDITY

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "zkafka local cluster CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .add_extension(
            # clients check the broker's host name (ssl.endpoint.identification.algorithm=https)
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )

    pem = serialization.Encoding.PEM
    ca_path = tls / "ca.pem"
    ca_path.write_bytes(ca_cert.public_bytes(pem))
    keystore = tls / "broker.pem"
    private = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    _write_private(keystore, private + cert.public_bytes(pem) + ca_cert.public_bytes(pem))
    # The CA's key is not kept: nothing signs with it after start-up.

    password = secrets.token_urlsafe(18)
    admin = directory / "admin-client.properties"
    _write_private(
        admin,
        (
            f"security.protocol={SECURE_LISTENER}\n"
            "sasl.mechanism=PLAIN\n"
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="{ADMIN_USER}" password="{password}";\n'
            "ssl.truststore.type=PEM\n"
            f"ssl.truststore.location={ca_path}\n"
        ).encode(),
    )
    return TlsFiles(ca_path, keystore, admin, password)


def secure_broker_props(plaintext_port: int, sasl_ssl_port: int, tls: TlsFiles) -> dict[str, str]:
    """Kafka's broker keys for PLAINTEXT (inter-broker) + SASL_SSL (SCRAM-SHA-512, PLAIN) with the
    ACL authorizer."""
    plain_jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'user_{ADMIN_USER}="{tls.admin_password}";'
    )
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{plaintext_port},{SECURE_LISTENER}://127.0.0.1:{sasl_ssl_port}",
        "inter.broker.listener.name": "PLAINTEXT",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tls.keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tls.ca),
        "sasl.enabled.mechanisms": MECHANISMS,
        # SCRAM users live in ZooKeeper (/config/users, `zkafka configs --entity-type users`)
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        ),
        "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        # The brokers talk to each other over PLAINTEXT, whose principal is User:ANONYMOUS, and need
        # Cluster:ClusterAction whatever ACLs are added to the cluster later: so ANONYMOUS is a super
        # user, which also keeps every PLAINTEXT client (the rest of the demo, the tools) working.
        # This is a development cluster on 127.0.0.1; in production keep such a listener internal
        # (docs/security.md). `admin` (PLAIN, password in admin-client.properties) is the super
        # user on the secured listener.
        "super.users": f"User:ANONYMOUS;User:{ADMIN_USER}",
        # SASL users may use what no ACL protects (as on an unsecured cluster); a resource with
        # ACLs is for the principals they name only.
        "allow.everyone.if.no.acl.found": "true",
    }


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=not cert_sign,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _write_private(path: Path, data: bytes) -> None:
    """Write `data` readable by this user only (created 0600, never world-readable in between)."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)

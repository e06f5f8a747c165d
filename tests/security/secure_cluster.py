"""A one-broker cluster with every kind of listener, for the security tests: PLAINTEXT (the
inter-broker listener and the one the fixtures wait on), SSL (mTLS requested), SASL_PLAINTEXT (PLAIN
and SCRAM) and SASL_SSL; certificates made by trustme for the run, never checked in."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import trustme

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer, free_port
from zkafka.testing.cluster import TEST_BROKER_DEFAULTS, wait_until_ready
from zkafka.testing.zookeeper import new_chroot

ADMIN, ADMIN_PASSWORD = "admin", "admin-secret"
ALICE, ALICE_PASSWORD = "alice", "alice-secret"
PLAIN_JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
    f'password="{ADMIN_PASSWORD}" user_admin="{ADMIN_PASSWORD}" user_alice="{ALICE_PASSWORD}";'
)
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


@dataclass
class SecureCluster:
    cluster: LocalCluster
    plaintext: int
    ssl: int
    sasl_plaintext: int
    sasl_ssl: int
    ca: trustme.CA
    ca_path: Path
    directory: Path

    def client_cert(self, common_name: str) -> tuple[Path, Path]:
        """(certificate chain, private key) files of a client certificate `CN=<name>,OU=clients`."""
        cert = self.ca.issue_cert(
            common_name=common_name, organization_unit_name="clients", organization_name="zkafka-tests"
        )
        chain = self.directory / f"{common_name}.crt"
        key = self.directory / f"{common_name}.key"
        cert.cert_chain_pems[0].write_to_path(str(chain))
        cert.private_key_pem.write_to_path(str(key))
        return chain, key

    @property
    def log_text(self) -> str:
        return "".join(Path(b.log_path).read_text(errors="replace") for b in self.cluster.brokers.values())


@contextmanager
def secure_cluster(
    zookeeper: ZooKeeperServer, directory: Path, overrides: dict[str, str] | None = None
) -> Iterator[SecureCluster]:
    ca = trustme.CA()
    server = ca.issue_cert("localhost", "127.0.0.1")
    keystore = directory / "broker.pem"
    server.private_key_and_cert_chain_pem.write_to_path(str(keystore))
    ca_path = directory / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    ports = [free_port() for _ in range(4)]
    plaintext, ssl_port, sasl_plaintext, sasl_ssl = ports
    cluster = LocalCluster(
        directory / "cluster", zookeeper_connect=zookeeper.connect_string + new_chroot("sec")
    )
    cluster.broker_overrides.update(TEST_BROKER_DEFAULTS)
    props = {
        "listeners": (
            f"PLAINTEXT://127.0.0.1:{plaintext},SSL://127.0.0.1:{ssl_port},"
            f"SASL_PLAINTEXT://127.0.0.1:{sasl_plaintext},SASL_SSL://127.0.0.1:{sasl_ssl}"
        ),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca_path),
        "listener.name.ssl.ssl.client.auth": "requested",
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),OU=clients.*$/$1/,DEFAULT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        **(overrides or {}),
    }
    cluster.add_broker(1, props, port=plaintext)
    try:
        cluster.start_broker(1)
        wait_until_ready(cluster, 60)
        yield SecureCluster(cluster, plaintext, ssl_port, sasl_plaintext, sasl_ssl, ca, ca_path, directory)
    finally:
        for bid in list(cluster.brokers):
            if cluster.broker_alive(bid):
                cluster.stop_broker(bid, timeout=20)

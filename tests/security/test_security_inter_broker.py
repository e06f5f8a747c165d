"""Brokers talk to each other over a SASL_SSL inter-broker listener (issue 14): replica fetchers, the
controller's channels and controlled shutdown log in with SCRAM-SHA-512 as `User:broker`, whose
credential is in ZooKeeper before any broker starts, over TLS checked against the test CA.

The authorizer is on and only `User:broker` and `User:admin` are super users: PLAINTEXT connections
(`User:ANONYMOUS`) cannot do a cluster action, so replication and controller requests work only because
they really go over the authenticated listener. Clients (confluent-kafka) use SASL_SSL as `admin`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trustme
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer, free_port
from zkafka.security.scram import upsert_credential
from zkafka.testing.cluster import TEST_BROKER_DEFAULTS, wait_until_ready
from zkafka.testing.polling import wait_for
from zkafka.testing.zookeeper import new_chroot
from zkafka.zk.client import KafkaZkClient

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

pytestmark = pytest.mark.timeout(300)

BROKER_PASSWORD = "broker-scram-secret"
ADMIN_PASSWORD = "admin-scram-secret"
BROKER_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    f'username="broker" password="{BROKER_PASSWORD}";'
)
FAST = {
    "zookeeper.session.timeout.ms": "4000",
    "replica.lag.time.max.ms": "2000",
    "replica.fetch.backoff.ms": "200",
    "controlled.shutdown.retry.backoff.ms": "200",
    "controlled.shutdown.max.retries": "10",
    "auto.leader.rebalance.enable": "false",
}


@dataclass
class InterBrokerCluster:
    local: LocalCluster
    zk: KazooClient
    internal_ports: dict[int, int]
    client_security: dict[str, str]
    """librdkafka keys of the admin client on the internal listener."""

    def client_config(self, **extra: Any) -> dict[str, Any]:
        alive = [p for b, p in self.internal_ports.items() if self.local.broker_alive(b)]
        return {
            "bootstrap.servers": ",".join(f"127.0.0.1:{p}" for p in alive),
            **self.client_security,
            **extra,
        }

    def state(self, topic: str, partition: int = 0) -> dict[str, Any]:
        return json.loads(self.zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")[0])

    def controller(self) -> int | None:
        try:
            return int(json.loads(self.zk.get("/controller")[0])["brokerid"])
        except NoNodeError:
            return None

    def wait_isr(self, topic: str, isr: set[int]) -> dict[str, Any]:
        return wait_for(
            lambda: (s := self.state(topic)) and set(s["isr"]) == isr and s,
            60,
            f"ISR {sorted(isr)} of {topic}",
        )

    def log_bytes(self, broker_id: int, topic: str) -> bytes:
        d = Path(self.local.brokers[broker_id].directory) / "logs" / f"{topic}-0"
        return b"".join(p.read_bytes() for p in sorted(d.glob("*.log")))

    def log_text(self, broker_id: int) -> str:
        return self.local.brokers[broker_id].log_path.read_text(errors="replace")


@contextmanager
def inter_broker_cluster(
    zookeeper_server: ZooKeeperServer, tmp_path: Path, brokers: int, protocol: str, props: dict[str, str]
) -> Iterator[InterBrokerCluster]:
    """`brokers` brokers with a PLAINTEXT listener (the fixtures' readiness check) and an INTERNAL
    one of `protocol`, the inter-broker listener; `props` are its security keys."""
    local = LocalCluster(
        tmp_path / "cluster", zookeeper_connect=zookeeper_server.connect_string + new_chroot("ib")
    )
    # The brokers' and the admin's credentials exist before any broker starts (as an operator
    # bootstraps a SCRAM inter-broker listener with kafka-configs --zookeeper).
    with KafkaZkClient(local.zookeeper_connect) as zk:
        upsert_credential(zk, "broker", "SCRAM-SHA-512", BROKER_PASSWORD, 4096)
        upsert_credential(zk, "admin", "SCRAM-SHA-512", ADMIN_PASSWORD, 4096)
    local.broker_overrides.update(TEST_BROKER_DEFAULTS)
    local.broker_overrides.update(FAST)
    internal_ports: dict[int, int] = {}
    for bid in range(1, brokers + 1):
        plaintext, internal = free_port(), free_port()
        internal_ports[bid] = internal
        local.add_broker(
            bid,
            {
                "listeners": f"PLAINTEXT://127.0.0.1:{plaintext},INTERNAL://127.0.0.1:{internal}",
                "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,INTERNAL:{protocol}",
                "inter.broker.listener.name": "INTERNAL",
                "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                **props,
            },
            port=plaintext,
        )
    kazoo = KazooClient(hosts=local.zookeeper_connect, timeout=10)
    kazoo.start(15)
    try:
        for bid in range(1, brokers + 1):
            local.start_broker(bid)
        wait_until_ready(local, 90)
        yield InterBrokerCluster(local, kazoo, internal_ports, {})
    finally:
        kazoo.stop()
        kazoo.close()
        for bid in list(local.brokers):
            if local.broker_alive(bid):
                local.kill_broker(bid)


def make_ca(tmp_path: Path) -> tuple[trustme.CA, Path, Path]:
    """A CA, a broker keystore (PEM: key and chain; CN=broker, for localhost and 127.0.0.1) and the
    CA file."""
    ca = trustme.CA()
    keystore, ca_path = tmp_path / "broker.pem", tmp_path / "ca.pem"
    cert = ca.issue_cert("localhost", "127.0.0.1", common_name="broker")
    cert.private_key_and_cert_chain_pem.write_to_path(str(keystore))
    ca.cert_pem.write_to_path(str(ca_path))
    return ca, keystore, ca_path


@pytest.fixture
def cluster(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[InterBrokerCluster]:
    _, keystore, ca_path = make_ca(tmp_path)
    props = {
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.internal.scram-sha-512.sasl.jaas.config": BROKER_JAAS,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca_path),
        "super.users": "User:broker;User:admin",
    }
    with inter_broker_cluster(zookeeper_server, tmp_path, 3, "SASL_SSL", props) as c:
        c.client_security = {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "admin",
            "sasl.password": ADMIN_PASSWORD,
            "ssl.ca.location": str(ca_path),
        }
        yield c


def produce(cluster: InterBrokerCluster, topic: str, values: list[bytes]) -> None:
    producer = Producer(cluster.client_config(acks="all", **{"message.timeout.ms": 60000}))
    errors: list[str] = []
    for v in values:
        producer.produce(topic, v, on_delivery=lambda err, _msg: err is not None and errors.append(str(err)))
    assert producer.flush(90) == 0
    assert errors == []


def create_topic(cluster: InterBrokerCluster, topic: str, replicas: list[int]) -> None:
    admin = AdminClient(cluster.client_config())
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[replicas])])[topic].result(60)
    cluster.wait_isr(topic, set(replicas))


def test_replication_controller_and_controlled_shutdown_over_sasl_ssl(cluster: InterBrokerCluster) -> None:
    # The controller's LeaderAndIsr reached every broker, and the followers fetch: full ISR.
    create_topic(cluster, "replicated", [1, 2, 3])
    produce(cluster, "replicated", [b"a-%d" % i for i in range(200)])

    # A follower killed and restarted catches up over the inter-broker listener.
    state = cluster.state("replicated")
    leader, controller = state["leader"], cluster.controller()
    follower = next(b for b in (1, 2, 3) if b not in (leader, controller))
    cluster.local.kill_broker(follower)
    cluster.wait_isr("replicated", {1, 2, 3} - {follower})
    produce(cluster, "replicated", [b"b-%d" % i for i in range(200)])
    cluster.local.start_broker(follower)
    cluster.wait_isr("replicated", {1, 2, 3})
    wait_for(
        lambda: cluster.log_bytes(follower, "replicated") == cluster.log_bytes(leader, "replicated"),
        60,
        "the restarted follower's log to equal the leader's",
    )

    # Controller failover: the new controller reaches the brokers over SASL_SSL too (a new topic
    # gets its leader and full ISR only through its LeaderAndIsr requests).
    assert controller is not None
    cluster.local.kill_broker(controller)
    wait_for(lambda: (c := cluster.controller()) is not None and c != controller, 60, "a new controller")
    survivors = sorted({1, 2, 3} - {controller})
    wait_for(
        lambda: controller not in cluster.state("replicated")["isr"], 60, "the dead broker to leave the ISR"
    )
    create_topic(cluster, "after-failover", survivors)
    produce(cluster, "after-failover", [b"c-%d" % i for i in range(50)])

    # Controlled shutdown of a broker that is not the controller asks it over SASL_SSL.
    new_controller = cluster.controller()
    leaving = next(b for b in survivors if b != new_controller)
    cluster.local.stop_broker(leaving, timeout=60)
    assert "controlled shutdown succeeded" in cluster.log_text(leaving)
    for bid in (1, 2, 3):
        text = cluster.log_text(bid)
        assert "AUTHORIZATION_FAILED" not in text and "Authentication failed" not in text, bid
        assert BROKER_PASSWORD not in text and ADMIN_PASSWORD not in text


def test_replication_over_an_mtls_inter_broker_listener(
    zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> None:
    """SSL with `ssl.client.auth=required`: the brokers present their keystore as client certificate,
    and their principal is its mapped DN (CN=broker,... -> User:broker), the only super user besides the
    admin: without the certificate every controller request would be refused."""
    ca, keystore, ca_path = make_ca(tmp_path)
    admin_cert = ca.issue_cert(common_name="admin", organization_unit_name="clients")
    admin_chain, admin_key = tmp_path / "admin.crt", tmp_path / "admin.key"
    admin_cert.cert_chain_pems[0].write_to_path(str(admin_chain))
    admin_cert.private_key_pem.write_to_path(str(admin_key))
    props = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca_path),
        "listener.name.internal.ssl.client.auth": "required",
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/,DEFAULT",
        "super.users": "User:broker;User:admin",
    }
    with inter_broker_cluster(zookeeper_server, tmp_path, 2, "SSL", props) as c:
        c.client_security = {
            "security.protocol": "SSL",
            "ssl.ca.location": str(ca_path),
            "ssl.certificate.location": str(admin_chain),
            "ssl.key.location": str(admin_key),
        }
        create_topic(c, "mtls", [1, 2])
        produce(c, "mtls", [b"m-%d" % i for i in range(100)])
        leader = c.state("mtls")["leader"]
        follower = 3 - leader
        wait_for(
            lambda: c.log_bytes(follower, "mtls") == c.log_bytes(leader, "mtls"),
            60,
            "the follower's log to equal the leader's",
        )
        for bid in (1, 2):
            assert "AUTHORIZATION_FAILED" not in c.log_text(bid)

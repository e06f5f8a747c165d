"""ZooKeeper protected (issue 14): with `zookeeper.set.acl=true` and the digest user of the JAAS
`Client` section `KAFKA_OPTS` names, every znode the cluster creates lets only that user write, the
world read (but not `/config/users`), and the brokers keep working; `zkafka
zookeeper-security-migration` secures and unsecures an existing tree. Checked with a real ZooKeeper
and an unauthenticated kazoo client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import TEST_BROKER_DEFAULTS, wait_until_ready
from zkafka.testing.polling import wait_for
from zkafka.testing.zookeeper import new_chroot

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

pytestmark = pytest.mark.timeout(240)

USER, PASSWORD = "kafka", "zk-digest-secret"
JAAS = f"""
// what a Kafka operator gives the broker and the tools
Client {{
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="{USER}"
    password="{PASSWORD}";
}};
"""


@pytest.fixture
def kafka_opts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    jaas = tmp_path / "jaas.conf"
    jaas.write_text(JAAS)
    opts = f"-Djava.security.auth.login.config={jaas}"
    monkeypatch.setenv("KAFKA_OPTS", opts)  # brokers and tools started from here inherit it
    return opts


@pytest.fixture
def anonymous(zookeeper_server: ZooKeeperServer) -> Iterator[KazooClient]:
    zk = KazooClient(hosts=zookeeper_server.connect_string, timeout=10)
    zk.start(15)
    yield zk
    zk.stop()
    zk.close()


def start_cluster(
    zookeeper_server: ZooKeeperServer, directory: Path, brokers: int, props: dict[str, str]
) -> LocalCluster:
    local = LocalCluster(directory, zookeeper_connect=zookeeper_server.connect_string + new_chroot("zkacl"))
    local.broker_overrides.update(TEST_BROKER_DEFAULTS)
    local.broker_overrides.update({"zookeeper.session.timeout.ms": "4000", **props})
    for bid in range(1, brokers + 1):
        local.add_broker(bid)
        local.start_broker(bid)
    wait_until_ready(local, 60)
    return local


def stop_cluster(local: LocalCluster) -> None:
    for bid in list(local.brokers):
        if local.broker_alive(bid):
            local.kill_broker(bid)


def produce_and_consume(local: LocalCluster, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": local.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, len(local.brokers))])[topic].result(30)
    producer = Producer({"bootstrap.servers": local.bootstrap_servers, "acks": "all"})
    for i in range(20):
        producer.produce(topic, b"v%d" % i)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {"bootstrap.servers": local.bootstrap_servers, "group.id": "g", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        wait_for(
            lambda: (m := consumer.poll(0.5)) is None or m.error() or got.append(m.value()) or len(got) >= 20,
            60,
            "20 records",
        )
    finally:
        consumer.close()


def chroot_of(local: LocalCluster) -> str:
    return "/" + local.zookeeper_connect.split("/", 1)[1]


def test_secured_cluster_znodes(
    zookeeper_server: ZooKeeperServer, tmp_path: Path, kafka_opts: str, anonymous: KazooClient
) -> None:
    local = start_cluster(zookeeper_server, tmp_path / "cluster", 2, {"zookeeper.set.acl": "true"})
    try:
        produce_and_consume(local, "secured")
        root = chroot_of(local)
        # A SCRAM user written by the tool (which logs in from KAFKA_OPTS too) is sensitive.
        added = subprocess.run(
            [sys.executable, "-m", "zkafka.cli.main", "configs", "--zookeeper", local.zookeeper_connect,
             "--entity-type", "users", "--entity-name", "alice", "--alter",
             "--add-config", "SCRAM-SHA-512=[password=alice-pw]"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert added.returncode == 0, added.stderr

        for path in ("/brokers/ids/1", "/controller", "/brokers/topics/secured", "/cluster/id", ""):
            acls, _ = anonymous.get_acls(root + path)
            # (ZooKeeper shows an unauthenticated reader the digest user, not its hash)
            ids = {(a.id.scheme, a.id.id.split(":")[0], a.perms) for a in acls}
            assert ids == {("digest", USER, 31), ("world", "anyone", 1)}, (path, ids)
        # the world reads ...
        assert sorted(anonymous.get_children(root + "/brokers/ids")) == ["1", "2"]
        anonymous.get(root + "/controller")
        # ... but does not write
        with pytest.raises(NoAuthError):
            anonymous.set(root + "/controller", b'{"brokerid":99}')
        with pytest.raises(NoAuthError):
            anonymous.create(root + "/brokers/ids/99", b"{}")
        with pytest.raises(NoAuthError):
            anonymous.delete(root + "/brokers/topics/secured/partitions/0/state")
        # and does not even read SCRAM credentials
        with pytest.raises(NoAuthError):
            anonymous.get(root + "/config/users/alice")
        with pytest.raises(NoAuthError):
            anonymous.get_acls(root + "/config/users/alice")

        # the brokers still work: a controller failover writes /controller and the partition states
        controller = int(json.loads(anonymous.get(root + "/controller")[0])["brokerid"])
        local.kill_broker(controller)
        wait_for(
            lambda: (
                anonymous.exists(root + "/controller") is not None
                and int(json.loads(anonymous.get(root + "/controller")[0])["brokerid"]) != controller
            ),
            60,
            "a new controller",
        )
        survivor = next(b for b in local.brokers if b != controller)
        acls, _ = anonymous.get_acls(root + "/controller")
        assert {a.id.scheme for a in acls} == {"digest", "world"}
        assert local.broker_alive(survivor)
    finally:
        stop_cluster(local)


def test_zookeeper_security_migration(
    zookeeper_server: ZooKeeperServer,
    tmp_path: Path,
    kafka_opts: str,
    anonymous: KazooClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KAFKA_OPTS")  # an open cluster first
    local = start_cluster(zookeeper_server, tmp_path / "cluster", 1, {})
    try:
        produce_and_consume(local, "open")
        root = chroot_of(local)
        anonymous.set(root + "/brokers/topics/open", anonymous.get(root + "/brokers/topics/open")[0])

        def migrate(acl: str, env_opts: str | None) -> subprocess.CompletedProcess[str]:
            env = dict(os.environ)
            env.pop("KAFKA_OPTS", None)
            if env_opts is not None:
                env["KAFKA_OPTS"] = env_opts
            return subprocess.run(
                [sys.executable, "-m", "zkafka.cli.main", "zookeeper-security-migration",
                 "--zookeeper.connect", local.zookeeper_connect, "--zookeeper.acl", acl],
                capture_output=True, text=True, timeout=120, env=env,
            )  # fmt: skip

        refused = migrate("secure", None)
        assert refused.returncode != 0 and "java.security.auth.login.config" in refused.stderr
        secured = migrate("secure", kafka_opts)
        assert secured.returncode == 0, secured.stderr
        with pytest.raises(NoAuthError):
            anonymous.set(root + "/brokers/topics/open", b"{}")
        anonymous.get(root + "/brokers/topics/open")  # still world-readable
        acls, _ = anonymous.get_acls(root + "/brokers/ids/1")  # the broker's ephemeral registration too
        assert {a.id.scheme for a in acls} == {"digest", "world"}

        opened = migrate("unsecure", kafka_opts)
        assert opened.returncode == 0, opened.stderr
        anonymous.set(root + "/brokers/topics/open", anonymous.get(root + "/brokers/topics/open")[0])
        assert local.broker_alive(1)
    finally:
        stop_cluster(local)

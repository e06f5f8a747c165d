"""Every zkafka tool that talks to brokers speaks SASL and TLS from Kafka's client keys (issue 14):
`--command-config` (topics, consumer-groups, configs, reassign-partitions, leader-election,
transactions),
`--producer.config` / `--consumer.config` (console tools, perf), one shared parser; the Spark
connector's `kafka.`-prefixed security options."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from secure_cluster import ADMIN, ADMIN_PASSWORD, ALICE, ALICE_PASSWORD, SecureCluster, secure_cluster

from zkafka.client.security import librdkafka_security_config
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.security.scram import upsert_credential
from zkafka.zk.client import KafkaZkClient

pytestmark = pytest.mark.timeout(300)

SCRAM_PASSWORD = "admin-scram-pw"


@pytest.fixture(scope="module")
def secured(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SecureCluster]:
    overrides = {
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS;User:admin",
    }
    with secure_cluster(zookeeper_server, tmp_path_factory.mktemp("tools"), overrides) as sc:
        with KafkaZkClient(sc.cluster.zookeeper_connect) as zk:
            upsert_credential(zk, ADMIN, "SCRAM-SHA-512", SCRAM_PASSWORD, 4096)
        yield sc


def scram_config(sc: SecureCluster) -> Path:
    path = sc.directory / "client-scram.properties"
    path.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{ADMIN}" password="{SCRAM_PASSWORD}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={sc.ca_path}\n"
    )
    return path


def plain_config(sc: SecureCluster, user: str = ADMIN, password: str = ADMIN_PASSWORD) -> Path:
    path = sc.directory / f"client-plain-{user}.properties"
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user}" password="{password}";\n'
    )
    return path


def zkafka(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_admin_tools_with_command_config(secured: SecureCluster) -> None:
    ssl_bootstrap = f"localhost:{secured.sasl_ssl}"
    cc = str(scram_config(secured))
    ok(
        zkafka(
            "topics",
            "--bootstrap-server",
            ssl_bootstrap,
            "--command-config",
            cc,
            "--create",
            "--topic",
            "tools",
            "--partitions",
            "2",
            "--replication-factor",
            "1",
        )
    )
    described = ok(
        zkafka(
            "topics",
            "--bootstrap-server",
            ssl_bootstrap,
            "--command-config",
            cc,
            "--describe",
            "--topic",
            "tools",
        )
    )
    assert "PartitionCount: 2" in described
    ok(
        zkafka(
            "configs",
            "--bootstrap-server",
            ssl_bootstrap,
            "--command-config",
            cc,
            "--entity-type",
            "topics",
            "--entity-name",
            "tools",
            "--alter",
            "--add-config",
            "retention.ms=3600000",
        )
    )
    assert "retention.ms=3600000" in ok(
        zkafka(
            "configs",
            "--bootstrap-server",
            ssl_bootstrap,
            "--command-config",
            cc,
            "--entity-type",
            "topics",
            "--entity-name",
            "tools",
            "--describe",
        )
    )
    ok(
        zkafka(
            "leader-election",
            "--bootstrap-server",
            ssl_bootstrap,
            "--command-config",
            cc,
            "--election-type",
            "preferred",
            "--all-topic-partitions",
        )
    )
    topics_json = secured.directory / "move.json"
    topics_json.write_text('{"version":1,"topics":[{"topic":"tools"}]}')
    assert "Proposed partition reassignment" in ok(
        zkafka(
            "reassign-partitions",
            "--bootstrap-server",
            ssl_bootstrap,
            "--command-config",
            cc,
            "--generate",
            "--topics-to-move-json-file",
            str(topics_json),
            "--broker-list",
            "1",
        )
    )
    # without the config the SASL listener does not answer a PLAINTEXT client's requests
    refused = zkafka("topics", "--bootstrap-server", f"127.0.0.1:{secured.sasl_plaintext}", "--list")
    assert refused.returncode != 0
    # a bad config is one line naming the flag, never the password
    bad = secured.directory / "bad.properties"
    bad.write_text(f"security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\nsasl.password={SCRAM_PASSWORD}\n")
    failed = zkafka("topics", "--bootstrap-server", ssl_bootstrap, "--command-config", str(bad), "--list")
    assert failed.returncode != 0 and "--command-config" in failed.stderr
    assert SCRAM_PASSWORD not in failed.stderr


def test_console_and_group_tools(secured: SecureCluster) -> None:
    bootstrap = f"127.0.0.1:{secured.sasl_plaintext}"
    cfg = str(plain_config(secured))
    ok(
        zkafka(
            "topics",
            "--bootstrap-server",
            bootstrap,
            "--command-config",
            cfg,
            "--create",
            "--topic",
            "console",
            "--partitions",
            "1",
            "--replication-factor",
            "1",
        )
    )
    ok(
        zkafka(
            "console-producer",
            "--bootstrap-server",
            bootstrap,
            "--producer.config",
            cfg,
            "--topic",
            "console",
            stdin="one\ntwo\nthree\n",
        )
    )
    consumed = ok(
        zkafka(
            "console-consumer",
            "--bootstrap-server",
            bootstrap,
            "--consumer.config",
            cfg,
            "--topic",
            "console",
            "--from-beginning",
            "--group",
            "console-g",
            "--max-messages",
            "3",
            "--timeout-ms",
            "30000",
        )
    )
    assert consumed.split() == ["one", "two", "three"]
    listed = ok(zkafka("consumer-groups", "--bootstrap-server", bootstrap, "--command-config", cfg, "--list"))
    assert "console-g" in listed.split()
    ok(
        zkafka(
            "perf",
            "produce",
            "--bootstrap-server",
            bootstrap,
            "--producer.config",
            cfg,
            "--topic",
            "console",
            "--num-records",
            "200",
            "--record-size",
            "50",
            "--client",
            "zkafka",
        )
    )
    ok(
        zkafka(
            "perf",
            "produce",
            "--bootstrap-server",
            f"localhost:{secured.sasl_ssl}",
            "--producer.config",
            str(scram_config(secured)),
            "--topic",
            "console",
            "--num-records",
            "200",
            "--client",
            "confluent",
        )
    )
    ok(
        zkafka(
            "perf",
            "consume",
            "--bootstrap-server",
            bootstrap,
            "--consumer.config",
            cfg,
            "--topic",
            "console",
            "--messages",
            "403",
            "--client",
            "zkafka",
        )
    )


def test_librdkafka_spelling_of_kafka_client_keys(tmp_path: Path) -> None:
    config = librdkafka_security_config(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": (
                'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";'
            ),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": "/ca.pem",
            "ssl.endpoint.identification.algorithm": "",
            "acks": "all",
        }
    )
    assert config == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "u",
        "sasl.password": "p",
        "ssl.ca.location": "/ca.pem",
        "ssl.endpoint.identification.algorithm": "none",
        "acks": "all",
    }
    with pytest.raises(ValueError, match="PEM"):
        librdkafka_security_config({"ssl.truststore.location": "/t.jks"})


def test_spark_connector_takes_kafka_security_options(secured: SecureCluster) -> None:
    pytest.importorskip("pyspark")
    from zkafka.spark.errors import OptionError

    # its own topic, whatever else ran before (the command-config test creates the same one)
    ok(zkafka("topics", "--bootstrap-server", f"localhost:{secured.sasl_ssl}", "--command-config",
              str(scram_config(secured)), "--create", "--if-not-exists", "--topic", "tools",
              "--partitions", "2", "--replication-factor", "1"))  # fmt: skip
    from zkafka.spark.options import parse_sink_options, parse_source_options

    options = {
        "kafka.bootstrap.servers": f"localhost:{secured.sasl_ssl}",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{ADMIN}" password="{SCRAM_PASSWORD}";',
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(secured.ca_path),
        "subscribe": "tools",
    }
    source = parse_source_options(options, streaming=False)
    for kwargs in (source.client.consumer_kwargs(), source.client.admin_kwargs()):
        security = kwargs["security"]
        assert (security.protocol, security.mechanism, security.username) == (
            "SASL_SSL",
            "SCRAM-SHA-512",
            ADMIN,
        )
        assert security.ssl_context is not None
    sink = parse_sink_options({k: v for k, v in options.items() if k != "subscribe"} | {"topic": "tools"})
    assert sink.client.producer_kwargs()["security"].mechanism == "SCRAM-SHA-512"
    # the driver's clients really log in with them
    from zkafka.client.sync import SyncAdminClient

    with SyncAdminClient(**source.client.admin_kwargs()) as admin:
        assert "tools" in admin.list_topics()
    with pytest.raises(OptionError, match="Kafka security options"):
        parse_source_options({**options, "kafka.sasl.mechanism": "GSSAPI"}, streaming=False)


def test_transactions_tool_with_command_config_and_acls(secured: SecureCluster) -> None:
    """kafka-transactions' rights: the tool's requests are authorized as Kafka authorizes them, and
    a refusal is one line with Kafka's error name."""
    sasl = f"127.0.0.1:{secured.sasl_plaintext}"
    admin, alice = str(plain_config(secured)), str(plain_config(secured, ALICE, ALICE_PASSWORD))
    as_admin = ("--bootstrap-server", sasl, "--command-config", admin)
    ok(zkafka("topics", *as_admin, "--create", "--topic", "txn-acl", "--partitions", "1",
              "--replication-factor", "1"))  # fmt: skip
    ok(zkafka("acls", *as_admin, "--add", "--allow-principal", f"User:{ALICE}", "--operation", "Describe",
              "--operation", "Read", "--topic", "txn-acl"))  # fmt: skip

    def transactions(config: str, *args: str) -> subprocess.CompletedProcess[str]:
        return zkafka("transactions", "--bootstrap-server", sasl, "--command-config", config, *args)

    header = "ProducerId"
    assert ok(transactions(admin, "describe-producers", "--topic", "txn-acl", "--partition", "0")).startswith(
        header
    )
    assert ok(transactions(alice, "describe-producers", "--topic", "txn-acl", "--partition", "0")).startswith(
        header
    )
    assert ok(transactions(alice, "list")).startswith("TransactionalId")  # only the ids alice may describe

    describe = transactions(alice, "describe", "--transactional-id", "someone-elses")
    assert describe.returncode == 1 and "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" in describe.stderr
    abort = transactions(alice, "abort", "--topic", "txn-acl", "--partition", "0", "--producer-id", "1",
                         "--producer-epoch", "0", "--coordinator-epoch", "0")  # fmt: skip
    assert abort.returncode == 1 and "CLUSTER_AUTHORIZATION_FAILED" in abort.stderr  # needs ClusterAction
    hidden = transactions(alice, "describe-producers", "--topic", "not-alices", "--partition", "0")
    assert hidden.returncode == 1 and "Traceback" not in hidden.stderr + describe.stderr + abort.stderr

"""KIP-554 in a running broker: DescribeUserScramCredentials / AlterUserScramCredentials through
zkafka's client library, confluent-kafka's AdminClient and `zkafka configs --bootstrap-server
--entity-type users`; a credential made that way logs a client in; Kafka's errors for bad changes;
Cluster:Describe / Cluster:Alter checked; no password in a znode or a broker log."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator

import pytest
from secure_cluster import ADMIN, ADMIN_PASSWORD, ALICE, ALICE_PASSWORD, SecureCluster, secure_cluster

from zkafka.client.admin import AdminClient
from zkafka.client.security import ClientSecurity
from zkafka.client.user_scram import ScramDeletion, ScramUpsertion
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.testing.polling import wait_for
from zkafka.zk.client import KafkaZkClient

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka import KafkaException  # noqa: E402
from confluent_kafka.admin import AdminClient as CkAdmin  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

pytestmark = pytest.mark.timeout(180)

PASSWORDS = ("dora-pw-1", "dora-pw-2", "erin-pw", "carol-pw")


@pytest.fixture(scope="module")
def secured(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SecureCluster]:
    overrides = {
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS;User:admin",
    }
    with secure_cluster(zookeeper_server, tmp_path_factory.mktemp("scram-apis"), overrides) as sc:
        yield sc


def plain(sc: SecureCluster, user: str, password: str) -> ClientSecurity:
    return ClientSecurity.from_config(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": password,
        }
    )


def scram_login_works(sc: SecureCluster, user: str, password: str, mechanism: str = "SCRAM-SHA-512") -> bool:
    admin = CkAdmin(
        {
            "bootstrap.servers": f"127.0.0.1:{sc.sasl_ssl}",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": password,
            "ssl.ca.location": str(sc.ca_path),
        }
    )
    try:
        admin.list_topics(timeout=5)
        return True
    except KafkaException:
        return False


def test_client_library_alters_and_describes(secured: SecureCluster) -> None:
    async def run() -> None:
        async with AdminClient(
            f"127.0.0.1:{secured.sasl_plaintext}", security=plain(secured, ADMIN, ADMIN_PASSWORD)
        ) as admin:
            results = await admin.alter_user_scram_credentials(
                [
                    ScramUpsertion("dora", "SCRAM-SHA-256", "dora-pw-1", 8192),
                    ScramUpsertion("dora", "SCRAM-SHA-512", "dora-pw-2"),
                ]
            )
            assert results == {"dora": None}
            found = await admin.describe_user_scram_credentials(["dora", "nobody"])
            assert found["dora"] == {"SCRAM-SHA-256": 8192, "SCRAM-SHA-512": 4096}
            assert (
                isinstance(found["nobody"], KafkaError)
                and found["nobody"].code == ErrorCode.RESOURCE_NOT_FOUND
            )
            everyone = await admin.describe_user_scram_credentials()
            assert everyone["dora"] == {"SCRAM-SHA-256": 8192, "SCRAM-SHA-512": 4096}

            # Kafka's per-user errors; a user with one bad change is not altered at all
            bad = await admin.alter_user_scram_credentials(
                [
                    ScramUpsertion("erin", "SCRAM-SHA-256", "erin-pw", 100),
                    ScramUpsertion("dora", "SCRAM-SHA-256", "x-pw"),
                    ScramUpsertion("dora", "SCRAM-SHA-512", "dora-pw-3"),
                ],
                [ScramDeletion("dora", "SCRAM-SHA-256"), ScramDeletion("frank", "SCRAM-SHA-512")],
            )
            assert {u: e.code for u, e in bad.items() if e is not None} == {
                "erin": ErrorCode.UNACCEPTABLE_CREDENTIAL,
                "dora": ErrorCode.DUPLICATE_RESOURCE,
                "frank": ErrorCode.RESOURCE_NOT_FOUND,
            }
            assert (await admin.describe_user_scram_credentials(["dora"]))["dora"] == {
                "SCRAM-SHA-256": 8192,
                "SCRAM-SHA-512": 4096,
            }

        # alice is no super user and has no ACLs: Cluster:Describe and Cluster:Alter refused
        async with AdminClient(
            f"127.0.0.1:{secured.sasl_plaintext}", security=plain(secured, ALICE, ALICE_PASSWORD)
        ) as admin:
            with pytest.raises(KafkaError) as info:
                await admin.describe_user_scram_credentials(["dora"])
            assert info.value.code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            denied = await admin.alter_user_scram_credentials(
                [ScramUpsertion("alice", "SCRAM-SHA-512", "mine")]
            )
            assert (
                denied["alice"] is not None and denied["alice"].code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            )

    asyncio.run(run())
    wait_for(lambda: scram_login_works(secured, "dora", "dora-pw-2"), 30, "dora to log in with SCRAM-SHA-512")
    assert scram_login_works(secured, "dora", "dora-pw-1", "SCRAM-SHA-256")
    assert not scram_login_works(secured, "dora", "wrong")
    with KafkaZkClient(secured.cluster.zookeeper_connect) as zk:
        stored = zk.get_data("/config/users/dora")[0].decode()
    assert "SCRAM-SHA-512" in stored and "dora-pw" not in stored


def test_confluent_kafka_admin_client(secured: SecureCluster) -> None:
    admin = CkAdmin({"bootstrap.servers": f"127.0.0.1:{secured.plaintext}"})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    futures = admin.alter_user_scram_credentials([UserScramCredentialUpsertion("erin", info, b"erin-pw")])
    futures["erin"].result(30)
    described = admin.describe_user_scram_credentials(["erin"])["erin"].result(30)
    assert [(c.mechanism, c.iterations) for c in described.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_512, 4096)
    ]
    wait_for(lambda: scram_login_works(secured, "erin", "erin-pw"), 30, "erin to log in")
    admin.alter_user_scram_credentials([UserScramCredentialDeletion("erin", ScramMechanism.SCRAM_SHA_512)])[
        "erin"
    ].result(30)
    with pytest.raises(KafkaException):
        admin.describe_user_scram_credentials(["erin"])["erin"].result(30)
    wait_for(lambda: not scram_login_works(secured, "erin", "erin-pw"), 30, "erin's login to stop working")


def test_zkafka_configs_users_through_a_broker(secured: SecureCluster) -> None:
    command_config = secured.directory / "admin-plain.properties"
    command_config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{ADMIN}" password="{ADMIN_PASSWORD}";\n'
    )

    def configs(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "zkafka.cli.main", "configs", "--bootstrap-server",
             f"127.0.0.1:{secured.sasl_plaintext}", "--command-config", str(command_config),
             "--entity-type", "users", *args],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    added = configs(
        "--entity-name",
        "carol",
        "--alter",
        "--add-config",
        "SCRAM-SHA-512=[iterations=8192,password=carol-pw]",
    )
    assert added.returncode == 0, added.stderr
    assert "Completed updating config for user carol." in added.stdout
    described = configs("--entity-name", "carol", "--describe")
    assert described.returncode == 0, described.stderr
    assert (
        described.stdout.strip()
        == "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-512=iterations=8192"
    )
    wait_for(lambda: scram_login_works(secured, "carol", "carol-pw"), 30, "carol to log in")
    missing = configs("--entity-name", "carol", "--alter", "--delete-config", "SCRAM-SHA-256")
    assert missing.returncode != 0 and "does not exist" in missing.stderr
    for p in (added, described, missing):
        assert "carol-pw" not in p.stdout + p.stderr
    for password in PASSWORDS:
        assert password not in secured.log_text

"""`zkafka cluster up --security` (what `make run` starts): every broker gets a SASL_SSL listener
(SCRAM-SHA-512, PLAIN) beside PLAINTEXT with TLS material made at start, and the ACL authorizer.
Checked with librdkafka (confluent-kafka) and Python's `ssl` as independent peers."""

from __future__ import annotations

import json
import ssl
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zkafka.client.security import librdkafka_security_config
from zkafka.config.properties import load_properties
from zkafka.local.launcher import LocalCluster, _alive
from zkafka.local.security import generate_tls

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

pytestmark = pytest.mark.timeout(300)


def zkafka(*args: str, timeout: float = 120) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", *args], capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_tls_material_is_a_ca_and_a_localhost_certificate(tmp_path: Path) -> None:
    tls = generate_tls(tmp_path)
    for private in (tls.keystore, tls.admin_client_config):
        assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert "PRIVATE KEY" not in tls.ca.read_text()
    # a TLS handshake as clients do it: the CA verifies the broker's chain for both host names
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(tls.keystore)
    client = ssl.create_default_context(cafile=str(tls.ca))
    for host in ("localhost", "127.0.0.1"):
        c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
        cli = client.wrap_bio(c_in, c_out, server_hostname=host)
        srv = server.wrap_bio(s_in, s_out, server_side=True)
        for _ in range(10):
            for side in (cli, srv):
                try:
                    side.do_handshake()
                except ssl.SSLWantReadError:
                    pass
            s_in.write(c_out.read())
            c_in.write(s_out.read())
        assert cli.version() is not None and srv.version() is not None
    # a second start makes new material, never reusing the old key
    first = tls.keystore.read_bytes()
    assert generate_tls(tmp_path).keystore.read_bytes() != first


def test_cluster_up_security(zk_connect: str, tmp_path: Path) -> None:
    directory = tmp_path / "secure"
    out = zkafka("cluster", "up", "--security", "--brokers", "2", "--dir", str(directory),
                 "--zookeeper", zk_connect)  # fmt: skip
    try:
        lines = dict(line.split(": ", 1) for line in out.splitlines())
        plaintext, secured = lines["bootstrap servers"], lines["SASL_SSL"]
        assert len(secured.split(",")) == 2 and lines["CA certificate"] == str(directory / "tls" / "ca.pem")
        state = json.loads((directory / "cluster.json").read_text())
        assert state["security"] and state["ca_path"] == lines["CA certificate"]
        status = json.loads(zkafka("cluster", "status", "--dir", str(directory), "--json"))
        assert [[u.split(":")[0] for u in b["listeners"]] for b in status["brokers"]] == [
            ["PLAINTEXT", "SASL_SSL"],
            ["PLAINTEXT", "SASL_SSL"],
        ]
        # what the brokers registered in /brokers/ids: both listeners each
        assert all(len(b["endpoints"]) == 2 for b in status["registered_brokers"].values())
        table = zkafka("cluster", "status", "--dir", str(directory))
        assert "SASL_SSL://127.0.0.1:" in table and "CA certificate" in table

        # the PLAIN super user from admin-client.properties, through librdkafka over SASL_SSL
        admin_conf = librdkafka_security_config(load_properties(lines["admin client config"]))
        admin = AdminClient({"bootstrap.servers": secured, **admin_conf})
        admin.create_topics([NewTopic("guarded", 2, 2)])["guarded"].result(30)
        # a SCRAM user: allowed where no ACL protects (allow.everyone.if.no.acl.found=true), refused
        # once ACLs name someone else
        zkafka("configs", "--zookeeper", zk_connect, "--entity-type", "users", "--entity-name", "carol",
               "--alter", "--add-config", "SCRAM-SHA-512=[iterations=4096,password=carol-pw]")  # fmt: skip
        carol = {
            "bootstrap.servers": secured, "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "carol", "sasl.password": "carol-pw", "ssl.ca.location": lines["CA certificate"],
        }  # fmt: skip
        assert _produce(carol, "guarded") is None
        zkafka("acls", "--authorizer-properties", f"zookeeper.connect={zk_connect}", "--add",
               "--allow-principal", "User:dave", "--producer", "--topic", "guarded")  # fmt: skip
        # every broker's ACL cache follows the change notification; wait for it, not for a time
        deadline = time.monotonic() + 30
        while (err := _produce(carol, "guarded")) is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert err is not None and err.code() == ck.KafkaError.TOPIC_AUTHORIZATION_FAILED
        # PLAINTEXT (User:ANONYMOUS, a super user) still works, and so does replication between the
        # brokers over it: both replicas stay in sync
        assert _produce({"bootstrap.servers": plaintext}, "guarded") is None
        described = json.loads(zkafka("cluster", "status", "--dir", str(directory), "--json"))
        assert all(sorted(p["isr"]) == [1, 2] for p in described["topics"]["guarded"])
    finally:
        pids = [b.pid for b in LocalCluster.load(directory).brokers.values()]
        zkafka("cluster", "down", "--dir", str(directory))
    assert not any(_alive(pid) for pid in pids)


def _produce(conf: dict[str, str], topic: str) -> object:
    outcome: list[object] = []
    producer = ck.Producer({**conf, "message.timeout.ms": 15000, "linger.ms": 0})
    producer.produce(topic, b"x", on_delivery=lambda err, _msg: outcome.append(err))
    producer.flush(30)
    assert outcome, "no delivery report"
    return outcome[0]

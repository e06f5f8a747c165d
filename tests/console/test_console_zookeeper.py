"""The console's ZooKeeper side on a real ZooKeeper (a fresh chroot holding a hand-made cluster
tree) with no broker answering: the overview falls back to what ZooKeeper says (registrations,
partition states, the doctor's findings), and `/zookeeper?path=` shows znodes as text or hex,
escaped."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient
from starlette.testclient import TestClient

from zkafka.console.app import build_app
from zkafka.console.settings import ConsoleSettings
from zkafka.local.zookeeper import free_port
from zkafka.zk.client import KafkaZkClient


def _j(obj: object) -> bytes:
    return json.dumps(obj).encode()


def _registration(bid: int) -> bytes:
    return _j(
        {
            "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
            "endpoints": [f"PLAINTEXT://127.0.0.1:{9090 + bid}"],
            "jmx_port": -1,
            "host": "127.0.0.1",
            "timestamp": "1700000000000",
            "port": 9090 + bid,
            "rack": f"rack-{bid}",
            "version": 5,
        }
    )


@pytest.fixture
def client(zk_connect: str) -> Iterator[TestClient]:
    """Brokers 1 and 2 registered, broker 3 gone; topic t: partition 0 led by 3 (offline),
    partition 1 by 1 with 3 out of its ISR; a znode holding markup and one holding binary."""
    kz = KazooClient(hosts=zk_connect, timeout=10)
    kz.start(15)
    try:
        for bid in (1, 2):
            kz.create(f"/brokers/ids/{bid}", _registration(bid), ephemeral=True, makepath=True)
        kz.create("/controller", _j({"version": 1, "brokerid": 1, "timestamp": "1"}), ephemeral=True)
        kz.create("/controller_epoch", b"1")
        kz.create(
            "/brokers/topics/t",
            _j({"version": 3, "partitions": {"0": [3, 1, 2], "1": [1, 2, 3]}, "adding_replicas": {},
                "removing_replicas": {}}),
            makepath=True,
        )  # fmt: skip
        for p, (leader, isr) in {0: (3, [3]), 1: (1, [1, 2])}.items():
            state = {"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": 0, "isr": isr}
            kz.create(f"/brokers/topics/t/partitions/{p}/state", _j(state), makepath=True)
        kz.create("/markup", b"<script>alert(1)</script>")
        kz.create("/binary", b"\xff\x00\x01")
        settings = ConsoleSettings(f"127.0.0.1:{free_port()}", zk_connect, request_timeout_ms=1000)
        with (
            KafkaZkClient(zk_connect, connection_timeout_ms=10_000) as zk,
            TestClient(build_app(settings, zk), raise_server_exceptions=False) as c,
        ):
            yield c
    finally:
        kz.stop()
        kz.close()


def test_overview_from_zookeeper_when_no_broker_answers(client: TestClient) -> None:
    r = client.get("/")
    assert r.status_code == 200, r.text
    assert 'id="brokers-note"' in r.text and "no broker answered" in r.text
    assert '<td class="dead">dead</td>' in r.text.split('id="broker-3"')[1].split("</tr>")[0]
    assert "PLAINTEXT://127.0.0.1:9091" in r.text and "rack-1" in r.text
    assert 'id="offline-count">1 offline' in r.text and 'id="urp-count">1 under-replicated' in r.text
    summary = r.text.split('id="finding-summary"')[1].split("</table>")[0]
    assert "partition-offline" in summary and "partition-under-replicated" in summary
    assert '<meta http-equiv="refresh" content="5">' in r.text


def test_zookeeper_tree_is_shown_as_text(client: TestClient) -> None:
    r = client.get("/zookeeper", params={"path": "/brokers/ids"})
    assert r.status_code == 200
    children = r.text.split('id="znode-children"')[1].split("</ul>")[0]
    assert ">1</a>" in children and ">2</a>" in children and ">3</a>" not in children
    assert "ephemeral owner</th><td>0x" in client.get("/zookeeper", params={"path": "/brokers/ids/1"}).text
    markup = client.get("/zookeeper", params={"path": "/markup"})
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markup.text and "<script>" not in markup.text
    binary = client.get("/zookeeper", params={"path": "/binary"})
    assert "3 bytes, hex" in binary.text and ">ff 00 01</pre>" in binary.text
    assert client.get("/zookeeper").status_code == 200  # the root by default

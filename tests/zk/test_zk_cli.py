"""`zkafka zk ls|get|tree|rm` run as a real subprocess against the fixture ZooKeeper."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import BrokerInfo, EndPoint, SecurityProtocol


def zk_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", "zk", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def cluster(zk_connect: str) -> Iterator[KafkaZkClient]:
    client = KafkaZkClient(zk_connect)
    client.create_top_level_paths()
    client.create_topic_assignment("orders", {0: [1]}, topic_id="b8tRS7h4TJ2Vt43Dp85v2A")
    client.register_broker(
        BrokerInfo(1, (EndPoint("PLAINTEXT", "127.0.0.1", 9092, SecurityProtocol.PLAINTEXT),), timestamp_ms=1)
    )
    client.create("/controller_epoch", b"3")
    client.create("/binary", bytes(range(250, 256)) + b"\x00")
    yield client
    client.close()


def test_ls_get_and_stat(cluster: KafkaZkClient, zk_connect: str) -> None:
    ls = zk_cli("ls", "/", "--zookeeper", zk_connect)
    assert ls.returncode == 0, ls.stderr
    assert ls.stdout.split() == [
        "admin",
        "binary",
        "brokers",
        "config",
        "consumers",
        "controller_epoch",
        "isr_change_notification",
        "latest_producer_id_block",
        "log_dir_event_notification",
    ]

    topic = zk_cli("get", "/brokers/topics/orders", "--zookeeper", zk_connect)
    assert topic.returncode == 0, topic.stderr
    assert topic.stdout.startswith('{\n  "version": 3,')  # pretty-printed
    assert json.loads(topic.stdout)["topic_id"] == "b8tRS7h4TJ2Vt43Dp85v2A"

    epoch = zk_cli("get", "/controller_epoch", "--stat", "--zookeeper", zk_connect)
    assert epoch.returncode == 0, epoch.stderr
    lines = epoch.stdout.splitlines()
    assert lines[0] == "3"
    assert "dataVersion = 0" in lines and "ephemeralOwner = 0x0" in lines and "numChildren = 0" in lines

    broker = zk_cli("get", "/brokers/ids/1", "--stat", "--zookeeper", zk_connect)
    assert f"ephemeralOwner = 0x{cluster.session_id:x}" in broker.stdout.splitlines()

    binary = zk_cli("get", "/binary", "--zookeeper", zk_connect)
    assert binary.stdout.strip() == "<7 bytes of binary data: fafbfcfdfeff00>"


def test_tree(cluster: KafkaZkClient, zk_connect: str) -> None:
    tree = zk_cli("tree", "--zookeeper", zk_connect)
    assert tree.returncode == 0, tree.stderr
    lines = tree.stdout.splitlines()
    assert lines[0] == "/"
    assert "├── brokers" in lines
    assert any(line.endswith("(ephemeral)") and "── 1  = {" in line for line in lines)
    assert any('── orders  = {"version":3,"partitions":{"0":[1]}' in line for line in lines)
    assert "│   ├── changes" in lines
    shallow = zk_cli("tree", "/brokers", "--max-depth", "1", "--zookeeper", zk_connect)
    assert shallow.stdout.splitlines() == ["/brokers", "├── ids", "├── seqid", "└── topics"]


def test_tree_summarises_a_znode_with_many_children(cluster: KafkaZkClient, zk_connect: str) -> None:
    """`--max-children` (what the demo passes): `__consumer_offsets`' 50 partitions are one line with
    their count, while a topic with a few partitions is shown whole, in numeric order."""
    cluster.create_topic_assignment("__consumer_offsets", {p: [1] for p in range(50)}, allow_internal=True)
    cluster.create_topic_assignment("events", {p: [1] for p in range(12)})
    for topic, partitions in (("__consumer_offsets", 50), ("events", 12)):
        for p in range(partitions):
            cluster.create(f"/brokers/topics/{topic}/partitions/{p}/state", b'{"leader":1}', makepath=True)
    tree = zk_cli("tree", "/brokers/topics", "--max-children", "12", "--zookeeper", zk_connect)
    assert tree.returncode == 0, tree.stderr
    lines = tree.stdout.splitlines()
    offsets = lines.index(next(ln for ln in lines if "── __consumer_offsets  = " in ln))
    assert lines[offsets + 1 : offsets + 3] == [
        "│   └── partitions",
        "│       └── … 50 children (0 … 49), not shown",
    ]
    partitions = [ln.rsplit(" ", 1)[1] for ln in lines if re.fullmatch(r"│       [├└]── \d+", ln)]
    assert partitions == [str(p) for p in range(12)]  # events', in numeric order
    assert len(lines) < 50, tree.stdout
    whole = zk_cli("tree", "/brokers/topics", "--zookeeper", zk_connect).stdout.splitlines()
    assert len(whole) > 100 and sum("── state  = " in ln for ln in whole) == 62
    bad = zk_cli("tree", "/", "--max-children", "-1", "--zookeeper", zk_connect)
    assert bad.returncode == 1 and bad.stderr == "error: --max-children must be >= 0\n"


def test_rm(cluster: KafkaZkClient, zk_connect: str) -> None:
    refused = zk_cli("rm", "/brokers/topics", "--zookeeper", zk_connect)
    assert refused.returncode == 1
    assert refused.stderr == "error: node /brokers/topics has children; use --recursive to delete them too\n"
    assert cluster.exists("/brokers/topics/orders") is not None
    done = zk_cli("rm", "/brokers/topics", "--recursive", "--zookeeper", zk_connect)
    assert done.returncode == 0, done.stderr
    assert cluster.exists("/brokers/topics") is None
    assert zk_cli("rm", "/binary", "--zookeeper", zk_connect).returncode == 0
    assert cluster.exists("/binary") is None
    root = zk_cli("rm", "/", "-r", "--zookeeper", zk_connect)
    assert root.returncode == 1 and "refusing to delete the root" in root.stderr


def test_errors_are_one_line_with_exit_code_1(cluster: KafkaZkClient, zk_connect: str) -> None:
    chroot = zk_connect[zk_connect.index("/") :]
    cases = [
        (("get", "/nope"), f"error: node /nope does not exist (under chroot {chroot})"),
        (("ls", "/nope"), f"error: node /nope does not exist (under chroot {chroot})"),
        (("rm", "/nope"), f"error: node /nope does not exist (under chroot {chroot})"),
        (("get", "nope"), "error: path 'nope' must start with '/'"),
    ]
    for args, message in cases:
        result = zk_cli(*args, "--zookeeper", zk_connect)
        assert (result.returncode, result.stderr) == (1, message + "\n"), args


def test_bad_or_unreachable_zookeeper() -> None:
    bad = zk_cli("ls", "/", "--zookeeper", "h1:2181/kafka,h2:2181")
    assert bad.returncode == 1
    assert bad.stderr.startswith("error: bad --zookeeper: ") and bad.stderr.count("\n") == 1
    down = zk_cli("ls", "/", "--zookeeper", "127.0.0.1:1", "--timeout", "0.5")
    assert (down.returncode, down.stderr) == (
        1,
        "error: could not connect to ZooKeeper at 127.0.0.1:1 within 0.5 s\n",
    )


def test_missing_chroot_is_not_created(zookeeper_server: object, zk_connect: str) -> None:
    missing = zk_connect + "/not-there"
    result = zk_cli("ls", "/", "--zookeeper", missing)
    assert result.returncode == 1
    assert result.stderr == f"error: node / does not exist (under chroot {missing[missing.index('/') :]})\n"

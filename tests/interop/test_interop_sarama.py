"""Shopify/sarama (Debian's golang-github-shopify-sarama-dev, 1.22.1) against a 3-broker cluster,
at every protocol generation it speaks: `sarama_check/main.go` is a small Go program using sarama as
a Go service would (admin, sync producer with acks=all, partition consumer, consumer group, group
admin) and prints one JSON line per step.

What each version exercises: 0.8.2 produces magic-0 message sets (Produce v0, Fetch v0) and commits
nothing; 0.10.0 magic 1; 0.10.2 adds the consumer group (JoinGroup v1, OffsetCommit v1 with a
per-partition commit timestamp); 0.11 record batches with headers and the admin API; 1.0 and 2.1
CreatePartitions and the newer request versions. zstd is left out: sarama 1.22 sends it with
Produce v3, which Kafka (and zkafka) refuse with UNSUPPORTED_COMPRESSION_TYPE as v7 is required.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from golang import go_environment

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster

SARAMA = Path("/usr/share/gocode/src/github.com/Shopify/sarama")
PROGRAM = Path(__file__).parent / "sarama_check"

CASES = [
    ("2.1.0", "lz4"),
    ("2.1.0", "none"),
    ("1.0.0", "snappy"),
    ("0.11.0.0", "gzip"),
    ("0.10.2.0", "snappy"),
    ("0.10.0.0", "gzip"),
    ("0.8.2.0", "none"),
    ("0.8.2.0", "snappy"),
]


@pytest.fixture(scope="module")
def sarama_check(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("go") is None or not SARAMA.is_dir():
        pytest.fail("go and golang-github-shopify-sarama-dev are missing: run `make setup`")
    tmp = tmp_path_factory.mktemp("sarama-build")
    binary = tmp / "sarama_check"
    subprocess.run(
        ["go", "build", "-o", str(binary), "."],
        cwd=PROGRAM,
        env=go_environment(),
        check=True,
        capture_output=True,
        timeout=300,
    )
    return binary


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("sarama"), brokers=3) as c:
        yield c


@pytest.mark.timeout(240)
@pytest.mark.parametrize(("version", "codec"), CASES, ids=[f"{v}-{c}" for v, c in CASES])
def test_sarama_round_trip(sarama_check: Path, cluster: LocalCluster, version: str, codec: str) -> None:
    topic = f"sarama-{version.replace('.', '_')}-{codec}"
    result = subprocess.run(
        [
            str(sarama_check),
            "-bootstrap",
            cluster.bootstrap_servers,
            "-version",
            version,
            "-codec",
            codec,
            "-topic",
            topic,
            "-count",
            "400",
        ],
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )
    steps = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    failed = [s for s in steps if not s["ok"]]
    assert result.returncode == 0 and not failed, f"{failed}\n{result.stderr[-2000:]}"
    names = {s["step"] for s in steps}
    assert {"producer.send", "consumer.read_back"} <= names
    if tuple(map(int, version.split("."))) >= (0, 10, 2):  # sarama's consumer group and group admin
        assert {"group.consume", "admin.group_offsets"} <= names
    for b in cluster.brokers.values():
        assert "Traceback" not in b.log_path.read_text()

"""segmentio/kafka-go's own test suite (Debian's golang-github-segmentio-kafka-go-dev, 0.2.1), run
unmodified against one zkafka broker, as its authors run it against Kafka.

kafka-go 0.2 is an old-protocol client: it produces magic 1 message sets with Produce v2, fetches
with Fetch v2 (down-converted data), and runs consumer groups with JoinGroup v1 / SyncGroup v0 /
Heartbeat v0. Its tests hard-code `localhost:9092`, so the broker listens there.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from golang import go_environment

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import TEST_BROKER_DEFAULTS, wait_until_ready
from zkafka.testing.zookeeper import new_chroot

KAFKA_GO = Path("/usr/share/gocode/src/github.com/segmentio/kafka-go")
PORT = 9092


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture(scope="module")
def broker(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    if shutil.which("go") is None or not KAFKA_GO.is_dir():
        pytest.fail("go and golang-github-segmentio-kafka-go-dev are missing: run `make setup`")
    if not _port_free(PORT):
        pytest.skip(f"port {PORT} is taken (kafka-go's tests hard-code localhost:{PORT})")
    cluster = LocalCluster(
        tmp_path_factory.mktemp("kafka-go"),
        zookeeper_connect=zookeeper_server.connect_string + new_chroot("kgo"),
    )
    cluster.broker_overrides.update(TEST_BROKER_DEFAULTS)
    cluster.broker_overrides["advertised.listeners"] = f"PLAINTEXT://localhost:{PORT}"
    cluster.broker_overrides["listeners"] = f"PLAINTEXT://127.0.0.1:{PORT}"
    try:
        cluster.add_broker(1, port=PORT)
        cluster.start_broker(1)
        wait_until_ready(cluster, 60)
        yield cluster
    finally:
        cluster.stop_broker(1, timeout=20)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_kafka_go_suite_passes(broker: LocalCluster) -> None:
    env = go_environment(GOFLAGS="-count=1")  # -count=1: the tests run, never a cached result
    result = subprocess.run(
        ["go", "test", "-v", "./..."],
        cwd=KAFKA_GO,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    out = result.stdout + result.stderr
    passed = len(re.findall(r"^\s*--- PASS", out, flags=re.MULTILINE))
    failed = re.findall(r"^\s*--- FAIL: (\S+)", out, flags=re.MULTILINE)
    print(f"kafka-go 0.2.1 suite: {passed} passed, {len(failed)} failed")
    assert result.returncode == 0 and not failed, f"failed: {failed}\n{out[-4000:]}"
    assert passed >= 200
    assert "Traceback" not in broker.brokers[1].log_path.read_text()

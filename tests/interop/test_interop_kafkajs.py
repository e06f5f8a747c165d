"""KafkaJS 2.2.4 (npm, pinned in tests/interop/kafkajs/package.json, installed by scripts/setup.sh
into tests/interop/kafkajs/node_modules) against a 2-broker cluster, through its public API only:
`kafkajs/check.js` is a small Node program using KafkaJS as a Node service would and printing one
JSON line per step.

* round trip, once uncompressed and once with gzip: admin createTopics and fetchTopicMetadata, a
  producer (acks=all, headers), a consumer group reading everything back, commitOffsets and
  fetchOffsets, describeGroups, deleteTopicRecords (DeleteRecords) and deleteGroups;
* a consumer group of two members: one is killed (SIGKILL, no LeaveGroup), and once its session
  expires the other is given all the partitions and reads what is produced to them.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import make_topic, running_cluster

HERE = Path(__file__).parent / "kafkajs"
PARTITIONS = 3


def _node_env() -> dict[str, str]:
    return {**os.environ, "KAFKAJS_NO_PARTITIONER_WARNING": "1"}


@pytest.fixture(scope="module")
def kafkajs() -> Path:
    if shutil.which("node") is None or not (HERE / "node_modules" / "kafkajs").is_dir():
        pytest.fail("node and KafkaJS are missing: run `make setup` (scripts/setup.sh)")
    return HERE / "check.js"


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("kafkajs"), brokers=2) as c:
        yield c


def _steps(stdout: str) -> dict[str, dict]:
    return {s["step"]: s for s in (json.loads(line) for line in stdout.splitlines() if line.startswith("{"))}


@pytest.mark.timeout(180)
@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_kafkajs_round_trip(kafkajs: Path, cluster: LocalCluster, codec: str) -> None:
    topic, group = f"kafkajs-{codec}", f"kafkajs-group-{codec}"
    result = subprocess.run(
        ["node", str(kafkajs), "round-trip", cluster.bootstrap_servers, topic, codec, group],
        capture_output=True,
        text=True,
        timeout=150,
        env=_node_env(),
        check=False,
    )
    steps = _steps(result.stdout)
    assert result.returncode == 0 and "error" not in steps, (
        f"{result.stdout[-3000:]}\n{result.stderr[-2000:]}"
    )
    assert steps["metadata"]["created"] is True
    assert steps["metadata"]["partitions"] == list(range(PARTITIONS))
    assert set(steps["produced"]["errors"]) == {0}
    consumed = steps["consumed"]
    assert consumed["values"] == sorted(f"v{i}" for i in range(30)) and consumed["headersKept"]
    committed = steps["committed"]
    assert {p: o for p, o in committed["offsets"].items() if o != "-1"} == committed["expected"]
    assert steps["described"]["state"] == "Stable" and steps["described"]["members"] == 1
    assert steps["described"]["protocol"] in ("RoundRobinAssigner", "RangeAssigner")
    records = steps["deleted-records"]
    assert records["low"] == records["cut"]
    assert steps["deleted-group"]["results"] == [0] and steps["deleted-group"]["listed"] is False
    for b in cluster.brokers.values():
        assert "Traceback" not in b.log_path.read_text()


class _Member:
    """One `check.js member` process and the JSON lines it has printed so far."""

    def __init__(self, script: Path, cluster: LocalCluster, topic: str, group: str, name: str) -> None:
        self.name = name
        self.lines: queue.Queue[dict] = queue.Queue()
        self.assigned: list[int] | None = None
        self.values: set[str] = set()
        self.proc = subprocess.Popen(
            ["node", str(script), "member", cluster.bootstrap_servers, topic, group, name],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=_node_env(),
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.lines.put(json.loads(line))

    def drain(self) -> None:
        while True:
            try:
                step = self.lines.get_nowait()
            except queue.Empty:
                return
            if step["step"] == "assigned":
                self.assigned = step["partitions"]
            elif step["step"] == "message":
                self.values.add(step["value"])
            elif step["step"] == "error":
                raise AssertionError(f"{self.name}: {step['message']}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def _until(check: object, timeout: float, what: str, members: list[_Member]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for m in members:
            m.drain()
        if check():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}: {[(m.name, m.assigned) for m in members]}")


@pytest.mark.timeout(180)
def test_kafkajs_group_member_killed_its_partitions_go_to_the_other(
    kafkajs: Path, cluster: LocalCluster
) -> None:
    import asyncio

    topic, group = "kafkajs-rebalance", "kafkajs-rebalance-group"
    asyncio.run(make_topic(cluster, topic, PARTITIONS))
    a = _Member(kafkajs, cluster, topic, group, "a")
    b = _Member(kafkajs, cluster, topic, group, "b")
    members = [a, b]
    try:
        _until(
            lambda: a.assigned and b.assigned and sorted(a.assigned + b.assigned) == list(range(PARTITIONS)),
            90,
            "both members sharing the partitions",
            members,
        )
        a.stop(signal.SIGKILL)  # no LeaveGroup: the coordinator must expire its session
        _until(lambda: b.assigned == list(range(PARTITIONS)), 90, "b owning every partition", [b])
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        for p in range(PARTITIONS):
            producer.produce(topic, f"after-{p}".encode(), partition=p)
        assert producer.flush(30) == 0
        wanted = {f"after-{p}" for p in range(PARTITIONS)}
        _until(lambda: wanted <= b.values, 60, "b reading every partition", [b])
    finally:
        for m in members:
            m.stop()

"""The `partition` and `disk-full` faults for real: a cluster whose brokers each run in their own
network namespace (`zkafka cluster up --netns`) with a small tmpfs as log dir (`--log-dir-size`);
the link of the busiest leader is taken down for longer than the ZooKeeper session, and a leader's
log dir filled (the broker halts, as Kafka's does when its last log dir fails, and is restarted),
under idempotent acks=all load: the verdict is clean, and nothing of the network (namespaces,
veths, bridge) or the mounts is left once the cluster is down. Linux and root only."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from zkafka.local import mounts, netns
from zkafka.local.launcher import LocalCluster
from zkafka.testing.cluster import TEST_BROKER_DEFAULTS

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(netns.available() is not None, reason=f"{netns.available()}"),
]

FAST = {
    "zookeeper.session.timeout.ms": "4000",
    "replica.lag.time.max.ms": "2000",
    "replica.fetch.backoff.ms": "200",
    "controlled.shutdown.retry.backoff.ms": "200",
}


def network_leftovers(network: netns.BrokerNetwork) -> list[str]:
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    return [line for line in (names + links).splitlines() if network.tag in line]


@pytest.fixture
def netns_cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path / "cluster")
    cluster.broker_overrides.update(TEST_BROKER_DEFAULTS)
    try:
        cluster.up(3, overrides=FAST, timeout=90, netns=True, log_dir_size="32m")
        yield cluster
    finally:
        # a chaos run restarts brokers: their pids are in cluster.json, not in `cluster`
        state = (
            LocalCluster.load(cluster.directory) if (cluster.directory / "cluster.json").exists() else cluster
        )
        network = state.network
        state.down(timeout=10)
        if network is not None:
            assert network_leftovers(network) == []
        assert not any((Path(b.directory) / "logs").is_mount() for b in state.brokers.values())


def reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


@pytest.mark.timeout(120)
def test_brokers_live_in_their_namespaces_and_a_cut_link_drops_them(netns_cluster: LocalCluster) -> None:
    network = netns_cluster.network
    assert network is not None and network.subnet.startswith("10.213.")
    assert netns_cluster.zookeeper_connect.startswith(network.gateway + ":")
    broker = netns_cluster.brokers[1]
    assert broker.host == network.address(1) and broker.netns == network.namespace(1)
    assert Path(f"/proc/{broker.pid}/ns/net").readlink() != Path("/proc/self/ns/net").readlink()
    assert reachable(broker.host, broker.port)
    network.cut(1)
    try:
        assert network.is_cut(1) and not reachable(broker.host, broker.port)
    finally:
        network.heal(1)
    assert not network.is_cut(1) and reachable(broker.host, broker.port)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_chaos_partition_and_disk_full_end_clean(netns_cluster: LocalCluster) -> None:
    result = subprocess.run(
        [
            sys.executable, "-m", "zkafka.cli.main", "chaos", "--dir", str(netns_cluster.directory),
            "--duration", "10", "--interval", "4", "--faults", "partition,disk-full", "--seed", "5",
        ],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    print(result.stdout)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "verdict: clean" in result.stdout
    for fault in ("partition", "disk-full"):
        assert f"│ {fault} " in result.stdout, result.stdout
    state = LocalCluster.load(netns_cluster.directory)
    assert all(state.broker_alive(b) for b in state.brokers)
    assert state.network is not None and not any(state.network.is_cut(b) for b in state.brokers)
    assert not any((Path(b.directory) / "logs" / mounts.FILLER).exists() for b in state.brokers.values())

"""`zkafka chaos` against a real local cluster: broker SIGKILL, a pause longer than the ZooKeeper
session and a controller kill under idempotent acks=all load, with a consumer group rebalancing,
end with a clean verdict (exit 0); acks=1 with unclean leader election loses records and the
checker counts them; faults that cannot be applied are refused with a reason."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from chaos_helpers import FAST, chaos

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import TEST_BROKER_DEFAULTS
from zkafka.testing.zookeeper import chrooted


@pytest.fixture
def cluster_dir(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "cluster"
    with chrooted(zookeeper_server) as connect:
        cluster = LocalCluster(directory)
        cluster.broker_overrides.update(TEST_BROKER_DEFAULTS)
        try:
            cluster.up(3, zookeeper=connect, overrides=FAST, timeout=90)
            yield directory
        finally:
            # the chaos run restarted brokers: their pids are in cluster.json, not in `cluster`
            LocalCluster.load(directory).down(timeout=10)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_chaos_kill_pause_and_controller_end_clean(cluster_dir: Path) -> None:
    result = chaos(
        "--dir", str(cluster_dir), "--duration", "20", "--interval", "5", "--faults", "kill,pause,controller",
        "--seed", "7",
    )  # fmt: skip
    print(result.stdout)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "verdict: clean" in result.stdout
    for fault in ("kill", "pause", "controller"):
        assert f"│ {fault} " in result.stdout, result.stdout
    state = LocalCluster.load(cluster_dir)
    assert all(state.broker_alive(b) for b in state.brokers)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_acks_1_with_unclean_election_loses_records_and_the_checker_counts_them(cluster_dir: Path) -> None:
    """A deliberately weak configuration: acks=1 producers, unclean leader election on, and a
    partition's whole ISR killed with an out-of-sync replica back first. The records only the old
    leader had are lost, and the verdict says so: counted as expected under this configuration."""
    result = chaos(
        "--dir", str(cluster_dir), "--duration", "2", "--interval", "3", "--faults", "unclean",
        "--acks", "1", "--unclean-leader-election", "--seed", "3",
    )  # fmt: skip
    print(result.stdout)
    assert result.returncode == 0, result.stdout + result.stderr
    lost = next(line for line in result.stdout.splitlines() if line.startswith("│ lost "))
    assert int(lost.split("│")[2]) > 0 and "expected" in lost, lost
    assert (
        "lost (expected)" in result.stdout and "expected anomalies under this configuration" in result.stdout
    )


@pytest.mark.timeout(120)
def test_faults_that_cannot_be_applied_are_refused(cluster_dir: Path) -> None:
    for faults, reason in (
        ("partition", "--netns"),
        ("zk-kill", "ensemble"),
        ("disk-full", "--log-dir-size"),
        ("kill,explode", "unknown fault"),
    ):
        result = chaos("--dir", str(cluster_dir), "--duration", "5", "--faults", faults)
        assert result.returncode != 0 and reason in result.stderr, result.stderr

"""The "last replica standing" (issue 19 item 4): `zkafka chaos --faults power-loss` kills a
partition's followers, waits until its ISR is the leader alone, lets it take writes, SIGKILLs it
and cuts its replica back to its checkpointed recovery point (what a power loss leaves), then
brings it back before the followers. Flushes run every 2 s (`flush.ms`), well within the time the
ISR takes to shrink, so everything acknowledged while the followers were in sync is on the disk.
With min.insync.replicas=2 nothing was acknowledged by the leader alone: the verdict is clean, no
loss at all. With min.insync.replicas=1 it acknowledged writes alone and the unflushed ones are
gone: the checker counts them as expected under that configuration."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from chaos_helpers import FAST, chaos, verdict_count

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import TEST_BROKER_DEFAULTS
from zkafka.testing.zookeeper import chrooted

FLUSHING = {
    **FAST,
    "log.flush.scheduler.interval.ms": "200",
    "log.flush.offset.checkpoint.interval.ms": "200",
}


@pytest.fixture
def cluster_dir(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "cluster"
    with chrooted(zookeeper_server) as connect:
        cluster = LocalCluster(directory)
        cluster.broker_overrides.update(TEST_BROKER_DEFAULTS)
        try:
            cluster.up(3, zookeeper=connect, overrides=FLUSHING, timeout=90)
            yield directory
        finally:
            LocalCluster.load(directory).down(timeout=10)


def power_loss(cluster_dir: Path, *extra: str) -> str:
    result = chaos(
        "--dir", str(cluster_dir), "--duration", "2", "--interval", "3", "--faults", "power-loss",
        "--topic-config", "flush.ms=2000", "--seed", "5", *extra,
    )  # fmt: skip
    print(result.stdout, result.stderr)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "│ power-loss " in result.stdout, result.stdout
    state = LocalCluster.load(cluster_dir)
    assert all(state.broker_alive(b) for b in state.brokers)
    return result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_power_loss_of_the_last_replica_with_min_insync_2_loses_nothing(cluster_dir: Path) -> None:
    output = power_loss(cluster_dir)
    assert "min.insync.replicas=2" in output
    assert "verdict: clean\n" in output, output
    assert verdict_count(output, "lost") == 0 and verdict_count(output, "moved") == 0


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_power_loss_with_min_insync_1_loses_what_the_leader_acknowledged_alone(cluster_dir: Path) -> None:
    output = power_loss(cluster_dir, "--min-insync-replicas", "1")
    assert "min.insync.replicas=1" in output
    cut = re.search(r"cut (\d+) unflushed record", output)
    assert cut and int(cut.group(1)) > 0, output
    assert verdict_count(output, "lost") > 0, output
    assert "lost (expected)" in output and "expected anomalies under this configuration" in output

"""`zkafka chaos --bootstrap-server --zookeeper`: a cluster the run did not start and has no
directory of (here three broker processes started by the test harness). The brokers are found in
`/brokers/ids`, their processes by their listening ports; `--faults kill` SIGKILLs one and starts
it again from its captured command line, and the verdict is clean. Faults such a cluster cannot
take are refused up front, one line per fault; `--faults none` runs the workload alone. With a
3-member ensemble whose servers run here, `zk-kill` kills and re-executes one of them."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from chaos_helpers import FAST, chaos

from zkafka.chaos.targets import alive, listening_pid
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import TEST_BROKER_DEFAULTS, running_cluster


def broker_pids(cluster: LocalCluster) -> dict[int, int | None]:
    return {b: listening_pid(broker.port) for b, broker in cluster.brokers.items()}


def stop_by_port(ports: list[int], known: set[int]) -> None:
    """Stop what listens on `ports` but was not started by the harness (`known`): what a chaos
    run re-executed is nobody's child."""
    for port in ports:
        pid = listening_pid(port)
        if pid is None or pid in known:
            continue
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("remote"), brokers=3, overrides=FAST) as c:
        try:
            yield c
        finally:
            # brokers the chaos run restarted are not children of the harness: stop them by port
            stop_by_port([b.port for b in c.brokers.values()], {b.pid for b in c.brokers.values()})


def remote(cluster: LocalCluster, *args: str) -> tuple[int, str, str]:
    result = chaos(
        "--bootstrap-server", cluster.bootstrap_servers, "--zookeeper", cluster.zookeeper_connect,
        "--zookeeper-session-timeout-ms", "4000", *args,
    )  # fmt: skip
    print(result.stdout, result.stderr)
    return result.returncode, result.stdout, result.stderr


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_kill_through_zookeeper_ends_clean_and_restarts_a_broker(cluster: LocalCluster) -> None:
    before = broker_pids(cluster)
    assert all(before.values()), before
    code, out, err = remote(cluster, "--duration", "8", "--interval", "4", "--faults", "kill", "--seed", "1")
    assert code == 0, out + err
    assert "verdict: clean" in out and "│ kill " in out, out
    after = broker_pids(cluster)
    restarted = [b for b in before if after[b] != before[b]]
    assert len(restarted) == 1 and after[restarted[0]] is not None, (before, after)
    assert not alive(before[restarted[0]] or 0)


@pytest.mark.timeout(120)
def test_faults_a_found_cluster_cannot_take_are_refused_with_a_reason(cluster: LocalCluster) -> None:
    code, _out, err = remote(cluster, "--duration", "3", "--faults", "partition,disk-full,power-loss,zk-kill")
    assert code != 0
    for line in ("partition: needs", "disk-full: needs", "power-loss: needs", "zk-kill: needs"):
        assert line in err, err


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_no_fault_runs_the_workload_and_the_checker(cluster: LocalCluster) -> None:
    code, out, err = remote(cluster, "--duration", "3", "--interval", "1", "--faults", "none")
    assert code == 0 and "verdict: clean" in out, out + err


def zookeeper_ports(cluster: LocalCluster) -> list[int]:
    return [
        int(hostport.rsplit(":", 1)[1]) for hostport in cluster.zookeeper_connect.split("/")[0].split(",")
    ]


@pytest.fixture
def on_ensemble(tmp_path: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path / "ensemble")
    cluster.broker_overrides.update(TEST_BROKER_DEFAULTS)
    cluster.up(3, zookeepers=3, overrides=FAST, timeout=120)
    ports = [b.port for b in cluster.brokers.values()] + zookeeper_ports(cluster)
    try:
        yield cluster
    finally:
        cluster.down(timeout=10)
        stop_by_port(ports, set())  # after `down`, whatever still listens was re-executed by the run


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_zk_kill_of_a_local_ensemble_found_through_the_connect_string(on_ensemble: LocalCluster) -> None:
    zk_ports = [int(h.rsplit(":", 1)[1]) for h in on_ensemble.zookeeper_connect.split("/")[0].split(",")]
    before = [listening_pid(p) for p in zk_ports]
    code, out, err = remote(
        on_ensemble, "--duration", "4", "--interval", "3", "--faults", "zk-kill", "--seed", "2"
    )
    assert code == 0 and "verdict: clean" in out and "│ zk-kill " in out, out + err
    # the re-executed member's JVM binds its port seconds after the run healed the quorum
    deadline = time.monotonic() + 60
    after = [listening_pid(p) for p in zk_ports]
    while not all(after) and time.monotonic() < deadline:
        time.sleep(0.5)
        after = [listening_pid(p) for p in zk_ports]
    assert all(after) and sum(a != b for a, b in zip(before, after, strict=True)) == 1, (before, after)

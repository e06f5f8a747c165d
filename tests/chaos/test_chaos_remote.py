"""`zkafka chaos --bootstrap-server --zookeeper`: a cluster the run did not start and has no
directory of (here three broker processes started by the test harness). The brokers are found in
`/brokers/ids`, their processes by their listening ports; `--faults kill` SIGKILLs one and starts
it again from its captured command line, and the verdict is clean. Faults such a cluster cannot
take are refused up front, one line per fault; `--faults none` runs the workload alone."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest
from chaos_helpers import FAST, chaos

from zkafka.chaos.targets import alive, listening_pid
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster


def broker_pids(cluster: LocalCluster) -> dict[int, int | None]:
    return {b: listening_pid(broker.port) for b, broker in cluster.brokers.items()}


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("remote"), brokers=3, overrides=FAST) as c:
        try:
            yield c
        finally:
            # brokers the chaos run restarted are not children of the harness: stop them by port
            for pid in broker_pids(c).values():
                if pid is not None and pid not in {b.pid for b in c.brokers.values()}:
                    os.kill(pid, signal.SIGTERM)
                    deadline = time.monotonic() + 20
                    while alive(pid) and time.monotonic() < deadline:
                        time.sleep(0.1)
                    if alive(pid):
                        os.kill(pid, signal.SIGKILL)


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

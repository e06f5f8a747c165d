"""`zkafka doctor` as an operator runs it, on a real 3-broker cluster: healthy is exit 0 with no
findings; a SIGKILLed broker is found within a run (offline and under-replicated partitions, exit
2); `--json` is one document; `--fix --yes` removes configs left for a deleted topic and nothing else;
brokers started (or dynamically altered) with different cluster-wide settings are found, with the fix."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from cluster_helpers import Cluster, create_topic, running, topic_name, wait_for, zkafka_cli

from zkafka.local.zookeeper import ZooKeeperServer


@pytest.fixture
def cluster(zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(zookeeper_server, tmp_path_factory.mktemp("doctor"), brokers=3) as c:
        yield c


def _doctor(cluster: Cluster, *args: str) -> tuple[int, dict]:
    done = zkafka_cli("doctor", "--zookeeper", cluster.local.zookeeper_connect, "--json", *args)
    assert done.returncode in (0, 1, 2), done.stderr
    assert "Traceback" not in done.stderr
    return done.returncode, json.loads(done.stdout)


def test_doctor_on_a_live_cluster(cluster: Cluster) -> None:
    single, triple = topic_name("single"), topic_name("triple")
    create_topic(cluster, single, {0: [3]})
    create_topic(cluster, triple, {0: [1, 2, 3], 1: [2, 3, 1]})

    status, report = _doctor(cluster, "--bootstrap-server", cluster.bootstrap)
    assert (status, report["findings"]) == (0, []), report
    # what only the brokers know: every log dir's disk (any use is "full" at 0 %) and a seeds-style
    # consumer group's offset past the log end
    cluster.zk.create(f"/consumers/g/offsets/{triple}/0", b"999999", makepath=True)
    status, report = _doctor(cluster, "--bootstrap-server", cluster.bootstrap, "--disk-warning-percent", "0")
    found = {(f["check"], f["subject"]) for f in report["findings"]}
    assert status == 2 or status == 1
    assert {s for c, s in found if c == "log-dir-nearly-full"} and all(
        s.startswith("broker ") for c, s in found if c == "log-dir-nearly-full"
    )
    assert ("offset-beyond-log-end", f"/consumers/g/offsets/{triple}/0") in found
    cluster.zk.delete("/consumers/g", recursive=True)
    table = zkafka_cli("doctor", "--zookeeper", cluster.local.zookeeper_connect)
    assert table.returncode == 0 and "healthy" in table.stdout

    cluster.kill(3)
    wait_for(lambda: 3 not in cluster.registered(), 30, "broker 3's registration to expire")
    wait_for(lambda: 3 not in cluster.state(triple, 0)["isr"], 30, "the ISR to shrink")
    status, report = _doctor(cluster)
    found = {(f["check"], f["subject"]): f for f in report["findings"]}
    assert status == 2
    assert found[("partition-offline", f"{single}-0")]["severity"] == "critical"
    assert found[("partition-under-replicated", f"{triple}-0")]["severity"] == "warning"
    assert ("replica-on-unknown-broker", "broker 3") in found

    # Configs left for a topic that is gone (the controller removes stale deletion requests by
    # itself, not these): --fix without --yes and without a terminal refuses; with --yes it repairs.
    orphan = "/config/topics/no-such-topic"
    cluster.zk.create(orphan, b'{"version":1,"config":{"retention.ms":"1000"}}')
    done = zkafka_cli("doctor", "--zookeeper", cluster.local.zookeeper_connect, "--fix")
    assert "pass --yes" in done.stderr and cluster.exists(orphan)
    done = zkafka_cli("doctor", "--zookeeper", cluster.local.zookeeper_connect, "--fix", "--yes")
    assert f"delete {orphan}: done" in done.stderr, done.stderr
    assert not cluster.exists(orphan)
    assert cluster.exists(f"/brokers/topics/{single}")  # nothing but the repair was touched
    assert done.returncode == 2  # broker 3 is still down


def test_doctor_cannot_reach_zookeeper_is_unknown() -> None:
    done = zkafka_cli("doctor", "--zookeeper", "127.0.0.1:1", "--timeout", "1")
    assert done.returncode == 3
    assert "Traceback" not in done.stderr and done.stderr.strip()


def test_doctor_finds_brokers_that_disagree_on_cluster_wide_settings(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Broker 3 started without topic auto-creation; then broker 2 given its own dynamic
    unclean.leader.election.enable (`/config/brokers/2`): both found, with every broker's value and
    the fix, and the dynamic one gone once its printed fix is applied."""
    with running(
        zookeeper_server,
        tmp_path_factory.mktemp("doctor-configs"),
        brokers=3,
        per_broker={3: {"auto.create.topics.enable": "false"}},
    ) as cluster:
        status, report = _doctor(cluster, "--bootstrap-server", cluster.bootstrap)
        found = {f["subject"]: f for f in report["findings"] if f["check"] == "broker-config-disagrees"}
        assert status == 1 and set(found) == {"auto.create.topics.enable"}, report
        static = found["auto.create.topics.enable"]
        assert static["severity"] == "warning"
        assert "broker 1=true, broker 2=true, broker 3=false" in static["message"]
        assert "auto.create.topics.enable=true in the server.properties of broker(s) 3" in static["fix"]
        # without --bootstrap-server the brokers are not asked (the local cluster's would be, but
        # this one was not started by `cluster up`)
        assert _doctor(cluster)[0] == 0

        done = zkafka_cli(
            "configs", "--bootstrap-server", cluster.bootstrap, "--entity-type", "brokers",
            "--entity-name", "2", "--alter", "--add-config", "unclean.leader.election.enable=true",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert cluster.exists("/config/brokers/2")

        def dynamic_found() -> dict | None:
            findings = _doctor(cluster, "--bootstrap-server", cluster.bootstrap)[1]["findings"]
            return next((f for f in findings if f["subject"] == "unclean.leader.election.enable"), None)

        dynamic = wait_for(dynamic_found, 30, "broker 2's dynamic override to be found")
        assert dynamic["severity"] == "warning" and "broker 2=true" in dynamic["message"]
        assert dynamic["fix"] == (
            "zkafka configs --bootstrap-server B --entity-type brokers --entity-name 2 --alter "
            "--delete-config unclean.leader.election.enable"
        )
        argv = dynamic["fix"].split()[1:]  # the fix as printed, with the cluster's bootstrap for B
        argv[argv.index("B")] = cluster.bootstrap
        done = zkafka_cli(*argv)
        assert done.returncode == 0, done.stderr
        wait_for(lambda: dynamic_found() is None, 30, "the override's removal to be seen")

        table = zkafka_cli(
            "doctor", "--zookeeper", cluster.local.zookeeper_connect, "--bootstrap-server", cluster.bootstrap
        )
        assert table.returncode == 1 and "broker-config-disagrees" in table.stdout

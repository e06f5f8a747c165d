"""The client-based CLI commands as a user runs them: `python -m zkafka.cli.main ...` processes
against a real broker, and `zkafka cluster up/status/down` in a temporary directory."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from client_helpers import local_cluster, topic_name, zkafka_cli

from zkafka.client import partition_for_key
from zkafka.local.launcher import LocalCluster, _alive
from zkafka.local.zookeeper import ZooKeeperServer, free_port


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with local_cluster(zookeeper_server, tmp_path_factory.mktemp("client-cli"), brokers=1) as c:
        yield c


def ok(result: subprocess.CompletedProcess[bytes]) -> str:
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def failed(result: subprocess.CompletedProcess[bytes]) -> str:
    """The one-line error of a failed command."""
    assert result.returncode != 0, result.stdout.decode()
    lines = [line for line in result.stderr.decode().splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in result.stderr.decode(), result.stderr.decode()
    return lines[0]


def test_topics_create_list_describe_alter_delete(cluster: LocalCluster) -> None:
    b = cluster.bootstrap_servers
    name = topic_name("cli")
    out = ok(zkafka_cli("topics", "--bootstrap-server", b, "--create", "--topic", name, "--partitions", "2",
                        "--replication-factor", "1", "--config", "retention.ms=123456"))  # fmt: skip
    assert out == f"Created topic {name}.\n"
    assert "TOPIC_ALREADY_EXISTS" in failed(
        zkafka_cli("topics", "--bootstrap-server", b, "--create", "--topic", name)
    )
    ok(zkafka_cli("topics", "--bootstrap-server", b, "--create", "--topic", name, "--if-not-exists"))
    assert name in ok(zkafka_cli("topics", "--bootstrap-server", b, "--list")).split()

    described = ok(zkafka_cli("topics", "--bootstrap-server", b, "--describe", "--topic", name)).splitlines()
    assert (
        described[0]
        == f"Topic: {name}\tPartitionCount: 2\tReplicationFactor: 1\tConfigs: retention.ms=123456"
    )
    assert described[1:] == [
        f"\tTopic: {name}\tPartition: {p}\tLeader: 1\tReplicas: 1\tIsr: 1" for p in (0, 1)
    ]

    grown = ok(zkafka_cli("topics", "--bootstrap-server", b, "--alter", "--topic", name,
                          "--partitions", "4"))  # fmt: skip
    assert grown == "Adding partitions succeeded!\n"
    altered = ok(zkafka_cli("topics", "--bootstrap-server", b, "--alter", "--topic", name, "--config",
                            "cleanup.policy=compact", "--delete-config", "retention.ms"))  # fmt: skip
    assert altered == f"Completed updating config for topic {name}.\n"
    overridden = ok(zkafka_cli("topics", "--bootstrap-server", b, "--describe", "--topics-with-overrides"))
    assert (
        overridden.splitlines() == [line for line in overridden.splitlines() if line.startswith("Topic: ")]
        and f"Topic: {name}\t" in overridden
    )
    # one broker, min.insync.replicas=2 on the topic: every partition is below it
    ok(zkafka_cli("topics", "--bootstrap-server", b, "--alter", "--topic", name,
                  "--config", "min.insync.replicas=2"))  # fmt: skip
    under = ok(zkafka_cli("topics", "--bootstrap-server", b, "--describe", "--topic", name,
                          "--under-min-isr-partitions")).splitlines()  # fmt: skip
    assert len(under) == 4 and all("Isr: 1" in line for line in under)
    assert ok(zkafka_cli("topics", "--bootstrap-server", b, "--describe", "--topic", name,
                         "--at-min-isr-partitions")) == ""  # fmt: skip
    ok(zkafka_cli("topics", "--bootstrap-server", b, "--alter", "--topic", name,
                  "--delete-config", "min.insync.replicas"))  # fmt: skip
    described = ok(zkafka_cli("topics", "--bootstrap-server", b, "--describe", "--topic", name)).splitlines()
    assert "PartitionCount: 4" in described[0] and described[0].endswith("Configs: cleanup.policy=compact")
    table = ok(zkafka_cli("topics", "--bootstrap-server", b, "--describe", "--topic", name, "--table"))
    assert "Partition" in table and "Isr" in table and "cleanup.policy=compact" in table

    ok(zkafka_cli("topics", "--bootstrap-server", b, "--delete", "--topic", name))
    assert "does not exist" in failed(
        zkafka_cli("topics", "--bootstrap-server", b, "--describe", "--topic", name)
    )
    ok(zkafka_cli("topics", "--bootstrap-server", b, "--delete", "--topic", name, "--if-exists"))


def test_topics_argument_and_connection_errors(cluster: LocalCluster) -> None:
    b = cluster.bootstrap_servers
    assert "requires --topic" in failed(zkafka_cli("topics", "--bootstrap-server", b, "--create"))
    assert "INVALID_REPLICATION_FACTOR" in failed(
        zkafka_cli(
            "topics",
            "--bootstrap-server",
            b,
            "--create",
            "--topic",
            topic_name(),
            "--replication-factor",
            "3",
        )
    )
    assert "cannot connect" in failed(
        zkafka_cli("topics", "--bootstrap-server", f"127.0.0.1:{free_port()}", "--list")
    )
    assert "bad bootstrap server" in failed(zkafka_cli("topics", "--bootstrap-server", "nohost", "--list"))


def test_console_producer_to_console_consumer(cluster: LocalCluster) -> None:
    b = cluster.bootstrap_servers
    name = topic_name("console")
    ok(zkafka_cli("topics", "--bootstrap-server", b, "--create", "--topic", name, "--partitions", "3"))
    lines = b"".join(b"key%d:value %d\n" % (i % 4, i) for i in range(30)) + b"last:no newline"
    produced = zkafka_cli("console-producer", "--bootstrap-server", b, "--topic", name,
                          "--property", "parse.key=true", "--property", "key.separator=:",
                          "--producer-property", "acks=all", "--compression-codec", "zstd",
                          stdin=lines)  # fmt: skip
    ok(produced)
    consumed = zkafka_cli("console-consumer", "--bootstrap-server", b, "--topic", name, "--from-beginning",
                          "--max-messages", "31", "--property", "print.key=true",
                          "--property", "key.separator=|", "--timeout-ms", "20000")  # fmt: skip
    rows = ok(consumed).splitlines()
    assert sorted(rows) == sorted([f"key{i % 4}|value {i}" for i in range(30)] + ["last|no newline"])
    assert "Processed a total of 31 messages" in consumed.stderr.decode()
    # records of one key keep their order (same partition)
    key1 = [r for r in rows if r.startswith("key1|")]
    assert key1 == [f"key1|value {i}" for i in range(1, 30, 4)]

    p1 = partition_for_key(b"key1", 3)
    one = zkafka_cli("console-consumer", "--bootstrap-server", b, "--topic", name, "--partition", str(p1),
                     "--offset", "1", "--max-messages", "1", "--property", "print.offset=true",
                     "--property", "print.partition=true", "--timeout-ms", "10000")  # fmt: skip
    assert ok(one).startswith(f"Partition:{p1}\tOffset:1\t")
    nothing_new = zkafka_cli(
        "console-consumer", "--bootstrap-server", b, "--topic", name, "--timeout-ms", "1000"
    )
    assert ok(nothing_new) == "" and "Processed a total of 0 messages" in nothing_new.stderr.decode()


def test_console_tools_report_bad_input(cluster: LocalCluster) -> None:
    b = cluster.bootstrap_servers
    name = topic_name("bad")
    ok(zkafka_cli("topics", "--bootstrap-server", b, "--create", "--topic", name))
    error = failed(zkafka_cli("console-producer", "--bootstrap-server", b, "--topic", name,
                              "--property", "parse.key=true", stdin=b"k\tv\nno separator\n"))  # fmt: skip
    assert "No key separator found on line number 2" in error
    error = failed(zkafka_cli("console-producer", "--bootstrap-server", b, "--topic", topic_name("absent"),
                              "--producer-property", "allow.auto.create.topics=false",
                              "--max-block-ms", "1500", stdin=b"x\n"))  # fmt: skip
    assert "UNKNOWN_TOPIC_OR_PARTITION" in error
    assert "partition is required" in failed(
        zkafka_cli("console-consumer", "--bootstrap-server", b, "--topic", name, "--offset", "3")
    )
    assert "acks" in failed(zkafka_cli("console-producer", "--bootstrap-server", b, "--topic", name,
                                       "--request-required-acks", "2", stdin=b"x\n"))  # fmt: skip


def test_perf_produce_and_consume_with_both_clients(cluster: LocalCluster) -> None:
    b = cluster.bootstrap_servers
    name = topic_name("perf")
    ok(zkafka_cli("topics", "--bootstrap-server", b, "--create", "--topic", name, "--partitions", "2"))
    clients = ["zkafka"]
    try:
        import confluent_kafka  # noqa: F401

        clients.append("confluent")
    except ImportError:
        pass
    total = 0
    for client in clients:
        result = _perf("produce", "--bootstrap-server", b, "--topic", name, "--num-records", "5000",
                       "--record-size", "100", "--client", client, "--json",
                       "--producer-props", "linger.ms=5", "acks=1")  # fmt: skip
        stats = json.loads(ok(result).splitlines()[-1])
        assert stats["records"] == 5000 and stats["errors"] == 0 and stats["p99_ms"] >= stats["p50_ms"] >= 0
        total += 5000
    for client in clients:
        result = _perf("consume", "--bootstrap-server", b, "--topic", name, "--messages", str(total),
                       "--client", client, "--json", "--timeout", "20000")  # fmt: skip
        lines = ok(result).splitlines()
        assert lines[0].startswith("start.time, end.time, data.consumed.in.MB")
        assert json.loads(lines[-1])["messages"] == total


def _perf(*args: str) -> subprocess.CompletedProcess[bytes]:
    # through `zkafka perf` once perf.py adds these subcommands; the module runs on its own meanwhile
    wired = zkafka_cli("perf", "produce", "--help").returncode == 0
    command = ["-m", "zkafka.cli.main", "perf"] if wired else ["-m", "zkafka.cli.perf_clients"]
    return subprocess.run([sys.executable, *command, *args], capture_output=True, timeout=120, check=False)


def test_cluster_up_status_down(tmp_path: Path) -> None:
    directory = tmp_path / "cluster"
    up = zkafka_cli("cluster", "up", "--brokers", "2", "--dir", str(directory),
                    "--override", "num.partitions=2", timeout=120)  # fmt: skip
    try:
        out = ok(up)
        bootstrap = out.splitlines()[0].removeprefix("bootstrap servers: ")
        assert len(bootstrap.split(",")) == 2
        assert "already running" in failed(zkafka_cli("cluster", "up", "--dir", str(directory)))
        name = topic_name("status")
        ok(zkafka_cli("topics", "--bootstrap-server", bootstrap, "--create", "--topic", name,
                      "--replication-factor", "2"))  # fmt: skip
        status = json.loads(ok(zkafka_cli("cluster", "status", "--dir", str(directory), "--json")))
        assert [b["alive"] for b in status["brokers"]] == [True, True]
        assert status["zookeeper"]["alive"] and status["zookeeper"]["embedded"]
        assert status["ui"]["alive"] and httpx.get(status["ui"]["url"], timeout=30).status_code == 200
        assert sorted(int(i) for i in status["registered_brokers"]) == [1, 2]
        assert status["controller"]["id"] in (1, 2) and status["controller"]["epoch"] >= 1
        partitions = status["topics"][name]
        assert len(partitions) == 2 and all(sorted(p["isr"]) == [1, 2] or p["isr"] for p in partitions)
        table = ok(zkafka_cli("cluster", "status", "--dir", str(directory)))
        assert "Brokers" in table and "controller" in table and name in table
    finally:
        pids = [p for p in _recorded_pids(directory) if p]
        down = zkafka_cli("cluster", "down", "--dir", str(directory), timeout=90)
    assert "stopped cluster" in ok(down)
    assert len(pids) == 4 and not any(_alive(pid) for pid in pids)  # ZooKeeper, 2 brokers, the console
    # One broker at a time, the controller last: the first one's controlled shutdown succeeds and
    # the last one, with nowhere to move its leaderships, stops at once instead of retrying.
    logs = [p.read_text() for p in sorted(directory.glob("broker-*/server.log"))]
    assert sum("controlled shutdown succeeded" in text for text in logs) == 1
    assert sum("no other live in-sync replica can take over" in text for text in logs) == 1
    assert not any("did not complete" in text for text in logs)
    assert not any("clean shutdown: False" in text for text in logs)  # fresh brokers: nothing to recover
    assert not LocalCluster.load(directory).running()
    assert "not running" in ok(zkafka_cli("cluster", "down", "--dir", str(directory)))
    assert "no local cluster" in failed(zkafka_cli("cluster", "status", "--dir", str(tmp_path / "none")))


def _recorded_pids(directory: Path) -> list[int]:
    state = json.loads((directory / "cluster.json").read_text())
    return [state["zookeeper_pid"], state.get("ui_pid", 0), *(b["pid"] for b in state["brokers"])]


def test_cluster_up_reports_a_broker_that_cannot_start(zk_connect: str, tmp_path: Path) -> None:
    directory = tmp_path / "broken"
    result = zkafka_cli("cluster", "up", "--dir", str(directory), "--zookeeper", zk_connect,
                        "--override", "num.partitions=many", "--timeout", "30", timeout=60)  # fmt: skip
    assert "broker 1 exited" in failed(result)
    assert not any(_alive(pid) for pid in _recorded_pids(directory) if pid)
    assert "bad --zookeeper" in failed(
        zkafka_cli("cluster", "up", "--dir", str(directory), "--zookeeper", "a:b:c")
    )


def test_console_tools_take_kafkas_older_and_newer_flag_names(cluster: LocalCluster) -> None:
    """console-producer --broker-list (the pre-2.5 name) and console-consumer --include (2.8)."""
    b = cluster.bootstrap_servers
    prefix = topic_name("include")
    for suffix in ("a", "b"):
        ok(zkafka_cli("console-producer", "--broker-list", b, "--topic", f"{prefix}-{suffix}",
                      stdin=b"from %s\n" % suffix.encode()))  # fmt: skip
    consumed = zkafka_cli("console-consumer", "--bootstrap-server", b, "--include", f"{prefix}-.*",
                          "--from-beginning", "--max-messages", "2", "--timeout-ms", "20000")  # fmt: skip
    assert sorted(ok(consumed).splitlines()) == ["from a", "from b"]
    assert "no topic matches" in failed(
        zkafka_cli("console-consumer", "--bootstrap-server", b, "--include", "nothing-like-this-.*")
    )

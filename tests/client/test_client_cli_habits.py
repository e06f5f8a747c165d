"""The CLI's manners as an operator meets them (issue 12, items 8, 9 and 10), run the way a user
runs the commands: `python -m zkafka.cli.main ...` processes with stdout and stderr piped (no TTY),
`COLUMNS` unset, stdin not a terminal.

* the tools find a `zkafka cluster up` cluster without `--bootstrap-server`/`--zookeeper`, in the
  default directory (the working directory's `.zkafka/cluster`) or `--cluster-dir`; with none
  running they say what to pass, in one line;
* every command answers a flag it does not know with its own usage;
* `topics --zookeeper` works on ZooKeeper directly, as kafka-topics.sh --zookeeper did;
* console-consumer ends alike on SIGTERM and SIGINT;
* piped output is neither wrapped at 80 columns nor coloured, results on stdout, progress on
  stderr (`make run`'s demo, with the Spark pipeline: tests/spark/test_spark_demo.py).

The tests on a running cluster start it with `zkafka cluster up` (embedded ZooKeeper) and carry the
`cluster` marker themselves; the others need no cluster.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from client_helpers import topic_name

from zkafka.cli.main import COMMANDS
from zkafka.local.launcher import LocalCluster

ESC = "\x1b"


def user_env() -> dict[str, str]:
    """The environment of a user's shell piping the output: no COLUMNS, nothing forcing colour."""
    unset = ("COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE")
    return {k: v for k, v in os.environ.items() if k not in unset}


def zkafka(
    *args: str, cwd: Path, stdin: bytes = b"", timeout: float = 90
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env=user_env(),
        timeout=timeout,
        check=False,
    )


def ok(result: subprocess.CompletedProcess[bytes]) -> str:
    assert result.returncode == 0, (result.args, result.stderr.decode())
    out = result.stdout.decode()
    assert ESC not in out and ESC not in result.stderr.decode(), out
    return out


def one_line_error(result: subprocess.CompletedProcess[bytes]) -> str:
    stderr = result.stderr.decode()
    assert result.returncode == 1, (result.args, result.returncode, stderr)
    assert result.stdout == b"" and stderr.count("\n") == 1 and stderr.startswith("error: "), stderr
    return stderr.strip()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A working directory with a running `zkafka cluster up --brokers 2` in its default place."""
    home = tmp_path_factory.mktemp("habits")
    up = zkafka("cluster", "up", "--brokers", "2", cwd=home, timeout=120)
    try:
        # the results on stdout, the progress on stderr, nothing else on either
        assert up.returncode == 0, up.stderr.decode()
        lines = up.stdout.decode().splitlines()
        assert [line.split(":", 1)[0] for line in lines] == [
            "bootstrap servers",
            "zookeeper",
            "metrics",
            "console",
        ]
        progress = up.stderr.decode().splitlines()
        assert progress and all(line.startswith("✓ ") for line in progress), progress
        assert ESC not in up.stderr.decode()
        yield home
    finally:
        ok(zkafka("cluster", "down", cwd=home, timeout=90))


def recorded(home: Path) -> LocalCluster:
    return LocalCluster.load(home / ".zkafka" / "cluster")


# -- item 10: the tools find the local cluster -------------------------------------------------------


@pytest.mark.cluster
def test_tools_use_the_running_local_cluster_without_addresses(home: Path, tmp_path: Path) -> None:
    name = topic_name("local")
    assert ok(zkafka("topics", "--create", "--topic", name, "--partitions", "2", "--replication-factor", "2",
                     cwd=home)) == f"Created topic {name}.\n"  # fmt: skip
    assert name in ok(zkafka("topics", "--list", cwd=home)).split()
    ok(zkafka("console-producer", "--topic", name, cwd=home, stdin=b"one\ntwo\nthree\n"))
    consumed = zkafka("console-consumer", "--topic", name, "--from-beginning", "--group", f"{name}-g",
                      "--max-messages", "3", "--timeout-ms", "20000", cwd=home)  # fmt: skip
    assert sorted(ok(consumed).split()) == ["one", "three", "two"]
    assert "Processed a total of 3 messages" in consumed.stderr.decode()
    assert f"{name}-g" in ok(zkafka("consumer-groups", "--list", cwd=home)).split()
    ok(zkafka("configs", "--entity-type", "topics", "--entity-name", name, "--alter",
              "--add-config", "retention.ms=86400000", cwd=home))  # fmt: skip
    assert "  retention.ms=86400000 " in ok(
        zkafka("configs", "--entity-type", "topics", "--entity-name", name, "--describe", cwd=home)
    )
    # every leader is already the preferred one: as kafka-leader-election, nothing to report
    ok(zkafka("leader-election", "--election-type", "preferred", "--all-topic-partitions", cwd=home))
    (home / "move.json").write_text(f'{{"version": 1, "topics": [{{"topic": "{name}"}}]}}')
    plan = ok(zkafka("reassign-partitions", "--generate", "--topics-to-move-json-file", "move.json",
                     "--broker-list", "1,2", cwd=home))  # fmt: skip
    assert "Current partition replica assignment" in plan
    perf = ok(zkafka("perf", "produce", "--topic", name, "--num-records", "50", "--record-size", "10",
                     "--client", "zkafka", cwd=home))  # fmt: skip
    assert "50 records sent" in perf
    # commands that speak only ZooKeeper find its ZooKeeper (with the chroot, if it has one)
    assert ok(zkafka("zk", "ls", "/brokers/ids", cwd=home)).split() == ["1", "2"]

    # from anywhere else, --cluster-dir names the cluster
    elsewhere = ("--cluster-dir", str(home / ".zkafka" / "cluster"))
    assert name in ok(zkafka("topics", "--list", *elsewhere, cwd=tmp_path)).split()
    assert ok(zkafka("zk", "ls", "/brokers", *elsewhere, cwd=tmp_path)).split() == ["ids", "seqid", "topics"]
    # and an address given wins over the cluster directory
    bootstrap = recorded(home).bootstrap_servers.split(",")[0]
    assert name in ok(zkafka("topics", "--bootstrap-server", bootstrap, "--list", cwd=tmp_path)).split()


TOOLS = {
    "topics": ["--list"],
    "console-producer": ["--topic", "t"],
    "console-consumer": ["--topic", "t"],
    "consumer-groups": ["--list"],
    "transactions": ["list"],
    "configs": ["--entity-type", "topics", "--describe"],
    "reassign-partitions": ["--verify", "--reassignment-json-file", "plan.json"],
    "leader-election": ["--election-type", "preferred", "--all-topic-partitions"],
    "perf": ["produce", "--topic", "t", "--num-records", "1", "--client", "zkafka"],
    "zk": ["ls", "/"],
}


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_without_a_cluster_one_line_says_what_to_pass(tool: str, tmp_path: Path) -> None:
    flag = "--zookeeper" if tool == "zk" else "--bootstrap-server"
    error = one_line_error(zkafka(tool, *TOOLS[tool], cwd=tmp_path, timeout=30))
    assert error.startswith(f"error: no {flag} given and no local cluster in .zkafka/cluster ")
    assert "zkafka cluster up" in error and f"pass {flag} HOST:PORT" in error

    # a cluster directory whose processes are gone
    stopped = tmp_path / "stopped"
    LocalCluster(stopped, zookeeper_connect="127.0.0.1:1", zookeeper_pid=0, zookeeper_embedded=True).save()
    error = one_line_error(
        zkafka(tool, *TOOLS[tool], "--cluster-dir", str(stopped), cwd=tmp_path, timeout=30)
    )
    assert (
        f"the cluster in {stopped} is not running" in error and f"zkafka cluster up --dir {stopped}" in error
    )


# -- item 9: Kafka's flags and manners ---------------------------------------------------------------


def _command_lines() -> list[list[str]]:
    """Every command and subcommand a user can type."""
    lines = [[c] for c in COMMANDS if c not in ("cluster", "zk", "perf", "pipeline")]
    lines += [
        ["transactions", c]
        for c in (
            "list",
            "describe",
            "describe-producers",
            "abort",
            "find-hanging",
            "forceTerminateTransaction",
        )
    ]
    lines += [["cluster", c] for c in ("up", "status", "down")]
    lines += [["zk", c, "/"] for c in ("ls", "get", "tree", "rm")]
    lines += [["perf", c] for c in ("produce", "consume", "storage")]
    lines += [["pipeline", "run"]]
    return lines


@pytest.mark.parametrize("words", _command_lines(), ids=" ".join)
def test_a_bad_flag_shows_the_commands_own_usage(words: list[str], tmp_path: Path) -> None:
    result = zkafka(*words, "--no-such-flag", cwd=tmp_path, timeout=30)
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    command = " ".join(w for w in words if w != "/")
    assert stderr.startswith(f"usage: zkafka {command} "), stderr
    # its own error line: the unknown flag, or first what that command requires
    error = stderr.rstrip().splitlines()[-1]
    assert error.startswith(f"zkafka {command}: error: "), stderr
    assert "--no-such-flag" in error or "required" in error, stderr


@pytest.mark.cluster
def test_topics_through_zookeeper_as_kafka_topics_did(home: Path) -> None:
    cluster = recorded(home)
    z = ("--zookeeper", cluster.zookeeper_connect)
    name = topic_name("zk")
    assert ok(zkafka("topics", *z, "--create", "--topic", name, "--partitions", "3",
                     "--replication-factor", "2", "--config", "retention.ms=60000", cwd=home)) == (
        f"Created topic {name}.\n"
    )  # fmt: skip
    assert "TOPIC_ALREADY_EXISTS" in one_line_error(
        zkafka(
            "topics",
            *z,
            "--create",
            "--topic",
            name,
            "--partitions",
            "1",
            "--replication-factor",
            "1",
            cwd=home,
        )
    )
    assert "needs --replication-factor" in one_line_error(
        zkafka("topics", *z, "--create", "--topic", topic_name(), "--partitions", "1", cwd=home)
    )
    assert name in ok(zkafka("topics", *z, "--list", cwd=home)).split()

    def described(*where: str) -> list[str]:
        return ok(zkafka("topics", *where, "--describe", "--topic", name, cwd=home)).splitlines()

    # the controller turned the znodes into partitions; ZooKeeper and the brokers tell the same
    deadline = time.monotonic() + 30
    while "Leader: none" in "".join(described(*z)) and time.monotonic() < deadline:
        time.sleep(0.2)
    via_zk = described(*z)
    assert via_zk[0] == f"Topic: {name}\tPartitionCount: 3\tReplicationFactor: 2\tConfigs: retention.ms=60000"
    assert len(via_zk) == 4 and all("Leader: none" not in line for line in via_zk)
    deadline = time.monotonic() + 30
    while described() != via_zk and time.monotonic() < deadline:
        time.sleep(0.2)
    assert described() == via_zk

    assert ok(zkafka("topics", *z, "--alter", "--topic", name, "--partitions", "4", cwd=home)) == (
        "Adding partitions succeeded!\n"
    )
    assert ok(
        zkafka("topics", *z, "--alter", "--topic", name, "--config", "retention.ms=120000", cwd=home)
    ) == (f"Completed updating config for topic {name}.\n")
    deadline = time.monotonic() + 30
    while not described()[0].startswith(f"Topic: {name}\tPartitionCount: 4") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert described()[0].endswith("ReplicationFactor: 2\tConfigs: retention.ms=120000")

    assert ok(zkafka("topics", *z, "--delete", "--topic", name, cwd=home)) == (
        f"Topic {name} is marked for deletion.\n"
        "Note: This will have no impact if delete.topic.enable is not set to true.\n"
    )
    deadline = time.monotonic() + 30
    while name in ok(zkafka("topics", *z, "--list", cwd=home)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert name not in ok(zkafka("topics", "--list", cwd=home)).split()


@pytest.mark.cluster
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_console_consumer_ends_alike_on_sigterm_and_sigint(home: Path, sig: signal.Signals) -> None:
    name = topic_name("sig")
    ok(zkafka("console-producer", "--topic", name, cwd=home, stdin=b"".join(b"r%d\n" % i for i in range(5))))
    group = f"{name}-g"
    consumer = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "zkafka.cli.main",
            "console-consumer",
            "--topic",
            name,
            "--group",
            group,
            "--from-beginning",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        cwd=home,
        env=user_env(),
    )
    try:
        assert consumer.stdout is not None
        printed = [consumer.stdout.readline() for _ in range(5)]  # everything, then it waits for more
        consumer.send_signal(sig)
        out, err = consumer.communicate(timeout=30)
    finally:
        consumer.kill()
    assert sorted(printed) == [b"r%d\n" % i for i in range(5)] and out == b""
    assert consumer.returncode == 0, err.decode()
    assert err.decode() == "Processed a total of 5 messages\n"
    # it committed what it printed and left its group
    described = ok(zkafka("consumer-groups", "--describe", "--group", group, cwd=home))
    assert f"Consumer group '{group}' has no active members." in described
    assert sum(int(line.split()[3]) for line in described.splitlines() if line.startswith(group)) == 5


# -- item 8: piped output ----------------------------------------------------------------------------


@pytest.mark.cluster
def test_piped_tables_are_neither_wrapped_nor_coloured(home: Path) -> None:
    name = "wide-" + "x" * 120  # a table row far wider than 80 columns
    ok(
        zkafka(
            "topics", "--create", "--topic", name, "--partitions", "1", "--replication-factor", "2", cwd=home
        )
    )
    table = ok(zkafka("topics", "--describe", "--topic", name, "--table", cwd=home))
    rows = [line for line in table.splitlines() if name in line]
    assert len(rows) == 2, table  # the partition row and the configs line, each whole
    assert any(len(line) > 150 for line in rows)
    status = ok(zkafka("cluster", "status", cwd=home))
    rows = [line.split("│") for line in status.splitlines() if name in line]
    assert len(rows) == 1 and len(rows[0]) == 7, status  # Topic, Partition, Leader, Replicas, Isr
    assert rows[0][1].strip() == name

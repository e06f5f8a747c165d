"""`zkafka configs` as a user runs it (`python -m zkafka.cli.main configs ...` processes) against a
real ZooKeeper and three real broker processes: through the brokers (--bootstrap-server) and
through ZooKeeper (--zookeeper), checking that every broker applies the change it is notified of.

ZooKeeper is read back with kazoo (an independent client, not zkafka's own ZooKeeper code); what a
broker applied is read from its server.log, where `_on_config_change` logs each topic config it
re-read after a `/config/changes` notification.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import time
from collections.abc import Iterator

import pytest
from client_helpers import local_cluster, topic_name, zkafka_cli
from kazoo.client import KazooClient

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer

BROKERS = (1, 2, 3)


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with local_cluster(zookeeper_server, tmp_path_factory.mktemp("configs-cli"), brokers=len(BROKERS)) as c:
        yield c


@pytest.fixture(scope="module")
def kazoo(cluster: LocalCluster) -> Iterator[KazooClient]:
    zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
    zk.start(timeout=15)
    try:
        yield zk
    finally:
        zk.stop()
        zk.close()


@pytest.fixture
def topic(cluster: LocalCluster) -> str:
    """A fresh 3-partition topic replicated on every broker (so each broker holds its logs)."""
    name = topic_name("cfg")
    ok(zkafka_cli("topics", "--bootstrap-server", cluster.bootstrap_servers, "--create", "--topic", name,
                  "--partitions", "3", "--replication-factor", "3"))  # fmt: skip
    return name


# -- helpers -------------------------------------------------------------------------------------


def ok(result: subprocess.CompletedProcess[bytes]) -> str:
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def failed(result: subprocess.CompletedProcess[bytes]) -> str:
    """The one-line error of a command that exited with 1, without a traceback."""
    stderr = result.stderr.decode()
    assert result.returncode == 1, (result.returncode, result.stdout.decode(), stderr)
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, stderr
    return lines[0]


def configs(*args: str) -> subprocess.CompletedProcess[bytes]:
    return zkafka_cli("configs", *args)


CONFIG_LINE = re.compile(
    r"  (?P<name>[^=\s]+)=(?P<value>\S*) sensitive=(true|false) synonyms=\{(?P<synonyms>.*)\}"
)


def table(out: str) -> dict[str, tuple[str, ...]]:
    """The configs `--describe` prints as kafka-configs' lines
    (`  key=value sensitive=false synonyms={SOURCE:key=value, ...}`, after one title line per
    entity): name -> (value, source, default), the source being the first synonym's and default
    meaning it is DEFAULT_CONFIG."""
    rows = {}
    for line in out.splitlines():
        if not line.startswith("  "):
            assert line.endswith(" are:"), line
            continue
        m = CONFIG_LINE.fullmatch(line)
        assert m, line
        source = m["synonyms"].split(":", 1)[0]
        rows[m["name"]] = (m["value"], source, "yes" if source == "DEFAULT_CONFIG" else "no")
    return rows


def applied(cluster: LocalCluster, broker_id: int, topic: str) -> list[dict[str, str]]:
    """The overrides the broker logged applying for `topic`, oldest first (the log line ends with
    the dict it re-read from `/config/topics/<topic>`)."""
    marker = f"applied config change of topic {topic}: "
    log = cluster.brokers[broker_id].log_path.read_text(errors="replace")
    return [ast.literal_eval(line.split(marker, 1)[1]) for line in log.splitlines() if marker in line]


def wait_applied(cluster: LocalCluster, topic: str, overrides: dict[str, str], timeout: float = 20) -> None:
    """Every broker's last applied change of `topic` is exactly `overrides`."""
    deadline = time.monotonic() + timeout
    while True:
        last = {b: (applied(cluster, b, topic) or [None])[-1] for b in BROKERS}
        if all(v == overrides for v in last.values()):
            return
        assert time.monotonic() < deadline, f"not every broker applied {overrides}: {last}"
        time.sleep(0.1)


def notifications(kazoo: KazooClient) -> dict[str, dict]:
    return {
        n: json.loads(kazoo.get(f"/config/changes/{n}")[0]) for n in kazoo.get_children("/config/changes")
    }


# -- tests ---------------------------------------------------------------------------------------


def test_bootstrap_alter_describe_and_every_broker_applies(
    cluster: LocalCluster, kazoo: KazooClient, topic: str
) -> None:
    b = cluster.bootstrap_servers
    base = ("--bootstrap-server", b, "--entity-type", "topics", "--entity-name", topic)
    added = "retention.ms=12345,cleanup.policy=[compact,delete]"  # a list value in [...], as in Kafka
    out = ok(configs(*base, "--alter", "--add-config", added))
    assert out == f"Completed updating config for topic {topic}.\n"

    described = ok(configs(*base, "--describe"))
    assert described.splitlines()[0] == f"Dynamic configs for topic {topic} are:"
    assert table(described) == {
        "cleanup.policy": ("compact,delete", "DYNAMIC_TOPIC_CONFIG", "no"),
        "retention.ms": ("12345", "DYNAMIC_TOPIC_CONFIG", "no"),
    }
    everything = table(ok(configs(*base, "--describe", "--all")))
    assert everything["retention.ms"] == ("12345", "DYNAMIC_TOPIC_CONFIG", "no")
    assert everything["segment.bytes"] == ("1073741824", "DEFAULT_CONFIG", "yes")

    # the broker wrote Kafka's entity znode; every broker re-read it after the notification
    assert json.loads(kazoo.get(f"/config/topics/{topic}")[0]) == {
        "version": 1,
        "config": {"retention.ms": "12345", "cleanup.policy": "compact,delete"},
    }
    wait_applied(cluster, topic, {"retention.ms": "12345", "cleanup.policy": "compact,delete"})

    # each broker, asked on its own, describes the same override
    for broker_id in BROKERS:
        alone = cluster.brokers[broker_id].bootstrap
        rows = table(ok(configs("--bootstrap-server", alone, *base[2:], "--describe")))
        assert rows["retention.ms"][0] == "12345", broker_id

    # --delete-config removes one override and leaves the other; the brokers apply that too
    ok(configs(*base, "--alter", "--delete-config", "cleanup.policy"))
    assert table(ok(configs(*base, "--describe"))) == {
        "retention.ms": ("12345", "DYNAMIC_TOPIC_CONFIG", "no")
    }
    wait_applied(cluster, topic, {"retention.ms": "12345"})
    ok(configs(*base, "--alter", "--delete-config", "retention.ms"))
    assert table(ok(configs(*base, "--describe"))) == {}
    wait_applied(cluster, topic, {})


def test_zookeeper_alter_writes_entity_and_v2_notification(
    cluster: LocalCluster, kazoo: KazooClient, topic: str
) -> None:
    z = cluster.zookeeper_connect
    base = ("--zookeeper", z, "--entity-type", "topics", "--entity-name", topic)
    before = notifications(kazoo)
    assert ok(configs(*base, "--alter", "--add-config", "retention.ms=23456,segment.ms=600000")) == (
        f"Completed updating config for topic {topic}.\n"
    )
    assert json.loads(kazoo.get(f"/config/topics/{topic}")[0]) == {
        "version": 1,
        "config": {"retention.ms": "23456", "segment.ms": "600000"},
    }
    new = {n: data for n, data in notifications(kazoo).items() if n not in before}
    assert list(new.values()) == [{"version": 2, "entity_path": f"topics/{topic}"}]
    assert all(n.startswith("config_change_") and n[len("config_change_") :].isdigit() for n in new)
    wait_applied(cluster, topic, {"retention.ms": "23456", "segment.ms": "600000"})

    described = ok(configs(*base, "--describe"))
    assert described == (
        f"Dynamic configs for topic {topic} are:\n"
        "  retention.ms=23456 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=23456}\n"
        "  segment.ms=600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:segment.ms=600000}\n"
    )
    # the brokers agree with what was written to ZooKeeper, and say so in the same format (with
    # the broker-level synonyms a broker knows of)
    via_brokers = ("--bootstrap-server", cluster.bootstrap_servers, *base[2:], "--describe")
    through_brokers = ok(configs(*via_brokers))
    assert table(through_brokers) == table(described)
    assert through_brokers.splitlines()[0] == described.splitlines()[0]

    ok(configs(*base, "--alter", "--delete-config", "segment.ms", "--add-config", "retention.ms=34567"))
    assert table(ok(configs(*base, "--describe"))) == {
        "retention.ms": ("34567", "DYNAMIC_TOPIC_CONFIG", "no")
    }
    wait_applied(cluster, topic, {"retention.ms": "34567"})


def test_bad_input_is_one_line_error(cluster: LocalCluster, kazoo: KazooClient, topic: str) -> None:
    b, z = cluster.bootstrap_servers, cluster.zookeeper_connect
    missing = topic_name("missing")
    for where in (("--bootstrap-server", b), ("--zookeeper", z)):
        named = (*where, "--entity-type", "topics", "--entity-name")
        error = failed(configs(*named, missing, "--alter", "--add-config", "retention.ms=1"))
        assert "UNKNOWN_TOPIC_OR_PARTITION" in error and missing in error
        assert missing in failed(configs(*named, missing, "--describe"))
        assert "bad --add-config 'retention.ms': expected key=value" in failed(
            configs(*named, topic, "--alter", "--add-config", "retention.ms")
        )
        error = failed(configs(*named, topic, "--alter", "--add-config", "no.such.config=1"))
        assert error == "error: INVALID_CONFIG: unknown topic config 'no.such.config'"
        assert "INVALID_CONFIG" in failed(configs(*named, topic, "--alter", "--add-config", "retention.ms=x"))
        assert "Invalid config(s): no.such.config" in failed(
            configs(*named, topic, "--alter", "--delete-config", "no.such.config")
        )
        assert "must be specified with --alter" in failed(configs(*named, topic, "--alter"))
    # nothing was written for the unknown topic, nor any override for the existing one
    assert kazoo.exists(f"/config/topics/{missing}") is None
    assert json.loads(kazoo.get(f"/config/topics/{topic}")[0])["config"] == {}


def test_broker_configs_through_the_brokers(cluster: LocalCluster, kazoo: KazooClient) -> None:
    """Dynamic broker configs (KIP-226): one broker's and the cluster-wide default, with
    kafka-configs' lines; only keys Kafka can change at run time are accepted."""
    b = cluster.bootstrap_servers
    brokers = ("--bootstrap-server", b, "--entity-type", "brokers")
    out = ok(configs(*brokers, "--entity-name", "1", "--alter", "--add-config", "log.cleaner.threads=2"))
    assert out == "Completed updating config for broker 1.\n"
    out = ok(configs(*brokers, "--entity-default", "--alter", "--add-config", "max.connections.per.ip=1000"))
    assert out == "Completed updating default config for brokers in the cluster.\n"
    assert json.loads(kazoo.get("/config/brokers/1")[0])["config"] == {"log.cleaner.threads": "2"}
    assert json.loads(kazoo.get("/config/brokers/<default>")[0])["config"] == {
        "max.connections.per.ip": "1000"
    }
    assert ok(configs(*brokers, "--entity-name", "1", "--describe")) == (
        "Dynamic configs for broker 1 are:\n"
        "  log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, "
        "DEFAULT_CONFIG:log.cleaner.threads=1}\n"
    )
    assert ok(configs(*brokers, "--entity-default", "--describe")) == (
        "Default configs for brokers in the cluster are:\n"
        "  max.connections.per.ip=1000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:"
        "max.connections.per.ip=1000, DEFAULT_CONFIG:max.connections.per.ip=2147483647}\n"
    )
    # every other broker applies the default when notified, and says where its value comes from
    for other in BROKERS[1:]:
        deadline = time.monotonic() + 30
        while True:
            rows = table(ok(configs(*brokers, "--entity-name", str(other), "--describe", "--all")))
            if rows["max.connections.per.ip"][:2] == ("1000", "DYNAMIC_DEFAULT_BROKER_CONFIG"):
                break
            assert time.monotonic() < deadline, (other, rows["max.connections.per.ip"])
            time.sleep(0.2)
        assert rows["log.cleaner.threads"][:2] == ("1", "DEFAULT_CONFIG")  # broker 1's own, not theirs
    refused = failed(configs(*brokers, "--entity-name", "1", "--alter", "--add-config", "broker.id=9"))
    assert "Cannot update these configs dynamically" in refused
    assert "Invalid config(s): log.retention.ms" in failed(
        configs(*brokers, "--entity-name", "1", "--alter", "--delete-config", "log.retention.ms")
    )
    ok(configs(*brokers, "--entity-name", "1", "--alter", "--delete-config", "log.cleaner.threads"))
    ok(configs(*brokers, "--entity-default", "--alter", "--delete-config", "max.connections.per.ip"))
    assert ok(configs(*brokers, "--entity-default", "--describe")) == (
        "Default configs for brokers in the cluster are:\n"
    )
    zk_brokers = ("--zookeeper", cluster.zookeeper_connect, "--entity-type", "brokers")
    assert "only topics are supported" in failed(configs(*zk_brokers, "--entity-name", "1", "--describe"))
    # ips are not offered: the usage of `configs` names what is
    for kind in ("ips",):
        refused = configs("--bootstrap-server", b, "--entity-type", kind, "--entity-name", "u", "--describe")
        assert refused.returncode == 2, refused
        usage = refused.stderr.decode()
        assert usage.startswith("usage: zkafka configs ")
        assert "invalid choice: '" + kind + "' (choose from 'topics', 'brokers', 'users', 'clients')" in usage
    # no dynamic broker configs: only the header without --all, the static ones with it
    out = ok(configs(*brokers, "--entity-name", "2", "--describe"))
    assert out == "Dynamic configs for broker 2 are:\n"
    rows = table(ok(configs(*brokers, "--entity-name", "2", "--describe", "--all")))
    assert rows["broker.id"][0] == "2"

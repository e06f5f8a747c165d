"""Dynamic broker configs read before the logs are loaded (Kafka's DynamicBrokerConfig.initialize):
`num.recovery.threads.per.data.dir` set at run time sizes the next start-up's log load, and a
stored value Kafka would refuse is skipped without stopping the broker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster, wait_until_ready


def _configs(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", "configs", *args],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def _load_lines(log_path: Path) -> list[str]:
    return [line for line in log_path.read_text().splitlines() if "loaded 1 logs from" in line]


def test_the_log_load_uses_the_dynamic_recovery_threads(
    zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> None:
    with running_cluster(zookeeper_server, tmp_path / "cluster") as c:
        bootstrap = ("--bootstrap-server", c.bootstrap_servers, "--entity-type", "brokers")
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        for f in admin.create_topics([NewTopic("t", 1, 1)]).values():
            f.result(30)
        producer = Producer({"bootstrap.servers": c.bootstrap_servers})
        producer.produce("t", b"x")  # a log that was never written has no directory to load
        assert producer.flush(30) == 0
        kazoo = KazooClient(hosts=c.zookeeper_connect)
        kazoo.start(timeout=30)
        try:
            _configs(
                *bootstrap,
                "--entity-default",
                "--alter",
                "--add-config",
                "num.recovery.threads.per.data.dir=3",
            )
            # a value Kafka refuses, stored by hand: logged and skipped, the default's 3 still holds
            kazoo.ensure_path("/config/brokers/1")
            kazoo.set(
                "/config/brokers/1", b'{"version":1,"config":{"num.recovery.threads.per.data.dir":"x"}}'
            )
        finally:
            kazoo.stop()
            kazoo.close()
        log_path = c.brokers[1].log_path
        c.stop_broker(1)
        c.start_broker(1)
        wait_until_ready(c)
        lines = _load_lines(log_path)
        assert lines, log_path.read_text()[-2000:]
        assert "3 recovery threads" in lines[-1]

"""Start and stop local broker processes (and, by default, an embedded ZooKeeper).

This is what `zkafka cluster up|status|down` and the test fixtures use: every broker is a real
`zkafka server-start <dir>/server.properties` process on a free loopback port, with its own
log directory under the cluster directory. The cluster's layout is recorded in
`<dir>/cluster.json` so a later `zkafka cluster down` (another process) can find the pids.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from zkafka.config.properties import format_properties
from zkafka.zk.server import four_letter_word, free_port

STATE_FILE = "cluster.json"


@dataclass
class BrokerProcess:
    broker_id: int
    port: int
    directory: str
    pid: int = 0

    @property
    def config_path(self) -> Path:
        return Path(self.directory) / "server.properties"

    @property
    def log_path(self) -> Path:
        return Path(self.directory) / "server.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass
class LocalCluster:
    directory: Path
    zookeeper_connect: str = ""
    zookeeper_pid: int = 0
    zookeeper_embedded: bool = False
    brokers: dict[int, BrokerProcess] = field(default_factory=dict)
    broker_overrides: dict[str, str] = field(default_factory=dict)
    _popen: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)
    _zk_popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    # -- persistence -------------------------------------------------------------------------
    def save(self) -> None:
        state = {
            "zookeeper_connect": self.zookeeper_connect,
            "zookeeper_pid": self.zookeeper_pid,
            "zookeeper_embedded": self.zookeeper_embedded,
            "brokers": [asdict(b) for b in self.brokers.values()],
            "broker_overrides": self.broker_overrides,
        }
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")

    @classmethod
    def load(cls, directory: Path) -> LocalCluster:
        path = Path(directory) / STATE_FILE
        if not path.exists():
            raise FileNotFoundError(f"no local cluster in {directory} ({STATE_FILE} missing)")
        state = json.loads(path.read_text())
        cluster = cls(
            Path(directory),
            zookeeper_connect=state["zookeeper_connect"],
            zookeeper_pid=state.get("zookeeper_pid", 0),
            zookeeper_embedded=state.get("zookeeper_embedded", False),
            broker_overrides=state.get("broker_overrides", {}),
        )
        for b in state["brokers"]:
            cluster.brokers[b["broker_id"]] = BrokerProcess(**b)
        return cluster

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    # -- ZooKeeper -----------------------------------------------------------------------------
    def start_embedded_zookeeper(self, timeout: float = 30.0) -> None:
        port = free_port()
        zk_dir = self.directory / "zookeeper"
        zk_dir.mkdir(parents=True, exist_ok=True)
        log = open(zk_dir / "zookeeper-start.log", "ab")  # noqa: SIM115 - handed to the child
        try:
            self._zk_popen = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "zkafka.cli.main",
                    "zookeeper-start",
                    "--port",
                    str(port),
                    "--data-dir",
                    str(zk_dir),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            log.close()
        self.zookeeper_pid = self._zk_popen.pid
        self.zookeeper_connect = f"127.0.0.1:{port}"
        self.zookeeper_embedded = True
        deadline = time.monotonic() + timeout
        while four_letter_word("127.0.0.1", port, timeout=0.3) != "imok":
            if self._zk_popen.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"embedded ZooKeeper did not start; see {zk_dir}/zookeeper.log")
            time.sleep(0.1)

    # -- brokers ---------------------------------------------------------------------------------
    def add_broker(self, broker_id: int, overrides: dict[str, str] | None = None) -> BrokerProcess:
        port = free_port()
        bdir = self.directory / f"broker-{broker_id}"
        (bdir / "logs").mkdir(parents=True, exist_ok=True)
        broker = BrokerProcess(broker_id, port, str(bdir))
        props = {
            "broker.id": str(broker_id),
            "listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "log.dirs": str(bdir / "logs"),
            "zookeeper.connect": self.zookeeper_connect,
            "zookeeper.session.timeout.ms": "6000",
            "offsets.topic.replication.factor": "1",
            "num.partitions": "1",
        }
        props.update(self.broker_overrides)
        props.update(overrides or {})
        broker.config_path.write_text(format_properties(props))
        self.brokers[broker_id] = broker
        return broker

    def start_broker(self, broker_id: int) -> BrokerProcess:
        broker = self.brokers[broker_id]
        log = open(broker.log_path, "ab")  # noqa: SIM115 - handed to the child
        try:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "zkafka.cli.main",
                    "--log-level",
                    "INFO",
                    "server-start",
                    str(broker.config_path),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            log.close()
        self._popen[broker_id] = proc
        broker.pid = proc.pid
        return broker

    def signal_broker(self, broker_id: int, sig: int) -> None:
        broker = self.brokers[broker_id]
        if broker.pid and _alive(broker.pid):
            os.kill(broker.pid, sig)

    def wait_broker_exit(self, broker_id: int, timeout: float = 30.0) -> bool:
        broker = self.brokers[broker_id]
        proc = self._popen.get(broker_id)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc is not None:
                if proc.poll() is not None:
                    return True
            elif not _alive(broker.pid):
                return True
            time.sleep(0.05)
        return False

    def stop_broker(self, broker_id: int, timeout: float = 30.0) -> None:
        """SIGTERM (controlled shutdown), then SIGKILL if it does not exit in time."""
        self.signal_broker(broker_id, signal.SIGTERM)
        if not self.wait_broker_exit(broker_id, timeout):
            self.kill_broker(broker_id)

    def kill_broker(self, broker_id: int) -> None:
        self.signal_broker(broker_id, signal.SIGKILL)
        self.wait_broker_exit(broker_id, 10)

    def broker_alive(self, broker_id: int) -> bool:
        proc = self._popen.get(broker_id)
        if proc is not None:
            return proc.poll() is None
        return _alive(self.brokers[broker_id].pid)

    def down(self) -> None:
        for broker_id in list(self.brokers):
            self.stop_broker(broker_id)
        if self.zookeeper_embedded and self.zookeeper_pid and _alive(self.zookeeper_pid):
            os.kill(self.zookeeper_pid, signal.SIGTERM)
            deadline = time.monotonic() + 20
            while _alive(self.zookeeper_pid) and time.monotonic() < deadline:
                if self._zk_popen is not None:
                    self._zk_popen.poll()
                time.sleep(0.05)
            if _alive(self.zookeeper_pid):
                os.kill(self.zookeeper_pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child of ours counts as dead
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False

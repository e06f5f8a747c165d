"""Start and stop local broker processes (and, by default, an embedded ZooKeeper).

This is what `zkafka cluster up|status|down` and the test fixtures use: every broker is a real
`zkafka server-start <dir>/server.properties` process on a free loopback port, with its own
log directory under the cluster directory. The cluster's layout is recorded in
`<dir>/cluster.json` so a later `zkafka cluster down` (another process) can find the pids, and
the tools the addresses (`zkafka.cli.target`).

    cluster = LocalCluster(Path(".zkafka/cluster"))
    cluster.up(3)                       # embedded ZooKeeper + brokers 1..3, waits until ready
    print(cluster.bootstrap_servers)
    cluster.down()

`up(..., zookeeper="host:port/chroot")` uses an existing ZooKeeper instead of starting one.
The processes run in their own sessions, so they outlive the process that started them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from zkafka.config.properties import format_properties
from zkafka.local.security import TlsFiles, generate_tls, secure_broker_props
from zkafka.local.zookeeper import four_letter_word, free_port
from zkafka.metrics.address import parse_metrics_listener

STATE_FILE = "cluster.json"
EMBEDDED = "embedded"

Progress = Callable[[str], None]
"""Receives one short line per step of `up` (the CLI shows them; tests pass nothing)."""


class ClusterError(RuntimeError):
    """The local cluster could not be started (a process exited, a wait timed out)."""


@dataclass
class BrokerProcess:
    broker_id: int
    port: int
    directory: str
    pid: int = 0
    metrics: str = ""
    """Where the broker serves Prometheus metrics (`http://127.0.0.1:<port>/metrics`), "" if unknown."""
    listeners: list[str] = field(default_factory=list)
    """Its `listeners` (`PLAINTEXT://127.0.0.1:9092`, `SASL_SSL://...` with `--security`)."""

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
    security: bool = False
    """`up(security=True)`: every broker also has a SASL_SSL listener (`zkafka.local.security`)."""
    ca_path: str = ""
    """The CA certificate clients of the SASL_SSL listeners trust ("" without security)."""
    admin_client_config: str = ""
    """Client keys of the secured listener's super user `admin` ("" without security)."""
    _tls: TlsFiles | None = field(default=None, repr=False)
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
            "security": self.security,
            "ca_path": self.ca_path,
            "admin_client_config": self.admin_client_config,
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
            security=state.get("security", False),
            ca_path=state.get("ca_path", ""),
            admin_client_config=state.get("admin_client_config", ""),
        )
        for b in state["brokers"]:
            cluster.brokers[b["broker_id"]] = BrokerProcess(**b)
        return cluster

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    def listener_bootstrap(self, protocol: str) -> str:
        """The bootstrap servers of the brokers' `protocol` listener (e.g. SASL_SSL), "" if none."""
        prefix = f"{protocol}://"
        return ",".join(
            url.removeprefix(prefix)
            for b in self.brokers.values()
            for url in b.listeners
            if url.startswith(prefix)
        )

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
    def add_broker(
        self, broker_id: int, overrides: dict[str, str] | None = None, *, port: int | None = None
    ) -> BrokerProcess:
        """Configure broker `broker_id` on `port` (default: a free loopback port)."""
        port = port or free_port()
        bdir = self.directory / f"broker-{broker_id}"
        (bdir / "logs").mkdir(parents=True, exist_ok=True)
        broker = BrokerProcess(broker_id, port, str(bdir))
        props = {
            "broker.id": str(broker_id),
            "listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "log.dirs": str(bdir / "logs"),
            "zookeeper.connect": self.zookeeper_connect,
            "zookeeper.session.timeout.ms": "6000",
            "num.partitions": "1",
        }
        if self.security:
            props.update(secure_broker_props(port, free_port(), self._ensure_tls()))
        props.update(self.broker_overrides)
        props.update(overrides or {})
        broker.listeners = [url.strip() for url in props["listeners"].split(",") if url.strip()]
        if "metrics.listener" not in props:
            # Every local broker serves /metrics, on a port picked here like its Kafka port so that
            # `cluster status` can say where without asking the broker.
            props["metrics.listener"] = f"http://127.0.0.1:{free_port()}"
        elif not props["metrics.listener"]:  # `metrics.listener=` (empty): metrics off
            del props["metrics.listener"]
        broker.metrics = _metrics_url(props.get("metrics.listener", ""))
        broker.config_path.write_text(format_properties(props))
        self.brokers[broker_id] = broker
        return broker

    def _ensure_tls(self) -> TlsFiles:
        """This start's TLS material (made once per `up`, shared by its brokers)."""
        if self._tls is None:
            self._tls = generate_tls(self.directory)
            self.ca_path = str(self._tls.ca)
            self.admin_client_config = str(self._tls.admin_client_config)
        return self._tls

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

    def broker_exit_code(self, broker_id: int) -> int | None:
        """The exit status of a broker started by this object (None while it runs, or when it
        was started by another process)."""
        proc = self._popen.get(broker_id)
        return None if proc is None else proc.poll()

    def broker_alive(self, broker_id: int) -> bool:
        proc = self._popen.get(broker_id)
        if proc is not None:
            return proc.poll() is None
        return _alive(self.brokers[broker_id].pid)

    def down(self, timeout: float = 30.0) -> None:
        """Stop the brokers one at a time with SIGTERM (each does a controlled shutdown, moving its
        leaderships to brokers that stay up), the controller last so it is there to serve every
        other broker's controlled shutdown; SIGKILL a broker still running after `timeout`. Then
        stop the embedded ZooKeeper the same way."""
        live = [b for b in self.brokers if self.broker_alive(b)]
        controller = self._controller_id() if len(live) > 1 else None
        for broker_id in sorted(live, key=lambda b: (b == controller, b)):
            self.stop_broker(broker_id, timeout)
        if self.zookeeper_embedded and self.zookeeper_pid and _alive(self.zookeeper_pid):
            os.kill(self.zookeeper_pid, signal.SIGTERM)
            deadline = time.monotonic() + 20
            while _alive(self.zookeeper_pid) and time.monotonic() < deadline:
                if self._zk_popen is not None:
                    self._zk_popen.poll()
                time.sleep(0.05)
            if _alive(self.zookeeper_pid):
                # its own process group (start_new_session): the Java server it runs dies too
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.zookeeper_pid, signal.SIGKILL)
                if self._zk_popen is not None:
                    self._zk_popen.wait(10)

    def _controller_id(self) -> int | None:
        """The active controller, or None if ZooKeeper does not answer quickly (then any order)."""
        from zkafka.zk.client import KafkaZkClient

        try:
            zk = KafkaZkClient(self.zookeeper_connect, connection_timeout_ms=2000, create_chroot=False)
        except Exception:
            return None
        try:
            return zk.get_controller_id()
        except Exception:
            return None
        finally:
            zk.close()

    # -- whole-cluster lifecycle -------------------------------------------------------------------
    def up(
        self,
        brokers: int,
        *,
        zookeeper: str = EMBEDDED,
        overrides: dict[str, str] | None = None,
        timeout: float = 60.0,
        progress: Progress | None = None,
        security: bool = False,
    ) -> None:
        """Start ZooKeeper (unless `zookeeper` is a connect string) and brokers 1..`brokers`,
        then wait until every broker is registered, a controller is elected and every broker's
        Metadata lists them all. On failure everything started here is stopped again.
        `security`: each broker also gets a SASL_SSL listener with fresh TLS material and the
        ACL authorizer (`zkafka.local.security`)."""
        if brokers < 1:
            raise ValueError(f"a cluster needs at least one broker, got {brokers}")
        say = progress or (lambda _msg: None)
        self.broker_overrides.update(overrides or {})
        self.security = security
        try:
            if zookeeper == EMBEDDED:
                say("starting ZooKeeper")
                self.start_embedded_zookeeper()
                say(f"ZooKeeper listening on {self.zookeeper_connect}")
            else:
                self.zookeeper_connect = zookeeper
                self.zookeeper_embedded = False
            if security:
                self._ensure_tls()
                say(f"made a CA and the brokers' certificate in {Path(self.ca_path).parent}")
            for broker_id in range(1, brokers + 1):
                self.add_broker(broker_id)
                self.start_broker(broker_id)
                say(f"started broker {broker_id} on port {self.brokers[broker_id].port}")
            self.save()
            self.wait_ready(timeout, progress=say)
        except BaseException:
            self.down()
            raise

    def wait_ready(self, timeout: float = 60.0, *, progress: Progress | None = None) -> None:
        """Every live broker is in `/brokers/ids`, `/controller` names one of them, and each
        answers Metadata listing all of them and the controller."""
        say = progress or (lambda _msg: None)
        expected = {b for b in self.brokers if self.broker_alive(b)}
        if not expected:
            raise ClusterError("no broker process is running")
        deadline = time.monotonic() + timeout
        registered: set[int] = set()
        controller: int | None = None
        from zkafka.zk.client import KafkaZkClient

        zk = KafkaZkClient(self.zookeeper_connect, connection_timeout_ms=int(max(timeout, 1) * 1000))
        try:
            while True:
                self._check_processes(expected)
                now_registered = set(zk.get_all_broker_ids()) & expected
                if now_registered != registered:
                    registered = now_registered
                    say(f"{len(registered)}/{len(expected)} brokers registered in ZooKeeper")
                now_controller = zk.get_controller_id()
                if now_controller != controller and now_controller is not None:
                    say(f"broker {now_controller} is the controller")
                controller = now_controller
                if registered == expected and controller is not None:
                    break
                if time.monotonic() > deadline:
                    raise ClusterError(
                        f"after {timeout:g} s: {sorted(registered)} of {sorted(expected)} registered, "
                        f"controller {controller}; see the server.log files under {self.directory}"
                    )
                time.sleep(0.1)
        finally:
            zk.close()
        while not all(self._serves_metadata(b, expected) for b in expected):
            self._check_processes(expected)
            if time.monotonic() > deadline:
                raise ClusterError(f"brokers did not all serve metadata within {timeout:g} s")
            time.sleep(0.1)
        say("all brokers serve metadata")

    def _check_processes(self, expected: set[int]) -> None:
        for broker_id in expected:
            if not self.broker_alive(broker_id):
                raise ClusterError(f"broker {broker_id} exited; see {self.brokers[broker_id].log_path}")
        if self.zookeeper_embedded and self.zookeeper_pid and not _alive(self.zookeeper_pid):
            raise ClusterError(f"the embedded ZooKeeper exited; see {self.directory / 'zookeeper'}")

    def _serves_metadata(self, broker_id: int, expected: set[int]) -> bool:
        import asyncio

        from zkafka.client.connection import BrokerConnection
        from zkafka.protocol.messages import MetadataRequest

        async def ask() -> bool:
            conn = await BrokerConnection.open("127.0.0.1", self.brokers[broker_id].port, timeout=2)
            try:
                resp = await conn.send(MetadataRequest(topics=[]), timeout=2)
                return {b.node_id for b in resp.brokers} >= expected and resp.controller_id in expected
            finally:
                conn.close()

        try:
            return asyncio.run(ask())
        except Exception:
            return False

    def zookeeper_alive(self) -> bool:
        if self.zookeeper_embedded:
            return _alive(self.zookeeper_pid)
        host_port = self.zookeeper_connect.split("/", 1)[0].split(",")[0]
        host, _, port = host_port.rpartition(":")
        return four_letter_word(host or "127.0.0.1", int(port or 2181), timeout=0.5) == "imok"

    def running(self) -> bool:
        """Any of this cluster's processes still alive."""
        return any(self.broker_alive(b) for b in self.brokers) or (
            self.zookeeper_embedded and _alive(self.zookeeper_pid)
        )

    def process_status(self) -> dict[str, Any]:
        """The recorded processes and whether each is alive (no ZooKeeper access)."""
        return {
            "directory": str(self.directory),
            "bootstrap_servers": self.bootstrap_servers,
            "zookeeper": {
                "connect": self.zookeeper_connect,
                "embedded": self.zookeeper_embedded,
                "pid": self.zookeeper_pid or None,
                "alive": self.zookeeper_alive(),
            },
            "ca_path": self.ca_path or None,
            "brokers": [
                {
                    "id": b.broker_id,
                    "endpoint": b.bootstrap,
                    "pid": b.pid or None,
                    "alive": self.broker_alive(b.broker_id),
                    "metrics": b.metrics or None,
                    "listeners": b.listeners or [f"PLAINTEXT://{b.bootstrap}"],
                    "log": str(b.log_path),
                }
                for b in sorted(self.brokers.values(), key=lambda b: b.broker_id)
            ],
        }

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()


def _metrics_url(listener: str) -> str:
    """The scrape URL of a `metrics.listener` value ("" when its port is picked at start-up: the
    broker's log says which)."""
    if not listener:
        return ""
    try:
        host, port = parse_metrics_listener(listener)
    except ValueError:
        return ""
    return f"http://{host or '127.0.0.1'}:{port}/metrics" if port else ""


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

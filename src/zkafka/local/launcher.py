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

`up(..., zookeeper="host:port/chroot")` uses an existing ZooKeeper instead of starting one;
`up(..., zookeepers=3)` starts an ensemble of 3 (or 5) members instead of one server, each a
`zkafka zookeeper-start <dir>/zookeeper-N/zoo.cfg` process (`ZooKeeperProcess`), and gives the
brokers all of them in `zookeeper.connect` (with `chroot`, if any).
`start_console()` adds the web console (`zkafka ui`) for the cluster, stopped first by `down`.
The processes run in their own sessions, so they outlive the process that started them.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from zkafka.config.properties import format_properties
from zkafka.local import mounts
from zkafka.local.netns import BrokerNetwork
from zkafka.local.security import TlsFiles, generate_tls, secure_broker_props
from zkafka.local.zookeeper import (
    PID_FILE,
    EnsembleMember,
    ZooKeeperServer,
    four_letter_word,
    free_port,
    server_mode,
)
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
    host: str = "127.0.0.1"
    """Where it listens: loopback, or its namespace's address (`up(netns=True)`)."""
    netns: str = ""
    """The network namespace it runs in ("" for the root namespace)."""

    @property
    def config_path(self) -> Path:
        return Path(self.directory) / "server.properties"

    @property
    def log_path(self) -> Path:
        return Path(self.directory) / "server.log"

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass
class ZooKeeperProcess:
    """One member of the cluster's ZooKeeper ensemble: the `zookeeper-start` wrapper's pid and the
    ports its zoo.cfg gives it. The Java server's own pid is in `<directory>/zookeeper.pid`."""

    server_id: int
    client_port: int
    quorum_port: int
    election_port: int
    directory: str
    pid: int = 0

    @property
    def config_path(self) -> Path:
        return Path(self.directory) / "zoo.cfg"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def member(self) -> EnsembleMember:
        return EnsembleMember(self.server_id, self.client_port, self.quorum_port, self.election_port)

    def server_pid(self) -> int:
        """The Java server's pid (0 when unknown)."""
        try:
            return int((Path(self.directory) / PID_FILE).read_text().strip())
        except (OSError, ValueError):
            return 0


@dataclass
class LocalCluster:
    directory: Path
    zookeeper_connect: str = ""
    zookeeper_pid: int = 0
    zookeeper_embedded: bool = False
    ui_pid: int = 0
    """The web console `zkafka ui` serving this cluster (`start_console`), 0 when none."""
    ui_port: int = 0
    brokers: dict[int, BrokerProcess] = field(default_factory=dict)
    broker_overrides: dict[str, str] = field(default_factory=dict)
    zookeepers: dict[int, ZooKeeperProcess] = field(default_factory=dict)
    """The ensemble's members (empty for a single embedded server or an external ZooKeeper)."""
    security: bool = False
    """`up(security=True)`: every broker also has a SASL_SSL listener (`zkafka.local.security`)."""
    ca_path: str = ""
    """The CA certificate clients of the SASL_SSL listeners trust ("" without security)."""
    admin_client_config: str = ""
    """Client keys of the secured listener's super user `admin` ("" without security)."""
    network: BrokerNetwork | None = None
    """`up(netns=True)`: each broker in its own network namespace on this private network."""
    log_dir_size: str = ""
    """`up(log_dir_size="64m")`: each broker's log dir is a tmpfs of that size (`zkafka.local.mounts`)."""
    _tls: TlsFiles | None = field(default=None, repr=False)
    _popen: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)
    _zk_member_popen: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)
    _zk_popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    # -- persistence -------------------------------------------------------------------------
    def save(self) -> None:
        state = {
            "zookeeper_connect": self.zookeeper_connect,
            "zookeeper_pid": self.zookeeper_pid,
            "zookeeper_embedded": self.zookeeper_embedded,
            "ui_pid": self.ui_pid,
            "ui_port": self.ui_port,
            "brokers": [asdict(b) for b in self.brokers.values()],
            "broker_overrides": self.broker_overrides,
            "zookeepers": [asdict(z) for z in self.zookeepers.values()],
            "security": self.security,
            "ca_path": self.ca_path,
            "admin_client_config": self.admin_client_config,
            "network": self.network.to_json() if self.network else None,
            "log_dir_size": self.log_dir_size,
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
            ui_pid=state.get("ui_pid", 0),
            ui_port=state.get("ui_port", 0),
            broker_overrides=state.get("broker_overrides", {}),
            security=state.get("security", False),
            ca_path=state.get("ca_path", ""),
            admin_client_config=state.get("admin_client_config", ""),
            network=BrokerNetwork.from_json(state["network"]) if state.get("network") else None,
            log_dir_size=state.get("log_dir_size", ""),
        )
        for b in state["brokers"]:
            cluster.brokers[b["broker_id"]] = BrokerProcess(**b)
        for z in state.get("zookeepers", []):
            cluster.zookeepers[z["server_id"]] = ZooKeeperProcess(**z)
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
    def start_embedded_zookeeper(self, timeout: float = 30.0, *, host: str = "127.0.0.1") -> None:
        """One ZooKeeper server on `host` (another address than loopback: the bridge of a
        namespaced cluster, where the brokers reach it)."""
        port = free_port()
        zk_dir = self.directory / "zookeeper"
        zk_dir.mkdir(parents=True, exist_ok=True)
        if host == "127.0.0.1":
            where = ["--port", str(port), "--data-dir", str(zk_dir)]
        else:
            where = [str(ZooKeeperServer(port=port, data_dir=zk_dir, host=host).write_config())]
        log = open(zk_dir / "zookeeper-start.log", "ab")  # noqa: SIM115 - handed to the child
        try:
            self._zk_popen = subprocess.Popen(
                [sys.executable, "-m", "zkafka.cli.main", "zookeeper-start", "--quick-jit", *where],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            log.close()
        self.zookeeper_pid = self._zk_popen.pid
        self.zookeeper_connect = f"{host}:{port}"
        self.zookeeper_embedded = True
        deadline = time.monotonic() + timeout
        while four_letter_word(host, port, timeout=0.3) != "imok":
            if self._zk_popen.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"embedded ZooKeeper did not start; see {zk_dir}/zookeeper.log")
            time.sleep(0.1)

    # -- the web console ---------------------------------------------------------------------------
    @property
    def ui_url(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}/" if self.ui_port else ""

    def start_console(self, port: int = 0, timeout: float = 30.0) -> str:
        """Start `zkafka ui` for this cluster on loopback `port` (0: a free one) and wait until it
        accepts connections; its output goes to `<dir>/ui.log`. Returns its URL."""
        port = port or free_port()
        log = open(self.directory / "ui.log", "ab")  # noqa: SIM115 - handed to the child
        try:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "zkafka.cli.main",
                    "ui",
                    "--bootstrap-server",
                    self.bootstrap_servers,
                    "--zookeeper",
                    self.zookeeper_connect,
                    "--port",
                    str(port),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            log.close()
        self.ui_pid, self.ui_port = proc.pid, port
        deadline = time.monotonic() + timeout
        while not _accepts("127.0.0.1", port):
            if proc.poll() is not None or time.monotonic() > deadline:
                self.stop_console()
                raise ClusterError(f"the web console did not start; see {self.directory / 'ui.log'}")
            time.sleep(0.1)
        return self.ui_url

    def console_alive(self) -> bool:
        return _alive(self.ui_pid)

    def stop_console(self, timeout: float = 10.0) -> None:
        if self.ui_pid and _alive(self.ui_pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.ui_pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while _alive(self.ui_pid) and time.monotonic() < deadline:
                _reap(self.ui_pid)
                time.sleep(0.05)
            if _alive(self.ui_pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.ui_pid, signal.SIGKILL)
            _reap(self.ui_pid)
        self.ui_pid = 0

    # -- a ZooKeeper ensemble ------------------------------------------------------------------------
    def start_zookeeper_ensemble(self, size: int, *, chroot: str = "", timeout: float = 60.0) -> None:
        """Write every member's zoo.cfg and myid (free loopback ports), start them all and wait
        until one is the leader and the others follow it."""
        members = [EnsembleMember.with_free_ports(i) for i in range(1, size + 1)]
        for m in members:
            zk_dir = self.directory / f"zookeeper-{m.server_id}"
            ZooKeeperServer(data_dir=zk_dir, member=m, ensemble=members).write_config()
            self.zookeepers[m.server_id] = ZooKeeperProcess(
                m.server_id, m.client_port, m.quorum_port, m.election_port, str(zk_dir)
            )
        self.zookeeper_connect = ",".join(z.address for z in self.zookeepers.values()) + chroot
        self.zookeeper_embedded = True
        self.zookeeper_pid = 0
        for server_id in self.zookeepers:
            self.start_zookeeper_member(server_id)
        self.wait_zookeeper_quorum(timeout)

    def start_zookeeper_member(self, server_id: int) -> None:
        """(Re)start one member from its zoo.cfg, in its own session like the brokers."""
        member = self.zookeepers[server_id]
        log = open(Path(member.directory) / "zookeeper-start.log", "ab")  # noqa: SIM115 - the child's
        try:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "zkafka.cli.main",
                    "zookeeper-start",
                    "--quick-jit",
                    str(member.config_path),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            log.close()
        self._zk_member_popen[server_id] = proc
        member.pid = proc.pid

    def zookeeper_member_alive(self, server_id: int) -> bool:
        proc = self._zk_member_popen.get(server_id)
        if proc is not None:
            return proc.poll() is None
        return _alive(self.zookeepers[server_id].pid)

    def kill_zookeeper_member(self, server_id: int) -> None:
        """SIGKILL the member's Java server (not a clean shutdown: what a crash looks like to the
        ensemble); its wrapper notices and exits."""
        member = self.zookeepers[server_id]
        java = member.server_pid()
        if java and _alive(java):
            os.kill(java, signal.SIGKILL)
        self._wait_member_exit(server_id, 15)

    def stop_zookeeper_member(self, server_id: int, timeout: float = 20.0) -> None:
        """SIGTERM the wrapper (it stops the server), then SIGKILL both if they linger."""
        member = self.zookeepers[server_id]
        if member.pid and self.zookeeper_member_alive(server_id):
            with contextlib.suppress(ProcessLookupError):
                os.kill(member.pid, signal.SIGTERM)
            if not self._wait_member_exit(server_id, timeout):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(member.pid, signal.SIGKILL)
        java = member.server_pid()
        if java and _alive(java):
            with contextlib.suppress(ProcessLookupError):
                os.kill(java, signal.SIGKILL)
        self._wait_member_exit(server_id, 10)

    def _wait_member_exit(self, server_id: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.zookeeper_member_alive(server_id):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def zookeeper_roles(self) -> dict[int, str | None]:
        """member id -> its `srvr` mode (leader, follower, standalone), None when it does not serve."""
        return {i: server_mode("127.0.0.1", z.client_port, 0.5) for i, z in self.zookeepers.items()}

    def zookeeper_servers(self) -> list[dict[str, Any]]:
        """Every ZooKeeper server this cluster uses, with its role (`srvr`): the ensemble's members,
        or each host of the connect string (the embedded server, or an external ensemble)."""
        if self.zookeepers:
            roles = self.zookeeper_roles()
            return [
                {
                    "id": z.server_id,
                    "address": z.address,
                    "pid": z.pid or None,
                    "alive": self.zookeeper_member_alive(z.server_id),
                    "role": roles.get(z.server_id),
                }
                for z in sorted(self.zookeepers.values(), key=lambda z: z.server_id)
            ]
        from zkafka.zk.connect import parse_connect_string

        try:
            hosts = parse_connect_string(self.zookeeper_connect).host_ports
        except ValueError:
            return []
        out = []
        for i, (host, port) in enumerate(hosts, 1):
            role = server_mode(host, port, 0.5)
            embedded = self.zookeeper_embedded and len(hosts) == 1
            out.append(
                {
                    "id": i,
                    "address": f"{host}:{port}",
                    "pid": (self.zookeeper_pid or None) if embedded else None,
                    # an external server may allow neither `srvr` nor `ruok` (3.5+ allows only srvr)
                    "alive": _alive(self.zookeeper_pid)
                    if embedded
                    else role is not None or four_letter_word(host, port, "ruok", 0.5) == "imok",
                    "role": role,
                }
            )
        return out

    def zookeeper_leader(self) -> int | None:
        return next((i for i, mode in self.zookeeper_roles().items() if mode == "leader"), None)

    def wait_zookeeper_quorum(self, timeout: float = 60.0, *, members: set[int] | None = None) -> int:
        """Wait until one member leads and every other running one (or each of `members`)
        follows; returns the leader's id."""
        deadline = time.monotonic() + timeout
        while True:
            running = members if members is not None else set(self.zookeepers)
            for server_id in running:
                if not self.zookeeper_member_alive(server_id):
                    raise ClusterError(
                        f"ZooKeeper member {server_id} exited; see {self.zookeepers[server_id].directory}"
                    )
            roles = self.zookeeper_roles()
            leaders = [i for i in running if roles.get(i) == "leader"]
            if len(leaders) == 1 and all(roles.get(i) in ("leader", "follower") for i in running):
                return leaders[0]
            if time.monotonic() > deadline:
                raise ClusterError(f"no ZooKeeper quorum within {timeout:g} s: roles {roles}")
            time.sleep(0.2)

    # -- brokers ---------------------------------------------------------------------------------
    def add_broker(
        self, broker_id: int, overrides: dict[str, str] | None = None, *, port: int | None = None
    ) -> BrokerProcess:
        """Configure broker `broker_id` on `port` (default: a free loopback port; in a namespaced
        cluster its namespace is made here and it listens on the namespace's address)."""
        port = port or free_port()
        bdir = self.directory / f"broker-{broker_id}"
        (bdir / "logs").mkdir(parents=True, exist_ok=True)
        broker = BrokerProcess(broker_id, port, str(bdir))
        if self.log_dir_size:
            mounts.mount_tmpfs(bdir / "logs", self.log_dir_size)
        if self.network is not None:
            if broker_id not in self.network.brokers:
                self.network.add_broker(broker_id)
            broker.host, broker.netns = self.network.address(broker_id), self.network.namespace(broker_id)
        props = {
            "broker.id": str(broker_id),
            "listeners": f"PLAINTEXT://{broker.host}:{port}",
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
            props["metrics.listener"] = f"http://{broker.host}:{free_port()}"
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

    def start_broker(self, broker_id: int, *, nofile: int | None = None) -> BrokerProcess:
        """Start the broker process; `nofile` sets its RLIMIT_NOFILE (soft and hard) lower than
        this process's, e.g. to show a broker holding more replicas than descriptors."""
        broker = self.brokers[broker_id]
        log = open(broker.log_path, "ab")  # noqa: SIM115 - handed to the child
        limit = None if nofile is None else functools.partial(_set_nofile, nofile)
        try:
            proc = subprocess.Popen(
                [
                    *(self.network.exec_prefix(broker_id) if self.network and broker.netns else []),
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
                preexec_fn=limit,  # only setrlimit in the child: no locks taken
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
        stop the embedded ZooKeeper the same way. The web console goes first."""
        self.stop_console()
        live = [b for b in self.brokers if self.broker_alive(b)]
        controller = self.controller_id() if len(live) > 1 else None
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
        for server_id in self.zookeepers:
            self.stop_zookeeper_member(server_id)
        self.release_host_resources()

    def release_host_resources(self) -> None:
        """Unmount the brokers' tmpfs log dirs and remove their network namespaces, once the
        brokers have exited (also for a cluster whose processes are already gone)."""
        if self.log_dir_size:
            for broker_id, broker in self.brokers.items():
                self.wait_broker_exit(broker_id, 10)
                mounts.unmount(Path(broker.directory) / "logs")
        if self.network is not None:
            for broker_id in self.brokers:  # a namespace is only freed when its processes are gone
                self.wait_broker_exit(broker_id, 10)
            self.network.remove()
            self.network = None
            self.save()

    def controller_id(self) -> int | None:
        """The active controller, or None if ZooKeeper does not answer quickly (then any order)."""
        from zkafka.zk.client import controller_id_or_none

        return controller_id_or_none(self.zookeeper_connect)

    # -- whole-cluster lifecycle -------------------------------------------------------------------
    def up(
        self,
        brokers: int,
        *,
        zookeeper: str = EMBEDDED,
        zookeepers: int = 1,
        chroot: str = "",
        overrides: dict[str, str] | None = None,
        timeout: float = 60.0,
        progress: Progress | None = None,
        security: bool = False,
        netns: bool = False,
        log_dir_size: str = "",
    ) -> None:
        """Start ZooKeeper (unless `zookeeper` is a connect string; an ensemble of `zookeepers`
        members when that is more than 1) and brokers 1..`brokers`,
        then wait until every broker is registered, a controller is elected and every broker's
        Metadata lists them all. On failure everything started here is stopped again.
        `security`: each broker also gets a SASL_SSL listener with fresh TLS material and the
        ACL authorizer (`zkafka.local.security`). `netns`: each broker runs in its own network
        namespace (`zkafka.local.netns`; Linux, root) and the embedded ZooKeeper listens on the
        namespaces' bridge; one embedded server only. `log_dir_size` (e.g. "64m"; Linux, root):
        each broker's log dir is a tmpfs of that size (`zkafka.local.mounts`), unmounted by `down`."""
        if brokers < 1:
            raise ValueError(f"a cluster needs at least one broker, got {brokers}")
        if netns and (zookeeper != EMBEDDED or zookeepers > 1):
            raise ValueError("a namespaced cluster (--netns) runs its own single ZooKeeper server")
        say = progress or (lambda _msg: None)
        self.broker_overrides.update(overrides or {})
        self.security = security
        self.log_dir_size = mounts.check_size(log_dir_size) if log_dir_size else ""
        try:
            if zookeeper == EMBEDDED and zookeepers > 1:
                say(f"starting a {zookeepers}-member ZooKeeper ensemble")
                self.start_zookeeper_ensemble(zookeepers, chroot=chroot, timeout=timeout)
                leader = self.zookeeper_leader()
                say(f"ZooKeeper ensemble serving on {self.zookeeper_connect} (leader {leader})")
            elif zookeeper == EMBEDDED:
                if netns:
                    self.network = BrokerNetwork.create()
                    self.save()  # recorded at once: `cluster down` removes it even if `up` dies
                    say(
                        f"made the brokers' network {self.network.subnet}.0/24 (bridge {self.network.bridge})"
                    )
                say("starting ZooKeeper")
                self.start_embedded_zookeeper(host=self.network.gateway if self.network else "127.0.0.1")
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
        if self.zookeepers and not self.zookeeper_alive():
            raise ClusterError(f"a majority of the ZooKeeper ensemble exited; see {self.directory}")

    def _serves_metadata(self, broker_id: int, expected: set[int]) -> bool:
        import asyncio

        from zkafka.client.connection import BrokerConnection
        from zkafka.protocol.messages import MetadataRequest

        async def ask() -> bool:
            broker = self.brokers[broker_id]
            conn = await BrokerConnection.open(broker.host, broker.port, timeout=2)
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
        """The embedded server runs, a majority of the ensemble's members run, or the external
        ZooKeeper's first server answers `ruok`."""
        if self.zookeepers:
            up = sum(self.zookeeper_member_alive(i) for i in self.zookeepers)
            return up > len(self.zookeepers) // 2
        if self.zookeeper_embedded:
            return _alive(self.zookeeper_pid)
        host_port = self.zookeeper_connect.split("/", 1)[0].split(",")[0]
        host, _, port = host_port.rpartition(":")
        return four_letter_word(host or "127.0.0.1", int(port or 2181), timeout=0.5) == "imok"

    def running(self) -> bool:
        """Any of this cluster's processes still alive."""
        return (
            any(self.broker_alive(b) for b in self.brokers)
            or (self.zookeeper_embedded and _alive(self.zookeeper_pid))
            or self.console_alive()
            or any(self.zookeeper_member_alive(i) for i in self.zookeepers)
        )

    def process_status(self) -> dict[str, Any]:
        """The recorded processes and whether each is alive, and each ZooKeeper member's role
        (`srvr`; no ZooKeeper session)."""
        return {
            "directory": str(self.directory),
            "bootstrap_servers": self.bootstrap_servers,
            "zookeeper": {
                "connect": self.zookeeper_connect,
                "embedded": self.zookeeper_embedded,
                "pid": self.zookeeper_pid or None,
                "alive": self.zookeeper_alive(),
                "members": self.zookeeper_servers(),
            },
            "ui": {"url": self.ui_url or None, "pid": self.ui_pid or None, "alive": self.console_alive()},
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


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.3):
            return True
    except OSError:
        return False


def _reap(pid: int) -> None:
    """Collect our own exited child (a zombie otherwise counts as alive to os.kill)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _set_nofile(limit: int) -> None:
    """In the child before exec: its open files limit, soft and hard."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


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

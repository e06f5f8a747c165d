"""The processes behind a cluster `zkafka chaos` reaches by `--bootstrap-server`/`--zookeeper`
rather than by a `cluster up` directory: the brokers registered in ZooKeeper's `/brokers/ids`,
and, for each whose advertised host is an address of this machine, the process listening on its
port (found from `/proc/net/tcp{,6}`'s socket inode and the `/proc/<pid>/fd` that holds it).

Process faults apply to those: SIGKILL, SIGSTOP/SIGCONT, and a restart that re-executes the
process's command line with the working directory, environment and output files captured before
it was killed. A ZooKeeper server of the connect string is controlled the same way when it, too,
is a local process. What needs more than a process (a broker's own network namespace, its log dir
on a small filesystem, its files) is refused up front by `refusals`.

`ProcessCluster` offers the nemesis the same calls as `zkafka.local.launcher.LocalCluster`.
Linux only (`/proc`); blocking.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from zkafka.zk.client import KafkaZkClient, controller_id_or_none

PROCESS_FAULTS = frozenset({"kill", "pause", "controller", "unclean"})
"""Faults that need nothing but control of the broker processes."""

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's `st` column


class TargetError(RuntimeError):
    """A process that cannot be found, captured or restarted."""


def is_local_address(host: str) -> bool:
    """Whether `host` names an address of this machine: one a socket can be bound to here."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    for family, _type, _proto, _name, sockaddr in infos:
        with contextlib.suppress(OSError), socket.socket(family, socket.SOCK_STREAM) as s:
            s.bind((sockaddr[0], 0))
            return True
    return False


def _listening_inodes(port: int, proc: Path) -> set[str]:
    inodes: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == _LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def listening_pid(port: int, *, proc: Path = Path("/proc")) -> int | None:
    """The process holding a listening TCP socket on `port` (any local address), None if there is
    none this user may see."""
    inodes = {f"socket:[{i}]" for i in _listening_inodes(port, proc)}
    if not inodes:
        return None
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (entry / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in inodes:
                        return int(entry.name)
    return None


def alive(pid: int) -> bool:
    """Running (a zombie is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@dataclass
class LocalProcess:
    """A local process and what it takes to start it again: captured while it runs."""

    pid: int
    cmdline: list[str]
    cwd: str
    environ: dict[str, str]
    output: str | None = None
    """The regular file its stdout went to (appended to by the restarted process), if any."""

    @classmethod
    def capture(cls, pid: int) -> LocalProcess:
        base = Path(f"/proc/{pid}")
        try:
            cmdline = [a.decode() for a in (base / "cmdline").read_bytes().split(b"\0") if a]
            cwd = os.readlink(base / "cwd")
            environ = dict(
                entry.decode(errors="replace").split("=", 1)
                for entry in (base / "environ").read_bytes().split(b"\0")
                if b"=" in entry
            )
        except OSError as e:
            raise TargetError(f"cannot capture process {pid}: {e}") from None
        if not cmdline:
            raise TargetError(f"process {pid} has no command line")
        output = None
        with contextlib.suppress(OSError):
            target = os.readlink(base / "fd" / "1")
            if target.startswith("/") and Path(target).is_file():
                output = target
        return cls(pid, cmdline, cwd, environ, output)

    def signal(self, sig: int) -> None:
        if alive(self.pid):
            os.kill(self.pid, sig)

    def kill(self, timeout: float = 10.0) -> None:
        self.signal(signal.SIGKILL)
        deadline = time.monotonic() + timeout
        while alive(self.pid) and time.monotonic() < deadline:
            time.sleep(0.05)

    def restart(self) -> None:
        """Start the captured command again (in a session of its own, so it outlives the run)."""
        out = open(self.output, "ab") if self.output else subprocess.DEVNULL  # noqa: SIM115
        try:
            proc = subprocess.Popen(
                self.cmdline,
                cwd=self.cwd,
                env=self.environ,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            if not isinstance(out, int):
                out.close()
        self.pid = proc.pid


@dataclass
class RemoteBroker:
    host: str
    port: int
    process: LocalProcess | None
    """None when the broker is not a process of this machine (or this user may not see it)."""


@dataclass
class ProcessCluster:
    """A cluster found through ZooKeeper; what `LocalNemesis` needs of a cluster."""

    bootstrap_servers: str
    zookeeper_connect: str
    brokers: dict[int, RemoteBroker]
    zookeepers: dict[int, LocalProcess] = field(default_factory=dict)
    """The ZooKeeper servers of the connect string, by position, when every one is a local process."""
    network: None = None
    log_dir_size: None = None

    @classmethod
    def discover(
        cls, bootstrap_servers: str, zookeeper_connect: str, timeout_s: float = 15.0
    ) -> ProcessCluster:
        zk = KafkaZkClient(
            zookeeper_connect, connection_timeout_ms=int(timeout_s * 1000), create_chroot=False
        )
        try:
            infos = zk.get_all_brokers()
        finally:
            zk.close()
        if not infos:
            raise TargetError(f"no broker is registered in ZooKeeper at {zookeeper_connect}")
        brokers = {}
        for info in infos:
            endpoint = next((e for e in info.endpoints if is_local_address(e.host)), info.endpoints[0])
            pid = listening_pid(endpoint.port) if is_local_address(endpoint.host) else None
            brokers[info.id] = RemoteBroker(
                endpoint.host, endpoint.port, LocalProcess.capture(pid) if pid else None
            )
        return cls(bootstrap_servers, zookeeper_connect, brokers, _zookeeper_processes(zookeeper_connect))

    def refusals(self, faults: list[str]) -> list[str]:
        """One line per fault this cluster cannot take, saying why."""
        lines = []
        remote = sorted(b for b, broker in self.brokers.items() if broker.process is None)
        for fault in faults:
            if fault in PROCESS_FAULTS:
                if remote:
                    lines.append(
                        f"{fault}: brokers {remote} are not processes of this machine "
                        "(their advertised host is not a local address, or their process is not visible)"
                    )
                elif len(self.brokers) < 2:
                    lines.append(f"{fault}: broker faults need at least 2 brokers")
            elif fault == "zk-kill":
                if len(self.zookeepers) < 3:
                    lines.append(
                        "zk-kill: needs a ZooKeeper ensemble of 3 or more whose servers all run on "
                        "this machine (the connect string's hosts, found by their ports)"
                    )
            elif fault == "partition":
                lines.append(
                    "partition: needs brokers in network namespaces of a local cluster "
                    "(`zkafka cluster up --netns`, then `zkafka chaos --dir`)"
                )
            elif fault == "disk-full":
                lines.append(
                    "disk-full: needs log dirs on small filesystems of a local cluster "
                    "(`zkafka cluster up --log-dir-size`, then `zkafka chaos --dir`)"
                )
            elif fault == "power-loss":
                lines.append(
                    "power-loss: needs the broker's log files (truncated while it is down): "
                    "a local cluster (`zkafka chaos --dir`)"
                )
        return lines

    # -- what the nemesis calls, as on LocalCluster ------------------------------------------
    def _process(self, broker_id: int) -> LocalProcess:
        process = self.brokers[broker_id].process
        if process is None:
            raise TargetError(f"broker {broker_id} is not a process of this machine")
        return process

    def broker_alive(self, broker_id: int) -> bool:
        process = self.brokers[broker_id].process
        return process is not None and alive(process.pid)

    def signal_broker(self, broker_id: int, sig: int) -> None:
        self._process(broker_id).signal(sig)

    def kill_broker(self, broker_id: int) -> None:
        self._process(broker_id).kill()

    def start_broker(self, broker_id: int) -> None:
        process = self._process(broker_id)
        if not alive(process.pid):
            process.restart()

    def save(self) -> None:
        """Nothing to record: the cluster is not ours."""

    def controller_id(self) -> int | None:
        return controller_id_or_none(self.zookeeper_connect)

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Every broker found at the start is registered again, and a controller is elected."""
        expected = set(self.brokers)
        deadline = time.monotonic() + timeout
        zk = KafkaZkClient(
            self.zookeeper_connect, connection_timeout_ms=int(max(timeout, 1) * 1000), create_chroot=False
        )
        try:
            while True:
                registered = set(zk.get_all_broker_ids())
                if registered >= expected and zk.get_controller_id() in registered:
                    return
                if time.monotonic() > deadline:
                    raise TargetError(
                        f"after {timeout:g} s: {sorted(registered)} of {sorted(expected)} registered"
                    )
                time.sleep(0.1)
        finally:
            zk.close()

    def zookeeper_member_alive(self, server_id: int) -> bool:
        return alive(self.zookeepers[server_id].pid)

    def kill_zookeeper_member(self, server_id: int) -> None:
        self.zookeepers[server_id].kill()

    def start_zookeeper_member(self, server_id: int) -> None:
        if not alive(self.zookeepers[server_id].pid):
            self.zookeepers[server_id].restart()

    def wait_zookeeper_quorum(self, timeout: float = 60.0) -> None:
        """ZooKeeper answers again through the connect string."""
        zk = KafkaZkClient(
            self.zookeeper_connect, connection_timeout_ms=int(timeout * 1000), create_chroot=False
        )
        try:
            zk.get_controller_id()
        finally:
            zk.close()


def _zookeeper_processes(connect: str) -> dict[int, LocalProcess]:
    """The connect string's servers by position (1-based), if every one is a local process."""
    hosts = connect.split("/", 1)[0].split(",")
    found: dict[int, LocalProcess] = {}
    for i, hostport in enumerate(hosts, start=1):
        host, _, port = hostport.strip().rpartition(":")
        if not port.isdigit() or not is_local_address(host.strip("[]") or "localhost"):
            return {}
        pid = listening_pid(int(port))
        if pid is None:
            return {}
        try:
            found[i] = LocalProcess.capture(pid)
        except TargetError:
            return {}
    return found

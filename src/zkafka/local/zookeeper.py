"""Run Debian's ZooKeeper server as a child process, alone or as one member of an ensemble.

Used by `zkafka zookeeper-start`, by `zkafka cluster up` (the embedded default, and the ensemble of
`--zookeepers 3|5`) and by the test fixtures. The server is the real Java ZooKeeper from Debian's
`zookeeper` package; we only write its config (bound to 127.0.0.1), start it, wait until it answers
`ruok`, and stop it.

An ensemble member (`QuorumPeerMain`) gets `myid` in its data dir and one
`server.N=127.0.0.1:<quorum>:<election>` line per member (`ensemble_config`); a member given a
`zoo.cfg` of the user's (`ZooKeeperServer(config_file=...)`) runs exactly that file. The role a
member plays is read with the `srvr` four-letter word (`server_mode`).
"""

from __future__ import annotations

import ctypes
import os
import random
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

ZOOKEEPER_HOME = Path("/usr/share/zookeeper")
ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
# slf4j-simple sends the server's log lines to stderr, which we redirect into the data dir.
LOGGER_JAR = Path("/usr/share/java/slf4j-simple.jar")
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
# QuorumPeerMain runs a standalone server too when the config names no other member.
QUORUM_MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
FOUR_LETTER_WORDS = "ruok,srvr,stat,mntr,cons"
PID_FILE = "zookeeper.pid"
# Kafka's zookeeper-server-start.sh gives the server 512 MB unless KAFKA_HEAP_OPTS says otherwise;
# ZooKeeper keeps every znode in its heap, and 100,000 partitions are ~200,000 znodes: 256 MB ran
# out (OutOfMemoryError) while they were written with many multis in flight.
DEFAULT_HEAP_OPTS = "-Xmx512m"
"""Written next to the server's log: the Java process's pid (the wrapper's differs), so a tool can
SIGKILL the server itself."""


class ZooKeeperNotInstalled(RuntimeError):
    pass


def heap_options(environ: Mapping[str, str] | None = None) -> list[str]:
    """The server's heap flags: `KAFKA_HEAP_OPTS` as Kafka's start scripts read it, else 512 MB."""
    env = os.environ if environ is None else environ
    given = env.get("KAFKA_HEAP_OPTS", "").strip()
    return shlex.split(given) if given else [DEFAULT_HEAP_OPTS]


def _die_with_parent() -> None:
    """In the child before exec: ask Linux to SIGTERM it when the process that started it dies, so
    a killed test run or `zkafka zookeeper-start` never leaves a ZooKeeper behind."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:  # not Linux/glibc: best effort only
        pass


PR_SET_PDEATHSIG = 1


PORT_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
PICKED_PORTS = 20_000
"""How many ports below the kernel's ephemeral range `free_port` picks from."""


def free_port(host: str = "127.0.0.1") -> int:
    """A currently free TCP port on the loopback interface, for a server started a moment later.

    Picked at random below the kernel's ephemeral range: a port that bind(0) hands out comes from
    that range, from which every outgoing connection also takes its local port, so in the seconds
    before our server binds it (a broker binds its metrics listener after loading its logs) a
    client connection may take it ("address already in use", seen under a busy test suite).

    Each port handed out is also claimed for `PORT_CLAIM_SECONDS` in a directory every process of
    this machine shares (`_claim_port`): two processes picking at once (two test workers, two
    `cluster up`) would otherwise both find the same port free and one server then fail to bind
    it (seen in a CI run: two brokers of two workers given port 15970 within a second)."""
    low = _ephemeral_low()
    if low > 1024 + PICKED_PORTS // 4:
        rng = random.SystemRandom()
        for _ in range(100):
            port = rng.randrange(max(1024, low - PICKED_PORTS), low)
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind((host, port))
                except OSError:
                    continue
                if not _claim_port(port):
                    continue
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


PORT_CLAIM_SECONDS = 120
"""How long a port handed out by `free_port` stays claimed: longer than a server takes to bind it."""


def _claim_port(port: int) -> bool:
    """Claim `port` for this process unless another claimed it in the last `PORT_CLAIM_SECONDS`
    (a file per port, made with O_EXCL; an older claim is taken over). True when claimed, and
    also when claims cannot be recorded here at all (then only the bind check protects)."""
    claims = Path(tempfile.gettempdir()) / "zkafka-port-claims"
    path = claims / str(port)
    for _ in range(2):
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
            return True
        except FileExistsError:
            try:
                if time.time() - path.stat().st_mtime < PORT_CLAIM_SECONDS:
                    return False
                path.unlink()  # stale: the next O_EXCL decides who takes it over
            except FileNotFoundError:
                pass
        except FileNotFoundError:
            try:
                claims.mkdir(mode=0o1777, exist_ok=True)
            except OSError:
                return True
        except OSError:
            return True
    return False


def _ephemeral_low() -> int:
    try:
        return int(PORT_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def four_letter_word(host: str, port: int, word: str = "ruok", timeout: float = 1.0) -> str | None:
    """Send one of ZooKeeper's four-letter commands; None when the server does not answer."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(word.encode())
            chunks = []
            while True:
                data = s.recv(4096)
                if not data:
                    break
                chunks.append(data)
            return b"".join(chunks).decode(errors="replace")
    except OSError:
        return None


def server_mode(host: str, port: int, timeout: float = 1.0) -> str | None:
    """The `Mode:` line of `srvr`: "leader", "follower", "observer" or "standalone"; None when the
    server does not answer (or answers that it is not serving, as a member without a quorum does)."""
    answer = four_letter_word(host, port, "srvr", timeout=timeout)
    if not answer:
        return None
    for line in answer.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Mode":
            return value.strip()
    return None


@dataclass(frozen=True)
class EnsembleMember:
    """One server of an ensemble: `myid` and its three loopback ports."""

    server_id: int
    client_port: int
    quorum_port: int
    election_port: int

    @classmethod
    def with_free_ports(cls, server_id: int) -> EnsembleMember:
        return cls(server_id, free_port(), free_port(), free_port())


def ensemble_config(members: list[EnsembleMember], host: str = "127.0.0.1") -> list[str]:
    """The `server.N=host:quorum:election` lines every member's zoo.cfg carries (the same in all)."""
    return [f"server.{m.server_id}={host}:{m.quorum_port}:{m.election_port}" for m in members]


def read_client_port(config_file: Path) -> tuple[str, int]:
    """(clientPortAddress or 127.0.0.1, clientPort) of a zoo.cfg; ValueError when it has none (a
    3.5+ `server.N=...;port` client port is not supported here)."""
    values: dict[str, str] = {}
    for raw in Path(config_file).read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    if "clientPort" not in values:
        raise ValueError(f"{config_file}: no clientPort")
    try:
        port = int(values["clientPort"])
    except ValueError:
        raise ValueError(f"{config_file}: clientPort {values['clientPort']!r} is not a number") from None
    return values.get("clientPortAddress") or "127.0.0.1", port


@dataclass
class ZooKeeperServer:
    """One standalone ZooKeeper server on 127.0.0.1.

    `data_dir=None` makes a temporary directory that is removed on `stop()`. `force_sync=False`
    stops the server from fsyncing its transaction log on every write (ZooKeeper's `forceSync=no`):
    for test servers only, where a slow fsync on a busy disk would otherwise stall every session
    for seconds; writes still reach the page cache, so a killed server loses nothing.

    `member` and `ensemble` make it one member of an ensemble (its `myid`, everyone's quorum
    ports); `config_file` runs a zoo.cfg as given (its directory holds the log and pid file).

    `quick_jit` (the default) stops the JVM's JIT at C1 (`-XX:TieredStopAtLevel=1`): a test's
    server lives seconds, and C2's compiler threads would take CPU from everything else on the
    machine. A long-running server (the `zkafka zookeeper-start` command, the benchmarks at scale)
    passes False and runs as ZooKeeper's own scripts run it: C2 compiles the hot paths, and the
    creation of 100,000 partitions went ~10 % faster (docs/performance.md, session 6).
    """

    port: int = 0
    data_dir: Path | None = None
    host: str = "127.0.0.1"
    tick_time_ms: int = 500
    min_session_timeout_ms: int = 1000
    max_session_timeout_ms: int = 60000
    force_sync: bool = True
    member: EnsembleMember | None = None
    ensemble: list[EnsembleMember] = field(default_factory=list)
    config_file: Path | None = None
    quick_jit: bool = True
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    _own_dir: bool = field(default=False, init=False)

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

    def write_config(self) -> Path:
        assert self.data_dir is not None
        if self.member is not None:
            self.port = self.member.client_port
        (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
        cfg = self.data_dir / "zoo.cfg"
        quorum: list[str] = []
        if self.member is not None:
            # initLimit/syncLimit in ticks: a follower has 10 s to sync, 5 s to stay in step.
            quorum = ["initLimit=20", "syncLimit=10", *ensemble_config(self.ensemble, self.host)]
            (self.data_dir / "data" / "myid").write_text(f"{self.member.server_id}\n")
        cfg.write_text(
            "\n".join(
                [
                    "# generated by zkafka",
                    f"tickTime={self.tick_time_ms}",
                    f"dataDir={self.data_dir / 'data'}",
                    f"clientPort={self.port}",
                    f"clientPortAddress={self.host}",
                    "maxClientCnxns=0",
                    "admin.enableServer=false",
                    f"4lw.commands.whitelist={FOUR_LETTER_WORDS}",
                    f"minSessionTimeout={self.min_session_timeout_ms}",
                    f"maxSessionTimeout={self.max_session_timeout_ms}",
                    # Kafka forces 4 MB client side; give the server the same room.
                    "jute.maxbuffer=4194304",
                    f"forceSync={'yes' if self.force_sync else 'no'}",
                    *quorum,
                    "",
                ]
            )
        )
        return cfg

    def start(self, timeout: float = 30.0) -> ZooKeeperServer:
        if not ZOOKEEPER_JAR.exists():
            raise ZooKeeperNotInstalled(
                f"ZooKeeper is not installed ({ZOOKEEPER_JAR} missing): run `make setup` "
                "or `apt-get install zookeeper`"
            )
        java = shutil.which("java")
        if java is None:
            raise ZooKeeperNotInstalled("no `java` on PATH; ZooKeeper needs a Java runtime")
        if self.config_file is not None:
            cfg = Path(self.config_file)
            self.host, self.port = read_client_port(cfg)
            self.data_dir = cfg.parent
        else:
            if self.data_dir is None:
                self.data_dir = Path(tempfile.mkdtemp(prefix="zkafka-zk-"))
                self._own_dir = True
            self.data_dir = Path(self.data_dir)
            (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
            if self.member is not None:
                self.port = self.member.client_port
            if self.port == 0:
                self.port = free_port(self.host)
            cfg = self.write_config()
        main_class = MAIN_CLASS if self.config_file is None and self.member is None else QUORUM_MAIN_CLASS
        classpath = [str(ZOOKEEPER_JAR)]
        if LOGGER_JAR.exists():
            classpath.append(str(LOGGER_JAR))
        cmd = [
            java,
            *heap_options(),
            "-XX:+UseSerialGC",
            *(["-XX:TieredStopAtLevel=1"] if self.quick_jit else []),
            "-Djute.maxbuffer=4194304",
            "-Dzookeeper.jmx.log4j.disable=true",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
            # Timestamps, so the server's log lines up with the brokers' (slf4j-simple omits them).
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS",
            "-cp",
            ":".join(classpath),
            main_class,
            str(cfg),
        ]
        log = open(self.data_dir / "zookeeper.log", "ab")  # noqa: SIM115 - owned by the child
        try:
            self.process = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        finally:
            log.close()
        (self.data_dir / PID_FILE).write_text(f"{self.process.pid}\n")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"ZooKeeper exited with code {self.process.returncode}; see {self.data_dir}/zookeeper.log"
                )
            if four_letter_word(self.host, self.port, "ruok", timeout=0.5) == "imok":
                return self
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"ZooKeeper did not answer on {self.connect_string} within {timeout:.0f}s")

    def stop(self, timeout: float = 10.0) -> None:
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc is not None and self.data_dir is not None:
            (self.data_dir / PID_FILE).unlink(missing_ok=True)
        if self._own_dir and self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def kill(self) -> None:
        """SIGKILL, for failure tests."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

"""A real Spark standalone cluster on loopback for tests and benchmarks: a master and workers as
separate JVMs, started with the pyspark installation's `bin/spark-class` as an operator would
start them (`org.apache.spark.deploy.master.Master`, `...worker.Worker`), everything bound to
127.0.0.1 on free ports, each worker in a process group of its own so that a test can SIGKILL a
whole "machine" (worker, its executors and their Python workers) at once.

    with standalone_cluster(tmp_path, workers=2) as sc:
        spark = local_session("job", master=sc.master_url, conf=sc.app_conf())
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zkafka
from zkafka.local.zookeeper import free_port as local_free_port
from zkafka.testing.polling import wait_for

LOOPBACK = "127.0.0.1"
QUICK_JIT = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""JVM options for a test's short-lived Spark JVMs: the JIT stops at C1 and one thread collects
garbage. On a 2-core machine C2's compiler threads and the parallel collector's threads take CPU
from everything else running; the Spark tests of `test_spark_batch.py` took 30 % less CPU with
these (74.6-82.3 against 52.4-57.5 CPU-s, docs/performance.md). Not for throughput runs: C2's code
is what a long query wants."""


def free_port() -> int:
    return local_free_port(LOOPBACK)


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def source_root() -> str:
    """The directory holding the `zkafka` package this process imports: executors' Python workers
    get it on PYTHONPATH, so they run this checkout's connector, not some other installed copy."""
    return str(Path(zkafka.__file__).resolve().parents[1])


@dataclass
class Daemon:
    """One master or worker JVM (the leader of its own process group)."""

    name: str
    port: int
    ui_port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self.directory / f"{self.name}.log"

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole group: the daemon, and for a worker its executors and Python workers,
        as if the machine were gone."""
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(30)

    def stop(self) -> None:
        """SIGTERM to the group (Spark's own shutdown hooks run), SIGKILL if it lingers."""
        if self.process is None:
            return
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(15)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                pass
        self.kill()  # the group may outlive its leader (an executor still shutting down)


@dataclass
class StandaloneCluster:
    directory: Path
    worker_cores: int = 1
    worker_memory: str = "1g"
    daemon_memory: str = "256m"
    worker_env: dict[str, str | None] = field(default_factory=dict)
    """Changes to the workers' (and so their executors') environment, None removing a variable: a
    test gives the workers another interpreter (PATH) without this checkout on PYTHONPATH."""
    quick_jit: bool = False
    """Run the daemons and the applications' executors with `QUICK_JIT` (tests); off for
    benchmarks."""
    master: Daemon | None = None
    workers: list[Daemon] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        assert self.master is not None
        return f"spark://{LOOPBACK}:{self.master.port}"

    def environment(self, worker: bool = False) -> dict[str, str]:
        env = dict(os.environ)
        # SPARK_LOCAL_IP binds every RPC endpoint and web UI of the daemons and of the executors
        # they start to loopback (the default is the address of the host name, eth0 here).
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_LOCAL_IP=LOOPBACK,
            SPARK_LOCAL_HOSTNAME="localhost",
            SPARK_DAEMON_MEMORY=self.daemon_memory,
            SPARK_LOG_DIR=str(self.directory / "logs"),
            SPARK_CONF_DIR=str(self.directory / "conf"),
            PYSPARK_PYTHON=sys.executable,
            PYTHONPATH=os.pathsep.join(p for p in (source_root(), env.get("PYTHONPATH", "")) if p),
        )
        if self.quick_jit:
            env["SPARK_DAEMON_JAVA_OPTS"] = QUICK_JIT
        if worker:
            for name, value in self.worker_env.items():
                if value is None:
                    env.pop(name, None)
                else:
                    env[name] = value
        return env

    def _spawn(self, daemon: Daemon, main_class: str, *arguments: str, worker: bool = False) -> None:
        daemon.directory.mkdir(parents=True, exist_ok=True)
        with daemon.log_path.open("ab") as log:
            daemon.process = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), main_class, *arguments],
                env=self.environment(worker),
                cwd=daemon.directory,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def start_master(self) -> None:
        (self.directory / "conf").mkdir(parents=True, exist_ok=True)
        # a dead worker is noticed by its missing heartbeats: 10 s instead of 60 keeps tests short;
        # the REST submission server would listen on the fixed port 6066 (clusters would collide)
        (self.directory / "conf" / "spark-defaults.conf").write_text(
            "spark.worker.timeout 10\nspark.master.rest.enabled false\n"
        )
        self.master = Daemon("master", free_port(), free_port(), self.directory / "master")
        self._spawn(
            self.master,
            "org.apache.spark.deploy.master.Master",
            "--host", LOOPBACK,
            "--port", str(self.master.port),
            "--webui-port", str(self.master.ui_port),
        )  # fmt: skip

    def start_worker(self, index: int) -> Daemon:
        """Start worker `index` (0-based), a new one or one that was killed."""
        while len(self.workers) <= index:
            n = len(self.workers)
            self.workers.append(Daemon(f"worker-{n}", 0, 0, self.directory / f"worker-{n}"))
        worker = self.workers[index]
        worker.port, worker.ui_port = free_port(), free_port()
        self._spawn(
            worker,
            "org.apache.spark.deploy.worker.Worker",
            "--host", LOOPBACK,
            "--port", str(worker.port),
            "--webui-port", str(worker.ui_port),
            "--cores", str(self.worker_cores),
            "--memory", self.worker_memory,
            "--work-dir", str(worker.directory / "work"),
            self.master_url,
            worker=True,
        )  # fmt: skip
        return worker

    def status(self) -> dict[str, Any]:
        """The master's JSON status (workers, applications), from its web UI."""
        assert self.master is not None
        url = f"http://{LOOPBACK}:{self.master.ui_port}/json/"
        with urllib.request.urlopen(url, timeout=5) as response:
            body = response.read()
        try:
            return dict(json.loads(body))
        except ValueError:
            # a master still starting can answer with an empty page: not up yet (an OSError, which
            # wait_for retries), not a broken cluster
            raise ConnectionError(f"the Spark master's status page is not JSON yet: {body[:80]!r}") from None

    def alive_workers(self) -> list[str]:
        return [w["host"] + ":" + str(w["port"]) for w in self.status()["workers"] if w["state"] == "ALIVE"]

    def wait_for_workers(self, timeout: float = 60.0) -> None:
        expected = {f"{LOOPBACK}:{w.port}" for w in self.workers if w.alive}

        def registered() -> bool:
            for daemon in (self.master, *self.workers):
                if daemon is not None and daemon.process is not None and not daemon.alive:
                    raise RuntimeError(f"{daemon.name} exited; see {daemon.log_path}")
            return expected <= set(self.alive_workers())

        wait_for(registered, timeout, f"{len(expected)} workers registered with {self.master_url}")

    def worker_of(self, executor_dir: str) -> int:
        """Which worker an executor's working directory (`<work-dir>/<app>/<executor id>`, where
        its Python workers run) belongs to."""
        path = Path(executor_dir).resolve()
        for i, worker in enumerate(self.workers):
            if path.is_relative_to((worker.directory / "work").resolve()):
                return i
        raise ValueError(f"{executor_dir} is no executor directory of this cluster")

    def app_conf(self, executor_memory: str = "512m") -> dict[str, str]:
        """Settings of an application on this cluster: one executor of one core per worker, small
        heaps, and everything on loopback."""
        conf = {
            "spark.executor.cores": str(self.worker_cores),
            "spark.executor.memory": executor_memory,
            "spark.driver.memory": executor_memory,
            "spark.cores.max": str(self.worker_cores * len(self.workers)),
            "spark.executorEnv.SPARK_LOCAL_IP": LOOPBACK,
            # a task lost with its executor is re-run at once, not after a locality wait
            "spark.locality.wait": "0s",
        }
        if self.quick_jit:  # an executor is a JVM its worker starts with the application's options
            conf["spark.executor.defaultJavaOptions"] = QUICK_JIT
        return conf

    def stop(self) -> None:
        for daemon in (*self.workers, self.master):
            if daemon is not None:
                daemon.stop()


@contextmanager
def standalone_cluster(
    directory: Path,
    workers: int = 2,
    *,
    worker_memory: str = "1g",
    worker_env: dict[str, str | None] | None = None,
    timeout: float = 90.0,
    quick_jit: bool = False,
) -> Iterator[StandaloneCluster]:
    """A master and `workers` workers (1 core each), stopped (process groups killed) on exit, also
    when starting them failed."""
    cluster = StandaloneCluster(
        Path(directory), worker_memory=worker_memory, worker_env=worker_env or {}, quick_jit=quick_jit
    )
    try:
        cluster.start_master()
        assert cluster.master is not None
        wait_for(lambda: cluster.status(), timeout, "the Spark master's web UI")
        for i in range(workers):
            cluster.start_worker(i)
        cluster.wait_for_workers(timeout)
        yield cluster
    finally:
        cluster.stop()

"""A Spark Connect server for the Spark tests, started as an operator starts one: the pyspark
installation's `sbin/start-connect-server.sh` (in the foreground, `--wait`), bound to loopback on a
free port, its Python workers running this interpreter with this checkout on PYTHONPATH (they
import zkafka to run the data source). Its process group is killed afterwards, JVM and Python
workers included, even when a test fails."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from spark_helpers import wait_until

from zkafka.testing.spark_cluster import LOOPBACK, free_port, source_root, spark_home


def spark_environment(directory: Path) -> dict[str, str]:
    """The environment of a Spark JVM whose Python workers import this checkout's zkafka."""
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_LOCAL_IP=LOOPBACK,
        SPARK_LOCAL_HOSTNAME="localhost",
        SPARK_LOG_DIR=str(directory / "logs"),
        SPARK_PID_DIR=str(directory / "pids"),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        PYTHONPATH=os.pathsep.join(p for p in (source_root(), os.environ.get("PYTHONPATH", "")) if p),
    )
    return env


LOOPBACK_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": LOOPBACK,
    "spark.driver.bindAddress": LOOPBACK,
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
}


def conf_args(conf: dict[str, str]) -> list[str]:
    return [arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")]


@dataclass
class ConnectServer:
    port: int
    log: Path
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"sc://{LOOPBACK}:{self.port}"

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


@contextmanager
def connect_server(directory: Path, master: str = "local[2]") -> Iterator[ConnectServer]:
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = {
        **LOOPBACK_CONF,
        "spark.connect.grpc.binding.address": LOOPBACK,
        "spark.connect.grpc.binding.port": str(port),
        "spark.sql.warehouse.dir": str(directory / "warehouse"),
    }
    script = spark_home() / "sbin" / "start-connect-server.sh"
    log = directory / "connect-server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            ["bash", str(script), "--wait", "--master", master, *conf_args(conf)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=spark_environment(directory),
            cwd=directory,
            start_new_session=True,  # its own group: the JVM and its Python workers die with it
        )
    server = ConnectServer(port, log, process)
    try:
        wait_until(
            lambda: (
                process.poll() is not None
                or "Spark Connect server started at" in log.read_text(errors="replace")
            ),
            180,
            "the Spark Connect server to start",
        )
        assert process.poll() is None, (
            f"the Connect server exited ({process.returncode}):\n{server.log_tail()}"
        )
        yield server
    finally:
        stop_group(process)


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group (Spark's shutdown hooks run), then SIGKILL it: the group may
    outlive its leader (a Python worker still shutting down)."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(30)

"""The command line as a Kafka operator uses it: `--version`, `--log-level` after the command, every
documented command present, one-line errors for expected failures, quiet when piped into `head`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kazoo.client import KazooClient

from zkafka.local.zookeeper import free_port

ZKAFKA = [sys.executable, "-m", "zkafka.cli.main"]


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ZKAFKA, *args], capture_output=True, text=True, timeout=timeout, check=False)


def test_version() -> None:
    result = run("--version")
    assert result.returncode == 0 and result.stdout.strip() == "zkafka 0.1.0"


def test_every_documented_command_exists() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    for line in readme.splitlines():
        if line.startswith("zkafka ") and not line.startswith("zkafka is"):
            words = line.split()
            command = [w for w in words[1:3] if not w.startswith("-")]
            result = run(*command, "--help")
            assert result.returncode == 0, (line, result.stderr)


def test_log_level_is_accepted_after_the_command() -> None:
    dead = f"127.0.0.1:{free_port()}"
    result = run("zk", "ls", "/", "--zookeeper", dead, "--log-level", "ERROR", timeout=90)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "unrecognized arguments" not in result.stderr


def test_server_start_without_zookeeper_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text(
        "broker.id=1\n"
        f"zookeeper.connect=127.0.0.1:{free_port()}\n"
        "zookeeper.connection.timeout.ms=2000\n"
        f"log.dirs={tmp_path / 'logs'}\n"
        "listeners=PLAINTEXT://127.0.0.1:0\n"
    )
    result = run("server-start", str(props), timeout=60)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "error: broker failed to start: could not connect to ZooKeeper" in result.stderr


def test_output_piped_into_head_ends_quietly(zk_connect: str) -> None:
    zk = KazooClient(hosts=zk_connect)
    zk.start(15)
    try:
        for i in range(3000):
            zk.create(f"/many/node-{i:05d}", b"x" * 20, makepath=True)
    finally:
        zk.stop()
        zk.close()
    shell = f"{' '.join(ZKAFKA)} zk tree / --zookeeper {zk_connect} | head -1"
    result = subprocess.run(shell, shell=True, capture_output=True, text=True, timeout=120, check=False)
    assert result.stdout.strip()
    assert "Traceback" not in result.stderr and "BrokenPipeError" not in result.stderr, result.stderr

import signal
import subprocess
import sys
import time

import pytest

from zkafka.local.zookeeper import (
    DEFAULT_HEAP_OPTS,
    ZooKeeperServer,
    four_letter_word,
    free_port,
    heap_options,
)


def test_fixture_server_answers(zookeeper_server: ZooKeeperServer) -> None:
    assert four_letter_word(zookeeper_server.host, zookeeper_server.port, "ruok") == "imok"


def _java_flags(data_dir) -> list[str]:
    pid = int((data_dir / "zookeeper.pid").read_text().split()[0])
    return open(f"/proc/{pid}/cmdline", "rb").read().decode().split("\0")


@pytest.mark.parametrize("quick_jit", [False, True])
def test_cli_zookeeper_start_stops_on_sigterm(tmp_path, quick_jit: bool) -> None:
    """A standalone server answers, and stops on SIGTERM; its JVM stops the JIT at C1 only when
    asked (`--quick-jit`, what local clusters pass): a long-running server gets C2."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "zkafka.cli.main",
            "zookeeper-start",
            "--port",
            str(port),
            "--data-dir",
            str(tmp_path / "zk"),
            *(["--quick-jit"] if quick_jit else []),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert f"127.0.0.1:{port}" in line
        assert four_letter_word("127.0.0.1", port) == "imok"
        assert ("-XX:TieredStopAtLevel=1" in _java_flags(tmp_path / "zk")) is quick_jit
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        deadline = time.monotonic() + 10
        while four_letter_word("127.0.0.1", port, timeout=0.2) is not None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert four_letter_word("127.0.0.1", port, timeout=0.2) is None
        assert (tmp_path / "zk" / "zoo.cfg").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cli_zookeeper_start_runs_a_users_zoo_cfg(tmp_path) -> None:
    """`zookeeper-start zoo.cfg` runs the file as given (QuorumPeerMain; standalone without server.N
    lines) and records the Java server's pid next to it."""
    from zkafka.local.zookeeper import PID_FILE, server_mode
    from zkafka.testing.polling import wait_for

    port = free_port()
    cfg = tmp_path / "zoo.cfg"
    cfg.write_text(
        f"tickTime=500\ndataDir={tmp_path / 'data'}\nclientPort={port}\nclientPortAddress=127.0.0.1\n"
        "admin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\n"
    )
    cmd = [sys.executable, "-m", "zkafka.cli.main", "zookeeper-start", str(cfg)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert f"127.0.0.1:{port}" in proc.stdout.readline()
        # `ruok` answers before the server serves; `srvr` only once it does
        wait_for(lambda: server_mode("127.0.0.1", port) == "standalone", 30, "the server to serve")
        assert int((tmp_path / PID_FILE).read_text()) != proc.pid
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cli_zookeeper_start_refuses_a_missing_config(tmp_path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", "zookeeper-start", str(tmp_path / "nope.cfg")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0 and "nope.cfg" in result.stderr


def test_heap_comes_from_kafka_heap_opts_as_in_kafkas_start_scripts() -> None:
    assert heap_options({}) == [DEFAULT_HEAP_OPTS] == ["-Xmx512m"]
    assert heap_options({"KAFKA_HEAP_OPTS": "  "}) == ["-Xmx512m"]
    assert heap_options({"KAFKA_HEAP_OPTS": "-Xmx2g -Xms2g"}) == ["-Xmx2g", "-Xms2g"]


def test_a_started_server_runs_with_the_heap_it_was_given(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_HEAP_OPTS", "-Xmx320m -Xms32m")
    with ZooKeeperServer(data_dir=tmp_path) as server:
        assert server.process is not None
        with open(f"/proc/{server.process.pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        assert b"-Xmx320m" in argv and b"-Xms32m" in argv
        assert four_letter_word(server.host, server.port) == "imok"


def test_free_ports_picked_at_once_by_two_processes_differ() -> None:
    """Two processes picking ports at the same time (two test workers, two `cluster up`) both see
    a port free until one binds it: the claim `free_port` records for every port it hands out
    keeps the other from getting the same one (a CI run lost a module's brokers to that)."""
    script = "from zkafka.local.zookeeper import free_port\nprint(*[free_port() for _ in range(300)])"
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE) for _ in range(3)]
    mine = [free_port() for _ in range(300)]
    theirs = [int(p) for proc in procs for p in proc.communicate(timeout=60)[0].split()]
    assert all(proc.returncode == 0 for proc in procs) and len(theirs) == 900
    assert len(set(mine + theirs)) == 1200

"""`zkafka.chaos.targets` on this machine's own processes: the process behind a listening port is
found through /proc, a captured process is started again from its command line, addresses of
this machine are told from others, and a cluster with a broker elsewhere refuses process faults."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from zkafka.chaos.targets import (
    LocalProcess,
    ProcessCluster,
    RemoteBroker,
    alive,
    is_local_address,
    listening_pid,
)
from zkafka.testing.polling import wait_for


def test_the_process_listening_on_a_port_is_found() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert listening_pid(port) == os.getpid()
    assert listening_pid(port) is None


def test_a_captured_process_is_restarted_with_its_directory_environment_and_output(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    script = "import os, time; print(os.getcwd(), os.environ['CHAOS_MARK'], flush=True); time.sleep(60)"
    with out.open("ab") as f:
        first = subprocess.Popen(
            [sys.executable, "-c", script], cwd=tmp_path, env={**os.environ, "CHAOS_MARK": "m1"}, stdout=f
        )
    captured = None
    try:
        wait_for(lambda: out.read_text().count("\n") >= 1, timeout=30, what="the first line")  # it runs
        captured = LocalProcess.capture(first.pid)
        assert captured.environ["CHAOS_MARK"] == "m1"
        assert captured.cwd == str(tmp_path) and captured.output == str(out)
        captured.kill()
        first.wait(10)
        captured.restart()
        assert captured.pid != first.pid and alive(captured.pid)
        wait_for(lambda: out.read_text().count("\n") >= 2, timeout=30, what="the second line")
    finally:
        first.kill()
        if captured is not None:
            captured.kill()
    assert out.read_text().splitlines() == [f"{tmp_path} m1"] * 2  # same directory, environment, file


def test_local_addresses_are_told_from_others() -> None:
    assert is_local_address("127.0.0.1") and is_local_address("localhost")
    assert not is_local_address("192.0.2.1")  # TEST-NET-1, never assigned here
    assert not is_local_address("no-such-host.invalid")


def test_process_faults_are_refused_when_a_broker_runs_elsewhere() -> None:
    cluster = ProcessCluster(
        "192.0.2.1:9092",
        "192.0.2.1:2181",
        {1: RemoteBroker("192.0.2.1", 9092, None), 2: RemoteBroker("x", 1, None)},
    )
    refused = cluster.refusals(["kill", "pause", "partition", "zk-kill"])
    assert [line.split(":")[0] for line in refused] == ["kill", "pause", "partition", "zk-kill"]
    assert "brokers [1, 2] are not processes of this machine" in refused[0]
    assert cluster.refusals([]) == []

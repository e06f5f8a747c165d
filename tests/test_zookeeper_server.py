import signal
import subprocess
import sys
import time

from zkafka.local.zookeeper import ZooKeeperServer, four_letter_word, free_port


def test_fixture_server_answers(zookeeper_server: ZooKeeperServer) -> None:
    assert four_letter_word(zookeeper_server.host, zookeeper_server.port, "ruok") == "imok"


def test_cli_zookeeper_start_stops_on_sigterm(tmp_path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "zkafka.cli.main", "zookeeper-start", "--port", str(port),
         "--data-dir", str(tmp_path / "zk")],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert f"127.0.0.1:{port}" in line
        assert four_letter_word("127.0.0.1", port) == "imok"
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

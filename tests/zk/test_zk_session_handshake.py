"""A connection the server accepts and never answers must not cost the session.

ZooKeeper 3.8 binds its client port before it has loaded its database; a connection closed in that
window hits a NullPointerException and stays open, unanswered. kazoo waited the whole session timeout
for the handshake's answer, so it came back after the restarted server had already expired the session
(seen as a broker re-registering after a ZooKeeper outage). A proxy between the session and a real
ZooKeeper plays that server: it drops the connection, black-holes the next one, then forwards again.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from zkafka.local.zookeeper import ZooKeeperServer, free_port
from zkafka.zk.session import ZkSession, handshake_timeout_s


class BlackHoleProxy:
    """Forwards loopback TCP to `target`; in black-hole mode it accepts connections and never answers."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self.black_hole = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._sockets.append(client)
            if self.black_hole.is_set():
                continue  # held open, never read, never answered
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._sockets.append(upstream)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def drop_connections(self) -> None:
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        self.drop_connections()


@pytest.fixture
def proxy(zookeeper_server: ZooKeeperServer) -> Iterator[BlackHoleProxy]:
    p = BlackHoleProxy((zookeeper_server.host, zookeeper_server.port))
    try:
        yield p
    finally:
        p.close()


def test_handshake_timeout_is_a_third_of_the_session_timeout() -> None:
    assert handshake_timeout_s(6000) == pytest.approx(2.0)
    assert handshake_timeout_s(18000) == pytest.approx(6.0)


@pytest.mark.timeout(60)
def test_session_survives_a_connection_that_is_accepted_and_never_answered(proxy: BlackHoleProxy) -> None:
    session = ZkSession(f"127.0.0.1:{proxy.port}", session_timeout_ms=6000)
    try:
        session.kazoo.ensure_path("/handshake")
        session_id = session.kazoo.client_id[0]

        proxy.black_hole.set()
        proxy.drop_connections()  # the server sees the client go: the session's 6 s start now
        time.sleep(0.5)  # kazoo reconnects at once and is held by the black hole
        proxy.black_hole.clear()

        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not session.kazoo.connected:
            time.sleep(0.05)
        assert session.kazoo.connected, "the session did not reconnect"
        assert session.kazoo.client_id[0] == session_id, "the session expired while a handshake hung"
        assert session.kazoo.exists("/handshake") is not None
    finally:
        session.close()

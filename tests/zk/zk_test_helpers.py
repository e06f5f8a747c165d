"""Helpers for the zk tests: polling and forcing a ZooKeeper session to expire."""

from __future__ import annotations

import time
from collections.abc import Callable

from kazoo.client import KazooClient

from zkafka.zk.session import ZkSession


def wait_until(condition: Callable[[], object], timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def expire_session(session: ZkSession, timeout: float = 15.0) -> int:
    """Make the server expire `session`'s ZooKeeper session (the usual trick: open a second connection
    with the same session id and password, then close it), and wait until the client has a new session.
    Returns the old session id."""
    client_id = session.kazoo.client_id
    assert client_id is not None
    twin = KazooClient(hosts=session.connect_string.hosts, client_id=client_id, timeout=10)
    twin.start(timeout=10)
    twin.stop()
    twin.close()
    old = client_id[0]
    wait_until(
        lambda: session.connected and session.session_id not in (None, old),
        timeout,
        "a new ZooKeeper session after expiry",
    )
    return old

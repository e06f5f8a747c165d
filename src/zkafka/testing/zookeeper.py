"""Test harness pieces shared by the test suite and benchmarks: one real ZooKeeper per session,
a fresh chroot per test (kazoo's harness does the same)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from kazoo.client import KazooClient

from zkafka.local.zookeeper import ZooKeeperServer


def new_chroot(prefix: str = "zkafka-test") -> str:
    return f"/{prefix}-{uuid.uuid4().hex[:12]}"


@contextmanager
def chrooted(server: ZooKeeperServer, *, create: bool = True) -> Iterator[str]:
    """A connect string `host:port/<fresh chroot>`; the chroot is removed afterwards."""
    chroot = new_chroot()
    admin = KazooClient(hosts=server.connect_string, timeout=10)
    admin.start(timeout=10)
    try:
        if create:
            admin.ensure_path(chroot)
        yield f"{server.connect_string}{chroot}"
    finally:
        try:
            admin.delete(chroot, recursive=True)
        except Exception:
            pass
        admin.stop()
        admin.close()

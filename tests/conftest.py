"""Fixtures: one real ZooKeeper server for the whole session, a fresh chroot per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from zkafka.testing.zookeeper import chrooted
from zkafka.zk.server import ZooKeeperServer


@pytest.fixture(scope="session")
def zookeeper_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(data_dir=tmp_path_factory.mktemp("zookeeper"), force_sync=False)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def zk_connect(zookeeper_server: ZooKeeperServer) -> Iterator[str]:
    """`127.0.0.1:<port>/<fresh chroot>`, the chroot already created."""
    with chrooted(zookeeper_server) as connect:
        yield connect

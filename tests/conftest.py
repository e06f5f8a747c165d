"""Fixtures: one real ZooKeeper server for the whole session, a fresh chroot per test.

Tiers (`make test-fast` runs the first): every test is marked by what it needs, from its fixtures
and its directory, so a developer can run a tier alone:
* no marker: pure tests (codecs, storage, config, units), seconds;
* `cluster`: a real ZooKeeper and usually broker processes;
* `spark`: a local Spark session.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.zookeeper import chrooted


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = str(item.path)
        if "/tests/spark/" in path:
            item.add_marker(pytest.mark.spark)
        elif "zookeeper_server" in getattr(item, "fixturenames", ()) or "/tests/interop/" in path:
            item.add_marker(pytest.mark.cluster)


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

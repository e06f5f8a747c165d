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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = str(item.path)
        if "/tests/spark/" in path:
            item.add_marker(pytest.mark.spark)
        elif "zookeeper_server" in getattr(item, "fixturenames", ()) or "/tests/interop/" in path:
            item.add_marker(pytest.mark.cluster)
    # Workers take modules in collection order (`--no-loadscope-reorder`): Spark first (minutes of
    # JVM work), then the modules with a `slow` test, so that none of them starts last and runs
    # alone at the end while the other worker idles.
    if hasattr(config, "workerinput"):  # an xdist worker (workers collect; the controller schedules)
        slow = {item.path for item in items if item.get_closest_marker("slow")}
        items.sort(key=lambda item: (item.get_closest_marker("spark") is None, item.path not in slow))


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, absent under -p no:xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`make test` runs pytest-xdist with `--dist loadfile`: a module's tests stay on one worker
    (its module-scoped brokers start once). On top of that, all Spark tests go to one worker: one
    SparkSession, one standalone Spark cluster and one shared Kafka cluster instead of one per
    worker. (xdist's own `--dist loadgroup` cannot do it under pytest 9: it renames node ids
    through an attribute pytest no longer reads.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SparkTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = super()._split_scope(nodeid)
            return "tests/spark/" if module.startswith("tests/spark/") else module

    return SparkTogether(config, log)


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

"""Fixtures of the Spark tests: ONE SparkSession for the whole test session (Spark's start-up
is the expensive part), and one 2-broker cluster shared by the tests that do not kill brokers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster

CLUSTER_OVERRIDES = {
    # retention runs often, so a test can watch it delete a segment (failOnDataLoss)
    "log.retention.check.interval.ms": "300",
    "zookeeper.session.timeout.ms": "6000",
    "replica.lag.time.max.ms": "5000",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from zkafka.spark.session import local_session

    session = local_session("zkafka-tests", master="local[2]", shuffle_partitions=2)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(
        zookeeper_server, tmp_path_factory.mktemp("spark-cluster"), brokers=2, overrides=CLUSTER_OVERRIDES
    ) as c:
        yield c


@pytest.fixture
def bootstrap(cluster: LocalCluster) -> str:
    return cluster.bootstrap_servers

"""Fixtures of the Spark tests: ONE SparkSession for the whole test session (Spark's start-up
is the expensive part), one 2-broker cluster shared by the tests that do not kill brokers, and,
for the tests that need them, a 3-broker cluster and a Spark standalone cluster."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster
from zkafka.testing.spark_cluster import QUICK_JIT, StandaloneCluster, standalone_cluster

CLUSTER_OVERRIDES = {
    # retention runs often, so a test can watch it delete a segment (failOnDataLoss)
    "log.retention.check.interval.ms": "300",
    "zookeeper.session.timeout.ms": "6000",
    "replica.lag.time.max.ms": "5000",
}


@pytest.fixture(scope="session", autouse=True)
def quick_spark_jvms() -> Iterator[None]:
    """Every driver JVM these tests start through `spark-submit` (this process's session, the
    drivers run as processes of their own, Spark Connect's server, `spark-pipelines`, the demo)
    runs with `QUICK_JIT`: 30 % less CPU for the same tests on two cores. `SPARK_SUBMIT_OPTS` is
    the launcher's variable for the driver's JVM options; a developer's own value wins."""
    before = os.environ.get("SPARK_SUBMIT_OPTS")
    if before is None:
        os.environ["SPARK_SUBMIT_OPTS"] = QUICK_JIT
    yield
    if before is None:
        os.environ.pop("SPARK_SUBMIT_OPTS", None)


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


@pytest.fixture(scope="session")
def three_brokers(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    """A 3-broker cluster for the standalone-cluster tests (partition leaders on every broker)."""
    with running_cluster(
        zookeeper_server, tmp_path_factory.mktemp("spark-3-brokers"), brokers=3, overrides=CLUSTER_OVERRIDES
    ) as c:
        yield c


@pytest.fixture(scope="session")
def spark_standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A Spark master and two 1-core workers, separate JVMs on loopback (stopped, process groups
    killed, even when a test fails)."""
    with standalone_cluster(tmp_path_factory.mktemp("spark-standalone"), workers=2, quick_jit=True) as sc:
        yield sc

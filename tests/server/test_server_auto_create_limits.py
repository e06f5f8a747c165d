"""Auto-creation through Metadata counts against KIP-578's limits: one request naming thousands of
unknown topics cannot create more partitions than `max.partitions` allows, and the refusals are
summarised in the broker's log rather than written one line each."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from zkafka.client.connection import BrokerConnection
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol.messages import MetadataRequest, MetadataResponse
from zkafka.testing.cluster import running_cluster
from zkafka.testing.polling import wait_for

MAX_PARTITIONS = 5


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    overrides = {
        "auto.create.topics.enable": "true",
        "num.partitions": "1",
        "max.partitions": str(MAX_PARTITIONS),
    }
    with running_cluster(
        zookeeper_server, tmp_path_factory.mktemp("auto-create"), brokers=1, overrides=overrides
    ) as c:
        yield c


def _metadata(cluster: LocalCluster, names: list[str]) -> MetadataResponse:
    async def ask() -> MetadataResponse:
        conn = await BrokerConnection.open("127.0.0.1", cluster.brokers[1].port, timeout=30)
        try:
            request = MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names],
                allow_auto_topic_creation=True,
            )
            return await conn.send(request, version=8, timeout=60)  # type: ignore[return-value]
        finally:
            conn.close()

    return asyncio.run(ask())


def test_a_metadata_flood_of_unknown_topics_creates_only_what_the_limit_allows(cluster: LocalCluster) -> None:
    names = [f"flood-{i:04d}" for i in range(300)]
    _metadata(cluster, names)
    known = _metadata(cluster, [])  # empty list at v8: no topics named, none created
    # The topics reach ZooKeeper inside the request; the broker's metadata cache learns of them
    # from the controller's UpdateMetadata a moment later (as in Kafka), so wait for that, then
    # check that no more than the limit were created.
    wait_for(lambda: len(_flood_topics(cluster)) >= MAX_PARTITIONS, 30, "the created topics in Metadata")
    assert len(_flood_topics(cluster)) == MAX_PARTITIONS
    assert known.controller_id >= 0
    text = cluster.brokers[1].log_path.read_text()
    refusals = [line for line in text.splitlines() if "auto-creation of flood-" in line]
    assert 1 <= len(refusals) <= 2, refusals  # one line, the rest counted


def _flood_topics(cluster: LocalCluster) -> list[str]:
    return [t for t in asyncio.run(_all_topics(cluster)) if t.startswith("flood-")]


async def _all_topics(cluster: LocalCluster) -> list[str]:
    conn = await BrokerConnection.open("127.0.0.1", cluster.brokers[1].port)
    try:
        response = await conn.send(MetadataRequest(topics=None), version=8)
        assert isinstance(response, MetadataResponse)
        return [t.name for t in response.topics]
    finally:
        conn.close()

"""Which controller Metadata and DescribeCluster name while a failover is under way.

The rule is `zkafka.server.services.controller_for_clients`: the cache's controller (the last
UpdateMetadata's) unless /controller, as this broker last read it, names another broker the cache
knows. The cluster test of a controller SIGKILL (tests/cluster/test_cluster_controller.py) runs it
end to end; these pin each branch against a real metadata cache.
"""

from __future__ import annotations

from zkafka.server.metadata_cache import BrokerEndpoint, LiveBroker, MetadataCache
from zkafka.server.services import controller_for_clients


def _cache(controller: int, brokers: list[int]) -> MetadataCache:
    cache = MetadataCache()
    live = [LiveBroker(b, (BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + b, 0),)) for b in brokers]
    cache.update(controller, 1, live, [])
    return cache


def test_the_cache_answers_while_it_agrees_with_zookeeper() -> None:
    assert controller_for_clients(_cache(1, [1, 2, 3]), 1) == 1


def test_a_new_controller_in_zookeeper_is_named_before_its_first_update_metadata() -> None:
    # broker 1 was killed; 3 won /controller and has not sent UpdateMetadata yet
    assert controller_for_clients(_cache(1, [1, 2, 3]), 3) == 3


def test_a_controller_the_cache_does_not_know_is_not_named() -> None:
    # clients could not connect to a broker missing from the brokers list of the same answer
    assert controller_for_clients(_cache(1, [1, 2]), 3) == 1


def test_an_empty_controller_znode_leaves_the_cache_answer() -> None:
    assert controller_for_clients(_cache(2, [1, 2, 3]), -1) == 2
    assert controller_for_clients(_cache(-1, [1, 2, 3]), -1) == -1

"""The replication throttles of a reassignment, as kafka-reassign-partitions sets and clears them in
ZooKeeper (KIP-73).

`--execute --throttle R`: every partition that moves gets its current replicas in the topic config
`leader.replication.throttled.replicas` and its added replicas in
`follower.replication.throttled.replicas` (`partition:broker` entries); every broker taking part (the
current and the new replicas) gets `leader.replication.throttled.rate` and
`follower.replication.throttled.rate` = R in its dynamic config `/config/brokers/<id>`. Each write is
followed by the change notification, so brokers apply it at once. `--verify`, once every partition
has finished, removes the rates from every broker and the two keys from the plan's topics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import ConfigType, TopicPartition

__all__ = [
    "BROKER_RATES", "TOPIC_REPLICAS", "ConfigChanges", "clear_throttles", "set_throttles",
    "throttled_replicas", "zk_config_changes",
]  # fmt: skip

LEADER_RATE, FOLLOWER_RATE = "leader.replication.throttled.rate", "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
BROKER_RATES = (LEADER_RATE, FOLLOWER_RATE)
TOPIC_REPLICAS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)


def throttled_replicas(
    current: Mapping[TopicPartition, Sequence[int]], plan: Mapping[TopicPartition, Sequence[int]]
) -> dict[str, dict[str, str]]:
    """topic -> {leader key: "p:b,...", follower key: "p:b,..."} for the partitions that move."""
    leaders: dict[str, list[str]] = {}
    followers: dict[str, list[str]] = {}
    for tp, target in sorted(plan.items()):
        existing = list(current.get(tp, ()))
        if list(target) == existing:
            continue
        leaders.setdefault(tp.topic, []).extend(f"{tp.partition}:{b}" for b in existing)
        followers.setdefault(tp.topic, []).extend(f"{tp.partition}:{b}" for b in target if b not in existing)
    return {
        t: {LEADER_REPLICAS: ",".join(leaders.get(t, [])), FOLLOWER_REPLICAS: ",".join(followers.get(t, []))}
        for t in sorted(set(leaders) | set(followers))
    }


ConfigChanges = Callable[[ConfigType, str, Mapping[str, str | None]], None]
"""Set (value) or remove (None) configs of a topic or a broker, leaving its other configs: ZooKeeper
(`zk_config_changes`) or the brokers' IncrementalAlterConfigs."""


def zk_config_changes(zk: KafkaZkClient) -> ConfigChanges:
    """`ConfigChanges` written straight to `/config/<type>/<name>`, with the change notification;
    nothing is written where nothing changes."""

    def alter(config_type: ConfigType, name: str, changes: Mapping[str, str | None]) -> None:
        config = zk.get_entity_config(config_type, name)
        updated = {k: v for k, v in config.items() if k not in changes}
        updated.update({k: v for k, v in changes.items() if v is not None})
        if updated != config:
            zk.set_entity_config(config_type, name, updated)

    return alter


def set_throttles(
    alter: ConfigChanges,
    current: Mapping[TopicPartition, Sequence[int]],
    plan: Mapping[TopicPartition, Sequence[int]],
    rate: int,
) -> tuple[list[str], list[int]]:
    """Write the throttles of `plan`; (topics, brokers) throttled."""
    by_topic = throttled_replicas(current, plan)
    for topic, keys in by_topic.items():
        alter(ConfigType.TOPIC, topic, {k: v for k, v in keys.items() if v})
    brokers = sorted({b for tp in plan for b in plan[tp]} | {b for tp in plan for b in current.get(tp, ())})
    for broker in brokers:
        alter(ConfigType.BROKER, str(broker), dict.fromkeys(BROKER_RATES, str(rate)))
    return sorted(by_topic), brokers


def clear_throttles(alter: ConfigChanges, topics: Iterable[str], brokers: Iterable[int]) -> None:
    """Remove the rates from `brokers` and the throttled-replica lists from `topics`."""
    for broker in brokers:
        alter(ConfigType.BROKER, str(broker), dict.fromkeys(BROKER_RATES))
    for topic in topics:
        alter(ConfigType.TOPIC, topic, dict.fromkeys(TOPIC_REPLICAS))

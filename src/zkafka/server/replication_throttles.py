"""Replication throttles wired into a broker (KIP-73): the leader and follower `ReplicationQuota`s
(`zkafka.quotas.replication`), their bounds from the dynamic broker configs
`leader.replication.throttled.rate` / `follower.replication.throttled.rate` (applied on every
reload of `/config/brokers/<id>` and `<default>`), their partitions from the topic configs
`leader.replication.throttled.replicas` / `follower.replication.throttled.replicas` (read at start
and on every topic config change).

The fetch handler consults `leader` when a follower fetches (`apis/fetch.py`); the replica fetchers
consult `follower` when they build their requests (`replica_fetcher.py`). A throttled-replicas
value that does not parse is logged naming the topic's znode and read as no throttle.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from zkafka.config import BrokerConfig
from zkafka.quotas.replication import ReplicationQuota, parse_throttled_replicas
from zkafka.server.topic_configs import all_topic_overrides
from zkafka.server.zookeeper import ZooKeeper
from zkafka.zk.model import ConfigType
from zkafka.zk.znodes import ConfigEntityZNode

__all__ = ["FOLLOWER_REPLICAS", "LEADER_REPLICAS", "ReplicationThrottles"]

log = logging.getLogger(__name__)

LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"


class ReplicationThrottles:
    def __init__(self, broker_id: int, config: BrokerConfig) -> None:
        windows = {"samples": config.replication_quota_window_num,
                   "window_s": config.replication_quota_window_size_seconds}  # fmt: skip
        self.leader = ReplicationQuota(broker_id, config.leader_replication_throttled_rate, **windows)
        self.follower = ReplicationQuota(broker_id, config.follower_replication_throttled_rate, **windows)

    async def load(self, zk: ZooKeeper) -> None:
        for topic, overrides in (await zk.run(all_topic_overrides)).items():
            self.update_topic(topic, overrides)

    def reconfigure(self, config: BrokerConfig) -> None:
        """The effective broker config changed (dynamic configs): take its rates."""
        if (config.leader_replication_throttled_rate, config.follower_replication_throttled_rate) != (
            self.leader.bound,
            self.follower.bound,
        ):
            self.leader.update_bound(config.leader_replication_throttled_rate)
            self.follower.update_bound(config.follower_replication_throttled_rate)
            log.info(
                "replication throttles: leader %d B/s, follower %d B/s",
                self.leader.bound,
                self.follower.bound,
            )

    def update_topic(self, topic: str, overrides: Mapping[str, str]) -> None:
        for key, quota in ((LEADER_REPLICAS, self.leader), (FOLLOWER_REPLICAS, self.follower)):
            try:
                partitions = parse_throttled_replicas(overrides.get(key, ""), quota.broker_id)
            except ValueError as e:
                log.warning(
                    "znode %s: ignoring %s: %s", ConfigEntityZNode.path(ConfigType.TOPIC, topic), key, e
                )
                partitions = frozenset()
            quota.update_topic(topic, partitions)

"""The coordinators wired into a broker: their internal topics' creation, FindCoordinator, and
the LeaderAndIsr hook, handed to each coordinator's `zkafka.coordinator.runtime`, which loads and
unloads what their partitions hold.

`CoordinatorTopic` is what both coordinators share: an internal topic created on the first
FindCoordinator (reference group-coordinator §1) with its configured partitions, replicas capped
to the live brokers (Kafka refuses instead, which leaves a small cluster without groups or
transactions forever) and fixed topic configs; and the broker leading the partition a key hashes
to. Until that partition has a leader the answer is COORDINATOR_NOT_AVAILABLE and clients retry.

`CoordinatorService` is the group coordinator's (`__consumer_offsets`: `cleanup.policy=compact`,
`segment.bytes=offsets.topic.segment.bytes`, `compression.type=producer`); the transaction
coordinator's is `txn_coordinator_service`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from zkafka.admin import topics as topic_admin
from zkafka.config import BrokerConfig
from zkafka.coordinator.coordinator import GroupConfig, GroupCoordinator
from zkafka.coordinator.store import OffsetsTopicStore, PartitionLeaders
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.server.metadata_cache import MetadataCache
from zkafka.server.zookeeper import ZooKeeper
from zkafka.storage.manager import LogManager
from zkafka.storage.naming import TopicPartition
from zkafka.zk.topic_names import GROUP_METADATA_TOPIC

log = logging.getLogger(__name__)


def offsets_topic_configs(config: BrokerConfig) -> dict[str, str]:
    return {
        "cleanup.policy": "compact",
        "segment.bytes": str(config.offsets_topic_segment_bytes),
        "compression.type": "producer",
    }


@dataclass(frozen=True, slots=True)
class CoordinatorAddress:
    error: ErrorCode
    node_id: int = -1
    host: str = ""
    port: int = -1
    message: str | None = None


class CoordinatorTopic:
    """One coordinator's internal topic: its creation on first use and who leads a partition."""

    def __init__(
        self,
        name: str,
        *,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str],
        min_isr: int | None = None,
        metadata: MetadataCache,
        logs: LogManager,
        zk: ZooKeeper,
    ) -> None:
        self.name = name
        self._partitions = num_partitions
        self._rf = replication_factor
        self.configs = dict(configs)
        self._min_isr = min_isr
        self._metadata = metadata
        self._logs = logs
        self._zk = zk
        self._creating: asyncio.Task[None] | None = None

    def apply_configs(self) -> None:
        """Brokers apply a new topic's configs only at restart or on a config change notification;
        the internal topics' are fixed, so a broker that has none yet uses them from the start."""
        lm = self._logs
        if lm.config_for(self.name) is lm.default_config:
            lm.update_topic_config(self.name, lm.default_config.with_overrides(self.configs))

    def stop(self) -> None:
        if self._creating is not None:
            self._creating.cancel()

    def num_partitions(self) -> int:
        known = self._metadata.topic_partitions(self.name)
        return len(known) if known else self._partitions

    def locate(self, partition: int, listener: str) -> CoordinatorAddress:
        """The broker leading `partition` on `listener`; creates the topic when it does not exist."""
        cache = self._metadata
        if not cache.contains_topic(self.name):
            self._ensure_topic()
            return CoordinatorAddress(
                ErrorCode.COORDINATOR_NOT_AVAILABLE, message=f"{self.name} is being created"
            )
        info = cache.partition(self.name, partition)
        if info is None or info.leader < 0 or not cache.alive(info.leader):
            return CoordinatorAddress(
                ErrorCode.COORDINATOR_NOT_AVAILABLE, message=f"{self.name}-{partition} has no leader"
            )
        ep = cache.brokers[info.leader].endpoint(listener)
        if ep is None:
            return CoordinatorAddress(
                ErrorCode.COORDINATOR_NOT_AVAILABLE,
                message=f"broker {info.leader} has no {listener} listener",
            )
        return CoordinatorAddress(ErrorCode.NONE, info.leader, ep.host, ep.port)

    def _ensure_topic(self) -> None:
        if self._creating is None or self._creating.done():
            self._creating = asyncio.ensure_future(self._create_topic())

    async def _create_topic(self) -> None:
        live = sorted(self._metadata.brokers)
        if not live:
            return
        rf = min(self._rf, len(live))
        configs = dict(self.configs)
        if self._min_isr is not None:
            # capped with the replication factor: a min ISR above it would refuse every write
            configs["min.insync.replicas"] = str(min(self._min_isr, rf))
        try:
            await self._zk.run(
                topic_admin.create_topic,
                name=self.name,
                num_partitions=self._partitions,
                replication_factor=rf,
                configs=configs,
                assignment=None,
                live_brokers=live,
                defaults=self._logs.default_config,
                allow_internal=True,
            )
            log.info("created %s with %d partitions, replication factor %d", self.name, self._partitions, rf)
        except KafkaError as e:
            if e.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                log.warning("creating %s failed: %s", self.name, e)
        except Exception:
            log.exception("creating %s failed", self.name)


class CoordinatorService:
    def __init__(
        self,
        broker_id: int,
        config: BrokerConfig,
        replicas: PartitionLeaders,
        metadata: MetadataCache,
        logs: LogManager,
        zk: ZooKeeper,
    ) -> None:
        self._config = cfg = config
        self._metadata = metadata
        self.topic = CoordinatorTopic(
            GROUP_METADATA_TOPIC,
            num_partitions=cfg.offsets_topic_num_partitions,
            replication_factor=cfg.offsets_topic_replication_factor,
            configs=offsets_topic_configs(cfg),
            metadata=metadata,
            logs=logs,
            zk=zk,
        )
        self.store = OffsetsTopicStore(
            replicas,
            compression=cfg.offsets_topic_compression_codec,
            commit_timeout_ms=cfg.offsets_commit_timeout_ms,
            required_acks=cfg.offsets_commit_required_acks,
        )
        self.coordinator = GroupCoordinator(
            broker_id,
            GroupConfig.from_broker(cfg),
            self.store,
            num_partitions=self.topic.num_partitions,
            topic_exists=self._topic_exists,
        )

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> None:
        self.topic.apply_configs()
        self.coordinator.start()

    async def stop(self) -> None:
        self.topic.stop()
        await self.coordinator.stop()

    def on_leadership_changed(self, changes: Iterable[TopicPartition]) -> None:
        """After LeaderAndIsr: load the groups of `__consumer_offsets` partitions now led here,
        unload those no longer led here."""
        self.coordinator.runtime.leadership_changed(changes)

    # -- topology ---------------------------------------------------------------------------------
    def num_partitions(self) -> int:
        return self.topic.num_partitions()

    def _topic_exists(self, tp: TopicPartition) -> bool:
        return self._metadata.partition(tp.topic, tp.partition) is not None

    async def find_coordinator(self, key: str, listener: str) -> CoordinatorAddress:
        return self.topic.locate(self.coordinator.partition_for(key), listener)

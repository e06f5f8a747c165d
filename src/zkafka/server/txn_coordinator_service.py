"""The transaction coordinator (`zkafka.transactions`) wired into a broker: `__transaction_state`
created on the first FindCoordinator with key type TRANSACTION, loading and unloading its
partitions on LeaderAndIsr, producer ids from the broker's ZooKeeper blocks, markers through
`txn_markers.TxnMarkerChannel`, and the partition leaders' KIP-890 verification
(`txn_verification.TxnVerifier`), both over the inter-broker listener with the broker's security.

`__transaction_state` gets Kafka's configs: `transaction.state.log.num.partitions` partitions
(50), `transaction.state.log.replication.factor` replicas (3, capped to the live brokers as for
`__consumer_offsets`), `min.insync.replicas=transaction.state.log.min.isr` (2, capped to the
replication factor), `segment.bytes=transaction.state.log.segment.bytes`, `cleanup.policy=compact`,
`compression.type=uncompressed`, `unclean.leader.election.enable=false`.
"""

from __future__ import annotations

from collections.abc import Iterable

from zkafka.client.security import ClientSecurity
from zkafka.config import BrokerConfig
from zkafka.coordinator.store import CoordinatorLogStore
from zkafka.server.broker_links import BrokerLinks
from zkafka.server.coordinator_service import CoordinatorAddress, CoordinatorTopic
from zkafka.server.metadata_cache import MetadataCache
from zkafka.server.producer_ids import ProducerIdManager
from zkafka.server.replica_manager import ReplicaManager
from zkafka.server.txn_markers import TransactionalOffsets, TxnMarkerChannel
from zkafka.server.txn_verification import TxnVerifier
from zkafka.server.zookeeper import ZooKeeper
from zkafka.storage.manager import LogManager
from zkafka.storage.naming import TopicPartition
from zkafka.transactions.coordinator import TransactionCoordinator, TxnConfig
from zkafka.zk.topic_names import TRANSACTION_STATE_TOPIC

TXN_REQUEST_TIMEOUT_MS = 5000
"""How long a `__transaction_state` write waits for its replication (Kafka's request timeout)."""


def transaction_topic_configs(config: BrokerConfig) -> dict[str, str]:
    return {
        "cleanup.policy": "compact",
        "segment.bytes": str(config.transaction_state_log_segment_bytes),
        "compression.type": "uncompressed",
        "unclean.leader.election.enable": "false",
    }


class TxnCoordinatorService:
    def __init__(
        self,
        broker_id: int,
        config: BrokerConfig,
        replicas: ReplicaManager,
        metadata: MetadataCache,
        logs: LogManager,
        zk: ZooKeeper,
        producer_ids: ProducerIdManager,
        groups: TransactionalOffsets | None = None,
        security: ClientSecurity | None = None,
    ) -> None:
        listener = config.inter_broker_listener_name
        self.markers = TxnMarkerChannel(
            broker_id,
            replicas,
            metadata,
            BrokerLinks(broker_id, metadata, listener, security, "txn-markers"),
            groups,
        )
        self.topic = CoordinatorTopic(
            TRANSACTION_STATE_TOPIC,
            num_partitions=config.transaction_state_log_num_partitions,
            replication_factor=config.transaction_state_log_replication_factor,
            configs=transaction_topic_configs(config),
            min_isr=config.transaction_state_log_min_isr,
            metadata=metadata,
            logs=logs,
            zk=zk,
        )
        self.store = CoordinatorLogStore(
            replicas, TRANSACTION_STATE_TOPIC, commit_timeout_ms=TXN_REQUEST_TIMEOUT_MS, required_acks=-1
        )
        self.coordinator = TransactionCoordinator(
            broker_id,
            TxnConfig.from_broker(config),
            self.store,
            producer_ids.next_id,
            self.markers,
            num_partitions=self.topic.num_partitions,
        )
        self._verify_links = BrokerLinks(broker_id, metadata, listener, security, "txn-verify")
        self.verifier: TxnVerifier | None = (
            TxnVerifier(broker_id, metadata, self.coordinator, self._verify_links)
            if config.transaction_partition_verification_enable
            else None
        )
        """KIP-890's check before a transaction's first batch on a partition; None when
        `transaction.partition.verification.enable` is false."""

    def start(self) -> None:
        self.topic.apply_configs()
        self.coordinator.start()

    async def stop(self) -> None:
        self.topic.stop()
        await self.coordinator.stop()
        self.markers.close()
        self._verify_links.close()

    def on_leadership_changed(self, changes: Iterable[TopicPartition]) -> None:
        """After LeaderAndIsr: load the `__transaction_state` partitions now led here, unload
        (fence) those no longer led here."""
        self.coordinator.runtime.leadership_changed(changes)

    async def find_coordinator(self, transactional_id: str, listener: str) -> CoordinatorAddress:
        return self.topic.locate(self.coordinator.partition_for(transactional_id), listener)

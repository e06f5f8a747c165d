"""zkafka's own Kafka client: producer, consumer, admin client, and blocking wrappers of each
(`zkafka.client.sync`); consumer groups of both kinds in their own modules: a member of a
broker-coordinated group (`group_consumer.GroupConsumer`, with `group_admin.GroupAdmin` for
listing, describing, deleting and offsets, and the leader's `assignors`) and the seeds' ZooKeeper
consumer (`zk_consumer.ZookeeperConsumer`).

    from zkafka.client import AdminClient, Consumer, Producer, TopicPartition

The names are loaded on first use (PEP 562): importing one submodule, say `zkafka.client.types`
in a Spark worker, does not import the admin client and everything behind it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zkafka.client.admin import (
        AdminClient,
        ClusterDescription,
        ConfigEntry,
        ConfigResource,
        ConfigResourceType,
        ConfigSource,
        NewPartitions,
        NewTopic,
    )
    from zkafka.client.cluster import (
        BrokerMetadata,
        Cluster,
        ClusterMetadata,
        PartitionMetadata,
        TopicMetadata,
        parse_bootstrap,
    )
    from zkafka.client.connection import (
        BrokerConnection,
    )
    from zkafka.client.consumer import (
        Consumer,
    )
    from zkafka.client.errors import (
        BrokerUnavailableError,
        ClientClosedError,
        ClientError,
        ClientTimeoutError,
        ConfigError,
        FatalProducerError,
        KafkaError,
        NoOffsetForPartitionError,
        RecordTooLargeError,
        TransactionAbortableError,
        TransactionStateError,
    )
    from zkafka.client.partitioner import (
        murmur2,
        partition_for_key,
    )
    from zkafka.client.producer import (
        Producer,
    )
    from zkafka.client.types import (
        EARLIEST_TIMESTAMP,
        LATEST_TIMESTAMP,
        ConsumedRecord,
        ConsumerGroupMetadata,
        OffsetAndMetadata,
        OffsetAndTimestamp,
        RecordMetadata,
        TopicPartition,
    )

_HOME: dict[str, str] = {
    "AdminClient": "zkafka.client.admin",
    "BrokerConnection": "zkafka.client.connection",
    "BrokerMetadata": "zkafka.client.cluster",
    "BrokerUnavailableError": "zkafka.client.errors",
    "ClientClosedError": "zkafka.client.errors",
    "ClientError": "zkafka.client.errors",
    "ClientTimeoutError": "zkafka.client.errors",
    "Cluster": "zkafka.client.cluster",
    "ClusterDescription": "zkafka.client.admin",
    "ClusterMetadata": "zkafka.client.cluster",
    "ConfigEntry": "zkafka.client.admin",
    "ConfigError": "zkafka.client.errors",
    "ConfigResource": "zkafka.client.admin",
    "ConfigResourceType": "zkafka.client.admin",
    "ConfigSource": "zkafka.client.admin",
    "ConsumedRecord": "zkafka.client.types",
    "Consumer": "zkafka.client.consumer",
    "ConsumerGroupMetadata": "zkafka.client.types",
    "EARLIEST_TIMESTAMP": "zkafka.client.types",
    "FatalProducerError": "zkafka.client.errors",
    "KafkaError": "zkafka.client.errors",
    "LATEST_TIMESTAMP": "zkafka.client.types",
    "NewPartitions": "zkafka.client.admin",
    "NewTopic": "zkafka.client.admin",
    "NoOffsetForPartitionError": "zkafka.client.errors",
    "OffsetAndMetadata": "zkafka.client.types",
    "OffsetAndTimestamp": "zkafka.client.types",
    "PartitionMetadata": "zkafka.client.cluster",
    "Producer": "zkafka.client.producer",
    "RecordMetadata": "zkafka.client.types",
    "RecordTooLargeError": "zkafka.client.errors",
    "TopicMetadata": "zkafka.client.cluster",
    "TopicPartition": "zkafka.client.types",
    "TransactionAbortableError": "zkafka.client.errors",
    "TransactionStateError": "zkafka.client.errors",
    "murmur2": "zkafka.client.partitioner",
    "parse_bootstrap": "zkafka.client.cluster",
    "partition_for_key": "zkafka.client.partitioner",
}

__all__ = [
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "AdminClient",
    "BrokerConnection",
    "BrokerMetadata",
    "BrokerUnavailableError",
    "ClientClosedError",
    "ClientError",
    "ClientTimeoutError",
    "Cluster",
    "ClusterDescription",
    "ClusterMetadata",
    "ConfigEntry",
    "ConfigError",
    "ConfigResource",
    "ConfigResourceType",
    "ConfigSource",
    "ConsumedRecord",
    "Consumer",
    "ConsumerGroupMetadata",
    "FatalProducerError",
    "KafkaError",
    "NewPartitions",
    "NewTopic",
    "NoOffsetForPartitionError",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "PartitionMetadata",
    "Producer",
    "RecordMetadata",
    "RecordTooLargeError",
    "TopicMetadata",
    "TopicPartition",
    "TransactionAbortableError",
    "TransactionStateError",
    "murmur2",
    "parse_bootstrap",
    "partition_for_key",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))

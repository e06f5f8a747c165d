"""zkafka's own Kafka client: producer, consumer, admin client, and blocking wrappers of each
(`zkafka.client.sync`); consumer groups of both kinds in their own modules: a member of a
broker-coordinated group (`group_consumer.GroupConsumer`, with `group_admin.GroupAdmin` for
listing, describing, deleting and offsets, and the leader's `assignors`) and the seeds' ZooKeeper
consumer (`zk_consumer.ZookeeperConsumer`).

    from zkafka.client import AdminClient, Consumer, Producer, TopicPartition
"""

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
from zkafka.client.connection import BrokerConnection
from zkafka.client.consumer import Consumer
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
from zkafka.client.partitioner import murmur2, partition_for_key
from zkafka.client.producer import Producer
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

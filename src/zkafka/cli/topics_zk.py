"""`zkafka topics --zookeeper`: the topic admin of kafka-topics' old `--zookeeper` path.

`ZkTopicAdmin` answers the calls `zkafka.cli.topics` makes of a `SyncAdminClient` by reading and
writing ZooKeeper directly, as Kafka's AdminZkClient did for kafka-topics.sh --zookeeper: creating
a topic writes `/config/topics/<t>` and `/brokers/topics/<t>` (the controller creates the
partitions), deleting writes `/admin/delete_topics/<t>`, adding partitions rewrites the assignment,
config changes write the override znode and a change notification. No broker is needed for any of
it, and the validation is the brokers' own (`zkafka.admin.topics`).

Only the overrides live in ZooKeeper, so describing a topic's configs shows its overrides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from zkafka.admin import topics as topic_admin
from zkafka.cli.errors import CliError
from zkafka.client.admin import ConfigEntry, ConfigResource, ConfigSource, NewPartitions, NewTopic
from zkafka.client.cluster import NO_LEADER, PartitionMetadata, TopicMetadata
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.storage.config import LogConfig
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import ConfigType, TopicPartition
from zkafka.zk.topic_names import is_internal_topic
from zkafka.zk.znodes import config_entity_name


class ZkTopicAdmin:
    """The `SyncAdminClient` methods `zkafka topics` uses, on a ZooKeeper session."""

    def __init__(self, zk: KafkaZkClient) -> None:
        self.zk = zk

    # -- reading ---------------------------------------------------------------------------------
    def list_topics(self, include_internal: bool = False) -> list[str]:
        return sorted(t for t in self.zk.get_all_topics() if include_internal or not is_internal_topic(t))

    def marked_for_deletion(self) -> set[str]:
        return set(self.zk.get_topic_deletions())

    def describe_topics(self, names: Iterable[str]) -> dict[str, TopicMetadata]:
        """Replicas from the assignment, leader and ISR from the partition states; a replica on a
        broker not registered in ZooKeeper is offline, as the controller sees it."""
        names = list(names)
        assignments = self.zk.get_topic_assignments(names)
        live = set(self.zk.get_all_broker_ids())
        states = self.zk.get_partition_states(
            [TopicPartition(t, p) for t, a in assignments.items() for p in a.partitions]
        )
        topics = {}
        for name in names:
            assignment = assignments.get(name)
            if assignment is None:
                continue  # deleted meanwhile
            partitions = {}
            for p, replicas in sorted(assignment.partitions.items()):
                state = states.get(TopicPartition(name, p))
                lai = state.leader_and_isr if state is not None else None
                partitions[p] = PartitionMetadata(
                    name,
                    p,
                    lai.leader if lai is not None and lai.leader in live else NO_LEADER,
                    lai.leader_epoch if lai is not None else -1,
                    tuple(replicas),
                    tuple(lai.isr) if lai is not None else (),
                    tuple(r for r in replicas if r not in live),
                )
            topics[name] = TopicMetadata(name, partitions, is_internal=is_internal_topic(name))
        return topics

    def describe_configs(
        self, resources: Sequence[ConfigResource], *, include_synonyms: bool = False
    ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        """The topics' overrides (all ZooKeeper holds), each its own only synonym."""
        out = {}
        for r in resources:
            overrides = self.topic_overrides(r.name)
            if not overrides and not self.zk.topic_exists(r.name):
                raise _unknown_topic(r.name)
            source = ConfigSource.DYNAMIC_TOPIC_CONFIG
            out[r] = {
                k: ConfigEntry(k, v, source, synonyms=((k, v, source),) if include_synonyms else ())
                for k, v in sorted(overrides.items())
            }
        return out

    def topic_overrides(self, name: str) -> dict[str, str]:
        return self.zk.get_entity_config(ConfigType.TOPIC, _config_znode(name))

    # -- writing ---------------------------------------------------------------------------------
    def create_topics(
        self, topics: Sequence[NewTopic], timeout_ms: int | None = None
    ) -> dict[str, KafkaError | None]:
        live = sorted(self.zk.get_all_broker_ids())
        results: dict[str, KafkaError | None] = {}
        for topic in topics:
            try:
                topic_admin.create_topic(
                    self.zk,
                    name=topic.name,
                    num_partitions=topic.num_partitions,
                    replication_factor=topic.replication_factor,
                    configs=topic.configs,
                    assignment=topic.assignment,
                    live_brokers=live,
                    defaults=LogConfig(),
                )
                results[topic.name] = None
            except KafkaError as e:
                results[topic.name] = e
        return results

    def create_partitions(
        self, changes: Mapping[str, NewPartitions], timeout_ms: int | None = None
    ) -> dict[str, KafkaError | None]:
        live = sorted(self.zk.get_all_broker_ids())
        results: dict[str, KafkaError | None] = {}
        for name, change in changes.items():
            try:
                topic_admin.create_partitions(
                    self.zk,
                    topic=name,
                    new_total=change.total_count,
                    assignment=change.assignments,
                    live_brokers=live,
                )
                results[name] = None
            except KafkaError as e:
                results[name] = e
        return results

    def delete_topics(
        self, names: Iterable[str], timeout_ms: int | None = None
    ) -> dict[str, KafkaError | None]:
        """Mark for deletion (the controller deletes, if the brokers have delete.topic.enable)."""
        results: dict[str, KafkaError | None] = {}
        for name in names:
            try:
                topic_admin.delete_topic(self.zk, name, deletion_enabled=True)
                results[name] = None
            except KafkaError as e:
                results[name] = e
        return results

    def alter_configs(self, resource: ConfigResource, changes: Mapping[str, str | None]) -> None:
        """Set (value) or remove (None) overrides of a topic."""
        current = self.topic_overrides(resource.name)
        updated = {k: v for k, v in {**current, **changes}.items() if v is not None}
        self.set_topic_overrides(resource.name, updated)

    def set_topic_overrides(self, name: str, config: Mapping[str, str]) -> None:
        """Replace the topic's overrides: the entity znode, then the change notification every broker
        watches (AdminZkClient.changeConfigs). Refused, before anything is written, when a broker
        would refuse it (an invalid override would make every broker ignore the whole change)."""
        znode = _config_znode(name)
        if not self.zk.topic_exists(name):
            raise _unknown_topic(name)
        topic_admin.validate_configs(LogConfig(), config)
        self.zk.set_entity_config(ConfigType.TOPIC, znode, dict(config))


def _unknown_topic(name: str) -> KafkaError:
    return KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")


def _config_znode(name: str) -> str:
    try:
        return config_entity_name(ConfigType.TOPIC, name)
    except ValueError as e:
        raise CliError(str(e)) from None

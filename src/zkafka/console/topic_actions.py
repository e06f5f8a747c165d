"""The topic page's actions, each asked of the brokers first with validate_only (the dry run the
confirmation page shows, with Kafka's own error text when they refuse) and then for real: adding
partitions (CreatePartitions, as kafka-topics --alter --partitions) and setting or removing one
topic config (IncrementalAlterConfigs, as kafka-configs --alter --add-config / --delete-config)."""

from __future__ import annotations

from dataclasses import dataclass

from zkafka.client.admin import ConfigEntry, ConfigResource
from zkafka.console.errors import ConsoleError
from zkafka.console.forms import choice_param, int_param
from zkafka.console.source import ClusterSource

MAX_PARTITIONS = 100_000
"""The most partitions a form may name (a topic's count, or one partition of it)."""
MAX_CONFIG_NAME = 255
MAX_CONFIG_VALUE = 4096
CONFIG_OPS = ("set", "delete")


@dataclass(frozen=True, slots=True)
class PartitionsChange:
    topic: str
    current: int
    total: int


async def partitions_change(source: ClusterSource, topic: str, fields: dict[str, str]) -> PartitionsChange:
    """The change a form asks for, validated by the controller (validate_only): a count not above
    the current one is Kafka's INVALID_PARTITIONS, shown as the controller words it."""
    total = int_param(fields.get("total"), "total partitions", low=1, high=MAX_PARTITIONS)
    if total is None:
        raise ConsoleError(400, "total partitions: give the topic's new partition count")
    current = (await source.admin.describe_topics([topic]))[topic].partition_count
    _checked((await source.admin.create_partitions({topic: total}, validate_only=True))[topic])
    return PartitionsChange(topic, current, total)


async def add_partitions(source: ClusterSource, change: PartitionsChange) -> None:
    _checked((await source.admin.create_partitions({change.topic: change.total}))[change.topic])


def _checked(error: Exception | None) -> None:
    if error is not None:
        raise error  # a KafkaError: its code sets the page's status, its text is the broker's


@dataclass(frozen=True, slots=True)
class ConfigChange:
    topic: str
    name: str
    value: str | None
    """None: remove the override (the topic falls back to the broker's value)."""
    current: ConfigEntry | None


def config_change_fields(topic: str, fields: dict[str, str]) -> ConfigChange:
    """The form's config name, operation and value, checked before anything is sent."""
    name = fields.get("name", "").strip()
    if not name:
        raise ConsoleError(400, "config name: give the config to change, e.g. retention.ms")
    if len(name) > MAX_CONFIG_NAME or any(c.isspace() or not c.isprintable() for c in name):
        raise ConsoleError(
            400, f"config name must be one printable word of at most {MAX_CONFIG_NAME} characters"
        )
    op = choice_param(fields.get("op"), "operation", CONFIG_OPS)
    value = fields.get("value", "")
    if op == "set" and len(value) > MAX_CONFIG_VALUE:
        raise ConsoleError(400, f"a config value is at most {MAX_CONFIG_VALUE} characters")
    return ConfigChange(topic, name, value if op == "set" else None, None)


async def config_preview(source: ClusterSource, change: ConfigChange) -> ConfigChange:
    """The change beside the config's current value and source, after the brokers validated it."""
    configs = await source.admin.describe_topic_configs(change.topic)
    resource = ConfigResource.topic(change.topic)
    await source.admin.alter_configs(resource, {change.name: change.value}, validate_only=True)
    return ConfigChange(change.topic, change.name, change.value, configs.get(change.name))


async def alter_config(source: ClusterSource, change: ConfigChange) -> None:
    await source.admin.alter_configs(ConfigResource.topic(change.topic), {change.name: change.value})

"""Dynamic broker configs (KIP-226): `/config/brokers/<id>` and `/config/brokers/<default>`.

A broker's effective configuration is its server.properties, overridden by the cluster-wide
dynamic default (`<default>`), overridden by its own dynamic config (`<id>`), as in Kafka. Only
the keys Kafka can change without a restart are accepted (`DYNAMIC_BROKER_CONFIGS`); what zkafka
applies at run time:

- the `log.*` topic defaults (retention, segment size and age, cleanup policy, max.message.bytes,
  compression, ...): every log without a topic override takes the new default, and the topics
  with overrides are rebuilt on top of it;
- `leader.replication.throttled.rate` and `follower.replication.throttled.rate`: the replication
  throttles (`replication_throttles.py`);
- `max.connections`, `max.connections.per.ip`, `max.connections.per.ip.overrides` and
  `max.connection.creation.rate`: the connection quotas of every listener.

The thread-pool and cleaner keys (`num.io.threads`, `log.cleaner.threads`, ...) are accepted, kept
and described, and take effect at the next restart (zkafka's pools are sized at start-up). The
dynamic configs are read once before the logs are loaded (`startup_config`, Kafka's order), so
`num.recovery.threads.per.data.dir` and the log defaults set at run time apply to that load.

Changes arrive as `/config/changes` notifications naming `brokers/<id>` or `brokers/<default>`
(any broker, or a tool, may write one); the broker that handled an AlterConfigs also reloads at
once, so its own answer to a following DescribeConfigs already shows the change.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Protocol

from zkafka.config import BrokerConfig
from zkafka.config.broker import BROKER_CONFIG_KEYS, parse_connection_overrides
from zkafka.config.errors import ConfigError
from zkafka.server.topic_configs import read_topic_configs
from zkafka.server.zookeeper import ZooKeeper
from zkafka.storage.config import LogConfig
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import ConfigType
from zkafka.zk.znodes import CONFIG_CHANGES, ConfigEntityChangeNotificationZNode

log = logging.getLogger(__name__)

DEFAULT_ENTITY = "<default>"

# Kafka 2.8's DynamicBrokerConfig.AllDynamicConfigs, restricted to the keys zkafka knows: the log
# defaults (DynamicLogConfig: every broker synonym of a topic config but the message format),
# the cleaner, the thread pools and the connection quotas. Listener, SSL/SASL and metrics-reporter
# keys are not offered.
_KAFKA_DYNAMIC = {
    # DynamicLogConfig
    "log.segment.bytes", "log.roll.ms", "log.roll.hours", "log.roll.jitter.ms", "log.roll.jitter.hours",
    "log.index.size.max.bytes", "log.flush.interval.messages", "log.flush.interval.ms",
    "log.retention.bytes", "log.retention.ms", "log.retention.minutes", "log.retention.hours",
    "message.max.bytes", "log.index.interval.bytes", "log.cleaner.delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms",
    "log.segment.delete.delay.ms", "log.cleaner.min.cleanable.ratio", "log.cleanup.policy",
    "unclean.leader.election.enable", "min.insync.replicas", "compression.type", "log.preallocate",
    "log.message.timestamp.type", "log.message.timestamp.difference.max.ms",
    "log.message.downconversion.enable",
    # LogCleaner
    "log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size", "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms",
    # DynamicThreadPool
    "num.io.threads", "num.network.threads", "num.replica.fetchers",
    "num.recovery.threads.per.data.dir", "background.threads",
    # DynamicReplicationConfig (replication throttles, KIP-73)
    "leader.replication.throttled.rate", "follower.replication.throttled.rate",
    # DynamicConnectionQuota
    "max.connections", "max.connection.creation.rate", "max.connections.per.ip",
    "max.connections.per.ip.overrides",
}  # fmt: skip
DYNAMIC_BROKER_CONFIGS: frozenset[str] = frozenset(_KAFKA_DYNAMIC & BROKER_CONFIG_KEYS.keys())

CONNECTION_KEYS = (
    "max.connections",
    "max.connections.per.ip",
    "max.connections.per.ip.overrides",
    "max.connection.creation.rate",
)


async def read_dynamic_broker_configs(zk: ZooKeeper, broker_id: int) -> tuple[dict[str, str], dict[str, str]]:
    """(cluster-wide default, this broker's own) dynamic configs as stored, without the keys and
    values Kafka would refuse (each logged and skipped, so one bad entry spoils nothing else)."""
    found = await zk.run(
        KafkaZkClient.get_entity_configs, ConfigType.BROKER, [DEFAULT_ENTITY, str(broker_id)]
    )
    return (
        _usable(found.get(DEFAULT_ENTITY, {}), DEFAULT_ENTITY),
        _usable(found.get(str(broker_id), {}), str(broker_id)),
    )


async def startup_config(static: BrokerConfig, broker_id: int, zk: ZooKeeper) -> BrokerConfig:
    """The configuration to load the logs with: server.properties under the dynamic configs, read
    before anything is opened, as Kafka's DynamicBrokerConfig.initialize does, so that the log
    defaults and `num.recovery.threads.per.data.dir` set at run time hold from the start. A stored
    combination Kafka would refuse leaves the static config (reload logs it again later)."""
    defaults, per_broker = await read_dynamic_broker_configs(zk, broker_id)
    try:
        return static.with_overrides({**defaults, **per_broker})
    except ConfigError:
        return static


def _usable(stored: Mapping[str, str], entity: str) -> dict[str, str]:
    out = {}
    for key, value in stored.items():
        if key not in DYNAMIC_BROKER_CONFIGS:
            log.warning("/config/brokers/%s: ignoring %s (not a dynamic broker config)", entity, key)
            continue
        try:
            BROKER_CONFIG_KEYS[key].parse(value)
        except ConfigError as e:
            log.warning("/config/brokers/%s: ignoring %s: %s", entity, key, e)
            continue
        out[key] = value
    return out


class DynamicConfigError(ValueError):
    """A dynamic broker config change Kafka refuses (INVALID_REQUEST)."""


def broker_config_synonyms(name: str) -> tuple[str, ...]:
    """Kafka's DynamicBrokerConfig.brokerConfigSynonyms: the keys that set the same value, by
    precedence (log.retention.ms > .minutes > .hours ...); most keys are their own only synonym."""
    for group in (
        ("log.roll.ms", "log.roll.hours"),
        ("log.roll.jitter.ms", "log.roll.jitter.hours"),
        ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
        ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    ):
        if name in group:
            return group
    return (name,)


class LogDefaults(Protocol):
    @property
    def default_config(self) -> LogConfig: ...

    def update_default_config(self, config: LogConfig) -> None: ...

    def update_topic_config(self, topic: str, config: LogConfig | None) -> None: ...


class ConnectionLimits(Protocol):
    def reconfigure(
        self,
        *,
        max_connections: int,
        max_per_ip: int,
        per_ip_overrides: Mapping[str, int],
        max_creation_rate: int,
    ) -> None: ...


class DynamicBrokerConfig:
    """This broker's dynamic configs and the effective configuration they make (`current`)."""

    queue = CONFIG_CHANGES

    def __init__(
        self,
        static: BrokerConfig,
        broker_id: int,
        zk: ZooKeeper,
        logs: LogDefaults,
        connections: ConnectionLimits | None,
        spawn: Callable[[Coroutine[Any, Any, None]], None],
        on_reconfigure: Callable[[BrokerConfig], None] | None = None,
    ) -> None:
        self._on_reconfigure = on_reconfigure  # the replication throttles' rates
        self.static = static
        self.broker_id = broker_id
        self._zk = zk
        self._logs = logs
        self._connections = connections
        self._spawn = spawn
        self.per_broker: dict[str, str] = {}
        self.defaults: dict[str, str] = {}
        self.current = static
        self._logged: tuple[dict[str, str], dict[str, str]] = ({}, {})

    # -- validation ----------------------------------------------------------------------------------
    def check(self, overrides: Mapping[str, str], *, per_broker: bool) -> BrokerConfig:
        """The effective config if the entity's overrides became `overrides`; DynamicConfigError
        names keys that cannot change at run time or values Kafka would refuse."""
        not_dynamic = sorted(k for k in overrides if k not in DYNAMIC_BROKER_CONFIGS)
        if not_dynamic:
            raise DynamicConfigError(
                f"Cannot update these configs dynamically: Set({', '.join(not_dynamic)})"
            )
        for key, value in overrides.items():
            try:
                BROKER_CONFIG_KEYS[key].parse(value)
            except ConfigError as e:
                raise DynamicConfigError(str(e)) from None
        if per_broker:
            return self._effective(self.defaults, overrides)
        return self._effective(overrides, self.per_broker)

    def _effective(self, defaults: Mapping[str, str], per_broker: Mapping[str, str]) -> BrokerConfig:
        try:
            return self.static.with_overrides({**defaults, **per_broker})
        except ConfigError as e:
            raise DynamicConfigError(str(e)) from None

    # -- loading and applying ------------------------------------------------------------------------
    def on_notification(self, name: str, data: bytes) -> None:
        note = ConfigEntityChangeNotificationZNode.decode(data, f"{CONFIG_CHANGES.root}/{name}")
        if note.entity_type == ConfigType.BROKER.value and note.entity_name in (
            DEFAULT_ENTITY,
            str(self.broker_id),
        ):
            self._spawn(self.reload())

    async def reload(self) -> None:
        """Read both znodes and apply what changed (bad stored values are logged and skipped)."""
        defaults, per_broker = await read_dynamic_broker_configs(self._zk, self.broker_id)
        try:
            new = self._effective(defaults, per_broker)
        except DynamicConfigError as e:
            log.warning("ignoring dynamic broker configs %s / %s: %s", defaults, per_broker, e)
            return
        old = self.current
        self.defaults, self.per_broker, self.current = defaults, per_broker, new
        await self._apply(old, new)
        if (defaults, per_broker) != (self._logged):
            self._logged = (defaults, per_broker)
            log.info("dynamic broker configs: default %s, broker %d %s", defaults, self.broker_id, per_broker)

    async def _apply(self, old: BrokerConfig, new: BrokerConfig) -> None:
        if self._on_reconfigure is not None:
            self._on_reconfigure(new)
        if self._connections is not None and any(
            getattr(old, BROKER_CONFIG_KEYS[k].attr) != getattr(new, BROKER_CONFIG_KEYS[k].attr)
            for k in CONNECTION_KEYS
        ):
            self._connections.reconfigure(
                max_connections=new.max_connections,
                max_per_ip=new.max_connections_per_ip,
                per_ip_overrides=parse_connection_overrides(new.max_connections_per_ip_overrides),
                max_creation_rate=new.max_connection_creation_rate,
            )
        defaults = new.log_config()
        if defaults != self._logs.default_config:
            self._logs.update_default_config(defaults)
            for topic, config in (await read_topic_configs(self._zk, defaults)).items():
                self._logs.update_topic_config(topic, config)

    # -- describing ----------------------------------------------------------------------------------
    def effective_text(self, key: str) -> str | None:
        row = BROKER_CONFIG_KEYS[key]
        if key in self.current.explicit_keys:
            return row.format(getattr(self.current, row.attr))
        return row.format(row.default)

    def synonyms(self, key: str, *, per_broker: bool = True) -> list[tuple[str, str | None, int]]:
        """(name, value, source) in Kafka's order: every synonym's dynamic broker value, then dynamic
        default, static, Kafka default; leading synonyms of higher precedence than `key` dropped."""
        names = broker_config_synonyms(key)
        static = self.static.to_properties()
        layers: list[tuple[Mapping[str, str | None], int]] = [
            (self.per_broker if per_broker else {}, DYNAMIC_BROKER_CONFIG),
            (self.defaults, DYNAMIC_DEFAULT_BROKER_CONFIG),
            (
                {k: static[k] for k in names if k in self.static.explicit_keys and k in static},
                STATIC_BROKER_CONFIG,
            ),
            ({k: BROKER_CONFIG_KEYS[k].format(BROKER_CONFIG_KEYS[k].default) for k in names}, DEFAULT_CONFIG),
        ]
        out = [
            (name, layer[name], source)
            for layer, source in layers
            for name in names
            if name in layer and not (source == DEFAULT_CONFIG and layer[name] is None)
        ]
        while out and out[0][0] != key:
            out.pop(0)
        return out


# DescribeConfigs sources (Kafka's ConfigSource ids)
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

"""Topic config overrides from `/config/topics/<t>`: read for every topic at start-up, and applied
again to the local logs whenever a `/config/changes` notification names a topic (AlterConfigs on
any broker, or a tool, writes one after changing the overrides). A notification naming a user
refreshes that user's SCRAM credentials in the broker's credential cache, when it has one.

A znode another tool wrote may hold keys we do not know or values we cannot use: those are logged
and skipped, never fatal (the rest of the topic's overrides still apply).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from zkafka.security.scram import ScramCredentialCache
from zkafka.server.services import TopicLogs
from zkafka.server.zookeeper import ZooKeeper
from zkafka.storage.config import LogConfig
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import ConfigType
from zkafka.zk.znodes import CONFIG_CHANGES, ConfigEntityChangeNotificationZNode, ConfigEntityZNode

log = logging.getLogger(__name__)


def topic_config(defaults: LogConfig, topic: str, overrides: dict[str, str]) -> LogConfig:
    """A topic's config: `defaults` with its overrides, bad keys or values left out."""
    config = defaults
    for key, value in overrides.items():
        try:
            config = config.with_overrides({key: value})
        except ValueError as e:
            log.warning(
                "znode %s: ignoring %s=%r: %s", ConfigEntityZNode.path(ConfigType.TOPIC, topic), key, value, e
            )
    return config


async def read_topic_configs(zk: ZooKeeper, defaults: LogConfig) -> dict[str, LogConfig]:
    """The config of every topic that has overrides."""
    overrides = await zk.run(all_topic_overrides)
    return {t: topic_config(defaults, t, o) for t, o in overrides.items()}


def all_topic_overrides(client: KafkaZkClient) -> dict[str, dict[str, str]]:
    # Plural read: a config znode that does not decode is reported and ignored, never fatal.
    topics = client.get_all_entities(ConfigType.TOPIC)
    return {t: cfg for t, cfg in client.get_entity_configs(ConfigType.TOPIC, topics).items() if cfg}


class TopicConfigChanges:
    """The handler of `/config/changes` notifications (attach it with `BrokerZooKeeper.listen`).
    Notifications arrive on the event loop; the ZooKeeper read they need runs as a job of `spawn`."""

    queue = CONFIG_CHANGES

    def __init__(
        self,
        zk: ZooKeeper,
        logs: TopicLogs,
        spawn: Callable[[Coroutine[Any, Any, None]], None],
        scram: ScramCredentialCache | None = None,
        on_overrides: Callable[[str, Mapping[str, str]], None] | None = None,
    ) -> None:
        self._zk = zk
        self._logs = logs
        self._spawn = spawn
        self._scram = scram
        self._on_overrides = on_overrides  # the replication throttles' topic keys

    def on_notification(self, name: str, data: bytes) -> None:
        note = ConfigEntityChangeNotificationZNode.decode(data, f"{CONFIG_CHANGES.root}/{name}")
        if note.entity_type == ConfigType.TOPIC.value:
            self._spawn(self.reload(note.entity_name))
        elif note.entity_type == ConfigType.USER.value and self._scram is not None:
            self._spawn(self.reload_user(note.entity_path))

    async def reload_user(self, entity_path: str) -> None:
        """A user's SCRAM credentials changed (`users/<user>`; quota paths are ignored by the cache)."""
        scram = self._scram
        assert scram is not None
        await self._zk.run(lambda _client: scram.on_config_change(entity_path))

    async def reload(self, topic: str) -> None:
        found = await self._zk.run(KafkaZkClient.get_entity_configs, ConfigType.TOPIC, [topic])
        overrides = found.get(topic, {})
        defaults = self._logs.default_config
        config = topic_config(defaults, topic, overrides) if overrides else None
        self._logs.update_topic_config(topic, config)
        if self._on_overrides is not None:
            self._on_overrides(topic, overrides)
        log.info("applied config change of topic %s: %s", topic, overrides)

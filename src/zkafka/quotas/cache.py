"""`QuotaConfigCache`: every client quota configured in ZooKeeper, kept current from `/config/changes`.

Read at startup from `/config/clients/*`, `/config/users/*` and `/config/users/*/clients/*` (the same
plural reads the topic configs use: a znode that does not decode is reported once by
`KafkaZkClient.bad_znodes` and read as having no quotas), then refreshed entity by entity on each
change notification (`clients/<c>`, `users/<u>`, `users/<u>/clients/<c>`; version 1 notifications
only name clients). Other keys in the same znodes (SCRAM credentials in `/config/users/<u>`) are
not ours and are skipped.

A quota value that does not parse is logged once per znode, key and value, and ignored: the rest of
that entity and every other entity still apply. Lookups (`limit`, on the request path) take no lock:
the snapshot is replaced, never mutated, by the ZooKeeper thread that refreshes it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from zkafka.quotas.entities import DEFAULT, ClientEntity, EntityKey, QuotaLimit, resolve
from zkafka.quotas.types import KEYS, QuotaType, parse_quota_value
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import ConfigType
from zkafka.zk.notifications import ChangeNotificationListener
from zkafka.zk.znodes import (
    CONFIG_CHANGES,
    ConfigEntityChangeNotificationZNode,
    ConfigEntityZNode,
    config_entity_display_name,
)

__all__ = ["QuotaConfigCache", "entity_key"]

log = logging.getLogger("zkafka.quotas")

MAX_MEMO = 100_000
"""Resolved (quota, user, client) lookups remembered; client ids are chosen by clients, so bounded."""

Quotas = Mapping[EntityKey, Mapping[QuotaType, float]]
Bounds = dict[EntityKey, dict[QuotaType, float]]


def entity_key(entity_type: str, znode_name: str) -> EntityKey | None:
    """The entity of `/config/<entity_type>/<znode_name>` in display names, None if it is no quota
    entity (topics, brokers) or its name does not desanitize."""
    try:
        if entity_type == ConfigType.CLIENT.value:
            return (None, _display(ConfigType.CLIENT, znode_name))
        if entity_type == ConfigType.USER.value:
            user, sep, client = znode_name.partition("/clients/")
            if not sep:
                return (_display(ConfigType.USER, user), None)
            return (_display(ConfigType.USER, user), _display(ConfigType.CLIENT, client))
    except ValueError as e:
        log.warning("ignoring quota entity %s/%s: %s", entity_type, znode_name, e)
    return None


def _display(entity_type: ConfigType, znode_name: str) -> str:
    return DEFAULT if znode_name == DEFAULT else config_entity_display_name(entity_type, znode_name)


class QuotaConfigCache:
    def __init__(self, zk: KafkaZkClient) -> None:
        self.zk = zk
        self._quotas: Bounds = {}
        self._memo: dict[tuple[QuotaType, ClientEntity], QuotaLimit | None] = {}
        self._bad: dict[tuple[str, str], str] = {}  # (znode path, key) -> the bad value last logged
        self._lock = threading.Lock()

    # -- lookups (event loop, no lock) -------------------------------------------------------------------
    def limit(self, quota: QuotaType, who: ClientEntity) -> QuotaLimit | None:
        """The bound on `who` for `quota` by Kafka's precedence; None = unlimited. A `LimitSource`."""
        memo = self._memo
        key = (quota, who)
        found = memo.get(key, memo)
        if found is memo:
            if len(memo) >= MAX_MEMO:
                memo.clear()
            found = memo[key] = resolve(self._quotas, quota, who)
        return found  # type: ignore[return-value]

    def quotas(self) -> Quotas:
        """The current snapshot: entity -> quota -> bound."""
        return self._quotas

    # -- loading (ZooKeeper threads, blocking) -----------------------------------------------------------
    def load(self) -> None:
        """Read every quota entity."""
        found = self.read_all()
        self._publish(found)
        log.info("client quotas loaded: %d entities with quotas", len(found))

    def read_all(self) -> Bounds:
        """Every quota entity as ZooKeeper holds it now (DescribeClientQuotas), without publishing."""
        clients = self.zk.get_all_entities(ConfigType.CLIENT)
        users = self.zk.get_all_entities(ConfigType.USER)
        found: Bounds = {}
        for entity_type, names in (
            (ConfigType.CLIENT, clients),
            (ConfigType.USER, users),
            (ConfigType.USER, self.zk.get_user_client_entities(users)),
        ):
            with self._lock:
                found.update(self._read(entity_type, names))
        return found

    def refresh(self, entity_type: str, znode_name: str) -> None:
        """Re-read one entity (a `/config/changes` entity path split at its first '/')."""
        key = entity_key(entity_type, znode_name)
        if key is None:
            return
        with self._lock:
            found = self._read(ConfigType(entity_type), [znode_name])
            updated = {k: v for k, v in self._quotas.items() if k != key}
            updated.update(found)
            self._publish(updated)

    def on_config_change(self, entity_path: str) -> None:
        entity_type, _, znode_name = entity_path.partition("/")
        if entity_type in (ConfigType.CLIENT.value, ConfigType.USER.value):
            self.refresh(entity_type, znode_name)

    def handle_notification(self, name: str, data: bytes) -> None:
        """A ChangeNotificationListener handler for `/config/changes` (blocking)."""
        notification = ConfigEntityChangeNotificationZNode.decode(data, CONFIG_CHANGES.path(name))
        self.on_config_change(notification.entity_path)

    def listener(self) -> ChangeNotificationListener:
        """A listener of its own (standalone use and tests; a broker feeds `on_config_change` from its
        one dynamic-config listener instead)."""
        return ChangeNotificationListener(self.zk, CONFIG_CHANGES, self.handle_notification)

    def _read(self, entity_type: ConfigType, znode_names: list[str]) -> Bounds:
        out = {}
        for znode_name, config in self.zk.get_entity_configs(entity_type, znode_names).items():
            key = entity_key(entity_type.value, znode_name)
            path = ConfigEntityZNode.path(entity_type, znode_name)
            bounds = self._bounds(path, config)
            if key is not None and bounds:
                out[key] = bounds
        return out

    def _bounds(self, path: str, config: Mapping[str, str]) -> dict[QuotaType, float]:
        bounds = {}
        for name, quota in KEYS.items():
            text = config.get(name)
            if text is None:
                self._bad.pop((path, name), None)
                continue
            try:
                bounds[quota] = parse_quota_value(quota, text)
            except ValueError as e:
                if self._bad.get((path, name)) != text:
                    self._bad[(path, name)] = text
                    log.warning("znode %s: ignoring quota %s: %s", path, name, e)
                continue
            if self._bad.pop((path, name), None) is not None:
                log.info("znode %s: quota %s is valid again", path, name)
        return bounds

    def _publish(self, quotas: Bounds) -> None:
        self._quotas = quotas
        self._memo = {}  # a fresh dict, not clear(): a lookup running now keeps its own

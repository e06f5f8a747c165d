"""Dynamic configs in ZooKeeper (part of `KafkaZkClient`): `/config/<entity-type>/<name>` for
topics, brokers, clients and users, written with a `/config/changes` notification so every broker
re-reads the entity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kazoo.protocol.states import ZnodeStat

from zkafka.zk.model import (
    ConfigType,
)
from zkafka.zk.notification_store import NotificationStoreMixin
from zkafka.zk.store import DEFAULTS_APPLY
from zkafka.zk.znodes import (
    ConfigEntityTypeZNode,
    ConfigEntityZNode,
    UserClientsZNode,
)


class ConfigStoreMixin(NotificationStoreMixin):
    # -- dynamic config --------------------------------------------------------------------------------
    def get_entity_config(self, entity_type: ConfigType | str, znode_name: str) -> dict[str, str]:
        """Overrides of one entity (`{}` if none); `znode_name` is sanitized (znodes.config_entity_name)."""
        path = ConfigEntityZNode.path(entity_type, znode_name)
        found = self.get_data(path)
        return {} if found is None else ConfigEntityZNode.decode(found[0], path)

    def get_entity_configs(
        self, entity_type: ConfigType | str, znode_names: Iterable[str]
    ) -> dict[str, dict[str, str]]:
        """Overrides of many entities; an entity whose znode does not decode reads as `{}`."""
        paths = {ConfigEntityZNode.path(entity_type, n): n for n in znode_names}
        return {
            paths[path]: self._decoded(_decode_entity_config, path, found, DEFAULTS_APPLY) or {}
            for path, found in self.get_data_many(list(paths)).items()
        }

    def get_all_entities(self, entity_type: ConfigType | str) -> list[str]:
        return sorted(self.get_children(ConfigEntityTypeZNode.path(entity_type)) or [])

    def get_user_client_entities(self, user_znode_names: Iterable[str]) -> list[str]:
        """The `<user>/clients/<client>` entity names (quotas of a user with one client id) of the given
        users, as ConfigEntityZNode names below `/config/users`."""
        return [
            f"{user}/clients/{client}"
            for user in user_znode_names
            for client in sorted(self.get_children(UserClientsZNode.path(user)) or [])
        ]

    def set_entity_config(
        self, entity_type: ConfigType | str, znode_name: str, config: Mapping[str, str]
    ) -> str:
        """Set-or-create the entity's config, then announce it with a v2 change notification (returned)."""
        entity_type = ConfigType(entity_type)
        self.set_or_create(ConfigEntityZNode.path(entity_type, znode_name), ConfigEntityZNode.encode(config))
        return self.create_config_change_notification(f"{entity_type.value}/{znode_name}")


def _decode_entity_config(data: bytes, path: str, _stat: ZnodeStat) -> dict[str, str]:
    return ConfigEntityZNode.decode(data, path)

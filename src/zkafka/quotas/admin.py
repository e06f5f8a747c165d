"""Altering and describing client quotas in ZooKeeper, as Kafka's AdminZkClient does: shared by
`zkafka configs --zookeeper` and the brokers' AlterClientQuotas / DescribeClientQuotas (KIP-546).

An entity is `(user, client id)` in display names (None: the entity does not mention that part,
`<default>`: the default entity), the same `EntityKey` the cache and precedence use. Its znode is
`/config/clients/<c>`, `/config/users/<u>` or `/config/users/<u>/clients/<c>` (names sanitized as
Kafka does); writing keeps the znode's other keys (a user's SCRAM credentials) and ends with a
`/config/changes` notification naming the entity, so every broker applies it at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from zkafka.quotas.entities import DEFAULT, EntityKey
from zkafka.quotas.types import KEYS, parse_quota_value
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import ConfigType
from zkafka.zk.znodes import config_entity_name

__all__ = [
    "QuotaAlterError",
    "alter_quotas",
    "check_quota_changes",
    "entity_znode",
    "format_value",
    "read_quotas",
]


class QuotaAlterError(ValueError):
    """A change Kafka refuses (unknown key, bad value, no entity): INVALID_REQUEST on the wire."""


def entity_znode(entity: EntityKey) -> tuple[ConfigType, str]:
    """Where `entity`'s quotas live: (config type, znode name below /config/<type>)."""
    user, client = entity
    if user is None and client is None:
        raise QuotaAlterError("a quota entity names a user, a client id or both")
    try:
        if user is None:
            return ConfigType.CLIENT, config_entity_name(ConfigType.CLIENT, client)  # type: ignore[arg-type]
        name = config_entity_name(ConfigType.USER, user)
        if client is not None:
            name = f"{name}/clients/{config_entity_name(ConfigType.CLIENT, client)}"
        return ConfigType.USER, name
    except ValueError as e:
        raise QuotaAlterError(str(e)) from None


def check_quota_changes(added: Mapping[str, str], removed: Iterable[str]) -> dict[str, str]:
    """The added quotas as Kafka stores them (the text given, validated); QuotaAlterError naming the
    first unknown key or bad value."""
    out = {}
    for key in list(added) + list(removed):
        if key not in KEYS:
            raise QuotaAlterError(f"{key!r} is not a client quota (expected one of {', '.join(KEYS)})")
    for key, text in added.items():
        try:
            parse_quota_value(KEYS[key], text)
        except ValueError as e:
            raise QuotaAlterError(str(e)) from None
        out[key] = text.strip()
    return out


def alter_quotas(
    zk: KafkaZkClient, entity: EntityKey, added: Mapping[str, str], removed: Iterable[str]
) -> dict[str, str]:
    """Set `added` and drop `removed` quota keys of `entity` (other keys kept), then notify; the
    entity's quotas after the change."""
    added = check_quota_changes(added, removed)
    config_type, name = entity_znode(entity)
    config = zk.get_entity_config(config_type, name)
    for key in removed:
        config.pop(key, None)
    config.update(added)
    zk.set_entity_config(config_type, name, config)
    return {k: v for k, v in config.items() if k in KEYS}


def read_quotas(zk: KafkaZkClient, entity: EntityKey) -> dict[str, str]:
    """`entity`'s quota keys as stored (values not checked: describe shows what is there)."""
    config_type, name = entity_znode(entity)
    return {k: v for k, v in zk.get_entity_config(config_type, name).items() if k in KEYS}


def format_value(value: float) -> str:
    """A bound as Kafka's tools print a double (`1048576.0`)."""
    return repr(float(value))


def describe_entity(entity: EntityKey) -> str:
    """kafka-configs' words for an entity: `user-principal 'alice', client-id 'c'`."""
    parts = []
    user, client = entity
    if user is not None:
        parts.append("the default user-principal" if user == DEFAULT else f"user-principal '{user}'")
    if client is not None:
        parts.append("the default client-id" if client == DEFAULT else f"client-id '{client}'")
    return ", ".join(parts)
